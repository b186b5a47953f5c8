//! Side-by-side load benchmark: real `redis-server` versus `rlockd`.
//!
//! Both servers are started on free local ports, then `redis-benchmark` is run
//! against each of them in turn (redis, rlockd, redis, rlockd, ...) for every
//! workload, so slow drift of the machine hits both sides alike. The medians
//! over the rounds are printed as a table plus one `BENCH {json}` line per
//! workload. See `benches/README.md` for the knobs (all `RLOCKD_BENCH_*`
//! environment variables).
//!
//! Run with `cargo bench --bench throughput`; extra arguments after `--` are
//! taken as workload names (`cargo bench --bench throughput -- set hincrby`).

mod support;

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::str::FromStr;
use std::thread::sleep;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------
// Workloads
// ---------------------------------------------------------------------------

/// What `redis-benchmark` is asked to send.
#[derive(Clone, Copy)]
enum Load {
    /// A built-in test (`-t NAME`), with the command used to probe support.
    Builtin {
        test: &'static str,
        probe: &'static [&'static str],
    },
    /// A custom command line; `__rand_int__` is expanded by redis-benchmark
    /// (we always pass `-r`), `{0}`, `{1}`, ... by us with the replies of
    /// the setup commands.
    Command(&'static [&'static str]),
}

/// One row of the benchmark table.
#[derive(Clone, Copy)]
struct Workload {
    name: &'static str,
    /// Commands sent once to each server before its first round. Their
    /// replies (e.g. the SHA from `SCRIPT LOAD`) fill `{0}`, `{1}`, ... in
    /// the workload's arguments.
    setup: &'static [&'static [&'static str]],
    load: Load,
}

impl Workload {
    const fn builtin(
        name: &'static str,
        test: &'static str,
        probe: &'static [&'static str],
    ) -> Self {
        Workload {
            name,
            setup: &[],
            load: Load::Builtin { test, probe },
        }
    }

    const fn command(name: &'static str, args: &'static [&'static str]) -> Self {
        Workload {
            name,
            setup: &[],
            load: Load::Command(args),
        }
    }

    const fn with_setup(mut self, setup: &'static [&'static [&'static str]]) -> Self {
        self.setup = setup;
        self
    }
}

/// Redisson's lock script and the dlock client's unlock script, as the
/// server runs them natively.
const LOCK_LUA: &str = include_str!("../src/command/scripting/lock_scripts/redisson_lock.lua");
const UNLOCK_LUA: &str = include_str!("../src/command/scripting/lock_scripts/dlock_unlock.lua");

/// Everything the bench knows how to run, in run order (SET comes before GET
/// so GET finds keys). Adding a workload is one entry here.
const WORKLOADS: &[Workload] = &[
    Workload::builtin("SET", "set", &["set", "key:__rand_int__", "xxx"]),
    Workload::builtin("GET", "get", &["get", "key:__rand_int__"]),
    Workload::command(
        "HSET",
        &["hset", "bench:h:__rand_int__", "f", "__rand_int__"],
    ),
    Workload::command("HINCRBY", &["hincrby", "bench:h", "f", "1"]),
    // Acquire (or re-enter) a reentrant lock, one of many lock names.
    Workload::command(
        "EVALSHA_LOCK",
        &[
            "evalsha",
            "{0}",
            "1",
            "lock:__rand_int__",
            "30000",
            "owner:1",
        ],
    )
    .with_setup(&[&["script", "load", LOCK_LUA]]),
    // Release with the wake-up PUBLISH, over the same lock names.
    Workload::command(
        "EVALSHA_UNLOCK",
        &[
            "evalsha",
            "{0}",
            "2",
            "lock:__rand_int__",
            // Random like the lock name: a constant channel key would put
            // every run on one shard, which real lock names do not.
            "redisson_lock__channel:{__rand_int__}",
            "0",
            "30000",
            "owner:1",
        ],
    )
    .with_setup(&[&["script", "load", UNLOCK_LUA]]),
];

// ---------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------

struct Config {
    requests: u64,
    clients: u32,
    pipeline: u32,
    keyspace: u64,
    data_size: u32,
    rounds: usize,
    timeout: Duration,
    self_test: bool,
    workloads: Vec<Workload>,
}

fn env_or<T: FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a valid value")),
        _ => default,
    }
}

