//! The context commands run in: state shared by every connection of one
//! server instance ([`Shared`]) and the state of one client ([`Client`]).
//! It sits below the command layer so that command families, scripting's
//! callers and the connection all depend downward on it.

pub mod acl;
pub mod client;
pub mod failover;
mod fault;
pub mod full_sync;
pub mod grace;
pub mod guard;
pub mod introspect;
mod job;
pub mod latency;
pub mod listening;
pub mod persistence;
pub mod renames;
pub mod replica;
pub mod replicas;
pub mod safe_mode;
pub mod slowlog;
pub mod snapshot;
pub mod stats;

pub use client::{Client, ReplyMode, WatchState};
pub use fault::{Faults, PauseMode};
pub use introspect::{HeldLock, LockKind, LockOwner, Waiters};
pub use stats::Stats;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use dashmap::DashMap;
use parking_lot::{Mutex, RwLock};

use crate::client_handle::ClientHandle;
use crate::clock::{Clock, ManualClock};
use crate::cluster::ClusterNode;
use crate::config::{Config, Hook};
use crate::keyspace::{Keyspace, LockPlan};
use crate::pubsub::PubSub;

pub struct Shared {
    /// ACL users and the log of refusals.
    pub acl: acl::Acl,
    pub keyspace: Keyspace,
    pub scripts: crate::scripting::ScriptEngine,
    /// Subscriptions and message delivery; the keyspace publishes its
    /// events here too.
    pub pubsub: Arc<PubSub>,
    pub config: RwLock<Config>,
    /// Held by a CONFIG SET from reading the settings to storing them, so
    /// two at once cannot leave the listeners (or any hook) following one
    /// and the settings saying the other.
    pub config_set: Mutex<()>,
    pub clients: DashMap<u64, Arc<ClientHandle>>,
    pub stats: Stats,
    pub slowlog: slowlog::SlowLog,
    pub latency: latency::LatencyMonitor,
    next_client_id: AtomicU64,
    pub started_ms: u64,
    pub run_id: String,
    /// This server's identity as a cluster node, in cluster mode only.
    pub cluster: Option<ClusterNode>,
    /// Set when time moves only when a test says so.
    pub manual_clock: Option<Arc<ManualClock>>,
    /// CLIENT PAUSE and the test API's injected faults.
    pub faults: Faults,
    /// Bumped by every CONFIG SET, for whoever applies settings outside
    /// the server (the binary's log level).
    pub config_changes: tokio::sync::watch::Sender<u64>,
    /// Set once to stop the server: by its handle, a signal, or SHUTDOWN.
    pub shutdown: tokio::sync::watch::Sender<bool>,
    /// The append-only file's rewrites, and the restart grace period.
    pub persistence: persistence::Persistence,
    /// OOM and NOREPLICAS refusals.
    pub guard: guard::StateGuard,
    /// SAVE, BGSAVE and the `save` schedule.
    pub snapshots: snapshot::Snapshots,
    /// The primary this server follows, and its link's state.
    pub replica: replica::ReplicaState,
    /// The replicas this server serves.
    pub replicas: Arc<replicas::Replicas>,
    /// The full syncs under way for them, one snapshot for several.
    pub full_syncs: full_sync::FullSyncs,
    /// After a promotion, no new grant (`lock-promotion-grace-ms`).
    pub promotion_grace: grace::Grace,
    /// FAILOVER's switch to a replica, while one is under way.
    pub failover: failover::Failover,
    /// When (server ms) HTTP sent to the port was last logged: Redis logs
    /// it once a minute at most, so a flood does not flood the log.
    pub attack_logged_ms: AtomicU64,
    /// The names `rename-command` gave commands, fixed at start.
    pub command_names: renames::CommandNames,
    /// The TLS port's certificates and settings, reloaded by CONFIG SET.
    pub tls: crate::tls::Tls,
    /// The listeners, for CONFIG SET to move; set by the server once it
    /// listens (an instance without one, as in unit tests, moves none).
    pub listening: OnceLock<Arc<dyn listening::Relisten>>,
}

/// A replica's hold on expiry: for as long as it is one (the hold is
/// lifted when it stops being one).
const REPLICA_EXPIRY_HOLD: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

