//! The keyspace as RDB keys, as it was at one point in time, taken while
//! clients go on (BGSAVE, SAVE, DEBUG RELOAD, an AOF rewrite's base), and
//! RDB keys loaded back.
//!
//! Redis gets its point in time from fork(): the child sees the memory as
//! it was, and a page the parent writes is copied first. Here the copy is
//! per key. A capture starts by holding every shard at once, which orders
//! it against every command (each holds the shards it touches); while it
//! holds them it counts each database's keys (RESIZEDB's figures) and
//! freezes every map that has keys. The saver then walks each frozen map's
//! buckets in order, a few dozen keys per hold of the shard, streaming
//! them to the file. A key about to change (written, deleted, expired, or
//! under an LRU/LFU policy, read) in a bucket the saver has not reached is
//! first copied aside as it is; a key created since is marked so the
//! saver passes it by. Keys do not move between buckets while a map is
//! frozen (a growth that would rehash the table sets every key not yet
//! saved aside first), so every key the capture saw is saved exactly once,
//! as it was when the capture began: from the table if nothing changed it
//! before the saver came, else from its copy, which was taken before its
//! first change. That is the state a fork at that instant would have
//! copied, whatever writes come after. A command pays for the keys it
//! changes, not for its shard; memory grows by those copies and one step's
//! bytes, not by the file.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::MutexGuard;

use super::access::AccessClock;
use super::dbmap::{Node, SaveStep};
use super::dump::{value_kind, write_body};
use super::slot::SHARDS;
use super::{Keyspace, LockPlan, Ttl, Value};
use crate::error::{CmdError, CmdResult};
use crate::persist::rdb::{Encoder, FileWriter, KeyMeta, key_prefix};

/// Which access clock the file keeps for each key: Redis writes the LRU
/// idle time under an LRU `maxmemory-policy`, the LFU counter under an
/// LFU one, and neither otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Clocks {
    None,
    Lru,
    Lfu,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct CaptureOptions {
    /// `rdbcompression`.
    pub compress: bool,
    pub clocks: Clocks,
    /// `rdb-key-save-delay`: microseconds to wait per key saved (negative:
    /// one per that many keys), to slow a save down in tests, as Redis's
    /// child sleeps.
    pub key_delay_us: i64,
}

impl CaptureOptions {
    /// The wait `rdb-key-save-delay` asks for after `keys` keys.
    fn delay_for(&self, keys: u64) -> Option<Duration> {
        let micros = match self.key_delay_us {
            0 => return None,
            d if d > 0 => keys * d as u64,
            d => keys / d.unsigned_abs(),
        };
        (micros > 0).then(|| Duration::from_micros(micros))
    }
}

/// How long a hold of a shard may go on taking keys: a command finding
/// the saver in its shard waits about that long (plus one key's
/// encoding), not the shard's whole encoding. The count is only a bound
/// on the buckets one step looks at; time ends a step first.
const STEP_TIME: Duration = Duration::from_micros(10);
const STEP_KEYS: usize = 1024;
const CLOCK_EVERY: u64 = 4;

/// Encoded bytes gathered before they go to the file, in one write and
/// one checksum update: a step's few hundred bytes each would cost a
/// system call every few steps.
const FLUSH_BYTES: usize = 64 * 1024;

/// A database's sizes at the capture, for RESIZEDB.
#[derive(Debug, Default, Clone, Copy)]
struct DbSizes {
    keys: u64,
    expires: u64,
}

/// A capture under way (see the module's doc).
pub(crate) struct Capture {
    at_ms: u64,
    /// The keyspace's change counter at that moment.
    pub dirty: u64,
    /// The replication stream's offset at that moment: a replica synced
    /// from this capture continues after it.
    pub repl_offset: i64,
    options: CaptureOptions,
    sizes: Vec<DbSizes>,
    /// Keys written so far.
    saved: AtomicU64,
    /// Bytes of the keys commands set aside before changing them, as
    /// written: what the capture cost beyond its own buffers, as a fork's
    /// copied pages do.
    aside_bytes: AtomicU64,
}

impl Capture {
    /// Every key the capture saw, as INFO's `current_save_keys_total`.
    pub(crate) fn keys_total(&self) -> u64 {
        self.sizes.iter().map(|s| s.keys).sum()
    }

    /// Keys written so far (`current_save_keys_processed`).
    pub(crate) fn keys_saved(&self) -> u64 {
        self.saved.load(Ordering::Relaxed)
    }

    /// See `aside_bytes` (`rdb_last_cow_size`).
    pub(crate) fn aside_bytes(&self) -> u64 {
        self.aside_bytes.load(Ordering::Relaxed)
    }

