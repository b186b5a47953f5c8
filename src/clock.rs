//! All time comes through here, so tests can substitute a clock they drive.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Wall-clock time in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + 'static {
    fn now_ms(&self) -> u64;

    fn now_us(&self) -> u64 {
        self.now_ms() * 1000
    }
}

#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        self.now_us() / 1000
    }

    fn now_us(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0)
    }
}

/// A clock that moves only when told to: tests make time pass instead of
/// sleeping. Starts at the time it is created.
#[derive(Debug)]
pub struct ManualClock {
    micros: AtomicU64,
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock {
            micros: AtomicU64::new(SystemClock.now_us()),
        }
    }
}

impl ManualClock {
    pub fn advance(&self, by: Duration) {
        self.micros
            .fetch_add(by.as_micros() as u64, Ordering::AcqRel);
    }

    /// Sets the time; earlier times are allowed (deadlines are absolute).
    pub fn set(&self, to: SystemTime) {
        let micros = to
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        self.micros.store(micros, Ordering::Release);
    }

    pub fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_micros(self.micros.load(Ordering::Acquire))
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now_us() / 1000
    }

    fn now_us(&self) -> u64 {
        self.micros.load(Ordering::Acquire)
    }
}
