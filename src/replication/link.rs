//! One connection to the primary: handshake, sync, then the stream.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

use crate::client_handle::ClientHandle;
use crate::command::dispatch;
use crate::config::DisklessLoad;
use crate::context::failover::FailoverState;
use crate::context::replica::{LinkState, Primary};
use crate::context::snapshot::{
    LoadError, empty_all, holds_keys, load_data, load_swapping, rdb_path,
};
use crate::context::{Client, Shared};
use crate::protocol::{Reply, RequestParser};

/// How often the offset is acknowledged (Redis: once a second).
const ACK_EVERY: Duration = Duration::from_secs(1);
/// The mark that ends a diskless payload is this long.
const EOF_MARK_LEN: usize = 40;

/// Why the link went down.
#[derive(Debug)]
pub enum LinkError {
    Io(std::io::Error),
    TimedOut,
    Closed,
    /// The primary refused a step of the handshake.
    Refused {
        step: &'static str,
        reply: String,
    },
    /// Its reply made no sense.
    Protocol(String),
    /// The snapshot file could not be written (`repl-diskless-load
    /// disabled`).
    SyncFile(std::io::Error),
    Load(LoadError),
}

impl std::fmt::Display for LinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkError::Io(e) => write!(f, "I/O error: {e}"),
            LinkError::TimedOut => f.write_str("MASTER timeout: no data nor PING received"),
            LinkError::Closed => f.write_str("Connection with master lost"),
            LinkError::Refused { step, reply } => {
                write!(f, "Master refused {step}: {reply}")
            }
            LinkError::Protocol(e) => write!(f, "Bad reply from master: {e}"),
            LinkError::SyncFile(e) => write!(
                f,
                "Failed trying to write the temp DB to disk in MASTER <-> REPLICA synchronization: {}",
                crate::util::os_reason(e)
            ),
            LinkError::Load(e) => write!(
                f,
                "Failed trying to load the MASTER synchronization DB: {e}"
            ),
        }
    }
}

impl From<std::io::Error> for LinkError {
    fn from(e: std::io::Error) -> Self {
        LinkError::Io(e)
    }
}

type LinkResult<T> = Result<T, LinkError>;

/// The primary's connection, read through a buffer.
struct Conn {
    read: OwnedReadHalf,
    write: OwnedWriteHalf,
    buf: BytesMut,
    /// Silence past this drops the link (`repl-timeout`).
    timeout: Duration,
}

impl Conn {
    /// Reads more into the buffer, within the timeout.
    async fn fill(&mut self) -> LinkResult<()> {
        match tokio::time::timeout(self.timeout, self.read.read_buf(&mut self.buf)).await {
            Err(_) => Err(LinkError::TimedOut),
            Ok(Ok(0)) => Err(LinkError::Closed),
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(e.into()),
        }
    }

    /// The next line that is not empty: a primary sends bare newlines to
    /// keep the link alive while it prepares a snapshot.
    async fn line(&mut self) -> LinkResult<String> {
        loop {
            if let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                let line = self.buf.split_to(end + 1);
                let text = String::from_utf8_lossy(&line).trim_end().to_string();
                if !text.is_empty() {
                    return Ok(text);
                }
                continue;
            }
            self.fill().await?;
        }
    }

    async fn send(&mut self, args: &[&[u8]]) -> LinkResult<()> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for arg in args {
            out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            out.extend_from_slice(arg);
            out.extend_from_slice(b"\r\n");
        }
        self.write.write_all(&out).await?;
        Ok(())
    }

    /// Sends a command and reads its one-line reply.
    async fn ask(&mut self, args: &[&[u8]]) -> LinkResult<String> {
        self.send(args).await?;
        self.line().await
    }

    /// The snapshot's bytes: `$<len>` and that many, or `$EOF:<mark>` and
    /// everything up to the mark.
    /// Its progress goes to `shared`'s replica state, for INFO.
    async fn payload(&mut self, shared: &Shared) -> LinkResult<Vec<u8>> {
        let state = &shared.replica;
        let header = self.line().await?;
        if let Some(err) = header.strip_prefix('-') {
            return Err(LinkError::Refused {
                step: "the sync",
                reply: err.into(),
            });
        }
        let Some(size) = header.strip_prefix('$') else {
            return Err(LinkError::Protocol(header));
        };
        if let Some(mark) = size.strip_prefix("EOF:") {
            let mark = mark.as_bytes();
            if mark.len() != EOF_MARK_LEN {
                return Err(LinkError::Protocol(header));
            }
            state.transfer_size(0);
            // Nothing follows the mark until this replica's first ACK.
            loop {
                state.transfer_read(self.buf.len() as i64, shared.now_ms());
                if self.buf.ends_with(mark) {
                    break;
                }
                self.fill().await?;
            }
            let mut data = std::mem::take(&mut self.buf).to_vec();
            data.truncate(data.len() - EOF_MARK_LEN);
            return Ok(data);
        }
        let len: usize = size
            .parse()
            .map_err(|_| LinkError::Protocol(header.clone()))?;
        state.transfer_size(len as i64);
        loop {
            state.transfer_read(self.buf.len().min(len) as i64, shared.now_ms());
            if self.buf.len() >= len {
                break;
            }
            self.fill().await?;
        }
        Ok(self.buf.split_to(len).to_vec())
    }

    async fn ack(&mut self, offset: i64) -> LinkResult<()> {
        self.send(&[b"REPLCONF", b"ACK", offset.to_string().as_bytes()])
            .await
    }
}

