//! The latency monitor: events (`command`, `fast-command`, `expire-cycle`)
//! that took at least `latency-monitor-threshold` milliseconds, one sample
//! per second per event (the worst), the last 160 kept, as Redis keeps them.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use crate::config::Config;

/// Samples kept per event.
const HISTORY: usize = 160;

#[derive(Clone, Copy)]
pub struct Sample {
    pub unix_secs: u64,
    pub millis: u64,
}

#[derive(Default)]
pub struct Event {
    pub samples: VecDeque<Sample>,
    /// The worst ever seen, even once its sample has left the history.
    pub max: u64,
}

#[derive(Default)]
pub struct LatencyMonitor {
    /// In milliseconds; 0 is off. Read by every command, so kept out of the
    /// config lock.
    threshold_ms: AtomicU64,
    events: Mutex<BTreeMap<String, Event>>,
}

impl LatencyMonitor {
    pub fn configure(&self, config: &Config) {
        let ms = u64::try_from(config.latency_monitor_threshold).unwrap_or(0);
        self.threshold_ms.store(ms, Ordering::Relaxed);
    }

    /// Records `took` under `event` when it reaches the threshold.
    pub fn observe(&self, event: &str, took: Duration) {
        let threshold = self.threshold_ms.load(Ordering::Relaxed);
        if threshold == 0 {
            return;
        }
        let millis = took.as_millis() as u64;
        if millis < threshold {
            return;
        }
        let unix_secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut events = self.events.lock();
        let entry = events.entry(event.to_string()).or_default();
        entry.max = entry.max.max(millis);
        match entry.samples.back_mut() {
            Some(last) if last.unix_secs == unix_secs => last.millis = last.millis.max(millis),
            _ => {
                if entry.samples.len() == HISTORY {
                    entry.samples.pop_front();
                }
                entry.samples.push_back(Sample { unix_secs, millis });
            }
        }
    }

    /// Runs `read` over every event, by name.
    pub fn with_events<T>(&self, read: impl FnOnce(&BTreeMap<String, Event>) -> T) -> T {
        read(&self.events.lock())
    }

    /// Forgets the named events (all of them for none); how many there were.
    pub fn reset(&self, names: &[String]) -> usize {
        let mut events = self.events.lock();
        if names.is_empty() {
            let n = events.len();
            events.clear();
            return n;
        }
        names.iter().filter(|n| events.remove(*n).is_some()).count()
    }
}
