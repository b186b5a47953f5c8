//! The replicas this server serves as a primary: where each stands
//! (INFO's `slaveN` lines, ROLE, `WAIT`, `min-replicas-to-write`) and the
//! full and partial syncs counted (INFO stats). The connections
//! themselves are `crate::replication`'s.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU8, AtomicU64, Ordering};

use parking_lot::Mutex;
use tokio::sync::watch;

use crate::keyspace::{Outcome, Taken, Waiter};

/// How often a WAIT whose client may have gone looks whether it still
/// waits.
const WAIT_CHECK: std::time::Duration = std::time::Duration::from_millis(100);

/// A served replica's state, as Redis names it in INFO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum SyncState {
    /// Waiting for its snapshot to be taken.
    WaitBgsave,
    /// Its snapshot being sent.
    SendBulk,
    /// Following the stream.
    Online,
}

impl SyncState {
    fn from_u8(n: u8) -> SyncState {
        match n {
            0 => SyncState::WaitBgsave,
            1 => SyncState::SendBulk,
            _ => SyncState::Online,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SyncState::WaitBgsave => "wait_bgsave",
            SyncState::SendBulk => "send_bulk",
            SyncState::Online => "online",
        }
    }
}

/// One replica served.
pub struct ServedReplica {
    /// Its client id.
    pub id: u64,
    pub ip: String,
    /// The port it listens on (REPLCONF listening-port).
    pub port: u16,
    state: AtomicU8,
    /// The offset its last REPLCONF ACK reported.
    ack_offset: AtomicI64,
    /// Server ms of its last ACK.
    ack_ms: AtomicU64,
}

impl ServedReplica {
    pub fn state(&self) -> SyncState {
        SyncState::from_u8(self.state.load(Ordering::Relaxed))
    }

    /// Its lag and `repl-timeout` count from when it came online, until
    /// its first ACK.
    pub fn set_state(&self, state: SyncState, now_ms: u64) {
        self.state.store(state as u8, Ordering::Relaxed);
        if state == SyncState::Online {
            self.ack_ms.store(now_ms, Ordering::Relaxed);
        }
    }

    pub fn ack_offset(&self) -> i64 {
        self.ack_offset.load(Ordering::Relaxed)
    }

    pub fn ack_ms(&self) -> u64 {
        self.ack_ms.load(Ordering::Relaxed)
    }
}

/// Every replica served, and the syncs counted.
pub struct Replicas {
    list: Mutex<Vec<Arc<ServedReplica>>>,
    /// Bumped by every ACK: WAIT looks again.
    acked: watch::Sender<u64>,
    /// Server ms since which none has been connected (`repl-backlog-ttl`).
    none_since_ms: AtomicU64,
    pub sync_full: AtomicU64,
    pub sync_partial_ok: AtomicU64,
    pub sync_partial_err: AtomicU64,
}

impl Replicas {
    pub fn new(now_ms: u64) -> Replicas {
        Replicas {
            list: Mutex::new(Vec::new()),
            acked: watch::Sender::new(0),
            none_since_ms: AtomicU64::new(now_ms),
            sync_full: AtomicU64::new(0),
            sync_partial_ok: AtomicU64::new(0),
            sync_partial_err: AtomicU64::new(0),
        }
    }

    /// Lists a replica that asked to sync.
    pub fn add(&self, id: u64, ip: String, port: u16, now_ms: u64) -> Arc<ServedReplica> {
        let replica = Arc::new(ServedReplica {
            id,
            ip,
            port,
            state: AtomicU8::new(SyncState::WaitBgsave as u8),
            ack_offset: AtomicI64::new(0),
            ack_ms: AtomicU64::new(now_ms),
        });
        self.list.lock().push(replica.clone());
        replica
    }

    pub fn remove(&self, id: u64, now_ms: u64) {
        let mut list = self.list.lock();
        list.retain(|r| r.id != id);
        if list.is_empty() {
            self.none_since_ms.store(now_ms, Ordering::Relaxed);
        }
    }

    pub fn all(&self) -> Vec<Arc<ServedReplica>> {
        self.list.lock().clone()
    }

    pub fn is_empty(&self) -> bool {
        self.list.lock().is_empty()
    }

    pub fn none_since_ms(&self) -> u64 {
        self.none_since_ms.load(Ordering::Relaxed)
    }

    /// A REPLCONF ACK from `replica`.
    pub fn ack(&self, replica: &ServedReplica, offset: i64, now_ms: u64) {
        replica.ack_offset.store(offset, Ordering::Relaxed);
        replica.ack_ms.store(now_ms, Ordering::Relaxed);
        self.acked.send_modify(|n| *n += 1);
    }

    /// Wakes on every ACK.
    pub fn watch_acks(&self) -> watch::Receiver<u64> {
        self.acked.subscribe()
    }

    /// How many online replicas acknowledged `offset` or beyond.
    pub fn acked_at_least(&self, offset: i64) -> usize {
        self.all()
            .iter()
            .filter(|r| r.state() == SyncState::Online && r.ack_offset() >= offset)
            .count()
    }

    /// How many online replicas acknowledged within `max_lag_s` seconds
    /// (`min-replicas-max-lag`).
    pub fn good(&self, now_ms: u64, max_lag_s: i64) -> usize {
        self.all()
            .iter()
            .filter(|r| {
                r.state() == SyncState::Online
                    && (now_ms.saturating_sub(r.ack_ms()) / 1000) as i64 <= max_lag_s
            })
            .count()
    }

    /// WAIT's other half: serves `waiter` with the count of replicas at
    /// `offset` once `wanted` of them are, or at `deadline` with however
    /// many are then.
    pub async fn serve_wait(
        self: Arc<Self>,
        waiter: Arc<Waiter>,
        offset: i64,
        wanted: usize,
        deadline: Option<tokio::time::Instant>,
    ) {
        let mut acks = self.watch_acks();
        loop {
            let count = self.acked_at_least(offset);
            let timed_out = deadline.is_some_and(|d| tokio::time::Instant::now() >= d);
            if count >= wanted || timed_out || !waiter.is_waiting() {
                waiter.interrupt(Outcome::Served {
                    key: bytes::Bytes::new(),
                    taken: Taken::Count(count as i64),
                });
                return;
            }
            let check = tokio::time::Instant::now() + WAIT_CHECK;
            let wake = deadline.map_or(check, |d| d.min(check));
            tokio::select! {
                _ = acks.changed() => {}
                _ = tokio::time::sleep_until(wake) => {}
            }
        }
    }
}
