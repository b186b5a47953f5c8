//! A seeded, randomized safety checker for the lock family (issue #15, 1).
//!
//! Clients take, re-enter, renew and release locks of several protocols
//! (Redisson's reentrant lock, the fenced lock, SET NX PX with
//! compare-and-delete, the semaphore) over real connections, while faults
//! are injected through the fixture API: the manual clock jumps forward
//! (leases run out mid-critical-section, renewals race expiry), connections
//! are dropped, replies are delayed, writes are paused. One task drives
//! every client, one operation at a time, in an order drawn from the seed,
//! and time moves only when the driver moves it: a history is a function of
//! its seed, so a failing seed replays exactly.
//!
//! After each reply the checker compares it with a model of what each
//! client holds and until when (in server time), and fails on:
//! - two holders of an exclusive lock whose leases overlap, or more
//!   semaphore holders than permits;
//! - a fencing token that does not grow;
//! - a release that does not wake a waiter (its PUBLISH never arrives) or a
//!   woken waiter that cannot take the lock nobody else took meanwhile;
//! - any reply the protocol does not allow in that state.
//!
//! `cargo test --release --test safety` runs a short budget. A longer run:
//! `SAFETY_SEEDS=2000 SAFETY_STEPS=3000 cargo test --release --test safety`;
//! one seed: `SAFETY_SEED=1234`.
//!
//! A second run turns the append-only file on (`appendfsync always`) and
//! also injects crashes: the server is stopped as `kill -9` would stop it
//! and a new one loads the file, on a clock that goes on from where the
//! old one stopped. The model carries over unchanged, so the same checks
//! prove that held locks stay held with their lease, no two holders
//! overlap across a restart and fencing tokens keep growing:
//! `SAFETY_RESTART_SEEDS` histories of `SAFETY_STEPS` operations.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::MultiplexedConnection;
use redis::{Script, Value};
use rlockd::ServerHandle;
use rlockd::server::PauseMode;

const LEASE_MS: u64 = 3_000;
const PERMITS: i64 = 2;
const CLIENTS: usize = 5;
/// Lock names per protocol: few, so that clients contend.
const NAMES: usize = 2;

/// splitmix64: the seed's whole stream, with no dependency on a crate's
/// generator staying the same across versions.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    /// Redisson's RLock: the seed 002 scripts, renewal as its watchdog does.
    Reentrant,
    /// The fenced lock: the reentrant lock plus a token counter.
    Fenced,
    /// SET NX PX, compare-and-delete, compare-and-pexpire.
    Plain,
    /// A semaphore of `PERMITS` permits.
    Semaphore,
}

const KINDS: [Kind; 4] = [Kind::Reentrant, Kind::Fenced, Kind::Plain, Kind::Semaphore];

/// What the model says one client holds of one lock.
#[derive(Clone, Copy, Debug)]
struct Hold {
    count: i64,
    /// Server time (ms) the lease ends; `u64::MAX` for semaphore permits.
    until: u64,
}

struct Scripts {
    lock: Script,
    unlock: Script,
    renew: Script,
    fenced: Script,
    cad: Script,
    cap: Script,
    sem_set: Script,
    sem_acquire: Script,
    sem_release: Script,
}

impl Scripts {
    fn new(broken_lock: bool) -> Scripts {
        Scripts {
            lock: Script::new(if broken_lock {
                // Grants whoever asks: the checker must catch it.
                "redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil"
            } else {
                include_str!("../conformance/scripts/seed002_lock.lua")
            }),
            unlock: Script::new(include_str!("../conformance/scripts/seed002_unlock.lua")),
            renew: Script::new(include_str!("../conformance/scripts/lock_renew_batch.lua")),
            fenced: Script::new(include_str!(
                "../conformance/scripts/lock_fenced_acquire.lua"
            )),
            cad: Script::new(
                "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0",
            ),
            cap: Script::new(
                "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0",
            ),
            sem_set: Script::new(include_str!(
                "../conformance/scripts/semaphore_set_permits.lua"
            )),
            sem_acquire: Script::new(include_str!("../conformance/scripts/semaphore_acquire.lua")),
            sem_release: Script::new(include_str!("../conformance/scripts/semaphore_release.lua")),
        }
    }
}

