//! The lock safety checker under failover (issue #31, item 3): seeded
//! histories over three servers (a primary, two replicas) and three real
//! `redis-sentinel`s on loopback, run the same way against redis-server
//! 7.0.15, rlockd in its default (asynchronous, Redis-like) mode and rlockd
//! in its safe mode (`lock-sync-replicas 2`: both replicas, `lock-promotion-grace-ms`).
//!
//! Clients find the primary through Sentinel (`SENTINEL
//! GET-MASTER-ADDR-BY-NAME`, before every acquire, so they follow it when it
//! moves) and take Redisson's reentrant lock, a `SET NX PX` lock released by
//! compare-and-delete, and the fenced lock (the reentrant lock plus an
//! `INCR`ed token), with leases of a few hundred ms. Faults, drawn by the
//! seed: `kill -9` of the primary (restarted once the sentinels have
//! promoted a replica, so they make it a replica), `SIGSTOP` of the primary
//! until the sentinels promote a replica (or a short stall they do not
//! notice) and `SIGCONT` after, replication links dropped (`CLIENT KILL
//! TYPE master` on a replica, `TYPE replica` on the primary).
//!
//! Checks in real time, every client in this process on one clock: a client
//! knows it holds a lock from the grant's reply until the lease counted from
//! *before it sent* the request, or until it sends its release if sooner.
//! Two such spans of one lock that overlap are a violation — `double` when
//! one server granted both, `lost` when the second came from another
//! primary (the first grant did not survive the failover) or when a release
//! answered within the lease finds the lock gone; `fence` when a fenced
//! grant's token is not above one already returned before it was asked for.
//! Refusals (`-NOREPLICAS`, `-LOADING`, `-READONLY`, any error) are "not
//! granted, retry"; a request with no answer grants nothing the client
//! believes in.
//!
//! Every wait is bounded, histories stop at the budget, and every process
//! is killed when its history ends, failing or not. CI runs a short budget
//! that asserts what must hold: the checker catches a client that ignores
//! refusals, and the safe mode (where the build has it) shows none.
//! Redis's and the default mode's counts are printed, not asserted.
//! `RLOCKD_FAILOVER_BUDGET_S=600` runs longer; `RLOCKD_FAILOVER_SEED` moves
//! the first seed.

mod common;
mod refserver;
#[path = "common/sentinel.rs"]
mod rig;

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::rng::Rng;
use redis::{Connection, Value};
use rig::{Kind, Server, Tools, Watched, tools};

const LEASE_MIN_MS: u64 = 300;
const LEASE_MAX_MS: u64 = 600;
/// The safe mode's promotion (and restart) grace: the longest lease, and
/// room for a grant's reply in flight.
const GRACE_MS: u64 = LEASE_MAX_MS + 400;
const CLIENTS: u64 = 4;
/// A client's connect, read and write timeout: a stalled primary must not
/// hold it for long.
const IO_TIMEOUT: Duration = Duration::from_millis(400);
/// A server counts a lease in whole milliseconds from its own reading of
/// the clock, so a lease may end up to a millisecond before the client's
/// span; a bit more room than that keeps the check sound.
const CLOCK_SLACK: Duration = Duration::from_millis(3);
/// One history's time under faults.
const HISTORY: Duration = Duration::from_secs(15);
/// How long a fault waits for the sentinels to move the primary.
const FAILOVER_WAIT: Duration = Duration::from_secs(15);

/// The three protocols, each on a lock of its own that every client wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Protocol {
    /// Redisson's RLock scripts.
    Reentrant,
    /// `SET NX PX`, compare-and-delete.
    Plain,
    /// The fenced lock: the reentrant lock plus a token counter.
    Fenced,
}

const PROTOCOLS: [Protocol; 3] = [Protocol::Reentrant, Protocol::Plain, Protocol::Fenced];

const LOCK: &str = include_str!("../src/command/scripting/lock_scripts/redisson_lock.lua");
const UNLOCK: &str = include_str!("../src/command/scripting/lock_scripts/redisson_unlock.lua");
const FENCED: &str = include_str!("../conformance/scripts/lock_fenced_acquire.lua");
const CAD: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";

