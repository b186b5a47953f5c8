//! The lock safety checker under failover (issue #31, item 3): seeded
//! histories over three servers (a primary, two replicas) and three real
//! `redis-sentinel`s on loopback, run the same way against redis-server
//! 7.0.15, rlockd in its default (asynchronous, Redis-like) mode and rlockd
//! in its safe mode (`lock-sync-replicas 2`: both replicas, `lock-promotion-grace-ms`),
//! and in a fourth row, rlockd alone, the safe mode under clock jumps too.
//!
//! Clients find the primary through Sentinel (`SENTINEL
//! GET-MASTER-ADDR-BY-NAME`, before every acquire, so they follow it when it
//! moves) and take Redisson's reentrant lock, fair lock (its queue and
//! deadlines) and read/write lock (either side), a `SET NX PX` lock
//! released by compare-and-delete, and the fenced lock (the reentrant lock
//! plus an `INCR`ed token), with leases of a few hundred ms. A refused
//! client waits as Redisson's does: subscribed to the lock's channel (the
//! fair lock's waiter to its own), it asks again when a release wakes it
//! or when the wait it was told runs out (the `SET NX` lock, with no
//! channel, polls). Faults, drawn by the seed: `kill -9` of the primary
//! (restarted once the sentinels have promoted a replica, so they make it a
//! replica), `SIGSTOP` of the primary until the sentinels promote a replica
//! (or a short stall they do not notice) and `SIGCONT` after, replication
//! links dropped (`CLIENT KILL TYPE master` on a replica, `TYPE replica` on
//! the primary), and in the fourth row a replica's clock stepped forward
//! (`RLOCKD.CLOCK ADVANCE` under `clock-control-runs`: what a wall clock
//! step does to leases; redis-server has no such hook, hence a row of its
//! own).
//!
//! Checks in real time, every client in this process on one clock: a client
//! knows it holds a lock from the grant's reply until the lease counted from
//! *before it sent* the request, or until it sends its release if sooner.
//! Two such spans of one lock that overlap (for the read/write lock, unless
//! both are readers) are a violation — `double` when one server granted
//! both, `lost` when the second came from another primary (the first grant
//! did not survive the failover) or when a release answered within the
//! lease finds the lock gone; `fence` when a fenced grant's token is not
//! above one already returned before it was asked for; `not woken` when a
//! waiter went on waiting while the lock was free (no span of anyone that
//! excludes it) for longer than `WAKE_BOUND`. Refusals (`-NOREPLICAS`,
//! `-LOADING`, `-READONLY`, any error) are "not granted, retry"; a request
//! with no answer grants nothing the client believes in.
//!
//! Every wait is bounded, histories stop at the budget, and every process
//! is killed when its history ends, failing or not. CI runs a short budget
//! that asserts what must hold: the checker catches a client that ignores
//! refusals, and the safe mode (where the build has it) shows none, clock
//! jumps or not. Redis's and the default mode's counts are printed, not
//! asserted. `RLOCKD_FAILOVER_BUDGET_S=600` runs longer;
//! `RLOCKD_FAILOVER_SEED` moves the first seed.

mod common;
mod refserver;
#[path = "common/sentinel.rs"]
mod rig;

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::redisson::{self, lock_channel, prefixed, rw_channel, tagged, writer};
use common::rng::Rng;
use redis::{Connection, Value};
use rig::{Kind, Server, Tools, Watched, text, tools};

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
/// A fair-lock waiter's wait for its turn once the one ahead has it
/// (Redisson's `threadWaitTime`): past it, a waiter that has not come back
/// is dropped from the queue.
const PATIENCE_MS: u64 = 1500;
/// The longest a refused client waits for a wake-up before it asks again:
/// a lease, whatever the refusal said.
const WAIT_CAP_MS: u64 = LEASE_MAX_MS;
/// How long the safe mode waits for its replicas' acknowledgements
/// (`lock-sync-timeout-ms`' default).
const SYNC_TIMEOUT_MS: u64 = 1000;
/// The longest a waiter may go on waiting while nobody holds the lock and
/// the rig is whole (a primary the sentinels name, answering, with both
/// replicas online; a failover's time does not count): a lease a client
/// was never told of (its grant's reply lost, or applied but refused for
/// want of acknowledgements), the promotion grace, the safe mode's wait
/// for acknowledgements, and two seconds' room for a loaded machine.
const WAKE_BOUND: Duration =
    Duration::from_millis(LEASE_MAX_MS + GRACE_MS + SYNC_TIMEOUT_MS + 2000);
/// How often the rig's health is looked at.
const HEALTH_POLL: Duration = Duration::from_millis(100);

/// The protocols, each on a lock of its own that every client wants (the
/// read/write lock's two sides on one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Protocol {
    /// Redisson's RLock scripts.
    Reentrant,
    /// `SET NX PX`, compare-and-delete.
    Plain,
    /// The fenced lock: the reentrant lock plus a token counter.
    Fenced,
    /// Redisson's fair lock: granted in queue order.
    Fair,
    /// The read side of Redisson's read/write lock: readers share it.
    Read,
    /// Its write side: a writer excludes every other holder.
    Write,
}

