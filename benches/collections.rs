//! Scripts over big collections, `redis-server` versus `rlockd` side by
//! side: what Redisson's data objects (`RMapCache`, `RScoredSortedSet`,
//! `RSetCache`, rate limiters, delayed queues) cost when their collections
//! grow. For a hash, a set, a sorted set and a list of 10, 1,000 and
//! 100,000 members, `RLOCKD_BENCH_CLIENTS` (8) clients call one script
//! with EVALSHA for `RLOCKD_BENCH_SECONDS` (1) each: one that only reads a
//! member, one that changes one member, one that changes ten. Reported:
//! calls per second on each server and rlockd / redis; the sizes never
//! change, so every round sees the same collection.
//!
//! Run with `cargo bench --bench collections`. `RLOCKD_BENCH_SIZES`
//! (comma-separated) picks other sizes.

mod support;

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use support::{Conn, Reply, knob, start_servers};

/// A collection kind: how to fill one, and its three scripts. Members are
/// `m1`, `m2`, …; the writes keep the size as it is.
struct Kind {
    name: &'static str,
    fill: &'static str,
    read: &'static str,
    write: &'static str,
}

const KINDS: [Kind; 4] = [
    Kind {
        name: "hash",
        fill: "redis.call('hset', KEYS[1], 'm' .. i, i)",
        read: "return redis.call('hget', KEYS[1], 'm1')",
        write: "redis.call('hset', KEYS[1], 'm' .. i, ARGV[1])",
    },
    Kind {
        name: "set",
        fill: "redis.call('sadd', KEYS[1], 'm' .. i)",
        read: "return redis.call('sismember', KEYS[1], 'm1')",
        write: "redis.call('srem', KEYS[1], 'm' .. i) redis.call('sadd', KEYS[1], 'm' .. i)",
    },
    Kind {
        name: "zset",
        fill: "redis.call('zadd', KEYS[1], i, 'm' .. i)",
        read: "return redis.call('zscore', KEYS[1], 'm1')",
        write: "redis.call('zincrby', KEYS[1], 1, 'm' .. i)",
    },
    Kind {
        name: "list",
        fill: "redis.call('rpush', KEYS[1], 'm' .. i)",
        read: "return redis.call('lindex', KEYS[1], 0)",
        write: "redis.call('lset', KEYS[1], i - 1, ARGV[1])",
    },
];

/// What a script does to its collection.
#[derive(Clone, Copy)]
enum Work {
    Read,
    Writes(usize),
}

impl Work {
    fn label(self) -> String {
        match self {
            Work::Read => "read".into(),
            Work::Writes(1) => "1 write".into(),
            Work::Writes(n) => format!("{n} writes"),
        }
    }

    fn script(self, kind: &Kind) -> String {
        match self {
            Work::Read => kind.read.to_string(),
            Work::Writes(n) => format!("for i = 1, {n} do {} end return 1", kind.write),
        }
    }
}

fn load(conn: &mut Conn, script: &str) -> io::Result<String> {
    match conn.cmd(&["SCRIPT", "LOAD", script])? {
        Reply::Bulk(Some(sha)) => Ok(String::from_utf8(sha).expect("hex")),
        other => Err(io::Error::other(format!("SCRIPT LOAD: {other:?}"))),
    }
}

/// Fills `key` with `size` members, in scripts of 10,000 members at most.
fn fill(addr: SocketAddr, kind: &Kind, key: &str, size: usize) -> io::Result<()> {
    let mut conn = Conn::open(addr)?;
    conn.cmd(&["DEL", key])?;
    let script = format!(
        "for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do {} end",
        kind.fill
    );
    for from in (1..=size).step_by(10_000) {
        let to = (from + 9_999).min(size);
        conn.cmd(&[
            "EVAL",
            &script,
            "1",
            key,
            &from.to_string(),
            &to.to_string(),
        ])?;
    }
    Ok(())
}

/// Script calls per second from `clients` clients in `length`.
fn rate(addr: SocketAddr, sha: &str, key: &str, clients: usize, length: Duration) -> f64 {
    let calls = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(clients + 1));
    let workers: Vec<_> = (0..clients)
        .map(|_| {
            let (calls, stop, start) = (calls.clone(), stop.clone(), start.clone());
            let (sha, key) = (sha.to_string(), key.to_string());
            thread::spawn(move || {
                let mut conn = Conn::open(addr).expect("a client connects");
                start.wait();
                while !stop.load(Ordering::Relaxed) {
                    conn.cmd(&["EVALSHA", &sha, "1", &key, "v"])
                        .expect("the script runs");
                    calls.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    start.wait();
    let began = Instant::now();
    thread::sleep(length);
    stop.store(true, Ordering::Relaxed);
    workers
        .into_iter()
        .for_each(|w| w.join().expect("a client ends"));
    calls.load(Ordering::Relaxed) as f64 / began.elapsed().as_secs_f64()
}

fn main() {
    let clients = knob("RLOCKD_BENCH_CLIENTS", 8).max(1);
    let length = Duration::from_secs(knob("RLOCKD_BENCH_SECONDS", 1).max(1) as u64);
    let sizes: Vec<usize> = std::env::var("RLOCKD_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10, 1_000, 100_000]);
    let servers = start_servers();
    let works = [Work::Read, Work::Writes(1), Work::Writes(10)];
    println!(
        "{clients} clients, {}s a round; script calls per second",
        length.as_secs()
    );
    println!(
        "{:<5} {:>7} {:<9} {:>10} {:>10} {:>7}",
        "kind", "members", "script", "redis", "rlockd", "ratio"
    );
    let mut lowest = f64::INFINITY;
    for kind in &KINDS {
        for &size in &sizes {
            let key = format!("bench:{}:{size}", kind.name);
            for server in &servers {
                fill(server.addr, kind, &key, size).expect("the collection fills");
            }
            for work in works {
                let script = work.script(kind);
                let rates: Vec<f64> = servers
                    .iter()
                    .map(|server| {
                        let sha = load(&mut Conn::open(server.addr).expect("connects"), &script)
                            .expect("the script loads");
                        rate(server.addr, &sha, &key, clients, length)
                    })
                    .collect();
                let rlockd = rates[rates.len() - 1];
                let (redis, ratio) = match rates.len() {
                    2 => (format!("{:.0}", rates[0]), rlockd / rates[0]),
                    _ => ("-".into(), f64::NAN),
                };
                if ratio.is_finite() {
                    lowest = lowest.min(ratio);
                }
                println!(
                    "{:<5} {size:>7} {:<9} {redis:>10} {rlockd:>10.0} {ratio:>7.2}",
                    kind.name,
                    work.label()
                );
            }
        }
    }
    println!("lowest rlockd / redis: {lowest:.2}");
    println!(
        "BENCH {{\"bench\":\"collections\",\"clients\":{clients},\"lowest_ratio\":{lowest:.3}}}"
    );
}
