//! A background job's record (an AOF rewrite, a BGSAVE): when it started
//! and how the last one ended, as INFO persistence reports them. Its own
//! room so that the snapshot and the AOF, which each run one, share it
//! without importing each other.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::Mutex;

/// When a background job (a rewrite, a BGSAVE) started and how the last
/// one ended, for INFO persistence.
pub struct JobRecord {
    started: Mutex<Option<Instant>>,
    last_ok: AtomicBool,
    /// How long the last one took; -1 before any.
    last_secs: AtomicI64,
    /// How many started (`aof_rewrites`).
    started_count: AtomicU64,
    /// Failures since the last success (`aof_rewrites_consecutive_failures`).
    failures_in_a_row: AtomicU64,
}

impl Default for JobRecord {
    fn default() -> Self {
        JobRecord {
            started: Mutex::new(None),
            last_ok: AtomicBool::new(true),
            last_secs: AtomicI64::new(-1),
            started_count: AtomicU64::new(0),
            failures_in_a_row: AtomicU64::new(0),
        }
    }
}

impl JobRecord {
    pub fn start(&self) {
        *self.started.lock() = Some(Instant::now());
        self.started_count.fetch_add(1, Ordering::Relaxed);
    }

    pub fn end(&self, ok: bool) {
        self.end_stopped();
        self.last_ok.store(ok, Ordering::Relaxed);
        if ok {
            self.failures_in_a_row.store(0, Ordering::Relaxed);
        } else {
            self.failures_in_a_row.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Ends the one under way without a verdict: it was stopped on
    /// purpose, and the last one's status stands.
    pub fn end_stopped(&self) {
        let secs = self
            .started
            .lock()
            .take()
            .map_or(0, |s| s.elapsed().as_secs() as i64);
        self.last_secs.store(secs, Ordering::Relaxed);
    }

    pub fn started_count(&self) -> u64 {
        self.started_count.load(Ordering::Relaxed)
    }

    pub fn failures_in_a_row(&self) -> u64 {
        self.failures_in_a_row.load(Ordering::Relaxed)
    }

    pub fn last_ok(&self) -> bool {
        self.last_ok.load(Ordering::Relaxed)
    }

    /// A job done another way (SAVE for BGSAVE) went well.
    pub fn mark_ok(&self) {
        self.last_ok.store(true, Ordering::Relaxed);
    }

    pub fn last_secs(&self) -> i64 {
        self.last_secs.load(Ordering::Relaxed)
    }

    /// How long the one under way has run; -1 when none runs.
    pub fn current_secs(&self) -> i64 {
        self.started
            .lock()
            .map_or(-1, |s| s.elapsed().as_secs() as i64)
    }
}