impl Config {
    fn from_env() -> Config {
        // Workload names: positional arguments win over RLOCKD_BENCH_WORKLOADS.
        // cargo passes `--bench` (and maybe other flags) to harness=false
        // targets; skip anything that looks like a flag.
        let mut wanted: Vec<String> = std::env::args()
            .skip(1)
            .filter(|a| !a.starts_with('-'))
            .flat_map(|a| a.split(',').map(str::to_owned).collect::<Vec<_>>())
            .filter(|a| !a.is_empty())
            .collect();
        if wanted.is_empty() {
            wanted = std::env::var("RLOCKD_BENCH_WORKLOADS")
                .unwrap_or_default()
                .split(',')
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect();
        }
        let workloads = if wanted.is_empty() {
            WORKLOADS.to_vec()
        } else {
            for w in &wanted {
                if !WORKLOADS.iter().any(|k| k.name.eq_ignore_ascii_case(w)) {
                    let known: Vec<_> = WORKLOADS.iter().map(|k| k.name).collect();
                    panic!("unknown workload {w:?}; known: {}", known.join(", "));
                }
            }
            WORKLOADS
                .iter()
                .filter(|k| wanted.iter().any(|w| k.name.eq_ignore_ascii_case(w)))
                .copied()
                .collect()
        };
        let cfg = Config {
            requests: env_or("RLOCKD_BENCH_REQUESTS", 100_000),
            clients: env_or("RLOCKD_BENCH_CLIENTS", 50),
            pipeline: env_or("RLOCKD_BENCH_PIPELINE", 1),
            keyspace: env_or("RLOCKD_BENCH_KEYSPACE", 100_000),
            data_size: env_or("RLOCKD_BENCH_DATA_SIZE", 3),
            rounds: env_or("RLOCKD_BENCH_ROUNDS", 3),
            timeout: Duration::from_secs(env_or("RLOCKD_BENCH_TIMEOUT_SECS", 300)),
            self_test: env_or::<String>("RLOCKD_BENCH_SELF_TEST", String::new()) == "1",
            workloads,
        };
        assert!(cfg.requests > 0, "RLOCKD_BENCH_REQUESTS must be > 0");
        assert!(cfg.clients > 0, "RLOCKD_BENCH_CLIENTS must be > 0");
        assert!(cfg.pipeline > 0, "RLOCKD_BENCH_PIPELINE must be > 0");
        assert!(cfg.keyspace > 0, "RLOCKD_BENCH_KEYSPACE must be > 0");
        assert!(cfg.rounds > 0, "RLOCKD_BENCH_ROUNDS must be > 0");
        cfg
    }
}

// ---------------------------------------------------------------------------
// A tiny RESP client (PING, setup commands, support probes)
// ---------------------------------------------------------------------------

