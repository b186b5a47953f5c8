//! This server as a primary: a connection that asked for the stream
//! (SYNC, PSYNC) is served here. It either continues from the backlog
//! (`+CONTINUE`), or gets a full sync: `+FULLRESYNC <replid> <offset>`, a
//! point-in-time snapshot (`$<len>` and the file saved for it, or
//! `$EOF:<mark>` and the bytes as they are encoded, for a replica that
//! takes it so under `repl-diskless-sync`), then the stream from that
//! offset on. The snapshot may serve other replicas too: it is
//! `context::full_sync`'s, which hands this connection its feed. Its
//! `REPLCONF ACK`s say how far it applied.
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
use crate::context::full_sync::{Feed, FeedReceiver};
use crate::context::replicas::{ServedReplica, SyncState};
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
    /// Its snapshot could not be taken or sent.
    SyncFailed,
    /// It took no bytes of its diskless snapshot for `repl-timeout`.
    Stalled,
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
            Ended::SyncFailed => f.write_str("its full sync's snapshot failed"),
            Ended::Stalled => f.write_str("timeout streaming its snapshot (streaming sync)"),
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
        let syncs = &shared.replicas;
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
        let mut feed = shared
            .full_syncs
            .join(&shared, self.replica.id, hello.capa_eof);
        let Feed::Begun { offset, diskless } = self.next_feed(&mut feed, true).await? else {
            return Err(Ended::SyncFailed);
        };
        if matches!(ask, SyncAsk::Psync { .. }) {
            let replid = self.shared.replica.history().replid;
            let line = format!("+FULLRESYNC {replid} {offset}\r\n");
            self.stream.write_all(line.as_bytes()).await?;
        }
        if diskless {
            self.send_diskless(&mut feed).await?;
        } else {
            self.send_file(&mut feed).await?;
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

    /// The diskless payload, `$EOF:<mark>`, the bytes as the snapshot
    /// hands them over, the mark. The replica stays `wait_bgsave` until it
    /// has them all, as in Redis; one that takes no bytes for
    /// `repl-timeout` is dropped, which frees the others.
    async fn send_diskless(&mut self, feed: &mut FeedReceiver) -> Result<(), Ended> {
        let mark = crate::util::random_hex(EOF_MARK_LEN);
        let head = format!("$EOF:{mark}\r\n");
        self.stream.write_all(head.as_bytes()).await?;
        let stall = Duration::from_secs(self.shared.config.read().repl_timeout as u64);
        loop {
            match self.next_feed(feed, false).await? {
                Feed::Piece(piece) => {
                    let sent = async {
                        self.stream.write_all(&piece).await?;
                        self.stream.flush().await
                    };
                    tokio::time::timeout(stall, sent)
                        .await
                        .map_err(|_| Ended::Stalled)??;
                }
                Feed::Ended => break,
                _ => return Err(Ended::SyncFailed),
            }
        }
        self.stream.write_all(mark.as_bytes()).await?;
        Ok(())
    }

    /// The disk-backed payload: once the snapshot file is written,
    /// `$<length>` and the file.
    async fn send_file(&mut self, feed: &mut FeedReceiver) -> Result<(), Ended> {
        let Feed::File(file, len) = self.next_feed(feed, true).await? else {
            return Err(Ended::SyncFailed);
        };
        self.replica
            .set_state(SyncState::SendBulk, self.shared.now_ms());
        let head = format!("${len}\r\n");
        self.stream.write_all(head.as_bytes()).await?;
        let mut file = tokio::fs::File::from_std(file).take(len);
        let sent = tokio::io::copy(&mut file, &mut self.stream).await?;
        if sent < len {
            return Err(Ended::SyncFailed);
        }
        Ok(())
    }

    /// The next thing the full sync hands this replica, reading what it
    /// sends meanwhile; with `keep_alive`, a newline every second tells it
    /// the primary is alive, as Redis sends one while it saves.
    async fn next_feed(
        &mut self,
        feed: &mut FeedReceiver,
        keep_alive: bool,
    ) -> Result<Feed, Ended> {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + KEEPALIVE, KEEPALIVE);
        loop {
            tokio::select! {
                item = feed.recv() => return item.ok_or(Ended::SyncFailed),
                _ = tick.tick(), if keep_alive => self.stream.write_all(b"\n").await?,
                read = self.stream.read_buf(&mut self.input) => {
                    if read? == 0 {
                        return Err(Ended::Closed);
                    }
                    self.take_input()?;
                }
            }
        }
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

    /// Sends the stream as it grows, reading the replica's ACKs; with
    /// `wait_ack`, only once the first has come.
    ///
    /// Woken by a write, it first lets the other tasks that are ready run
    /// (`yield_now`), so that the writes of every client served in this
    /// turn of the scheduler go out in one socket write, as Redis writes
    /// a replica's buffer once per turn of its event loop rather than
    /// once per command.
    async fn follow(&mut self, mut wait_ack: bool) -> Result<(), Ended> {
        let backlog = self.shared.replica.backlog.clone();
        let mut grown: watch::Receiver<i64> = backlog.watch();
        let mut chunk = Vec::new();
        // The silence check, moved only when the replica's last ACK did.
        let silence = tokio::time::sleep(Duration::ZERO);
        tokio::pin!(silence);
        let mut checked_ack = None;
        loop {
            if self.take_input()? {
                wait_ack = false;
            }
            if !wait_ack {
                loop {
                    backlog.read_into(self.replica.id, self.next, CHUNK, &mut chunk)?;
                    if chunk.is_empty() {
                        break;
                    }
                    self.stream.write_all(&chunk).await?;
                    self.next += chunk.len() as i64;
                }
                self.stream.flush().await?;
            }
            let ack_ms = self.replica.ack_ms();
            if checked_ack != Some(ack_ms) || silence.is_elapsed() {
                let timeout = Duration::from_secs(self.shared.config.read().repl_timeout as u64);
                let silent_for = Duration::from_millis(self.shared.now_ms().saturating_sub(ack_ms));
                let Some(left) = timeout.checked_sub(silent_for) else {
                    return Err(Ended::TimedOut);
                };
                silence.as_mut().reset(tokio::time::Instant::now() + left);
                checked_ack = Some(ack_ms);
            }
            tokio::select! {
                changed = grown.changed() => {
                    if changed.is_err() {
                        return Err(Ended::Closed);
                    }
                    tokio::task::yield_now().await;
                }
                read = self.stream.read_buf(&mut self.input) => {
                    if read? == 0 {
                        return Err(Ended::Closed);
                    }
                }
                _ = &mut silence => {}
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
        crate::context::full_sync::remove_sync_file(&shared);
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