/// How a history ended.
#[derive(Default, Debug)]
struct Outcome {
    operations: u64,
    grants: u64,
    restarts: u64,
    violation: Option<String>,
}

struct Run<'s> {
    /// Always set between operations (a restart swaps it).
    server: Option<ServerHandle>,
    /// Where the append-only file is, when persistence is on: then
    /// crashes and restarts are among the faults.
    aof_dir: Option<&'s std::path::Path>,
    rng: Rng,
    scripts: &'s Scripts,
    clients: Vec<MultiplexedConnection>,
    holds: HashMap<(Kind, usize, usize), Hold>,
    /// Highest fencing token granted, per lock name.
    tokens: HashMap<usize, i64>,
    /// Wake-ups (PUBLISH on a lock's channel) seen, by channel.
    wakeups: tokio::sync::mpsc::UnboundedReceiver<String>,
    wakeup_sender: tokio::sync::mpsc::UnboundedSender<String>,
    listener: tokio::task::JoinHandle<()>,
    /// A client told by a wake-up that this lock is free, before anyone
    /// else acted on it.
    woken: Option<(Kind, usize)>,
    log: Vec<String>,
    outcome: Outcome,
}

fn key(kind: Kind, name: usize) -> String {
    format!("{kind:?}:{{lock{name}}}")
}

fn channel(kind: Kind, name: usize) -> String {
    format!("redisson_lock__channel:{}", key(kind, name))
}

fn owner(client: usize) -> String {
    format!("client-{client}:1")
}

/// A server on a manual clock starting at `at`, with the append-only file
/// (`appendfsync always`) in `aof_dir` if given.
async fn start_server(
    aof_dir: Option<&std::path::Path>,
    at: std::time::SystemTime,
) -> ServerHandle {
    let mut config = rlockd::Config::default();
    if let Some(dir) = aof_dir {
        config.appendonly = true;
        config.appendfsync = "always".into();
        config.dir = dir.to_string_lossy().into_owned();
    }
    rlockd::Server::builder()
        .config(config)
        .port(0)
        .manual_clock_at(at)
        .start()
        .await
        .unwrap()
}

