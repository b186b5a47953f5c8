//! Contended lock benchmark, `redis-server` versus `rlockd` side by side:
//! `RLOCKD_BENCH_CLIENTS` (16) clients, each on its own connection and
//! thread, fight over one lock with the seed documents' reentrant lock
//! script (EVALSHA) and a Redisson-style unlock script that PUBLISHes the
//! wake-up. A client that gets the lock unlocks it at once; one that does
//! not tries again at once (a tryLock spin). Reported: completed lock +
//! unlock cycles per second, script calls per second, and rlockd / redis.
//!
//! Rounds alternate between the servers (redis, rlockd, redis, …) so drift
//! of the machine hits both alike. Mutual exclusion is checked as it runs:
//! each holder bumps a counter with a non-atomic GET/SET inside the lock,
//! and the counter must equal the number of cycles at the end.
//!
//! Run with `cargo bench --bench locks`. Knobs: `RLOCKD_BENCH_CLIENTS`,
//! `RLOCKD_BENCH_ROUNDS` (3), `RLOCKD_BENCH_SECONDS` (per round, 3).

mod support;

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use support::{Conn, Reply, knob, median, start_servers};

const LOCK_LUA: &str = include_str!("../src/command/scripting/lock_scripts/redisson_lock.lua");
const UNLOCK_LUA: &str = include_str!("../src/command/scripting/lock_scripts/redisson_unlock.lua");
const LOCK: &str = "{bench-lock}";
const CHANNEL: &str = "redisson_lock__channel:{bench-lock}";
const COUNTER: &str = "{bench-lock}:counter";

fn load(conn: &mut Conn, script: &str) -> io::Result<String> {
    match conn.cmd(&["SCRIPT", "LOAD", script])? {
        Reply::Bulk(Some(sha)) => Ok(String::from_utf8(sha).expect("hex")),
        other => Err(io::Error::other(format!("SCRIPT LOAD: {other:?}"))),
    }
}

fn count(reply: Reply) -> i64 {
    match reply {
        Reply::Int(n) => n,
        Reply::Bulk(Some(b)) => String::from_utf8_lossy(&b).parse().unwrap_or(0),
        _ => 0,
    }
}

struct Round {
    cycles: u64,
    calls: u64,
    secs: f64,
}

/// One round: every client spins on the lock until the time is up.
fn round(addr: SocketAddr, clients: usize, length: Duration) -> io::Result<Round> {
    let mut admin = Conn::open(addr)?;
    admin.cmd(&["DEL", LOCK, COUNTER])?;
    let lock_sha = load(&mut admin, LOCK_LUA)?;
    let unlock_sha = load(&mut admin, UNLOCK_LUA)?;
    let start = Arc::new(Barrier::new(clients + 1));
    let mut workers = Vec::new();
    for n in 0..clients {
        let (start, lock_sha, unlock_sha) = (start.clone(), lock_sha.clone(), unlock_sha.clone());
        let mut conn = Conn::open(addr)?;
        workers.push(thread::spawn(move || -> io::Result<(u64, u64)> {
            let owner = format!("8743c9c0-0795-4907-87fd-6c719a6b4586:{n}");
            let (mut cycles, mut calls) = (0u64, 0u64);
            start.wait();
            let until = Instant::now() + length;
            while Instant::now() < until {
                calls += 1;
                let got = conn.cmd(&["EVALSHA", &lock_sha, "1", LOCK, "30000", &owner])?;
                if !matches!(got, Reply::Bulk(None)) {
                    continue;
                }
                // Held: a non-atomic increment that only a lock keeps exact.
                let seen = count(conn.cmd(&["GET", COUNTER])?);
                conn.cmd(&["SET", COUNTER, &(seen + 1).to_string()])?;
                calls += 1;
                match conn.cmd(&[
                    "EVALSHA",
                    &unlock_sha,
                    "2",
                    LOCK,
                    CHANNEL,
                    "0",
                    "30000",
                    &owner,
                ])? {
                    Reply::Int(1) => cycles += 1,
                    other => return Err(io::Error::other(format!("unlock: {other:?}"))),
                }
            }
            Ok((cycles, calls))
        }));
    }
    start.wait();
    let started = Instant::now();
    let (mut cycles, mut calls) = (0, 0);
    for w in workers {
        let (c, k) = w.join().expect("client thread")?;
        cycles += c;
        calls += k;
    }
    let secs = started.elapsed().as_secs_f64();
    let counter = count(admin.cmd(&["GET", COUNTER])?);
    assert_eq!(
        counter as u64, cycles,
        "the counter guarded by the lock lost increments: mutual exclusion broke"
    );
    Ok(Round {
        cycles,
        calls,
        secs,
    })
}

fn main() {
    let clients = knob("RLOCKD_BENCH_CLIENTS", 16).max(1);
    let rounds = knob("RLOCKD_BENCH_ROUNDS", 3).max(1);
    let length = Duration::from_secs(knob("RLOCKD_BENCH_SECONDS", 3).max(1) as u64);
    let servers = start_servers();
    let mut cycle_rates = vec![Vec::new(); servers.len()];
    let mut call_rates = vec![Vec::new(); servers.len()];
    for r in 0..rounds {
        for (i, server) in servers.iter().enumerate() {
            let got = round(server.addr, clients, length).expect("a bench round");
            let (cps, kps) = (got.cycles as f64 / got.secs, got.calls as f64 / got.secs);
            eprintln!(
                "round {}/{rounds} {:>6}: {cps:>9.0} lock+unlock cycles/s {kps:>9.0} script calls/s",
                r + 1,
                server.name
            );
            cycle_rates[i].push(cps);
            call_rates[i].push(kps);
        }
    }
    println!();
    println!("{clients} clients, one lock, tryLock spin (median of {rounds} rounds of {length:?})");
    let cycles: Vec<f64> = cycle_rates.into_iter().map(median).collect();
    let calls: Vec<f64> = call_rates.into_iter().map(median).collect();
    for (i, server) in servers.iter().enumerate() {
        println!(
            "{:<8} {:>10.0} cycles/s {:>10.0} script calls/s",
            server.name, cycles[i], calls[i]
        );
    }
    if servers.len() == 2 {
        println!(
            "rlockd / redis: cycles {:.2}, script calls {:.2}",
            cycles[1] / cycles[0],
            calls[1] / calls[0]
        );
        println!(
            "BENCH {{\"bench\":\"locks\",\"clients\":{clients},\"cycles_ratio\":{:.3},\"calls_ratio\":{:.3}}}",
            cycles[1] / cycles[0],
            calls[1] / calls[0]
        );
    }
}
