//! Replication side by side, `rlockd` next to `redis-server` in the same
//! roles: a primary with 0, 1 and 2 replicas of its own kind attached,
//! Redisson lock+unlock pairs on the primary (EVALSHA of
//! `redisson_lock.lua` then `redisson_unlock.lua`, each client its own
//! lock): pairs/s and lock p99, plain and with the `WAIT <replicas> 1000`
//! Redisson sends after each lock in master/slave mode; then the full
//! sync of `RLOCKD_BENCH_KEYS` (1,000,000) Redisson locks to a fresh
//! replica, from REPLICAOF to its link up with every key. Ratios are
//! rlockd / redis; what a replica costs is each server's pairs/s with
//! replicas over its own without.
//!
//! Run with `cargo bench --bench replication`. Knobs: `RLOCKD_BENCH_CLIENTS`
//! (16), `RLOCKD_BENCH_ROUNDS` (3), `RLOCKD_BENCH_SECONDS` (3),
//! `RLOCKD_BENCH_KEYS`.

mod support;

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use support::{Conn, Reply, Server, free_port, join_clients, knob, launch, median, percentile};

const LOCK_LUA: &str = include_str!("../src/command/scripting/lock_scripts/redisson_lock.lua");
const UNLOCK_LUA: &str = include_str!("../src/command/scripting/lock_scripts/redisson_unlock.lua");

/// Which program plays every role of one side.
struct Kind {
    name: &'static str,
    program: String,
}

impl Kind {
    /// A server of this kind on a free port, persistence off, syncing
    /// replicas at once (`extra`: its role).
    fn start(&self, extra: &[String]) -> Server {
        let mut args = support::transient_args(free_port(), "rlockd-bench-replication");
        // A replica's sync file is removed once loaded, as nothing saves.
        args.extend(
            [
                "--repl-diskless-sync-delay",
                "0",
                "--rdb-del-sync-files",
                "yes",
            ]
            .map(String::from),
        );
        args.extend_from_slice(extra);
        launch(self.name, &self.program, &args)
            .unwrap_or_else(|| panic!("{} did not start", self.name))
    }

    /// A replica of `primary`, once its link is up.
    fn replica_of(&self, primary: &Server) -> Server {
        let port = primary.addr.port().to_string();
        let replica = self.start(&["--replicaof".into(), "127.0.0.1".into(), port]);
        until_link_up(replica.addr, Duration::from_secs(600));
        replica
    }
}

fn info(addr: SocketAddr, section: &str) -> String {
    let mut conn = Conn::open(addr).expect("connect");
    match conn.cmd(&["INFO", section]) {
        Ok(Reply::Bulk(Some(text))) => String::from_utf8_lossy(&text).into_owned(),
        other => panic!("INFO {section}: {other:?}"),
    }
}

fn until_link_up(addr: SocketAddr, limit: Duration) {
    let deadline = Instant::now() + limit;
    while !info(addr, "replication").contains("master_link_status:up") {
        assert!(Instant::now() < deadline, "no link up in {limit:?}");
        thread::sleep(Duration::from_millis(5));
    }
}

fn sha(conn: &mut Conn, script: &str) -> io::Result<String> {
    match conn.cmd(&["SCRIPT", "LOAD", script])? {
        Reply::Bulk(Some(sha)) => Ok(String::from_utf8(sha).expect("hex")),
        other => Err(io::Error::other(format!("SCRIPT LOAD: {other:?}"))),
    }
}

/// One round's pairs/s and lock p99 (µs, the WAIT included when asked).
fn round(
    primary: &Server,
    clients: usize,
    length: Duration,
    wait_for: Option<usize>,
) -> (f64, f64) {
    let addr = primary.addr;
    let mut admin = Conn::open(addr).expect("connect");
    let lock = sha(&mut admin, LOCK_LUA).expect("SCRIPT LOAD");
    let unlock = sha(&mut admin, UNLOCK_LUA).expect("SCRIPT LOAD");
    let start = Arc::new(Barrier::new(clients + 1));
    let mut workers = Vec::new();
    for n in 0..clients {
        let (start, lock, unlock) = (start.clone(), lock.clone(), unlock.clone());
        let mut conn = Conn::open(addr).expect("connect");
        workers.push(thread::spawn(move || -> io::Result<(u64, Vec<f64>)> {
            let name = format!("repl:{n}");
            let channel = format!("redisson_lock__channel:{{{name}}}");
            let owner = format!("8743c9c0-0795-4907-87fd-6c719a6b4586:{n}");
            let wait = wait_for.map(|n| n.to_string());
            let (mut pairs, mut lock_us) = (0u64, Vec::new());
            start.wait();
            let until = Instant::now() + length;
            while Instant::now() < until {
                let asked = Instant::now();
                conn.cmd(&["EVALSHA", &lock, "1", &name, "30000", &owner])?;
                if let Some(wait) = &wait {
                    match conn.cmd(&["WAIT", wait, "1000"])? {
                        Reply::Int(_) => {}
                        other => return Err(io::Error::other(format!("WAIT: {other:?}"))),
                    }
                }
                lock_us.push(asked.elapsed().as_secs_f64() * 1e6);
                let unlocked = conn.cmd(&[
                    "EVALSHA", &unlock, "2", &name, &channel, "0", "30000", &owner,
                ])?;
                if !matches!(unlocked, Reply::Int(1)) {
                    return Err(io::Error::other(format!("unlock: {unlocked:?}")));
                }
                pairs += 1;
            }
            Ok((pairs, lock_us))
        }));
    }
    start.wait();
    let started = Instant::now();
    let (pairs, lock_us) = join_clients(workers).expect("the clients");
    (
        pairs as f64 / started.elapsed().as_secs_f64(),
        percentile(lock_us, 0.99),
    )
}