impl Run<'_> {
    fn server(&self) -> &ServerHandle {
        self.server.as_ref().expect("a server between operations")
    }

    fn now(&self) -> u64 {
        self.server()
            .clock()
            .now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    }

    fn fail(&mut self, what: String) {
        if self.outcome.violation.is_none() {
            self.outcome.violation = Some(format!(
                "{what}\nlast operations:\n  {}",
                self.log[self.log.len().saturating_sub(12)..].join("\n  ")
            ));
        }
    }

    /// The model's hold of `client` on a lock, if its lease is still valid.
    fn valid(&self, kind: Kind, name: usize, client: usize) -> Option<Hold> {
        let now = self.now();
        self.holds
            .get(&(kind, name, client))
            .copied()
            .filter(|h| h.until > now)
    }

    fn holders(&self, kind: Kind, name: usize) -> Vec<usize> {
        (0..CLIENTS)
            .filter(|&c| self.valid(kind, name, c).is_some())
            .collect()
    }

    /// Runs a script for a client, reconnecting once if a fault dropped its
    /// connection (the command did not run then: drops happen between
    /// operations).
    async fn invoke(
        &mut self,
        client: usize,
        script: &Script,
        keys: &[String],
        args: &[String],
    ) -> Value {
        for _ in 0..2 {
            let mut invocation = script.prepare_invoke();
            for k in keys {
                invocation.key(k);
            }
            for a in args {
                invocation.arg(a);
            }
            match invocation.invoke_async(&mut self.clients[client]).await {
                Ok(v) => return v,
                Err(e) if e.is_io_error() || e.is_connection_dropped() => {
                    self.clients[client] = common::connect(self.server()).await;
                }
                Err(e) => return Value::SimpleString(format!("error: {e}")),
            }
        }
        Value::SimpleString("error: no connection".into())
    }

    async fn set(&mut self, client: usize, k: &str, token: &str) -> Value {
        for _ in 0..2 {
            let reply = redis::cmd("SET")
                .arg(k)
                .arg(token)
                .arg("NX")
                .arg("PX")
                .arg(LEASE_MS)
                .query_async::<Value>(&mut self.clients[client])
                .await;
            match reply {
                Ok(v) => return v,
                Err(e) if e.is_io_error() || e.is_connection_dropped() => {
                    self.clients[client] = common::connect(self.server()).await;
                }
                Err(e) => return Value::SimpleString(format!("error: {e}")),
            }
        }
        Value::Nil
    }

    /// A grant of an exclusive lock: nobody else may hold it now.
    fn granted(&mut self, kind: Kind, name: usize, client: usize, reentry: bool) {
        self.outcome.grants += 1;
        let others: Vec<usize> = self
            .holders(kind, name)
            .into_iter()
            .filter(|&c| c != client)
            .collect();
        if !others.is_empty() {
            self.fail(format!(
                "{kind:?} lock {name} granted to client {client} while clients {others:?} hold valid leases"
            ));
        }
        let now = self.now();
        let count = if reentry {
            self.valid(kind, name, client).map_or(0, |h| h.count)
        } else {
            0
        };
        self.holds.insert(
            (kind, name, client),
            Hold {
                count: count + 1,
                until: now + LEASE_MS,
            },
        );
        if self.woken == Some((kind, name)) {
            self.woken = None;
        }
    }

    /// A client was refused: if a wake-up told it the lock was free and
    /// nobody acted on the lock since, the wake-up was a lie.
    fn refused(&mut self, kind: Kind, name: usize, client: usize) {
        if self.woken == Some((kind, name)) {
            self.fail(format!(
                "{kind:?} lock {name}: client {client} was woken but refused the free lock"
            ));
        }
    }

    /// The release that freed a lock published a wake-up: it must arrive.
    async fn expect_wakeup(&mut self, kind: Kind, name: usize) {
        let wanted = channel(kind, name);
        let got = tokio::time::timeout(Duration::from_secs(2), self.wakeups.recv()).await;
        match got {
            Ok(Some(ch)) if ch == wanted => self.woken = Some((kind, name)),
            other => self.fail(format!(
                "release of {kind:?} lock {name}: no wake-up ({other:?})"
            )),
        }
    }

    async fn acquire(&mut self, kind: Kind, name: usize, client: usize) {
        let k = key(kind, name);
        let me = owner(client);
        let mine = self.valid(kind, name, client).is_some();
        match kind {
            Kind::Reentrant => {
                let reply = self
                    .invoke(
                        client,
                        &self.scripts.lock.clone(),
                        &[k],
                        &[LEASE_MS.to_string(), me],
                    )
                    .await;
                match reply {
                    Value::Nil => self.granted(kind, name, client, true),
                    Value::Int(ttl) if ttl >= 0 && !mine => self.refused(kind, name, client),
                    other => self.fail(format!("lock by client {client}: reply {other:?}")),
                }
            }
            Kind::Fenced => {
                let counter = format!("redisson_lock_token:{{lock{name}}}");
                let reply = self
                    .invoke(
                        client,
                        &self.scripts.fenced.clone(),
                        &[k, counter],
                        &[LEASE_MS.to_string(), me],
                    )
                    .await;
                match reply {
                    Value::Array(ref parts) => match parts.as_slice() {
                        [Value::Int(-1), Value::Int(token)] => {
                            let last = self.tokens.get(&name).copied().unwrap_or(0);
                            if *token <= last {
                                self.fail(format!(
                                    "fenced lock {name}: token {token} after {last}"
                                ));
                            }
                            self.tokens.insert(name, *token);
                            self.granted(kind, name, client, true);
                        }
                        [Value::Int(ttl), Value::Int(-1)] if *ttl >= 0 && !mine => {
                            self.refused(kind, name, client)
                        }
                        _ => self.fail(format!("fenced lock by {client}: reply {reply:?}")),
                    },
                    other => self.fail(format!("fenced lock by {client}: reply {other:?}")),
                }
            }
            Kind::Plain => {
                // Not reentrant: a holder does not ask again.
                if mine {
                    return;
                }
                match self.set(client, &k, &me).await {
                    Value::Okay => self.granted(kind, name, client, false),
                    Value::Nil => {
                        if self.holders(kind, name).is_empty() {
                            self.fail(format!(
                                "SET NX lock {name} refused to client {client} while free"
                            ));
                        }
                        self.refused(kind, name, client);
                    }
                    other => self.fail(format!("SET NX by {client}: reply {other:?}")),
                }
            }
            Kind::Semaphore => {
                let reply = self
                    .invoke(
                        client,
                        &self.scripts.sem_acquire.clone(),
                        &[k],
                        &["1".into()],
                    )
                    .await;
                let held: i64 = (0..CLIENTS)
                    .filter_map(|c| self.valid(kind, name, c))
                    .map(|h| h.count)
                    .sum();
                match reply {
                    Value::Int(1) => {
                        self.outcome.grants += 1;
                        if held + 1 > PERMITS {
                            self.fail(format!(
                                "semaphore {name}: {} permits held of {PERMITS}",
                                held + 1
                            ));
                        }
                        let count = self.valid(kind, name, client).map_or(0, |h| h.count);
                        self.holds.insert(
                            (kind, name, client),
                            Hold {
                                count: count + 1,
                                until: u64::MAX,
                            },
                        );
                    }
                    Value::Int(0) if held >= PERMITS => {}
                    other => self.fail(format!(
                        "semaphore {name} acquire by {client} with {held} held: reply {other:?}"
                    )),
                }
            }
        }
    }

    async fn release(&mut self, kind: Kind, name: usize, client: usize) {
        let k = key(kind, name);
        let me = owner(client);
        let hold = self.valid(kind, name, client);
        self.holds.remove(&(kind, name, client));
        match kind {
            Kind::Reentrant | Kind::Fenced => {
                let reply = self
                    .invoke(
                        client,
                        &self.scripts.unlock.clone(),
                        &[k, channel(kind, name)],
                        &["0".into(), LEASE_MS.to_string(), me],
                    )
                    .await;
                match (hold, reply) {
                    (Some(h), Value::Int(0)) if h.count > 1 => {
                        self.holds.insert(
                            (kind, name, client),
                            Hold {
                                count: h.count - 1,
                                until: self.now() + LEASE_MS,
                            },
                        );
                    }
                    (Some(h), Value::Int(1)) if h.count == 1 => {
                        self.expect_wakeup(kind, name).await;
                    }
                    (None, Value::Nil) => {}
                    (hold, reply) => self.fail(format!(
                        "unlock of {kind:?} lock {name} by {client} holding {hold:?}: reply {reply:?}"
                    )),
                }
            }
            Kind::Plain => {
                let reply = self
                    .invoke(client, &self.scripts.cad.clone(), &[k], &[me])
                    .await;
                match (hold, reply) {
                    (Some(_), Value::Int(1)) | (None, Value::Int(0)) => {}
                    (hold, reply) => self.fail(format!(
                        "compare-and-delete of lock {name} by {client} holding {hold:?}: reply {reply:?}"
                    )),
                }
            }
            Kind::Semaphore => {
                let Some(h) = hold else { return };
                let reply = self
                    .invoke(
                        client,
                        &self.scripts.sem_release.clone(),
                        &[k, format!("redisson_sc:{{lock{name}}}")],
                        &["1".into()],
                    )
                    .await;
                if !matches!(reply, Value::Int(n) if (1..=PERMITS).contains(&n)) {
                    self.fail(format!(
                        "semaphore {name} release by {client}: reply {reply:?}"
                    ));
                }
                if h.count > 1 {
                    self.holds.insert(
                        (kind, name, client),
                        Hold {
                            count: h.count - 1,
                            until: u64::MAX,
                        },
                    );
                }
            }
        }
    }

    /// The watchdog's renewal: only a holder with a valid lease renews.
    async fn renew(&mut self, kind: Kind, name: usize, client: usize) {
        let k = key(kind, name);
        let me = owner(client);
        let hold = self.valid(kind, name, client);
        let reply = match kind {
            Kind::Reentrant | Kind::Fenced => {
                self.invoke(
                    client,
                    &self.scripts.renew.clone(),
                    &[k],
                    &[LEASE_MS.to_string(), me],
                )
                .await
            }
            Kind::Plain => {
                self.invoke(
                    client,
                    &self.scripts.cap.clone(),
                    &[k],
                    &[me, LEASE_MS.to_string()],
                )
                .await
            }
            Kind::Semaphore => return,
        };
        let renewed = match &reply {
            Value::Array(parts) => parts.first() == Some(&Value::Int(1)),
            Value::Int(1) => true,
            _ => false,
        };
        match (hold, renewed) {
            (Some(h), true) => {
                let until = self.now() + LEASE_MS;
                self.holds.insert((kind, name, client), Hold { until, ..h });
            }
            (None, false) => {
                self.holds.remove(&(kind, name, client));
            }
            (hold, _) => self.fail(format!(
                "renewal of {kind:?} lock {name} by {client} holding {hold:?}: reply {reply:?}"
            )),
        }
    }

    /// A crash (nothing unacknowledged reaches the file) and a new server
    /// that loads the file, its clock going on from the old one's.
    async fn restart(&mut self) {
        self.log.push("crash and restart".into());
        self.outcome.restarts += 1;
        let at = self.server().clock().now();
        if let Some(old) = self.server.take() {
            old.crash().await;
        }
        self.server = Some(start_server(self.aof_dir, at).await);
        for client in 0..CLIENTS {
            self.clients[client] = common::connect(self.server()).await;
        }
        self.listener.abort();
        self.listener = listen(self.server(), self.wakeup_sender.clone()).await;
        self.woken = None;
    }

    async fn fault(&mut self) {
        if self.aof_dir.is_some() && self.rng.below(4) == 0 {
            return self.restart().await;
        }
        match self.rng.below(10) {
            0..=5 => {
                let by = self.rng.below(LEASE_MS * 3 / 2);
                self.log.push(format!("clock +{by} ms"));
                self.server().clock().advance(Duration::from_millis(by));
                // Whatever a wake-up promised, time moved: expiries are new facts.
                self.woken = None;
            }
            6 | 7 => {
                self.log.push("drop connections".into());
                self.server().drop_connections();
                // Waiters subscribe again before they wait again.
                self.listener.abort();
                self.listener = listen(self.server(), self.wakeup_sender.clone()).await;
            }
            8 => {
                self.log.push("pause writes 20 ms".into());
                self.server()
                    .pause(Duration::from_millis(20), PauseMode::Write);
            }
            _ => {
                self.log.push("delay replies 5 ms".into());
                self.server().delay_replies(Duration::from_millis(5));
            }
        }
    }

    async fn step(&mut self) {
        self.outcome.operations += 1;
        if self.rng.below(8) == 0 {
            self.fault().await;
            return;
        }
        if self.rng.below(16) == 0 {
            self.server().delay_replies(Duration::ZERO);
        }
        let kind = KINDS[self.rng.below(KINDS.len() as u64) as usize];
        let name = self.rng.below(NAMES as u64) as usize;
        let client = self.rng.below(CLIENTS as u64) as usize;
        let holding = self.valid(kind, name, client).is_some();
        let action = self.rng.below(10);
        // A woken waiter tries first, as it would.
        if let Some((k, n)) = self.woken
            && (k, n) == (kind, name)
            && !holding
        {
            self.log
                .push(format!("client {client} (woken) acquires {kind:?} {name}"));
            return self.acquire(kind, name, client).await;
        }
        self.woken = None;
        match action {
            0..=4 => {
                self.log
                    .push(format!("client {client} acquires {kind:?} {name}"));
                self.acquire(kind, name, client).await;
            }
            5..=7 => {
                self.log
                    .push(format!("client {client} releases {kind:?} {name}"));
                self.release(kind, name, client).await;
            }
            _ => {
                self.log
                    .push(format!("client {client} renews {kind:?} {name}"));
                self.renew(kind, name, client).await;
            }
        }
    }
}

