//! What the side-by-side benches share: starting `redis-server` and the
//! `rlockd` binary on free ports, a blocking RESP client, and knobs.
#![allow(dead_code)]

pub mod callgrind;
pub mod replicated;

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

pub fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The knobs of a bench that runs timed rounds per client count:
/// `RLOCKD_BENCH_CLIENT_COUNTS` (`default_counts`), `RLOCKD_BENCH_ROUNDS`
/// (3) and `RLOCKD_BENCH_SECONDS` (3).
pub struct Rounds {
    pub client_counts: Vec<usize>,
    pub rounds: usize,
    pub length: Duration,
}

pub fn rounds_knobs(default_counts: &str) -> Rounds {
    Rounds {
        client_counts: std::env::var("RLOCKD_BENCH_CLIENT_COUNTS")
            .unwrap_or_else(|_| default_counts.into())
            .split(',')
            .filter_map(|c| c.trim().parse().ok())
            .collect(),
        rounds: knob("RLOCKD_BENCH_ROUNDS", 3).max(1),
        length: Duration::from_secs(knob("RLOCKD_BENCH_SECONDS", 3).max(1) as u64),
    }
}

// ---------------------------------------------------------------------------
// Servers

pub struct Server {
    pub name: &'static str,
    pub addr: SocketAddr,
    child: Child,
}

impl Server {
    /// CPU time the server has used so far (user + system), in seconds.
    pub fn cpu_secs(&self) -> f64 {
        let cpu = self.cpu();
        cpu.user + cpu.system
    }

    /// CPU time the server has used so far, split into its own code (user)
    /// and the kernel's work on its behalf (system), in seconds.
    pub fn cpu(&self) -> Cpu {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))
            .expect("the server's /proc stat");
        // Fields after the command name, which is in parentheses.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        // utime and stime are fields 14 and 15, in clock ticks (100 a second).
        let secs = |i: usize| fields[i].parse::<u64>().unwrap_or(0) as f64 / 100.0;
        Cpu {
            user: secs(11),
            system: secs(12),
        }
    }

    /// The server's resident memory now, in bytes (Linux).
    pub fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("the server's /proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .expect("VmRSS")
            * 1024
    }
}

/// CPU seconds, as /proc splits them.
#[derive(Clone, Copy, Default)]
pub struct Cpu {
    pub user: f64,
    pub system: f64,
}

impl std::ops::Sub for Cpu {
    type Output = Cpu;
    fn sub(self, earlier: Cpu) -> Cpu {
        Cpu {
            user: self.user - earlier.user,
            system: self.system - earlier.system,
        }
    }
}