#[derive(Debug)]
enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// The text used to fill `{N}` placeholders.
    fn as_text(&self) -> String {
        match self {
            Reply::Simple(s) | Reply::Error(s) => s.clone(),
            Reply::Int(i) => i.to_string(),
            Reply::Bulk(Some(b)) => String::from_utf8_lossy(b).into_owned(),
            Reply::Bulk(None) | Reply::Array(None) => String::new(),
            Reply::Array(Some(items)) => items
                .iter()
                .map(Reply::as_text)
                .collect::<Vec<_>>()
                .join(" "),
        }
    }

    fn read(r: &mut impl BufRead) -> io::Result<Reply> {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed",
            ));
        }
        let line = line.trim_end_matches(['\r', '\n']);
        let bad = || io::Error::new(io::ErrorKind::InvalidData, format!("bad reply {line:?}"));
        let (kind, rest) = line.split_at_checked(1).ok_or_else(bad)?;
        let len = || rest.parse::<i64>().map_err(|_| bad());
        Ok(match kind {
            "+" => Reply::Simple(rest.to_owned()),
            "-" => Reply::Error(rest.to_owned()),
            ":" => Reply::Int(len()?),
            "$" => match usize::try_from(len()?) {
                Err(_) => Reply::Bulk(None),
                Ok(n) => {
                    let mut buf = vec![0; n + 2];
                    io::Read::read_exact(r, &mut buf)?;
                    buf.truncate(n);
                    Reply::Bulk(Some(buf))
                }
            },
            "*" => match usize::try_from(len()?) {
                Err(_) => Reply::Array(None),
                Ok(n) => Reply::Array(Some(
                    (0..n).map(|_| Reply::read(r)).collect::<io::Result<_>>()?,
                )),
            },
            _ => return Err(bad()),
        })
    }
}

/// Sends one command on a fresh connection and returns its reply.
fn call(port: u16, args: &[String]) -> io::Result<Reply> {
    let stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.set_nodelay(true)?;
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    (&stream).write_all(&out)?;
    Reply::read(&mut BufReader::new(&stream))
}

// ---------------------------------------------------------------------------
// Server processes
// ---------------------------------------------------------------------------

/// A running server; killed when dropped (also while unwinding a panic).
struct Server {
    label: &'static str,
    port: u16,
    child: Child,
    log: PathBuf,
}

