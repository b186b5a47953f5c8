//! One database as a command sees it through the shards it holds: lookups
//! (with lazy expiry, hit/miss counts and access clocks), writes,
//! deadlines, WATCH, and emptying one database or all of them.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::access::AccessClock;
use super::aof::ListOp;
use super::dbmap::{self, Node};
use super::events::Event;
use super::limits::EncodingLimits;
use super::locked::Locked;
use super::shard::{Shard, WatchFlag};
use super::store::Keyspace;
use super::value::{Entry, Value, ValueKind};
use crate::error::{CmdError, CmdResult};

/// How a write treats the key's existing time to live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ttl {
    Clear,
    Keep,
    At(u64),
}

/// Where a live key is: its shard, its hash and its place in that
/// shard's map (`Db::locate`).
#[derive(Clone, Copy)]
struct Found {
    shard: usize,
    hash: u64,
    place: dbmap::Place,
}

/// One database as seen through the shards a command holds.
pub struct Db<'l, 'a> {
    pub(super) locked: &'l mut Locked<'a>,
    pub(super) index: usize,
}

impl Db<'_, '_> {
    pub fn now(&self) -> u64 {
        self.locked.now
    }

    /// Whether a deadline a command gives a key is already past, so that
    /// it deletes the key instead (Redis's `checkAlreadyExpired`). Never
    /// while the append-only file is replayed: there the key keeps its
    /// deadline and expires as any other, so one still in its deadline's
    /// millisecond survives a restart, as in Redis.
    pub fn already_expired(&self, at: u64) -> bool {
        at <= self.locked.now && !self.locked.ks.loading.load(Ordering::Relaxed)
    }

    /// The encoding thresholds writes convert values by.
    pub fn limits(&self) -> EncodingLimits {
        self.locked.ks.limits()
    }

    /// The live entry, deleting it first if its deadline has passed: a key
    /// is never visible after its deadline, whatever the wheel has done.
    pub fn entry(&mut self, key: &[u8]) -> CmdResult<Option<&mut Entry>> {
        self.lookup(key, false, true)
    }

    /// A read lookup: counts keyspace hits and misses like Redis.
    pub fn get(&mut self, key: &[u8]) -> CmdResult<Option<&mut Value>> {
        Ok(self.lookup(key, true, true)?.map(|e| &mut e.value))
    }

    /// `get` that leaves the key's access clock alone: the commands Redis
    /// looks keys up for without using them (OBJECT, EXISTS).
    pub fn get_untouched(&mut self, key: &[u8]) -> CmdResult<Option<&mut Value>> {
        Ok(self.lookup(key, true, false)?.map(|e| &mut e.value))
    }

    /// `entry` that leaves the key's access clock alone (TYPE, TTL).
    pub fn entry_untouched(&mut self, key: &[u8]) -> CmdResult<Option<&mut Entry>> {
        self.lookup(key, false, false)
    }

    /// The access clock of `key`, if it is there (read without using it).
    pub fn access(&mut self, key: &[u8]) -> CmdResult<Option<AccessClock>> {
        let (now, db) = (self.locked.now, self.index);
        let shard = self.locked.shard_for(key)?;
        Ok(shard.dbs[db]
            .get(key)
            .filter(|n| !n.is_expired(now))
            .map(Node::clock))
    }

    /// Sets the existing `key`'s access clock (RESTORE's IDLETIME, FREQ).
    pub fn set_access(&mut self, key: &[u8], clock: AccessClock) -> CmdResult<()> {
        let db = self.index;
        self.locked.shard_for(key)?.dbs[db].set_clock(key, clock);
        Ok(())
    }

    /// `count` makes this a read lookup for the hit/miss statistics;
    /// `touch` moves the key's access clock on.
    fn lookup(&mut self, key: &[u8], count: bool, touch: bool) -> CmdResult<Option<&mut Entry>> {
        match self.locate(key, count, touch)? {
            Some(found) => self.entry_at(found),
            None => Ok(None),
        }
    }

