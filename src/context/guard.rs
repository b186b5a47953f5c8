//! What refuses a command for the server's state rather than its own
//! arguments, as Redis does before running one: memory over `maxmemory`
//! (`-OOM`, for commands that may grow the data) and too few replicas for
//! `min-replicas-to-write` (`-NOREPLICAS`, for writes; rlockd has none),
//! and a read-only replica (`-READONLY`, for writes from anyone but its
//! primary) or one not serving stale data (`-MASTERDOWN` while its link
//! is down). Off by default, and then a command pays one relaxed load.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::config::Config;

#[derive(Default)]
pub struct StateGuard {
    /// Either check is on: the only thing read when neither is.
    armed: AtomicBool,
    /// `maxmemory` under the `noeviction` policy, else 0. rlockd evicts no
    /// key; under the evicting policies it keeps taking writes (README), as
    /// Redis does while eviction makes room.
    memory_limit: AtomicU64,
    /// `min-replicas-to-write` asks for replicas within
    /// `min-replicas-max-lag`, and a lone server has none.
    replicas_missing: AtomicBool,
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
        let missing = config.min_replicas_to_write > 0 && config.min_replicas_max_lag > 0;
        let replica = self.replica.load(Ordering::Relaxed);
        let read_only = config.replica_read_only && replica;
        let no_stale = !config.replica_serve_stale_data && replica;
        self.memory_limit.store(limit, Ordering::Relaxed);
        self.replicas_missing.store(missing, Ordering::Relaxed);
        self.read_only.store(read_only, Ordering::Relaxed);
        self.no_stale.store(no_stale, Ordering::Relaxed);
        self.armed.store(
            limit > 0 || missing || read_only || no_stale,
            Ordering::Relaxed,
        );
    }

    /// REPLICAOF: the server became a replica (or a primary again).
    pub fn set_replica(&self, on: bool, config: &Config) {
        self.replica.store(on, Ordering::Relaxed);
        self.configure(config);
    }

    /// Whether commands not flagged `stale` wait for the link.
    pub fn no_stale(&self) -> bool {
        self.no_stale.load(Ordering::Relaxed)
    }

    pub fn read_only(&self) -> bool {
        self.read_only.load(Ordering::Relaxed)
    }

    pub fn armed(&self) -> bool {
        self.armed.load(Ordering::Relaxed)
    }

    pub fn out_of_memory(&self) -> bool {
        let limit = self.memory_limit.load(Ordering::Relaxed);
        limit > 0 && crate::util::alloc::used_memory() > limit
    }

    pub fn replicas_missing(&self) -> bool {
        self.replicas_missing.load(Ordering::Relaxed)
    }
}
