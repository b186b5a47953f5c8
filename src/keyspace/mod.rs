//! The keyspace: every database, split into shards by Redis Cluster hash
//! slot so that all keys sharing a `{hash tag}` (all keys of one lock) live
//! in one shard. A command locks only the shards its keys map to; commands
//! over several shards lock them in ascending order, which rules out
//! deadlock between them.

pub mod access;
mod aof;
mod blocked;
mod compact;
mod dbmap;
pub mod dump;
pub mod events;
mod hash;
mod journal;
mod limits;
mod memory;
mod set;
mod slot;
mod stream;
mod value;
mod zset;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bytes::Bytes;
use parking_lot::{Mutex, MutexGuard};

use crate::clock::Clock;
use crate::error::{CmdError, CmdResult};
use crate::expiry::alarm::ExpiryAlarm;
use access::AccessClock;
use dbmap::DbMap;
pub use dbmap::Node;
pub use events::Event;
use journal::{Before, Journal, Prior, Undo};

pub use blocked::{End, Outcome, StreamWait, Taken, Waiter, Wanted, ZEnd};
pub use journal::Touch;
pub use limits::EncodingLimits;
pub use memory::usage as memory_usage;
pub use set::SetValue;
pub use stream::{ENTRIES_READ_UNKNOWN, Group, GroupRead, ReadEntry, Stream, StreamId, Trim};
pub use value::{Entry, HashValue, StrEncoding, StrForm, Value};
pub use zset::SortedSet;

/// More shards than cores by a wide margin, so independent keys rarely
/// share a lock.
pub const SHARDS: usize = 128;

pub const HASH_SLOTS: u16 = 16384;

type Map<K, V> = hashbrown::HashMap<K, V, foldhash::fast::RandomState>;

pub use slot::key_slot;

pub fn key_shard(key: &[u8]) -> usize {
    slot_shard(key_slot(key))
}

pub fn slot_shard(slot: u16) -> usize {
    slot as usize % SHARDS
}

/// A client's WATCH on keys: set when any watched key is modified.
#[derive(Debug, Default)]
pub struct WatchFlag(AtomicBool);

