//! This server as a primary: a connection that asked for the stream
//! (SYNC, PSYNC) is served here. It either continues from the backlog
//! (`+CONTINUE`), or gets a full sync: `+FULLRESYNC <replid> <offset>`, a
//! point-in-time snapshot (`$<len>`, or `$EOF:<mark>` streamed for a
//! replica that takes it so under `repl-diskless-sync`), then the stream
//! from that offset on. Its `REPLCONF ACK`s say how far it applied.
//!
//! Beside it, `cron` pings replicas every `repl-ping-replica-period`,
//! frees the backlog after `repl-backlog-ttl` without any, and counts
//! the good ones for `min-replicas-to-write` each second.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

use crate::connection::{Handoff, Stream};
use crate::context::Shared;
use crate::context::client::{ReplicaHello, SyncAsk};
use crate::context::replicas::{ServedReplica, SyncState};
use crate::context::snapshot::sync_image;
use crate::persist::backlog::Gone;
use crate::protocol::RequestParser;
use crate::util::parse_i64;

/// The most stream bytes written to a replica at once.
const CHUNK: usize = 64 * 1024;
/// How often a replica waiting for its snapshot is sent a newline, so
/// that it knows the primary is alive (as Redis sends one every second).
const KEEPALIVE: Duration = Duration::from_secs(1);
/// The diskless payload's end mark is this long.
const EOF_MARK_LEN: usize = 40;

/// Why a replica's connection ended.
#[derive(Debug)]
enum Ended {
    Io(std::io::Error),
    Closed,
    Killed,
    /// It fell further behind than the backlog keeps.
    Behind,
    TimedOut,
}

impl From<std::io::Error> for Ended {
    fn from(e: std::io::Error) -> Self {
        Ended::Io(e)
    }
}

impl From<Gone> for Ended {
    fn from(_: Gone) -> Self {
        Ended::Behind
    }
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ended::Io(e) => write!(f, "I/O error: {e}"),
            Ended::Closed => f.write_str("Connection closed"),
            Ended::Killed => f.write_str("Client killed"),
            Ended::Behind => f.write_str("fell behind the replication backlog"),
            Ended::TimedOut => f.write_str("timeout: no ACK received"),
        }
    }
}

/// A replica's connection: what it sent, and where its stream stands.
struct Served<S> {
    shared: Arc<Shared>,
    stream: S,
    input: BytesMut,
    parser: RequestParser,
    replica: Arc<ServedReplica>,
    /// The next offset it is sent.
    next: i64,
}

/// Serves the replica `handoff` names until it leaves or is killed.
pub async fn serve<S: Stream>(shared: Arc<Shared>, handoff: Handoff<S>) {
    let Handoff {
        client,
        stream,
        input,
    } = handoff;
    let id = client.id;
    let ask = client.sync_asked.clone().unwrap_or(SyncAsk::Sync);
    let hello = client.replica_hello.clone();
    let ip = hello.ip.clone().unwrap_or_else(|| {
        client
            .handle
            .addr
            .ip()
            .map_or_else(String::new, |ip| ip.to_string())
    });
    client.handle.info.lock().replica = true;
    let replica = shared.replicas.add(id, ip, hello.port, shared.now_ms());
    let named = format!("{}:{}", replica.ip, replica.port);
    let mut served = Served {
        shared: shared.clone(),
        stream,
        input,
        parser: RequestParser::default(),
        replica,
        next: 0,
    };
    let killed = client.handle.killed();
    let outcome = tokio::select! {
        outcome = served.run(&ask, &hello) => outcome,
        _ = killed => Err(Ended::Killed),
    };
    if let Err(e) = outcome {
        tracing::info!("Connection with replica {named} lost: {e}");
    }
    shared.replicas.remove(id, shared.now_ms());
    shared.refresh_good_replicas();
    shared.replica.backlog.detach(id);
    shared.clients.remove(&id);
}

