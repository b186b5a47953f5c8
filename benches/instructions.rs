//! CPU per lock operation, `redis-server` versus `rlockd`, counted in
//! instructions rather than timed: both run under `valgrind
//! --tool=callgrind`, which counts every instruction of every thread the
//! same way on a quiet or a busy machine. One client takes and releases
//! Redisson locks (EVALSHA of `redisson_lock.lua` and `redisson_unlock.lua`)
//! over a real socket. Each server runs twice, with a short and a long
//! workload; the difference divided by the extra pairs is the cost of one
//! lock+unlock pair, start-up and shut-down cancelled out.
//!
//! The same way, rlockd alone: a read-only script (`ZSCORE` of one member)
//! over a sorted set of one member and of 100,000, which must cost the
//! same: a script pays for what it changes, not for the size of what it
//! reads. And both servers again: a script that changes ten fields of a
//! 1,000-field hash (ten HSETs), what a script's undo journal costs
//! (redis-server keeps none).
//!
//! And what a replica costs, each server in both roles next to its own
//! kind: the primary under callgrind with 0, 1 and 2 replicas attached
//! (each pair waited for with `WAIT`), then a replica under callgrind
//! applying its primary's stream of the same pairs.
//!
//! Run with `cargo bench --bench instructions`. Knobs:
//! `RLOCKD_BENCH_PAIRS` (2000 extra pairs, and as many extra script
//! calls), `RLOCKD_BENCH_REPLICAS_ONLY` (1: only the replication part).
//! Needs `valgrind`; without it the bench says so and exits.

mod support;

use std::io;
use std::net::SocketAddr;
use std::thread;
use std::time::{Duration, Instant};

use support::callgrind::{self, Workload, count};
use support::{Conn, Reply, Server, free_port, knob, launch, rlockd_binary, transient_args};

const LOCK_LUA: &str = include_str!("../src/command/scripting/lock_scripts/redisson_lock.lua");
const UNLOCK_LUA: &str = include_str!("../src/command/scripting/lock_scripts/redisson_unlock.lua");
const OWNER: &str = "8743c9c0-0795-4907-87fd-6c719a6b4586:1";
/// Pairs in the short run.
const BASE_PAIRS: usize = 200;

fn sha(conn: &mut Conn, script: &str) -> io::Result<String> {
    match conn.cmd(&["SCRIPT", "LOAD", script])? {
        Reply::Bulk(Some(sha)) => Ok(String::from_utf8(sha).expect("hex")),
        other => Err(io::Error::other(format!("SCRIPT LOAD: {other:?}"))),
    }
}

fn drive(addr: SocketAddr, pairs: usize) -> io::Result<()> {
    let mut conn = Conn::open(addr)?;
    let (lock, unlock) = (sha(&mut conn, LOCK_LUA)?, sha(&mut conn, UNLOCK_LUA)?);
    for i in 0..pairs {
        let name = format!("lock:{}", i % 100);
        let channel = format!("redisson_lock__channel:{{{name}}}");
        conn.cmd(&["EVALSHA", &lock, "1", &name, "30000", OWNER])?;
        match conn.cmd(&[
            "EVALSHA", &unlock, "2", &name, &channel, "0", "30000", OWNER,
        ])? {
            Reply::Int(1) => {}
            other => return Err(io::Error::other(format!("unlock: {other:?}"))),
        }
    }
    Ok(())
}

const READ_LUA: &str = "return redis.call('zscore', KEYS[1], 'm1')";

/// Members of the sorted set `read_script` reads, by its key.
fn members(key: &str) -> usize {
    if key == "big" { 100_000 } else { 1 }
}

/// Fills the sorted set, then calls the read-only script `calls` times.
fn read_script(addr: SocketAddr, calls: usize, key: &str) -> io::Result<()> {
    let mut conn = Conn::open(addr)?;
    conn.cmd(&[
        "EVAL",
        "for i = 1, tonumber(ARGV[1]) do redis.call('zadd', KEYS[1], i, 'm' .. i) end",
        "1",
        key,
        &members(key).to_string(),
    ])?;
    let read = sha(&mut conn, READ_LUA)?;
    for _ in 0..calls {
        conn.cmd(&["EVALSHA", &read, "1", key])?;
    }
    Ok(())
}