/// How the primary answered PSYNC.
enum Sync {
    Full {
        replid: String,
        offset: i64,
    },
    /// It continues where this replica stopped; with a new id when its
    /// history moved on (it was promoted).
    Continue {
        replid: Option<String>,
    },
}

/// Connects to `primary` and follows it until the link fails.
pub async fn follow(shared: &Arc<Shared>, primary: &Primary) -> LinkResult<()> {
    let state = &shared.replica;
    state.set_link(LinkState::Connecting);
    tracing::info!("Connecting to MASTER {}:{}", primary.host, primary.port);
    let timeout = Duration::from_secs(shared.config.read().repl_timeout as u64);
    let stream = tokio::time::timeout(
        timeout,
        TcpStream::connect((primary.host.as_str(), primary.port)),
    )
    .await
    .map_err(|_| LinkError::TimedOut)??;
    let _ = stream.set_nodelay(true);
    let (peer, local) = (stream.peer_addr()?, stream.local_addr()?);
    let (read, write) = stream.into_split();
    let mut conn = Conn {
        read,
        write,
        buf: BytesMut::with_capacity(16 * 1024),
        timeout,
    };
    state.set_link(LinkState::Handshake);
    tracing::info!("MASTER <-> REPLICA sync started");
    match handshake(shared, &mut conn).await? {
        Sync::Full { replid, offset } => {
            tracing::info!("Full resync from master: {replid}:{offset}");
            state.set_link(LinkState::Sync);
            state.transfer_started(shared.now_ms());
            let data = conn.payload(shared).await?;
            tracing::info!(
                "MASTER <-> REPLICA sync: receiving {} bytes from master",
                data.len()
            );
            load(shared, data).await?;
            state.full_sync(replid, offset);
            shared.drop_replicas();
            tracing::info!("MASTER <-> REPLICA sync: Finished with success");
        }
        Sync::Continue { replid } => {
            tracing::info!("Successful partial resynchronization with master.");
            if let Some(replid) = replid {
                state.new_history(replid);
            }
        }
    }
    // The first ACK also tells a primary that sent a diskless payload
    // that this replica is online.
    conn.ack(state.offset()).await?;
    state.set_link(LinkState::Connected);
    state.heard_from_primary(shared.now_ms());
    let handle = Arc::new(ClientHandle::new(
        shared.next_client_id(),
        peer,
        local,
        shared.now_ms(),
    ));
    handle.info.lock().primary = true;
    let registered = Registered::new(shared, handle.clone());
    let mut client = Client::new(handle, shared.acl.default_user());
    client.authenticated = true;
    client.from_primary = true;
    client.db = state.stream_db();
    let result = apply_stream(shared, &mut conn, &mut client, &registered.handle).await;
    crate::command::forget_transaction(shared, &mut client);
    result
}

/// The primary's client, listed among the clients while the link lasts.
struct Registered<'s> {
    shared: &'s Shared,
    handle: Arc<ClientHandle>,
}

impl<'s> Registered<'s> {
    fn new(shared: &'s Shared, handle: Arc<ClientHandle>) -> Self {
        shared.clients.insert(handle.id, handle.clone());
        Registered { shared, handle }
    }
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.shared.clients.remove(&self.handle.id);
    }
}

