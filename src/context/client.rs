//! Per-connection state: the database, protocol, MULTI queue, WATCHed keys,
//! blocking wait and subscriptions of one client.

use std::sync::Arc;

use std::time::Instant;

use bytes::Bytes;

use super::acl::UserSlot;
use crate::client_handle::ClientHandle;
use crate::error::CmdError;
use crate::keyspace::{Outcome, Taken, Waiter, WatchFlag};
use crate::protocol::{Protocol, Reply};
use crate::pubsub::Subscriptions;

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
    /// The ACL user it runs as (the default user until AUTH).
    pub user: Arc<UserSlot>,
    /// Commands queued since MULTI, by registry id.
    pub multi: Option<Vec<(usize, Vec<Bytes>)>>,
    /// A command was refused while queueing: EXEC must abort.
    pub multi_failed: bool,
    pub watch: Option<WatchState>,
    pub close_after_reply: bool,
    /// CLIENT REPLY: whether this command's reply is written.
    pub replies: ReplyMode,
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
    /// The bytes of input not yet consumed when the running command was
    /// read, itself included: CLIENT LIST's `qbuf` for the client itself,
    /// since Redis trims its query buffer only after running a batch.
    pub query_bytes: usize,
    /// The link to this replica's primary: its writes pass
    /// `replica-read-only`, and nobody reads its replies.
    pub from_primary: bool,
    /// What a replica said of itself before it asked to sync (REPLCONF).
    pub replica_hello: ReplicaHello,
    /// Set by SYNC or PSYNC: the connection becomes a replica's.
    pub sync_asked: Option<SyncAsk>,
}

/// A replica's REPLCONF: where it listens, and what it understands.
#[derive(Debug, Clone, Default)]
pub struct ReplicaHello {
    /// `listening-port` (0: not told).
    pub port: u16,
    /// `ip-address`, when it announces one.
    pub ip: Option<String>,
    /// `capa eof`: it takes a snapshot streamed without its length.
    pub capa_eof: bool,
    /// `capa psync2`: it knows `+CONTINUE <replid>`.
    pub capa_psync2: bool,
}

/// How a replica asked for the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncAsk {
    /// SYNC: a full sync, the snapshot sent without `+FULLRESYNC`.
    Sync,
    /// PSYNC replid offset: continue from `offset` of history `replid`
    /// if the backlog has it (`?` and -1: a full sync).
    Psync { replid: String, offset: i64 },
}

impl Client {
    pub fn new(handle: Arc<ClientHandle>, user: Arc<UserSlot>) -> Self {
        let authenticated = {
            let rules = user.rules();
            rules.enabled && rules.nopass
        };
        handle.info.lock().user = user.name.clone();
        Client::fresh(handle, user, authenticated)
    }

    /// The client a script's commands run as: the caller's database and
    /// identity, but its own protocol and no transaction state.
    pub fn for_script(caller: &Client) -> Client {
        Client {
            db: caller.db,
            for_script: true,
            ..Client::fresh(caller.handle.clone(), caller.user.clone(), true)
        }
    }

    /// A client in database 0 speaking RESP2, with no transaction,
    /// subscription or wait.
    fn fresh(handle: Arc<ClientHandle>, user: Arc<UserSlot>, authenticated: bool) -> Client {
        Client {
            id: handle.id,
            db: 0,
            protocol: Protocol::Resp2,
            authenticated,
            user,
            multi: None,
            multi_failed: false,
            watch: None,
            close_after_reply: false,
            replies: ReplyMode::On,
            close_silently: false,
            for_script: false,
            in_exec: false,
            query_bytes: 0,
            from_primary: false,
            replica_hello: ReplicaHello::default(),
            sync_asked: None,
            blocked: None,
            retry_deadline: None,
            pubsub: Subscriptions::default(),
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

/// CLIENT REPLY's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyMode {
    On,
    Off,
    /// CLIENT REPLY SKIP just ran: neither its reply nor the next command's.
    SkipNext,
    /// The reply of the command running now is dropped.
    Skip,
}

impl ReplyMode {
    /// Whether the command that just ran is answered, moving on to the
    /// next command's state.
    pub fn answer_and_advance(&mut self) -> bool {
        let answered = *self == ReplyMode::On;
        *self = match *self {
            ReplyMode::SkipNext => ReplyMode::Skip,
            ReplyMode::Skip => ReplyMode::On,
            mode => mode,
        };
        answered
    }
}

/// A client waiting on keys, until `deadline` (`None`: for ever).
pub struct Blocked {
    pub waiter: Arc<Waiter>,
    pub deadline: Option<Instant>,
    /// What a timeout answers: BLPOP's nil array, WAIT's 0.
    pub timeout_reply: Reply,
    /// How the command answers what it was handed.
    pub served_reply: ServedReply,
}

/// Builds a blocking command's reply from the key it was served from and
/// what it took there.
pub type ServedReply = fn(Bytes, Taken) -> Reply;

impl Blocked {
    /// The reply for how the wait ended; `None` when the command must run
    /// again (its element could not be handed over where it waited).
    pub fn reply(&self, outcome: Outcome) -> Option<Reply> {
        match outcome {
            Outcome::Served { key, taken } => Some((self.served_reply)(key, taken)),
            Outcome::Failed(e) => Some(Reply::Error(e)),
            Outcome::Cancelled => Some(self.timeout_reply.clone()),
            Outcome::Retry | Outcome::Waiting | Outcome::Serving => None,
        }
    }
}
