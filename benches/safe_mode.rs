//! What the safe mode costs (issue #31): Redisson lock+unlock pairs
//! (EVALSHA of `redisson_lock.lua` then `redisson_unlock.lua`, each client
//! a lock of its own) against a primary with one replica on loopback, in
//! five ways: redis-server as is, redis-server with `WAIT 1 0` after each
//! lock (what Redisson does), rlockd by default, rlockd with `WAIT 1 0`
//! after each lock, and rlockd with `lock-sync-replicas 1` (every write,
//! the release too, answered once the replica has it). Reported per client
//! count: pairs/s and lock latency p50/p99 (the WAIT included), medians
//! over the rounds, which alternate between the ways.
//!
//! Run with `cargo bench --bench safe_mode`. Knobs:
//! `RLOCKD_BENCH_CLIENT_COUNTS` (`1,16`), `RLOCKD_BENCH_ROUNDS` (3),
//! `RLOCKD_BENCH_SECONDS` (3).

mod support;

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use support::{
    Conn, Reply, Server, free_port, join_clients, launch, median, percentile, rlockd_args,
    rlockd_binary, rounds_knobs,
};

const LOCK_LUA: &str = include_str!("../src/command/scripting/lock_scripts/redisson_lock.lua");
const UNLOCK_LUA: &str = include_str!("../src/command/scripting/lock_scripts/redisson_unlock.lua");

/// One way of running the pairs.
struct Way {
    name: &'static str,
    /// Index of the primary it runs against in `Pair`s.
    primary: usize,
    /// `WAIT 1 0` after each lock.
    wait: bool,
    /// `lock-sync-replicas` set for its rounds.
    sync: bool,
}

const WAYS: &[Way] = &[
    Way {
        name: "redis",
        primary: 0,
        wait: false,
        sync: false,
    },
    Way {
        name: "redis+WAIT",
        primary: 0,
        wait: true,
        sync: false,
    },
    Way {
        name: "rlockd",
        primary: 1,
        wait: false,
        sync: false,
    },
    Way {
        name: "rlockd+WAIT",
        primary: 1,
        wait: true,
        sync: false,
    },
    Way {
        name: "rlockd safe",
        primary: 1,
        wait: false,
        sync: true,
    },
];

/// A primary and its replica, both kept running for the bench.
struct Pair {
    primary: Server,
    _replica: Server,
}

fn start_pair(name: &'static str, program: &str, extra: &[String]) -> Option<Pair> {
    let dir = std::env::temp_dir().display().to_string();
    let args = |port: u16, of: Option<u16>| -> Vec<String> {
        let mut args: Vec<String> = ["--port", &port.to_string(), "--save", "", "--dir", &dir]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend(["--dbfilename".into(), format!("rlockd-bench-sm-{port}.rdb")]);
        args.extend(["--repl-diskless-sync".into(), "yes".into()]);
        args.extend(["--repl-diskless-sync-delay".into(), "0".into()]);
        if let Some(primary) = of {
            args.extend([
                "--replicaof".into(),
                "127.0.0.1".into(),
                primary.to_string(),
            ]);
        }
        args.extend_from_slice(extra);
        args
    };
    let primary = launch(name, program, &args(free_port(), None))?;
    let replica = launch(name, program, &args(free_port(), Some(primary.addr.port())))?;
    let mut admin = Conn::open(primary.addr).ok()?;
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Ok(Reply::Bulk(Some(info))) = admin.cmd(&["INFO", "replication"])
            && String::from_utf8_lossy(&info).contains("state=online")
        {
            return Some(Pair {
                primary,
                _replica: replica,
            });
        }
        thread::sleep(Duration::from_millis(20));
    }
    None
}

fn sha(conn: &mut Conn, script: &str) -> io::Result<String> {
    match conn.cmd(&["SCRIPT", "LOAD", script])? {
        Reply::Bulk(Some(sha)) => Ok(String::from_utf8(sha).expect("hex")),
        other => Err(io::Error::other(format!("SCRIPT LOAD: {other:?}"))),
    }
}