impl Drop for Server {
    /// Asks the server to shut down, so that it exits as it would in
    /// service (an instrumented build writes its profile then: pgo/build),
    /// and kills it if it has not within five seconds.
    fn drop(&mut self) {
        let _ = Conn::open(self.addr).and_then(|mut c| c.send(&["SHUTDOWN", "NOSAVE"]));
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The rlockd binary to measure: `RLOCKD_BENCH_BINARY` (e.g. the
/// profile-guided build pgo/build makes), else the one cargo built.
pub fn rlockd_binary() -> String {
    std::env::var("RLOCKD_BENCH_BINARY").unwrap_or_else(|_| env!("CARGO_BIN_EXE_rlockd").into())
}

/// rlockd's arguments beyond its port: `RLOCKD_BENCH_IO_THREADS` sets its
/// worker threads (default: its own, one per core).
pub fn rlockd_args() -> Vec<String> {
    std::env::var("RLOCKD_BENCH_IO_THREADS")
        .map(|threads| vec!["--io-threads".to_string(), threads])
        .unwrap_or_default()
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The port a server's arguments name with `--port N`.
fn port_arg(args: &[String]) -> Option<u16> {
    args.iter()
        .skip_while(|a| *a != "--port")
        .nth(1)
        .and_then(|p| p.parse().ok())
}

pub fn launch(name: &'static str, program: &str, args: &[String]) -> Option<Server> {
    let port = port_arg(args)?;
    // RLOCKD_BENCH_SERVER_CPUS (a taskset list, "0-7"): the servers run on
    // those cores only, so that on a many-core machine the load generator,
    // started under `taskset` on the others, does not take the servers'.
    let mut command = match std::env::var("RLOCKD_BENCH_SERVER_CPUS") {
        Ok(cpus) => {
            let mut c = Command::new("taskset");
            c.args(["-c", &cpus, program]);
            c
        }
        Err(_) => Command::new(program),
    };
    let child = command
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
            return Some(server);
        }
        thread::sleep(Duration::from_millis(20));
    }
    None
}

/// A server's arguments for `port` with persistence off. A dump file
/// another run left in the working directory would be loaded: the file is
/// a temporary one (`{name}-{port}.rdb`) that is never written.
pub fn transient_args(port: u16, name: &str) -> Vec<String> {
    let dir = std::env::temp_dir().display().to_string();
    [
        "--port",
        &port.to_string(),
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        &dir,
        "--dbfilename",
        &format!("{name}-{port}.rdb"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

pub fn start_servers() -> Vec<Server> {
    let mut servers = Vec::new();
    let redis = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    match launch(
        "redis",
        &redis,
        &transient_args(free_port(), "rlockd-bench"),
    ) {
        Some(s) => servers.push(s),
        None => println!("redis-server not available: printing rlockd's figures only"),
    }
    let mut args = vec!["--port".to_string(), free_port().to_string()];
    args.extend(rlockd_args());
    let rlockd = launch("rlockd", &rlockd_binary(), &args).expect("rlockd starts");
    servers.push(rlockd);
    servers
}

// ---------------------------------------------------------------------------
// A server that does no work

/// The flag that makes a bench's own executable the null server.
const NULL_FLAG: &str = "--null-server";

/// Starts this bench's executable again as a server that answers the lock
/// workload without doing any of its work (see `serve_null`): what it
/// spends per request is the kernel's cost of the round trip and next to
/// nothing else, a floor under every server's CPU per request.
pub fn launch_null() -> Option<Server> {
    let exe = std::env::current_exe().ok()?;
    let args = [
        NULL_FLAG.to_string(),
        "--port".into(),
        free_port().to_string(),
    ];
    launch("null", exe.to_str()?, &args)
}

/// When this process was started by `launch_null`, serves until SHUTDOWN
/// and exits; otherwise returns at once. A bench that launches the null
/// server calls this first thing in `main`.
pub fn serve_null_if_asked() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == NULL_FLAG) {
        return;
    }
    let port = port_arg(&args).expect("--port N");
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("the null server's port");
    for stream in listener.incoming().flatten() {
        thread::spawn(move || serve_null(stream));
    }
}

/// One connection of the null server: a thread blocked in `read` until a
/// request arrives and one `write` of its reply, two calls per request
/// (an event-loop server makes a third, `epoll_wait`). Replies: a one-key
/// EVALSHA nil (a lock taken), a two-key one 1 (a lock released), SCRIPT
/// LOAD a made-up digest, PING +PONG, SHUTDOWN ends the process, anything
/// else +OK.
fn serve_null(stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::with_capacity(1 << 16, stream);
    let mut line = Vec::new();
    let mut read_line = |reader: &mut BufReader<TcpStream>| -> Option<Vec<u8>> {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim_ascii_end().to_vec()),
        }
    };
    let number = |bytes: &[u8]| -> usize {
        std::str::from_utf8(&bytes[1..])
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    loop {
        let Some(head) = read_line(&mut reader) else {
            return;
        };
        let mut args = Vec::new();
        for _ in 0..number(&head) {
            let Some(len) = read_line(&mut reader) else {
                return;
            };
            let mut arg = vec![0; number(&len) + 2];
            if reader.read_exact(&mut arg).is_err() {
                return;
            }
            arg.truncate(arg.len() - 2);
            args.push(arg);
        }
        let name = args
            .first()
            .map(|a| a.to_ascii_uppercase())
            .unwrap_or_default();
        let reply: &[u8] = match name.as_slice() {
            b"EVALSHA" if args.get(2).is_some_and(|keys| keys == b"1") => b"$-1\r\n",
            b"EVALSHA" => b":1\r\n",
            b"SCRIPT" => b"$4\r\nnull\r\n",
            b"PING" => b"+PONG\r\n",
            b"SHUTDOWN" => std::process::exit(0),
            _ => b"+OK\r\n",
        };
        if writer.write_all(reply).is_err() {
            return;
        }
    }
}

// ---------------------------------------------------------------------------
// A blocking RESP client

#[derive(Debug)]
pub enum Reply {
    Line,
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Vec<Reply>),
}

pub struct Conn {
    pub writer: TcpStream,
    pub reader: BufReader<TcpStream>,
}

pub fn encode(args: &[&str], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
}

impl Conn {
    pub fn open(addr: SocketAddr) -> io::Result<Conn> {
        let s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        Ok(Conn {
            writer: s.try_clone()?,
            reader: BufReader::with_capacity(1 << 16, s),
        })
    }

    pub fn send(&mut self, args: &[&str]) -> io::Result<()> {
        let mut out = Vec::new();
        encode(args, &mut out);
        self.writer.write_all(&out)
    }

    pub fn cmd(&mut self, args: &[&str]) -> io::Result<Reply> {
        self.send(args)?;
        self.read()
    }

    /// SCRIPT LOAD of `script`: its digest, for EVALSHA.
    pub fn script_load(&mut self, script: &str) -> io::Result<String> {
        match self.cmd(&["SCRIPT", "LOAD", script])? {
            Reply::Bulk(Some(sha)) => Ok(String::from_utf8_lossy(&sha).into_owned()),
            other => Err(io::Error::other(format!("SCRIPT LOAD: {other:?}"))),
        }
    }

    pub fn read(&mut self) -> io::Result<Reply> {
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

/// Sends `commands` pipelined, then reads every reply.
pub fn pipeline(conn: &mut Conn, commands: &[Vec<String>]) {
    let mut out = Vec::new();
    for c in commands {
        let args: Vec<&str> = c.iter().map(String::as_str).collect();
        encode(&args, &mut out);
    }
    conn.writer.write_all(&out).expect("send");
    for _ in commands {
        conn.read().expect("reply");
    }
}

/// What one bench client counted: pairs done, and the round trips it timed.
pub type Counted = io::Result<(u64, Vec<f64>)>;

/// What a bench's client threads counted, added up.
pub fn join_clients(workers: Vec<thread::JoinHandle<Counted>>) -> Counted {
    let (mut pairs, mut timed) = (0, Vec::new());
    for w in workers {
        let (p, t) = w.join().expect("client thread")?;
        pairs += p;
        timed.extend(t);
    }
    Ok((pairs, timed))
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The value below which a share `p` of the samples lie (0 for none).
pub fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p) as usize]
}