/// Subscribes to every lock channel, as waiting clients do, and passes on
/// the channel of each wake-up. Subscribed when it returns.
async fn listen(
    server: &ServerHandle,
    wakeups: tokio::sync::mpsc::UnboundedSender<String>,
) -> tokio::task::JoinHandle<()> {
    let subscriber = redis::Client::open(server.url()).unwrap();
    let mut pubsub = subscriber.get_async_pubsub().await.unwrap();
    pubsub.psubscribe("redisson_lock__channel:*").await.unwrap();
    tokio::spawn(async move {
        let mut messages = pubsub.on_message();
        while let Some(m) = messages.next().await {
            if wakeups.send(m.get_channel_name().to_string()).is_err() {
                break;
            }
        }
    })
}

async fn history(
    seed: u64,
    steps: u64,
    broken_lock: bool,
    aof_dir: Option<&std::path::Path>,
) -> Outcome {
    let server = start_server(aof_dir, std::time::SystemTime::now()).await;
    let scripts = Scripts::new(broken_lock);
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        clients.push(common::connect(&server).await);
    }
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let listener = listen(&server, tx.clone()).await;
    let mut run = Run {
        server: Some(server),
        aof_dir,
        rng: Rng(seed),
        scripts: &scripts,
        clients,
        holds: HashMap::new(),
        tokens: HashMap::new(),
        wakeups: rx,
        wakeup_sender: tx,
        listener,
        woken: None,
        log: Vec::new(),
        outcome: Outcome::default(),
    };
    for name in 0..NAMES {
        let k = key(Kind::Semaphore, name);
        let ch = format!("redisson_sc:{{lock{name}}}");
        run.invoke(0, &scripts.sem_set, &[k, ch], &[PERMITS.to_string()])
            .await;
    }
    for _ in 0..steps {
        run.step().await;
        if run.outcome.violation.is_some() {
            break;
        }
    }
    let outcome = std::mem::take(&mut run.outcome);
    run.listener.abort();
    if let Some(server) = run.server.take() {
        server.shutdown().await;
    }
    outcome
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_history_breaks_mutual_exclusion() {
    let steps = env_u64("SAFETY_STEPS", 400);
    let seeds: Vec<u64> = match std::env::var("SAFETY_SEED") {
        Ok(one) => vec![one.parse().expect("SAFETY_SEED is a number")],
        Err(_) => (1..=env_u64("SAFETY_SEEDS", 12)).collect(),
    };
    let (mut operations, mut grants, mut longest) = (0, 0, 0);
    for &seed in &seeds {
        let outcome = history(seed, steps, false, None).await;
        if let Some(violation) = outcome.violation {
            panic!("seed {seed} (replay: SAFETY_SEED={seed} SAFETY_STEPS={steps}): {violation}");
        }
        operations += outcome.operations;
        grants += outcome.grants;
        longest = longest.max(outcome.operations);
    }
    println!(
        "safety: {} histories, {operations} operations ({grants} grants), longest {longest}, 0 violations",
        seeds.len()
    );
}

