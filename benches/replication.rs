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

use std::time::{Duration, Instant};

use support::replicated::{PairRound, Side, Wait, until_link_up};
use support::{Conn, Reply, Server, knob, median, percentile};

/// How long a replica's sync may take, a million keys' included.
const SYNC_LIMIT: Duration = Duration::from_secs(600);

/// A server of `side` (`role`: its own arguments), or the bench stops.
fn start(side: &Side, role: &[String]) -> Server {
    side.start(role)
        .unwrap_or_else(|| panic!("{} did not start", side.name))
}

/// One round's pairs/s and lock p99 (µs, the WAIT included when asked).
fn round(
    primary: &Server,
    clients: usize,
    length: Duration,
    wait_for: Option<usize>,
) -> (f64, f64) {
    let round = PairRound {
        prefix: "repl",
        clients,
        length,
        wait: wait_for.map(|replicas| Wait {
            replicas,
            timeout_ms: 1000,
        }),
    };
    let pairs = round.run(primary.addr).expect("the clients");
    (pairs.rate, percentile(pairs.lock_us, 0.99))
}

/// Pairs/s and p99 of each (replicas, WAIT) setting, medians of rounds.
type Row = (usize, bool, f64, f64);

fn pairs_with_replicas(kind: &Side, clients: usize, rounds: usize, length: Duration) -> Vec<Row> {
    let primary = start(kind, &[]);
    let mut replicas = Vec::new();
    let mut rows = Vec::new();
    for attached in 0..=2 {
        while replicas.len() < attached {
            let replica = kind.replica_of(&primary, SYNC_LIMIT);
            replicas.push(replica.expect("a replica, its link up"));
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
fn full_sync(kind: &Side, keys: usize) -> f64 {
    let primary = start(kind, &[]);
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
    let replica = start(kind, &[]);
    let mut to_replica = Conn::open(replica.addr).expect("connect");
    let port = primary.addr.port().to_string();
    let started = Instant::now();
    to_replica
        .cmd(&["REPLICAOF", "127.0.0.1", &port])
        .expect("REPLICAOF");
    assert!(until_link_up(replica.addr, SYNC_LIMIT), "no link up");
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
        kinds.push(Side {
            name: "redis",
            program: redis,
            extra: Vec::new(),
        });
    } else {
        println!("redis-server not available: printing rlockd's figures only");
    }
    kinds.push(Side {
        name: "rlockd",
        program: support::rlockd_binary(),
        extra: Vec::new(),
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
