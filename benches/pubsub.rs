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

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

const CHANNEL: &str = "redisson_lock__channel:{bench}";
const LOCK: &str = "{bench}";
const OWNER: &str = "6f0c-bench:1";
/// Redisson's unlock: the wake-up of every waiting lock client starts here.
const UNLOCK: &str = "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; \
    local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); \
    if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; \
    else redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; end; \
    return nil;";

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

// ---------------------------------------------------------------------------
// Servers

struct Server {
    name: &'static str,
    addr: SocketAddr,
    child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn launch(name: &'static str, program: &str, args: &[String]) -> Option<Server> {
    let port: u16 = args
        .iter()
        .skip_while(|a| *a != "--port")
        .nth(1)
        .and_then(|p| p.parse().ok())?;
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let server = Server {
        name,
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
        child,
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(mut c) = Conn::open(server.addr)
            && c.cmd(&["PING"]).is_ok()
        {
            // No output limit for the fan-out: the subscribers here are
            // read as fast as this machine allows, not deliberately slow.
            c.cmd(&[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "pubsub 0 0 0",
            ])
            .ok()?;
            return Some(server);
        }
        thread::sleep(Duration::from_millis(20));
    }
    None
}

fn start_servers() -> Vec<Server> {
    let mut servers = Vec::new();
    let redis = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    let args = |port: u16| -> Vec<String> {
        [
            "--port",
            &port.to_string(),
            "--save",
            "",
            "--appendonly",
            "no",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    match launch("redis", &redis, &args(free_port())) {
        Some(s) => servers.push(s),
        None => println!("redis-server not available: printing rlockd's figures only"),
    }
    let port = free_port();
    let rlockd = launch(
        "rlockd",
        env!("CARGO_BIN_EXE_rlockd"),
        &["--port".to_string(), port.to_string()],
    )
    .expect("rlockd starts");
    servers.push(rlockd);
    servers
}

// ---------------------------------------------------------------------------
// A blocking RESP client

#[derive(Debug)]
enum Reply {
    Line,
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Vec<Reply>),
}

struct Conn {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
}

fn encode(args: &[&str], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
}

impl Conn {
    fn open(addr: SocketAddr) -> io::Result<Conn> {
        let s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        Ok(Conn {
            writer: s.try_clone()?,
            reader: BufReader::with_capacity(1 << 16, s),
        })
    }

    fn send(&mut self, args: &[&str]) -> io::Result<()> {
        let mut out = Vec::new();
        encode(args, &mut out);
        self.writer.write_all(&out)
    }

    fn cmd(&mut self, args: &[&str]) -> io::Result<Reply> {
        self.send(args)?;
        self.read()
    }

    fn read(&mut self) -> io::Result<Reply> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let body = line.trim_end().to_string();
        let (tag, rest) = body.split_at(1);
        let n = || rest.parse::<i64>().unwrap_or(-1);
        Ok(match tag {
            "+" => Reply::Line,
            "-" => return Err(io::Error::other(rest.to_string())),
            ":" => Reply::Int(n()),
            "$" if n() < 0 => Reply::Bulk(None),
            "$" => {
                let mut data = vec![0; n() as usize + 2];
                self.reader.read_exact(&mut data)?;
                data.truncate(n() as usize);
                Reply::Bulk(Some(data))
            }
            "*" | ">" => {
                let items = (0..n().max(0))
                    .map(|_| self.read())
                    .collect::<io::Result<_>>()?;
                Reply::Array(items)
            }
            _ => return Err(io::Error::other(format!("bad reply line {body:?}"))),
        })
    }
}

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

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rounds = knob("RLOCKD_BENCH_ROUNDS", 3).max(1);
    let wakeups = knob("RLOCKD_BENCH_WAKEUPS", 10_000).max(10);
    let messages = knob("RLOCKD_BENCH_FANOUT_MESSAGES", 20_000).max(1);
    let subscribers = knob("RLOCKD_BENCH_SUBSCRIBERS", 100).max(1);
    let servers = start_servers();

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
