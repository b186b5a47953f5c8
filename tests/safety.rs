//! A seeded, randomized safety checker for the lock family (issue #15, 1).
//!
//! Clients take, re-enter, renew and release locks of several protocols
//! (Redisson's reentrant lock, fair lock and read/write lock, the fenced
//! lock, SET NX PX with compare-and-delete, the semaphore) over real
//! connections, while faults are injected: the manual clock jumps forward
//! (a client paused longer than its lease, leases running out
//! mid-critical-section; a third of the jumps land on a lease's last
//! millisecond or just past it, so renewals and releases race the expiry),
//! connections are dropped, replies are delayed, writes are paused (the
//! fixture's pause, and `CLIENT PAUSE WRITE|ALL` sent by a client). One
//! task drives every client, one operation at a time, in an order drawn
//! from the seed, and time moves only when the driver moves it: a history
//! is a function of its seed, so a failing seed replays exactly.
//!
//! After each reply the checker compares it with a model of what each
//! client holds and until when (in server time), and fails on:
//! - two holders of an exclusive lock whose leases overlap, a writer whose
//!   lease overlaps a reader's or another writer's, or more semaphore
//!   holders than permits;
//! - a fair lock granted to anyone but the head of its queue (waiters past
//!   their deadline dropped), a waiter told a wait its place does not give
//!   it, or a waiter left queued once every deadline has passed;
//! - a fencing token that does not grow;
//! - a release that does not wake a waiter (its PUBLISH never arrives) or a
//!   woken waiter that cannot take the lock nobody else took meanwhile;
//! - any reply the protocol does not allow in that state.
//!
//! `cargo test --release --test safety` runs a short budget. A longer run:
//! `SAFETY_SEEDS=2000 SAFETY_STEPS=3000 cargo test --release --test safety`;
//! one seed: `SAFETY_SEED=1234`.
//!
//! Two more runs add crashes: the server is stopped as `kill -9` would stop
//! it and a new one starts on a clock that goes on from where the old one
//! stopped, while the model keeps what clients believe they hold.
//! - With the append-only file (`appendfsync always`) the new server loads
//!   it, so the same checks prove that held locks stay held with their
//!   lease, no two holders overlap across a restart and fencing tokens keep
//!   growing (`SAFETY_RESTART_SEEDS` histories).
//! - Without persistence it starts empty under `lock-restart-grace-ms` set
//!   to the longest lease: every acquire during the grace must answer
//!   LOADING, and none after it may overlap a lease the old server gave
//!   (`SAFETY_GRACE_SEEDS` histories; the semaphore is left out, its plain
//!   permits having no lease, and fencing counters start again).
//!
//! Broken lock scripts, and a grace shorter than a lease, show that the
//! checks can fail.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::MultiplexedConnection;
use redis::{Script, Value};
use rlockd::ServerHandle;
use rlockd::server::PauseMode;

use common::redisson;
use common::rng::Rng;

/// Operations a violation report ends with.
const SAFETY_LOG_TAIL: usize = 40;
const LEASE_MS: u64 = 3_000;
/// How long a fair-lock waiter waits for its turn once it is at the head.
const PATIENCE_MS: u64 = 2_000;
/// The longest lease a client can hold: a write lock entered twice.
const LONGEST_LEASE_MS: u64 = 2 * LEASE_MS;
const PERMITS: i64 = 2;
const CLIENTS: usize = 5;
/// Lock names per protocol: few, so that clients contend.
const NAMES: usize = 2;

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
    /// Redisson's fair lock: a queue of waiters, each with a deadline.
    Fair,
    /// The read side of Redisson's read/write lock.
    Read,
    /// Its write side (the same hash).
    Write,
}

const KINDS: [Kind; 7] = [
    Kind::Reentrant,
    Kind::Fenced,
    Kind::Plain,
    Kind::Semaphore,
    Kind::Fair,
    Kind::Read,
    Kind::Write,
];

/// The locks with a lease: all but the semaphore, whose plain permits a
/// restart without persistence loses for good.
const LEASED: [Kind; 6] = [
    Kind::Reentrant,
    Kind::Fenced,
    Kind::Plain,
    Kind::Fair,
    Kind::Read,
    Kind::Write,
];

/// The read side's watchdog (ours; Redisson's renews every reader's
/// holds at once): the owner's live read holds, and the hash with them,
/// get a fresh lease. 1 if any hold was still live.
const READ_RENEW: &str = "local renewed = 0
for i = tonumber(redis.call('hget', KEYS[1], ARGV[2]) or 0), 1, -1 do
    renewed = renewed + redis.call('pexpire', KEYS[2] .. ':' .. i, ARGV[1])
end
if renewed > 0 then
    redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), ARGV[1]))
end
return renewed > 0 and 1 or 0";

/// A lock script broken on purpose, to show the checker catches it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sabotage {
    None,
    /// The reentrant lock grants whoever asks.
    Reentrant,
    /// The fair lock grants a free lock to whoever asks, queue or not.
    Fair,
    /// The write side is granted while readers hold the lock.
    ReadWrite,
}