impl Protocol {
    fn key(self) -> &'static str {
        match self {
            Protocol::Reentrant => "lock:reentrant",
            Protocol::Plain => "lock:plain",
            Protocol::Fenced => "lock:fenced",
        }
    }

    /// The request that asks for the lock for `owner`.
    fn acquire(self, owner: &str, lease: u64) -> redis::Cmd {
        let key = self.key();
        let mut cmd = match self {
            Protocol::Reentrant => eval(LOCK, &[key]),
            Protocol::Fenced => eval(FENCED, &[key, "redisson_lock_token:{lock:fenced}"]),
            Protocol::Plain => {
                let mut cmd = redis::cmd("SET");
                cmd.arg(key).arg(owner).arg("NX").arg("PX").arg(lease);
                return cmd;
            }
        };
        cmd.arg(lease).arg(owner);
        cmd
    }

    /// What the acquire's reply says: `Some(token)` granted (`0` for the
    /// locks without one), `None` refused.
    fn granted(self, reply: &Value) -> Option<i64> {
        match (self, reply) {
            (Protocol::Reentrant, Value::Nil) | (Protocol::Plain, Value::Okay) => Some(0),
            (Protocol::Fenced, Value::Array(pair)) => match pair.as_slice() {
                [Value::Int(-1), Value::Int(token)] => Some(*token),
                _ => None,
            },
            _ => None,
        }
    }

    fn release(self, owner: &str, lease: u64) -> redis::Cmd {
        let key = self.key();
        match self {
            Protocol::Plain => {
                let mut cmd = eval(CAD, &[key]);
                cmd.arg(owner);
                cmd
            }
            Protocol::Reentrant | Protocol::Fenced => {
                let channel = format!("redisson_lock__channel:{{{key}}}");
                let mut cmd = eval(UNLOCK, &[key, &channel]);
                cmd.arg(0).arg(lease).arg(owner);
                cmd
            }
        }
    }

    /// Whether the release's reply says the lock was there to release.
    fn released(self, reply: &Value) -> bool {
        match self {
            Protocol::Plain => reply == &Value::Int(1),
            Protocol::Reentrant | Protocol::Fenced => reply != &Value::Nil,
        }
    }
}

fn eval(script: &str, keys: &[&str]) -> redis::Cmd {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(script).arg(keys.len()).arg(keys);
    cmd
}

/// The configuration a history runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Redis,
    Default,
    Safe,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::Redis => "redis-server 7.0.15",
            Mode::Default => "rlockd default",
            Mode::Safe => "rlockd safe mode",
        }
    }

    fn kind(self) -> Kind {
        match self {
            Mode::Redis => Kind::Redis,
            Mode::Default | Mode::Safe => Kind::Rlockd,
        }
    }

    /// Every server's config lines: no snapshots (a restarted primary comes
    /// back empty), full syncs at once.
    fn lines(self) -> String {
        let mut lines = "save \"\"\nrepl-diskless-sync-delay 0\n".to_string();
        if self == Mode::Safe {
            lines += &format!(
                "lock-sync-replicas 2\nlock-promotion-grace-ms {GRACE_MS}\n\
                 lock-restart-grace-ms {GRACE_MS}\n"
            );
        }
        lines
    }
}

/// Whether this build of rlockd has the safe mode's directives.
fn safe_mode_available() -> bool {
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_rlockd"))
        .arg("--help")
        .output()
        .expect("rlockd --help runs");
    let help = String::from_utf8_lossy(&help.stdout);
    ["--lock-sync-replicas ", "--lock-promotion-grace-ms "]
        .iter()
        .all(|d| help.contains(d))
}

/// What went wrong, by kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Violation {
    /// One server granted a lock whose lease another holder still had.
    Double,
    /// A holder's lock was gone while its lease ran: another primary
    /// granted it, or its release found nothing.
    Lost,
    /// A fencing token not above one handed out before it was asked for.
    Fence,
}

