//! The safe mode (`lock-sync-replicas`): a write is answered only once
//! enough replicas acknowledged the offset its records end at, so that a
//! lock a client was told it holds is on those replicas when one of them
//! is promoted.
//!
//! The rule is "any command or script whose changes reached the
//! replication stream", not "a lock script": lock scripts, fencing
//! counters, semaphores and fair-lock queues are all plain writes to
//! rlockd, and a rule that named them would miss the next client's.
//! Writes that change nothing (a `SET NX` that finds the lock held, a
//! lock script answering the holder's lease) are answered at once.
//!
//! The wait is the client's own: its connection holds its reply, as a
//! blocked command's, with no shard held and no other client held back.
//! It runs the rest of a pipeline meanwhile and waits once, for the last
//! write, before the batch's replies go (group commit). A blocked command
//! served by another client's write waits for that write's records,
//! which hold what it took (`Waiter::written_at`).

use std::time::Duration;

use tokio::time::Instant;

use super::Shared;
use crate::persist::backlog;

/// A write whose reply waits for its acknowledgements.
#[derive(Clone, Debug)]
pub struct PendingWrite {
    /// Where its records end in the stream.
    offset: i64,
    /// How many replicas must have read that far.
    wanted: usize,
    /// `lock-sync-timeout-ms` after it ran.
    deadline: Instant,
}

/// How a safe-mode wait ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Settled {
    Acknowledged,
    /// Too few replicas acknowledged in time: the client must take the
    /// write as not done, although the primary and some replicas may
    /// have applied it.
    TimedOut,
}

/// Forgets records appended on this thread outside a command (an expiry,
/// a disconnecting client's cleanup), so that `written` reports only the
/// command about to run.
pub fn begin_command() {
    backlog::take_appended();
}

impl Shared {
    /// After a command ran on this thread (since `begin_command`): what
    /// its reply must wait for, if the safe mode is on, this server is a
    /// primary, and the command changed something.
    pub fn written(&self, from_primary: bool) -> Option<PendingWrite> {
        let offset = backlog::take_appended()?;
        self.pending_write(offset, from_primary)
    }

    /// What the reply to a change whose records end at `offset` must wait
    /// for (a blocked command's, served by another client's write).
    pub fn pending_write(&self, offset: i64, from_primary: bool) -> Option<PendingWrite> {
        let wanted = self.guard.sync_replicas();
        if wanted == 0 || from_primary || self.replica.is_replica() {
            return None;
        }
        let timeout = self.config.read().lock_sync_timeout_ms;
        Some(PendingWrite {
            offset,
            wanted,
            deadline: Instant::now() + Duration::from_millis(timeout),
        })
    }

    /// Whether enough replicas acknowledged the write already.
    pub fn acknowledged(&self, write: &PendingWrite) -> bool {
        self.replicas.acked_at_least(write.offset) >= write.wanted
    }

    /// Waits until the write's replicas acknowledged it, or its deadline.
    /// Replicas are asked for their offsets at once (GETACK) rather than
    /// at their next once-a-second ACK. Acknowledgements are offsets, so
    /// this settles every earlier write of the stream too: a connection
    /// waits once, for its last, over a pipeline's writes.
    pub async fn settle(&self, write: &PendingWrite) -> Settled {
        let mut acks = self.replicas.watch_acks();
        if self.acknowledged(write) {
            return Settled::Acknowledged;
        }
        self.replica
            .backlog
            .command(None, &[b"REPLCONF", b"GETACK", b"*"]);
        loop {
            if self.acknowledged(write) {
                return Settled::Acknowledged;
            }
            tokio::select! {
                _ = acks.changed() => {}
                _ = tokio::time::sleep_until(write.deadline) => return Settled::TimedOut,
            }
        }
    }
}

#[cfg(test)]
impl PendingWrite {
    /// One for `offset`, wanting one replica, due a second from now.
    pub fn at(offset: i64) -> PendingWrite {
        PendingWrite {
            offset,
            wanted: 1,
            deadline: Instant::now() + Duration::from_secs(1),
        }
    }

    pub fn offset(&self) -> i64 {
        self.offset
    }
}