impl Sabotage {
    /// The locks a history drives: a sabotaged one alone, so that it is
    /// caught quickly.
    fn kinds(self) -> &'static [Kind] {
        match self {
            Sabotage::None | Sabotage::Reentrant => &KINDS,
            Sabotage::Fair => &[Kind::Fair],
            Sabotage::ReadWrite => &[Kind::Read, Kind::Write],
        }
    }
}

/// A waiter told by a wake-up that a lock is free: `client` is the one
/// woken (the fair lock's head), `None` when any waiter may try.
type Woken = (Kind, usize, Option<usize>);

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
    fair_acquire: Script,
    fair_release: Script,
    read_acquire: Script,
    read_release: Script,
    read_renew: Script,
    write_acquire: Script,
    write_release: Script,
}

impl Scripts {
    fn new(sabotage: Sabotage) -> Scripts {
        let fair_acquire = redisson::FAIR_ACQUIRE;
        let write_acquire = redisson::WRITE_ACQUIRE;
        Scripts {
            lock: Script::new(if sabotage == Sabotage::Reentrant {
                // Grants whoever asks: the checker must catch it.
                "redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil"
            } else {
                redisson::LOCK
            }),
            unlock: Script::new(redisson::UNLOCK),
            renew: Script::new(include_str!("../conformance/scripts/lock_renew_batch.lua")),
            fenced: Script::new(redisson::FENCED),
            cad: Script::new(redisson::CAD),
            cap: Script::new(
                "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0",
            ),
            sem_set: Script::new(include_str!(
                "../conformance/scripts/semaphore_set_permits.lua"
            )),
            sem_acquire: Script::new(include_str!("../conformance/scripts/semaphore_acquire.lua")),
            sem_release: Script::new(include_str!("../conformance/scripts/semaphore_release.lua")),
            fair_acquire: Script::new(&if sabotage == Sabotage::Fair {
                fair_acquire.replace("(head == false or head == owner)", "true")
            } else {
                fair_acquire.to_string()
            }),
            fair_release: Script::new(redisson::FAIR_RELEASE),
            read_acquire: Script::new(redisson::READ_ACQUIRE),
            read_release: Script::new(redisson::READ_RELEASE),
            read_renew: Script::new(READ_RENEW),
            write_acquire: Script::new(&if sabotage == Sabotage::ReadWrite {
                write_acquire.replace("if mode == false then", "if mode ~= 'write' then")
            } else {
                write_acquire.to_string()
            }),
            write_release: Script::new(redisson::WRITE_RELEASE),
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

/// Whether crashes and restarts are among the faults, and what a restarted
/// server starts from.
#[derive(Clone, Copy)]
enum Restarts<'p> {
    Never,
    /// It loads the append-only file (`appendfsync always`) kept in this
    /// folder.
    Aof(&'p std::path::Path),
    /// It starts empty, refusing writes for this long
    /// (`lock-restart-grace-ms`, in ms).
    Grace(u64),
}

struct Run<'s> {
    /// Always set between operations (a restart swaps it).
    server: Option<ServerHandle>,
    restarts: Restarts<'s>,
    /// Until then (server ms) a server restarted without persistence
    /// refuses every write with LOADING.
    grace_until: u64,
    rng: Rng,
    kinds: &'static [Kind],
    scripts: &'s Scripts,
    clients: Vec<MultiplexedConnection>,
    holds: HashMap<(Kind, usize, usize), Hold>,
    /// Highest fencing token granted, per lock name.
    tokens: HashMap<usize, i64>,
    /// Each fair lock's queue: waiters in order, with the deadline (server
    /// ms) past which a waiter that has not taken the lock is dropped.
    queues: HashMap<usize, Vec<(usize, i64)>>,
    /// Each client's read holds of each read/write lock (by name and
    /// client): the lease end of each hold, newest last (never earlier than
    /// the one below), as the lock keeps one timeout key per hold and a
    /// release drops the newest.
    reads: HashMap<(usize, usize), Vec<u64>>,
    /// Wake-ups (PUBLISH on a lock's channel) seen, by channel.
    wakeups: tokio::sync::mpsc::UnboundedReceiver<String>,
    wakeup_sender: tokio::sync::mpsc::UnboundedSender<String>,
    listener: tokio::task::JoinHandle<()>,
    /// A client told by a wake-up that this lock is free, before anyone
    /// else acted on it.
    woken: Option<Woken>,
    log: Vec<String>,
    outcome: Outcome,
}

fn key(kind: Kind, name: usize) -> String {
    match kind {
        Kind::Read | Kind::Write => format!("ReadWrite:{{lock{name}}}"),
        _ => format!("{kind:?}:{{lock{name}}}"),
    }
}

fn channel(kind: Kind, name: usize) -> String {
    match kind {
        Kind::Read | Kind::Write => redisson::rw_channel(&key(kind, name)),
        _ => redisson::lock_channel(&key(kind, name)),
    }
}

fn read_timeouts(name: usize, client: usize) -> String {
    redisson::read_timeouts(&key(Kind::Read, name), &owner(client))
}

fn writer(client: usize) -> String {
    redisson::writer(&owner(client))
}

fn owner(client: usize) -> String {
    format!("client-{client}:1")
}

/// An error reply as the checker keeps it: its code first, what the
/// checks compare.
fn error_reply(e: &redis::RedisError) -> Value {
    let code = e.code().unwrap_or("(not a server error)");
    Value::SimpleString(format!("error {code}: {e}"))
}

fn is_error(reply: &Value, code: &str) -> bool {
    matches!(reply, Value::SimpleString(e) if e.starts_with(&format!("error {code}:")))
}

fn fair_keys(name: usize) -> [String; 3] {
    redisson::fair_keys(&key(Kind::Fair, name))
}

/// A server on a manual clock starting at `at`, configured for `restarts`.
async fn start_server(restarts: Restarts<'_>, at: std::time::SystemTime) -> ServerHandle {
    let mut config = rlockd::Config::default();
    match restarts {
        Restarts::Never => {}
        Restarts::Aof(dir) => {
            config.appendonly = true;
            config.appendfsync = "always".into();
            config.dir = dir.to_string_lossy().into_owned();
        }
        Restarts::Grace(ms) => config.lock_restart_grace_ms = ms,
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
            .unwrap()
            .now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    }

    fn fail(&mut self, what: String) {
        if self.outcome.violation.is_none() {
            self.outcome.violation = Some(format!(
                "{what}\nlast operations:\n  {}",
                self.log[self.log.len().saturating_sub(SAFETY_LOG_TAIL)..].join("\n  ")
            ));
        }
    }

    /// The model's hold of `client` on a lock, if its lease is still valid.
    fn valid(&self, kind: Kind, name: usize, client: usize) -> Option<Hold> {
        let now = self.now();
        let hold = if kind == Kind::Read {
            let leases = self.reads.get(&(name, client))?;
            Some(Hold {
                count: leases.len() as i64,
                until: *leases.last()?,
            })
        } else {
            self.holds.get(&(kind, name, client)).copied()
        };
        // A key lives through its deadline's millisecond, as in Redis.
        hold.filter(|h| h.until >= now)
    }

    /// Who holds either side of a read/write lock, and when the last of
    /// their leases ends: the lock's hash lives exactly that long.
    fn rw_holds(&self, name: usize) -> (Vec<(Kind, usize)>, Option<u64>) {
        let mut holds = Vec::new();
        let mut last = None;
        for kind in [Kind::Read, Kind::Write] {
            for c in 0..CLIENTS {
                if let Some(h) = self.valid(kind, name, c) {
                    last = last.max(Some(h.until));
                    holds.push((kind, c));
                }
            }
        }
        (holds, last)
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
                Err(e) => return error_reply(&e),
            }
        }
        Value::SimpleString("error: no connection".into())
    }