impl WatchFlag {
    pub fn is_dirty(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    fn mark(&self) {
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
struct TimedDbs(u64);

impl TimedDbs {
    const SHARED: usize = 63;

    fn mark(&mut self, db: usize) {
        self.0 |= 1 << db.min(Self::SHARED);
    }

    fn dbs(self, total: usize) -> impl Iterator<Item = usize> {
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
    dbs: Vec<DbMap>,
    timed: TimedDbs,
    /// Where this shard (number `index`) files its deadlines' times.
    alarm: Arc<ExpiryAlarm>,
    index: usize,
    watched: Map<(u32, Bytes), Vec<Arc<WatchFlag>>>,
    blocked: blocked::WaiterQueues,
    pub stats: ShardStats,
}

impl Shard {
    fn new(databases: usize, now: u64, alarm: Arc<ExpiryAlarm>, index: usize) -> Self {
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
        self.dbs[db]
            .iter()
            .filter(|n| n.expire_at().is_some())
            .count()
    }

    /// Live keys of one database, for whole-keyspace commands.
    pub fn entries(&self, db: usize, now: u64) -> impl Iterator<Item = (&[u8], &Node)> {
        self.dbs[db]
            .iter()
            .filter(move |n| !n.is_expired(now))
            .map(|n| (n.key(), n))
    }

    /// Files `key`'s deadline in its database's wheel.
    fn schedule(&mut self, db: usize, key: &[u8], at: u64) {
        self.dbs[db].schedule(key, at);
        self.timed.mark(db);
        self.alarm.ring_by(self.index, value::gone_from(at));
        self.sweep_soon_if_stale(db);
    }

    fn remove(&mut self, db: usize, key: &[u8]) -> Option<Entry> {
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

    fn touch_watchers(&mut self, db: usize, key: &[u8]) {
        if self.watched.is_empty() {
            return;
        }
        if let Some(flags) = self.watched.get(&(db as u32, Bytes::copy_from_slice(key))) {
            flags.iter().for_each(|f| f.mark());
        }
    }

    fn touch_flushed_watchers(&mut self, db: Option<usize>) {
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
    /// them was reclaimed (ms past its deadline).
    fn expire_due(&mut self, now: u64, events: &dyn EventSink) -> (u64, u64) {
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

/// One shard's lock and data on cache lines of its own, so that cores
/// working on neighbouring shards do not invalidate each other's lines.
#[repr(align(128))]
struct Padded(Mutex<Shard>);

impl std::ops::Deref for Padded {
    type Target = Mutex<Shard>;

    fn deref(&self) -> &Mutex<Shard> {
        &self.0
    }
}

pub struct Keyspace {
    shards: Box<[Padded]>,
    /// Set while a script that has run past `busy-reply-threshold` holds the
    /// shard: commands that need it are answered BUSY instead of waiting.
    busy: Arc<[AtomicBool]>,
    databases: usize,
    clock: Arc<dyn Clock>,
    /// Where keyspace events (`notify-keyspace-events`) are published.
    events: Arc<dyn EventSink>,
    /// While set (ms since `epoch`, exclusive), nothing is reclaimed: keys
    /// past their deadline read as gone but stay stored, as Redis keeps
    /// them during CLIENT PAUSE. 0: not held.
    expiry_held_until: AtomicU64,
    epoch: std::time::Instant,
    /// How late (ms past its deadline) the last expiry pass that reclaimed
    /// anything reclaimed its latest key: how far active expiry trails.
    expiry_lag_ms: AtomicU64,
    /// When the next expiry pass has work (every shard files there).
    alarm: Arc<ExpiryAlarm>,
    limits: limits::SharedLimits,
    /// The append-only file, when `appendonly` is on (see `aof`).
    log: parking_lot::RwLock<Option<Arc<crate::persist::Aof>>>,
    /// Set while `log` is: a command notes what it changes only then.
    logging: AtomicBool,
    /// Set while the append-only file is replayed at start.
    loading: AtomicBool,
    /// Whether `maxmemory-policy` is an LFU one: keys' access clocks then
    /// count uses rather than keep the last one's second.
    lfu: AtomicBool,
}

/// Where the keyspace sends the events it raises (keys expired, created,
/// missed, and those commands raise through it): pub/sub, which sits above
/// the keyspace, publishes them as keyspace notifications.
pub trait EventSink: Send + Sync {
    fn notify(&self, event: Event, db: usize, key: &[u8]);

    /// A key changed or went away, in any database (what client-side
    /// caching invalidates); `by_client` is false when expiry removed it.
    fn changed(&self, _key: &[u8], _by_client: bool) {}

    /// A database, or all of them, was emptied.
    fn flushed(&self) {}
}

/// A keyspace of its own (benches, unit tests) raises events to no one.
struct NoEvents;

impl EventSink for NoEvents {
    fn notify(&self, _: Event, _: usize, _: &[u8]) {}
}

/// How long a command waits on a held shard before looking again whether
/// a busy script holds it.
const BUSY_POLL: std::time::Duration = std::time::Duration::from_millis(5);

/// Which shards a command needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockPlan {
    /// No keys: nothing is locked.
    Nothing,
    /// These shards, ascending and without repeats.
    Shards(Vec<usize>),
    /// Every shard: whole-keyspace commands and anything that must see a
    /// frozen keyspace.
    All,
}

impl LockPlan {
    pub fn for_keys<'k>(keys: impl IntoIterator<Item = &'k [u8]>) -> LockPlan {
        let mut shards: Vec<usize> = keys.into_iter().map(key_shard).collect();
        if shards.is_empty() {
            return LockPlan::Nothing;
        }
        shards.sort_unstable();
        shards.dedup();
        LockPlan::Shards(shards)
    }

    pub fn union(self, other: LockPlan) -> LockPlan {
        match (self, other) {
            (LockPlan::All, _) | (_, LockPlan::All) => LockPlan::All,
            (LockPlan::Nothing, p) | (p, LockPlan::Nothing) => p,
            (LockPlan::Shards(mut a), LockPlan::Shards(b)) => {
                a.extend(b);
                a.sort_unstable();
                a.dedup();
                LockPlan::Shards(a)
            }
        }
    }
}

impl Keyspace {
    pub fn new(databases: usize, clock: Arc<dyn Clock>) -> Self {
        Self::with_events(databases, clock, Arc::new(NoEvents))
    }

    /// A keyspace that publishes its keyspace events on `events`.
    pub fn with_events(
        databases: usize,
        clock: Arc<dyn Clock>,
        events: Arc<dyn EventSink>,
    ) -> Self {
        let now = clock.now_ms();
        let alarm = Arc::new(ExpiryAlarm::new(SHARDS));
        Keyspace {
            shards: (0..SHARDS)
                .map(|i| Padded(Mutex::new(Shard::new(databases, now, alarm.clone(), i))))
                .collect(),
            alarm,
            busy: (0..SHARDS).map(|_| AtomicBool::new(false)).collect(),
            databases,
            clock,
            events,
            expiry_lag_ms: AtomicU64::new(0),
            expiry_held_until: AtomicU64::new(0),
            epoch: std::time::Instant::now(),
            limits: limits::SharedLimits::new(EncodingLimits::default()),
            log: Default::default(),
            logging: AtomicBool::new(false),
            loading: AtomicBool::new(false),
            lfu: AtomicBool::new(false),
        }
    }

    pub fn limits(&self) -> EncodingLimits {
        self.limits.load()
    }

    /// Values already stored keep their form: Redis converts a value only
    /// when a write touches it.
    pub fn set_limits(&self, limits: EncodingLimits) {
        self.limits.store(limits);
    }

    /// Keys' clocks already kept are read the new way, as Redis reads them.
    pub fn set_lfu(&self, lfu: bool) {
        self.lfu.store(lfu, Ordering::Relaxed);
    }

    fn lfu(&self) -> bool {
        self.lfu.load(Ordering::Relaxed)
    }

    /// Holds expiry (see `expiry_held_until`) until `until`, or releases it.
    pub fn hold_expiry(&self, until: Option<std::time::Instant>) {
        let ms = until.map_or(0, |u| {
            u.saturating_duration_since(self.epoch).as_millis() as u64 + 1
        });
        self.expiry_held_until.store(ms, Ordering::Release);
    }

    /// Marks the append-only file's replay (see `Db::already_expired`).
    pub fn set_loading(&self, on: bool) {
        self.loading.store(on, Ordering::Relaxed);
    }

    fn expiry_held(&self) -> bool {
        let until = self.expiry_held_until.load(Ordering::Acquire);
        until != 0 && (self.epoch.elapsed().as_millis() as u64) < until
    }

    /// When the expiry driver should run the next pass.
    pub fn expiry_alarm(&self) -> &ExpiryAlarm {
        &self.alarm
    }

    /// See `expiry_lag_ms`.
    pub fn expiry_lag_ms(&self) -> u64 {
        self.expiry_lag_ms.load(Ordering::Relaxed)
    }

    pub fn databases(&self) -> usize {
        self.databases
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Takes the plan's shards in ascending order. Fails with BUSY if one
    /// of them is held by a script running past the busy threshold.
    pub fn lock(&self, plan: &LockPlan) -> CmdResult<Locked<'_>> {
        let mut locked = Locked {
            ks: self,
            guards: Vec::new(),
            now: self.clock.now_ms(),
            journal: None,
            ready: Vec::new(),
            changes: self
                .logging
                .load(Ordering::Acquire)
                .then(aof::Changes::default),
        };
        locked.acquire(plan)?;
        Ok(locked)
    }

    fn lock_shard(&self, idx: usize) -> CmdResult<MutexGuard<'_, Shard>> {
        if let Some(guard) = self.shards[idx].try_lock() {
            return Ok(guard);
        }
        loop {
            if let Some(guard) = self.shards[idx].try_lock_for(BUSY_POLL) {
                return Ok(guard);
            }
            if self.busy[idx].load(Ordering::Acquire) {
                return Err(CmdError::Busy);
            }
        }
    }

    /// The busy flags, for a running script to raise over the shards it holds.
    pub fn busy_flags(&self) -> Arc<[AtomicBool]> {
        self.busy.clone()
    }

    /// One pass of active expiry over every shard with pending deadlines.
    /// A shard in use is skipped, not waited for (a long script may hold
    /// it): the next pass reclaims it, and lookups never show it meanwhile.
    pub fn expire_due(&self) -> u64 {
        self.expire_pass(false)
    }

    /// An expiry pass that waits for shards in use (a test moving a manual
    /// clock wants every passed deadline handled when it returns).
    pub fn expire_due_now(&self) -> u64 {
        self.expire_pass(true)
    }

    fn expire_pass(&self, wait: bool) -> u64 {
        if self.expiry_held() {
            return 0;
        }
        let now = self.clock.now_ms();
        self.alarm.clear();
        let (reclaimed, lag) = self
            .shards
            .iter()
            .enumerate()
            .filter(|&(i, _)| wait || self.alarm.shard_due(i, now))
            .map(|(_, s)| {
                // A shard skipped as busy stays due for the next pass.
                let shard = if wait { Some(s.lock()) } else { s.try_lock() };
                shard.map_or((0, 0), |mut shard| shard.expire_due(now, &*self.events))
            })
            .fold((0, 0), |(n, lag), (m, l)| (n + m, lag.max(l)));
        self.alarm.settle();
        // The driver may have read the alarm while this pass had it
        // cleared; a pass it did not run (a test's clock moved) wakes it.
        if wait {
            self.alarm.wake_driver();
        }
        // A pass a test forces after moving a manual clock is late by the
        // jump it made, which says nothing about the expiry driver.
        if reclaimed > 0 && !wait {
            self.expiry_lag_ms.store(lag, Ordering::Relaxed);
        }
        reclaimed
    }
}

/// The shards one command holds, and the time it runs at.
pub struct Locked<'a> {
    ks: &'a Keyspace,
    guards: Vec<(usize, MutexGuard<'a, Shard>)>,
    now: u64,
    journal: Option<Journal>,
    /// Keys that gained elements while clients wait on them: served when
    /// the shards are let go (see `blocked`).
    ready: Vec<(usize, Bytes)>,
    /// What this command changed, for the append-only file (only while it
    /// is on).
    changes: Option<aof::Changes>,
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        if !self.ready.is_empty() {
            self.serve_ready();
        }
        // Before the shards are let go: records about the same keys reach
        // the file in the order the changes happened.
        if self.changes.is_some() {
            self.log_changes();
        }
    }
}

impl<'a> Locked<'a> {
    pub fn now(&self) -> u64 {
        self.now
    }

    pub fn holds_all(&self) -> bool {
        self.guards.len() == SHARDS
    }

    /// Starts recording prior states: a script that must start over, or
    /// that is killed after it wrote, is rolled back to them.
    pub fn begin_journal(&mut self) {
        self.journal = Some(Journal::default());
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
        for (db, key, prior) in journal.undo_order() {
            let shard = self.shard(key_shard(&key))?;
            match prior {
                Prior::Whole(Some(entry)) => {
                    // FLUSHALL dropped the wheel; a second entry for the
                    // same deadline is harmless.
                    if let Some(at) = entry.expire_at() {
                        shard.schedule(db, &key, at);
                    }
                    shard.dbs[db].insert(&key, entry, |old| old.unwrap_or(fresh));
                }
                Prior::Whole(None) => {
                    shard.remove(db, &key);
                }
                Prior::Part { expire_at, undo } => {
                    let hash = shard.dbs[db].hash(&key);
                    if shard.dbs[db].get_mut_hashed(hash, &key).is_none() {
                        // The change emptied the collection, which took
                        // the key with it.
                        if let Some(at) = expire_at {
                            shard.schedule(db, &key, at);
                        }
                        shard.dbs[db].insert(
                            &key,
                            Entry::new(undo.empty_value(), expire_at),
                            |_| fresh,
                        );
                    }
                    if let Some(entry) = shard.dbs[db].get_mut_hashed(hash, &key) {
                        undo.apply(&mut entry.value, &limits);
                    }
                }
            }
        }
        Ok(())
    }

    /// Records every key of database `db` (all of them with `None`) in the
    /// shards held, before a flush empties them.
    fn record_flush(&mut self, db: Option<usize>) {
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
                        journal.push(
                            index,
                            Bytes::copy_from_slice(key),
                            Prior::Whole(Some(entry)),
                        );
                    }
                }
            }
        }
    }

