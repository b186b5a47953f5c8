//! Failover time under Sentinel (issue #31), redis-server and rlockd side
//! by side: a primary, two replicas and three real `redis-sentinel`s on
//! loopback, set up as the failover tests set them up
//! (`tests/common/sentinel.rs`: `down-after-milliseconds` 1000, the same
//! settings for every side), all redis-server 7.0.15, all rlockd by
//! default, all rlockd in the safe mode (`lock-sync-replicas 2`,
//! `lock-promotion-grace-ms` at the locks' lease), or the same with
//! `lock-sync-replicas 1` (the grace alone to wait out). A client finds the
//! primary through the sentinels (`SENTINEL GET-MASTER-ADDR-BY-NAME`, and
//! again after any failure) and takes and releases Redisson locks, a new
//! one each time, back to back. The primary is killed with `kill -9`; the
//! bench times the kill → the sentinels naming another primary, and the
//! kill → the client's first grant asked for after the kill. The killed
//! server is started again once the sentinels have moved the primary (as
//! a supervisor would), empty, and they make it a replica: the safe mode
//! with two replicas to wait for can grant again only then.
//!
//! Run with `cargo bench --bench failover`. Knobs: `RLOCKD_BENCH_ROUNDS`
//! (5; the sides take turns, each round a fresh set of servers and
//! sentinels), `RLOCKD_BENCH_LEASE_MS` (1000: the locks' lease and the
//! safe mode's promotion grace).

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/refserver/mod.rs"]
mod refserver;
#[path = "../tests/common/sentinel.rs"]
mod rig;
mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use redis::{Connection, Value};
use rig::{Kind, Server, Tools, Watched};
use support::{knob, median};

const LOCK: &str = include_str!("../src/command/scripting/lock_scripts/redisson_lock.lua");
const UNLOCK: &str = include_str!("../src/command/scripting/lock_scripts/redisson_unlock.lua");
/// The client's Redisson id (its connection manager's UUID and thread).
const OWNER: &str = "8743c9c0-0795-4907-87fd-6c719a6b4586:1";

/// The client's connect, read and write timeout. A killed server's
/// connections fail at once; this bounds a wait on anything else, and
/// outlasts the safe mode's wait for acknowledgements (one second).
const IO_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the client waits before trying again after a refusal or
/// finding no primary, and how often the bench polls the sentinels: the
/// resolution of the figures.
const RETRY: Duration = Duration::from_millis(10);
/// Grants the client makes before the kill, so it runs steadily.
const WARM_UP: usize = 20;
/// How long the warm-up, and then the failover, may take.
const LIMIT: Duration = Duration::from_secs(60);

/// One side: which server plays every role, with which config lines.
struct Side {
    name: &'static str,
    kind: Kind,
    lines: String,
}

fn sides(lease_ms: u64) -> [Side; 4] {
    // No snapshots (the restarted primary comes back empty), full syncs
    // at once.
    let base = "save \"\"\nrepl-diskless-sync-delay 0\n";
    let safe = |replicas: usize| {
        format!("{base}lock-sync-replicas {replicas}\nlock-promotion-grace-ms {lease_ms}\n")
    };
    [
        Side {
            name: "redis",
            kind: Kind::Redis,
            lines: base.into(),
        },
        Side {
            name: "rlockd",
            kind: Kind::Rlockd,
            lines: base.into(),
        },
        Side {
            name: "rlockd safe",
            kind: Kind::Rlockd,
            lines: safe(2),
        },
        // Not the safe mode's advice (a fencing counter can go back when
        // Sentinel promotes the replica that did not acknowledge), but
        // what waiting out the grace alone costs.
        Side {
            name: "rlockd safe 1",
            kind: Kind::Rlockd,
            lines: safe(1),
        },
    ]
}

/// A grant: when its request was sent, and when its answer came.
type Grant = (Instant, Instant);

/// Takes and releases a new lock after another on whichever server the
/// sentinels name, until `stop`; tells `grants` of each grant.
fn client(sentinels: &[u16], lease_ms: u64, stop: &AtomicBool, grants: &mpsc::Sender<Grant>) {
    let mut con: Option<Connection> = None;
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let Some(c) = con.as_mut() else {
            con = rig::primary(sentinels, 0, IO_TIMEOUT)
                .and_then(|port| rig::bounded(port, IO_TIMEOUT));
            if con.is_none() {
                thread::sleep(RETRY);
            }
            continue;
        };
        n += 1;
        let key = format!("failover:{n}");
        let sent = Instant::now();
        let lock = redis::cmd("EVAL")
            .arg(LOCK)
            .arg(1)
            .arg(&key)
            .arg(lease_ms)
            .arg(OWNER)
            .query::<Value>(c);
        match lock {
            Ok(Value::Nil) => {
                let _ = grants.send((sent, Instant::now()));
                let channel = format!("redisson_lock__channel:{{{key}}}");
                let release = redis::cmd("EVAL")
                    .arg(UNLOCK)
                    .arg(2)
                    .arg(&key)
                    .arg(&channel)
                    .arg(0)
                    .arg(lease_ms)
                    .arg(OWNER)
                    .query::<Value>(c);
                if release.is_err() {
                    con = None;
                }
            }
            // Not now (the promotion grace, too few replicas): again on
            // the same server.
            Err(e) if matches!(e.code(), Some("LOADING" | "NOREPLICAS")) => thread::sleep(RETRY),
            // Gone, or no longer the primary (READONLY): ask the sentinels.
            Err(_) => con = None,
            Ok(other) => panic!("a new lock answered {other:?}"),
        }
    }
}

