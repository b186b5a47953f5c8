//! Does keyspace throughput grow with threads? Each thread SETs and GETs
//! its own keys through the keyspace's real locking path (plan, ascending
//! shard locks, lookup, write), with no network in the way, first on one
//! thread and then on every core, in two layouts:
//! - `spread`: every thread's keys fall in every shard (independent keys
//!   as clients send them; shards' cache lines travel between cores);
//! - `disjoint`: each thread's keys fall in shards of its own (what is left
//!   is the cost of the locking design itself: it should scale linearly).
//!
//! `cargo bench --bench scaling` (RLOCKD_SCALING_OPS: operations per thread).

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use rlockd::clock::SystemClock;
use rlockd::keyspace::{Keyspace, LockPlan, Ttl, Value, key_shard};

/// 1024 keys for thread `t` of `threads`, in its own shards if `disjoint`.
fn keys_for(t: usize, threads: usize, disjoint: bool) -> Vec<Vec<u8>> {
    (0..)
        .map(|i| format!("t{t}:k{i}").into_bytes())
        .filter(|k| !disjoint || key_shard(k) % threads == t)
        .take(1024)
        .collect()
}

fn run(ks: &Arc<Keyspace>, threads: usize, ops: usize, disjoint: bool) -> f64 {
    let keysets: Vec<_> = (0..threads)
        .map(|t| keys_for(t, threads, disjoint))
        .collect();
    let started = Instant::now();
    let workers: Vec<_> = keysets
        .into_iter()
        .map(|keys| {
            let ks = ks.clone();
            std::thread::spawn(move || {
                let value = Value::string(Bytes::from_static(b"value"));
                for i in 0..ops {
                    let key = &keys[i % keys.len()];
                    let mut locked = ks
                        .lock(&LockPlan::for_keys([&key[..]]))
                        .expect("no busy script");
                    let mut db = locked.db(0);
                    if i % 2 == 0 {
                        db.insert(key, value.clone(), Ttl::Clear).expect("held");
                    } else {
                        std::hint::black_box(db.get(key).expect("held").is_some());
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    (threads * ops) as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let ops: usize = std::env::var("RLOCKD_SCALING_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000_000);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let ks = Arc::new(Keyspace::new(16, Arc::new(SystemClock)));
    run(&ks, cores, ops / 10, false); // warm up
    println!("layout     threads      ops/s");
    for (name, disjoint) in [("spread", false), ("disjoint", true)] {
        let one = run(&ks, 1, ops, disjoint);
        let all = run(&ks, cores, ops, disjoint);
        println!("{name:<10} {:>7} {:>10.0}", 1, one);
        println!("{name:<10} {:>7} {:>10.0}", cores, all);
        println!(
            "{name}: {cores} threads / 1 thread = {:.2}x (ideal {cores}.00x)",
            all / one
        );
    }
}
