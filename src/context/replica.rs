//! Whom this server replicates from and how its link is doing: what
//! REPLICAOF sets, the link (`crate::replication`) follows and reports
//! into, and ROLE and INFO replication read.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::persist::backlog::Backlog;

use super::Shared;
use tokio::sync::watch;

/// A primary's address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Primary {
    pub host: String,
    pub port: u16,
}

/// Where a replica's link stands, as Redis's `repl_state` (named as ROLE
/// names them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum LinkState {
    /// To connect (again).
    Connect,
    Connecting,
    /// PING, AUTH, REPLCONF, PSYNC under way.
    Handshake,
    /// Receiving the primary's snapshot.
    Sync,
    /// Following the primary's command stream.
    Connected,
}

impl LinkState {
    fn from_u8(n: u8) -> LinkState {
        match n {
            1 => LinkState::Connecting,
            2 => LinkState::Handshake,
            3 => LinkState::Sync,
            4 => LinkState::Connected,
            _ => LinkState::Connect,
        }
    }

    /// ROLE's word for it.
    pub fn name(self) -> &'static str {
        match self {
            LinkState::Connect => "connect",
            LinkState::Connecting => "connecting",
            LinkState::Handshake => "handshake",
            LinkState::Sync => "sync",
            LinkState::Connected => "connected",
        }
    }
}

/// The replication id and offset of the history this server holds.
#[derive(Debug, Clone)]
pub struct History {
    pub replid: String,
    /// The id of the history before the last switch, and the offset it
    /// held to (Redis's `replid2`, `second_repl_offset`), for partial
    /// resyncs across a promotion.
    pub replid2: String,
    pub second_offset: i64,
}

/// Where a snapshot file stands in a replication history: Redis 7.0's
/// `repl-stream-db`, `repl-id` and `repl-offset` aux fields, which let a
/// server restarted from the file continue that history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedPoint {
    pub replid: String,
    pub offset: i64,
    /// The database the stream had selected at `offset`.
    pub stream_db: usize,
}

/// No history before the last switch, as Redis prints it.
const NO_REPLID: &str = "0000000000000000000000000000000000000000";

/// A full sync's transfer, as INFO's `master_sync_*` report it (Redis's
/// `repl_transfer_*`).
struct Transfer {
    /// The payload's size: -1 before its header, 0 for a diskless one
    /// (its end is a mark, not a length).
    size: AtomicI64,
    read: AtomicI64,
    /// Server ms of its last bytes.
    last_io_ms: AtomicU64,
}

pub struct ReplicaState {
    /// The primary to follow; the link task watches it.
    primary: watch::Sender<Option<Primary>>,
    link: AtomicU8,
    /// The stream: this server's own as a primary, its primary's as a
    /// replica, whose offset (`master_repl_offset`) counts the bytes
    /// applied.
    pub backlog: Arc<Backlog>,
    history: Mutex<History>,
    /// Server ms of the last bytes from the primary; 0 before any.
    last_io_ms: AtomicU64,
    /// Server ms the link last went down; 0 if it never was up.
    down_since_ms: AtomicU64,
    /// Whether the link ever completed a sync (a replica that did has
    /// data to serve while the link is down).
    synced: AtomicBool,
    /// The database the primary's stream last selected: a partial resync
    /// goes on in it (Redis keeps its primary's client, database and all,
    /// across a dropped link).
    stream_db: AtomicUsize,
    transfer: Transfer,
    /// Held by the link across applying each of its primary's commands
    /// and passing it on to the backlog, and by a full sync of a replica
    /// of this one while it captures: the snapshot then never has a
    /// command's effect without its bytes counted, or the reverse.
    pub apply_gate: tokio::sync::RwLock<()>,
    /// Held while a full sync replaces the data: a link given up during
    /// its load (REPLICAOF elsewhere) leaves the load to finish on its
    /// thread, and the next link's load waits for it.
    pub loading: Mutex<()>,
}