    fn record(&mut self, db: usize, key: &[u8]) -> CmdResult<()> {
        let Some(journal) = self.journal.as_ref().filter(|j| j.recording) else {
            return Ok(());
        };
        if journal.has_whole(db, key) {
            return Ok(());
        }
        let prior = self.shard(key_shard(key))?.dbs[db]
            .get(key)
            .map(|n| n.entry().into_owned());
        let journal = self.journal.as_mut().expect("checked above");
        journal.push(db, Bytes::copy_from_slice(key), Prior::Whole(prior));
        Ok(())
    }

    /// Keeps what undoes the next command, which changes only `touch` of
    /// `key` in database `db`, and nothing else for it: its own lookups
    /// record nothing. A compact value is copied whole by its lookups, as
    /// an undeclared write's keys are.
    pub fn journal_touch(&mut self, db: usize, key: &Bytes, touch: &Touch) -> CmdResult<()> {
        let Some(journal) = &self.journal else {
            return Ok(());
        };
        if journal.has_whole(db, key) {
            self.journal_next(false);
            return Ok(());
        }
        let now = self.now;
        let shard = self.shard(key_shard(key))?;
        let live = shard.dbs[db].get(key).filter(|n| !n.is_expired(now));
        let prior = match live {
            None => Some(Prior::Whole(None)),
            Some(node) => match Undo::before(&node.entry().value, touch) {
                Before::Part(undo) => Some(Prior::Part {
                    expire_at: node.expire_at(),
                    undo,
                }),
                Before::Unchanged => None,
                Before::Copy => {
                    self.journal_next(true);
                    return Ok(());
                }
            },
        };
        let journal = self.journal.as_mut().expect("checked above");
        if let Some(prior) = prior {
            journal.push(db, key.clone(), prior);
        }
        journal.recording = false;
        Ok(())
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
    fn shard(&mut self, idx: usize) -> CmdResult<&mut Shard> {
        let pos = match self.guards.binary_search_by_key(&idx, |(i, _)| *i) {
            Ok(pos) => pos,
            Err(pos) => {
                let mutex = &self.ks.shards[idx];
                let guard = if pos == self.guards.len() {
                    self.ks.lock_shard(idx)?
                } else {
                    mutex.try_lock().ok_or(CmdError::ShardBusy)?
                };
                self.guards.insert(pos, (idx, guard));
                pos
            }
        };
        Ok(&mut self.guards[pos].1)
    }

    /// Runs `read` over the live keys of database `db` in one hash slot,
    /// taken from that slot's shard alone.
    pub fn in_slot<T>(
        &mut self,
        db: usize,
        slot: u16,
        read: impl FnOnce(&mut dyn Iterator<Item = &[u8]>) -> T,
    ) -> CmdResult<T> {
        let now = self.now;
        let shard = self.shard(slot_shard(slot))?;
        let mut keys = shard
            .entries(db, now)
            .map(|(key, _)| key)
            .filter(|key| key_slot(key) == slot);
        Ok(read(&mut keys))
    }

    pub fn shards(&mut self) -> impl Iterator<Item = &mut Shard> {
        self.guards.iter_mut().map(|(_, g)| &mut **g)
    }

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
        self.note_swapped(a, b);
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
    locked: &'l mut Locked<'a>,
    index: usize,
}

impl Db<'_, '_> {
    pub fn index(&self) -> usize {
        self.index
    }

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
        let shard = self.locked.shard(key_shard(key))?;
        Ok(shard.dbs[db]
            .get(key)
            .filter(|n| !n.is_expired(now))
            .map(Node::clock))
    }