impl Shared {
    /// A server on `clock`, or on `manual` (which then is its clock), with
    /// statistics for `commands` commands and subcommands.
    pub fn new(
        config: Config,
        clock: Arc<dyn Clock>,
        manual: Option<Arc<ManualClock>>,
        commands: usize,
        command_names: renames::CommandNames,
    ) -> Self {
        let clock = manual.clone().map_or(clock, |m| m as Arc<dyn Clock>);
        let started_ms = clock.now_ms();
        let pubsub = Arc::new(PubSub::new());
        pubsub.configure(&config);
        let cluster = config.cluster_enabled.then(ClusterNode::new);
        let slowlog = slowlog::SlowLog::default();
        slowlog.configure(&config);
        let keyspace = Keyspace::with_events(config.databases, clock, pubsub.clone());
        keyspace.set_limits(config.encoding());
        keyspace.set_lfu(config.maxmemory_policy.contains("lfu"));
        let latency = latency::LatencyMonitor::default();
        latency.configure(&config);
        let guard = guard::StateGuard::default();
        guard.configure(&config);
        let primary = crate::config::parse_primary(&config.replicaof)
            .ok()
            .flatten()
            .map(|(host, port)| replica::Primary { host, port });
        let backlog = Arc::new(crate::persist::backlog::Backlog::new(config.backlog_size()));
        keyspace.set_backlog(backlog.clone());
        let shared = Shared {
            guard,
            acl: acl::Acl::new(commands, config.requirepass.as_deref()),
            persistence: persistence::Persistence::default(),
            snapshots: snapshot::Snapshots::new((started_ms / 1000) as i64),
            slowlog,
            latency,
            cluster,
            keyspace,
            pubsub,
            scripts: Default::default(),
            config: RwLock::new(config),
            config_set: Mutex::new(()),
            clients: DashMap::new(),
            stats: Stats::new(commands),
            next_client_id: AtomicU64::new(1),
            started_ms,
            run_id: crate::util::random_hex(40),
            replica: replica::ReplicaState::new(crate::util::random_hex(40), backlog),
            replicas: Arc::new(replicas::Replicas::new(started_ms)),
            full_syncs: Default::default(),
            promotion_grace: grace::Grace::default(),
            failover: Default::default(),
            attack_logged_ms: AtomicU64::new(0),
            command_names,
            tls: Default::default(),
            listening: OnceLock::new(),
            manual_clock: manual,
            faults: Default::default(),
            config_changes: tokio::sync::watch::Sender::new(0),
            shutdown: tokio::sync::watch::Sender::new(false),
        };
        if primary.is_some() {
            shared.follow(primary);
        }
        shared
    }