impl Server {
    fn start(label: &'static str, program: &str, args: &[String]) -> Server {
        let port = free_port();
        let log = std::env::temp_dir().join(format!("rlockd-bench-{label}-{port}.log"));
        let log_file = File::create(&log).expect("create server log file");
        let mut argv: Vec<String> = args.to_vec();
        argv.extend(["--port".into(), port.to_string()]);
        let child = Command::new(program)
            .args(&argv)
            // redis-server writes nothing with --save "", but keep any stray
            // files out of the repository anyway.
            .current_dir(std::env::temp_dir())
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("clone log handle"))
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
        let mut server = Server {
            label,
            port,
            child,
            log,
        };
        server.wait_ready(program);
        server
    }

    fn wait_ready(&mut self, program: &str) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if matches!(call(self.port, &["PING".into()]), Ok(Reply::Simple(s)) if s == "PONG") {
                return;
            }
            self.check_alive();
            assert!(
                Instant::now() < deadline,
                "{} ({program}) did not answer PING on port {} within 15s; log: {}",
                self.label,
                self.port,
                self.log.display()
            );
            sleep(Duration::from_millis(50));
        }
    }

    fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    fn check_alive(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "{} exited ({status}); log: {}",
                self.label,
                self.log.display()
            );
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Keep the log only when something went wrong (its path is in the
        // panic message).
        if !std::thread::panicking() {
            let _ = std::fs::remove_file(&self.log);
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("find a free local port")
}

fn tool_available(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

// ---------------------------------------------------------------------------
// Running redis-benchmark
// ---------------------------------------------------------------------------

#[derive(Clone, Copy)]
struct Sample {
    rps: f64,
    p50_ms: Option<f64>,
}

/// The concrete arguments of a workload for one server (placeholders filled).
struct Prepared {
    bench_args: Vec<String>,
    probe: Vec<String>,
}

/// Runs the setup commands and a single probe of the workload's command, so
/// an unsupported command is reported as such instead of as a throughput.
fn prepare(w: &Workload, port: u16) -> Result<Prepared, String> {
    let mut filled: Vec<String> = Vec::new();
    for cmd in w.setup {
        let cmd: Vec<String> = cmd.iter().map(|s| fill(s, &filled)).collect();
        match call(port, &cmd) {
            Ok(Reply::Error(e)) => return Err(format!("setup {:?}: {}", cmd[0], e.trim())),
            Ok(r) => filled.push(r.as_text()),
            Err(e) => return Err(format!("setup {:?}: {e}", cmd[0])),
        }
    }
    let (bench_args, probe): (Vec<String>, Vec<String>) = match w.load {
        Load::Builtin { test, probe } => (
            vec!["-t".into(), test.into()],
            probe.iter().map(|s| fill(s, &filled)).collect(),
        ),
        Load::Command(args) => {
            let args: Vec<String> = args.iter().map(|s| fill(s, &filled)).collect();
            (args.clone(), args)
        }
    };
    // redis-benchmark expands __rand_int__ to 12 digits; any key will do here.
    let probe: Vec<String> = probe
        .iter()
        .map(|s| s.replace("__rand_int__", "000000000000"))
        .collect();
    match call(port, &probe) {
        Ok(Reply::Error(e)) => Err(format!("{}: {}", probe[0], e.trim())),
        Ok(_) => Ok(Prepared { bench_args, probe }),
        Err(e) => Err(format!("{}: {e}", probe[0])),
    }
}

fn fill(arg: &str, replies: &[String]) -> String {
    let mut s = arg.to_owned();
    for (i, r) in replies.iter().enumerate() {
        s = s.replace(&format!("{{{i}}}"), r);
    }
    s
}

/// Files removed when dropped, whichever way `run_benchmark` leaves.
struct TempFiles([PathBuf; 2]);

impl Drop for TempFiles {
    fn drop(&mut self) {
        for f in &self.0 {
            let _ = std::fs::remove_file(f);
        }
    }
}

fn run_benchmark(cfg: &Config, server: &mut Server, prep: &Prepared) -> Result<Sample, String> {
    let dir = std::env::temp_dir();
    let files = TempFiles([
        dir.join(format!("rlockd-bench-out-{}.csv", server.port)),
        dir.join(format!("rlockd-bench-err-{}.txt", server.port)),
    ]);
    let [stdout_path, stderr_path] = &files.0;
    let mut args: Vec<String> = vec![
        "-h".into(),
        "127.0.0.1".into(),
        "-p".into(),
        server.port.to_string(),
        "-n".into(),
        cfg.requests.to_string(),
        "-c".into(),
        cfg.clients.to_string(),
        "-P".into(),
        cfg.pipeline.to_string(),
        "-r".into(),
        cfg.keyspace.to_string(),
        "-d".into(),
        cfg.data_size.to_string(),
        "--csv".into(),
    ];
    args.extend(prep.bench_args.iter().cloned());
    // Output goes to files rather than pipes so we can poll for a timeout:
    // redis-benchmark spins forever if the server vanishes under it.
    let mut child = Command::new("redis-benchmark")
        .args(&args)
        .stdin(Stdio::null())
        .stdout(File::create(stdout_path).map_err(|e| e.to_string())?)
        .stderr(File::create(stderr_path).map_err(|e| e.to_string())?)
        .spawn()
        .map_err(|e| format!("cannot run redis-benchmark: {e}"))?;
    let deadline = Instant::now() + cfg.timeout;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        // A dead server makes redis-benchmark spin forever: stop it at once.
        if Instant::now() > deadline || server.has_exited() {
            let _ = child.kill();
            let _ = child.wait();
            server.check_alive();
            return Err(format!("redis-benchmark timed out after {:?}", cfg.timeout));
        }
        sleep(Duration::from_millis(20));
    };
    server.check_alive();
    let stdout = std::fs::read_to_string(stdout_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(stderr_path).unwrap_or_default();
    if let Some(err) = stderr.lines().find(|l| l.starts_with("Error from server")) {
        return Err(err.trim().to_owned());
    }
    if !status.success() {
        return Err(format!(
            "redis-benchmark {status}: {}",
            stderr.lines().last().unwrap_or("")
        ));
    }
    parse_csv(&stdout).ok_or_else(|| format!("cannot parse redis-benchmark output: {stdout:?}"))
}

/// Reads the first data row of `redis-benchmark --csv` output, by column name.
fn parse_csv(out: &str) -> Option<Sample> {
    let split = |l: &str| -> Vec<String> {
        l.split(',')
            .map(|f| f.trim().trim_matches('"').to_owned())
            .collect()
    };
    let mut rows = out.lines().filter(|l| l.starts_with('"'));
    let header = split(rows.next()?);
    let col: HashMap<&str, usize> = header
        .iter()
        .enumerate()
        .map(|(i, h)| (h.as_str(), i))
        .collect();
    // Custom command names may contain commas, so count columns from the end.
    let row = split(rows.next()?);
    let from_end = |name: &str| -> Option<f64> {
        let back = header.len().checked_sub(*col.get(name)?)?;
        row.get(row.len().checked_sub(back)?)?.parse().ok()
    };
    Some(Sample {
        rps: from_end("rps")?,
        p50_ms: from_end("p50_latency_ms"),
    })
}

// ---------------------------------------------------------------------------
// Reporting
// ---------------------------------------------------------------------------

fn median(mut xs: Vec<f64>) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    Some(if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    })
}