/// PING, AUTH, REPLCONF, PSYNC, as a Redis 7.0 replica sends them.
async fn handshake(shared: &Shared, conn: &mut Conn) -> LinkResult<Sync> {
    let (user, password, port, ip) = {
        let config = shared.config.read();
        let port = match config.replica_announce_port {
            0 => config.port,
            announced => announced,
        };
        (
            config.masteruser.clone(),
            config.masterauth.clone(),
            port,
            config.replica_announce_ip.clone(),
        )
    };
    let pong = conn.ask(&[b"PING"]).await?;
    // An error about authentication is fine here: AUTH follows.
    if pong.starts_with('-')
        && !["-NOAUTH", "-NOPERM", "-ERR operation not permitted"]
            .iter()
            .any(|ok| pong.starts_with(ok))
    {
        return Err(refused("PING", pong));
    }
    if !password.is_empty() {
        let reply = if user.is_empty() {
            conn.ask(&[b"AUTH", password.as_bytes()]).await?
        } else {
            conn.ask(&[b"AUTH", user.as_bytes(), password.as_bytes()])
                .await?
        };
        if reply.starts_with('-') {
            return Err(refused("AUTH", reply));
        }
    }
    // A primary that does not know these only logs, as in Redis.
    let port = port.to_string();
    let reply = conn
        .ask(&[b"REPLCONF", b"listening-port", port.as_bytes()])
        .await?;
    note_refusal("REPLCONF listening-port", &reply);
    if !ip.is_empty() {
        let reply = conn
            .ask(&[b"REPLCONF", b"ip-address", ip.as_bytes()])
            .await?;
        note_refusal("REPLCONF ip-address", &reply);
    }
    let reply = conn
        .ask(&[b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"])
        .await?;
    note_refusal("REPLCONF capa", &reply);
    let (replid, offset) = shared
        .replica
        .resume_point()
        .unwrap_or_else(|| ("?".into(), -1));
    let offset = offset.to_string();
    let mut psync: Vec<&[u8]> = vec![b"PSYNC", replid.as_bytes(), offset.as_bytes()];
    // FAILOVER's switch: the target promotes itself on this request.
    let failover = shared.failover.state() == FailoverState::InProgress;
    if failover {
        psync.push(b"FAILOVER");
    }
    let reply = conn.ask(&psync).await?;
    let sync = parse_psync(&reply);
    if failover && sync.is_err() {
        shared.failover.refused();
    }
    sync
}

fn refused(step: &'static str, reply: String) -> LinkError {
    LinkError::Refused { step, reply }
}

fn note_refusal(step: &str, reply: &str) {
    if reply.starts_with('-') {
        tracing::info!("(Non critical) Master does not understand {step}: {reply}");
    }
}

/// PSYNC's answer: `+FULLRESYNC <replid> <offset>` or `+CONTINUE [<replid>]`.
fn parse_psync(reply: &str) -> LinkResult<Sync> {
    let words: Vec<&str> = reply.split_whitespace().collect();
    match words[..] {
        ["+FULLRESYNC", replid, offset] => Ok(Sync::Full {
            replid: replid.into(),
            offset: offset
                .parse()
                .map_err(|_| LinkError::Protocol(reply.into()))?,
        }),
        ["+CONTINUE"] => Ok(Sync::Continue { replid: None }),
        ["+CONTINUE", replid] => Ok(Sync::Continue {
            replid: Some(replid.into()),
        }),
        _ => Err(refused("PSYNC", reply.into())),
    }
}

/// Replaces the data with the snapshot's, off the async threads: clients
/// are told LOADING meanwhile, as Redis tells them, except under
/// `repl-diskless-load swapdb`, which loads it aside and serves the old
/// data until the swap. As `repl-diskless-load` says, the snapshot is
/// first written to the snapshot file, as a Redis replica loads it from
/// there (the file is then the replica's own snapshot, unless
/// `rdb-del-sync-files` removes it).
async fn load(shared: &Arc<Shared>, data: Vec<u8>) -> LinkResult<()> {
    let worker = shared.clone();
    tokio::task::spawn_blocking(move || {
        let _one_at_a_time = worker.replica.loading.lock();
        let config = worker.config.read().clone();
        let to_file = match config.repl_diskless_load {
            DisklessLoad::Disabled => true,
            DisklessLoad::OnEmptyDb => holds_keys(&worker),
            DisklessLoad::Swapdb => false,
        };
        let file = rdb_path(&config);
        if to_file {
            crate::persist::write_atomically(&file, |out| {
                std::io::Write::write_all(out, &data).map(|()| true)
            })
                .map_err(LinkError::SyncFile)?;
        }
        let loaded = if matches!(config.repl_diskless_load, DisklessLoad::Swapdb) {
            load_swapping(&worker, &data, config.rdbchecksum)
        } else {
            worker.snapshots.set_loading(true);
            empty_all(&worker);
            let loaded = load_data(&worker, &data, config.rdbchecksum, false).map(drop);
            worker.snapshots.set_loading(false);
            loaded
        };
        let persistent = !config.save.is_empty() || config.appendonly;
        if to_file && config.rdb_del_sync_files && !persistent {
            tracing::info!(
                "Removing the RDB file obtained from the master. This replica has persistence disabled"
            );
            let _ = std::fs::remove_file(&file);
        }
        // The primary's history is the one PSYNC named, not the file's.
        loaded.map_err(LinkError::Load)
    })
    .await
    .map_err(|e| LinkError::Protocol(e.to_string()))?
}

/// Applies the primary's commands in order, counting their bytes into
/// the offset, and acknowledges it every second.
async fn apply_stream(
    shared: &Shared,
    conn: &mut Conn,
    client: &mut Client,
    handle: &ClientHandle,
) -> LinkResult<()> {
    let state = &shared.replica;
    let mut parser = RequestParser::default();
    let mut acks = tokio::time::interval(ACK_EVERY);
    let killed = handle.killed();
    tokio::pin!(killed);
    loop {
        loop {
            match apply_buffered(shared, client, &mut parser, &mut conn.buf).await? {
                Pause::Drained => break,
                Pause::GetAck(frame) => {
                    conn.ack(state.offset()).await?;
                    // It changes no data: a capture on either side of it
                    // agrees with its offset.
                    state.backlog.feed(&frame);
                }
                Pause::Busy(frame, args) => apply(shared, client, &args, &frame).await,
            }
        }
        tokio::select! {
            filled = conn.fill() => {
                filled?;
                state.heard_from_primary(shared.now_ms());
            }
            _ = acks.tick() => conn.ack(state.offset()).await?,
            _ = &mut killed => return Err(LinkError::Closed),
        }
        if conn.buf.is_empty() && conn.buf.capacity() > 1024 * 1024 {
            conn.buf = BytesMut::with_capacity(16 * 1024);
        }
    }
}

/// Why `apply_buffered` stopped.
enum Pause {
    /// No whole command is left in the buffer.
    Drained,
    /// `REPLCONF GETACK`, to answer outside the apply gate.
    GetAck(Bytes),
    /// A busy script refused this command: `apply` runs it once it may.
    Busy(Bytes, Vec<Bytes>),
}

/// Runs the primary's commands that arrived whole (their replies go
/// nowhere), then passes their bytes on at once into this server's own
/// stream, as they came, for replicas of it (a primary sends no empty
/// requests, which the parser would skip uncounted). All of it happens
/// under one hold of the apply gate, which is never held across a wait,
/// so a snapshot waits for what one read brought at most, and one feed
/// of the stream (one lock, one wake of this server's replicas) serves
/// them all.
async fn apply_buffered(
    shared: &Shared,
    client: &mut Client,
    parser: &mut RequestParser,
    buf: &mut BytesMut,
) -> LinkResult<Pause> {
    let state = &shared.replica;
    let _applying = state.apply_gate.read().await;
    let mut applied = Vec::new();
    let pause = loop {
        let request = parser
            .next_request_framed(buf, true)
            .map_err(|e| LinkError::Protocol(e.message()))?;
        let Some((frame, args)) = request else {
            break Pause::Drained;
        };
        if is_getack(&args) {
            break Pause::GetAck(frame);
        }
        if let Reply::Error(e) = dispatch(shared, client, &args)
            && e.code() == "BUSY"
        {
            break Pause::Busy(frame, args);
        }
        applied.extend_from_slice(&frame);
    };
    if !applied.is_empty() {
        state.set_stream_db(client.db);
        state.backlog.feed(&applied);
    }
    Ok(pause)
}

/// `REPLCONF GETACK *`: the primary wants the offset now.
fn is_getack(args: &[Bytes]) -> bool {
    matches!(args, [name, sub, ..]
        if name.eq_ignore_ascii_case(b"replconf") && sub.eq_ignore_ascii_case(b"getack"))
}

/// Runs one of the primary's commands that a busy script refused, as
/// `apply_buffered` does, once it may: a busy script holds the command
/// back rather than losing it, as Redis's busy event loop holds the
/// primary's input.
async fn apply(shared: &Shared, client: &mut Client, args: &[Bytes], frame: &[u8]) {
    let state = &shared.replica;
    loop {
        let applying = state.apply_gate.read().await;
        match dispatch(shared, client, args) {
            Reply::Error(e) if e.code() == "BUSY" => {
                drop(applying);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            _ => {
                state.set_stream_db(client.db);
                state.backlog.feed(frame);
                return;
            }
        }
    }
}
