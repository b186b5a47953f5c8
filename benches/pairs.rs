//! Uncontended Redisson lock+unlock pairs, `redis-server` versus `rlockd`
//! side by side: each client takes and releases a lock of its own
//! (EVALSHA of `redisson_lock.lua` then `redisson_unlock.lua`) as fast as
//! it can. Reported per client count: pairs/s, lock latency p50/p99, and
//! the server's CPU time per pair (user + system, from /proc, and the
//! system part alone), then rlockd / redis. Each lock round is followed by
//! a round of PING pairs on the same server, so that the output also shows
//! the bounds the kernel sets: the pairs/s ratio rlockd would reach if a
//! lock pair cost it no more than two PINGs, and the CPU ratio it would
//! reach if its own code took no time. A third server, the null server
//! (`benches/support`), answers the same requests without doing any of
//! their work, two system calls a request: its CPU per pair over
//! redis-server's is the lowest ratio any server can reach on the machine.
//! Rounds alternate between the servers.
//!
//! Run with `cargo bench --bench pairs`. Knobs: `RLOCKD_BENCH_CLIENT_COUNTS`
//! (`1,64`), `RLOCKD_BENCH_ROUNDS` (3), `RLOCKD_BENCH_SECONDS` (3).

mod support;

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use support::{
    Conn, Cpu, Reply, Rounds, Server, join_clients, launch_null, median, percentile, rounds_knobs,
    serve_null_if_asked, start_servers,
};

const LOCK_LUA: &str = include_str!("../src/command/scripting/lock_scripts/redisson_lock.lua");
const UNLOCK_LUA: &str = include_str!("../src/command/scripting/lock_scripts/redisson_unlock.lua");

fn sha(conn: &mut Conn, script: &str) -> io::Result<String> {
    match conn.cmd(&["SCRIPT", "LOAD", script])? {
        Reply::Bulk(Some(sha)) => Ok(String::from_utf8(sha).expect("hex")),
        other => Err(io::Error::other(format!("SCRIPT LOAD: {other:?}"))),
    }
}

/// What each client repeats: the lock+unlock pair, or two PINGs in its
/// place (the same round trips with nothing for the server to do: what
/// any server's pairs/s is bounded by on this machine).
#[derive(Clone, Copy, PartialEq)]
enum Load {
    Locks,
    Pings,
}

struct Round {
    pairs: u64,
    secs: f64,
    /// Lock round trips in microseconds, every client's.
    lock_us: Vec<f64>,
    cpu: Cpu,
}

fn round(server: &Server, clients: usize, length: Duration, load: Load) -> io::Result<Round> {
    let addr: SocketAddr = server.addr;
    let mut admin = Conn::open(addr)?;
    let (lock, unlock) = (sha(&mut admin, LOCK_LUA)?, sha(&mut admin, UNLOCK_LUA)?);
    let start = Arc::new(Barrier::new(clients + 1));
    let mut workers = Vec::new();
    for n in 0..clients {
        let (start, lock, unlock) = (start.clone(), lock.clone(), unlock.clone());
        let mut conn = Conn::open(addr)?;
        workers.push(thread::spawn(move || -> io::Result<(u64, Vec<f64>)> {
            let name = format!("pair:{n}");
            let channel = format!("redisson_lock__channel:{{{name}}}");
            let owner = format!("8743c9c0-0795-4907-87fd-6c719a6b4586:{n}");
            let (lock, unlock): (&[&str], &[&str]) = match load {
                Load::Locks => (
                    &["EVALSHA", &lock, "1", &name, "30000", &owner],
                    &[
                        "EVALSHA", &unlock, "2", &name, &channel, "0", "30000", &owner,
                    ],
                ),
                Load::Pings => (&["PING"], &["PING"]),
            };
            let (mut pairs, mut lock_us) = (0u64, Vec::new());
            start.wait();
            let until = Instant::now() + length;
            while Instant::now() < until {
                let asked = Instant::now();
                match conn.cmd(lock)? {
                    Reply::Bulk(None) if load == Load::Locks => {}
                    Reply::Line if load == Load::Pings => {}
                    other => return Err(io::Error::other(format!("lock: {other:?}"))),
                }
                lock_us.push(asked.elapsed().as_secs_f64() * 1e6);
                match conn.cmd(unlock)? {
                    Reply::Int(1) if load == Load::Locks => pairs += 1,
                    Reply::Line if load == Load::Pings => pairs += 1,
                    other => return Err(io::Error::other(format!("unlock: {other:?}"))),
                }
            }
            Ok((pairs, lock_us))
        }));
    }
    let cpu_before = server.cpu();
    start.wait();
    let started = Instant::now();
    let (pairs, lock_us) = join_clients(workers)?;
    Ok(Round {
        pairs,
        secs: started.elapsed().as_secs_f64(),
        lock_us,
        cpu: server.cpu() - cpu_before,
    })
}