const PROTOCOLS: [Protocol; 6] = [
    Protocol::Reentrant,
    Protocol::Plain,
    Protocol::Fenced,
    Protocol::Fair,
    Protocol::Read,
    Protocol::Write,
];

/// The client's clock in Unix ms: the fair lock's deadlines are the
/// clients' time, so that every server of a deployment agrees on them.
fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

impl Protocol {
    fn key(self) -> &'static str {
        match self {
            Protocol::Reentrant => "lock:reentrant",
            Protocol::Plain => "lock:plain",
            Protocol::Fenced => "lock:fenced",
            Protocol::Fair => "lock:fair",
            Protocol::Read | Protocol::Write => "lock:rw",
        }
    }

    /// Whether its holders share the lock with one another.
    fn shared(self) -> bool {
        self == Protocol::Read
    }

    /// The request that asks for the lock for `owner`.
    fn acquire(self, owner: &str, lease: u64) -> redis::Cmd {
        let key = self.key();
        let lease = lease.to_string();
        match self {
            Protocol::Plain => {
                let mut cmd = redis::cmd("SET");
                cmd.arg(key).arg(owner).arg("NX").arg("PX").arg(lease);
                cmd
            }
            Protocol::Reentrant => eval(redisson::LOCK, &[key], &[&lease, owner]),
            Protocol::Fenced => {
                let counter = prefixed("redisson_lock_token", key);
                eval(redisson::FENCED, &[key, &counter], &[&lease, owner])
            }
            Protocol::Fair => {
                let [lock, queue, deadlines] = redisson::fair_keys(key);
                let args = [
                    &lease,
                    owner,
                    &PATIENCE_MS.to_string(),
                    &unix_ms().to_string(),
                ];
                eval(redisson::FAIR_ACQUIRE, &[&lock, &queue, &deadlines], &args)
            }
            Protocol::Read => {
                let timeouts = redisson::read_timeouts(key, owner);
                let args = [&lease, owner, &writer(owner)];
                eval(redisson::READ_ACQUIRE, &[key, &timeouts], &args)
            }
            Protocol::Write => eval(redisson::WRITE_ACQUIRE, &[key], &[&lease, &writer(owner)]),
        }
    }

    /// What the acquire's reply says: `Some(token)` granted (`0` for the
    /// locks without one), `None` refused.
    fn granted(self, reply: &Value) -> Option<i64> {
        match (self, reply) {
            (Protocol::Plain, Value::Okay) => Some(0),
            (Protocol::Fenced, Value::Array(pair)) => match pair.as_slice() {
                [Value::Int(-1), Value::Int(token)] => Some(*token),
                _ => None,
            },
            (Protocol::Plain | Protocol::Fenced, _) => None,
            (_, Value::Nil) => Some(0),
            _ => None,
        }
    }

    /// How long a refusal says the lock stays taken, in ms: what Redisson
    /// waits for a wake-up before it asks again (`None`: nothing said).
    fn told_wait(self, reply: &Value) -> Option<u64> {
        let ms = match (self, reply) {
            (Protocol::Plain, _) => return None,
            (Protocol::Fenced, Value::Array(pair)) => match pair.as_slice() {
                [Value::Int(ttl), Value::Int(-1)] => *ttl,
                _ => return None,
            },
            (_, Value::Int(ms)) => *ms,
            _ => return None,
        };
        Some(ms.max(0) as u64)
    }

    /// The channel a release that frees the lock wakes `owner` on, if the
    /// protocol has one.
    fn channel(self, owner: &str) -> Option<String> {
        let key = self.key();
        match self {
            Protocol::Plain => None,
            Protocol::Reentrant | Protocol::Fenced => Some(lock_channel(key)),
            Protocol::Fair => Some(format!("{}:{owner}", lock_channel(key))),
            Protocol::Read | Protocol::Write => Some(rw_channel(key)),
        }
    }

    fn release(self, owner: &str, lease: u64) -> redis::Cmd {
        let key = self.key();
        let lease = lease.to_string();
        match self {
            Protocol::Plain => eval(redisson::CAD, &[key], &[owner]),
            Protocol::Reentrant | Protocol::Fenced => {
                let keys = [key, &lock_channel(key)];
                eval(redisson::UNLOCK, &keys, &["0", &lease, owner])
            }
            Protocol::Fair => {
                let [lock, queue, deadlines] = redisson::fair_keys(key);
                let channel = lock_channel(key);
                let keys: [&str; 4] = [&lock, &queue, &deadlines, &channel];
                let args = ["0", &lease, owner, &unix_ms().to_string()];
                eval(redisson::FAIR_RELEASE, &keys, &args)
            }
            Protocol::Read => {
                let timeouts = redisson::read_timeouts(key, owner);
                let keys = [key, &rw_channel(key), &timeouts, &tagged(key)];
                eval(redisson::READ_RELEASE, &keys, &["0", owner])
            }
            Protocol::Write => {
                let keys = [key, &rw_channel(key)];
                eval(
                    redisson::WRITE_RELEASE,
                    &keys,
                    &["0", &lease, &writer(owner)],
                )
            }
        }
    }

    /// Whether the release's reply says the lock was there to release
    /// (Redisson's scripts answer nil to one that is not the holder).
    fn released(self, reply: &Value) -> bool {
        match self {
            Protocol::Plain => reply == &Value::Int(1),
            _ => reply != &Value::Nil,
        }
    }
}

