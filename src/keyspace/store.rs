//! The keyspace as a whole: its shards, each behind its own lock, and what
//! they share (the clock, where events go, the expiry alarm, the encoding
//! limits, the append-only file). Commands reach keys through `lock`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};

use super::events::{EventSink, NoEvents};
use super::limits::{self, EncodingLimits};
use super::shard::Shard;
use super::slot::SHARDS;
use crate::clock::Clock;
use crate::error::{CmdError, CmdResult};
use crate::expiry::alarm::ExpiryAlarm;

/// One shard's lock and data on cache lines of its own, so that cores
/// working on neighbouring shards do not invalidate each other's lines.
#[repr(align(128))]
pub(super) struct Padded(Mutex<Shard>);

impl std::ops::Deref for Padded {
    type Target = Mutex<Shard>;

    fn deref(&self) -> &Mutex<Shard> {
        &self.0
    }
}

pub struct Keyspace {
    pub(super) shards: Box<[Padded]>,
    /// Set while a script that has run past `busy-reply-threshold` holds the
    /// shard: commands that need it are answered BUSY instead of waiting.
    busy: Arc<[AtomicBool]>,
    databases: usize,
    pub(super) clock: Arc<dyn Clock>,
    /// Where keyspace events (`notify-keyspace-events`) are published.
    pub(super) events: Arc<dyn EventSink>,
    /// While set (ms since `epoch`, exclusive), nothing is reclaimed: keys
    /// past their deadline read as gone but stay stored, as Redis keeps
    /// them during CLIENT PAUSE. 0: not held.
    expiry_held_until: AtomicU64,
    epoch: Instant,
    /// How late (ms past its deadline) the last expiry pass that reclaimed
    /// anything reclaimed its latest key: how far active expiry trails.
    expiry_lag_ms: AtomicU64,
    /// When the next expiry pass has work (every shard files there).
    alarm: Arc<ExpiryAlarm>,
    limits: limits::SharedLimits,
    /// The append-only file, when `appendonly` is on (see `aof`).
    pub(super) log: parking_lot::RwLock<Option<Arc<crate::persist::Aof>>>,
    /// Set while `log` is: a command notes what it changes only then.
    pub(super) logging: AtomicBool,
    /// The replication stream: writes are recorded for it too while it
    /// records (see `crate::persist::backlog`).
    pub(super) backlog: std::sync::OnceLock<Arc<crate::persist::backlog::Backlog>>,
    /// Copies of the keyspace under way that records will be replayed
    /// over (`aof::CopyUnderWay`): lists are recorded whole meanwhile.
    pub(super) copying: AtomicUsize,
    /// Set while the append-only file is loaded at start: its deadlines
    /// are kept, never judged past (see `Locked::past_deadlines_found`).
    pub(super) loading: AtomicBool,
    /// Whether `maxmemory-policy` is an LFU one: keys' access clocks then
    /// count uses rather than keep the last one's second.
    lfu: AtomicBool,
}

/// How long a command waits on a held shard before looking again whether
/// a busy script holds it.
const BUSY_POLL: Duration = Duration::from_millis(5);

/// How long a command spins for a held shard before it sleeps: a few
/// scripts' worth, so that only a long one puts waiters to sleep.
const SPIN: Duration = Duration::from_micros(50);
/// Pause instructions between looks at the lock.
const SPIN_STEP: u32 = 32;

impl Keyspace {
    pub fn new(databases: usize, clock: Arc<dyn Clock>) -> Self {
        Self::with_events(databases, clock, Arc::new(NoEvents))
    }