/// Pairs/s and every lock's round trip in microseconds.
fn round(
    addr: SocketAddr,
    way: &Way,
    clients: usize,
    length: Duration,
) -> io::Result<(f64, Vec<f64>)> {
    let mut admin = Conn::open(addr)?;
    let (lock, unlock) = (sha(&mut admin, LOCK_LUA)?, sha(&mut admin, UNLOCK_LUA)?);
    let start = Arc::new(Barrier::new(clients + 1));
    let mut workers = Vec::new();
    for n in 0..clients {
        let (start, lock, unlock, wait) = (start.clone(), lock.clone(), unlock.clone(), way.wait);
        let mut conn = Conn::open(addr)?;
        workers.push(thread::spawn(move || -> io::Result<(u64, Vec<f64>)> {
            let name = format!("safe:{n}");
            let channel = format!("redisson_lock__channel:{{{name}}}");
            let owner = format!("8743c9c0-0795-4907-87fd-6c719a6b4586:{n}");
            let (mut pairs, mut lock_us) = (0u64, Vec::new());
            start.wait();
            let until = Instant::now() + length;
            while Instant::now() < until {
                let asked = Instant::now();
                match conn.cmd(&["EVALSHA", &lock, "1", &name, "30000", &owner])? {
                    Reply::Bulk(None) => {}
                    other => return Err(io::Error::other(format!("lock: {other:?}"))),
                }
                if wait {
                    match conn.cmd(&["WAIT", "1", "0"])? {
                        Reply::Int(1) => {}
                        other => return Err(io::Error::other(format!("WAIT: {other:?}"))),
                    }
                }
                lock_us.push(asked.elapsed().as_secs_f64() * 1e6);
                let release = [
                    "EVALSHA", &unlock, "2", &name, &channel, "0", "30000", &owner,
                ];
                match conn.cmd(&release)? {
                    Reply::Int(1) => pairs += 1,
                    other => return Err(io::Error::other(format!("unlock: {other:?}"))),
                }
            }
            Ok((pairs, lock_us))
        }));
    }
    start.wait();
    let started = Instant::now();
    let (pairs, lock_us) = join_clients(workers)?;
    Ok((pairs as f64 / started.elapsed().as_secs_f64(), lock_us))
}

fn set_sync(addr: SocketAddr, on: bool) -> io::Result<()> {
    let n = if on { "1" } else { "0" };
    match Conn::open(addr)?.cmd(&["CONFIG", "SET", "lock-sync-replicas", n])? {
        Reply::Line => Ok(()),
        other => Err(io::Error::other(format!("CONFIG SET: {other:?}"))),
    }
}

fn main() {
    let knobs = rounds_knobs("1,16");
    let redis = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    let Some(redis) = start_pair("redis", &redis, &[]) else {
        println!("redis-server (with a replica) not available: nothing to compare with");
        return;
    };
    let rlockd = start_pair("rlockd", &rlockd_binary(), &rlockd_args()).expect("rlockd starts");
    let pairs = [redis, rlockd];
    let (rounds, length) = (knobs.rounds, knobs.length);
    for &clients in &knobs.client_counts {
        let mut rates = vec![Vec::new(); WAYS.len()];
        let mut latencies = vec![Vec::new(); WAYS.len()];
        for _ in 0..rounds {
            for (i, way) in WAYS.iter().enumerate() {
                let addr = pairs[way.primary].primary.addr;
                if way.primary == 1 {
                    set_sync(addr, way.sync).expect("CONFIG SET");
                }
                let (rate, lock_us) = round(addr, way, clients, length).expect("a round");
                rates[i].push(rate);
                latencies[i].extend(lock_us);
            }
        }
        println!("{clients} client(s): pairs/s, lock p50/p99 µs (medians over {rounds} rounds)");
        for (i, way) in WAYS.iter().enumerate() {
            let lat = std::mem::take(&mut latencies[i]);
            println!(
                "  {:<12} {:>9.0}  {:>7.0} {:>7.0}",
                way.name,
                median(std::mem::take(&mut rates[i])),
                percentile(lat.clone(), 0.5),
                percentile(lat, 0.99)
            );
        }
    }
}
