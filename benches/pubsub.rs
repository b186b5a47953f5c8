//! Pub/sub benchmark, `redis-server` versus `rlockd` side by side:
//!
//! - wake-up latency: the time from sending a PUBLISH (or the unlock
//!   script that lock clients run, which deletes the lock and PUBLISHes)
//!   to the waiting subscriber having the whole message, p50 and p99;
//! - fan-out: one publisher, 100 subscribers on one channel; messages
//!   published per second until every subscriber has every message.
//!
//! Both servers are started on free local ports and measured in turns
//! (redis, rlockd, redis, rlockd, …) so drift of the machine hits both
//! alike. Without `redis-server` on the PATH (or in `REDIS_SERVER`) only
//! rlockd's figures are printed.
//!
//! Run with `cargo bench --bench pubsub`. Knobs (environment):
//! `RLOCKD_BENCH_ROUNDS` (3), `RLOCKD_BENCH_WAKEUPS` (samples per round and
//! server, 10000), `RLOCKD_BENCH_FANOUT_MESSAGES` (per round, 20000),
//! `RLOCKD_BENCH_SUBSCRIBERS` (100).

mod support;

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use support::{Conn, Reply, encode, knob, median, start_servers};

const CHANNEL: &str = "redisson_lock__channel:{bench}";
const LOCK: &str = "{bench}";
const OWNER: &str = "6f0c-bench:1";
/// Redisson's unlock: the wake-up of every waiting lock client starts here.
const UNLOCK: &str = "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; \
    local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); \
    if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; \
    else redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; end; \
    return nil;";

/// The exact bytes of a `message` frame on `channel`.
fn message_frame(channel: &str, payload: &str) -> Vec<u8> {
    let mut out = Vec::new();
    encode(&["message", channel, payload], &mut out);
    out
}

// ---------------------------------------------------------------------------
// Wake-up latency

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