    /// A keyspace that publishes its keyspace events on `events`.
    pub(crate) fn with_events(
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
            epoch: Instant::now(),
            limits: limits::SharedLimits::new(EncodingLimits::default()),
            log: Default::default(),
            logging: AtomicBool::new(false),
            backlog: Default::default(),
            copying: AtomicUsize::new(0),
            loading: AtomicBool::new(false),
            lfu: AtomicBool::new(false),
        }
    }

    pub(crate) fn limits(&self) -> EncodingLimits {
        self.limits.load()
    }

    /// Values already stored keep their form: Redis converts a value only
    /// when a write touches it.
    pub(crate) fn set_limits(&self, limits: EncodingLimits) {
        self.limits.store(limits);
    }

    /// Keys' clocks already kept are read the new way, as Redis reads them.
    pub(crate) fn set_lfu(&self, lfu: bool) {
        self.lfu.store(lfu, Ordering::Relaxed);
    }

    pub(super) fn lfu(&self) -> bool {
        self.lfu.load(Ordering::Relaxed)
    }

    /// Holds expiry (see `expiry_held_until`) until `until`, or releases it.
    pub(crate) fn hold_expiry(&self, until: Option<Instant>) {
        let ms = until.map_or(0, |u| {
            u.saturating_duration_since(self.epoch).as_millis() as u64 + 1
        });
        self.expiry_held_until.store(ms, Ordering::Release);
    }

    /// Marks the append-only file's replay (see `Db::already_expired`).
    /// Whether the AOF is being loaded (its commands obey as the
    /// primary's do: Redis's `mustObeyClient`).
    pub(crate) fn is_loading(&self) -> bool {
        self.loading.load(Ordering::Relaxed)
    }

    pub(crate) fn set_loading(&self, on: bool) {
        self.loading.store(on, Ordering::Relaxed);
    }

    pub(super) fn expiry_held(&self) -> bool {
        let until = self.expiry_held_until.load(Ordering::Acquire);
        until != 0 && (self.epoch.elapsed().as_millis() as u64) < until
    }

    /// When the expiry driver should run the next pass.
    pub(crate) fn expiry_alarm(&self) -> &ExpiryAlarm {
        &self.alarm
    }

    /// See `expiry_lag_ms`.
    pub(crate) fn expiry_lag_ms(&self) -> u64 {
        self.expiry_lag_ms.load(Ordering::Relaxed)
    }

    pub(crate) fn databases(&self) -> usize {
        self.databases
    }

    pub(crate) fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Takes shard `idx`, waiting out a busy script rather than failing.
    pub(super) fn wait_shard(&self, idx: usize) -> MutexGuard<'_, Shard> {
        loop {
            // Only a script past the busy threshold refuses: it ends.
            match self.lock_shard(idx) {
                Ok(shard) => return shard,
                Err(_) => std::thread::sleep(BUSY_POLL),
            }
        }
    }

    /// Takes shard `idx`, refusing while a busy script holds it.
    pub(super) fn lock_shard(&self, idx: usize) -> CmdResult<MutexGuard<'_, Shard>> {
        if let Some(guard) = self.shards[idx].try_lock() {
            return Ok(guard);
        }
        if let Some(guard) = self.spin_for(idx) {
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

    /// Waits for a held shard by spinning, up to `SPIN`: a shard is held
    /// for one command or script, microseconds, and a waiter that sleeps
    /// instead is woken only after the holder is done, a system call and a
    /// scheduling delay later, during which nobody holds the shard. On a
    /// hot key served by many cores those delays were most of each
    /// hand-over (scripts on one key ran at half redis-server's rate on 16
    /// cores). Spinning longer than this gained no more and burned CPU.
    fn spin_for(&self, idx: usize) -> Option<MutexGuard<'_, Shard>> {
        let shard = &self.shards[idx];
        let until = Instant::now() + SPIN;
        loop {
            for _ in 0..SPIN_STEP {
                std::hint::spin_loop();
            }
            // Reading first keeps the line shared while the holder works.
            if !shard.is_locked()
                && let Some(guard) = shard.try_lock()
            {
                return Some(guard);
            }
            if Instant::now() >= until {
                return None;
            }
        }
    }

    /// The busy flags, for a running script to raise over the shards it holds.
    pub(crate) fn busy_flags(&self) -> Arc<[AtomicBool]> {
        self.busy.clone()
    }

    /// One pass of active expiry over every shard with pending deadlines.
    /// A shard in use is skipped, not waited for (a long script may hold
    /// it): the next pass reclaims it, and lookups never show it meanwhile.
    pub(crate) fn expire_due(&self) -> u64 {
        self.expire_pass(false)
    }

    /// An expiry pass that waits for shards in use (a test moving a manual
    /// clock wants every passed deadline handled when it returns).
    pub(crate) fn expire_due_now(&self) -> u64 {
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
                shard.map_or((0, 0), |mut shard| {
                    // Replicas keep keys past their deadline until told.
                    let backlog = self.backlog.get().filter(|b| b.recording());
                    let mut gone = backlog.map(|_| crate::persist::Batch::default());
                    let done = shard.expire_due(now, &*self.events, gone.as_mut());
                    if let (Some(backlog), Some(gone)) = (backlog, &gone) {
                        backlog.append(gone);
                    }
                    done
                })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::{LockPlan, Ttl, Value, key_shard};
    use bytes::Bytes;

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
}