    /// Sends a command for a client, reconnecting once if a fault
    /// dropped its connection.
    async fn query(&mut self, client: usize, command: &redis::Cmd) -> Value {
        for _ in 0..2 {
            match command.query_async(&mut self.clients[client]).await {
                Ok(v) => return v,
                Err(e) if e.is_io_error() || e.is_connection_dropped() => {
                    self.clients[client] = common::connect(self.server()).await;
                }
                Err(e) => return error_reply(&e),
            }
        }
        Value::SimpleString("error: no connection".into())
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
        self.taken(kind, name);
    }

    /// Whoever a wake-up told about this lock has been answered.
    fn taken(&mut self, kind: Kind, name: usize) {
        if self.woken.is_some_and(|(k, n, _)| (k, n) == (kind, name)) {
            self.woken = None;
        }
    }

    /// A client was refused: if a wake-up told it the lock was free and
    /// nobody acted on the lock since, the wake-up was a lie.
    fn refused(&mut self, kind: Kind, name: usize, client: usize) {
        if let Some((k, n, who)) = self.woken
            && (k, n) == (kind, name)
            && who.is_none_or(|w| w == client)
        {
            self.fail(format!(
                "{kind:?} lock {name}: client {client} was woken but refused the free lock"
            ));
        }
    }

    /// The release that freed a lock published a wake-up on `wanted`: it
    /// must arrive.
    async fn expect_wakeup(&mut self, wanted: String, woken: Woken) {
        let got = tokio::time::timeout(Duration::from_secs(2), self.wakeups.recv()).await;
        match got {
            Ok(Some(ch)) if ch == wanted => self.woken = Some(woken),
            other => self.fail(format!("no wake-up on {wanted} ({other:?})")),
        }
    }

