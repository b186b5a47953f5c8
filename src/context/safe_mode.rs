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

use std::time::Duration;

use super::Shared;
use crate::persist::backlog;

/// A write whose reply waits for its acknowledgements.
pub struct PendingWrite {
    /// Where its records end in the stream.
    offset: i64,
    /// How many replicas must have read that far.
    wanted: usize,
    timeout: Duration,
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
        let wanted = self.guard.sync_replicas();
        if wanted == 0 || from_primary || self.replica.is_replica() {
            return None;
        }
        let timeout = self.config.read().lock_sync_timeout_ms;
        Some(PendingWrite {
            offset,
            wanted,
            timeout: Duration::from_millis(timeout),
        })
    }

    /// Waits until the write's replicas acknowledged it, or its timeout.
    /// Replicas are asked for their offsets at once (GETACK) rather than
    /// at their next once-a-second ACK.
    pub async fn settle(&self, write: PendingWrite) -> Settled {
        let deadline = tokio::time::Instant::now() + write.timeout;
        let mut acks = self.replicas.watch_acks();
        if self.replicas.acked_at_least(write.offset) >= write.wanted {
            return Settled::Acknowledged;
        }
        self.replica
            .backlog
            .command(None, &[b"REPLCONF", b"GETACK", b"*"]);
        loop {
            if self.replicas.acked_at_least(write.offset) >= write.wanted {
                return Settled::Acknowledged;
            }
            tokio::select! {
                _ = acks.changed() => {}
                _ = tokio::time::sleep_until(deadline) => return Settled::TimedOut,
            }
        }
    }
}
