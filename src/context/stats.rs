//! INFO's counters (stats, commandstats, LATENCY HISTOGRAM). Every command
//! bumps several of them, on whichever worker thread runs it: kept as one
//! set, they were cache lines that every core wrote, and the cost of each
//! command grew with the number of cores serving. Each thread bumps a
//! stripe of its own instead (a command's counters: made the first time
//! the thread counts something); a reader adds the stripes up.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::util::stripe::{self, Counter, STRIPES};

/// Up to 2^31 µs (about 36 minutes); slower calls count in the last.
pub const HISTOGRAM_BUCKETS: usize = 32;

/// The bucket of a call that took `micros`.
fn histogram_bucket(micros: u64) -> usize {
    let bits = (u64::BITS - micros.saturating_sub(1).leading_zeros()) as usize;
    bits.min(HISTOGRAM_BUCKETS - 1)
}

#[derive(Default)]
struct CommandCounters {
    calls: AtomicU64,
    usec: AtomicU64,
    failed: AtomicU64,
    rejected: AtomicU64,
    histogram: [AtomicU64; HISTOGRAM_BUCKETS],
}

/// One thread's command counters, in an allocation of their own.
struct Stripe(Box<[CommandCounters]>);

/// One command's counts, all stripes added up.
#[derive(Default)]
pub struct CommandTotals {
    pub calls: u64,
    pub usec: u64,
    pub failed: u64,
    pub rejected: u64,
    /// Calls by duration: bucket `i` counts those of at most 2^i
    /// microseconds (and more than half that).
    pub histogram: [u64; HISTOGRAM_BUCKETS],
}

pub struct Stats {
    // Bumped by the accept loop alone: not striped.
    pub connections_received: AtomicU64,
    pub rejected_connections: AtomicU64,
    commands_processed: Counter,
    net_input_bytes: Counter,
    net_output_bytes: Counter,
    commands: usize,
    stripes: [OnceLock<Stripe>; STRIPES],
    /// Error replies by their first word (`ERR`, `WRONGTYPE`…), for INFO errorstats.
    errors: parking_lot::Mutex<BTreeMap<String, u64>>,
}

impl Stats {
    /// Counters for `commands` commands and subcommands.
    pub fn new(commands: usize) -> Self {
        Stats {
            connections_received: AtomicU64::new(0),
            rejected_connections: AtomicU64::new(0),
            commands_processed: Counter::default(),
            net_input_bytes: Counter::default(),
            net_output_bytes: Counter::default(),
            commands,
            stripes: Default::default(),
            errors: Default::default(),
        }
    }

    fn mine(&self) -> &Stripe {
        self.stripes[stripe::mine()]
            .get_or_init(|| Stripe((0..self.commands).map(|_| Default::default()).collect()))
    }

    fn made(&self) -> impl Iterator<Item = &Stripe> {
        self.stripes.iter().filter_map(OnceLock::get)
    }

    pub fn record_call(&self, id: usize, took: Duration, failed: bool) {
        let counters = &self.mine().0[id];
        let micros = took.as_micros() as u64;
        counters.calls.fetch_add(1, Ordering::Relaxed);
        counters.usec.fetch_add(micros, Ordering::Relaxed);
        counters.histogram[histogram_bucket(micros)].fetch_add(1, Ordering::Relaxed);
        if failed {
            counters.failed.fetch_add(1, Ordering::Relaxed);
        }
        self.commands_processed.add(1);
    }

    pub fn record_error(&self, code: &str) {
        *self.errors.lock().entry(code.to_string()).or_default() += 1;
    }

    /// A blocked command that ended with an error (its call was counted
    /// when it blocked).
    pub fn record_unblocked_error(&self, id: Option<usize>, code: &str) {
        if let Some(id) = id {
            self.mine().0[id].failed.fetch_add(1, Ordering::Relaxed);
        }
        self.record_error(code);
    }

    /// A known command refused before it ran (arity, authentication).
    pub fn record_rejected(&self, id: usize) {
        self.mine().0[id].rejected.fetch_add(1, Ordering::Relaxed);
    }

    pub fn add_input(&self, bytes: usize) {
        self.net_input_bytes.add(bytes as u64);
    }

    pub fn add_output(&self, bytes: usize) {
        self.net_output_bytes.add(bytes as u64);
    }

    pub fn commands_processed(&self) -> u64 {
        self.commands_processed.get()
    }

    pub fn net_input_bytes(&self) -> u64 {
        self.net_input_bytes.get()
    }

    pub fn net_output_bytes(&self) -> u64 {
        self.net_output_bytes.get()
    }

    /// Command `id`'s counts.
    pub fn command(&self, id: usize) -> CommandTotals {
        let mut totals = CommandTotals::default();
        for stripe in self.made() {
            let c = &stripe.0[id];
            totals.calls += c.calls.load(Ordering::Relaxed);
            totals.usec += c.usec.load(Ordering::Relaxed);
            totals.failed += c.failed.load(Ordering::Relaxed);
            totals.rejected += c.rejected.load(Ordering::Relaxed);
            for (sum, bucket) in totals.histogram.iter_mut().zip(&c.histogram) {
                *sum += bucket.load(Ordering::Relaxed);
            }
        }
        totals
    }

    /// Every command's counts, by id.
    pub fn commands(&self) -> impl Iterator<Item = (usize, CommandTotals)> + '_ {
        (0..self.commands).map(|id| (id, self.command(id)))
    }

    /// INFO errorstats' counts, by error code.
    pub fn errors(&self) -> BTreeMap<String, u64> {
        self.errors.lock().clone()
    }

    pub fn reset(&self) {
        self.errors.lock().clear();
        self.connections_received.store(0, Ordering::Relaxed);
        self.rejected_connections.store(0, Ordering::Relaxed);
        for total in [
            &self.commands_processed,
            &self.net_input_bytes,
            &self.net_output_bytes,
        ] {
            total.reset();
        }
        for stripe in self.made() {
            for c in &stripe.0 {
                for counter in [&c.calls, &c.usec, &c.failed, &c.rejected] {
                    counter.store(0, Ordering::Relaxed);
                }
                for bucket in &c.histogram {
                    bucket.store(0, Ordering::Relaxed);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_many_threads_add_up() {
        let stats = Stats::new(3);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..100 {
                        stats.record_call(1, Duration::from_micros(3), false);
                    }
                    stats.record_call(2, Duration::from_micros(1), true);
                    stats.record_rejected(2);
                    stats.add_input(10);
                    stats.add_output(7);
                });
            }
        });
        let one = stats.command(1);
        assert_eq!((one.calls, one.usec, one.failed), (400, 1200, 0));
        // 3 µs falls in the bucket of calls up to 4 µs.
        assert_eq!(one.histogram[2], 400);
        let two = stats.command(2);
        assert_eq!((two.calls, two.failed, two.rejected), (4, 4, 4));
        assert_eq!(two.histogram[0], 4);
        assert_eq!(stats.commands_processed(), 404);
        assert_eq!(
            (stats.net_input_bytes(), stats.net_output_bytes()),
            (40, 28)
        );
        stats.reset();
        assert_eq!(stats.commands().map(|(_, c)| c.calls).sum::<u64>(), 0);
        assert_eq!(stats.commands_processed(), 0);
    }
}
