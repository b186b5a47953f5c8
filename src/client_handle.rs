//! What the server shares about one connected client: its identity, what
//! CLIENT LIST shows of it, its pub/sub backlog and its kill switch. Pub/sub
//! delivery and the client registry hold these; the connection owns the rest
//! of the client's state.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::keyspace::Waiter;

/// What other clients may read about a client, updated as it runs commands.
#[derive(Debug, Clone, Default)]
pub struct ClientInfo {
    /// The ACL user it is logged in as.
    pub user: String,
    pub name: Option<Bytes>,
    pub lib_name: Option<String>,
    pub lib_ver: Option<String>,
    pub db: usize,
    pub protocol: i64,
    /// Registry id of the last command.
    pub last_cmd: Option<usize>,
    /// Queued commands, or -1 outside MULTI.
    pub multi: i64,
    pub watched: usize,
    pub no_evict: bool,
    /// Waiting in a blocking command.
    pub blocked: bool,
    /// The wait of a blocking command on keys or time, for CLIENT UNBLOCK
    /// (none while held by CLIENT PAUSE).
    pub waiter: Option<Arc<Waiter>>,
    /// READONLY in cluster mode (the `r` flag).
    pub readonly: bool,
    /// In MONITOR mode.
    pub monitor: bool,
    /// Channel, pattern and shard channel subscriptions.
    pub sub: usize,
    pub psub: usize,
    pub ssub: usize,
}

pub struct ClientHandle {
    pub id: u64,
    pub addr: SocketAddr,
    pub laddr: SocketAddr,
    pub created_ms: u64,
    pub info: Mutex<ClientInfo>,
    /// Bytes of pub/sub frames queued for this client and not yet written:
    /// publishers add, the connection subtracts what it has written.
    pub backlog: AtomicUsize,
    /// When the backlog reached the pub/sub soft limit, or 0 (see
    /// `pubsub::Limits`).
    pub over_soft_since: AtomicU64,
    /// When it last sent anything (CLIENT LIST's `idle`): outside `info`,
    /// so that every read does not take that lock.
    pub last_interaction_ms: AtomicU64,
    killed: AtomicBool,
    kill: Notify,
}

impl ClientHandle {
    pub fn new(id: u64, addr: SocketAddr, laddr: SocketAddr, now_ms: u64) -> Self {
        ClientHandle {
            id,
            addr,
            laddr,
            created_ms: now_ms,
            info: Mutex::new(ClientInfo {
                protocol: 2,
                multi: -1,
                ..ClientInfo::default()
            }),
            backlog: AtomicUsize::new(0),
            over_soft_since: AtomicU64::new(0),
            last_interaction_ms: AtomicU64::new(now_ms),
            killed: AtomicBool::new(false),
            kill: Notify::new(),
        }
    }

    /// Asks the connection to close (CLIENT KILL, server shutdown).
    pub fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        // Every wait ends: the connection's read loop keeps one for its
        // whole life, and a write stuck on a client that stopped reading
        // has its own.
        self.kill.notify_waiters();
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    pub async fn killed(&self) {
        // Waiting before the flag is read: a kill in between still ends it.
        let notified = self.kill.notified();
        if !self.is_killed() {
            notified.await;
        }
    }
}