    /// `lookup`, answering where the live key is rather than with a
    /// borrow of it: a caller that may insert when it is missing looks up
    /// once when it is there.
    fn locate(&mut self, key: &[u8], count: bool, touch: bool) -> CmdResult<Option<Found>> {
        let (now, db, ks) = (self.locked.now, self.index, self.locked.ks);
        let deadlines_at = self.locked.deadline_clock();
        self.locked.record(db, key)?;
        let found = self.locked.find(db, key)?;
        let (shard_index, hash) = (found.shard, found.hash);
        let shard = &mut self.locked.guards[found.guard].1;
        let live = match found.place {
            Some(place)
                if shard.dbs[db]
                    .node_at(place)
                    .is_some_and(|n| n.is_expired(deadlines_at)) =>
            {
                let reclaimed = reclaim_if_expired(shard, db, key, deadlines_at, ks);
                if reclaimed.is_some() {
                    self.locked.note_expired(db, key);
                }
                if reclaimed == Some(true) {
                    // Group readers blocked on the stream learn it is gone
                    // once the command is done (it may make a new one
                    // meanwhile).
                    self.signal_ready(key)?;
                }
                None
            }
            found => found,
        };
        let shard = self.locked.shard(shard_index)?;
        if count {
            if live.is_some() {
                shard.stats.hits += 1;
            } else {
                shard.stats.misses += 1;
                ks.events.notify(Event::KeyMiss, db, key);
            }
        }
        let Some(place) = live else {
            return Ok(None);
        };
        if touch {
            if ks.lfu() {
                shard.dbs[db].count_use_at(place, now);
            } else {
                shard.dbs[db].set_clock_at(place, AccessClock::fresh(now, false));
            }
        }
        Ok(Some(Found {
            shard: shard_index,
            hash,
            place,
        }))
    }

    /// The entry `locate` found, nothing inserted or removed since.
    #[inline]
    fn entry_at(&mut self, found: Found) -> CmdResult<Option<&mut Entry>> {
        let db = self.index;
        let shard = self.locked.shard(found.shard)?;
        Ok(shard.dbs[db].entry_at(found.hash, found.place))
    }

    /// The value at `key` for writing, or `make`'s, stored with no
    /// deadline, if there is none: one lookup when the key exists.
    pub fn get_mut_or_insert(
        &mut self,
        key: &[u8],
        make: impl FnOnce() -> Value,
    ) -> CmdResult<&mut Value> {
        let found = match self.locate(key, false, true)? {
            Some(found) => Some(found),
            None => {
                self.insert(key, make(), Ttl::Clear)?;
                self.locate(key, false, true)?
            }
        };
        let entry = match found {
            Some(found) => self.entry_at(found)?,
            None => None,
        };
        // Just stored, so there (an error rather than a panic all the same).
        entry
            .map(|e| &mut e.value)
            .ok_or_else(|| CmdError::other("ERR the key just stored is missing"))
    }

    /// The live value at `key`, looked at without any effect: no
    /// statistics, no lazy expiry, no journal (a run that decides how to
    /// proceed before it changes anything).
    pub fn peek(&mut self, key: &[u8]) -> CmdResult<Option<&Value>> {
        let (now, db) = (self.locked.deadline_clock(), self.index);
        let shard = self.locked.shard_for(key)?;
        let hash = shard.dbs[db].hash(key);
        // Unpacked like a key about to change: a lock script looks at the
        // key it goes on to change.
        Ok(shard.dbs[db]
            .get_mut_hashed(hash, key)
            .filter(|e| !e.is_expired(now))
            .map(|e| &e.value))
    }

    /// A read lookup of one kind of value: `None` if absent, WRONGTYPE if
    /// the key holds another kind.
    pub fn typed<T: ValueKind>(&mut self, key: &[u8]) -> CmdResult<Option<&mut T>> {
        self.get(key)?.map(kind_of).transpose()
    }

    /// `typed` for writing: no hit/miss accounting.
    pub fn typed_for_write<T: ValueKind>(&mut self, key: &[u8]) -> CmdResult<Option<&mut T>> {
        self.get_mut(key)?.map(kind_of).transpose()
    }