fn eval(script: &str, keys: &[&str], args: &[&str]) -> redis::Cmd {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(script).arg(keys.len()).arg(keys).arg(args);
    cmd
}

/// The configuration a history runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Redis,
    Default,
    Safe,
    /// The safe mode, with replicas' clocks stepped forward among the
    /// faults (rlockd alone has the hook).
    SafeClock,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::Redis => "redis-server 7.0.15",
            Mode::Default => "rlockd default",
            Mode::Safe => "rlockd safe mode",
            Mode::SafeClock => "rlockd safe, clock jumps",
        }
    }

    fn kind(self) -> Kind {
        match self {
            Mode::Redis => Kind::Redis,
            Mode::Default | Mode::Safe | Mode::SafeClock => Kind::Rlockd,
        }
    }

    /// Every server's config lines: no snapshots (a restarted primary comes
    /// back empty), full syncs at once.
    fn lines(self) -> String {
        let mut lines = "save \"\"\nrepl-diskless-sync-delay 0\n".to_string();
        if matches!(self, Mode::Safe | Mode::SafeClock) {
            lines += &format!(
                "lock-sync-replicas 2\nlock-promotion-grace-ms {GRACE_MS}\n\
                 lock-restart-grace-ms {GRACE_MS}\n"
            );
        }
        if self == Mode::SafeClock {
            lines += "enable-clock-control yes\nclock-control-runs yes\n";
        }
        lines
    }

    /// How many kinds of fault it draws from (a stall is a short stop):
    /// the clock jump in its own row only, so that the other three draw
    /// the same faults from the same seed.
    fn drawn_faults(self) -> u64 {
        match self {
            Mode::SafeClock => 4,
            _ => 3,
        }
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
    /// A waiter still waiting after the lock was free for `WAKE_BOUND`.
    NotWoken,
}

/// A span in which a client knows it holds a lock.
struct Hold {
    client: u64,
    /// The server that granted it.
    port: u16,
    /// A read hold, which other readers share.
    shared: bool,
    from: Instant,
    until: Instant,
}

/// A fenced grant: its reply's time and its token.
struct Token {
    at: Instant,
    token: i64,
    /// The server that handed it out.
    port: u16,
}

/// Everything the clients learned, for the checks.
#[derive(Default)]
struct Ledger {
    /// By lock key.
    holds: HashMap<&'static str, Vec<Hold>>,
    tokens: Vec<Token>,
    violations: HashMap<Violation, u64>,
    /// The first few, described, for the report.
    examples: Vec<String>,
    /// The longest a waiter waited while the lock was free and the rig
    /// whole, and while it was free at all (what a failover costs).
    longest_free: Duration,
    longest_free_any: Duration,
    /// When the rig was not whole: failovers, stalls, replicas resyncing;
    /// and since when it has not been, if it is not now.
    outages: Vec<(Instant, Instant)>,
    out_since: Option<Instant>,
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
                .max_by_key(|t| t.token)
                .filter(|b| token <= b.token);
            if let Some(before) = before {
                let what = format!(
                    "client {} got token {token} from :{} after {} from :{}",
                    hold.client, hold.port, before.token, before.port
                );
                self.violation(Violation::Fence, what);
            }
            self.tokens.push(Token {
                at: hold.from,
                token,
                port: hold.port,
            });
        }
        let holds = self.holds.entry(protocol.key()).or_default();
        let clashes: Vec<(Violation, String)> = holds
            .iter()
            .filter(|h| h.client != hold.client && h.from < hold.until && hold.from < h.until)
            .filter(|h| !(h.shared && hold.shared))
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
        let hold = &mut self.holds.get_mut(protocol.key()).unwrap()[index];
        hold.until = hold.until.min(Instant::now());
    }

    /// The rig is whole (`true`) or not, as of now.
    fn health(&mut self, whole: bool) {
        let now = Instant::now();
        match (whole, self.out_since) {
            (true, Some(since)) => {
                self.outages.push((since, now));
                self.out_since = None;
            }
            (false, None) => self.out_since = Some(now),
            _ => {}
        }
    }

    /// The time the rig was not whole, up to `end`.
    fn outage(&self, end: Instant) -> Duration {
        let open = self.out_since.map(|since| (since, end));
        self.outages
            .iter()
            .copied()
            .chain(open)
            .map(|(a, b)| b.saturating_duration_since(a))
            .sum()
    }

    /// The longest stretch of `from..to` in which no client but `client`
    /// held the lock in a way that keeps `protocol` out, and, unless
    /// `outages` says they count, the rig was whole.
    fn free_within(
        &self,
        protocol: Protocol,
        client: u64,
        span: (Instant, Instant),
        outages: bool,
    ) -> Duration {
        let (from, to) = span;
        let open = self.out_since.map(|since| (since, to));
        let (open, closed) = if outages {
            (None, &[][..])
        } else {
            (open, &self.outages[..])
        };
        let holds = self
            .holds
            .get(protocol.key())
            .into_iter()
            .flatten()
            .filter(|h| h.client != client && !(h.shared && protocol.shared()))
            .map(|h| (h.from, h.until));
        let mut spans: Vec<(Instant, Instant)> = holds
            .chain(closed.iter().copied())
            .chain(open)
            .filter(|&(a, b)| a < to && from < b)
            .map(|(a, b)| (a.max(from), b.min(to)))
            .collect();
        spans.sort_unstable();
        let mut longest = Duration::ZERO;
        let mut free_since = from;
        for (start, end) in spans {
            longest = longest.max(start.saturating_duration_since(free_since));
            free_since = free_since.max(end);
        }
        longest.max(to.saturating_duration_since(free_since))
    }

    /// A client waited for `protocol`'s lock from `from` to `to` (its grant,
    /// or the history's end): it must not have gone on waiting while the
    /// lock was free for longer than `WAKE_BOUND`.
    /// `answers` says what it was told meanwhile, for the report.
    fn waited(
        &mut self,
        protocol: Protocol,
        client: u64,
        span: (Instant, Instant),
        answers: &Answers,
    ) {
        let (from, to) = span;
        let free = self.free_within(protocol, client, span, false);
        self.longest_free = self.longest_free.max(free);
        let any = self.free_within(protocol, client, span, true);
        self.longest_free_any = self.longest_free_any.max(any);
        if free > WAKE_BOUND {
            self.violation(
                Violation::NotWoken,
                format!(
                    "client {client} waited {:?} for {protocol:?}, {free:?} of it while nobody held it; told {answers:?}",
                    to - from
                ),
            );
        }
    }
}