/// Fills a 1,000-field hash, then calls a script of ten HSETs on it
/// `calls` times.
fn write_script(addr: SocketAddr, calls: usize) -> io::Result<()> {
    let mut conn = Conn::open(addr)?;
    conn.cmd(&[
        "EVAL",
        "for i = 1, 1000 do redis.call('hset', KEYS[1], 'm' .. i, i) end",
        "1",
        "hash",
    ])?;
    let write = sha(
        &mut conn,
        "for i = 1, 10 do redis.call('hset', KEYS[1], 'm' .. i, ARGV[1]) end return 1",
    )?;
    for _ in 0..calls {
        conn.cmd(&["EVALSHA", &write, "1", "hash", "value"])?;
    }
    Ok(())
}

fn read_small(addr: SocketAddr, calls: usize) -> io::Result<()> {
    read_script(addr, calls, "small")
}

fn read_big(addr: SocketAddr, calls: usize) -> io::Result<()> {
    read_script(addr, calls, "big")
}

fn main() {
    if !callgrind::available() {
        return;
    }
    let pairs = knob("RLOCKD_BENCH_PAIRS", 2000).max(1);
    let redis = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    let rlockd = rlockd_binary();
    let per_run = |program: &str, args: &[&str], workload: Workload<'_>| {
        let short = count(program, args, workload, BASE_PAIRS);
        let long = count(program, args, workload, BASE_PAIRS + pairs);
        long.saturating_sub(short) as f64 / pairs as f64
    };
    if knob("RLOCKD_BENCH_REPLICAS_ONLY", 0) == 0 {
        locks_and_scripts(&redis, &rlockd, pairs, &per_run);
    }
    replication(&redis, &rlockd, pairs, &per_run);
}