/// Samples of PUBLISH (or unlock script) → whole message at the subscriber.
fn wake_latency(addr: SocketAddr, samples: usize, unlock: bool) -> io::Result<Vec<Duration>> {
    let mut sub = Conn::open(addr)?;
    sub.cmd(&["SUBSCRIBE", CHANNEL])?;
    let mut owner = Conn::open(addr)?;
    let sha = match owner.cmd(&["SCRIPT", "LOAD", UNLOCK])? {
        Reply::Bulk(Some(sha)) => String::from_utf8(sha).unwrap(),
        other => return Err(io::Error::other(format!("SCRIPT LOAD: {other:?}"))),
    };
    let expected = message_frame(CHANNEL, "0");
    let mut got = vec![0u8; expected.len()];
    let warmup = samples / 10;
    let mut out = Vec::with_capacity(samples);
    for i in 0..warmup + samples {
        if unlock {
            owner.cmd(&["HSET", LOCK, OWNER, "1"])?;
        }
        let started = Instant::now();
        if unlock {
            owner.send(&["EVALSHA", &sha, "2", LOCK, CHANNEL, "0", "30000", OWNER])?;
        } else {
            owner.send(&["PUBLISH", CHANNEL, "0"])?;
        }
        sub.reader.read_exact(&mut got)?;
        let took = started.elapsed();
        assert_eq!(got, expected, "unexpected frame at the subscriber");
        match owner.read()? {
            Reply::Int(1) => {}
            other => return Err(io::Error::other(format!("publisher got {other:?}"))),
        }
        if i >= warmup {
            out.push(took);
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Fan-out

/// Messages per second, one publisher to `subscribers` subscribers, until
/// every subscriber has read every message.
fn fanout(addr: SocketAddr, subscribers: usize, messages: usize) -> io::Result<f64> {
    const BATCH: usize = 100;
    let payload = "p".repeat(64);
    let channel = "fanout";
    let frame_len = message_frame(channel, &payload).len();
    let ready = Arc::new(Barrier::new(subscribers + 1));
    let mut readers = Vec::new();
    for _ in 0..subscribers {
        let ready = ready.clone();
        let mut conn = Conn::open(addr)?;
        conn.cmd(&["SUBSCRIBE", channel])?;
        readers.push(thread::spawn(move || -> io::Result<Instant> {
            ready.wait();
            let want = frame_len * messages;
            let mut total = 0;
            let mut buf = vec![0u8; 1 << 16];
            while total < want {
                let n = conn.reader.read(&mut buf)?;
                if n == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                total += n;
            }
            Ok(Instant::now())
        }));
    }
    let mut publisher = Conn::open(addr)?;
    match publisher.cmd(&["PUBSUB", "NUMSUB", channel])? {
        Reply::Array(items) if matches!(items.get(1), Some(Reply::Int(n)) if *n == subscribers as i64) =>
            {}
        other => return Err(io::Error::other(format!("NUMSUB: {other:?}"))),
    }
    let mut batch = Vec::new();
    for _ in 0..BATCH {
        encode(&["PUBLISH", channel, &payload], &mut batch);
    }
    ready.wait();
    let started = Instant::now();
    let mut sent = 0;
    while sent < messages {
        let n = BATCH.min(messages - sent);
        let bytes = batch.len() / BATCH * n;
        publisher.writer.write_all(&batch[..bytes])?;
        for _ in 0..n {
            publisher.read()?;
        }
        sent += n;
    }
    let mut last = started;
    for r in readers {
        last = last.max(r.join().expect("reader thread")?);
    }
    Ok(messages as f64 / (last - started).as_secs_f64())
}

// ---------------------------------------------------------------------------

fn main() {
    let rounds = knob("RLOCKD_BENCH_ROUNDS", 3).max(1);
    let wakeups = knob("RLOCKD_BENCH_WAKEUPS", 10_000).max(10);
    let messages = knob("RLOCKD_BENCH_FANOUT_MESSAGES", 20_000).max(1);
    let subscribers = knob("RLOCKD_BENCH_SUBSCRIBERS", 100).max(1);
    let servers = start_servers();
    for server in &servers {
        // No output limit for the fan-out: the subscribers here are read
        // as fast as this machine allows, not deliberately slow.
        Conn::open(server.addr)
            .and_then(|mut c| {
                c.cmd(&[
                    "CONFIG",
                    "SET",
                    "client-output-buffer-limit",
                    "pubsub 0 0 0",
                ])
            })
            .expect("CONFIG SET client-output-buffer-limit");
    }

    let mut publish: Vec<Vec<Duration>> = vec![Vec::new(); servers.len()];
    let mut unlock: Vec<Vec<Duration>> = vec![Vec::new(); servers.len()];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); servers.len()];
    for round in 0..rounds {
        for (i, server) in servers.iter().enumerate() {
            publish[i].extend(wake_latency(server.addr, wakeups, false).expect("publish latency"));
            unlock[i].extend(wake_latency(server.addr, wakeups, true).expect("unlock latency"));
            let rate = fanout(server.addr, subscribers, messages).expect("fan-out");
            eprintln!(
                "round {}/{rounds} {:>6}: fan-out {rate:.0} msg/s",
                round + 1,
                server.name
            );
            rates[i].push(rate);
        }
    }

    println!();
    println!(
        "wake-up latency, send to whole message at the subscriber ({} samples each)",
        rounds * wakeups
    );
    println!(
        "{:<8} {:>14} {:>14} {:>14} {:>14}",
        "", "PUBLISH p50", "PUBLISH p99", "unlock p50", "unlock p99"
    );
    let mut figures = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        publish[i].sort();
        unlock[i].sort();
        let f = [
            percentile(&publish[i], 0.50),
            percentile(&publish[i], 0.99),
            percentile(&unlock[i], 0.50),
            percentile(&unlock[i], 0.99),
        ];
        println!(
            "{:<8} {:>12.1}µs {:>12.1}µs {:>12.1}µs {:>12.1}µs",
            server.name,
            f[0].as_secs_f64() * 1e6,
            f[1].as_secs_f64() * 1e6,
            f[2].as_secs_f64() * 1e6,
            f[3].as_secs_f64() * 1e6,
        );
        figures.push(f);
    }
    let fanout: Vec<f64> = rates.into_iter().map(median).collect();
    println!();
    println!(
        "fan-out, 1 publisher → {subscribers} subscribers, {messages} messages of 64 bytes (median of {rounds})"
    );
    for (i, server) in servers.iter().enumerate() {
        println!(
            "{:<8} {:>12.0} msg/s published {:>14.0} deliveries/s",
            server.name,
            fanout[i],
            fanout[i] * subscribers as f64
        );
    }
    if servers.len() == 2 {
        let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
        println!();
        println!("rlockd / redis (latency: below 1 is faster; fan-out: above 1 is faster)");
        println!(
            "latency  PUBLISH p50 {:.2}  p99 {:.2}  unlock p50 {:.2}  p99 {:.2}",
            ratio(figures[1][0], figures[0][0]),
            ratio(figures[1][1], figures[0][1]),
            ratio(figures[1][2], figures[0][2]),
            ratio(figures[1][3], figures[0][3]),
        );
        println!("fan-out  {:.2}", fanout[1] / fanout[0]);
    }
}