/// What a waiter was told while it waited, by kind (an error's code, or
/// "held" for the protocol's own refusal), with how often.
type Answers = std::collections::BTreeMap<String, u64>;

/// The faults a history can inject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// `kill -9` of the primary, restarted once a replica took over.
    Kill,
    /// `SIGSTOP` of the primary until a replica took over, `SIGCONT` after.
    Stop,
    /// A `SIGSTOP` short enough that the sentinels do not notice.
    Stall,
    /// A replication link dropped.
    Link,
    /// A replica's clock stepped forward (rlockd only).
    Clock,
}

const FAULTS: [Fault; 5] = [
    Fault::Kill,
    Fault::Stop,
    Fault::Stall,
    Fault::Link,
    Fault::Clock,
];

/// One mode's figures over its histories.
#[derive(Default, Debug)]
struct Tally {
    histories: u64,
    operations: u64,
    grants: u64,
    failovers: u64,
    /// Faults injected, in `FAULTS`' order.
    faults: [u64; 5],
    /// Replicas promoted after their clock was stepped.
    stepped_promoted: u64,
    /// Waits a release's wake-up ended, and waits that ran out.
    woken: u64,
    timed_out: u64,
    longest_free: Duration,
    longest_free_any: Duration,
    /// How long the rig was not whole.
    outage: Duration,
    violations: HashMap<Violation, u64>,
    examples: Vec<String>,
}

impl Tally {
    fn count(&self, kind: Violation) -> u64 {
        self.violations.get(&kind).copied().unwrap_or(0)
    }

    fn add(&mut self, one: Tally) {
        self.histories += one.histories;
        self.operations += one.operations;
        self.grants += one.grants;
        self.failovers += one.failovers;
        for (sum, n) in self.faults.iter_mut().zip(one.faults) {
            *sum += n;
        }
        self.stepped_promoted += one.stepped_promoted;
        self.woken += one.woken;
        self.timed_out += one.timed_out;
        self.longest_free = self.longest_free.max(one.longest_free);
        self.longest_free_any = self.longest_free_any.max(one.longest_free_any);
        self.outage += one.outage;
        for (kind, n) in one.violations {
            *self.violations.entry(kind).or_default() += n;
        }
        let room = 5usize.saturating_sub(self.examples.len());
        self.examples.extend(one.examples.into_iter().take(room));
    }

    fn line(&self, mode: Mode) -> String {
        let faults: Vec<String> = FAULTS
            .iter()
            .zip(self.faults)
            .map(|(f, n)| format!("{f:?} {n}"))
            .collect();
        format!(
            "{:<26} histories {:>3}  operations {:>6}  grants {:>5}  failovers {:>3}  \
             violations: double {} lost {} fence {} not-woken {}\n{:<26} faults: {} \
             (stepped replicas promoted: {}); \
             waits woken {} timed out {}; rig not whole {:.0?}; \
             longest wait while free {} ms (outages counted: {} ms)",
            mode.label(),
            self.histories,
            self.operations,
            self.grants,
            self.failovers,
            self.count(Violation::Double),
            self.count(Violation::Lost),
            self.count(Violation::Fence),
            self.count(Violation::NotWoken),
            "",
            faults.join(", "),
            self.stepped_promoted,
            self.woken,
            self.timed_out,
            self.outage,
            self.longest_free.as_millis(),
            self.longest_free_any.as_millis(),
        )
    }
}

