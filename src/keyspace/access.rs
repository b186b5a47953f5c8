//! Each key's access clock, as Redis keeps one in every object's 24 bits:
//! under an LFU `maxmemory-policy` a counter that grows with use (less the
//! higher it is) and decays with time, and the minute it was last
//! decayed; under any other policy the second it was last used. OBJECT
//! IDLETIME and FREQ, DEBUG OBJECT and RESTORE's IDLETIME and FREQ read
//! and set it. Like Redis, the bits mean what the policy in force says:
//! switching policies makes old clocks read oddly until keys are used.

/// Redis 7.0's defaults for `lfu-log-factor` and `lfu-decay-time`.
const LFU_LOG_FACTOR: f64 = 10.0;
const LFU_DECAY_MINUTES: u64 = 1;
/// The counter a new key starts at under LFU (Redis's `LFU_INIT_VAL`).
pub const LFU_INIT: u8 = 5;

const BITS: u32 = 24;
const MASK: u64 = (1 << BITS) - 1;
/// The minutes an LFU clock holds, above its 8-bit counter.
const MINUTES_MASK: u64 = 0xffff;

/// A key's 24-bit access clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessClock(u32);

fn seconds(now_ms: u64) -> u64 {
    (now_ms / 1000) & MASK
}

fn minutes(now_ms: u64) -> u64 {
    (now_ms / 60_000) & MINUTES_MASK
}

impl AccessClock {
    pub(super) fn from_bits(bits: u32) -> AccessClock {
        AccessClock(bits & MASK as u32)
    }

    #[inline]
    pub fn bits(self) -> u32 {
        self.0
    }

    /// A new key's clock: just used, or under LFU a new key's counter.
    #[inline]
    pub fn fresh(now_ms: u64, lfu: bool) -> AccessClock {
        if lfu {
            AccessClock::freq(LFU_INIT, now_ms)
        } else {
            AccessClock(seconds(now_ms) as u32)
        }
    }

    /// Used `idle_secs` seconds ago (RESTORE's IDLETIME).
    pub fn idle(idle_secs: u64, now_ms: u64) -> AccessClock {
        AccessClock(((seconds(now_ms) + (1 << BITS) - idle_secs % (1 << BITS)) & MASK) as u32)
    }

    /// An LFU counter as of now (RESTORE's FREQ).
    pub fn freq(counter: u8, now_ms: u64) -> AccessClock {
        AccessClock(((minutes(now_ms) << 8) | u64::from(counter)) as u32)
    }

    /// OBJECT IDLETIME's seconds: from the second kept to now, the clock
    /// wrapping as Redis's does.
    pub fn idle_secs(self, now_ms: u64) -> u64 {
        (seconds(now_ms) + (1 << BITS) - u64::from(self.0)) & MASK
    }

    /// OBJECT FREQ's counter, less a step per minute since it was kept.
    pub fn decayed_freq(self, now_ms: u64) -> u8 {
        let kept = u64::from(self.0 >> 8);
        let elapsed = (minutes(now_ms) + (MINUTES_MASK + 1) - kept) & MINUTES_MASK;
        let periods = elapsed / LFU_DECAY_MINUTES;
        (self.0 as u8).saturating_sub(periods.min(255) as u8)
    }

    /// The LFU clock after a use: the counter decays, then grows by one
    /// with Redis's odds, lower the higher it is. (Under LRU a use makes
    /// the clock `fresh`.)
    pub fn counted(self, now_ms: u64) -> AccessClock {
        let counter = self.decayed_freq(now_ms);
        let base = f64::from(counter.saturating_sub(LFU_INIT));
        let grows =
            counter < u8::MAX && rand::random::<f64>() < 1.0 / (base * LFU_LOG_FACTOR + 1.0);
        AccessClock::freq(counter + grows as u8, now_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_clocks_count_seconds_and_restart_on_use() {
        let at = 1_700_000_000_000;
        let idle = AccessClock::idle(1000, at);
        assert_eq!(idle.idle_secs(at), 1000);
        assert_eq!(idle.idle_secs(at + 5_500), 1005);
        assert_eq!(
            AccessClock::fresh(at + 5_500, false).idle_secs(at + 5_500),
            0
        );
        assert_eq!(AccessClock::fresh(at, false).idle_secs(at + 61_000), 61);
        // Past the clock's 24 bits (194 days) idle times wrap, as Redis's.
        assert_eq!(AccessClock::idle(1 << 24, at).idle_secs(at), 0);
    }

    #[test]
    fn counters_decay_a_step_a_minute_and_saturate() {
        let at = 1_700_000_000_000;
        let freq = AccessClock::freq(100, at);
        assert_eq!(freq.decayed_freq(at), 100);
        assert_eq!(freq.decayed_freq(at + 3 * 60_000), 97);
        assert_eq!(freq.decayed_freq(at + 1_000 * 60_000), 0);
        assert_eq!(AccessClock::fresh(at, true).decayed_freq(at), LFU_INIT);
        // A high counter rarely grows; it never passes 255.
        let used = freq.counted(at).decayed_freq(at);
        assert!((100..=101).contains(&used));
        assert_eq!(AccessClock::freq(255, at).counted(at).decayed_freq(at), 255);
    }
}