    /// `typed_for_write` that stores `make()` first if `key` is absent.
    pub fn typed_or_insert<T: ValueKind>(
        &mut self,
        key: &[u8],
        make: impl FnOnce() -> Value,
    ) -> CmdResult<&mut T> {
        kind_of(self.get_mut_or_insert(key, make)?)
    }

    /// A write lookup: no hit/miss accounting.
    pub fn get_mut(&mut self, key: &[u8]) -> CmdResult<Option<&mut Value>> {
        Ok(self.entry(key)?.map(|e| &mut e.value))
    }

    pub fn exists(&mut self, key: &[u8]) -> CmdResult<bool> {
        Ok(self.entry(key)?.is_some())
    }

    /// Stores `value` under `key` (copied out of the request buffer).
    /// Raises the `new` event if the key did not exist.
    pub fn insert(&mut self, key: &[u8], value: Value, ttl: Ttl) -> CmdResult<()> {
        let existing = self
            .entry(key)?
            .map(|e| (e.expire_at(), matches!(e.value, Value::Stream(_))));
        let previous = existing.and_then(|(at, _)| at);
        let replaces_stream = existing.is_some_and(|(_, stream)| stream);
        let expire_at = match ttl {
            Ttl::Clear => None,
            Ttl::At(at) => Some(at),
            Ttl::Keep => previous,
        };
        let db = self.index;
        self.locked.note_change(db, key);
        let (now, lfu) = (self.locked.now, self.locked.ks.lfu());
        let shard = self.locked.shard_for(key)?;
        // An unchanged deadline already has its wheel entry.
        if let Some(at) = expire_at.filter(|at| Some(*at) != previous) {
            shard.schedule(db, key, at);
        }
        // A waiter may be owed the new value (BLPOP, BZPOPMIN, XREAD…), and
        // group readers of a stream it replaces learn that it is gone.
        let may_serve =
            replaces_stream || matches!(value, Value::List(_) | Value::ZSet(_) | Value::Stream(_));
        // As Redis: a value stored anew is just used, but keeps the count
        // of uses an LFU policy made of the key.
        shard.dbs[db].insert(key, Entry::new(value, expire_at), |old| match old {
            Some(clock) if lfu => clock,
            _ => AccessClock::fresh(now, lfu),
        });
        if existing.is_none() {
            self.locked.ks.events.notify(Event::New, db, key);
        }
        if may_serve {
            self.signal_ready(key)?;
        }
        Ok(())
    }

    pub fn remove(&mut self, key: &[u8]) -> CmdResult<Option<Value>> {
        if self.entry(key)?.is_none() {
            return Ok(None);
        }
        let db = self.index;
        self.locked.note_change(db, key);
        let shard = self.locked.shard_for(key)?;
        let removed = shard.remove(db, key).map(|e| e.value);
        // Group readers blocked on a stream learn that it is gone.
        if matches!(removed, Some(Value::Stream(_))) {
            self.signal_ready(key)?;
        }
        Ok(removed)
    }

    /// Removes a key whose removal the caller records otherwise (the pops
    /// that emptied a list).
    pub(super) fn remove_unnoted(&mut self, key: &[u8]) -> CmdResult<()> {
        let db = self.index;
        self.locked.shard_for(key)?.remove(db, key);
        Ok(())
    }

    /// Sets or clears the deadline of an existing key; false if there is none.
    pub fn set_expire(&mut self, key: &[u8], at: Option<u64>) -> CmdResult<bool> {
        let Some(entry) = self.entry(key)? else {
            return Ok(false);
        };
        let previous = entry.set_expire_at(at);
        let db = self.index;
        if at.is_some() {
            // No member changed: a collection's record is its deadline
            // alone (a lock's lease renewed is one PEXPIREAT, as Redis
            // sends it). Cleared, the deadline leaves nothing such a
            // record could carry: the key goes whole.
            self.locked.note_members(db, key, Vec::new());
        } else {
            self.locked.note_change(db, key);
        }
        let shard = self.locked.shard_for(key)?;
        shard.dbs[db].deadline_changed(previous.is_some(), at.is_some());
        if let Some(at) = at.filter(|at| Some(*at) != previous) {
            shard.schedule(db, key, at);
        }
        Ok(true)
    }