/// A connection to `port` with every wait bounded by `IO_TIMEOUT`.
fn open(port: u16) -> Option<Connection> {
    rig::bounded(port, IO_TIMEOUT)
}

/// A connection to the server at `port` subscribed to `channel`: a
/// waiter's ear.
fn subscribe(port: u16, channel: &str) -> Option<Connection> {
    let mut con = open(port)?;
    con.send_packed_command(&redis::cmd("SUBSCRIBE").arg(channel).get_packed_command())
        .ok()?;
    con.recv_response().ok()?;
    Some(con)
}

/// Whether a message came on `ear` within `wait`. A wait that ran out
/// leaves the connection expecting a reply it will not get: drop it then.
fn heard(ear: &mut Connection, wait: Duration) -> bool {
    ear.set_read_timeout(Some(wait.max(Duration::from_millis(1))))
        .is_ok()
        && ear.recv_response().is_ok()
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
    woken: AtomicU64,
    timed_out: AtomicU64,
    /// The client that takes any answer to an acquire as a grant, for the
    /// test that the checks can fail.
    reckless: Option<u64>,
}

/// A lock a client was granted.
struct Grant {
    port: u16,
    sent: Instant,
    answered: Instant,
    token: i64,
}

/// One client's wish for one lock.
struct Want<'o> {
    protocol: Protocol,
    owner: &'o str,
    lease: u64,
}

/// One client, on whichever server the sentinels name the primary.
struct Client<'s, 'a> {
    shared: &'s Shared<'a>,
    id: u64,
    rng: Rng,
    con: Option<(u16, Connection)>,
    round: u64,
}

impl Client<'_, '_> {
    /// A connection to the primary, opened anew when it moved.
    fn connect(&mut self) -> Option<u16> {
        let port = primary(self.shared.sentinels, (self.id + self.round) as usize)?;
        if self.con.as_ref().map(|c| c.0) != Some(port) {
            self.con = open(port).map(|c| (port, c));
        }
        self.con.as_ref().map(|c| c.0)
    }

    /// Asks for the lock until it is granted or the history ends, as
    /// Redisson's `lock()` does: refused, it subscribes to the lock's
    /// channel, asks again, and waits for a wake-up or for as long as it
    /// was told before asking again. Its wait goes to the ledger's check.
    fn obtain(&mut self, want: &Want) -> Option<Grant> {
        let shared = self.shared;
        // When it was first refused, and its subscription (on the server
        // it asks).
        let mut since: Option<Instant> = None;
        let mut answers = Answers::new();
        let mut ear: Option<Connection> = None;
        let mut asked: Option<u16> = None;
        while Instant::now() < shared.deadline {
            let Some(port) = self.connect() else {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            };
            if asked.replace(port) != Some(port) {
                ear = None;
            }
            let (_, c) = self.con.as_mut().unwrap();
            let sent = Instant::now();
            let reply = want
                .protocol
                .acquire(want.owner, want.lease)
                .query::<Value>(c);
            let answered = Instant::now();
            shared.operations.fetch_add(1, Ordering::Relaxed);
            let token = match &reply {
                Ok(v) => want.protocol.granted(v),
                Err(_) => None,
            };
            let token = match (token, &reply) {
                (Some(t), _) => Some(t),
                // Only an answer, not a timeout, can be misread as a grant.
                (None, Ok(_)) if shared.reckless == Some(self.id) => Some(0),
                _ => None,
            };
            if let Some(token) = token {
                if let Some(from) = since {
                    let mut ledger = shared.ledger.lock().unwrap();
                    ledger.waited(want.protocol, self.id, (from, answered), &answers);
                }
                return Some(Grant {
                    port,
                    sent,
                    answered,
                    token,
                });
            }
            since.get_or_insert(answered);
            let answer = match &reply {
                Ok(_) => "held",
                Err(e) => e.code().unwrap_or("no answer"),
            };
            *answers.entry(answer.to_string()).or_default() += 1;
            let told = match &reply {
                Ok(v) => want.protocol.told_wait(v),
                Err(e) => {
                    // A refusal is "not now"; anything else (a timeout, a
                    // closed link, READONLY from a demoted primary) means
                    // finding the primary again.
                    if !matches!(e.code(), Some("NOREPLICAS" | "LOADING")) {
                        self.con = None;
                        ear = None;
                    }
                    None
                }
            };
            // Refused for the first time here: subscribe, then ask again
            // at once, so that no release in between goes unheard.
            if told.is_some() && ear.is_none() {
                ear = want
                    .protocol
                    .channel(want.owner)
                    .and_then(|ch| subscribe(port, &ch));
                if ear.is_some() {
                    continue;
                }
            }
            match (told, ear.as_mut()) {
                (Some(ms), Some(listening)) => {
                    let wait = Duration::from_millis(ms.clamp(5, WAIT_CAP_MS))
                        .min(shared.deadline.saturating_duration_since(Instant::now()));
                    if heard(listening, wait) {
                        shared.woken.fetch_add(1, Ordering::Relaxed);
                    } else {
                        shared.timed_out.fetch_add(1, Ordering::Relaxed);
                        ear = None;
                    }
                }
                _ => std::thread::sleep(Duration::from_millis(5 + self.rng.below(40))),
            }
        }
        if let Some(from) = since {
            let mut ledger = shared.ledger.lock().unwrap();
            ledger.waited(want.protocol, self.id, (from, shared.deadline), &answers);
        }
        None
    }