    fn write_node(&self, enc: &mut Encoder, node: &Node) {
        let expire_at = node.expire_at();
        let clock = node.clock();
        let meta = KeyMeta {
            expire_ms: expire_at.map(|at| at as i64),
            idle: (self.options.clocks == Clocks::Lru).then(|| clock.idle_secs(self.at_ms)),
            freq: (self.options.clocks == Clocks::Lfu).then(|| clock.decayed_freq(self.at_ms)),
        };
        write_key(enc, &meta, node.key(), &node.entry().value);
    }
}

/// A key read from a file, waiting to be loaded.
pub(crate) struct LoadedKey {
    pub db: usize,
    pub key: Vec<u8>,
    pub value: Value,
    pub meta: KeyMeta,
}

/// One key as the file holds it: the opcodes before it, its type byte,
/// its name, its value.
fn write_key(enc: &mut Encoder, meta: &KeyMeta, key: &[u8], value: &Value) {
    key_prefix(enc, meta);
    enc.byte(value_kind(value));
    enc.string(key);
    write_body(enc, value);
}

/// The saver's state from step to step: where keys are encoded, and the
/// file they go to.
struct Saver<'a, W: Write> {
    capture: &'a Capture,
    enc: Encoder,
    file: &'a mut FileWriter<W>,
}

impl<W: Write> Saver<'_, W> {
    /// Sends the keys encoded so far once they make a write's worth, or
    /// now when `all`.
    fn send(&mut self, all: bool) -> std::io::Result<()> {
        if all || self.enc.out.len() >= FLUSH_BYTES {
            self.file.keys(&self.enc.out)?;
            self.enc.out.clear();
        }
        Ok(())
    }
}

impl Keyspace {
    /// Starts a capture as of now (see the module's doc). One at a time:
    /// the caller ends it with `end_capture` before starting another.
    pub(crate) fn begin_capture(&self, options: CaptureOptions) -> Arc<Capture> {
        let mut guards: Vec<_> = (0..SHARDS).map(|idx| self.wait_shard(idx)).collect();
        let mut sizes = vec![DbSizes::default(); self.databases()];
        let clocks = options.clocks != Clocks::None;
        for shard in &mut guards {
            for (db, map) in shard.dbs.iter_mut().enumerate() {
                if map.len() > 0 {
                    sizes[db].keys += map.len() as u64;
                    sizes[db].expires += map.expiring() as u64;
                    map.freeze(db, clocks);
                }
            }
        }
        Arc::new(Capture {
            at_ms: self.clock.now_ms(),
            dirty: guards.iter().map(|g| g.stats.dirty).sum(),
            repl_offset: self.backlog.get().map_or(0, |b| b.sync_point()),
            options,
            sizes,
            saved: AtomicU64::new(0),
            aside_bytes: AtomicU64::new(0),
        })
    }

    /// Writes the capture's databases to `file`, each database's keys in
    /// order, a step at a time, and ends it (also when `file` fails).
    pub(crate) fn end_capture<W: Write>(
        &self,
        capture: &Capture,
        file: &mut FileWriter<W>,
    ) -> std::io::Result<()> {
        let walked = self.save_all(capture, file);
        if walked.is_err() {
            self.abandon_capture();
        }
        walked
    }

    /// Ends a capture that will not be written (its sink failed).
    pub(crate) fn abandon_capture(&self) {
        for idx in 0..SHARDS {
            self.wait_shard(idx).dbs.iter_mut().for_each(|m| m.thaw());
        }
    }

    fn save_all<W: Write>(
        &self,
        capture: &Capture,
        file: &mut FileWriter<W>,
    ) -> std::io::Result<()> {
        let mut saver = Saver {
            capture,
            enc: Encoder::new(capture.options.compress),
            file,
        };
        for (db, sizes) in capture.sizes.iter().enumerate() {
            if sizes.keys == 0 {
                continue;
            }
            saver.send(true)?;
            saver.file.select_db(db as u64, sizes.keys, sizes.expires)?;
            for idx in 0..SHARDS {
                self.save_map(&mut saver, idx, db)?;
            }
        }
        saver.send(true)
    }