impl ReplicaState {
    pub fn new(replid: String, backlog: Arc<Backlog>) -> ReplicaState {
        ReplicaState {
            primary: watch::Sender::new(None),
            link: AtomicU8::new(LinkState::Connect as u8),
            backlog,
            history: Mutex::new(History {
                replid,
                replid2: NO_REPLID.into(),
                second_offset: -1,
            }),
            last_io_ms: AtomicU64::new(0),
            down_since_ms: AtomicU64::new(0),
            synced: AtomicBool::new(false),
            stream_db: AtomicUsize::new(0),
            transfer: Transfer {
                size: AtomicI64::new(-1),
                read: AtomicI64::new(0),
                last_io_ms: AtomicU64::new(0),
            },
            apply_gate: tokio::sync::RwLock::new(()),
            loading: Mutex::new(()),
        }
    }

    pub fn primary(&self) -> Option<Primary> {
        self.primary.borrow().clone()
    }

    pub fn is_replica(&self) -> bool {
        self.primary.borrow().is_some()
    }

    /// For the link task: wakes on each REPLICAOF.
    pub fn subscribe(&self) -> watch::Receiver<Option<Primary>> {
        self.primary.subscribe()
    }

    /// REPLICAOF host port (`Some`) or NO ONE. Turning into a primary
    /// starts a history of its own, keeping the old id as `replid2`, as
    /// Redis's `shiftReplicationId` does.
    pub fn follow(&self, primary: Option<Primary>) {
        if primary.is_none() && self.is_replica() {
            let offset = self.offset();
            let mut history = self.history.lock();
            history.replid2 = std::mem::replace(&mut history.replid, crate::util::random_hex(40));
            history.second_offset = offset + 1;
        }
        self.backlog.set_following(primary.is_some());
        self.set_link(LinkState::Connect);
        self.primary.send_replace(primary);
    }

    pub fn link(&self) -> LinkState {
        LinkState::from_u8(self.link.load(Ordering::Acquire))
    }

    pub fn set_link(&self, state: LinkState) {
        let was = self.link.swap(state as u8, Ordering::AcqRel);
        if was == LinkState::Connected as u8 && state != LinkState::Connected {
            self.down_since_ms.store(
                self.last_io_ms.load(Ordering::Relaxed).max(1),
                Ordering::Relaxed,
            );
        }
    }

    pub fn offset(&self) -> i64 {
        self.backlog.offset()
    }

    /// A primary that had no backlog starts one with a history of its
    /// own, as Redis does for its first replica: no replica can continue
    /// a history from before the stream was kept.
    pub fn start_backlog(&self) {
        if self.backlog.is_active() {
            return;
        }
        let mut history = self.history.lock();
        history.replid = crate::util::random_hex(40);
        history.replid2 = NO_REPLID.into();
        history.second_offset = -1;
        self.backlog.activate();
    }

    /// `repl-backlog-ttl` passed without replicas: the backlog is freed,
    /// and the history with it.
    pub fn free_backlog(&self) {
        self.change_id();
        self.backlog.deactivate();
    }

    /// A history of a new id, the old one forgotten (DEBUG CHANGE-REPL-ID):
    /// no replica can continue the stream it had.
    pub fn change_id(&self) {
        let mut history = self.history.lock();
        history.replid = crate::util::random_hex(40);
        history.replid2 = NO_REPLID.into();
        history.second_offset = -1;
    }

    /// Whether a replica that stood at `offset` (the next byte it wants)
    /// of history `replid` may continue from the backlog.
    pub fn may_continue(&self, replid: &str, offset: i64) -> bool {
        let history = self.history.lock();
        let known = replid == history.replid
            || (replid == history.replid2 && offset <= history.second_offset);
        known && self.backlog.has_from(offset)
    }

    pub fn history(&self) -> History {
        self.history.lock().clone()
    }

