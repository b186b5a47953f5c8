//! The shards one command holds and the time it runs at: taken in
//! ascending order, and below the highest held only tried, so that no two
//! commands wait on each other; the journal that undoes a script's run;
//! SWAPDB, which must see every shard.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use parking_lot::MutexGuard;

use super::access::AccessClock;
use super::aof;
use super::dbmap::Place;
use super::journal::{Before, Journal, Prior, Touch};
use super::plan::LockPlan;
use super::resolved::ResolvedKey;
use super::shard::Shard;
use super::slot::{SHARDS, key_shard, key_slot};
use super::store::Keyspace;
use super::value::{Entry, Value};
use crate::error::{CmdError, CmdResult};
use crate::util::parse_i64;

/// Where `Locked::find` found a key: its shard, the position of that
/// shard's guard, its hash in the database's map, and its place there.
pub(super) struct Lookup {
    pub(super) guard: usize,
    pub(super) shard: usize,
    pub(super) hash: u64,
    pub(super) place: Option<Place>,
}

/// The shards one command holds, and the time it runs at.
pub struct Locked<'a> {
    pub(super) ks: &'a Keyspace,
    pub(super) guards: Vec<(usize, MutexGuard<'a, Shard>)>,
    pub(super) now: u64,
    pub(super) journal: Option<Journal>,
    /// Keys that gained elements while clients wait on them: served when
    /// the shards are let go (see `blocked`).
    pub(super) ready: Vec<(usize, Bytes)>,
    /// What this command changed, for the append-only file (only while it
    /// is on).
    pub(super) changes: Option<aof::Changes>,
    /// Keys past their deadline are still found: the primary's commands
    /// on a replica, which keeps such keys for the primary's DEL (as
    /// Redis's master client sees them), and the append-only file's
    /// replay, which expires nothing (as Redis's loading): a record made
    /// while its key was live must find it, however far the clock went
    /// since (a renewal's PEXPIREAT, a member record's HSET).
    pub(super) past_deadlines_found: bool,
    /// The key of the script call in progress, found once for the call.
    pub(super) resolved: ResolvedKey,
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let served = if self.ready.is_empty() {
            Vec::new()
        } else {
            self.serve_ready()
        };
        // Before the shards are let go: records about the same keys reach
        // the file in the order the changes happened.
        let logged = if self.changes.is_some() {
            self.log_changes()
        } else {
            None
        };
        // Waiters hear of what they were handed only once its records are
        // in the stream: the safe mode holds their replies until then.
        for (waiter, outcome) in served {
            waiter.finish(outcome, logged);
        }
    }
}

impl Keyspace {
    /// Takes the plan's shards in ascending order. Fails with BUSY if one
    /// of them is held by a script running past the busy threshold.
    pub fn lock(&self, plan: &LockPlan) -> CmdResult<Locked<'_>> {
        let mut locked = Locked {
            ks: self,
            guards: Vec::new(),
            now: self.clock.now_ms(),
            journal: None,
            ready: Vec::new(),
            changes: self.noting().then(aof::Changes::default),
            past_deadlines_found: self.loading.load(Ordering::Relaxed),
            resolved: ResolvedKey::default(),
        };
        locked.acquire(plan)?;
        Ok(locked)
    }
}

impl<'a> Locked<'a> {
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Lookups find keys past their deadline (see `past_deadlines_found`).
    pub fn find_past_deadlines(&mut self) {
        self.past_deadlines_found = true;
    }

    /// The time lookups judge deadlines by: never past any for the
    /// primary's commands on a replica, nor during the file's replay.
    pub(super) fn deadline_clock(&self) -> u64 {
        if self.past_deadlines_found {
            0
        } else {
            self.now
        }
    }

    pub fn holds_all(&self) -> bool {
        self.guards.len() == SHARDS
    }

    /// Starts recording prior states: a script that must start over, or
    /// that is killed after it wrote, is rolled back to them.
    pub fn begin_journal(&mut self) {
        self.journal = Some(Journal::default());
    }