/// Per workload: samples (or the first error) for each side.
struct Outcome {
    name: &'static str,
    sides: [Result<Vec<Sample>, String>; 2],
}

struct Summary {
    rps: [Option<f64>; 2],
    p50: [Option<f64>; 2],
    ratio: Option<f64>,
    ratio_min: Option<f64>,
    ratio_max: Option<f64>,
}

fn summarize(o: &Outcome) -> Summary {
    let ok = |i: usize| o.sides[i].as_ref().ok();
    let rps = |i: usize| ok(i).and_then(|s| median(s.iter().map(|x| x.rps).collect()));
    let p50 = |i: usize| ok(i).and_then(|s| median(s.iter().filter_map(|x| x.p50_ms).collect()));
    let paired: Vec<f64> = match (ok(0), ok(1)) {
        (Some(a), Some(b)) => a.iter().zip(b).map(|(a, b)| b.rps / a.rps).collect(),
        _ => Vec::new(),
    };
    let (r0, r1) = (rps(0), rps(1));
    Summary {
        rps: [r0, r1],
        p50: [p50(0), p50(1)],
        ratio: r0.zip(r1).map(|(a, b)| b / a),
        ratio_min: paired.iter().copied().reduce(f64::min),
        ratio_max: paired.iter().copied().reduce(f64::max),
    }
}

fn print_report(cfg: &Config, labels: [&str; 2], outcomes: &[Outcome]) {
    let num = |v: Option<f64>, prec: usize| v.map_or("-".to_owned(), |v| format!("{v:.prec$}"));
    println!();
    println!(
        "requests={} clients={} pipeline={} keyspace={} rounds={} (medians over rounds)",
        cfg.requests, cfg.clients, cfg.pipeline, cfg.keyspace, cfg.rounds
    );
    println!(
        "{:<16} {:>16} {:>16} {:>8} {:>12} {:>10} {:>10}",
        "workload",
        format!("{} ops/s", labels[0]),
        format!("{} ops/s", labels[1]),
        "ratio",
        "ratio range",
        "p50 ms",
        "p50 ms"
    );
    println!(
        "{:<16} {:>16} {:>16} {:>8} {:>12} {:>10} {:>10}",
        "", "", "", "rl/redis", "min..max", labels[0], labels[1]
    );
    for o in outcomes {
        let s = summarize(o);
        let range = match (s.ratio_min, s.ratio_max) {
            (Some(a), Some(b)) => format!("{a:.2}..{b:.2}"),
            _ => "-".into(),
        };
        println!(
            "{:<16} {:>16} {:>16} {:>8} {:>12} {:>10} {:>10}",
            o.name,
            num(s.rps[0], 0),
            num(s.rps[1], 0),
            num(s.ratio, 2),
            range,
            num(s.p50[0], 3),
            num(s.p50[1], 3)
        );
        for (label, side) in labels.iter().zip(&o.sides) {
            if let Err(e) = side {
                println!("{:<16}   {label} failed: {e}", "");
            }
        }
    }
    println!();
    let json_num = |v: Option<f64>| v.map_or("null".to_owned(), |v| format!("{v:.3}"));
    for o in outcomes {
        let s = summarize(o);
        let err = |i: usize| match &o.sides[i] {
            Ok(_) => "null".to_owned(),
            Err(e) => format!("\"{}\"", e.replace('\\', "\\\\").replace('"', "\\\"")),
        };
        println!(
            "BENCH {{\"workload\":\"{}\",\"redis_ops\":{},\"rlockd_ops\":{},\"ratio\":{},\
             \"ratio_min\":{},\"ratio_max\":{},\"redis_p50_ms\":{},\"rlockd_p50_ms\":{},\
             \"requests\":{},\"clients\":{},\"pipeline\":{},\"rounds\":{},\"self_test\":{},\
             \"redis_error\":{},\"rlockd_error\":{}}}",
            o.name,
            json_num(s.rps[0]),
            json_num(s.rps[1]),
            json_num(s.ratio),
            json_num(s.ratio_min),
            json_num(s.ratio_max),
            json_num(s.p50[0]),
            json_num(s.p50[1]),
            cfg.requests,
            cfg.clients,
            cfg.pipeline,
            cfg.rounds,
            cfg.self_test,
            err(0),
            err(1),
        );
    }
}