/// The checker is not vacuous: a lock script that grants to everyone is
/// caught within a short history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checker_catches_a_lock_that_grants_twice() {
    let caught = history(7, 400, true, None).await;
    let violation = caught.violation.expect("a broken lock must be caught");
    assert!(violation.contains("while clients"), "{violation}");
}

/// Crashes and restarts with the append-only file on (`appendfsync
/// always`): locks, leases and fencing tokens carry over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_history_breaks_mutual_exclusion_across_restarts() {
    let steps = env_u64("SAFETY_STEPS", 300);
    let seeds: Vec<u64> = match std::env::var("SAFETY_SEED") {
        Ok(one) => vec![one.parse().expect("SAFETY_SEED is a number")],
        Err(_) => (1..=env_u64("SAFETY_RESTART_SEEDS", 3)).collect(),
    };
    let (mut operations, mut grants, mut restarts) = (0, 0, 0);
    for &seed in &seeds {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("safety-aof-{}-{seed}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let outcome = history(seed, steps, false, Some(&dir)).await;
        let _ = std::fs::remove_dir_all(&dir);
        if let Some(violation) = outcome.violation {
            panic!(
                "seed {seed} with restarts (replay: SAFETY_SEED={seed} SAFETY_STEPS={steps}): {violation}"
            );
        }
        operations += outcome.operations;
        grants += outcome.grants;
        restarts += outcome.restarts;
    }
    println!(
        "safety with restarts: {} histories, {operations} operations ({grants} grants), {restarts} crash-restarts, 0 violations",
        seeds.len()
    );
}
