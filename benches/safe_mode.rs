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
use std::time::Duration;

use support::replicated::{PairRound, Side, Wait};
use support::{Conn, Reply, median, percentile, rlockd_args, rlockd_binary, rounds_knobs};

/// One way of running the pairs.
struct Way {
    name: &'static str,
    /// Index of the side (a primary and its replica) it runs against.
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

/// How long a replica's first sync may take.
const SYNC_LIMIT: Duration = Duration::from_secs(20);

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
    let redis = Side {
        name: "redis",
        program: redis,
        extra: Vec::new(),
    };
    let Some(redis) = redis.with_replicas(1, SYNC_LIMIT) else {
        println!("redis-server (with a replica) not available: nothing to compare with");
        return;
    };
    let rlockd = Side {
        name: "rlockd",
        program: rlockd_binary(),
        extra: rlockd_args(),
    };
    let rlockd = rlockd.with_replicas(1, SYNC_LIMIT).expect("rlockd starts");
    let sides = [redis, rlockd];
    let (rounds, length) = (knobs.rounds, knobs.length);
    for &clients in &knobs.client_counts {
        let mut rates = vec![Vec::new(); WAYS.len()];
        let mut latencies = vec![Vec::new(); WAYS.len()];
        for _ in 0..rounds {
            for (i, way) in WAYS.iter().enumerate() {
                let addr = sides[way.primary].primary.addr;
                if way.primary == 1 {
                    set_sync(addr, way.sync).expect("CONFIG SET");
                }
                let round = PairRound {
                    prefix: "safe",
                    clients,
                    length,
                    wait: way.wait.then_some(Wait {
                        replicas: 1,
                        timeout_ms: 0,
                    }),
                };
                let pairs = round.run(addr).expect("a round");
                rates[i].push(pairs.rate);
                latencies[i].extend(pairs.lock_us);
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
