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
//! Run with `cargo bench --bench instructions`. Knob:
//! `RLOCKD_BENCH_PAIRS` (2000 extra pairs, and as many extra script
//! calls). Needs `valgrind`; without it the bench says so and exits.

mod support;

use std::io;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use support::{Conn, Reply, free_port, knob, rlockd_binary};

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

/// A workload a server runs under callgrind, `n` times over.
type Workload = fn(SocketAddr, usize) -> io::Result<()>;

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

/// Instructions the server ran, start to shut-down, doing `pairs` pairs.
fn count(program: &str, args: &[&str], workload: Workload, pairs: usize) -> u64 {
    let out = std::env::temp_dir().join(format!("rlockd-callgrind-{}.out", free_port()));
    let port = free_port();
    let mut child = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(program)
        .args(args)
        .args(["--port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("valgrind starts");
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(60);
    while Conn::open(addr).and_then(|mut c| c.cmd(&["PING"])).is_err() {
        assert!(Instant::now() < deadline, "{program} did not start");
        thread::sleep(Duration::from_millis(100));
    }
    workload(addr, pairs).expect("the workload runs");
    let _ = Conn::open(addr).and_then(|mut c| c.send(&["SHUTDOWN", "NOSAVE"]));
    child.wait().expect("the server exits");
    let text = std::fs::read_to_string(&out).expect("callgrind's output");
    let _ = std::fs::remove_file(&out);
    text.lines()
        .find_map(|l| l.strip_prefix("summary:").or(l.strip_prefix("totals:")))
        .and_then(|n| n.trim().parse().ok())
        .expect("a total in callgrind's output")
}

fn main() {
    if Command::new("valgrind").arg("--version").output().is_err() {
        println!("valgrind not available (Debian: apt-get install valgrind): nothing measured");
        return;
    }
    let pairs = knob("RLOCKD_BENCH_PAIRS", 2000).max(1);
    let redis = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    let rlockd = rlockd_binary();
    let servers: [(&str, &str, &[&str]); 2] = [
        ("redis", &redis, &["--save", "", "--appendonly", "no"]),
        ("rlockd", &rlockd, &[]),
    ];
    let per_run = |program: &str, args: &[&str], workload: Workload| {
        let short = count(program, args, workload, BASE_PAIRS);
        let long = count(program, args, workload, BASE_PAIRS + pairs);
        long.saturating_sub(short) as f64 / pairs as f64
    };
    let mut per_pair = Vec::new();
    let mut per_write = Vec::new();
    for (name, program, args) in servers {
        let cost = per_run(program, args, drive);
        println!("{name:<8} {cost:>9.0} instructions per Redisson lock+unlock pair");
        per_pair.push(cost);
        let cost = per_run(program, args, write_script);
        println!("{name:<8} {cost:>9.0} instructions per script call of ten HSETs");
        per_write.push(cost);
    }
    let ratio = per_pair[1] / per_pair[0];
    let write_ratio = per_write[1] / per_write[0];
    println!("rlockd / redis: lock pairs {ratio:.2}, ten HSETs {write_ratio:.2}");
    let mut per_call = Vec::new();
    for (key, workload) in [("small", read_small as Workload), ("big", read_big)] {
        let cost = per_run(&rlockd, &[], workload);
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