    /// Checks a fair-lock acquire's reply against the model's queue: the
    /// lock goes to the head of the queue (stale waiters dropped first) or
    /// to anyone when nobody waits, and a refused client is told the wait
    /// its place in the queue gives it.
    fn fair_acquired(&mut self, name: usize, client: usize, reply: Value) {
        let now = self.now() as i64;
        let holder = self
            .holders(Kind::Fair, name)
            .first()
            .and_then(|&c| Some((c, self.valid(Kind::Fair, name, c)?.until as i64)));
        let queue = self.queues.entry(name).or_default();
        queue.retain(|&(_, deadline)| deadline > now);
        let head = queue.first().map(|&(c, _)| c);
        let queued = queue.iter().find(|&&(c, _)| c == client).map(|&(_, d)| d);
        let wait = if holder.is_none() && head.is_none_or(|h| h == client) {
            if head.is_some() {
                queue.remove(0);
            }
            // Everyone behind waits one turn less.
            queue.iter_mut().for_each(|(_, d)| *d -= PATIENCE_MS as i64);
            None
        } else if holder.is_some_and(|(c, _)| c == client) {
            None
        } else if let Some(deadline) = queued {
            Some(deadline - PATIENCE_MS as i64 - now)
        } else {
            let turn = queue
                .last()
                .map_or_else(|| holder.map_or(-2, |(_, u)| u), |&(_, d)| d);
            queue.push((client, turn + PATIENCE_MS as i64));
            Some(turn - now)
        };
        match (wait, reply) {
            (None, Value::Nil) => self.granted(Kind::Fair, name, client, true),
            (Some(_), Value::Nil) => {
                let queue = self.queues[&name].clone();
                self.fail(format!(
                    "fair lock {name} granted to client {client} out of queue order (queue {queue:?}, holder {holder:?})"
                ));
            }
            (Some(wait), Value::Int(told)) if told == wait => {
                self.refused(Kind::Fair, name, client)
            }
            (wait, reply) => self.fail(format!(
                "fair lock {name} acquire by {client}: reply {reply:?}, model's wait {wait:?}"
            )),
        }
    }

    /// Checks a fair-lock release's reply; a release that leaves the lock
    /// free wakes the head of the queue (stale waiters dropped from the
    /// head first), and only it.
    async fn fair_released(
        &mut self,
        name: usize,
        client: usize,
        hold: Option<Hold>,
        reply: Value,
    ) {
        let now = self.now() as i64;
        let held = hold.is_some() || !self.holders(Kind::Fair, name).is_empty();
        let queue = self.queues.entry(name).or_default();
        while queue.first().is_some_and(|&(_, d)| d <= now) {
            queue.remove(0);
        }
        let head = queue.first().map(|&(c, _)| c);
        match (hold, reply) {
            (Some(h), Value::Int(0)) if h.count > 1 => {
                let until = self.now() + LEASE_MS;
                let count = h.count - 1;
                self.holds
                    .insert((Kind::Fair, name, client), Hold { count, until });
                return;
            }
            (Some(h), Value::Int(1)) if h.count == 1 => {}
            (None, Value::Int(1)) if !held => {}
            (None, Value::Nil) if held => return,
            (hold, reply) => {
                return self.fail(format!(
                    "fair unlock of lock {name} by {client} holding {hold:?}: reply {reply:?}"
                ));
            }
        }
        if let Some(head) = head {
            let wanted = format!("{}:{}", channel(Kind::Fair, name), owner(head));
            self.expect_wakeup(wanted, (Kind::Fair, name, Some(head)))
                .await;
        }
    }

    /// Every waiter is granted or times out: once every deadline and lease
    /// has passed, each fair lock's queue is empty after one more
    /// acquire, which is granted at once.
    async fn drain_fair(&mut self) {
        let latest = self
            .queues
            .values()
            .flatten()
            .map(|&(_, d)| d.max(0) as u64)
            .max()
            .unwrap_or(0);
        let by = latest.saturating_sub(self.now()) + LONGEST_LEASE_MS + 1;
        self.log
            .push(format!("clock +{by} ms: every deadline passes"));
        self.server()
            .clock()
            .unwrap()
            .advance(Duration::from_millis(by));
        self.woken = None;
        for name in 0..NAMES {
            self.log.push(format!("client 0 acquires Fair {name}"));
            self.acquire(Kind::Fair, name, 0).await;
            let [_, queue, timeouts] = fair_keys(name);
            let left: (i64, i64) = redis::pipe()
                .llen(&queue)
                .zcard(&timeouts)
                .query_async(&mut self.clients[0])
                .await
                .unwrap();
            if left != (0, 0) {
                self.fail(format!(
                    "fair lock {name}: waiters left after every deadline passed (queue, deadlines): {left:?}"
                ));
            }
        }
    }