/// Pairs/s and p99 of each (replicas, WAIT) setting, medians of rounds.
type Row = (usize, bool, f64, f64);

fn pairs_with_replicas(kind: &Kind, clients: usize, rounds: usize, length: Duration) -> Vec<Row> {
    let primary = kind.start(&[]);
    let mut replicas = Vec::new();
    let mut rows = Vec::new();
    for attached in 0..=2 {
        while replicas.len() < attached {
            replicas.push(kind.replica_of(&primary));
        }
        let waits: &[bool] = if attached == 0 {
            &[false]
        } else {
            &[false, true]
        };
        for &wait in waits {
            let (mut rates, mut p99s) = (Vec::new(), Vec::new());
            for _ in 0..rounds {
                let (rate, p99) = round(&primary, clients, length, wait.then_some(attached));
                rates.push(rate);
                p99s.push(p99);
            }
            let row = (attached, wait, median(rates), median(p99s));
            eprintln!(
                "{:>6}: {attached} replicas{}: {:.0} pairs/s, lock p99 {:.0} µs",
                kind.name,
                if wait { " + WAIT" } else { "" },
                row.2,
                row.3
            );
            rows.push(row);
        }
    }
    rows
}

/// Seconds from REPLICAOF to the link up, with `keys` Redisson locks.
fn full_sync(kind: &Kind, keys: usize) -> f64 {
    let primary = kind.start(&[]);
    let mut conn = Conn::open(primary.addr).expect("connect");
    let mut batch = Vec::new();
    for i in 0..keys {
        let key = format!("{{lock:{i}}}");
        let holder = "b983c153-7421-469a-addb-44fb92259a1b:1".to_string();
        batch.push(vec!["HSET".into(), key.clone(), holder, "1".into()]);
        batch.push(vec!["PEXPIRE".into(), key, "3600000".into()]);
        if batch.len() >= 2000 {
            support::pipeline(&mut conn, &batch);
            batch.clear();
        }
    }
    support::pipeline(&mut conn, &batch);
    let replica = kind.start(&[]);
    let mut to_replica = Conn::open(replica.addr).expect("connect");
    let port = primary.addr.port().to_string();
    let started = Instant::now();
    to_replica
        .cmd(&["REPLICAOF", "127.0.0.1", &port])
        .expect("REPLICAOF");
    until_link_up(replica.addr, Duration::from_secs(600));
    let secs = started.elapsed().as_secs_f64();
    match to_replica.cmd(&["DBSIZE"]) {
        Ok(Reply::Int(n)) => assert_eq!(n as usize, keys, "{}'s replica got every key", kind.name),
        other => panic!("DBSIZE: {other:?}"),
    }
    secs
}

fn main() {
    let clients = knob("RLOCKD_BENCH_CLIENTS", 16).max(1);
    let rounds = knob("RLOCKD_BENCH_ROUNDS", 3).max(1);
    let length = Duration::from_secs(knob("RLOCKD_BENCH_SECONDS", 3).max(1) as u64);
    let keys = knob("RLOCKD_BENCH_KEYS", 1_000_000);
    let mut kinds = Vec::new();
    let redis = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    let redis_runs = std::process::Command::new(&redis)
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if redis_runs {
        kinds.push(Kind {
            name: "redis",
            program: redis,
        });
    } else {
        println!("redis-server not available: printing rlockd's figures only");
    }
    kinds.push(Kind {
        name: "rlockd",
        program: support::rlockd_binary(),
    });
    let rows: Vec<Vec<Row>> = kinds
        .iter()
        .map(|k| pairs_with_replicas(k, clients, rounds, length))
        .collect();
    println!();
    println!(
        "{clients} clients, lock+unlock pairs on the primary (median of {rounds} rounds of {length:?})"
    );
    for (kind, rows) in kinds.iter().zip(&rows) {
        let alone = rows[0].2;
        for &(attached, wait, rate, p99) in rows {
            let how = if wait { " + WAIT" } else { "" };
            println!(
                "{:<8} {attached} replicas{how:<7} {rate:>9.0} pairs/s ({:.2} of alone)   lock p99 {p99:>6.0} µs",
                kind.name,
                rate / alone
            );
            println!(
                "BENCH {{\"bench\":\"replication\",\"server\":\"{}\",\"replicas\":{attached},\"wait\":{wait},\"clients\":{clients},\"pairs_per_s\":{rate:.0},\"lock_p99_us\":{p99:.0}}}",
                kind.name
            );
        }
    }
    if let [redis, rlockd] = &rows[..] {
        for (r, l) in redis.iter().zip(rlockd) {
            println!(
                "rlockd / redis, {} replicas{}: pairs/s {:.2}, lock p99 {:.2}; a replica's cost (pairs/s of alone): redis {:.2}, rlockd {:.2}",
                r.0,
                if r.1 { " + WAIT" } else { "" },
                l.2 / r.2,
                l.3 / r.3,
                r.2 / redis[0].2,
                l.2 / rlockd[0].2
            );
        }
    }
    println!();
    println!("full sync of {keys} Redisson locks to a fresh replica");
    let mut syncs = Vec::new();
    for kind in &kinds {
        let secs = full_sync(kind, keys);
        println!("{:<8} {secs:>8.2} s", kind.name);
        println!(
            "BENCH {{\"bench\":\"replication\",\"server\":\"{}\",\"full_sync_keys\":{keys},\"full_sync_s\":{secs:.3}}}",
            kind.name
        );
        syncs.push(secs);
    }
    if let [redis, rlockd] = syncs[..] {
        println!("rlockd / redis: full sync time {:.2}", rlockd / redis);
    }
}
