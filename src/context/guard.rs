//! What refuses a command for the server's state rather than its own
//! arguments, as Redis does before running one: memory over `maxmemory`
//! (`-OOM`, for commands that may grow the data) and too few replicas for
//! `min-replicas-to-write` or `lock-sync-replicas` (`-NOREPLICAS`, for
//! writes, on a primary),
//! a failed background save under `stop-writes-on-bgsave-error` with
//! `save` points (`-MISCONF`, for writes and PING), and a read-only
//! replica (`-READONLY`, for writes from anyone but its primary) or one
//! not serving stale data (`-MASTERDOWN` while its link is down). Off by
//! default, and then a command pays one relaxed load.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::config::Config;

#[derive(Default)]
pub struct StateGuard {
    /// Either check is on: the only thing read when neither is.
    armed: AtomicBool,
    /// `maxmemory` under the `noeviction` policy, else 0. rlockd evicts no
    /// key; under the evicting policies it keeps taking writes (docs/compatibility.md), as
    /// Redis does while eviction makes room.
    memory_limit: AtomicU64,
    /// How many replicas `min-replicas-to-write` or `lock-sync-replicas`
    /// asks for, the higher (0: none).
    min_replicas: AtomicUsize,
    /// `lock-sync-replicas`: how many replicas each write's reply waits
    /// for (0: the safe mode is off).
    sync_replicas: AtomicUsize,
    /// How many acknowledged within `min-replicas-max-lag` at the last
    /// look (each second, and as replicas come, go and acknowledge).
    good_replicas: AtomicUsize,
    /// The last background save failed (whether that refuses writes is
    /// the config's to say, read only then).
    save_failed: AtomicBool,
    /// This server follows a primary…
    replica: AtomicBool,
    /// …and `replica-read-only` says clients may not write to it.
    read_only: AtomicBool,
    /// …and `replica-serve-stale-data no` says it answers little while
    /// its link is down.
    no_stale: AtomicBool,
}

pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";
pub const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";
pub const MISCONF: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.";
/// Redis's refusal while its data loads; rlockd's too through a grace
/// period (clients retry it).
pub const LOADING: &str = "LOADING Redis is loading the dataset in memory";
pub const READONLY: &str = "READONLY You can't write against a read only replica.";
pub const MASTERDOWN: &str =
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";

impl StateGuard {
    pub fn configure(&self, config: &Config) {
        let limit = if config.maxmemory_policy == "noeviction" {
            config.maxmemory
        } else {
            0
        };
        let redis_minimum = if config.min_replicas_max_lag > 0 {
            config.min_replicas_to_write.max(0) as usize
        } else {
            0
        };
        // The safe mode refuses a write it could not get acknowledged
        // before running it, as `min-replicas-to-write` does.
        let sync_replicas = config.lock_sync_replicas.max(0) as usize;
        let min_replicas = redis_minimum.max(sync_replicas);
        self.sync_replicas.store(sync_replicas, Ordering::Relaxed);
        let replica = self.replica.load(Ordering::Relaxed);
        self.memory_limit.store(limit, Ordering::Relaxed);
        self.min_replicas.store(min_replicas, Ordering::Relaxed);
        self.read_only
            .store(config.replica_read_only && replica, Ordering::Relaxed);
        self.no_stale.store(
            !config.replica_serve_stale_data && replica,
            Ordering::Relaxed,
        );
        self.rearm();
    }

    /// REPLICAOF: the server became a replica (or a primary again).
    pub fn set_replica(&self, on: bool, config: &Config) {
        self.replica.store(on, Ordering::Relaxed);
        self.configure(config);
    }

    pub fn read_only(&self) -> bool {
        self.read_only.load(Ordering::Relaxed)
    }

    /// Whether commands not flagged `stale` wait for the link.
    pub fn no_stale(&self) -> bool {
        self.no_stale.load(Ordering::Relaxed)
    }

    /// Notes how the last background save ended.
    pub fn set_save_failed(&self, failed: bool) {
        self.save_failed.store(failed, Ordering::Relaxed);
        self.rearm();
    }

    /// Whether writes are refused for a failed save under `config`.
    pub fn disk_error(&self, config: &Config) -> bool {
        self.save_failed.load(Ordering::Relaxed)
            && config.stop_writes_on_bgsave_error
            && !config.save.is_empty()
    }

    fn rearm(&self) {
        let armed = self.memory_limit.load(Ordering::Relaxed) > 0
            || self.min_replicas.load(Ordering::Relaxed) > 0
            || self.save_failed.load(Ordering::Relaxed)
            || self.read_only.load(Ordering::Relaxed)
            || self.no_stale.load(Ordering::Relaxed);
        self.armed.store(armed, Ordering::Relaxed);
    }

    pub fn armed(&self) -> bool {
        self.armed.load(Ordering::Relaxed)
    }

    /// Whether a lock script may run natively, without Lua's check of each
    /// call: nothing is armed but the replica count (the safe mode's, or
    /// `min-replicas-to-write`), and that is met, so every call would pass.
    pub fn allows_native(&self) -> bool {
        !self.armed()
            || (self.memory_limit.load(Ordering::Relaxed) == 0
                && !self.save_failed.load(Ordering::Relaxed)
                && !self.read_only.load(Ordering::Relaxed)
                && !self.no_stale.load(Ordering::Relaxed)
                && !self.replicas_missing())
    }

    pub fn out_of_memory(&self) -> bool {
        let limit = self.memory_limit.load(Ordering::Relaxed);
        limit > 0 && crate::util::alloc::used_memory() > limit
    }

    /// Whether writes are refused for too few good replicas (never on a
    /// replica, as in Redis).
    pub fn replicas_missing(&self) -> bool {
        let min = self.min_replicas.load(Ordering::Relaxed);
        min > 0
            && !self.replica.load(Ordering::Relaxed)
            && self.good_replicas.load(Ordering::Relaxed) < min
    }

    /// How many replicas a write's reply waits for (0: none); every write
    /// asks.
    pub fn sync_replicas(&self) -> usize {
        self.sync_replicas.load(Ordering::Relaxed)
    }

    pub fn set_good_replicas(&self, good: usize) {
        self.good_replicas.store(good, Ordering::Relaxed);
    }
}
