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
/// sleeping. Starts at the time it is created. A running one
/// ([`ManualClock::running`]) goes on as the system clock does, and moving
/// it steps it.
#[derive(Debug)]
pub struct ManualClock {
    /// Standing still: the time, in µs since the epoch. Running: how far it
    /// is from the system clock, in µs (wrapping, so a step back is a
    /// large number).
    micros: AtomicU64,
    running: bool,
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock {
            micros: AtomicU64::new(SystemClock.now_us()),
            running: false,
        }
    }
}

impl ManualClock {
    /// A clock that runs with the system clock until it is moved, and from
    /// where it was moved to after: a wall clock that an operator or NTP
    /// steps, which is what leases measured on it must survive.
    pub fn running() -> Self {
        ManualClock {
            micros: AtomicU64::new(0),
            running: true,
        }
    }

    pub fn advance(&self, by: Duration) {
        self.micros
            .fetch_add(by.as_micros() as u64, Ordering::AcqRel);
    }

    /// Sets the time; earlier times are allowed (deadlines are absolute).
    pub fn set(&self, to: SystemTime) {
        let micros = to
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        let value = if self.running {
            micros.wrapping_sub(SystemClock.now_us())
        } else {
            micros
        };
        self.micros.store(value, Ordering::Release);
    }

    pub fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_micros(self.now_us())
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now_us() / 1000
    }

    fn now_us(&self) -> u64 {
        let micros = self.micros.load(Ordering::Acquire);
        if self.running {
            SystemClock.now_us().wrapping_add(micros)
        } else {
            micros
        }
    }
}
