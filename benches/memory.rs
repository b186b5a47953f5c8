//! Memory held per Redisson lock, `redis-server` versus `rlockd` side by
//! side: each server is given `RLOCKD_BENCH_LOCKS` (1,000,000) distinct
//! locks taken with the Redisson-layout reentrant lock script (EVALSHA,
//! pipelined): a hash with one `uuid:thread` field and a 30 s lease each.
//! Reported: resident memory (RSS) added per lock, `used_memory` per lock
//! from INFO memory, the RSS each server keeps after every lock is
//! released again with the unlock script, and after MEMORY PURGE asks its
//! allocator to give freed pages back; then rlockd / redis.
//!
//! Run with `cargo bench --bench memory`. Knobs: `RLOCKD_BENCH_LOCKS`,
//! `RLOCKD_BENCH_PIPELINE` (requests in flight, 1000).

mod support;

use std::io;
use std::thread;
use std::time::Duration;

use support::{Conn, Reply, Server, encode, knob, start_servers};

const LOCK_LUA: &str = include_str!("../src/command/scripting/lock_scripts/redisson_lock.lua");
const UNLOCK_LUA: &str = include_str!("../src/command/scripting/lock_scripts/redisson_unlock.lua");
const OWNER: &str = "8743c9c0-0795-4907-87fd-6c719a6b4586:1";

fn sha(conn: &mut Conn, script: &str) -> io::Result<String> {
    match conn.cmd(&["SCRIPT", "LOAD", script])? {
        Reply::Bulk(Some(sha)) => Ok(String::from_utf8(sha).expect("hex")),
        other => Err(io::Error::other(format!("SCRIPT LOAD: {other:?}"))),
    }
}

/// Sends `line(i)` for every i below `n`, `depth` requests in flight.
fn pipelined(conn: &mut Conn, n: usize, depth: usize, line: impl Fn(usize) -> Vec<String>) {
    use std::io::Write;
    let mut sent = 0;
    while sent < n {
        let batch = depth.min(n - sent);
        let mut out = Vec::new();
        for i in sent..sent + batch {
            let args = line(i);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            encode(&args, &mut out);
        }
        conn.writer.write_all(&out).expect("send");
        for _ in 0..batch {
            conn.read().expect("a reply");
        }
        sent += batch;
    }
}

fn used_memory(conn: &mut Conn) -> u64 {
    let Ok(Reply::Bulk(Some(info))) = conn.cmd(&["INFO", "memory"]) else {
        panic!("INFO memory");
    };
    String::from_utf8_lossy(&info)
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("used_memory")
}

/// RSS once it has stopped moving (allocators return memory lazily).
fn settled_rss(server: &Server) -> u64 {
    let mut last = server.rss();
    for _ in 0..20 {
        thread::sleep(Duration::from_millis(250));
        let now = server.rss();
        if now == last {
            break;
        }
        last = now;
    }
    last
}

struct Measured {
    rss_per_lock: f64,
    used_per_lock: f64,
    rss_after_release: u64,
    used_after_release: u64,
    rss_after_purge: u64,
}

fn measure(server: &Server, locks: usize, depth: usize) -> Measured {
    let mut conn = Conn::open(server.addr).expect("connect");
    let lock = sha(&mut conn, LOCK_LUA).expect("lock script");
    let unlock = sha(&mut conn, UNLOCK_LUA).expect("unlock script");
    let (rss0, used0) = (settled_rss(server), used_memory(&mut conn));
    pipelined(&mut conn, locks, depth, |i| {
        ["EVALSHA", &lock, "1", &format!("lock:{i}"), "30000", OWNER]
            .map(String::from)
            .to_vec()
    });
    let (rss1, used1) = (settled_rss(server), used_memory(&mut conn));
    match conn.cmd(&["DBSIZE"]) {
        Ok(Reply::Int(n)) => assert_eq!(n as usize, locks, "every lock is held"),
        other => panic!("DBSIZE: {other:?}"),
    }
    pipelined(&mut conn, locks, depth, |i| {
        let name = format!("lock:{i}");
        let channel = format!("redisson_lock__channel:{name}");
        [
            "EVALSHA", &unlock, "2", &name, &channel, "0", "30000", OWNER,
        ]
        .map(String::from)
        .to_vec()
    });
    let released = settled_rss(server);
    let used_released = used_memory(&mut conn);
    conn.cmd(&["MEMORY", "PURGE"]).expect("MEMORY PURGE");
    let purged = settled_rss(server);
    Measured {
        rss_after_purge: purged,
        used_after_release: used_released,
        rss_per_lock: (rss1.saturating_sub(rss0)) as f64 / locks as f64,
        used_per_lock: (used1.saturating_sub(used0)) as f64 / locks as f64,
        rss_after_release: released,
    }
}

fn main() {
    let locks = knob("RLOCKD_BENCH_LOCKS", 1_000_000).max(1);
    let depth = knob("RLOCKD_BENCH_PIPELINE", 1000).max(1);
    let servers = start_servers();
    let results: Vec<Measured> = servers.iter().map(|s| measure(s, locks, depth)).collect();
    println!();
    println!("{locks} held Redisson locks (hash + lease), then all released");
    for (server, m) in servers.iter().zip(&results) {
        println!(
            "{:<8} RSS/lock {:>7.1} B   used_memory/lock {:>7.1} B   after release: RSS {:>7.1} MB, used_memory {:>7.1} MB; after MEMORY PURGE: RSS {:>7.1} MB",
            server.name,
            m.rss_per_lock,
            m.used_per_lock,
            m.rss_after_release as f64 / 1e6,
            m.used_after_release as f64 / 1e6,
            m.rss_after_purge as f64 / 1e6
        );
    }
    if let [redis, rlockd] = &results[..] {
        println!(
            "rlockd / redis: RSS per lock {:.2}, used_memory per lock {:.2}, RSS after release {:.2}, after MEMORY PURGE {:.2}",
            rlockd.rss_per_lock / redis.rss_per_lock,
            rlockd.used_per_lock / redis.used_per_lock,
            rlockd.rss_after_release as f64 / redis.rss_after_release as f64,
            rlockd.rss_after_purge as f64 / redis.rss_after_purge as f64
        );
        println!(
            "BENCH {{\"bench\":\"memory\",\"locks\":{locks},\"rss_per_lock_ratio\":{:.3},\"rss_after_release_ratio\":{:.3},\"rss_after_purge_ratio\":{:.3}}}",
            rlockd.rss_per_lock / redis.rss_per_lock,
            rlockd.rss_after_release as f64 / redis.rss_after_release as f64,
            rlockd.rss_after_purge as f64 / redis.rss_after_purge as f64
        );
    }
}
