//! Snapshots side by side, `rlockd` next to `redis-server`, with the same
//! data: how long SAVE takes, BGSAVE from its reply to the file written,
//! and loading the file at start (spawn to the first PING answered, which
//! LOADING holds back); and memory during BGSAVE: rlockd's peak resident
//! set above its figure before, next to redis-server's copy-on-write
//! (`rdb_last_cow_size`: what its fork copied).
//!
//! Run with `cargo bench --bench snapshot`. Data sets, each measured
//! alone: `RLOCKD_BENCH_KEYS` (1,000,000) Redisson locks (a hash of one
//! field, `uuid:thread` → count, with a lease), then as many mixed keys
//! (strings, hashes, lists, sets, sorted sets in turn). Service during
//! BGSAVE: one client's lock-sized writes (HINCRBY on a thousand keys
//! across the shards), their p99 latency for a second before BGSAVE and
//! while it runs.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use support::{Conn, Reply, Server, free_port, knob, launch, percentile, pipeline, rlockd_binary};

/// The probe's phases.
const IDLE: u8 = 0;
const SAVING: u8 = 1;
const DONE: u8 = 2;

/// Writes one lock-sized change at a time until `phase` is DONE; the
/// latencies (ms) of each phase.
fn probe(addr: SocketAddr, phase: Arc<AtomicU8>) -> [Vec<f64>; 2] {
    let mut conn = Conn::open(addr).expect("probe connects");
    let mut seen: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let mut i = 0u64;
    loop {
        let now = phase.load(Ordering::Relaxed);
        if now == DONE {
            return seen;
        }
        i = i
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let key = format!("probe:{}", (i >> 33) % 1000);
        let started = Instant::now();
        conn.cmd(&["HINCRBY", &key, "holder:1", "1"])
            .expect("HINCRBY");
        seen[now as usize].push(started.elapsed().as_secs_f64() * 1e3);
    }
}

/// Commands per pipelined batch while filling.
const BATCH: usize = 1000;

fn owned(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

fn fill(conn: &mut Conn, keys: usize, mixed: bool) {
    let mut batch = Vec::with_capacity(BATCH * 2);
    for i in 0..keys {
        let key = format!("{{lock:{i}}}");
        if !mixed {
            batch.push(owned(&[
                "HSET",
                &key,
                "b983c153-7421-469a-addb-44fb92259a1b:1",
                "1",
            ]));
            batch.push(owned(&["PEXPIRE", &key, "3600000"]));
        } else {
            let n = i.to_string();
            batch.push(match i % 5 {
                0 => owned(&["SET", &key, &format!("value-{n}")]),
                1 => owned(&["HSET", &key, "a", &n, "b", "text", "c", "3"]),
                2 => owned(&["RPUSH", &key, "a", &n, "c"]),
                3 => owned(&["SADD", &key, "1", &n, "300"]),
                _ => owned(&["ZADD", &key, "1", "a", "2.5", &n]),
            });
        }
        if batch.len() >= BATCH {
            pipeline(conn, &batch);
            batch.clear();
        }
    }
    pipeline(conn, &batch);
}

fn info_field(conn: &mut Conn, field: &str) -> String {
    let Ok(Reply::Bulk(Some(info))) = conn.cmd(&["INFO", "persistence"]) else {
        panic!("INFO persistence");
    };
    let info = String::from_utf8_lossy(&info).into_owned();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_default()
        .to_string()
}

struct Figures {
    save: Duration,
    bgsave: Duration,
    load: Duration,
    /// rlockd: peak RSS during BGSAVE above the figure before it; redis:
    /// the fork's copy-on-write.
    extra_bytes: u64,
    /// A lock-sized write's p99 before BGSAVE and during it, ms.
    p99_idle: f64,
    p99_saving: f64,
}

fn start(name: &'static str, program: &str, dir: &str, port: u16) -> Server {
    let args: Vec<String> = ["--port", &port.to_string(), "--dir", dir, "--save", ""]
        .iter()
        .map(|a| a.to_string())
        .collect();
    launch(name, program, &args).unwrap_or_else(|| panic!("{name} did not start"))
}

fn measure(name: &'static str, program: &str, keys: usize, mixed: bool) -> Figures {
    let dir = std::env::temp_dir().join(format!("rlockd-bench-snapshot-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a bench dir");
    let dir_arg = dir.to_str().expect("a UTF-8 path");
    let port = free_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let server = start(name, program, dir_arg, port);
    let mut conn = Conn::open(addr).expect("connect");
    fill(&mut conn, keys, mixed);

    let started = Instant::now();
    conn.cmd(&["SAVE"]).expect("SAVE");
    let save = started.elapsed();

    let phase = Arc::new(AtomicU8::new(IDLE));
    let prober = {
        let phase = phase.clone();
        std::thread::spawn(move || probe(addr, phase))
    };
    std::thread::sleep(Duration::from_secs(1));
    let before = server.rss();
    phase.store(SAVING, Ordering::Relaxed);
    let started = Instant::now();
    conn.cmd(&["BGSAVE"]).expect("BGSAVE");
    let mut peak = before;
    while info_field(&mut conn, "rdb_bgsave_in_progress") != "0" {
        peak = peak.max(server.rss());
        // INFO reads every shard: asked more often it slows the save.
        std::thread::sleep(Duration::from_millis(10));
    }
    let bgsave = started.elapsed();
    phase.store(DONE, Ordering::Relaxed);
    let [idle, saving] = prober.join().expect("the probe");
    let extra_bytes = match name {
        "redis" => info_field(&mut conn, "rdb_last_cow_size")
            .parse()
            .unwrap_or(0),
        _ => peak - before,
    };
    drop(conn);
    drop(server);

    let started = Instant::now();
    let server = start(name, program, dir_arg, port);
    let load = started.elapsed();
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
    Figures {
        save,
        bgsave,
        load,
        extra_bytes,
        p99_idle: percentile(idle, 0.99),
        p99_saving: percentile(saving, 0.99),
    }
}

fn main() {
    let keys = knob("RLOCKD_BENCH_KEYS", 1_000_000);
    let redis = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    let rlockd = rlockd_binary();
    for (set, mixed) in [("Redisson locks", false), ("mixed keys", true)] {
        println!("{keys} {set}");
        println!(
            "{:<8} {:>10} {:>10} {:>10} {:>14} {:>10} {:>12}",
            "", "SAVE", "BGSAVE", "load", "BGSAVE memory", "p99 idle", "p99 BGSAVE"
        );
        for (name, program) in [("redis", redis.as_str()), ("rlockd", rlockd.as_str())] {
            let f = measure(name, program, keys, mixed);
            let ms = |d: Duration| d.as_secs_f64() * 1e3;
            println!(
                "{name:<8} {:>8.0}ms {:>8.0}ms {:>8.0}ms {:>12.1}MB {:>8.2}ms {:>10.2}ms",
                ms(f.save),
                ms(f.bgsave),
                ms(f.load),
                f.extra_bytes as f64 / (1 << 20) as f64,
                f.p99_idle,
                f.p99_saving
            );
            println!(
                "BENCH {{\"bench\":\"snapshot\",\"set\":\"{set}\",\"server\":\"{name}\",\"keys\":{keys},\"save_ms\":{:.1},\"bgsave_ms\":{:.1},\"load_ms\":{:.1},\"bgsave_extra_bytes\":{},\"p99_idle_ms\":{:.3},\"p99_bgsave_ms\":{:.3}}}",
                ms(f.save),
                ms(f.bgsave),
                ms(f.load),
                f.extra_bytes,
                f.p99_idle,
                f.p99_saving
            );
        }
    }
}