    /// One round: a lock drawn by the seed, obtained, held a while,
    /// released (or, one round in eight, left to run out).
    fn round(&mut self) {
        let shared = self.shared;
        self.round += 1;
        let protocol = PROTOCOLS[self.rng.below(PROTOCOLS.len() as u64) as usize];
        let lease = LEASE_MIN_MS + self.rng.below(LEASE_MAX_MS - LEASE_MIN_MS + 1);
        let owner = format!("c{}-{}", self.id, self.round);
        let want = Want {
            protocol,
            owner: &owner,
            lease,
        };
        let Some(grant) = self.obtain(&want) else {
            return;
        };
        shared.grants.fetch_add(1, Ordering::Relaxed);
        let until = grant.sent + Duration::from_millis(lease) - CLOCK_SLACK;
        let hold = Hold {
            client: self.id,
            port: grant.port,
            shared: protocol.shared(),
            from: grant.answered,
            until,
        };
        let index = shared
            .ledger
            .lock()
            .unwrap()
            .grant(protocol, hold, grant.sent, grant.token);
        std::thread::sleep(Duration::from_millis(self.rng.below(lease * 3 / 4)));
        if self.rng.below(8) == 0 {
            return;
        }
        shared.ledger.lock().unwrap().releasing(protocol, index);
        let Some((_, c)) = self.con.as_mut() else {
            return;
        };
        let reply = protocol.release(&owner, lease).query::<Value>(c);
        let answered = Instant::now();
        shared.operations.fetch_add(1, Ordering::Relaxed);
        match reply {
            Ok(v) if !protocol.released(&v) && answered < until && shared.reckless.is_none() => {
                shared.ledger.lock().unwrap().violation(
                    Violation::Lost,
                    format!(
                        "{protocol:?}: client {}'s release within its lease found nothing",
                        self.id
                    ),
                )
            }
            Ok(_) => {}
            Err(_) => self.con = None,
        }
    }
}