/// A span in which a client knows it holds a lock.
struct Hold {
    client: u64,
    /// The server that granted it.
    port: u16,
    from: Instant,
    until: Instant,
}

/// A fenced grant: its reply's time and its token.
struct Token {
    at: Instant,
    token: i64,
}

/// Everything the clients learned, for the checks.
#[derive(Default)]
struct Ledger {
    holds: HashMap<Protocol, Vec<Hold>>,
    tokens: Vec<Token>,
    violations: HashMap<Violation, u64>,
    /// The first few, described, for the report.
    examples: Vec<String>,
}

impl Ledger {
    fn violation(&mut self, kind: Violation, what: String) {
        *self.violations.entry(kind).or_default() += 1;
        if self.examples.len() < 5 {
            self.examples.push(format!("{kind:?}: {what}"));
        }
    }

    /// Records a grant and checks it against every other holder's span;
    /// gives the hold's index, for its release.
    fn grant(&mut self, protocol: Protocol, hold: Hold, sent: Instant, token: i64) -> usize {
        if protocol == Protocol::Fenced && token != 0 {
            let before = self
                .tokens
                .iter()
                .filter(|t| t.at < sent)
                .map(|t| t.token)
                .max();
            if let Some(before) = before.filter(|&b| token <= b) {
                self.violation(
                    Violation::Fence,
                    format!("client {} got token {token} after {before}", hold.client),
                );
            }
            self.tokens.push(Token {
                at: hold.from,
                token,
            });
        }
        let holds = self.holds.entry(protocol).or_default();
        let clashes: Vec<(Violation, String)> = holds
            .iter()
            .filter(|h| h.client != hold.client && h.from < hold.until && hold.from < h.until)
            .map(|h| {
                let kind = if h.port == hold.port {
                    Violation::Double
                } else {
                    Violation::Lost
                };
                let what = format!(
                    "{protocol:?} held by client {} (from :{}) and client {} (from :{})",
                    h.client, h.port, hold.client, hold.port
                );
                (kind, what)
            })
            .collect();
        holds.push(hold);
        let index = holds.len() - 1;
        for (kind, what) in clashes {
            self.violation(kind, what);
        }
        index
    }

    /// The client is about to send its release: its span ends now. The
    /// time is read under the ledger's lock, so a grant checked after it
    /// sees the span's true end.
    fn releasing(&mut self, protocol: Protocol, index: usize) {
        let hold = &mut self.holds.get_mut(&protocol).unwrap()[index];
        hold.until = hold.until.min(Instant::now());
    }
}

/// One mode's figures over its histories.
#[derive(Default, Debug)]
struct Tally {
    histories: u64,
    operations: u64,
    grants: u64,
    failovers: u64,
    violations: HashMap<Violation, u64>,
    examples: Vec<String>,
}

impl Tally {
    fn count(&self, kind: Violation) -> u64 {
        self.violations.get(&kind).copied().unwrap_or(0)
    }

    fn line(&self, mode: Mode) -> String {
        format!(
            "{:<20} histories {:>3}  operations {:>6}  grants {:>5}  failovers {:>3}  \
             violations: double {} lost {} fence {}",
            mode.label(),
            self.histories,
            self.operations,
            self.grants,
            self.failovers,
            self.count(Violation::Double),
            self.count(Violation::Lost),
            self.count(Violation::Fence),
        )
    }
}

/// A connection to `port` with every wait bounded by `IO_TIMEOUT`.
fn open(port: u16) -> Option<Connection> {
    rig::bounded(port, IO_TIMEOUT)
}

/// The primary as the first sentinel that answers names it.
fn primary(sentinels: &[u16], first: usize) -> Option<u16> {
    rig::primary(sentinels, first, IO_TIMEOUT)
}

/// What one history shares between its clients and its fault injector.
struct Shared<'a> {
    sentinels: &'a [u16],
    deadline: Instant,
    ledger: Mutex<Ledger>,
    operations: AtomicU64,
    grants: AtomicU64,
    /// The client that takes any answer to an acquire as a grant, for the
    /// test that the checks can fail.
    reckless: Option<u64>,
}