impl<S: Stream> Served<S> {
    async fn run(&mut self, ask: &SyncAsk, hello: &ReplicaHello) -> Result<(), Ended> {
        let shared = self.shared.clone();
        let (backlog, syncs) = (&shared.replica.backlog, &shared.replicas);
        if let SyncAsk::Psync { replid, offset } = ask {
            if self.shared.replica.may_continue(replid, *offset) {
                return self.continue_from(*offset, hello.capa_psync2).await;
            }
            if replid != "?" {
                syncs.sync_partial_err.fetch_add(1, Ordering::Relaxed);
            }
        }
        syncs.sync_full.fetch_add(1, Ordering::Relaxed);
        self.shared.replica.start_backlog();
        // Held from before the capture, so nothing after it is dropped
        // before this replica has read it.
        backlog.attach(self.replica.id, backlog.offset() + 1);
        let (diskless, delay) = {
            let config = self.shared.config.read();
            let diskless = config.repl_diskless_sync && hello.capa_eof;
            (diskless, config.repl_diskless_sync_delay.max(0) as u64)
        };
        if diskless && delay > 0 {
            // Replicas that come meanwhile would share this snapshot in
            // Redis; here each takes its own, so the wait only keeps
            // Redis's timing.
            self.keep_alive(Duration::from_secs(delay)).await?;
        }
        tracing::info!(
            "Starting BGSAVE for SYNC with target: {}",
            if diskless { "replicas sockets" } else { "disk" }
        );
        let (rdb, offset) = self.snapshot().await?;
        let replid = self.shared.replica.history().replid;
        if matches!(ask, SyncAsk::Psync { .. }) {
            let line = format!("+FULLRESYNC {replid} {offset}\r\n");
            self.stream.write_all(line.as_bytes()).await?;
        }
        self.replica
            .set_state(SyncState::SendBulk, self.shared.now_ms());
        if diskless {
            let mark = crate::util::random_hex(EOF_MARK_LEN);
            let head = format!("$EOF:{mark}\r\n");
            self.stream.write_all(head.as_bytes()).await?;
            self.stream.write_all(&rdb).await?;
            self.stream.write_all(mark.as_bytes()).await?;
        } else {
            let head = format!("${}\r\n", rdb.len());
            self.stream.write_all(head.as_bytes()).await?;
            self.stream.write_all(&rdb).await?;
        }
        self.stream.flush().await?;
        tracing::info!(
            "Synchronization with replica {}:{} succeeded",
            self.replica.ip,
            self.replica.port
        );
        self.replica
            .set_state(SyncState::Online, self.shared.now_ms());
        self.shared.refresh_good_replicas();
        self.next = offset + 1;
        // A diskless replica reads the stream only once it has loaded the
        // snapshot, which its first ACK tells.
        self.follow(diskless).await
    }

    /// `+CONTINUE`: the backlog has everything from `offset` on.
    async fn continue_from(&mut self, offset: i64, psync2: bool) -> Result<(), Ended> {
        let backlog = self.shared.replica.backlog.clone();
        backlog.attach(self.replica.id, offset);
        self.shared
            .replicas
            .sync_partial_ok
            .fetch_add(1, Ordering::Relaxed);
        let line = if psync2 {
            format!("+CONTINUE {}\r\n", self.shared.replica.history().replid)
        } else {
            "+CONTINUE\r\n".to_string()
        };
        self.stream.write_all(line.as_bytes()).await?;
        tracing::info!(
            "Partial resynchronization request from {}:{} accepted, sending {} bytes of backlog",
            self.replica.ip,
            self.replica.port,
            backlog.offset() + 1 - offset
        );
        self.replica
            .set_state(SyncState::Online, self.shared.now_ms());
        self.shared.refresh_good_replicas();
        self.next = offset;
        self.follow(false).await
    }

    /// The snapshot and its offset, taken off the async threads.
    async fn snapshot(&mut self) -> Result<(Vec<u8>, i64), Ended> {
        let shared = self.shared.clone();
        let mut capture = tokio::task::spawn_blocking(move || {
            // As a replica itself, between two of its primary's commands.
            let _between = shared.replica.apply_gate.blocking_write();
            sync_image(&shared)
        });
        loop {
            tokio::select! {
                done = &mut capture => {
                    let image = done.map_err(|e| std::io::Error::other(e.to_string()))?;
                    return image.map_err(Ended::from);
                }
                _ = tokio::time::sleep(KEEPALIVE) => self.stream.write_all(b"\n").await?,
            }
        }
    }