    /// Has the journal watch counters too, for `made_a_grant`.
    pub fn watch_counters(&mut self) {
        if let Some(journal) = &mut self.journal {
            journal.watch_counters();
        }
    }

    pub fn end_journal(&mut self) {
        self.journal = None;
    }

    /// Tells the journal whether the next command may write (`changes`):
    /// only then do the keys it looks up have their prior states kept.
    pub fn journal_next(&mut self, changes: bool) {
        if let Some(journal) = &mut self.journal {
            journal.recording = changes;
        }
    }

    /// Whether what the journal saw was a new grant (the promotion
    /// grace's test): a key it saw absent is there now (a lock, a lease,
    /// a permit's entry), or an integer it saw in a string is now a
    /// smaller one (permits taken from a counter, which has no lease to
    /// wait out). Raising a counter (a release) is no grant.
    pub fn made_a_grant(&mut self) -> CmdResult<bool> {
        let Some(journal) = &self.journal else {
            return Ok(false);
        };
        let (absent, (lowered, counters)) = (journal.absent_keys(), journal.counters());
        if lowered {
            return Ok(true);
        }
        let now = self.now;
        for (db, key) in absent {
            let shard = self.shard(key_shard(&key))?;
            if shard.dbs[db].get(&key).is_some_and(|n| !n.is_expired(now)) {
                return Ok(true);
            }
        }
        for (db, key, before) in counters {
            if self.integer_at(db, &key)?.is_some_and(|now| now < before) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Puts back every key the journal saw, newest change first. Clients
    /// waiting for the keys it pushed to are not served.
    pub fn rollback(&mut self) -> CmdResult<()> {
        self.ready.clear();
        self.forget_changes();
        let Some(journal) = self.journal.take() else {
            return Ok(());
        };
        let limits = self.ks.limits();
        let fresh = AccessClock::fresh(self.now, self.ks.lfu());
        let (arena, undo_order) = journal.undo_order();
        for (db, key, prior) in undo_order {
            let key = arena.get(key);
            let shard = self.shard(key_shard(key))?;
            match prior {
                Prior::Whole(Some(entry)) => {
                    // FLUSHALL dropped the wheel; a second entry for the
                    // same deadline is harmless.
                    if let Some(at) = entry.expire_at() {
                        shard.schedule(db, key, at);
                    }
                    shard.dbs[db].insert(key, entry, |old| old.unwrap_or(fresh));
                }
                Prior::Whole(None) => {
                    shard.remove(db, key);
                }
                Prior::Part { expire_at, undo } => {
                    let hash = shard.dbs[db].hash(key);
                    if shard.dbs[db].get_mut_hashed(hash, key).is_none() {
                        // The change emptied the collection, which took
                        // the key with it.
                        if let Some(at) = expire_at {
                            shard.schedule(db, key, at);
                        }
                        shard.dbs[db].insert(
                            key,
                            Entry::new(undo.empty_value(), expire_at),
                            |_| fresh,
                        );
                    }
                    if let Some(entry) = shard.dbs[db].get_mut_hashed(hash, key) {
                        undo.apply(&mut entry.value, &limits, &arena);
                    }
                }
            }
        }
        Ok(())
    }

    /// Records every key of database `db` (all of them with `None`) in the
    /// shards held, before a flush empties them.
    pub(super) fn record_flush(&mut self, db: Option<usize>) {
        let Some(journal) = self.journal.as_mut().filter(|j| j.recording) else {
            return;
        };
        for (_, shard) in &self.guards {
            for (index, map) in shard.dbs.iter().enumerate() {
                if db.is_some_and(|db| db != index) {
                    continue;
                }
                for node in map.iter() {
                    let key = node.key();
                    if !journal.has_whole(index, key) {
                        let entry = node.entry().into_owned();
                        journal.push(index, key, Prior::Whole(Some(entry)));
                    }
                }
            }
        }
    }

    /// The integer a string at `key` holds, if it does (a counter).
    fn integer_at(&mut self, db: usize, key: &[u8]) -> CmdResult<Option<i64>> {
        let now = self.now;
        Ok(self.shard(key_shard(key))?.dbs[db]
            .get(key)
            .filter(|n| !n.is_expired(now))
            .and_then(|n| match &n.entry().value {
                Value::Str(s, _) => parse_i64(s),
                _ => None,
            }))
    }

    pub(super) fn record(&mut self, db: usize, key: &[u8]) -> CmdResult<()> {
        let Some(journal) = self.journal.as_ref().filter(|j| j.recording) else {
            return Ok(());
        };
        if journal.watches_counters()
            && let Some(value) = self.integer_at(db, key)?
        {
            let journal = self.journal.as_mut().expect("checked above");
            journal.saw_counter(db, key, value);
        }
        let journal = self.journal.as_ref().expect("checked above");
        if journal.has_whole(db, key) {
            return Ok(());
        }
        let found = self.find(db, key)?;
        let prior = found
            .place
            .and_then(|p| self.guards[found.guard].1.dbs[db].node_at(p))
            .map(|n| n.entry().into_owned());
        let journal = self.journal.as_mut().expect("checked above");
        journal.push(db, key, Prior::Whole(prior));
        Ok(())
    }

    /// Keeps what undoes the next command, which changes only `touch` of
    /// `key` in database `db`, and nothing else for it: its own lookups
    /// record nothing. A compact value is copied whole, as an undeclared
    /// write's keys are.
    pub fn journal_touch(&mut self, db: usize, key: &[u8], touch: &Touch) -> CmdResult<()> {
        let Some(journal) = &self.journal else {
            return Ok(());
        };
        if journal.has_whole(db, key) {
            self.journal_next(false);
            return Ok(());
        }
        let now = self.now;
        // The command's own lookup finds the key where this one did.
        let found = self.find(db, key)?;
        let live = found
            .place
            .and_then(|p| self.guards[found.guard].1.dbs[db].node_at(p))
            .filter(|n| !n.is_expired(now));
        let journal = self.journal.as_mut().expect("checked above");
        match live {
            None => journal.push(db, key, Prior::Whole(None)),
            Some(node) => {
                let entry = node.entry();
                // A compact value is small: copied whole, here rather
                // than by the command's lookup, which would find it again.
                if let Before::Copy =
                    journal.keep_before(db, key, node.expire_at(), &entry.value, touch)
                {
                    journal.push(db, key, Prior::Whole(Some(entry.into_owned())));
                }
            }
        }
        journal.recording = false;
        Ok(())
    }

    /// Resolves `key`, the one key of the script call about to run, for
    /// the call's lookups (see `keyspace/resolved.rs`); answers its shard.
    pub fn resolve(&mut self, key: &[u8]) -> usize {
        self.resolved.set(key)
    }

    /// The call is done: its key is no longer resolved.
    pub fn forget_resolved(&mut self) {
        self.resolved.clear();
    }

    /// The shard of `key`, from the resolved key if it is that one.
    #[inline]
    pub(super) fn shard_of(&self, key: &[u8]) -> usize {
        self.resolved.shard_of(key)
    }

    /// Finds `key` in database `db` (live or not). The resolved key is
    /// found once a call.
    // Inlined into the lookups, as the probe it wraps used to be: called,
    // it cost a lock pair 2% more instructions.
    #[inline(always)]
    pub(super) fn find(&mut self, db: usize, key: &[u8]) -> CmdResult<Lookup> {
        let shard = self.shard_of(key);
        let guard = self.take_shard(shard)?;
        let map = &self.guards[guard].1.dbs[db];
        let (hash, known) = self.resolved.spot(db, key, map);
        let place = known.or_else(|| map.find_hashed(hash, key));
        self.resolved.found(db, key, hash, place);
        Ok(Lookup {
            guard,
            shard,
            hash,
            place,
        })
    }

    /// The indices of the shards held.
    pub fn held(&self) -> Vec<usize> {
        self.guards.iter().map(|(i, _)| *i).collect()
    }

    fn acquire(&mut self, plan: &LockPlan) -> CmdResult<()> {
        match plan {
            LockPlan::Nothing => Ok(()),
            LockPlan::Shards(ids) => self.acquire_each(ids.iter().copied()),
            LockPlan::All => self.acquire_each(0..SHARDS),
        }
    }

    fn acquire_each(&mut self, ids: impl Iterator<Item = usize>) -> CmdResult<()> {
        for idx in ids {
            let guard = self.ks.lock_shard(idx)?;
            self.guards.push((idx, guard));
        }
        Ok(())
    }

    /// Lets every shard go and takes the plan's instead (a script that
    /// found it needs more shards starts over with them).
    pub fn relock(&mut self, plan: &LockPlan) -> CmdResult<()> {
        // What the first attempt pushed was rolled back.
        self.ready.clear();
        self.forget_changes();
        self.guards.clear();
        self.now = self.ks.clock.now_ms();
        self.acquire(plan)
    }

    /// Takes these shards now, before a command writes anything,
    /// so it never stops halfway for want of one.
    /// Any order will do: `shard` never waits out of ascending order.
    pub fn ensure(&mut self, shards: &[usize]) -> CmdResult<()> {
        for &idx in shards {
            self.shard(idx)?;
        }
        Ok(())
    }

    /// The shard, taking its lock now if the plan did not. Blocking is only
    /// safe above every shard already held (ascending order); below that
    /// the lock is only tried, never waited for.
    pub(super) fn shard(&mut self, idx: usize) -> CmdResult<&mut Shard> {
        let pos = self.take_shard(idx)?;
        Ok(&mut self.guards[pos].1)
    }

    /// The shard of `key`, taken as `shard` takes it.
    #[inline]
    pub(super) fn shard_for(&mut self, key: &[u8]) -> CmdResult<&mut Shard> {
        self.shard(self.shard_of(key))
    }

    /// Where the shard's guard is in `guards`, taking it as `shard` does.
    fn take_shard(&mut self, idx: usize) -> CmdResult<usize> {
        match self.guards.binary_search_by_key(&idx, |(i, _)| *i) {
            Ok(pos) => Ok(pos),
            Err(pos) => {
                let mutex = &self.ks.shards[idx];
                let guard = if pos == self.guards.len() {
                    self.ks.lock_shard(idx)?
                } else {
                    mutex.try_lock().ok_or(CmdError::ShardBusy)?
                };
                self.guards.insert(pos, (idx, guard));
                Ok(pos)
            }
        }
    }

    /// Runs `read` over the live keys of database `db` in one hash slot,
    /// from every shard held (a slot's keys are spread over all of them).
    pub fn in_slot<T>(
        &mut self,
        db: usize,
        slot: u16,
        read: impl FnOnce(&mut dyn Iterator<Item = &[u8]>) -> T,
    ) -> T {
        let now = self.now;
        let mut keys = self
            .guards
            .iter()
            .flat_map(|(_, shard)| shard.entries(db, now))
            .map(|(key, _)| key)
            .filter(|key| key_slot(key) == slot);
        read(&mut keys)
    }

    pub fn shards(&mut self) -> impl Iterator<Item = &mut Shard> {
        self.guards.iter_mut().map(|(_, g)| &mut **g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SystemClock;
    use std::sync::Arc;

    #[test]
    fn out_of_order_access_never_blocks() {
        let ks = Keyspace::new(1, Arc::new(SystemClock));
        let (low, high) = (b"a", b"b");
        let (lo, hi) = if key_shard(low) < key_shard(high) {
            (low, high)
        } else {
            (high, low)
        };
        let _other = ks.lock(&LockPlan::for_keys([&lo[..]])).unwrap();
        let mut mine = ks.lock(&LockPlan::for_keys([&hi[..]])).unwrap();
        assert_eq!(mine.db(0).get(lo).unwrap_err(), CmdError::ShardBusy);
    }
}