    /// Records that `key` changed by `event`: wakes WATCHers, counts the
    /// change and raises the keyspace event.
    pub fn modified(&mut self, key: &[u8], event: Event) -> CmdResult<()> {
        self.touched(key)?;
        self.notify(key, event);
        Ok(())
    }

    /// `modified` for the new deadline `set_expire` gave `key`, which
    /// noted it already as the change of the deadline alone.
    pub fn deadline_modified(&mut self, key: &[u8]) -> CmdResult<()> {
        self.counted(key)?;
        self.notify(key, Event::Expire);
        Ok(())
    }

    /// `modified` without a keyspace event: a change Redis makes silently
    /// (PFCOUNT storing the count it computed).
    pub fn touched(&mut self, key: &[u8]) -> CmdResult<()> {
        self.locked.note_change(self.index, key);
        self.counted(key)
    }

    /// `modified` for a change to `members` only of a collection that was
    /// at `key` before the command (SPOP, ZPOPMIN, SMOVE's source): the
    /// append-only file records just their states.
    pub fn modified_members(
        &mut self,
        key: &[u8],
        members: impl IntoIterator<Item = Bytes>,
        event: Event,
    ) -> CmdResult<()> {
        if self.locked.records_changes() {
            let members = members.into_iter().collect();
            self.locked.note_members(self.index, key, members);
        }
        self.counted(key)?;
        self.notify(key, event);
        Ok(())
    }

    /// `modified` for a push or pop (`op`, asked only while the AOF is
    /// on) at one end of a list that was at `key` before the command: the
    /// append-only file may record it as itself.
    pub(crate) fn modified_list(
        &mut self,
        key: &[u8],
        op: impl FnOnce() -> ListOp,
        event: Event,
    ) -> CmdResult<()> {
        self.locked.note_list(self.index, key, op);
        self.counted(key)?;
        self.notify(key, event);
        Ok(())
    }

    /// What a change does besides being recorded: wakes WATCHers, counts
    /// it and tells client-side caching.
    fn counted(&mut self, key: &[u8]) -> CmdResult<()> {
        let db = self.index;
        let shard = self.locked.shard_for(key)?;
        shard.stats.dirty += 1;
        shard.touch_watchers(db, key);
        self.locked.ks.events.changed(key, true);
        Ok(())
    }

    /// Counts a change Redis does not show WATCHers (a consumer group's
    /// bookkeeping).
    pub fn dirtied(&mut self, key: &[u8]) -> CmdResult<()> {
        self.locked.note_change(self.index, key);
        self.locked.shard_for(key)?.stats.dirty += 1;
        Ok(())
    }

    /// Raises a keyspace event beyond the one `modified` raised (SET with
    /// a time to live also raises `expire`).
    pub fn notify(&self, key: &[u8], event: Event) {
        self.locked.ks.events.notify(event, self.index, key);
    }

    /// Empties this database in every shard (the plan must hold them all).
    pub fn flush(&mut self) -> u64 {
        let db = self.index;
        self.locked.note_whole(Some(db), b"FLUSHDB");
        self.locked.record_flush(Some(db));
        let now = self.locked.now;
        let waited = self.locked.waited_streams(Some(db));
        let mut removed = 0;
        for shard in self.locked.shards() {
            shard.touch_flushed_watchers(Some(db));
            removed += shard.dbs[db].len() as u64;
            shard.dbs[db].clear(now);
            shard.stats.dirty += 1;
        }
        self.locked.ks.events.flushed();
        self.locked.ready.extend(waited);
        removed
    }

