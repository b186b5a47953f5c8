//! What the server shares about one connected client: its identity, what
//! CLIENT LIST shows of it, its pub/sub backlog and its kill switch. Pub/sub
//! delivery and the client registry hold these; the connection owns the rest
//! of the client's state.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
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
    /// The link to this replica's primary (the `M` flag, TYPE master).
    pub primary: bool,
    /// A replica this server serves (the `S` flag, TYPE replica).
    pub replica: bool,
    /// Channel, pattern and shard channel subscriptions.
    pub sub: usize,
    pub psub: usize,
    pub ssub: usize,
}

/// Either end of a client's connection: an address and port, or the
/// server's unix socket, whose clients have no address of their own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientAddr {
    Tcp(SocketAddr),
    /// The socket's path: both ends of a socket connection show it.
    Unix(Arc<str>),
}

impl ClientInfo {
    /// Whether INFO's `blocked_clients` counts it: a client whose wait was
    /// served no longer is, though its connection has not taken the reply
    /// yet, as Redis unblocks it within the write that served it.
    pub fn counts_as_blocked(&self) -> bool {
        self.blocked && self.waiter.as_ref().is_none_or(|w| w.is_waiting())
    }
}

impl ClientAddr {
    /// The IP address, for TCP.
    pub fn ip(&self) -> Option<IpAddr> {
        match self {
            ClientAddr::Tcp(addr) => Some(addr.ip()),
            ClientAddr::Unix(_) => None,
        }
    }

    /// Redis's "local client" (protected mode, `enable-debug-command
    /// local`, `enable-protected-configs local`): 127.0.0.1 or ::1
    /// exactly, as Redis compares them, not all of 127/8; or the unix
    /// socket, which is on this host.
    pub fn is_local(&self) -> bool {
        match self.ip() {
            None => true,
            Some(IpAddr::V4(ip)) => ip == Ipv4Addr::LOCALHOST,
            Some(IpAddr::V6(ip)) => {
                ip == Ipv6Addr::LOCALHOST || ip.to_ipv4_mapped() == Some(Ipv4Addr::LOCALHOST)
            }
        }
    }
}

impl From<SocketAddr> for ClientAddr {
    fn from(addr: SocketAddr) -> Self {
        ClientAddr::Tcp(addr)
    }
}

/// As CLIENT LIST shows it: `ip:port`, or Redis's `path:0` for a socket.
impl fmt::Display for ClientAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientAddr::Tcp(addr) => addr.fmt(f),
            ClientAddr::Unix(path) => write!(f, "{path}:0"),
        }
    }
}

pub struct ClientHandle {
    pub id: u64,
    pub addr: ClientAddr,
    pub laddr: ClientAddr,
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
    pub fn new(
        id: u64,
        addr: impl Into<ClientAddr>,
        laddr: impl Into<ClientAddr>,
        now_ms: u64,
    ) -> Self {
        ClientHandle {
            id,
            addr: addr.into(),
            laddr: laddr.into(),
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