    /// Either side of the read/write lock: granted unless another client
    /// holds the write side, or (for the write side) anyone holds the read
    /// side; a refusal is told what is left of the lock's lease.
    fn rw_acquired(
        &mut self,
        kind: Kind,
        name: usize,
        client: usize,
        own_write: Option<Hold>,
        reply: Value,
    ) {
        let (holds, last) = self.rw_holds(name);
        let blockers: Vec<(Kind, usize)> = holds
            .into_iter()
            .filter(|&(k, c)| match kind {
                Kind::Read => k == Kind::Write && c != client,
                _ => c != client || k == Kind::Read,
            })
            .collect();
        let now = self.now();
        match reply {
            Value::Nil if blockers.is_empty() => {
                self.outcome.grants += 1;
                self.taken(Kind::Write, name);
                if kind == Kind::Read {
                    let leases = self.reads.entry((name, client)).or_default();
                    if leases.last().is_some_and(|&u| u < now) {
                        leases.clear();
                    }
                    leases.push(now + LEASE_MS);
                } else {
                    let hold = Hold {
                        count: own_write.map_or(0, |h| h.count) + 1,
                        until: own_write.map_or(now, |h| h.until) + LEASE_MS,
                    };
                    self.holds.insert((kind, name, client), hold);
                }
            }
            Value::Nil => self.fail(format!(
                "{kind:?} side of read/write lock {name} granted to client {client} while clients {blockers:?} hold it"
            )),
            Value::Int(ttl)
                if !blockers.is_empty() && last.map(|l| l as i64 - now as i64) == Some(ttl) =>
            {
                self.refused(kind, name, client)
            }
            other => self.fail(format!(
                "{kind:?} side of read/write lock {name} by {client} (held by {blockers:?} until {last:?}): reply {other:?}"
            )),
        }
    }

    /// A release of either side; the one that frees the lock wakes its
    /// waiters, and none may free it while someone else still holds it.
    async fn rw_release(&mut self, kind: Kind, name: usize, client: usize, hold: Option<Hold>) {
        let k = key(kind, name);
        let reply = if kind == Kind::Read {
            let script = self.scripts.read_release.clone();
            let keys = [
                k.clone(),
                channel(kind, name),
                read_timeouts(name, client),
                k,
            ];
            let args = ["0".into(), owner(client)];
            let reply = self.invoke(client, &script, &keys, &args).await;
            if let Some(leases) = self.reads.get_mut(&(name, client)) {
                leases.pop();
            }
            reply
        } else {
            let script = self.scripts.write_release.clone();
            let args = ["0".into(), LEASE_MS.to_string(), writer(client)];
            self.invoke(client, &script, &[k, channel(kind, name)], &args)
                .await
        };
        let (holds, _) = self.rw_holds(name);
        // Redisson's read release keeps the lock for holds with time left
        // alone: a reader in its lease's last millisecond (PTTL 0, still
        // valid, as on Redis) does not count, and goes with the lock.
        let now = self.now();
        let lasting: Vec<(Kind, usize)> = holds
            .iter()
            .copied()
            .filter(|&(k, c)| {
                kind == Kind::Write
                    || k == Kind::Write
                    || self.valid(k, name, c).is_some_and(|h| h.until > now)
            })
            .collect();
        match (kind, hold, reply) {
            (Kind::Write, Some(h), Value::Int(0)) if h.count > 1 => {
                let until = self.now() + LEASE_MS;
                let count = h.count - 1;
                self.holds
                    .insert((kind, name, client), Hold { count, until });
                return;
            }
            (Kind::Write, Some(h), Value::Int(1)) if h.count == 1 => {}
            (_, None, Value::Int(1)) | (Kind::Read, Some(_), Value::Int(1))
                if lasting.is_empty() =>
            {
                for (_, c) in holds {
                    self.reads.remove(&(name, c));
                }
            }
            (Kind::Write, None, Value::Nil) | (Kind::Read, Some(_), Value::Int(0))
                if !lasting.is_empty() =>
            {
                return;
            }
            // A read hold whose lease ran out may still be counted while
            // other readers keep the hash.
            (Kind::Read, None, Value::Int(0) | Value::Nil) => return,
            (_, hold, reply) => {
                return self.fail(format!(
                    "{kind:?} unlock of read/write lock {name} by {client} holding {hold:?} (then held by {holds:?}): reply {reply:?}"
                ));
            }
        }
        self.expect_wakeup(channel(kind, name), (Kind::Write, name, None))
            .await;
    }

