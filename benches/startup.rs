//! Start-up time and idle memory, `rlockd` next to `redis-server`: each
//! launch is timed from spawning the process to the first accepted TCP
//! connection answering PING, and its resident set (`VmRSS`, and the
//! anonymous part `RssAnon`, from /proc) is read once the server has
//! answered and sat idle for a moment. Launches alternate between the
//! two servers.
//!
//! Run with `cargo bench --bench startup`. Knobs: `RLOCKD_BENCH_LAUNCHES`
//! (per server, 20), `RLOCKD_BENCH_IDLE_MS` (wait before reading memory,
//! 200), `RLOCKD_BENCH_BINARY` (another rlockd build to measure, such as
//! the Dockerfile's static `dist` build; default: this profile's binary).

mod support;

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::{free_port, knob, median, rlockd_binary};

struct Launch {
    ready: Duration,
    rss_kb: u64,
    anon_kb: u64,
}

/// Tries PING until the server answers `+PONG`.
fn answers_ping(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
    let mut buf = [0u8; 7];
    s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}

fn status_kb(child: &Child, field: &str) -> io::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id()))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| io::Error::other(format!("no {field} in /proc/PID/status")))
}

fn launch(program: &str, extra: &[&str], idle: Duration) -> io::Result<Launch> {
    let port = free_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let started = Instant::now();
    let mut child = Command::new(program)
        .args(["--port", &port.to_string()])
        .args(extra)
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let deadline = started + Duration::from_secs(10);
    while !answers_ping(addr) {
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err(io::Error::other(format!("{program} did not answer PING")));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let ready = started.elapsed();
    std::thread::sleep(idle);
    let measured = (status_kb(&child, "VmRSS:"), status_kb(&child, "RssAnon:"));
    let _ = child.kill();
    let _ = child.wait();
    Ok(Launch {
        ready,
        rss_kb: measured.0?,
        anon_kb: measured.1?,
    })
}

fn main() {
    let launches = knob("RLOCKD_BENCH_LAUNCHES", 20).max(1);
    let idle = Duration::from_millis(knob("RLOCKD_BENCH_IDLE_MS", 200) as u64);
    let redis = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    let mut sides: Vec<(&str, String, Vec<&str>, Vec<Launch>)> = vec![
        (
            "redis",
            redis,
            vec!["--save", "", "--appendonly", "no"],
            Vec::new(),
        ),
        ("rlockd", rlockd_binary(), vec![], Vec::new()),
    ];
    for _ in 0..launches {
        for (name, program, extra, results) in sides.iter_mut() {
            match launch(program, extra, idle) {
                Ok(l) => results.push(l),
                Err(e) => eprintln!("{name}: {e}"),
            }
        }
    }
    println!(
        "start-up to first PING answered, and memory after {idle:?} idle ({launches} launches each)"
    );
    println!(
        "{:<8} {:>10} {:>10} {:>10} {:>10}",
        "", "ready p50", "ready max", "RSS p50", "anon p50"
    );
    let mut figures = Vec::new();
    for (name, _, _, results) in &sides {
        if results.is_empty() {
            println!("{name:<8} (not measured)");
            continue;
        }
        let ready: Vec<f64> = results
            .iter()
            .map(|l| l.ready.as_secs_f64() * 1e3)
            .collect();
        let max = ready.iter().copied().fold(0.0, f64::max);
        let ready = median(ready);
        let rss = median(results.iter().map(|l| l.rss_kb as f64).collect());
        let anon = median(results.iter().map(|l| l.anon_kb as f64).collect());
        println!(
            "{name:<8} {ready:>8.2}ms {max:>8.2}ms {:>8.1}MB {:>8.1}MB",
            rss / 1024.0,
            anon / 1024.0
        );
        figures.push((ready, rss, anon));
    }
    if let [redis, rlockd] = figures[..] {
        println!(
            "BENCH {{\"bench\":\"startup\",\"rlockd_ready_ms\":{:.2},\"rlockd_rss_kb\":{},\"rlockd_anon_kb\":{},\"redis_ready_ms\":{:.2},\"redis_rss_kb\":{}}}",
            rlockd.0, rlockd.1, rlockd.2, redis.0, redis.1
        );
    }
}