/// One client's rounds until the deadline: find the primary, ask for a
/// lock, hold it a while, release it.
fn client(shared: &Shared, id: u64, seed: u64) {
    let mut rng = Rng(seed ^ (id + 1).wrapping_mul(0x5851_f42d_4c95_7f2d));
    let mut con: Option<(u16, Connection)> = None;
    let mut round = 0u64;
    while Instant::now() < shared.deadline {
        round += 1;
        let Some(port) = primary(shared.sentinels, (id + round) as usize) else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        if con.as_ref().map(|c| c.0) != Some(port) {
            con = open(port).map(|c| (port, c));
        }
        let Some((port, c)) = con.as_mut() else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        let port = *port;
        let protocol = PROTOCOLS[rng.below(3) as usize];
        let lease = LEASE_MIN_MS + rng.below(LEASE_MAX_MS - LEASE_MIN_MS + 1);
        let owner = format!("c{id}-{round}");
        let sent = Instant::now();
        let reply = protocol.acquire(&owner, lease).query::<Value>(c);
        let answered = Instant::now();
        shared.operations.fetch_add(1, Ordering::Relaxed);
        let token = match &reply {
            Ok(v) => protocol.granted(v),
            Err(_) => None,
        };
        let token = match (token, &reply) {
            (Some(t), _) => Some(t),
            // Only an answer, not a timeout, can be misread as a grant.
            (None, Ok(_)) if shared.reckless == Some(id) => Some(0),
            _ => None,
        };
        if let Err(e) = &reply {
            // A refusal is "not now"; anything else (a timeout, a closed
            // link, READONLY from a demoted primary) means finding the
            // primary again.
            if !matches!(e.code(), Some("NOREPLICAS" | "LOADING")) {
                con = None;
            }
        }
        let Some(token) = token else {
            std::thread::sleep(Duration::from_millis(5 + rng.below(40)));
            continue;
        };
        shared.grants.fetch_add(1, Ordering::Relaxed);
        let until = sent + Duration::from_millis(lease) - CLOCK_SLACK;
        let hold = Hold {
            client: id,
            port,
            from: answered,
            until,
        };
        let index = shared
            .ledger
            .lock()
            .unwrap()
            .grant(protocol, hold, sent, token);
        std::thread::sleep(Duration::from_millis(rng.below(lease * 3 / 4)));
        // One round in eight lets the lease run out instead.
        if rng.below(8) == 0 {
            continue;
        }
        shared.ledger.lock().unwrap().releasing(protocol, index);
        let Some((_, c)) = con.as_mut() else { continue };
        let reply = protocol.release(&owner, lease).query::<Value>(c);
        let answered = Instant::now();
        shared.operations.fetch_add(1, Ordering::Relaxed);
        match reply {
            Ok(v) if !protocol.released(&v) && answered < until && shared.reckless.is_none() => {
                shared.ledger.lock().unwrap().violation(
                    Violation::Lost,
                    format!("{protocol:?}: client {id}'s release within its lease found nothing"),
                )
            }
            Ok(_) => {}
            Err(_) => con = None,
        }
    }
}

/// The servers of one history, by port; `None` while killed.
struct Servers<'t> {
    tools: &'t Tools,
    kind: Kind,
    running: HashMap<u16, Server>,
}

impl Servers<'_> {
    fn pid(&self, port: u16) -> Option<i32> {
        self.running.get(&port).map(|s| s.process.0.id() as i32)
    }
}

