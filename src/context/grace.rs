//! A grace period: a span of server time (the clock leases are measured
//! by) during which a server refuses to grant locks, so that every lease
//! it may not know of has run out first. After a restart without
//! persistence (`lock-restart-grace-ms`) and after a promotion
//! (`lock-promotion-grace-ms`).

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Default)]
pub struct Grace {
    /// Server ms it ends at; 0: none.
    until_ms: AtomicU64,
}

impl Grace {
    /// Starts one of `length_ms` at `now_ms` (none for 0).
    pub fn start(&self, length_ms: u64, now_ms: u64) {
        if length_ms > 0 {
            let until = now_ms.saturating_add(length_ms);
            self.until_ms.store(until, Ordering::Relaxed);
        }
    }

    /// Whether it still runs. Every write asks, so the clock (`now_ms`) is
    /// read only while one is set, and one found over is cleared for good.
    pub fn active(&self, now_ms: impl FnOnce() -> u64) -> bool {
        self.left_ms(now_ms) > 0
    }

    /// How long it still runs, in ms (0: over, or none).
    pub fn left_ms(&self, now_ms: impl FnOnce() -> u64) -> u64 {
        let until = self.until_ms.load(Ordering::Relaxed);
        if until == 0 {
            return 0;
        }
        let left = until.saturating_sub(now_ms());
        if left == 0 {
            // One started meanwhile is left alone.
            let _ = self
                .until_ms
                .compare_exchange(until, 0, Ordering::Relaxed, Ordering::Relaxed);
        }
        left
    }
}
