//! When the expiry driver next has work. Shards note here each deadline
//! they file; a pass sets each shard's alarm to the earliest moment one of
//! its wheels may fire, and the driver's to the earliest of those. The
//! driver sleeps until then instead of looking at every shard on a fixed
//! tick, is woken when a deadline earlier than the one it sleeps towards
//! is filed, and then looks only at the shards that are due.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Notify;

/// No deadline filed.
const NEVER: u64 = u64::MAX;

pub struct ExpiryAlarm {
    /// The first millisecond (keyspace clock) a pass may find a key gone.
    at: AtomicU64,
    /// The same for each shard. Written only by the holder of the shard's
    /// lock; read without it.
    shards: Box<[AtomicU64]>,
    earlier: Notify,
}

impl ExpiryAlarm {
    pub fn new(shards: usize) -> Self {
        ExpiryAlarm {
            at: AtomicU64::new(NEVER),
            shards: (0..shards).map(|_| AtomicU64::new(NEVER)).collect(),
            earlier: Notify::new(),
        }
    }

    /// A deadline was filed in `shard` (whose lock the caller holds): a
    /// pass may find work there from `due` on. Most deadlines filed are
    /// later than the alarm (leases renewed ahead of time): loads only.
    pub fn ring_by(&self, shard: usize, due: u64) {
        let own = &self.shards[shard];
        if due < own.load(Ordering::Relaxed) {
            own.store(due, Ordering::Relaxed);
        }
        if due < self.at.load(Ordering::Relaxed) {
            self.at.fetch_min(due, Ordering::AcqRel);
            self.earlier.notify_one();
        }
    }

    /// Whether a pass at `now` has anything to do in `shard`.
    pub fn shard_due(&self, shard: usize, now: u64) -> bool {
        self.shards[shard].load(Ordering::Relaxed) <= now
    }

    /// A pass found `shard` (whose lock it holds) next due at `due`, if
    /// ever; the driver reads the alarm when the pass ends.
    pub fn set_shard(&self, shard: usize, due: Option<u64>) {
        self.shards[shard].store(due.unwrap_or(NEVER), Ordering::Relaxed);
    }

    /// Starts a pass: what is filed while it looks sets the alarm again.
    pub fn clear(&self) {
        self.at.store(NEVER, Ordering::Release);
    }

    /// Ends a pass: the alarm is the earliest shard's.
    pub fn settle(&self) {
        let earliest = self
            .shards
            .iter()
            .map(|s| s.load(Ordering::Relaxed))
            .min()
            .unwrap_or(NEVER);
        self.at.fetch_min(earliest, Ordering::AcqRel);
    }

    /// Has the driver read the alarm again.
    pub fn wake_driver(&self) {
        self.earlier.notify_one();
    }

    /// The first millisecond a pass may have work in, if any.
    pub fn due(&self) -> Option<u64> {
        Some(self.at.load(Ordering::Acquire)).filter(|&at| at != NEVER)
    }

    /// Returns once a deadline earlier than the alarm was filed, or a pass
    /// the driver did not run changed it (at once if either happened since
    /// the last call).
    pub async fn rung_earlier(&self) {
        self.earlier.notified().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::Duration;

    async fn woken(alarm: &ExpiryAlarm) -> bool {
        tokio::time::timeout(Duration::from_millis(50), alarm.rung_earlier())
            .await
            .is_ok()
    }

    #[tokio::test]
    async fn keeps_the_earliest_and_wakes_for_an_earlier_one() {
        let alarm = ExpiryAlarm::new(2);
        assert_eq!(alarm.due(), None);
        alarm.ring_by(0, 500);
        assert!(woken(&alarm).await, "the first deadline wakes the driver");
        alarm.ring_by(1, 900);
        assert_eq!(alarm.due(), Some(500));
        assert!(!woken(&alarm).await, "a later one does not");
        alarm.ring_by(1, 100);
        assert_eq!(alarm.due(), Some(100));
        assert!(woken(&alarm).await);
        assert!(alarm.shard_due(0, 500) && !alarm.shard_due(0, 499));
        assert!(alarm.shard_due(1, 100));
        // A pass over shard 1 finds its next deadline at 700.
        alarm.clear();
        alarm.set_shard(1, Some(700));
        alarm.settle();
        assert_eq!(alarm.due(), Some(500), "shard 0's, untouched");
        alarm.clear();
        alarm.set_shard(0, None);
        alarm.settle();
        assert_eq!(alarm.due(), Some(700));
    }
}