fn signal(pid: i32, sig: libc::c_int) {
    // SAFETY: `pid` is a child of this process that has not been waited
    // for (its `Running` still holds it), so the id cannot have been reused
    // by another process; kill(2) has no memory effects here.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// Waits (bounded, and not past `deadline` by much) until the sentinels
/// name a primary other than `old`.
fn moved(sentinels: &[u16], old: u16, deadline: Instant) {
    let end = (Instant::now() + FAILOVER_WAIT).min(deadline + FAILOVER_WAIT / 3);
    while Instant::now() < end && primary(sentinels, 0).is_none_or(|p| p == old) {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The primaries the sentinels named, one after another: each change is a
/// failover, whether a fault caused it or a loaded machine's stall did.
#[derive(Default)]
struct Primaries {
    last: Option<u16>,
    changes: u64,
}

impl Primaries {
    /// The primary now, noting a change.
    fn now(&mut self, sentinels: &[u16]) -> Option<u16> {
        let now = primary(sentinels, 0)?;
        if self.last.is_some_and(|last| last != now) {
            self.changes += 1;
        }
        self.last = Some(now);
        Some(now)
    }
}

/// Sleeps until `deadline` at most.
fn nap(ms: u64, deadline: Instant) {
    let until = (Instant::now() + Duration::from_millis(ms)).min(deadline);
    std::thread::sleep(until.saturating_duration_since(Instant::now()));
}

/// Runs `CLIENT KILL TYPE type` on the server at `port`, answer or not.
fn drop_links(port: u16, kind: &str) {
    if let Some(mut con) = open(port) {
        let _: redis::RedisResult<Value> = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("TYPE")
            .arg(kind)
            .query(&mut con);
    }
}

/// The faults of one history until its deadline; the failovers seen.
fn inject(servers: &mut Servers, shared: &Shared, rng: &mut Rng) -> u64 {
    let mut primaries = Primaries::default();
    while Instant::now() < shared.deadline {
        nap(500 + rng.below(1500), shared.deadline);
        let Some(old) = primaries.now(shared.sentinels) else {
            continue;
        };
        let Some(pid) = servers.pid(old) else {
            continue;
        };
        match rng.below(3) {
            0 => {
                let server = servers.running.remove(&old).unwrap();
                let (port, conf) = server.kill();
                moved(shared.sentinels, old, shared.deadline);
                primaries.now(shared.sentinels);
                nap(rng.below(1000), shared.deadline);
                let restarted = Server::run(servers.tools, servers.kind, port, conf);
                servers.running.insert(port, restarted);
            }
            1 => {
                signal(pid, libc::SIGSTOP);
                // A third are short stalls the sentinels do not notice.
                if rng.below(3) == 0 {
                    std::thread::sleep(Duration::from_millis(200 + rng.below(600)));
                } else {
                    moved(shared.sentinels, old, shared.deadline);
                    primaries.now(shared.sentinels);
                    std::thread::sleep(Duration::from_millis(rng.below(500)));
                }
                signal(pid, libc::SIGCONT);
            }
            _ => {
                let mut replicas: Vec<u16> = servers
                    .running
                    .keys()
                    .copied()
                    .filter(|&p| p != old)
                    .collect();
                replicas.sort_unstable();
                match replicas.get(rng.below(3) as usize) {
                    Some(&replica) => drop_links(replica, "master"),
                    None => drop_links(old, "replica"),
                }
            }
        }
    }
    primaries.now(shared.sentinels);
    primaries.changes
}

/// One history of `mode` from `seed`, lasting `length` under faults.
fn history(tools: &Tools, mode: Mode, seed: u64, length: Duration, reckless: bool) -> Tally {
    let dir = common::TempDir::new(&format!("{mode:?}-{seed}"));
    let kind = mode.kind();
    let watched = Watched::start(tools, kind, &dir, &mode.lines());
    let ports = watched.sentinel_ports();
    let mut servers = Servers {
        tools,
        kind,
        running: watched.servers.into_iter().map(|s| (s.port, s)).collect(),
    };
    let shared = Shared {
        sentinels: &ports,
        deadline: Instant::now() + length,
        ledger: Mutex::default(),
        operations: AtomicU64::new(0),
        grants: AtomicU64::new(0),
        reckless: reckless.then_some(0),
    };
    let mut rng = Rng(seed);
    let failovers = std::thread::scope(|s| {
        for id in 0..CLIENTS {
            let shared = &shared;
            s.spawn(move || client(shared, id, seed));
        }
        // The clients stop at the deadline whatever happens here.
        let failovers = inject(&mut servers, &shared, &mut rng);
        // A stalled server left stopped would outlive nothing (it is
        // killed below), but the clients' last rounds should see it run.
        for server in servers.running.values() {
            signal(server.process.0.id() as i32, libc::SIGCONT);
        }
        failovers
    });
    let ledger = shared.ledger.into_inner().unwrap();
    Tally {
        histories: 1,
        operations: shared.operations.into_inner(),
        grants: shared.grants.into_inner(),
        failovers,
        violations: ledger.violations,
        examples: ledger.examples,
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Histories of `mode` from seed `seed` on, one after another, while
/// `budget` lasts (at least one).
fn histories(tools: &Tools, mode: Mode, seed: u64, budget: Duration) -> Tally {
    let start = Instant::now();
    let mut tally = Tally::default();
    // Setting a history up (servers, sentinels, discovery) takes seconds.
    let setup = Duration::from_secs(10);
    loop {
        let length = HISTORY.min(budget.saturating_sub(setup));
        let one = history(tools, mode, seed + tally.histories, length, false);
        tally.histories += 1;
        tally.operations += one.operations;
        tally.grants += one.grants;
        tally.failovers += one.failovers;
        for (kind, n) in one.violations {
            *tally.violations.entry(kind).or_default() += n;
        }
        let room = 5usize.saturating_sub(tally.examples.len());
        tally.examples.extend(one.examples.into_iter().take(room));
        if start.elapsed() + HISTORY + setup > budget {
            return tally;
        }
    }
}

#[test]
fn failover_histories_side_by_side() {
    let test = "failover_histories_side_by_side";
    let Some(tools) = tools(test) else {
        return;
    };
    let budget = Duration::from_secs(env_u64("RLOCKD_FAILOVER_BUDGET_S", 45));
    let seed = env_u64("RLOCKD_FAILOVER_SEED", 1);
    let safe = safe_mode_available();
    let modes: Vec<Mode> = [Mode::Redis, Mode::Default, Mode::Safe]
        .into_iter()
        .filter(|&m| m != Mode::Safe || safe)
        .collect();
    let tallies: Vec<(Mode, Tally)> = std::thread::scope(|s| {
        let runs: Vec<_> = modes
            .iter()
            .map(|&mode| {
                let tools = &tools;
                (mode, s.spawn(move || histories(tools, mode, seed, budget)))
            })
            .collect();
        runs.into_iter()
            .map(|(mode, run)| (mode, run.join().unwrap()))
            .collect()
    });
    println!("\nfailover histories from seed {seed}, budget {budget:?}:");
    for (mode, tally) in &tallies {
        println!("{}", tally.line(*mode));
        for example in &tally.examples {
            println!("    {example}");
        }
    }
    if !safe {
        println!(
            "{:<20} safe mode: not available on this build",
            Mode::Safe.label()
        );
    }
    for (mode, tally) in &tallies {
        assert!(
            tally.grants > 0,
            "{}: no lock was ever granted, so nothing was checked",
            mode.label()
        );
    }
    if let Some((_, tally)) = tallies.iter().find(|(m, _)| *m == Mode::Safe) {
        assert!(
            tally.violations.values().all(|&n| n == 0),
            "the safe mode broke a lock: {}",
            tally.line(Mode::Safe)
        );
    }
}

/// The same rig with one client that takes a refusal for a grant: the
/// checks must see it hold a lock another client holds.
#[test]
fn the_failover_checker_catches_a_client_that_ignores_refusals() {
    let test = "the_failover_checker_catches_a_client_that_ignores_refusals";
    let Some(tools) = tools(test) else {
        return;
    };
    let tally = history(&tools, Mode::Default, 7, Duration::from_secs(8), true);
    println!("{}", tally.line(Mode::Default));
    assert!(tally.count(Violation::Double) > 0, "{tally:?}");
}