    /// Registers a WATCH of `key` by `flag`.
    pub fn watch(&mut self, key: &[u8], flag: &Arc<WatchFlag>) -> CmdResult<()> {
        let db = self.index as u32;
        let shard = self.locked.shard_for(key)?;
        shard
            .watched
            .entry((db, Bytes::copy_from_slice(key)))
            .or_default()
            .push(flag.clone());
        Ok(())
    }

    pub fn unwatch(&mut self, key: &[u8], flag: &Arc<WatchFlag>) -> CmdResult<()> {
        let db = self.index as u32;
        let shard = self.locked.shard_for(key)?;
        let k = (db, Bytes::copy_from_slice(key));
        if let Some(flags) = shard.watched.get_mut(&k) {
            flags.retain(|f| !Arc::ptr_eq(f, flag));
            if flags.is_empty() {
                shard.watched.remove(&k);
            }
        }
        Ok(())
    }
}

/// Deletes `key` if its deadline has passed (unless expiry is held: then
/// it is only not found); whether it did, and if so whether it was a
/// stream some client waits on.
fn reclaim_if_expired(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    now: u64,
    ks: &Keyspace,
) -> Option<bool> {
    if ks.expiry_held() || !shard.dbs[db].get(key).is_some_and(|e| e.is_expired(now)) {
        return None;
    }
    let removed = shard.remove(db, key);
    shard.stats.expired += 1;
    shard.touch_watchers(db, key);
    ks.events.changed(key, false);
    ks.events.notify(Event::Expired, db, key);
    Some(matches!(
        removed,
        Some(Entry {
            value: Value::Stream(_),
            ..
        })
    ))
}

/// FLUSHALL: every database of every shard (the plan must hold them all).
/// `db` is the caller's database, which the record selects as Redis's
/// stream does (None: none of its own, as when a load empties it).
pub fn flush_all(locked: &mut Locked<'_>, db: Option<usize>) -> u64 {
    locked.note_whole(db, b"FLUSHALL");
    locked.record_flush(None);
    let waited = locked.waited_streams(None);
    let now = locked.now;
    let mut removed = 0;
    for shard in locked.shards() {
        shard.touch_flushed_watchers(None);
        for db in &mut shard.dbs {
            removed += db.len() as u64;
            db.clear(now);
        }
        shard.stats.dirty += 1;
    }
    locked.ks.events.flushed();
    locked.ready.extend(waited);
    removed
}

/// What needs a `Db` of the shards held: one database's view of them, and
/// SWAPDB, which serves the clients waiting on keys it brought.
impl<'a> Locked<'a> {
    /// SWAPDB: databases `a` and `b` trade contents in every shard (the
    /// plan must hold them all). A WATCH on a key that exists on either
    /// side is broken, and clients waiting on a key that now holds
    /// elements are served, as Redis does.
    pub fn swap_dbs(&mut self, a: usize, b: usize) -> CmdResult<()> {
        if a == b {
            return Ok(());
        }
        self.note_whole(Some(a), b"FLUSHDB");
        self.note_whole(Some(b), b"FLUSHDB");
        if self.journal.is_some() {
            // Each key's prior state on both sides, so a rolled-back
            // script puts every key back where it was.
            let keys: Vec<Bytes> = self
                .shards()
                .flat_map(|s| {
                    [a, b]
                        .into_iter()
                        .flat_map(|db| s.dbs[db].iter().map(|n| Bytes::copy_from_slice(n.key())))
                        .collect::<Vec<_>>()
                })
                .collect();
            for key in &keys {
                self.record(a, key)?;
                self.record(b, key)?;
            }
        }
        let mut waited = Vec::new();
        for shard in self.shards() {
            shard.dbs.swap(a, b);
            shard.timed.mark(a);
            shard.timed.mark(b);
            let dbs = &shard.dbs;
            for ((wdb, key), flags) in &shard.watched {
                let wdb = *wdb as usize;
                if (wdb == a || wdb == b)
                    && (dbs[a].get(key).is_some() || dbs[b].get(key).is_some())
                {
                    flags.iter().for_each(|f| f.mark());
                }
            }
            waited.extend(
                shard
                    .blocked
                    .keys()
                    .filter(|(db, _)| *db as usize == a || *db as usize == b)
                    .cloned(),
            );
        }
        if let Some(shard) = self.shards().next() {
            shard.stats.dirty += 1;
        }
        self.note_swapped(&[a, b]);
        for (db, key) in waited {
            self.db(db as usize).signal_ready(&key)?;
        }
        Ok(())
    }