/// One round's figures for one server, in the order they are printed.
const FIGURES: usize = 6;
const RATE: usize = 0;
const P50: usize = 1;
const P99: usize = 2;
const CPU: usize = 3;
/// The kernel's part of CPU (system time) per pair.
const KERNEL: usize = 4;
/// Pairs/s of the PING round that followed.
const PINGS: usize = 5;

fn main() {
    serve_null_if_asked();
    let Rounds {
        client_counts: counts,
        rounds,
        length,
    } = rounds_knobs("1,64");
    let mut servers = start_servers();
    // Beside redis-server, a server that does none of the work: the floor
    // under any server's CPU per pair on this machine.
    if servers.len() > 1 {
        servers.extend(launch_null());
    }
    for clients in counts {
        let mut figures = vec![[const { Vec::new() }; FIGURES]; servers.len()];
        for r in 0..rounds {
            for (i, server) in servers.iter().enumerate() {
                let got = round(server, clients, length, Load::Locks).expect("a bench round");
                let pings = round(server, clients, length, Load::Pings).expect("a PING round");
                let per_pair = |secs: f64| secs * 1e6 / got.pairs.max(1) as f64;
                let mut row = [0.0; FIGURES];
                row[RATE] = got.pairs as f64 / got.secs;
                row[P50] = percentile(got.lock_us.clone(), 0.5);
                row[P99] = percentile(got.lock_us, 0.99);
                row[CPU] = per_pair(got.cpu.user + got.cpu.system);
                row[KERNEL] = per_pair(got.cpu.system);
                row[PINGS] = pings.pairs as f64 / pings.secs;
                eprintln!(
                    "{clients} clients, round {}/{rounds} {:>6}: {:>8.0} pairs/s, lock p50 {:.0} µs p99 {:.0} µs, {:.1} µs CPU/pair ({:.1} kernel); PING pairs {:.0}/s",
                    r + 1,
                    server.name,
                    row[RATE],
                    row[P50],
                    row[P99],
                    row[CPU],
                    row[KERNEL],
                    row[PINGS]
                );
                for (all, value) in figures[i].iter_mut().zip(row) {
                    all.push(value);
                }
            }
        }
        println!();
        println!(
            "{clients} clients, uncontended lock+unlock pairs (median of {rounds} rounds of {length:?})"
        );
        let medians: Vec<[f64; FIGURES]> = figures.into_iter().map(|f| f.map(median)).collect();
        for (server, m) in servers.iter().zip(&medians) {
            println!(
                "{:<8} {:>9.0} pairs/s   lock p50 {:>6.0} µs  p99 {:>6.0} µs   {:>6.1} µs CPU/pair ({:.1} kernel)   PING pairs {:.0}/s",
                server.name, m[RATE], m[P50], m[P99], m[CPU], m[KERNEL], m[PINGS]
            );
        }
        if let [redis, rlockd, null @ ..] = &medians[..] {
            // What no user-space work can beat: rlockd's pairs/s if a lock
            // pair cost it no more than two PINGs, and its CPU ratio if its
            // own code took no time at all (the kernel's part left).
            let pairs_ceiling = rlockd[PINGS] / redis[RATE];
            let cpu_floor = rlockd[KERNEL] / redis[CPU];
            println!(
                "rlockd / redis: pairs/s {:.2}, lock p99 {:.2}, CPU per pair {:.2}",
                rlockd[RATE] / redis[RATE],
                rlockd[P99] / redis[P99],
                rlockd[CPU] / redis[CPU]
            );
            println!(
                "bounds: pairs/s at most {pairs_ceiling:.2} (PING round trips alone), CPU per pair at least {cpu_floor:.2} (kernel time alone)"
            );
            // The null server answers the same requests doing nothing: its
            // CPU per pair over redis-server's is what no server goes below.
            let null_cpu = null.first().map(|null| null[CPU] / redis[CPU]);
            if let Some(ratio) = null_cpu {
                println!("null server / redis: CPU per pair {ratio:.2} (a server doing no work)");
            }
            let null_cpu = null_cpu.map_or("null".to_string(), |ratio| format!("{ratio:.3}"));
            println!(
                "BENCH {{\"bench\":\"pairs\",\"clients\":{clients},\"pairs_ratio\":{:.3},\"p99_ratio\":{:.3},\"cpu_ratio\":{:.3},\"pairs_ceiling\":{pairs_ceiling:.3},\"cpu_floor\":{cpu_floor:.3},\"null_cpu_ratio\":{null_cpu}}}",
                rlockd[RATE] / redis[RATE],
                rlockd[P99] / redis[P99],
                rlockd[CPU] / redis[CPU]
            );
        }
    }
}
