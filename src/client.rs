//! Per-connection state, and the shared view of every client that
//! CLIENT LIST / INFO / KILL read.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use std::time::Instant;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::command::Blocked;
use crate::error::CmdError;
use crate::keyspace::{Waiter, WatchFlag};
use crate::protocol::{Protocol, Reply};
use crate::pubsub::Subscriptions;

/// What other clients may read about a client, updated as it runs commands.
#[derive(Debug, Clone, Default)]
pub struct ClientInfo {
    pub name: Option<Bytes>,
    pub lib_name: Option<String>,
    pub lib_ver: Option<String>,
    pub db: usize,
    pub protocol: i64,
    /// Registry id of the last command.
    pub last_cmd: Option<usize>,
    pub last_interaction_ms: u64,
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
                last_interaction_ms: now_ms,
                ..ClientInfo::default()
            }),
            backlog: AtomicUsize::new(0),
            over_soft_since: AtomicU64::new(0),
            killed: AtomicBool::new(false),
            kill: Notify::new(),
        }
    }

    /// Asks the connection to close (CLIENT KILL, server shutdown).
    pub fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        self.kill.notify_one();
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    pub async fn killed(&self) {
        if !self.is_killed() {
            self.kill.notified().await;
        }
    }
}

/// The keys a client WATCHes and the flag their modification raises.
pub struct WatchState {
    pub flag: Arc<WatchFlag>,
    pub keys: Vec<(usize, Bytes)>,
}

pub struct Client {
    pub id: u64,
    pub db: usize,
    pub protocol: Protocol,
    pub authenticated: bool,
    /// Commands queued since MULTI, by registry id.
    pub multi: Option<Vec<(usize, Vec<Bytes>)>>,
    /// A command was refused while queueing: EXEC must abort.
    pub multi_failed: bool,
    pub watch: Option<WatchState>,
    pub close_after_reply: bool,
    /// Close without answering (SHUTDOWN: the server is going away).
    pub close_silently: bool,
    /// The client a script's commands run as: it shows in no CLIENT LIST.
    pub for_script: bool,
    /// Running EXEC's queue: blocking commands answer at once.
    pub in_exec: bool,
    /// Set by a blocking command that found nothing: the connection waits
    /// on it before answering.
    pub blocked: Option<Blocked>,
    /// The deadline a blocking command run again keeps.
    pub retry_deadline: Option<Option<Instant>>,
    /// Pub/sub subscriptions and the mailbox messages arrive in.
    pub pubsub: Subscriptions,
    pub handle: Arc<ClientHandle>,
}

impl Client {
    pub fn new(handle: Arc<ClientHandle>, authenticated: bool) -> Self {
        Client {
            id: handle.id,
            db: 0,
            protocol: Protocol::Resp2,
            authenticated,
            multi: None,
            multi_failed: false,
            watch: None,
            close_after_reply: false,
            close_silently: false,
            for_script: false,
            in_exec: false,
            blocked: None,
            retry_deadline: None,
            pubsub: Subscriptions::default(),
            handle,
        }
    }

    /// The client a script's commands run as: the caller's database and
    /// identity, but its own protocol and no transaction state.
    pub fn for_script(caller: &Client) -> Client {
        Client {
            id: caller.id,
            db: caller.db,
            protocol: Protocol::Resp2,
            authenticated: true,
            multi: None,
            multi_failed: false,
            watch: None,
            close_after_reply: false,
            close_silently: false,
            for_script: true,
            in_exec: false,
            blocked: None,
            retry_deadline: None,
            pubsub: Subscriptions::default(),
            handle: caller.handle.clone(),
        }
    }

    /// An error before execution; inside MULTI it also dooms the transaction.
    pub fn reject(&mut self, e: CmdError) -> Reply {
        if self.multi.is_some() {
            self.multi_failed = true;
        }
        Reply::Error(e)
    }

    pub fn queue(&mut self, id: usize, args: Vec<Bytes>) {
        let queue = self.multi.get_or_insert_with(Vec::new);
        queue.push((id, args));
        self.handle.info.lock().multi = queue.len() as i64;
    }

    /// Publishes the subscription counts CLIENT LIST shows.
    pub fn note_subscriptions(&self) {
        let mut info = self.handle.info.lock();
        (info.sub, info.psub, info.ssub) = self.pubsub.counts();
        info.monitor = self.pubsub.monitoring();
    }

    pub fn note_command(&mut self, id: usize) {
        if self.for_script {
            return;
        }
        let mut info = self.handle.info.lock();
        info.last_cmd = Some(id);
        info.db = self.db;
        info.protocol = self.protocol.version();
        info.multi = self.multi.as_ref().map_or(-1, |q| q.len() as i64);
        info.watched = self.watch.as_ref().map_or(0, |w| w.keys.len());
    }
}
