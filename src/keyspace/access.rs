//! Access clocks that RESTORE gives a key (IDLETIME, or FREQ under an LFU
//! policy), for OBJECT IDLETIME / FREQ to answer as Redis does. rlockd
//! keeps no clock per key otherwise (a key reads as just used, and as new
//! under LFU), so only keys restored that way have one, in a side table
//! that costs the lock workload nothing: a key's record goes when the key
//! does, and an idle clock when the key is next used.

use bytes::Bytes;

/// Redis 7.0's defaults for `lfu-log-factor` and `lfu-decay-time`.
const LFU_LOG_FACTOR: f64 = 10.0;
const LFU_DECAY_MINUTES: u64 = 1;
/// The counter a new key starts at under LFU (Redis's `LFU_INIT_VAL`).
pub const LFU_INIT: u8 = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Last used at this Unix second.
    Idle { since_s: u64 },
    /// Redis's logarithmic access counter, as of this Unix minute.
    Freq { counter: u8, minute: u64 },
}

impl Access {
    pub fn idle(idle_secs: u64, now_ms: u64) -> Access {
        Access::Idle {
            since_s: (now_ms / 1000).saturating_sub(idle_secs),
        }
    }

    pub fn freq(counter: u8, now_ms: u64) -> Access {
        Access::Freq {
            counter,
            minute: now_ms / 60_000,
        }
    }

    /// OBJECT IDLETIME's seconds; `None` for a frequency record.
    pub fn idle_secs(self, now_ms: u64) -> Option<u64> {
        match self {
            Access::Idle { since_s } => Some((now_ms / 1000).saturating_sub(since_s)),
            Access::Freq { .. } => None,
        }
    }

    /// OBJECT FREQ's counter, less a step per minute unused; `None` for an
    /// idle record.
    pub fn decayed_freq(self, now_ms: u64) -> Option<u8> {
        match self {
            Access::Freq { counter, minute } => {
                let periods = (now_ms / 60_000).saturating_sub(minute) / LFU_DECAY_MINUTES;
                Some(counter.saturating_sub(periods.min(255) as u8))
            }
            Access::Idle { .. } => None,
        }
    }

    /// The record after the key is used: an idle clock is over (the key
    /// reads as just used again); a counter decays, then grows by one with
    /// Redis's odds, lower the higher it is.
    pub fn used(self, now_ms: u64) -> Option<Access> {
        let counter = self.decayed_freq(now_ms)?;
        let base = f64::from(counter.saturating_sub(LFU_INIT));
        let grows =
            counter < u8::MAX && rand::random::<f64>() < 1.0 / (base * LFU_LOG_FACTOR + 1.0);
        Some(Access::freq(counter + grows as u8, now_ms))
    }
}

/// Records by (database, key).
pub type AccessMap = super::Map<(u32, Bytes), Access>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_clocks_count_seconds_and_end_on_use() {
        let at = 1_700_000_000_000;
        let idle = Access::idle(1000, at);
        assert_eq!(idle.idle_secs(at), Some(1000));
        assert_eq!(idle.idle_secs(at + 5_500), Some(1005));
        assert_eq!(idle.decayed_freq(at), None);
        assert_eq!(idle.used(at), None);
    }

    #[test]
    fn counters_decay_a_step_a_minute_and_saturate() {
        let at = 1_700_000_000_000;
        let freq = Access::freq(100, at);
        assert_eq!(freq.decayed_freq(at), Some(100));
        assert_eq!(freq.decayed_freq(at + 3 * 60_000), Some(97));
        assert_eq!(freq.decayed_freq(at + 1_000 * 60_000), Some(0));
        assert_eq!(freq.idle_secs(at), None);
        // A high counter rarely grows; it never passes 255.
        let used = freq.used(at).and_then(|a| a.decayed_freq(at)).unwrap();
        assert!((100..=101).contains(&used));
        let top = Access::freq(255, at)
            .used(at)
            .and_then(|a| a.decayed_freq(at));
        assert_eq!(top, Some(255));
    }
}