    /// Saves database `db`'s map in shard `idx`, step by step, each step's
    /// bytes sent with the shard let go.
    fn save_map<W: Write>(
        &self,
        saver: &mut Saver<'_, W>,
        idx: usize,
        db: usize,
    ) -> std::io::Result<()> {
        let capture = saver.capture;
        loop {
            let mut saved = 0;
            let step = {
                let mut shard = self.wait_shard(idx);
                let started = Instant::now();
                // SWAPDB moves maps: the one frozen as `db` is the one.
                let Some(map) = shard.dbs.iter_mut().find(|m| m.frozen_as() == Some(db)) else {
                    return Ok(());
                };
                let enc = &mut saver.enc;
                // The clock is read every few keys: a key takes a few
                // hundred nanoseconds, a clock read a tenth of that.
                let step = map.save_step(STEP_KEYS, |node| {
                    capture.write_node(enc, node);
                    saved += 1;
                    saved % CLOCK_EVERY != 0 || started.elapsed() < STEP_TIME
                });
                // Handed straight to a command waiting for the shard: let
                // go plainly, the saver's next step took it back before a
                // woken waiter could, and a write waited out the shard.
                MutexGuard::unlock_fair(shard);
                step
            };
            // The saver shares cores with the threads serving clients,
            // and a scheduler lets a thread run for milliseconds before a
            // woken one preempts it: between steps it steps aside, so a
            // write during a save waits microseconds, not a time slice
            // (lock p99 during BGSAVE 0.04-0.06 ms, against 0.13 ms when
            // it stepped aside only every 100 us or when a command took
            // its shard, on a loaded machine).
            std::thread::yield_now();
            if let Some(delay) = capture.options.delay_for(saved) {
                std::thread::sleep(delay);
            }
            saver.send(false)?;
            capture.saved.fetch_add(saved, Ordering::Relaxed);
            let SaveStep::Done(aside) = step else {
                continue;
            };
            for node in &aside {
                let before = saver.enc.out.len();
                capture.write_node(&mut saver.enc, node);
                let bytes = saver.enc.out.len() - before;
                capture
                    .aside_bytes
                    .fetch_add(bytes as u64, Ordering::Relaxed);
                saver.send(false)?;
            }
            capture
                .saved
                .fetch_add(aside.len() as u64, Ordering::Relaxed);
            return Ok(());
        }
    }

    /// The count of changes since the start (Redis's `dirty`), one shard
    /// at a time.
    pub(crate) fn dirty(&self) -> u64 {
        (0..SHARDS)
            .map(|idx| self.wait_shard(idx).stats.dirty)
            .sum()
    }

    /// An empty keyspace of the same shape, which a load fills aside
    /// (`repl-diskless-load swapdb`) before `Locked::replace_all` swaps
    /// it in: nothing is recorded or published of what it holds.
    pub(crate) fn staging(&self) -> Keyspace {
        let staged = Keyspace::new(self.databases(), self.clock.clone());
        staged.set_limits(self.limits());
        staged
    }

    /// Loads keys read from a file, in one hold of their shards (loading
    /// key by key spent most of its time taking locks). A key already
    /// past its deadline is skipped, as Redis skips it, unless
    /// `keep_expired` (a replica: the primary's DEL will come; the
    /// append-only file's base: the records after it replay over every key
    /// it held); returns how many were skipped.
    /// `replace`: a key already held takes the loaded value (DEBUG RELOAD
    /// MERGE); otherwise a key named twice is refused, as Redis stops on
    /// it, rather than one of its values silently dropped.
    pub(crate) fn load_keys(
        &self,
        batch: &mut Vec<LoadedKey>,
        keep_expired: bool,
        replace: bool,
    ) -> CmdResult<u64> {
        let plan = LockPlan::for_keys(batch.iter().map(|k| &k.key[..]));
        let mut locked = self.lock(&plan)?;
        let now = locked.now();
        let mut expired = 0;
        for LoadedKey {
            db,
            key,
            value,
            meta,
        } in batch.drain(..)
        {
            let ttl = match meta.expire_ms {
                Some(at) if at < now as i64 && !keep_expired => {
                    expired += 1;
                    continue;
                }
                Some(at) => Ttl::At(at as u64),
                None => Ttl::Clear,
            };
            let mut target = locked.db(db);
            if !replace && target.exists(&key)? {
                return Err(CmdError::Other(format!(
                    "duplicated key '{}' in DB {db}",
                    String::from_utf8_lossy(&key)
                )));
            }
            target.insert(&key, value, ttl)?;
            let clock = match (meta.freq, meta.idle) {
                (Some(freq), _) => Some(AccessClock::freq(freq, now)),
                (None, Some(idle)) => Some(AccessClock::idle(idle, now)),
                (None, None) => None,
            };
            if let Some(clock) = clock {
                target.set_access(&key, clock)?;
            }
        }
        Ok(expired)
    }
}