// ---------------------------------------------------------------------------

fn main() -> ExitCode {
    let cfg = Config::from_env();
    for tool in ["redis-server", "redis-benchmark"] {
        if !tool_available(tool) {
            println!(
                "throughput bench skipped: `{tool}` not found on PATH \
                 (install redis-server and redis-tools to run it)"
            );
            return ExitCode::SUCCESS;
        }
    }

    let redis_args: Vec<String> = ["--save", "", "--appendonly", "no", "--bind", "127.0.0.1"]
        .map(String::from)
        .to_vec();
    let mut servers = [
        Server::start("redis", "redis-server", &redis_args),
        if cfg.self_test {
            Server::start("self-test", "redis-server", &redis_args)
        } else {
            // The same binary and threads as the benches sharing `support`.
            Server::start("rlockd", &support::rlockd_binary(), &support::rlockd_args())
        },
    ];
    let labels = [servers[0].label, servers[1].label];
    eprintln!(
        "throughput: {} on port {}, {} on port {}{}",
        labels[0],
        servers[0].port,
        labels[1],
        servers[1].port,
        if cfg.self_test {
            " (RLOCKD_BENCH_SELF_TEST=1: both sides are redis-server)"
        } else {
            ""
        }
    );

    let mut outcomes = Vec::new();
    for w in &cfg.workloads {
        let mut sides: [Result<(Prepared, Vec<Sample>), String>; 2] =
            [0, 1].map(|i| prepare(w, servers[i].port).map(|p| (p, Vec::new())));
        for round in 1..=cfg.rounds {
            for (i, server) in servers.iter_mut().enumerate() {
                let Ok((prep, samples)) = &mut sides[i] else {
                    continue;
                };
                match run_benchmark(&cfg, server, prep) {
                    Ok(s) => {
                        eprintln!(
                            "  {:<16} round {round}/{} {:<9} {:>10.0} ops/s  p50 {} ms",
                            w.name,
                            cfg.rounds,
                            server.label,
                            s.rps,
                            s.p50_ms.map_or("-".into(), |p| format!("{p:.3}"))
                        );
                        samples.push(s);
                    }
                    Err(e) => {
                        let msg = format!("{e} (probe was {:?})", prep.probe);
                        sides[i] = Err(msg);
                    }
                }
            }
        }
        outcomes.push(Outcome {
            name: w.name,
            sides: sides.map(|s| s.map(|(_, samples)| samples)),
        });
    }

    print_report(&cfg, labels, &outcomes);
    drop(servers);
    ExitCode::SUCCESS
}