/// Sets the flag when dropped, so the client stops however the round ends.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// What one round measured, from the kill.
struct Timed {
    /// Until the sentinels named another primary.
    promoted: Duration,
    /// Until the client's first grant asked for after the kill.
    granted: Duration,
}

/// One round of `side`: a fresh set of servers and sentinels, the client
/// warmed up, the primary killed, timed until both are seen.
fn round(tools: &Tools, side: &Side, n: usize, lease_ms: u64) -> Result<Timed, String> {
    let dir = common::TempDir::new(&format!("{}-{n}", side.name.replace(' ', "-")));
    let watched = Watched::start(tools, side.kind, &dir, &side.lines);
    let sentinels = watched.sentinel_ports();
    let mut servers = watched.servers;
    let primary = servers.remove(0);
    let stop = AtomicBool::new(false);
    let (tx, grants) = mpsc::channel();
    thread::scope(|s| {
        let _stop = StopOnDrop(&stop);
        let (sentinels, stop) = (&sentinels, &stop);
        s.spawn(move || client(sentinels, lease_ms, stop, &tx));
        for _ in 0..WARM_UP {
            grants
                .recv_timeout(LIMIT)
                .map_err(|_| "no grants before the kill".to_string())?;
        }
        let (port, conf) = primary.kill();
        // A request sent from now on cannot reach the killed server.
        let killed = Instant::now();
        let (mut promoted, mut granted) = (None, None);
        while promoted.is_none() || granted.is_none() {
            if killed.elapsed() > LIMIT {
                return Err(format!("no grant within {LIMIT:?} of the kill"));
            }
            match grants.recv_timeout(RETRY) {
                Ok((sent, answered)) if sent >= killed && granted.is_none() => {
                    granted = Some(answered - killed);
                }
                Ok(_) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err("the client ended".into()),
            }
            if promoted.is_none()
                && rig::primary(sentinels, 0, IO_TIMEOUT).is_some_and(|p| p != port)
            {
                promoted = Some(killed.elapsed());
                servers.push(Server::run(tools, side.kind, port, conf.clone()));
            }
        }
        let granted = granted.unwrap_or_default();
        // The client heard of the new primary from a sentinel before its
        // grant, whatever this poll saw.
        let promoted = promoted.unwrap_or_default().min(granted);
        Ok(Timed { promoted, granted })
    })
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Median and maximum, in seconds.
fn summary(times: &[Duration]) -> (f64, f64) {
    let secs: Vec<f64> = times.iter().copied().map(secs).collect();
    let max = secs.iter().copied().fold(0.0, f64::max);
    (median(secs), max)
}

fn main() {
    let Some(tools) = rig::tools("benches/failover.rs") else {
        println!("redis-server or redis-sentinel not available: nothing to run");
        return;
    };
    let rounds = knob("RLOCKD_BENCH_ROUNDS", 5).max(1);
    let lease_ms = knob("RLOCKD_BENCH_LEASE_MS", 1000).max(1) as u64;
    let sides = sides(lease_ms);
    let mut timed: Vec<Vec<Timed>> = sides.iter().map(|_| Vec::new()).collect();
    let mut failed = vec![0usize; sides.len()];
    for n in 0..rounds {
        for (i, side) in sides.iter().enumerate() {
            match round(&tools, side, n, lease_ms) {
                Ok(t) => {
                    eprintln!(
                        "round {n} {:<14} promoted {:.2} s, next lock {:.2} s",
                        side.name,
                        secs(t.promoted),
                        secs(t.granted)
                    );
                    timed[i].push(t);
                }
                Err(why) => {
                    eprintln!("round {n} {:<14} failed: {why}", side.name);
                    failed[i] += 1;
                }
            }
        }
    }
    println!();
    println!(
        "kill -9 of the primary under 3 sentinels (down-after-milliseconds 1000), \
         {rounds} rounds, locks of {lease_ms} ms"
    );
    println!(
        "{:<14} {:>22} {:>22} {:>7}",
        "", "promoted median / max", "next lock median / max", "failed"
    );
    let mut medians = Vec::new();
    for ((side, times), failed) in sides.iter().zip(&timed).zip(&failed) {
        if times.is_empty() {
            println!("{:<14} {:>22} {:>22} {failed:>7}", side.name, "-", "-");
            medians.push(None);
            continue;
        }
        let promoted: Vec<Duration> = times.iter().map(|t| t.promoted).collect();
        let granted: Vec<Duration> = times.iter().map(|t| t.granted).collect();
        let (p_med, p_max) = summary(&promoted);
        let (g_med, g_max) = summary(&granted);
        println!(
            "{:<14} {:>13.2} / {:>4.2} s {:>13.2} / {:>4.2} s {failed:>7}",
            side.name, p_med, p_max, g_med, g_max
        );
        println!(
            "BENCH {{\"bench\":\"failover\",\"server\":\"{}\",\"rounds\":{},\"failed\":{failed},\"lease_ms\":{lease_ms},\"promoted_median_s\":{p_med:.3},\"promoted_max_s\":{p_max:.3},\"next_lock_median_s\":{g_med:.3},\"next_lock_max_s\":{g_max:.3}}}",
            side.name,
            times.len()
        );
        medians.push(Some((g_med, g_max)));
    }
    if let Some(Some((redis_med, redis_max))) = medians.first().copied() {
        for (side, m) in sides.iter().zip(&medians).skip(1) {
            if let Some((med, max)) = m {
                println!(
                    "{} / redis: next lock median {:.2}, max {:.2}",
                    side.name,
                    med / redis_med,
                    max / redis_max
                );
            }
        }
    }
}
