//! Per-connection state, and the shared view of every client that
//! CLIENT LIST / INFO / KILL read.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::error::CmdError;
use crate::keyspace::WatchFlag;
use crate::protocol::{Protocol, Reply};

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
}

pub struct ClientHandle {
    pub id: u64,
    pub addr: SocketAddr,
    pub laddr: SocketAddr,
    pub created_ms: u64,
    pub info: Mutex<ClientInfo>,
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
            handle,
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

    pub fn note_command(&mut self, id: usize) {
        let mut info = self.handle.info.lock();
        info.last_cmd = Some(id);
        info.db = self.db;
        info.protocol = self.protocol.version();
        info.multi = self.multi.as_ref().map_or(-1, |q| q.len() as i64);
        info.watched = self.watch.as_ref().map_or(0, |w| w.keys.len());
    }
}