    /// Sends a client's acquire of a lock as its protocol does.
    async fn send_acquire(&mut self, kind: Kind, name: usize, client: usize) -> Value {
        let scripts = self.scripts;
        let k = key(kind, name);
        let me = owner(client);
        let lease = LEASE_MS.to_string();
        let (script, keys, args) = match kind {
            Kind::Plain => {
                let mut set = redis::cmd("SET");
                set.arg(k).arg(me).arg("NX").arg("PX").arg(LEASE_MS);
                return self.query(client, &set).await;
            }
            Kind::Reentrant => (&scripts.lock, vec![k], vec![lease, me]),
            Kind::Fenced => {
                let counter = format!("redisson_lock_token:{{lock{name}}}");
                (&scripts.fenced, vec![k, counter], vec![lease, me])
            }
            Kind::Fair => {
                let args = vec![lease, me, PATIENCE_MS.to_string(), self.now().to_string()];
                (&scripts.fair_acquire, fair_keys(name).to_vec(), args)
            }
            Kind::Semaphore => (&scripts.sem_acquire, vec![k], vec!["1".into()]),
            Kind::Read => {
                let keys = vec![k, read_timeouts(name, client)];
                (&scripts.read_acquire, keys, vec![lease, me, writer(client)])
            }
            Kind::Write => (&scripts.write_acquire, vec![k], vec![lease, writer(client)]),
        };
        self.invoke(client, script, &keys, &args).await
    }

