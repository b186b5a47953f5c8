//! One shard: its part of every database, with the WATCHes and blocked
//! clients of its keys and its counters, all behind the shard's one lock.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;

use super::dbmap::{DbMap, Node};
use super::events::{Event, EventSink};
use super::value::{self, Entry, Value};
use super::waiter::Waiter;
use crate::expiry::alarm::ExpiryAlarm;

pub(super) type Map<K, V> = hashbrown::HashMap<K, V, foldhash::fast::RandomState>;

/// The waiters of one shard's keys, by (database, key), oldest first.
pub(super) type WaiterQueues = Map<(u32, Bytes), VecDeque<Arc<Waiter>>>;

/// A client's WATCH on keys: set when any watched key is modified.
#[derive(Debug, Default)]
pub struct WatchFlag(AtomicBool);

impl WatchFlag {
    pub fn is_dirty(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    pub(super) fn mark(&self) {
        self.0.store(true, Ordering::Release)
    }
}

/// Counters kept under the shard lock, so the hot path touches no shared
/// cache line; INFO adds them up.
#[derive(Debug, Default, Clone, Copy)]
pub struct ShardStats {
    pub hits: u64,
    pub misses: u64,
    pub expired: u64,
    pub dirty: u64,
}

/// The databases whose wheels may hold deadlines, so that an expiry pass
/// visits those alone (most servers use database 0 only). Databases from
/// 63 up share the last bit. A bit may stay set for a wheel emptied
/// since: the next pass clears it.
#[derive(Default, Clone, Copy)]
pub(super) struct TimedDbs(u64);

impl TimedDbs {
    const SHARED: usize = 63;

    pub(super) fn mark(&mut self, db: usize) {
        self.0 |= 1 << db.min(Self::SHARED);
    }

    pub(super) fn dbs(self, total: usize) -> impl Iterator<Item = usize> {
        let shared = self.0 >> Self::SHARED != 0;
        let mut own = self.0 & !(1 << Self::SHARED);
        std::iter::from_fn(move || {
            let db = (own != 0).then(|| own.trailing_zeros() as usize)?;
            own &= own - 1;
            Some(db)
        })
        .chain(if shared { Self::SHARED..total } else { 0..0 })
    }
}

pub struct Shard {
    pub(super) dbs: Vec<DbMap>,
    pub(super) timed: TimedDbs,
    /// Where this shard (number `index`) files its deadlines' times.
    alarm: Arc<ExpiryAlarm>,
    index: usize,
    pub(super) watched: Map<(u32, Bytes), Vec<Arc<WatchFlag>>>,
    pub(super) blocked: WaiterQueues,
    pub stats: ShardStats,
}

impl Shard {
    pub(super) fn new(databases: usize, now: u64, alarm: Arc<ExpiryAlarm>, index: usize) -> Self {
        Shard {
            dbs: (0..databases).map(|_| DbMap::new(now)).collect(),
            timed: TimedDbs::default(),
            alarm,
            index,
            watched: Map::default(),
            blocked: Map::default(),
            stats: ShardStats::default(),
        }
    }

    pub fn db_len(&self, db: usize) -> usize {
        self.dbs[db].len()
    }

    pub fn expires_len(&self, db: usize) -> usize {
        self.dbs[db].expiring()
    }

    /// Live keys of one database, for whole-keyspace commands.
    pub fn entries(&self, db: usize, now: u64) -> impl Iterator<Item = (&[u8], &Node)> {
        self.dbs[db]
            .iter()
            .filter(move |n| !n.is_expired(now))
            .map(|n| (n.key(), n))
    }

    /// Files `key`'s deadline in its database's wheel.
    #[inline]
    pub(super) fn schedule(&mut self, db: usize, key: &[u8], at: u64) {
        self.dbs[db].schedule(key, at);
        self.timed.mark(db);
        self.alarm.ring_by(self.index, value::gone_from(at));
        self.sweep_soon_if_stale(db);
    }

    #[inline]
    pub(super) fn remove(&mut self, db: usize, key: &[u8]) -> Option<Entry> {
        let removed = self.dbs[db].remove(key);
        self.sweep_soon_if_stale(db);
        removed
    }

    /// Released or renewed leases leave entries in the wheel until their
    /// old deadlines; once they are most of it, the next expiry pass (not
    /// the command at hand) sweeps them out and gives back their room.
    fn sweep_soon_if_stale(&mut self, db: usize) {
        if self.dbs[db].wheel_stale() {
            self.alarm.ring_by(self.index, 0);
        }
    }

    pub(super) fn touch_watchers(&mut self, db: usize, key: &[u8]) {
        if self.watched.is_empty() {
            return;
        }
        if let Some(flags) = self.watched.get(&(db as u32, Bytes::copy_from_slice(key))) {
            flags.iter().for_each(|f| f.mark());
        }
    }

    pub(super) fn touch_flushed_watchers(&mut self, db: Option<usize>) {
        for ((wdb, key), flags) in &self.watched {
            let wdb = *wdb as usize;
            let flushed = db.is_none_or(|d| d == wdb)
                && self.dbs.get(wdb).is_some_and(|m| m.get(key).is_some());
            if flushed {
                flags.iter().for_each(|f| f.mark());
            }
        }
    }

    /// Reclaims keys whose deadline has passed, and tells the alarm when
    /// the next may be due. Returns how many, and how late the latest of
    /// them was reclaimed (ms past its deadline). Each reclaimed key's DEL
    /// goes into `gone`, for replicas, when given.
    pub(super) fn expire_due(
        &mut self,
        now: u64,
        events: &dyn EventSink,
        mut gone: Option<&mut crate::persist::Batch>,
    ) -> (u64, u64) {
        let mut reclaimed = 0;
        let mut lag = 0;
        let mut next: Option<u64> = None;
        let timed = std::mem::take(&mut self.timed);
        for db in timed.dbs(self.dbs.len()) {
            for node in self.dbs[db].expire_due(now) {
                let key = node.key();
                let due = node.expire_at().map_or(now, value::gone_from);
                lag = lag.max(now.saturating_sub(due));
                self.touch_watchers(db, key);
                if matches!(node.entry().value, Value::Stream(_)) {
                    self.stream_gone(db, key);
                }
                events.changed(key, false);
                events.notify(Event::Expired, db, key);
                if let Some(gone) = gone.as_deref_mut() {
                    gone.push(Some(db), &[b"DEL", key]);
                }
                reclaimed += 1;
            }
            let due = self.dbs[db].next_due();
            if due.is_some() {
                self.timed.mark(db);
            }
            next = next.into_iter().chain(due).min();
        }
        self.alarm.set_shard(self.index, next);
        self.stats.expired += reclaimed;
        (reclaimed, lag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timed_dbs_name_each_marked_database_once() {
        let mut timed = TimedDbs::default();
        assert_eq!(timed.dbs(72).count(), 0);
        for db in [5, 0, 5, 62, 70, 64] {
            timed.mark(db);
        }
        let mut seen: Vec<usize> = timed.dbs(72).collect();
        seen.sort();
        let mut expected = vec![0, 5, 62];
        expected.extend(63..72);
        assert_eq!(seen, expected);
    }
}