    /// Sets the existing `key`'s access clock (RESTORE's IDLETIME, FREQ).
    pub fn set_access(&mut self, key: &[u8], clock: AccessClock) -> CmdResult<()> {
        let db = self.index;
        self.locked.shard(key_shard(key))?.dbs[db].set_clock(key, clock);
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
        self.locked.record(db, key)?;
        let shard_index = key_shard(key);
        let shard = self.locked.shard(shard_index)?;
        let hash = shard.dbs[db].hash(key);
        let place = shard.dbs[db].find_hashed(hash, key);
        let live = match place {
            Some(place)
                if shard.dbs[db]
                    .node_at(place)
                    .is_some_and(|n| n.is_expired(now)) =>
            {
                if reclaim_if_expired(shard, db, key, now, ks) {
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
        let (now, db) = (self.locked.now, self.index);
        let shard = self.locked.shard(key_shard(key))?;
        let hash = shard.dbs[db].hash(key);
        // Unpacked like a key about to change: a lock script looks at the
        // key it goes on to change.
        Ok(shard.dbs[db]
            .get_mut_hashed(hash, key)
            .filter(|e| !e.is_expired(now))
            .map(|e| &e.value))
    }

    /// A read lookup of one kind of value: `None` if absent, WRONGTYPE if
    /// the key holds another kind. `kind` picks the kind out of a value.
    pub fn get_as<T>(
        &mut self,
        key: &[u8],
        kind: fn(&mut Value) -> Option<&mut T>,
    ) -> CmdResult<Option<&mut T>> {
        self.get(key)?
            .map(|v| kind(v).ok_or(CmdError::WrongType))
            .transpose()
    }

    /// `get_as` for writing: no hit/miss accounting.
    pub fn get_mut_as<T>(
        &mut self,
        key: &[u8],
        kind: fn(&mut Value) -> Option<&mut T>,
    ) -> CmdResult<Option<&mut T>> {
        self.get_mut(key)?
            .map(|v| kind(v).ok_or(CmdError::WrongType))
            .transpose()
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
        let shard = self.locked.shard(key_shard(key))?;
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
        let shard = self.locked.shard(key_shard(key))?;
        let removed = shard.remove(db, key).map(|e| e.value);
        // Group readers blocked on a stream learn that it is gone.
        if matches!(removed, Some(Value::Stream(_))) {
            self.signal_ready(key)?;
        }
        Ok(removed)
    }

    /// Sets or clears the deadline of an existing key; false if there is none.
    pub fn set_expire(&mut self, key: &[u8], at: Option<u64>) -> CmdResult<bool> {
        let Some(entry) = self.entry(key)? else {
            return Ok(false);
        };
        let previous = entry.set_expire_at(at);
        let db = self.index;
        self.locked.note_change(db, key);
        if let Some(at) = at.filter(|at| Some(*at) != previous) {
            self.locked.shard(key_shard(key))?.schedule(db, key, at);
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

    /// `modified` without a keyspace event: a change Redis makes silently
    /// (PFCOUNT storing the count it computed).
    pub fn touched(&mut self, key: &[u8]) -> CmdResult<()> {
        let db = self.index;
        self.locked.note_change(db, key);
        let shard = self.locked.shard(key_shard(key))?;
        shard.stats.dirty += 1;
        shard.touch_watchers(db, key);
        self.locked.ks.events.changed(key, true);
        Ok(())
    }

    /// Counts a change Redis does not show WATCHers (a consumer group's
    /// bookkeeping).
    pub fn dirtied(&mut self, key: &[u8]) -> CmdResult<()> {
        self.locked.note_change(self.index, key);
        self.locked.shard(key_shard(key))?.stats.dirty += 1;
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

    pub fn shards(&mut self) -> impl Iterator<Item = &mut Shard> {
        self.locked.shards()
    }

    /// Registers a WATCH of `key` by `flag`.
    pub fn watch(&mut self, key: &[u8], flag: &Arc<WatchFlag>) -> CmdResult<()> {
        let db = self.index as u32;
        let shard = self.locked.shard(key_shard(key))?;
        shard
            .watched
            .entry((db, Bytes::copy_from_slice(key)))
            .or_default()
            .push(flag.clone());
        Ok(())
    }

    pub fn unwatch(&mut self, key: &[u8], flag: &Arc<WatchFlag>) -> CmdResult<()> {
        let db = self.index as u32;
        let shard = self.locked.shard(key_shard(key))?;
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
/// it is only not found); true if it was a stream some client waits on.
fn reclaim_if_expired(shard: &mut Shard, db: usize, key: &[u8], now: u64, ks: &Keyspace) -> bool {
    if ks.expiry_held() || !shard.dbs[db].get(key).is_some_and(|e| e.is_expired(now)) {
        return false;
    }
    let removed = shard.remove(db, key);
    shard.stats.expired += 1;
    shard.touch_watchers(db, key);
    ks.events.changed(key, false);
    ks.events.notify(Event::Expired, db, key);
    matches!(
        removed,
        Some(Entry {
            value: Value::Stream(_),
            ..
        })
    )
}

/// FLUSHALL: every database of every shard (the plan must hold them all).
pub fn flush_all(locked: &mut Locked<'_>) -> u64 {
    locked.note_whole(None, b"FLUSHALL");
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SystemClock;

    #[test]
    fn hash_tags_share_a_shard() {
        assert_eq!(
            key_shard(b"lock"),
            key_shard(b"redisson_lock__channel:{lock}")
        );
        assert_eq!(key_slot(b"foo"), 12182);
    }

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

    #[test]
    fn every_database_reclaims_its_own_expired_keys() {
        let clock = Arc::new(crate::clock::ManualClock::default());
        let ks = Keyspace::new(80, clock.clone());
        let dbs = [0, 9, 63, 79];
        for &index in &dbs {
            let mut locked = ks.lock(&LockPlan::for_keys([&b"k"[..]])).unwrap();
            let soon = locked.now() + 5;
            locked
                .db(index)
                .insert(b"k", Value::string(Bytes::from_static(b"v")), Ttl::At(soon))
                .unwrap();
        }
        assert_eq!(ks.expire_due_now(), 0);
        clock.advance(std::time::Duration::from_millis(5));
        assert_eq!(
            ks.expire_due_now(),
            0,
            "kept through the deadline's millisecond"
        );
        clock.advance(std::time::Duration::from_millis(1));
        assert_eq!(ks.expire_due_now(), dbs.len() as u64);
        // The pass that found the wheels empty forgets them.
        ks.expire_due_now();
        let mut locked = ks.lock(&LockPlan::for_keys([&b"k"[..]])).unwrap();
        let shard = locked.shard(key_shard(b"k")).unwrap();
        assert!(dbs.iter().all(|&db| shard.dbs[db].len() == 0));
        assert_eq!(shard.timed.dbs(80).count(), 0);
    }

    #[test]
    fn the_expiry_alarm_names_the_next_pass_with_work() {
        let clock = Arc::new(crate::clock::ManualClock::default());
        let ks = Keyspace::new(1, clock.clone());
        let alarm = ks.expiry_alarm();
        assert_eq!(alarm.due(), None, "nothing filed");
        let start = clock.now_ms();
        for (key, ttl) in [(&b"later"[..], 90_000), (b"soon", 40)] {
            let mut locked = ks.lock(&LockPlan::for_keys([key])).unwrap();
            let at = locked.now() + ttl;
            locked
                .db(0)
                .insert(key, Value::string(Bytes::from_static(b"v")), Ttl::At(at))
                .unwrap();
        }
        assert_eq!(
            alarm.due(),
            Some(start + 41),
            "gone after its deadline's ms"
        );
        clock.advance(std::time::Duration::from_millis(41));
        assert_eq!(ks.expire_due_now(), 1);
        let next = alarm.due().expect("the later key is still filed");
        assert!(next > start + 41 && next <= start + 90_001, "{next}");
        // Nothing reclaimed before `next`; the later key by its deadline.
        clock.advance(std::time::Duration::from_millis(next - clock.now_ms() - 1));
        assert_eq!(ks.expire_due_now(), 0);
        clock.advance(std::time::Duration::from_millis(
            90_001 - (clock.now_ms() - start),
        ));
        assert_eq!(ks.expire_due_now(), 1);
        assert_eq!(alarm.due(), None);
    }

    #[test]
    fn released_leases_are_swept_by_the_next_pass() {
        let clock = Arc::new(crate::clock::ManualClock::default());
        let ks = Keyspace::new(1, clock.clone());
        // Keys of one shard, so that its wheel holds every lease.
        let keys: Vec<Vec<u8>> = (0..2000)
            .map(|i| format!("{{lock}}:{i}").into_bytes())
            .collect();
        let shard = key_shard(&keys[0]);
        let plan = LockPlan::for_keys(keys.iter().map(|k| &k[..]));
        let mut locked = ks.lock(&plan).unwrap();
        let lease = locked.now() + 30_000;
        for key in &keys {
            let value = Value::string(Bytes::from_static(b"owner"));
            locked.db(0).insert(key, value, Ttl::At(lease)).unwrap();
        }
        drop(locked);
        let far = ks.expiry_alarm().due();
        assert!(far.is_some_and(|at| at > clock.now_ms()));
        let mut locked = ks.lock(&plan).unwrap();
        for key in &keys {
            locked.db(0).remove(key).unwrap();
        }
        let stale = locked.shard(shard).unwrap().dbs[0].wheel_stale();
        drop(locked);
        assert!(stale, "2000 entries for no key");
        assert_eq!(ks.expiry_alarm().due(), Some(0), "a pass is due now");
        assert_eq!(ks.expire_due_now(), 0);
        let mut locked = ks.lock(&plan).unwrap();
        let map = &locked.shard(shard).unwrap().dbs[0];
        assert!(!map.wheel_stale() && map.next_due().is_none(), "swept");
        drop(locked);
        assert_eq!(ks.expiry_alarm().due(), None);
    }

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