    /// `repl-diskless-load swapdb`'s end: every database takes what
    /// `staged` loaded (the plan must hold every shard), and `staged` the
    /// old contents, to be dropped once the shards are let go. As SWAPDB
    /// does, WATCHes on keys of either side break and clients waiting on
    /// keys now there are served; tracking clients forget every key.
    pub(crate) fn replace_all(&mut self, staged: &Keyspace) -> CmdResult<()> {
        self.note_whole(None, b"FLUSHALL");
        let now = self.now;
        let mut waited = Vec::new();
        for (idx, shard) in &mut self.guards {
            shard.touch_flushed_watchers(None);
            std::mem::swap(&mut shard.dbs, &mut staged.wait_shard(*idx).dbs);
            shard.touch_flushed_watchers(None);
            for db in 0..shard.dbs.len() {
                shard.timed.mark(db);
            }
            // A pass looks at the shard soon and files its next deadline.
            self.ks.expiry_alarm().ring_by(*idx, now);
            waited.extend(shard.blocked.keys().cloned());
        }
        if let Some(shard) = self.shards().next() {
            shard.stats.dirty += 1;
        }
        let all: Vec<usize> = (0..self.ks.databases()).collect();
        self.note_swapped(&all);
        self.ks.events.flushed();
        for (db, key) in waited {
            self.db(db as usize).signal_ready(&key)?;
        }
        Ok(())
    }

    pub fn db(&mut self, index: usize) -> Db<'_, 'a> {
        Db {
            locked: self,
            index,
        }
    }
}

fn kind_of<T: ValueKind>(value: &mut Value) -> CmdResult<&mut T> {
    T::of(value).ok_or(CmdError::WrongType)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SystemClock;
    use crate::keyspace::LockPlan;

    #[test]
    fn expired_keys_are_invisible_before_the_wheel_runs() {
        let ks = Keyspace::new(16, Arc::new(SystemClock));
        let mut locked = ks.lock(&LockPlan::for_keys([&b"k"[..]])).unwrap();
        let past = locked.now() - 1;
        let mut db = locked.db(0);
        db.insert(b"k", Value::string(Bytes::from_static(b"v")), Ttl::At(past))
            .unwrap();
        assert!(db.get(b"k").unwrap().is_none());
    }

    #[test]
    fn get_mut_or_insert_hands_out_what_is_there_or_makes_it() {
        let clock = Arc::new(crate::clock::ManualClock::default());
        let ks = Keyspace::new(1, clock.clone());
        let keys = [&b"new"[..], b"string", b"expired"];
        let mut locked = ks.lock(&LockPlan::for_keys(keys)).unwrap();
        let soon = locked.now() + 5;
        let mut db = locked.db(0);
        let string = || Value::string(Bytes::from_static(b"v"));
        db.insert(b"string", string(), Ttl::Clear).unwrap();
        db.insert(b"expired", string(), Ttl::At(soon)).unwrap();
        drop(locked);
        clock.advance(std::time::Duration::from_millis(10));
        let mut locked = ks.lock(&LockPlan::for_keys(keys)).unwrap();
        let mut db = locked.db(0);
        for key in [&b"new"[..], b"expired"] {
            let made = db.get_mut_or_insert(key, Value::new_hash).unwrap();
            assert!(matches!(made, Value::Hash(_)), "{key:?} made anew");
            let entry = db.entry(key).unwrap().expect("stored");
            assert_eq!(entry.expire_at(), None, "{key:?} has no deadline");
        }
        let kept = db.get_mut_or_insert(b"string", Value::new_hash).unwrap();
        assert!(
            matches!(kept, Value::Str(..)),
            "a present key is left as it is"
        );
    }
}
