//! What a blocked client waits for and how its wait ends: the waiter a
//! shard queues under each key it waits on (`blocked.rs` serves them).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::events::Event;
use super::stream::{GroupRead, ReadEntry, StreamId};
use crate::error::CmdError;

/// The end of a list an element is taken from or put on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Left,
    Right,
}

impl End {
    pub fn pop(self, list: &mut VecDeque<Bytes>) -> Option<Bytes> {
        match self {
            End::Left => list.pop_front(),
            End::Right => list.pop_back(),
        }
    }

    pub fn push(self, list: &mut VecDeque<Bytes>, item: Bytes) {
        match self {
            End::Left => list.push_front(item),
            End::Right => list.push_back(item),
        }
    }

    pub fn pop_event(self) -> Event {
        match self {
            End::Left => Event::Lpop,
            End::Right => Event::Rpop,
        }
    }

    pub fn push_event(self) -> Event {
        match self {
            End::Left => Event::Lpush,
            End::Right => Event::Rpush,
        }
    }
}

/// The end of a sorted set a member is taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZEnd {
    Min,
    Max,
}

impl ZEnd {
    pub fn pop_event(self) -> Event {
        match self {
            ZEnd::Min => Event::Zpopmin,
            ZEnd::Max => Event::Zpopmax,
        }
    }
}

/// What a waiter takes once one of its keys has something for it.
#[derive(Debug, Clone)]
pub enum Wanted {
    /// BLPOP / BRPOP / BLMPOP: up to `count` elements from one end.
    List { end: End, count: usize },
    /// BZPOPMIN / BZPOPMAX / BZMPOP: up to `count` members and scores.
    ZSet { end: ZEnd, count: usize },
    /// BLMOVE / BRPOPLPUSH: the element, after moving it to `dest`.
    Move { from: End, dest: Bytes, to: End },
    /// WAIT / WAITAOF: no key; replicas' acknowledgements (or the
    /// timeout) end the wait.
    Time,
    /// XREAD / XREADGROUP: entries added to a stream.
    Stream(Box<StreamWait>),
}

/// What a blocked stream read waits for.
#[derive(Debug, Clone)]
pub struct StreamWait {
    /// For each of the waiter's keys, the id the entries must come after
    /// (unused for a group read, which reads past the group's last id).
    pub after: Vec<StreamId>,
    /// At most this many entries (0: all).
    pub count: usize,
    pub group: Option<GroupRead>,
}

impl Wanted {
    pub(super) fn takes_list(&self) -> bool {
        matches!(self, Wanted::List { .. } | Wanted::Move { .. })
    }

    pub(super) fn takes_zset(&self) -> bool {
        matches!(self, Wanted::ZSet { .. })
    }

    /// Whether being served changes data (a pop, a move, a group's
    /// delivery), as a write does; a plain stream read changes nothing.
    fn writes(&self) -> bool {
        match self {
            Wanted::List { .. } | Wanted::ZSet { .. } | Wanted::Move { .. } => true,
            Wanted::Stream(wait) => wait.group.is_some(),
            Wanted::Time => false,
        }
    }
}

/// What a served waiter was handed.
#[derive(Debug, Clone, PartialEq)]
pub enum Taken {
    List(Vec<Bytes>),
    ZSet(Vec<(Bytes, f64)>),
    /// A stream read's entries of one key.
    Stream(Vec<ReadEntry>),
    /// WAIT: how many replicas acknowledged.
    Count(i64),
}

/// How a wait ended, as seen by the blocked connection.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Still waiting.
    Waiting,
    /// Being served right now: the elements are on their way.
    Serving,
    Served {
        key: Bytes,
        taken: Taken,
    },
    /// Served with an error (BLMOVE whose destination is not a list), or
    /// unblocked by CLIENT UNBLOCK … ERROR.
    Failed(CmdError),
    /// An element came but could not be handed over here (the destination
    /// shard was out of reach): run the command again.
    Retry,
    /// Timed out, disconnected or unblocked; owed nothing.
    Cancelled,
}

/// One blocked client.
#[derive(Debug)]
pub struct Waiter {
    pub db: usize,
    pub keys: Vec<Bytes>,
    pub wanted: Wanted,
    outcome: Mutex<Outcome>,
    /// Where the records of the change serving it made end in the
    /// replication stream (0: none made): the safe mode's wait.
    written_at: AtomicI64,
    wake: Notify,
}

impl Waiter {
    pub fn new(db: usize, keys: Vec<Bytes>, wanted: Wanted) -> Arc<Waiter> {
        Arc::new(Waiter {
            db,
            keys,
            wanted,
            outcome: Mutex::new(Outcome::Waiting),
            written_at: AtomicI64::new(0),
            wake: Notify::new(),
        })
    }

    pub fn is_waiting(&self) -> bool {
        *self.outcome.lock() == Outcome::Waiting
    }

    /// Claims the waiter for serving; false if it stopped waiting.
    pub(super) fn claim(&self) -> bool {
        let mut outcome = self.outcome.lock();
        if *outcome != Outcome::Waiting {
            return false;
        }
        *outcome = Outcome::Serving;
        true
    }

    /// Ends a claimed wait with `end`, served by a command whose records
    /// end at `logged` in the replication stream.
    pub(super) fn finish(&self, end: Outcome, logged: Option<i64>) {
        if let Some(at) = logged
            && matches!(end, Outcome::Served { .. })
            && self.wanted.writes()
        {
            self.written_at.store(at, Ordering::Relaxed);
        }
        *self.outcome.lock() = end;
        self.wake.notify_one();
    }

    /// Where the change that served it ends in the replication stream, if
    /// serving it wrote: what its reply waits for in the safe mode. Read
    /// once `served` returned (the outcome's lock orders the two).
    pub fn written_at(&self) -> Option<i64> {
        let at = self.written_at.load(Ordering::Relaxed);
        (at > 0).then_some(at)
    }

    /// Ends a wait from outside (CLIENT UNBLOCK) with `end`; false if the
    /// waiter is no longer waiting.
    pub fn interrupt(&self, end: Outcome) -> bool {
        let mut outcome = self.outcome.lock();
        if *outcome != Outcome::Waiting {
            return false;
        }
        *outcome = end;
        drop(outcome);
        self.wake.notify_one();
        true
    }

    /// Stops waiting (timeout, disconnect). False if an element is already
    /// being handed over: then the waiter is owed it and must wait for it.
    pub fn cancel(&self) -> bool {
        let mut outcome = self.outcome.lock();
        match *outcome {
            Outcome::Waiting => {
                *outcome = Outcome::Cancelled;
                true
            }
            Outcome::Cancelled => true,
            _ => false,
        }
    }

    /// Waits until the waiter is served (or told to retry); returns how.
    pub async fn served(&self) -> Outcome {
        loop {
            let notified = self.wake.notified();
            {
                let outcome = self.outcome.lock();
                if !matches!(*outcome, Outcome::Waiting | Outcome::Serving) {
                    return outcome.clone();
                }
            }
            notified.await;
        }
    }
}