    /// A full sync: the primary's history from `offset` on.
    pub fn full_sync(&self, replid: String, offset: i64) {
        let mut history = self.history.lock();
        history.replid = replid;
        history.replid2 = NO_REPLID.into();
        history.second_offset = -1;
        self.backlog.restart_at(offset);
        self.synced.store(true, Ordering::Release);
        self.stream_db.store(0, Ordering::Relaxed);
    }

    pub fn stream_db(&self) -> usize {
        self.stream_db.load(Ordering::Relaxed)
    }

    pub fn set_stream_db(&self, db: usize) {
        self.stream_db.store(db, Ordering::Relaxed);
    }

    /// A partial resync that moved the primary's history to a new id:
    /// the old one stays valid up to here.
    pub fn new_history(&self, replid: String) {
        let offset = self.offset();
        let mut history = self.history.lock();
        history.replid2 = std::mem::replace(&mut history.replid, replid);
        history.second_offset = offset + 1;
    }

    /// The id and offset a partial resync asks for, once there is data
    /// of a history: a primary's it synced from, or its own, kept in its
    /// backlog (a primary turned replica, by FAILOVER or REPLICAOF, asks
    /// to continue its own history, as Redis's does).
    pub fn resume_point(&self) -> Option<(String, i64)> {
        (self.synced.load(Ordering::Acquire) || self.backlog.is_active())
            .then(|| (self.history.lock().replid.clone(), self.offset() + 1))
    }

    /// Where a snapshot taken now at `offset` stands, or None when in no
    /// history worth keeping, as Redis's `rdbPopulateSaveInfo` decides: a
    /// primary's once it keeps a backlog (without one, any replica syncs
    /// in full), a replica's once it holds data of its primary's history.
    pub fn saved_point(&self, offset: i64) -> Option<SavedPoint> {
        let replid = if self.is_replica() {
            self.resume_point()?.0
        } else if self.backlog.is_active() {
            self.history.lock().replid.clone()
        } else {
            return None;
        };
        // A primary's capture has its stream select a database anew
        // (`Backlog::sync_point`): 0 is as good as any, as in Redis.
        let stream_db = if self.is_replica() {
            self.stream_db()
        } else {
            0
        };
        Some(SavedPoint {
            replid,
            offset,
            stream_db,
        })
    }

    /// At start, the history of the snapshot file just loaded, as Redis
    /// 7.0 takes it back: a replica continues it with its primary (`PSYNC
    /// <id> <offset+1>`); a primary starts a new id with the file's as
    /// `replid2`, and a backlog from the file's offset, so that replicas
    /// that stood there continue.
    pub fn restore(&self, point: SavedPoint) {
        if self.is_replica() {
            self.full_sync(point.replid, point.offset);
            self.set_stream_db(point.stream_db);
            return;
        }
        let mut history = self.history.lock();
        history.replid2 = point.replid;
        history.second_offset = point.offset + 1;
        self.backlog.restart_at(point.offset);
    }

    /// A full sync's payload is coming: its size is not known yet.
    pub fn transfer_started(&self, now_ms: u64) {
        self.transfer.size.store(-1, Ordering::Relaxed);
        self.transfer.read.store(0, Ordering::Relaxed);
        self.transfer.last_io_ms.store(now_ms, Ordering::Relaxed);
    }

    /// The payload's header: its length, or 0 for a diskless payload.
    pub fn transfer_size(&self, size: i64) {
        self.transfer.size.store(size, Ordering::Relaxed);
    }

    /// So many of the payload's bytes are in.
    pub fn transfer_read(&self, read: i64, now_ms: u64) {
        self.transfer.read.store(read, Ordering::Relaxed);
        self.transfer.last_io_ms.store(now_ms, Ordering::Relaxed);
    }

    pub fn heard_from_primary(&self, now_ms: u64) {
        self.last_io_ms.store(now_ms, Ordering::Relaxed);
    }

    pub fn last_io_ms(&self) -> u64 {
        self.last_io_ms.load(Ordering::Relaxed)
    }