    /// Sends a newline every second for `wait`, reading what arrives.
    async fn keep_alive(&mut self, wait: Duration) -> Result<(), Ended> {
        let until = tokio::time::Instant::now() + wait;
        while tokio::time::Instant::now() < until {
            let tick = until.min(tokio::time::Instant::now() + KEEPALIVE);
            tokio::select! {
                _ = tokio::time::sleep_until(tick) => self.stream.write_all(b"\n").await?,
                read = self.stream.read_buf(&mut self.input) => {
                    if read? == 0 {
                        return Err(Ended::Closed);
                    }
                    self.take_input()?;
                }
            }
        }
        Ok(())
    }

    /// Sends the stream as it grows, reading the replica's ACKs; with
    /// `wait_ack`, only once the first has come.
    async fn follow(&mut self, mut wait_ack: bool) -> Result<(), Ended> {
        let backlog = self.shared.replica.backlog.clone();
        let mut grown: watch::Receiver<i64> = backlog.watch();
        loop {
            if self.take_input()? {
                wait_ack = false;
            }
            if !wait_ack {
                loop {
                    let chunk = backlog.read(self.replica.id, self.next, CHUNK)?;
                    if chunk.is_empty() {
                        break;
                    }
                    self.stream.write_all(&chunk).await?;
                    self.next += chunk.len() as i64;
                }
                self.stream.flush().await?;
            }
            let timeout = Duration::from_secs(self.shared.config.read().repl_timeout as u64);
            let silent_for =
                Duration::from_millis(self.shared.now_ms().saturating_sub(self.replica.ack_ms()));
            let Some(left) = timeout.checked_sub(silent_for) else {
                return Err(Ended::TimedOut);
            };
            tokio::select! {
                changed = grown.changed() => {
                    if changed.is_err() {
                        return Err(Ended::Closed);
                    }
                }
                read = self.stream.read_buf(&mut self.input) => {
                    if read? == 0 {
                        return Err(Ended::Closed);
                    }
                }
                _ = tokio::time::sleep(left) => {}
            }
        }
    }

    /// Reads the replica's requests: REPLCONF ACK notes its offset (the
    /// rest, such as PING, is ignored, as Redis ignores a replica's
    /// commands once it streams). Whether an ACK came.
    fn take_input(&mut self) -> Result<bool, Ended> {
        let mut acked = false;
        while let Some(args) = self
            .parser
            .next_request(&mut self.input, true)
            .map_err(|e| Ended::Io(std::io::Error::other(e.message())))?
        {
            if let Some(offset) = ack_offset(&args) {
                self.shared
                    .replicas
                    .ack(&self.replica, offset, self.shared.now_ms());
                self.shared.refresh_good_replicas();
                acked = true;
            }
        }
        Ok(acked)
    }
}

/// `REPLCONF ACK <offset> [FACK <offset>]`'s offset.
fn ack_offset(args: &[Bytes]) -> Option<i64> {
    match args {
        [name, sub, offset, ..]
            if name.eq_ignore_ascii_case(b"replconf") && sub.eq_ignore_ascii_case(b"ack") =>
        {
            parse_i64(offset)
        }
        _ => None,
    }
}

/// Pings replicas every `repl-ping-replica-period` (the PING is part of
/// the stream, so it moves the offset, as in Redis), and frees the
/// backlog once `repl-backlog-ttl` passed without any replica.
pub async fn cron(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    // As Redis counts its cron's runs from the start: a replica that
    // attaches later waits for the next period's PING, not one at once.
    let mut last_ping_ms = shared.now_ms();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        let now = shared.now_ms();
        shared.refresh_good_replicas();
        let (period_s, ttl_s) = {
            let config = shared.config.read();
            (config.repl_ping_replica_period, config.repl_backlog_ttl)
        };
        let backlog = &shared.replica.backlog;
        if shared.replicas.is_empty() {
            let idle_s = now.saturating_sub(shared.replicas.none_since_ms()) / 1000;
            if ttl_s > 0
                && backlog.is_active()
                && !shared.replica.is_replica()
                && idle_s >= ttl_s as u64
            {
                tracing::info!(
                    "Replication backlog freed after {ttl_s} seconds without connected replicas."
                );
                shared.replica.free_backlog();
            }
        } else if now.saturating_sub(last_ping_ms) >= period_s as u64 * 1000 {
            backlog.command(None, &[b"PING"]);
            last_ping_ms = now;
        }
    }
}
