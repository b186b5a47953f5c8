//! The keyspace as RDB keys, as it was at one point in time, taken while
//! clients go on (BGSAVE, SAVE, DEBUG RELOAD), and RDB keys loaded back.
//!
//! Redis gets its point in time from fork(): the child sees the memory as
//! it was. Here a capture starts by holding every shard at once, which
//! orders it against every command (each holds the shards it touches),
//! and marks each shard as owed. Whoever takes a shard next, the saver
//! walking them or any command or expiry pass, first encodes the owed
//! shard before it can change anything in it. So every shard is encoded
//! exactly as it was when the capture started: the same state a fork at
//! that instant would have copied, whatever writes come after. A command
//! pays at most once per shard, for 1/`SHARDS` of the keyspace.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use super::access::AccessClock;
use super::dump::write_value;
use super::shard::Shard;
use super::slot::SHARDS;
use super::{Keyspace, LockPlan, Ttl, Value};
use crate::error::CmdResult;
use crate::persist::rdb::{Encoder, KeyMeta, key_prefix};

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
}

/// One database's keys, framed as RDB keys, in parts (one per shard).
#[derive(Default)]
pub(crate) struct DbImage {
    pub parts: Vec<Vec<u8>>,
    pub keys: u64,
    pub expires: u64,
}

/// A capture under way: the shards still owed and the parts done.
pub(crate) struct Capture {
    at_ms: u64,
    /// The keyspace's change counter at that moment.
    pub dirty: u64,
    /// The replication stream's offset at that moment: a replica synced
    /// from this capture continues after it.
    pub repl_offset: i64,
    options: CaptureOptions,
    owed: Box<[AtomicBool]>,
    /// Per shard, per database.
    parts: Mutex<Vec<Option<Vec<DbImage>>>>,
}

impl Capture {
    /// Encodes `shard` (number `idx`, held by the caller) if it is owed.
    fn settle(&self, idx: usize, shard: &Shard) {
        if !self.owed[idx].swap(false, Ordering::AcqRel) {
            return;
        }
        let images = shard
            .dbs
            .iter()
            .map(|map| {
                let mut image = DbImage::default();
                let mut enc = Encoder::new(self.options.compress);
                for node in map.iter().filter(|n| !n.is_expired(self.at_ms)) {
                    let expire_at = node.expire_at();
                    let clock = node.clock();
                    let meta = KeyMeta {
                        expire_ms: expire_at.map(|at| at as i64),
                        idle: (self.options.clocks == Clocks::Lru)
                            .then(|| clock.idle_secs(self.at_ms)),
                        freq: (self.options.clocks == Clocks::Lfu)
                            .then(|| clock.decayed_freq(self.at_ms)),
                    };
                    write_key(&mut enc, &meta, node.key(), &node.entry().value);
                    image.keys += 1;
                    image.expires += u64::from(expire_at.is_some());
                }
                image.parts.push(enc.out);
                image
            })
            .collect();
        self.parts.lock()[idx] = Some(images);
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
    // The value's encoding starts with its type byte, which the file
    // wants before the key's name: the name is written after the value,
    // then turned in place to sit between them.
    let body = enc.out.len() + 1;
    write_value(enc, value);
    let name = enc.out.len();
    enc.string(key);
    enc.out[body..].rotate_left(name - body);
}

impl Keyspace {
    /// Starts a capture as of now (see the module's doc). One at a time:
    /// the caller ends it with `end_capture` before starting another.
    pub(crate) fn begin_capture(&self, options: CaptureOptions) -> Arc<Capture> {
        let guards: Vec<_> = (0..SHARDS).map(|idx| self.wait_shard(idx)).collect();
        let capture = Arc::new(Capture {
            at_ms: self.clock.now_ms(),
            dirty: guards.iter().map(|g| g.stats.dirty).sum(),
            repl_offset: self.backlog.get().map_or(0, |b| b.sync_point()),
            options,
            owed: (0..SHARDS).map(|_| AtomicBool::new(true)).collect(),
            parts: Mutex::new((0..SHARDS).map(|_| None).collect()),
        });
        *self.capture.write() = Some(capture.clone());
        // Set while every shard is held: whoever takes one next sees it.
        self.capturing.store(true, Ordering::Release);
        drop(guards);
        capture
    }

    /// Encodes the shards no command has taken since the capture began,
    /// one at a time, and ends it: each database's keys, in order.
    pub(crate) fn end_capture(&self, capture: &Capture) -> Vec<DbImage> {
        for idx in 0..SHARDS {
            // Taking the shard settles it.
            drop(self.wait_shard(idx));
        }
        self.capturing.store(false, Ordering::Release);
        *self.capture.write() = None;
        let mut dbs: Vec<DbImage> = (0..self.databases()).map(|_| DbImage::default()).collect();
        for shard in capture.parts.lock().drain(..).flatten() {
            for (db, image) in dbs.iter_mut().zip(shard) {
                db.keys += image.keys;
                db.expires += image.expires;
                db.parts
                    .extend(image.parts.into_iter().filter(|p| !p.is_empty()));
            }
        }
        dbs
    }

    /// Called with shard `idx` just taken: encodes it first if a capture
    /// still owes it. One relaxed load when no capture runs.
    #[inline]
    pub(super) fn settle(&self, idx: usize, shard: &Shard) {
        if self.capturing.load(Ordering::Relaxed)
            && let Some(capture) = self.capture.read().as_ref()
        {
            capture.settle(idx, shard);
        }
    }

    /// The count of changes since the start (Redis's `dirty`), one shard
    /// at a time.
    pub(crate) fn dirty(&self) -> u64 {
        (0..SHARDS)
            .map(|idx| self.wait_shard(idx).stats.dirty)
            .sum()
    }

    /// Loads keys read from a file, in one hold of their shards (loading
    /// key by key spent most of its time taking locks). A key already
    /// past its deadline is skipped, as Redis skips it, unless
    /// `keep_expired` (a replica: the primary's DEL will come); returns
    /// how many were skipped.
    pub(crate) fn load_keys(
        &self,
        batch: &mut Vec<LoadedKey>,
        keep_expired: bool,
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
            let mut db = locked.db(db);
            db.insert(&key, value, ttl)?;
            let clock = match (meta.freq, meta.idle) {
                (Some(freq), _) => Some(AccessClock::freq(freq, now)),
                (None, Some(idle)) => Some(AccessClock::idle(idle, now)),
                (None, None) => None,
            };
            if let Some(clock) = clock {
                db.set_access(&key, clock)?;
            }
        }
        Ok(expired)
    }
}