/// Instructions per unit of a workload, by program, arguments and workload.
type PerRun<'a> = &'a dyn Fn(&str, &[&str], Workload<'_>) -> f64;

fn locks_and_scripts(redis: &str, rlockd: &str, pairs: usize, per_run: PerRun<'_>) {
    let servers: [(&str, &str, &[&str]); 2] = [
        ("redis", redis, &["--save", "", "--appendonly", "no"]),
        ("rlockd", rlockd, &[]),
    ];
    let mut per_pair = Vec::new();
    let mut per_write = Vec::new();
    for (name, program, args) in servers {
        let cost = per_run(program, args, &drive);
        println!("{name:<8} {cost:>9.0} instructions per Redisson lock+unlock pair");
        per_pair.push(cost);
        let cost = per_run(program, args, &write_script);
        println!("{name:<8} {cost:>9.0} instructions per script call of ten HSETs");
        per_write.push(cost);
    }
    let ratio = per_pair[1] / per_pair[0];
    let write_ratio = per_write[1] / per_write[0];
    println!("rlockd / redis: lock pairs {ratio:.2}, ten HSETs {write_ratio:.2}");
    let mut per_call = Vec::new();
    for (key, workload) in [("small", &read_small as Workload<'_>), ("big", &read_big)] {
        let cost = per_run(rlockd, &[], workload);
        println!(
            "rlockd   {cost:>9.0} instructions per read-only script call over {} member(s)",
            members(key)
        );
        per_call.push(cost);
    }
    let size_ratio = per_call[1] / per_call[0];
    println!("100,000 members / 1 member: {size_ratio:.2}");
    println!(
        "BENCH {{\"bench\":\"instructions\",\"pairs\":{pairs},\"ratio\":{ratio:.3},\"write_ratio\":{write_ratio:.3},\"read_size_ratio\":{size_ratio:.3}}}"
    );
}

/// Seconds a replica may take to sync or catch up.
const REPLICA_PATIENCE: Duration = Duration::from_secs(120);

/// A server of `program` on a free port, persistence off, that syncs
/// replicas at once.
fn plain(program: &str) -> io::Result<Server> {
    let mut args = transient_args(free_port(), "rlockd-bench-instructions");
    args.extend(["--repl-diskless-sync-delay".into(), "0".into()]);
    launch("server", program, &args)
        .ok_or_else(|| io::Error::other(format!("{program} did not start")))
}

/// Makes the server at `replica` follow `primary`, once its link is up.
fn follow(replica: SocketAddr, primary: SocketAddr) -> io::Result<()> {
    let mut conn = Conn::open(replica)?;
    conn.cmd(&["REPLICAOF", "127.0.0.1", &primary.port().to_string()])?;
    let deadline = Instant::now() + REPLICA_PATIENCE;
    loop {
        match conn.cmd(&["INFO", "replication"])? {
            Reply::Bulk(Some(text))
                if String::from_utf8_lossy(&text).contains("master_link_status:up") =>
            {
                return Ok(());
            }
            _ if Instant::now() > deadline => return Err(io::Error::other("no link up")),
            _ => thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Waits until `replicas` replicas of `primary` acknowledged every write.
fn caught_up(primary: SocketAddr, replicas: usize) -> io::Result<()> {
    let wanted = replicas.to_string();
    let timeout = REPLICA_PATIENCE.as_millis().to_string();
    match Conn::open(primary)?.cmd(&["WAIT", &wanted, &timeout])? {
        Reply::Int(n) if n as usize >= replicas => Ok(()),
        other => Err(io::Error::other(format!("WAIT: {other:?}"))),
    }
}

/// `drive` on the primary at `addr` with `replicas` servers of `program`
/// following it.
fn drive_followed(
    addr: SocketAddr,
    pairs: usize,
    program: &str,
    replicas: usize,
) -> io::Result<()> {
    let mut followers = Vec::new();
    for _ in 0..replicas {
        let follower = plain(program)?;
        follow(follower.addr, addr)?;
        followers.push(follower);
    }
    drive(addr, pairs)?;
    caught_up(addr, replicas)
}

/// `drive` on a primary of `program` that the server at `addr` follows.
fn drive_as_replica(addr: SocketAddr, pairs: usize, program: &str) -> io::Result<()> {
    let primary = plain(program)?;
    follow(addr, primary.addr)?;
    drive(primary.addr, pairs)?;
    caught_up(primary.addr, 1)
}

/// Each server as a primary with 0, 1 and 2 replicas of its own kind,
/// and as a replica: instructions per pair, and what a replica adds.
fn replication(redis: &str, rlockd: &str, pairs: usize, per_run: PerRun<'_>) {
    // A replica's sync file goes to the temporary directory, not here.
    let transient = transient_args(free_port(), "rlockd-bench-instructions");
    let mut args: Vec<&str> = transient.iter().skip(2).map(String::as_str).collect();
    args.extend(["--repl-diskless-sync-delay", "0"]);
    let servers = [("redis", redis), ("rlockd", rlockd)];
    let mut added = Vec::new();
    for (name, program) in servers {
        let mut costs = Vec::new();
        for replicas in 0..=2 {
            let workload = |addr: SocketAddr, n: usize| drive_followed(addr, n, program, replicas);
            let cost = per_run(program, &args, &workload);
            println!(
                "{name:<8} {cost:>9.0} instructions per pair on a primary with {replicas} replica(s)"
            );
            costs.push(cost);
        }
        let workload = |addr: SocketAddr, n: usize| drive_as_replica(addr, n, program);
        let applied = per_run(program, &args, &workload);
        println!("{name:<8} {applied:>9.0} instructions per pair on a replica");
        added.push((costs[1] - costs[0], costs[2] - costs[0], applied));
    }
    let (redis, rlockd) = (added[0], added[1]);
    println!(
        "what replicas add to the primary, rlockd / redis: 1 replica {:.2}, 2 replicas {:.2}; a replica's own, {:.2}",
        rlockd.0 / redis.0,
        rlockd.1 / redis.1,
        rlockd.2 / redis.2
    );
    println!(
        "BENCH {{\"bench\":\"instructions_replication\",\"pairs\":{pairs},\"one_replica_ratio\":{:.3},\"two_replicas_ratio\":{:.3},\"replica_ratio\":{:.3}}}",
        rlockd.0 / redis.0,
        rlockd.1 / redis.1,
        rlockd.2 / redis.2
    );
}