    pub fn down_since_ms(&self) -> u64 {
        self.down_since_ms.load(Ordering::Relaxed)
    }
}

/// INFO's replication section.
pub fn info(shared: &Shared, line: &mut dyn FnMut(&str, &dyn std::fmt::Display)) {
    let state = &shared.replica;
    let history = state.history();
    let offset = state.offset();
    let synced = state.resume_point().is_some();
    let now_s = (shared.now_ms() / 1000) as i64;
    let secs_since = |ms: u64| {
        if ms == 0 {
            -1
        } else {
            now_s - (ms / 1000) as i64
        }
    };
    if let Some(primary) = state.primary() {
        let link = state.link();
        let up = link == LinkState::Connected;
        let config = shared.config.read();
        line("role", &"slave");
        line("master_host", &primary.host);
        line("master_port", &primary.port);
        line("master_link_status", &if up { "up" } else { "down" });
        let last_io = if up {
            secs_since(state.last_io_ms())
        } else {
            -1
        };
        line("master_last_io_seconds_ago", &last_io);
        line(
            "master_sync_in_progress",
            &i32::from(link == LinkState::Sync),
        );
        let applied = if synced { offset } else { 1 };
        line("slave_read_repl_offset", &applied);
        line("slave_repl_offset", &applied);
        if link == LinkState::Sync {
            let transfer = &state.transfer;
            let size = transfer.size.load(Ordering::Relaxed);
            let read = transfer.read.load(Ordering::Relaxed);
            // Redis divides by a size of -1 too, into `-0.00`.
            let perc = if size == 0 {
                0.0
            } else {
                read as f64 / size as f64 * 100.0
            };
            line("master_sync_total_bytes", &size);
            line("master_sync_read_bytes", &read);
            line("master_sync_left_bytes", &(size - read));
            line("master_sync_perc", &format!("{perc:.2}"));
            let last_io = transfer.last_io_ms.load(Ordering::Relaxed);
            line("master_sync_last_io_seconds_ago", &secs_since(last_io));
        }
        if !up {
            line(
                "master_link_down_since_seconds",
                &secs_since(state.down_since_ms()),
            );
        }
        line("slave_priority", &config.replica_priority);
        line("slave_read_only", &i32::from(config.replica_read_only));
        line("replica_announced", &i32::from(config.replica_announced));
    } else {
        line("role", &"master");
    }
    let replicas = shared.replicas.all();
    line("connected_slaves", &replicas.len());
    let (min_replicas, max_lag) = {
        let config = shared.config.read();
        (config.min_replicas_to_write, config.min_replicas_max_lag)
    };
    if min_replicas > 0 && max_lag > 0 {
        let good = shared.replicas.good(shared.now_ms(), max_lag);
        line("min_slaves_good_slaves", &good);
    }
    for (n, replica) in replicas.iter().enumerate() {
        let lag = now_s - (replica.ack_ms() / 1000) as i64;
        line(
            &format!("slave{n}"),
            &format_args!(
                "ip={},port={},state={},offset={},lag={lag}",
                replica.ip,
                replica.port,
                replica.state().name(),
                replica.ack_offset()
            ),
        );
    }
    line("master_failover_state", &shared.failover.state().name());
    line("master_replid", &history.replid);
    line("master_replid2", &history.replid2);
    line("master_repl_offset", &offset);
    line("second_repl_offset", &history.second_offset);
    line("repl_backlog_active", &i32::from(state.backlog.is_active()));
    line("repl_backlog_size", &shared.config.read().repl_backlog_size);
    let (first, histlen) = state.backlog.span();
    line("repl_backlog_first_byte_offset", &first);
    line("repl_backlog_histlen", &histlen);
    // Ours, shown only where set: what is left of the promotion grace.
    if shared.config.read().lock_promotion_grace_ms > 0 {
        let left = shared.promotion_grace.left_ms(|| shared.now_ms());
        line("lock_promotion_grace_left_ms", &left);
    }
}