/// One client's rounds until the deadline.
fn client(shared: &Shared, id: u64, seed: u64) {
    let mut client = Client {
        shared,
        id,
        rng: Rng(seed ^ (id + 1).wrapping_mul(0x5851_f42d_4c95_7f2d)),
        con: None,
        round: 0,
    };
    while Instant::now() < shared.deadline {
        client.round();
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

    /// Waits (bounded, and not past `deadline` by much) until every running
    /// server but `primary` follows it. A replica still set to follow the
    /// killed primary when it comes back empty would sync its empty data
    /// set, to be promoted later without what it had acknowledged.
    fn following(&self, primary: u16, deadline: Instant) {
        let end = (Instant::now() + FAILOVER_WAIT).min(deadline + FAILOVER_WAIT / 3);
        let follows = |port: u16| {
            let role = open(port).and_then(|mut c| redis::cmd("ROLE").query::<Value>(&mut c).ok());
            let Some(Value::Array(role)) = role else {
                return false;
            };
            let role: Vec<String> = role.into_iter().map(text).collect();
            role.first().map(String::as_str) == Some("slave")
                && role.get(2).map(String::as_str) == Some(&primary.to_string())
        };
        while Instant::now() < end && !self.replicas(primary).into_iter().all(follows) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The running servers but `primary`, in port order.
    fn replicas(&self, primary: u16) -> Vec<u16> {
        let mut replicas: Vec<u16> = self
            .running
            .keys()
            .copied()
            .filter(|&p| p != primary)
            .collect();
        replicas.sort_unstable();
        replicas
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

/// Waits (bounded, and not past `deadline` by much) until every sentinel
/// names one primary other than `old`. Not one alone: a sentinel that has
/// not heard of the failover yet, seeing the old primary back (restarted
/// empty), takes it for the primary still and makes the promoted replica
/// its replica again, which wipes it, as Sentinel does to Redis (an early
/// run of this checker found fencing tokens going back that way).
fn moved(sentinels: &[u16], old: u16, deadline: Instant) {
    let end = (Instant::now() + FAILOVER_WAIT).min(deadline + FAILOVER_WAIT / 3);
    let agreed = || {
        let named: Vec<Option<u16>> = (0..sentinels.len())
            .map(|i| primary(&sentinels[i..=i], 0))
            .collect();
        named[0].is_some_and(|p| p != old) && named.iter().all(|n| *n == named[0])
    };
    while Instant::now() < end && !agreed() {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The primaries the sentinels named, one after another: each change is a
/// failover, whether a fault caused it or a loaded machine's stall did.
#[derive(Default)]
struct Primaries {
    last: Option<u16>,
    changes: u64,
    /// The replicas whose clock was stepped, until promoted or restarted.
    stepped: HashSet<u16>,
    /// Those seen promoted.
    stepped_promoted: u64,
}

impl Primaries {
    /// The primary now, noting a change.
    fn now(&mut self, sentinels: &[u16]) -> Option<u16> {
        let now = primary(sentinels, 0)?;
        if self.last.is_some_and(|last| last != now) {
            self.changes += 1;
            if self.stepped.remove(&now) {
                self.stepped_promoted += 1;
            }
        }
        self.last = Some(now);
        Some(now)
    }
}

/// What a history's fault injector did and saw.
#[derive(Default)]
struct Injected {
    failovers: u64,
    /// In `FAULTS`' order.
    faults: [u64; 5],
    /// Replicas promoted after their clock was stepped.
    stepped_promoted: u64,
}

/// Whether the rig is whole: the sentinels name a primary that answers
/// as one, with both replicas online.
fn whole(sentinels: &[u16]) -> bool {
    let Some(port) = primary(sentinels, 0) else {
        return false;
    };
    let info: Option<String> =
        open(port).and_then(|mut con| redis::cmd("INFO").arg("replication").query(&mut con).ok());
    info.is_some_and(|info| {
        info.contains("role:master") && info.matches(",state=online,").count() == 2
    })
}

/// Notes in the ledger, until the deadline, when the rig is not whole.
fn watch(shared: &Shared) {
    while Instant::now() < shared.deadline {
        let whole = whole(shared.sentinels);
        shared.ledger.lock().unwrap().health(whole);
        nap(HEALTH_POLL.as_millis() as u64, shared.deadline);
    }
}

/// Sleeps until `deadline` at most.
fn nap(ms: u64, deadline: Instant) {
    let until = (Instant::now() + Duration::from_millis(ms)).min(deadline);
    std::thread::sleep(until.saturating_duration_since(Instant::now()));
}

/// Sends `args` to the server at `port`, answer or not.
fn tell(port: u16, args: &[&str]) {
    if let Some(mut con) = open(port) {
        let _: redis::RedisResult<Value> = redis::cmd(args[0]).arg(&args[1..]).query(&mut con);
    }
}

/// Whether the server at `port` answers ROLE as a replica.
fn is_replica(port: u16) -> bool {
    let role = open(port).and_then(|mut con| redis::cmd("ROLE").query::<Value>(&mut con).ok());
    matches!(role, Some(Value::Array(parts)) if parts.first().cloned().map(text).as_deref() == Some("slave"))
}

/// The faults of one history until its deadline.
fn inject(servers: &mut Servers, shared: &Shared, mode: Mode, rng: &mut Rng) -> Injected {
    let mut primaries = Primaries::default();
    let mut injected = [0u64; 5];
    while Instant::now() < shared.deadline {
        nap(500 + rng.below(1500), shared.deadline);
        let Some(old) = primaries.now(shared.sentinels) else {
            continue;
        };
        let Some(pid) = servers.pid(old) else {
            continue;
        };
        // A third of the stops are short stalls the sentinels do not notice.
        let fault = match rng.below(mode.drawn_faults()) {
            0 => Fault::Kill,
            1 if rng.below(3) == 0 => Fault::Stall,
            1 => Fault::Stop,
            2 => Fault::Link,
            _ => Fault::Clock,
        };
        injected[FAULTS.iter().position(|&f| f == fault).unwrap()] += 1;
        match fault {
            Fault::Kill => {
                let server = servers.running.remove(&old).unwrap();
                let (port, conf) = server.kill();
                moved(shared.sentinels, old, shared.deadline);
                if let Some(new) = primaries.now(shared.sentinels) {
                    servers.following(new, shared.deadline);
                }
                nap(rng.below(1000), shared.deadline);
                // A fresh process: its clock is the system's again.
                primaries.stepped.remove(&port);
                let restarted = Server::run(servers.tools, servers.kind, port, conf);
                servers.running.insert(port, restarted);
            }
            Fault::Stall => {
                signal(pid, libc::SIGSTOP);
                std::thread::sleep(Duration::from_millis(200 + rng.below(600)));
                signal(pid, libc::SIGCONT);
            }
            Fault::Stop => {
                signal(pid, libc::SIGSTOP);
                moved(shared.sentinels, old, shared.deadline);
                primaries.now(shared.sentinels);
                std::thread::sleep(Duration::from_millis(rng.below(500)));
                signal(pid, libc::SIGCONT);
            }
            Fault::Link => match servers.replicas(old).get(rng.below(3) as usize) {
                Some(&replica) => tell(replica, &["CLIENT", "KILL", "TYPE", "master"]),
                None => tell(old, &["CLIENT", "KILL", "TYPE", "replica"]),
            },
            Fault::Clock => {
                // A replica's, one that says so (the sentinels may not have
                // named a promotion yet): the primary's own clock stepped
                // forward ends its leases early in every mode
                // (docs/safety.md).
                let replicas = servers.replicas(old);
                let by = (200 + rng.below(2800)).to_string();
                if let Some(&replica) = replicas.get(rng.below(2) as usize)
                    && is_replica(replica)
                {
                    tell(replica, &["RLOCKD.CLOCK", "ADVANCE", &by]);
                    primaries.stepped.insert(replica);
                }
            }
        }
    }
    primaries.now(shared.sentinels);
    Injected {
        failovers: primaries.changes,
        faults: injected,
        stepped_promoted: primaries.stepped_promoted,
    }
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
        woken: AtomicU64::new(0),
        timed_out: AtomicU64::new(0),
        reckless: reckless.then_some(0),
    };
    let mut rng = Rng(seed);
    let injected = std::thread::scope(|s| {
        for id in 0..CLIENTS {
            let shared = &shared;
            s.spawn(move || client(shared, id, seed));
        }
        s.spawn(|| watch(&shared));
        // The clients stop at the deadline whatever happens here.
        // The test of the checks themselves needs no faults.
        let seen = if reckless {
            nap(length.as_millis() as u64, shared.deadline);
            Injected::default()
        } else {
            inject(&mut servers, &shared, mode, &mut rng)
        };
        // A stalled server left stopped would outlive nothing (it is
        // killed below), but the clients' last rounds should see it run.
        for server in servers.running.values() {
            signal(server.process.0.id() as i32, libc::SIGCONT);
        }
        seen
    });
    let ledger = shared.ledger.into_inner().unwrap();
    let outage = ledger.outage(shared.deadline);
    Tally {
        histories: 1,
        operations: shared.operations.into_inner(),
        grants: shared.grants.into_inner(),
        failovers: injected.failovers,
        faults: injected.faults,
        stepped_promoted: injected.stepped_promoted,
        woken: shared.woken.into_inner(),
        timed_out: shared.timed_out.into_inner(),
        longest_free: ledger.longest_free,
        longest_free_any: ledger.longest_free_any,
        outage,
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
        let seed = seed + tally.histories;
        let mut one = history(tools, mode, seed, length, false);
        for example in &mut one.examples {
            *example = format!("seed {seed}: {example}");
        }
        tally.add(one);
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
    let modes: Vec<Mode> = [Mode::Redis, Mode::Default, Mode::Safe, Mode::SafeClock]
        .into_iter()
        .filter(|&m| matches!(m, Mode::Redis | Mode::Default) || safe)
        .collect();
    let started = Instant::now();
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
    println!(
        "\nfailover histories from seed {seed}, budget {budget:?}, took {:.0?} \
         (a waiter may wait {WAKE_BOUND:?} while the lock is free):",
        started.elapsed()
    );
    for (mode, tally) in &tallies {
        println!("{}", tally.line(*mode));
        for example in &tally.examples {
            println!("    {example}");
        }
    }
    if !safe {
        println!(
            "{:<26} safe mode: not available on this build",
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
    for (mode, tally) in tallies
        .iter()
        .filter(|(m, _)| matches!(m, Mode::Safe | Mode::SafeClock))
    {
        assert!(
            tally.violations.values().all(|&n| n == 0),
            "the safe mode broke a lock: {}",
            tally.line(*mode)
        );
    }
}

/// The same rig, without faults, with one client that takes a refusal for
/// a grant: the checks must see it hold a lock another client holds.
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

/// The wake-up check on spans laid out by hand: a waiter that waited
/// while the lock was free past `WAKE_BOUND` is caught, one that waited
/// behind holders (a writer, for a reader) or through an outage is not,
/// and readers do not keep a reader out.
#[test]
fn the_wake_check_catches_a_waiter_left_waiting_on_a_free_lock() {
    let t0 = Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let mut ledger = Ledger::default();
    let bound = WAKE_BOUND.as_millis() as u64;
    // Client 1 holds the write side, then readers hold it, back to back.
    for (client, shared, from, until) in [
        (1, false, 0, bound / 2 - 1),
        (2, true, bound / 2, bound),
        (3, true, bound - 10, bound + bound / 2),
    ] {
        let hold = Hold {
            client,
            port: 1,
            shared,
            from: at(from),
            until: at(until),
        };
        ledger.grant(Protocol::Write, hold, at(from), 0);
    }
    let end = bound + bound / 2;
    ledger.waited(Protocol::Write, 0, (at(0), at(end)), &Answers::new());
    assert_eq!(ledger.violations.get(&Violation::NotWoken), None);
    // A reader waits only behind the writer: free from bound / 2 - 1 on.
    ledger.waited(Protocol::Read, 0, (at(0), at(end)), &Answers::new());
    assert_eq!(ledger.violations.get(&Violation::NotWoken), Some(&1));
    assert_eq!(ledger.longest_free, Duration::from_millis(bound + 1));
    // Free from bound + bound / 2 to the wait's end.
    ledger.waited(
        Protocol::Write,
        0,
        (at(0), at(end + bound + 1)),
        &Answers::new(),
    );
    assert_eq!(ledger.violations.get(&Violation::NotWoken), Some(&2));
    // Not if the rig was not whole then: a failover's time does not count.
    ledger
        .outages
        .push((at(end + bound / 2), at(end + bound / 2 + 1)));
    ledger.waited(
        Protocol::Write,
        0,
        (at(0), at(end + bound + 1)),
        &Answers::new(),
    );
    assert_eq!(ledger.violations.get(&Violation::NotWoken), Some(&2));
}