    /// Tells the part of the server `hook` names that CONFIG SET changed
    /// the config from `old` to `new`. TLS refuses files that do not
    /// load, leaving what it had in force.
    pub fn reconfigure(&self, hook: Hook, old: &Config, new: &Config) -> Result<(), &'static str> {
        match hook {
            Hook::Tls => return self.reload_tls(new),
            Hook::Listeners => return self.relisten(old, new),
            Hook::PubSub => self.pubsub.configure(new),
            Hook::SlowLog => self.slowlog.configure(new),
            Hook::Encodings => self.keyspace.set_limits(new.encoding()),
            Hook::AccessClocks => self.keyspace.set_lfu(new.maxmemory_policy.contains("lfu")),
            Hook::Persistence => return persistence::reconfigure(self, old, new),
            Hook::Latency => self.latency.configure(new),
            Hook::Guard => self.guard.configure(new),
            Hook::Backlog => self.replica.backlog.set_size(new.backlog_size()),
            Hook::Password => {
                if new.requirepass != old.requirepass {
                    self.acl.set_default_password(new.requirepass.as_deref());
                }
            }
        }
        Ok(())
    }

    /// Builds the TLS settings anew from `config`'s files; a failure is
    /// logged, as Redis logs it, and answered with Redis's error.
    fn reload_tls(&self, config: &Config) -> Result<(), &'static str> {
        self.tls.configure(config).map_err(|e| {
            tracing::warn!("{e}");
            "Unable to update TLS configuration. Check server logs."
        })
    }

    /// Moves the listeners as `port`, `tls-port` and `bind` changed; a TLS
    /// port opened where TLS was off builds the TLS settings first, as
    /// Redis does.
    fn relisten(&self, old: &Config, new: &Config) -> Result<(), &'static str> {
        if new.tls_port.is_some() && self.tls.acceptor().is_none() {
            self.reload_tls(new)?;
        }
        self.listening
            .get()
            .map_or(Ok(()), |listening| listening.relisten(old, new))
    }

    /// Stops the server: scripts in progress are stopped and rolled back
    /// (one that never ends must not keep the process alive), then every
    /// task is told.
    pub fn stop(&self) {
        self.scripts.kill_all();
        self.shutdown.send_replace(true);
    }

    /// Every lock held now, read with every shard held.
    pub fn held_locks(&self, pattern: Option<&[u8]>) -> Vec<HeldLock> {
        let mut locked = loop {
            // Only a script past the busy threshold refuses; it ends or is
            // killed, so asking again is waiting for it.
            match self.keyspace.lock(&LockPlan::All) {
                Ok(locked) => break locked,
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        };
        introspect::held_locks(&mut locked, self.keyspace.databases(), pattern)
    }

    /// CLIENT PAUSE: commands of `mode` wait, and no key expires meanwhile
    /// (keys past their deadline read as gone but stay stored, as in Redis).
    pub fn pause(&self, duration: Duration, mode: PauseMode) {
        let until = self.faults.pause(duration, mode);
        self.keyspace.hold_expiry(Some(self.expiry_hold(until)));
    }

    /// CLIENT UNPAUSE.
    pub fn unpause(&self) {
        self.faults.unpause();
        let held = self
            .replica
            .is_replica()
            .then(|| self.expiry_hold(Instant::now()));
        self.keyspace.hold_expiry(held);
    }

    /// Makes this server follow `primary` (or none): the config shows it,
    /// the guard refuses writes as `replica-read-only` says, keys expire
    /// only by the primary's DELs (past their deadline they read as gone,
    /// as on a Redis replica), and the link follows.
    pub fn follow(&self, primary: Option<replica::Primary>) {
        let mut config = self.config.write();
        config.replicaof = primary
            .as_ref()
            .map_or_else(String::new, |p| format!("{} {}", p.host, p.port));
        self.guard.set_replica(primary.is_some(), &config);
        let grace_ms = config.lock_promotion_grace_ms;
        drop(config);
        let replica = primary.is_some();
        if !replica && self.replica.is_replica() {
            // Its replicas learn the new history when they reconnect.
            self.drop_replicas();
            self.promotion_grace.start(grace_ms, self.now_ms());
        }
        self.replica.follow(primary);
        let held = replica.then(|| self.expiry_hold(Instant::now()));
        self.keyspace.hold_expiry(held);
    }

    /// Until when expiry is held for a pause until `paused_until`: for
    /// good while a replica.
    fn expiry_hold(&self, paused_until: Instant) -> Instant {
        if self.replica.is_replica() {
            Instant::now() + REPLICA_EXPIRY_HOLD
        } else {
            paused_until
        }
    }

    /// Disconnects every replica this server serves: its history changed
    /// under them (a promotion, a full sync from its own primary), so they
    /// must ask again.
    pub fn drop_replicas(&self) {
        for replica in self.replicas.all() {
            if let Some(client) = self.clients.get(&replica.id) {
                client.kill();
            }
        }
    }

    /// Counts the replicas `min-replicas-to-write` counts, for the guard.
    pub fn refresh_good_replicas(&self) {
        let max_lag = self.config.read().min_replicas_max_lag;
        // With Redis's check off, the safe mode counts every online one.
        let max_lag = if max_lag > 0 { max_lag } else { i64::MAX };
        let good = self.replicas.good(self.now_ms(), max_lag);
        self.guard.set_good_replicas(good);
    }

    /// Whether clients may move the clock (`RLOCKD.CLOCK`).
    pub fn clock_control(&self) -> bool {
        self.manual_clock.is_some() && self.config.read().enable_clock_control
    }

    /// Moves the manual clock by `by`, then reclaims every key whose
    /// deadline it passed (raising their `expired` events) before
    /// returning. Returns the new time in Unix milliseconds.
    pub fn advance_clock(&self, clock: &ManualClock, by: std::time::Duration) -> u64 {
        clock.advance(by);
        self.keyspace.expire_due_now();
        clock.now_ms()
    }

    /// Like [`Shared::advance_clock`], to an absolute time (earlier is allowed).
    pub fn set_clock(&self, clock: &ManualClock, to: std::time::SystemTime) -> u64 {
        clock.set(to);
        self.keyspace.expire_due_now();
        clock.now_ms()
    }

    pub fn now_ms(&self) -> u64 {
        self.keyspace.clock().now_ms()
    }

    pub fn next_client_id(&self) -> u64 {
        self.next_client_id.fetch_add(1, Ordering::Relaxed)
    }
}