    async fn acquire(&mut self, kind: Kind, name: usize, client: usize) {
        let own = self.valid(kind, name, client);
        let own_write = self.valid(Kind::Write, name, client);
        // A `SET NX` lock is not reentrant: a holder does not ask again. A
        // writer does not take the read side here: Redisson lets it, but
        // its read release then sets the hash's lease from the read holds
        // alone, which can cut a re-entered write lease short (a corner of
        // the protocol, not of the server). Re-entering the write side adds
        // a whole lease to what is left (`pttl + lease`): two holds at
        // most, so no lease is longer than `LONGEST_LEASE_MS`.
        let asks_again = match kind {
            Kind::Plain => own.is_some(),
            Kind::Read => own_write.is_some(),
            Kind::Write => own.is_some_and(|h| h.count >= 2),
            _ => false,
        };
        if asks_again {
            return;
        }
        let reply = self.send_acquire(kind, name, client).await;
        if self.now() < self.grace_until {
            // Restarted without persistence: nothing is granted until
            // every lease the old server gave can have run out.
            if !is_error(&reply, "LOADING") {
                self.fail(format!(
                    "{kind:?} lock {name} acquire by {client} during the restart grace: reply {reply:?}"
                ));
            }
            return;
        }
        let mine = own.is_some();
        match kind {
            Kind::Reentrant => match reply {
                Value::Nil => self.granted(kind, name, client, true),
                Value::Int(ttl) if ttl >= 0 && !mine => self.refused(kind, name, client),
                other => self.fail(format!("lock by client {client}: reply {other:?}")),
            },
            Kind::Fenced => match reply {
                Value::Array(ref parts) => match parts.as_slice() {
                    [Value::Int(-1), Value::Int(token)] => {
                        let last = self.tokens.get(&name).copied().unwrap_or(0);
                        if *token <= last {
                            self.fail(format!("fenced lock {name}: token {token} after {last}"));
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
            },
            Kind::Plain => match reply {
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
            },
            Kind::Fair => self.fair_acquired(name, client, reply),
            Kind::Read | Kind::Write => self.rw_acquired(kind, name, client, own_write, reply),
            Kind::Semaphore => {
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
                        let count = own.map_or(0, |h| h.count);
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
                        self.expect_wakeup(channel(kind, name), (kind, name, None))
                            .await;
                    }
                    (None, Value::Nil) => {}
                    (hold, reply) => self.fail(format!(
                        "unlock of {kind:?} lock {name} by {client} holding {hold:?}: reply {reply:?}"
                    )),
                }
            }
            Kind::Fair => {
                let now = self.now();
                let [lock, queue, timeouts] = fair_keys(name);
                let keys = [lock, queue, timeouts, channel(kind, name)];
                let args = ["0".into(), LEASE_MS.to_string(), me, now.to_string()];
                let script = self.scripts.fair_release.clone();
                let reply = self.invoke(client, &script, &keys, &args).await;
                self.fair_released(name, client, hold, reply).await;
            }
            Kind::Read | Kind::Write => self.rw_release(kind, name, client, hold).await,
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
            Kind::Reentrant | Kind::Fenced | Kind::Fair => {
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
            Kind::Write => {
                self.invoke(
                    client,
                    &self.scripts.renew.clone(),
                    &[k],
                    &[LEASE_MS.to_string(), writer(client)],
                )
                .await
            }
            Kind::Read => {
                self.invoke(
                    client,
                    &self.scripts.read_renew.clone(),
                    &[k, read_timeouts(name, client)],
                    &[LEASE_MS.to_string(), me],
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
                let now = self.now();
                let until = now + LEASE_MS;
                if kind == Kind::Read {
                    let leases = self.reads.entry((name, client)).or_default();
                    leases
                        .iter_mut()
                        .filter(|u| **u >= now)
                        .for_each(|u| *u = until);
                } else {
                    self.holds.insert((kind, name, client), Hold { until, ..h });
                }
            }
            (None, false) => {
                self.holds.remove(&(kind, name, client));
            }
            (hold, _) => self.fail(format!(
                "renewal of {kind:?} lock {name} by {client} holding {hold:?}: reply {reply:?}"
            )),
        }
    }

    /// A crash and a new server, its clock going on from the old one's:
    /// it loads the file (nothing unacknowledged reached it), or starts
    /// empty under the restart grace. The model keeps what clients believe
    /// they hold; without persistence the queues and the fencing counters
    /// are gone.
    async fn restart(&mut self) {
        self.log.push("crash and restart".into());
        self.outcome.restarts += 1;
        let at = self.server().clock().unwrap().now();
        if let Some(old) = self.server.take() {
            old.crash().await;
        }
        self.server = Some(start_server(self.restarts, at).await);
        if let Restarts::Grace(ms) = self.restarts {
            self.grace_until = self.now() + ms;
            self.queues.clear();
            self.tokens.clear();
        }
        for client in 0..CLIENTS {
            self.clients[client] = common::connect(self.server()).await;
        }
        self.listener.abort();
        self.listener = listen(self.server(), self.wakeup_sender.clone()).await;
        self.woken = None;
    }

    /// When the leases the model knows of end, in order.
    fn lease_ends(&self) -> Vec<u64> {
        let now = self.now();
        let holds = self.holds.values().map(|h| h.until);
        let reads = self.reads.values().filter_map(|l| l.last().copied());
        let mut ends: Vec<u64> = holds
            .chain(reads)
            .filter(|&u| u >= now && u != u64::MAX)
            .collect();
        ends.sort_unstable();
        ends
    }

    async fn fault(&mut self) {
        // A grace takes a few clock jumps to run out: restarts without
        // persistence are rarer, so that locks are taken between them.
        let restarts = match self.restarts {
            Restarts::Never => None,
            Restarts::Aof(_) => Some(4),
            Restarts::Grace(_) => Some(16),
        };
        if let Some(odds) = restarts
            && self.rng.below(odds) == 0
        {
            return self.restart().await;
        }
        match self.rng.below(11) {
            0..=5 => {
                // A third of the jumps land on a lease's last millisecond
                // or just past it: renewals and releases race the expiry.
                let ends = self.lease_ends();
                let by = if !ends.is_empty() && self.rng.below(3) == 0 {
                    let end = ends[self.rng.below(ends.len() as u64) as usize];
                    end + 1 - self.now() - self.rng.below(2)
                } else {
                    self.rng.below(LEASE_MS * 3 / 2)
                };
                self.log.push(format!("clock +{by} ms"));
                self.server()
                    .clock()
                    .unwrap()
                    .advance(Duration::from_millis(by));
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
            9 => {
                // The command, as an operator or a client would send it.
                let client = self.rng.below(CLIENTS as u64) as usize;
                let mode = ["WRITE", "ALL"][self.rng.below(2) as usize];
                self.log
                    .push(format!("client {client}: CLIENT PAUSE 20 {mode}"));
                let mut pause = redis::cmd("CLIENT");
                pause.arg("PAUSE").arg(20).arg(mode);
                let reply = self.query(client, &pause).await;
                if reply != Value::Okay {
                    self.fail(format!("CLIENT PAUSE: reply {reply:?}"));
                }
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
        let kind = self.kinds[self.rng.below(self.kinds.len() as u64) as usize];
        let name = self.rng.below(NAMES as u64) as usize;
        let client = self.rng.below(CLIENTS as u64) as usize;
        let action = self.rng.below(10);
        if self.now() < self.grace_until {
            // Clients retry until the grace ends.
            self.log
                .push(format!("client {client} acquires {kind:?} {name} (grace)"));
            return self.acquire(kind, name, client).await;
        }
        // A woken waiter tries first, as it would.
        if let Some((k, n, who)) = self.woken
            && (k, n) == (kind, name)
        {
            let client = who.unwrap_or(client);
            if self.valid(kind, name, client).is_none() {
                self.log
                    .push(format!("client {client} (woken) acquires {kind:?} {name}"));
                return self.acquire(kind, name, client).await;
            }
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
    pubsub
        .psubscribe(&["redisson_lock__channel:*", "redisson_rwlock:*"])
        .await
        .unwrap();
    tokio::spawn(async move {
        let mut messages = pubsub.on_message();
        while let Some(m) = messages.next().await {
            if wakeups.send(m.get_channel_name().to_string()).is_err() {
                break;
            }
        }
    })
}

async fn history(seed: u64, steps: u64, sabotage: Sabotage, restarts: Restarts<'_>) -> Outcome {
    let server = start_server(restarts, std::time::SystemTime::now()).await;
    let scripts = Scripts::new(sabotage);
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        clients.push(common::connect(&server).await);
    }
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let listener = listen(&server, tx.clone()).await;
    let mut run = Run {
        server: Some(server),
        restarts,
        grace_until: 0,
        rng: Rng(seed),
        kinds: match restarts {
            Restarts::Grace(_) => &LEASED,
            _ => sabotage.kinds(),
        },
        scripts: &scripts,
        clients,
        holds: HashMap::new(),
        tokens: HashMap::new(),
        queues: HashMap::new(),
        reads: HashMap::new(),
        wakeups: rx,
        wakeup_sender: tx,
        listener,
        woken: None,
        log: Vec::new(),
        outcome: Outcome::default(),
    };
    if let Restarts::Grace(ms) = restarts {
        run.grace_until = run.now() + ms;
    }
    for name in (0..NAMES).filter(|_| run.kinds.contains(&Kind::Semaphore)) {
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
    if run.outcome.violation.is_none() && run.kinds.contains(&Kind::Fair) {
        run.drain_fair().await;
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

/// Checks the histories of seeds 1..=`$seeds_var` (default `seeds`), or
/// the one `SAFETY_SEED` names, of `SAFETY_STEPS` operations (default
/// `steps`) each, restarting as `restarts` says (given a folder of the
/// seed's own for the append-only file), and prints what it checked.
async fn check_histories(
    what: &str,
    seeds_var: &str,
    seeds: u64,
    steps: u64,
    restarts: fn(&std::path::Path) -> Restarts<'_>,
) {
    let steps = env_u64("SAFETY_STEPS", steps);
    let seeds: Vec<u64> = match std::env::var("SAFETY_SEED") {
        Ok(one) => vec![one.parse().expect("SAFETY_SEED is a number")],
        Err(_) => (1..=env_u64(seeds_var, seeds)).collect(),
    };
    let started = std::time::Instant::now();
    let mut total = Outcome::default();
    let mut longest = 0;
    for &seed in &seeds {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("safety-{seeds_var}-{}-{seed}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let outcome = history(seed, steps, Sabotage::None, restarts(&dir)).await;
        if let Some(violation) = outcome.violation {
            // The folder is kept: its append-only file shows what each
            // key was recorded as before the crash.
            panic!(
                "seed {seed}{what} (replay: SAFETY_SEED={seed} SAFETY_STEPS={steps}; files in {}): {violation}",
                dir.display()
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
        total.operations += outcome.operations;
        total.grants += outcome.grants;
        total.restarts += outcome.restarts;
        longest = longest.max(outcome.operations);
    }
    println!(
        "safety{what}: {} histories, {} operations ({} grants), longest {longest}, {} restarts, 0 violations, {:.1} s",
        seeds.len(),
        total.operations,
        total.grants,
        total.restarts,
        started.elapsed().as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_history_breaks_mutual_exclusion() {
    check_histories("", "SAFETY_SEEDS", 12, 400, |_| Restarts::Never).await;
}

/// Crashes and restarts with the append-only file on (`appendfsync
/// always`): locks, leases, queues and fencing tokens carry over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_history_breaks_mutual_exclusion_across_restarts() {
    let what = " with restarts";
    check_histories(what, "SAFETY_RESTART_SEEDS", 3, 300, |dir| {
        Restarts::Aof(dir)
    })
    .await;
}

/// Crashes and restarts without persistence, under `lock-restart-grace-ms`
/// set to the longest lease: nothing is granted during the grace (every
/// acquire answers LOADING), and every lease the old server gave has ended
/// when it is over, so no two holders overlap across a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_history_breaks_mutual_exclusion_across_restarts_without_persistence() {
    let what = " with restarts under the grace";
    let grace = |_: &std::path::Path| Restarts::Grace(LONGEST_LEASE_MS);
    check_histories(what, "SAFETY_GRACE_SEEDS", 4, 300, grace).await;
}

/// The checker is not vacuous: a history driving a lock script broken
/// on purpose ends in a violation that says what broke.
async fn assert_caught(sabotage: Sabotage, says: &str) {
    let caught = history(7, 400, sabotage, Restarts::Never).await;
    let violation = caught.violation.expect("a broken lock must be caught");
    assert!(violation.contains(says), "{violation}");
}

/// A lock script that grants to everyone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checker_catches_a_lock_that_grants_twice() {
    assert_caught(Sabotage::Reentrant, "while clients").await;
}

/// A fair lock that hands a free lock to whoever asks, past the waiters
/// queued before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checker_catches_a_fair_lock_that_skips_the_queue() {
    assert_caught(Sabotage::Fair, "out of queue order").await;
}

/// A read/write lock that grants the write side while readers hold it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checker_catches_a_writer_granted_over_readers() {
    assert_caught(Sabotage::ReadWrite, "while clients [(Read").await;
}

/// A grace shorter than the longest lease ends while a lease the old
/// server granted still runs, and the new server treats that lock as free
/// (it grants it again, or a release finds it gone): caught, though the
/// server keeps the grace it was given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checker_catches_a_grace_shorter_than_a_lease() {
    let short = Restarts::Grace(LEASE_MS / 3);
    let caught = history(7, 1_000, Sabotage::None, short).await;
    let violation = caught.violation.expect("a short grace must be caught");
    assert!(!violation.contains("restart grace"), "{violation}");
}
