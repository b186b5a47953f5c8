//! CPU a server spends while no client asks anything, `redis-server`
//! versus `rlockd` side by side over the same window: empty; holding
//! `RLOCKD_BENCH_LOCKS` (10,000) Redisson locks with leases that outlast
//! the window; and with as many leases coming due one after another over
//! the window (active expiry's own cost). A lock server spends most of its
//! life like this.
//!
//! Run with `cargo bench --bench idle`. Knobs: `RLOCKD_BENCH_LOCKS`,
//! `RLOCKD_BENCH_SECONDS` (window per state, 20). /proc counts CPU in
//! 10 ms ticks, so the window must be long for the figures to mean much.

mod support;

use std::thread;
use std::time::Duration;

use support::{Conn, Reply, Server, knob, pipeline, start_servers};

const LOCK_LUA: &str = include_str!("../src/command/scripting/lock_scripts/redisson_lock.lua");
const OWNER: &str = "8743c9c0-0795-4907-87fd-6c719a6b4586:1";

/// Each server's CPU milliseconds per second of the window.
fn window(servers: &[Server], secs: u64) -> Vec<f64> {
    let before: Vec<f64> = servers.iter().map(Server::cpu_secs).collect();
    thread::sleep(Duration::from_secs(secs));
    servers
        .iter()
        .zip(before)
        .map(|(s, b)| (s.cpu_secs() - b) * 1000.0 / secs as f64)
        .collect()
}

fn main() {
    let locks = knob("RLOCKD_BENCH_LOCKS", 10_000).max(1);
    let secs = knob("RLOCKD_BENCH_SECONDS", 20).max(1) as u64;
    let servers = start_servers();
    let mut conns: Vec<Conn> = servers
        .iter()
        .map(|s| Conn::open(s.addr).expect("connect"))
        .collect();
    let mut rows: Vec<(&str, Vec<f64>)> = Vec::new();
    rows.push(("empty", window(&servers, secs)));

    let lease_ms = (secs * 1000 * 10).to_string();
    for conn in &mut conns {
        let Ok(Reply::Bulk(Some(sha))) = conn.cmd(&["SCRIPT", "LOAD", LOCK_LUA]) else {
            panic!("SCRIPT LOAD");
        };
        let sha = String::from_utf8(sha).expect("hex");
        let lines: Vec<Vec<String>> = (0..locks)
            .map(|i| {
                ["EVALSHA", &sha, "1", &format!("lock:{i}"), &lease_ms, OWNER]
                    .map(String::from)
                    .to_vec()
            })
            .collect();
        lines.chunks(1000).for_each(|c| pipeline(conn, c));
    }
    rows.push(("locks held", window(&servers, secs)));

    // Deadlines spread evenly over the window, one every few milliseconds.
    let step = (secs * 1000 / locks as u64).max(1);
    for conn in &mut conns {
        conn.cmd(&["FLUSHALL"]).expect("FLUSHALL");
        let lines: Vec<Vec<String>> = (0..locks)
            .map(|i| {
                let ttl = (1 + i as u64 * step).to_string();
                ["SET", &format!("lease:{i}"), OWNER, "PX", &ttl]
                    .map(String::from)
                    .to_vec()
            })
            .collect();
        lines.chunks(1000).for_each(|c| pipeline(conn, c));
    }
    rows.push(("leases coming due", window(&servers, secs)));

    println!(
        "server CPU while idle, ms per second over {secs} s windows ({locks} locks or leases)"
    );
    for (name, cpu) in &rows {
        let line: Vec<String> = servers
            .iter()
            .zip(cpu)
            .map(|(s, c)| format!("{} {c:>6.2}", s.name))
            .collect();
        print!("{name:<18} {}", line.join("   "));
        if let [redis, rlockd] = cpu[..] {
            let ratio = rlockd / redis.max(0.01);
            print!("   rlockd / redis {ratio:.2}");
            let key = name.replace(' ', "_");
            println!();
            println!("BENCH {{\"bench\":\"idle\",\"state\":\"{key}\",\"cpu_ratio\":{ratio:.3}}}");
        } else {
            println!();
        }
    }
}
