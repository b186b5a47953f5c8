//! Uncontended Redisson lock+unlock pairs, `redis-server` versus `rlockd`
//! side by side: each client takes and releases a lock of its own
//! (EVALSHA of `seed002_lock.lua` then `seed002_unlock.lua`) as fast as
//! it can. Reported per client count: pairs/s, lock latency p50/p99, and
//! the server's CPU time per pair (user + system, from /proc), then
//! rlockd / redis. Rounds alternate between the servers.
//!
//! Run with `cargo bench --bench pairs`. Knobs: `RLOCKD_BENCH_CLIENT_COUNTS`
//! (`1,64`), `RLOCKD_BENCH_ROUNDS` (3), `RLOCKD_BENCH_SECONDS` (3).

mod support;

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use support::{Conn, Reply, Server, knob, median, percentile, start_servers};

const LOCK_LUA: &str = include_str!("../conformance/scripts/seed002_lock.lua");
const UNLOCK_LUA: &str = include_str!("../conformance/scripts/seed002_unlock.lua");

fn sha(conn: &mut Conn, script: &str) -> io::Result<String> {
    match conn.cmd(&["SCRIPT", "LOAD", script])? {
        Reply::Bulk(Some(sha)) => Ok(String::from_utf8(sha).expect("hex")),
        other => Err(io::Error::other(format!("SCRIPT LOAD: {other:?}"))),
    }
}

struct Round {
    pairs: u64,
    secs: f64,
    /// Lock round trips in microseconds, every client's.
    lock_us: Vec<f64>,
    cpu_secs: f64,
}

fn round(server: &Server, clients: usize, length: Duration) -> io::Result<Round> {
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
            let (mut pairs, mut lock_us) = (0u64, Vec::new());
            start.wait();
            let until = Instant::now() + length;
            while Instant::now() < until {
                let asked = Instant::now();
                match conn.cmd(&["EVALSHA", &lock, "1", &name, "30000", &owner])? {
                    Reply::Bulk(None) => {}
                    other => return Err(io::Error::other(format!("lock: {other:?}"))),
                }
                lock_us.push(asked.elapsed().as_secs_f64() * 1e6);
                match conn.cmd(&[
                    "EVALSHA", &unlock, "2", &name, &channel, "0", "30000", &owner,
                ])? {
                    Reply::Int(1) => pairs += 1,
                    other => return Err(io::Error::other(format!("unlock: {other:?}"))),
                }
            }
            Ok((pairs, lock_us))
        }));
    }
    let cpu_before = server.cpu_secs();
    start.wait();
    let started = Instant::now();
    let (mut pairs, mut lock_us) = (0, Vec::new());
    for w in workers {
        let (p, l) = w.join().expect("client thread")?;
        pairs += p;
        lock_us.extend(l);
    }
    Ok(Round {
        pairs,
        secs: started.elapsed().as_secs_f64(),
        lock_us,
        cpu_secs: server.cpu_secs() - cpu_before,
    })
}

fn main() {
    let counts: Vec<usize> = std::env::var("RLOCKD_BENCH_CLIENT_COUNTS")
        .unwrap_or_else(|_| "1,64".into())
        .split(',')
        .filter_map(|c| c.trim().parse().ok())
        .collect();
    let rounds = knob("RLOCKD_BENCH_ROUNDS", 3).max(1);
    let length = Duration::from_secs(knob("RLOCKD_BENCH_SECONDS", 3).max(1) as u64);
    let servers = start_servers();
    for clients in counts {
        // Per server: pairs/s, lock p50 and p99 (µs), CPU µs per pair.
        let mut figures = vec![(Vec::new(), Vec::new(), Vec::new(), Vec::new()); servers.len()];
        for r in 0..rounds {
            for (i, server) in servers.iter().enumerate() {
                let got = round(server, clients, length).expect("a bench round");
                let rate = got.pairs as f64 / got.secs;
                let cpu = got.cpu_secs * 1e6 / got.pairs.max(1) as f64;
                let (p50, p99) = (
                    percentile(got.lock_us.clone(), 0.5),
                    percentile(got.lock_us, 0.99),
                );
                eprintln!(
                    "{clients} clients, round {}/{rounds} {:>6}: {rate:>8.0} pairs/s, lock p50 {p50:.0} µs p99 {p99:.0} µs, {cpu:.1} µs CPU/pair",
                    r + 1,
                    server.name
                );
                figures[i].0.push(rate);
                figures[i].1.push(p50);
                figures[i].2.push(p99);
                figures[i].3.push(cpu);
            }
        }
        println!();
        println!(
            "{clients} clients, uncontended lock+unlock pairs (median of {rounds} rounds of {length:?})"
        );
        let medians: Vec<[f64; 4]> = figures
            .into_iter()
            .map(|(a, b, c, d)| [median(a), median(b), median(c), median(d)])
            .collect();
        for (server, m) in servers.iter().zip(&medians) {
            println!(
                "{:<8} {:>9.0} pairs/s   lock p50 {:>6.0} µs  p99 {:>6.0} µs   {:>6.1} µs CPU/pair",
                server.name, m[0], m[1], m[2], m[3]
            );
        }
        if let [redis, rlockd] = &medians[..] {
            println!(
                "rlockd / redis: pairs/s {:.2}, lock p99 {:.2}, CPU per pair {:.2}",
                rlockd[0] / redis[0],
                rlockd[2] / redis[2],
                rlockd[3] / redis[3]
            );
            println!(
                "BENCH {{\"bench\":\"pairs\",\"clients\":{clients},\"pairs_ratio\":{:.3},\"p99_ratio\":{:.3},\"cpu_ratio\":{:.3}}}",
                rlockd[0] / redis[0],
                rlockd[2] / redis[2],
                rlockd[3] / redis[3]
            );
        }
    }
}
