//! Shared test helpers: a real rlockd on an ephemeral port, real clients.
#![allow(dead_code)]

pub mod blocking;
pub mod fake_primary;
pub mod redisson;
pub mod resp;
pub mod rng;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use rlockd::{Server, ServerHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a test waits for something that should happen at once.
pub const WAIT: Duration = Duration::from_secs(10);

/// How long a process started by a test gets to print each line it is
/// waited for: a debug build starting with `appendfsync always` took over
/// `WAIT` to get ready on a loaded machine, its disk busy with the other
/// tests' fsyncs.
pub const STARTUP_WAIT: Duration = Duration::from_secs(60);

/// Milliseconds since the epoch: the wall clock servers' deadlines
/// count by.
pub fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_millis() as u64
}

/// Waits until the wall clock is past `at` (ms since the epoch): a
/// deadline given out before has passed on every server of this machine.
pub fn until_clock_past(at: u64) {
    let limit = std::time::Instant::now() + Duration::from_secs(30);
    while epoch_ms() <= at {
        assert!(std::time::Instant::now() < limit, "the clock stands still");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The value of INFO's `name:value` line.
pub fn info_value<'a>(info: &'a str, name: &str) -> &'a str {
    info.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("INFO lacks {name}"))
        .trim()
}

/// The same, a number.
pub fn info_number(info: &str, name: &str) -> u64 {
    info_value(info, name)
        .parse()
        .unwrap_or_else(|e| panic!("INFO {name}: {e}"))
}

/// XINFO STREAM FULL's reply as text, every consumer's `seen-time` left
/// out.
pub fn without_seen_times(reply: redis::Value) -> String {
    match reply {
        redis::Value::Array(items) => {
            let mut out = Vec::new();
            let mut skip = false;
            for item in items {
                if skip {
                    skip = false;
                    continue;
                }
                skip = item == redis::Value::BulkString(b"seen-time".to_vec());
                out.push(without_seen_times(item));
            }
            format!("[{}]", out.join(" "))
        }
        other => format!("{other:?}"),
    }
}

/// Polls until `n` clients are blocked, so a test pushes only once its
/// waiters are queued.
pub async fn until_blocked(c: &mut MultiplexedConnection, n: usize) {
    let start = std::time::Instant::now();
    loop {
        let info: String = cmd(c, &["INFO", "clients"]).await.unwrap();
        let blocked = info_number(&info, "blocked_clients");
        if blocked == n as u64 {
            return;
        }
        assert!(
            start.elapsed() < WAIT,
            "expected {n} blocked clients, INFO says {blocked}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

pub async fn start() -> ServerHandle {
    start_with(rlockd::Config::default()).await
}

/// A server on a free port with this configuration.
pub async fn start_with(config: rlockd::Config) -> ServerHandle {
    Server::builder()
        .config(config)
        .port(0)
        .start()
        .await
        .expect("server starts")
}

/// A server on a free port whose clock moves only when the test moves it
/// (`server.clock()`), so a deadline passes where the test says, however
/// slow the commands before it.
pub async fn start_with_manual_clock() -> ServerHandle {
    Server::builder()
        .port(0)
        .manual_clock()
        .start()
        .await
        .expect("server starts")
}

pub async fn connect(server: &ServerHandle) -> MultiplexedConnection {
    connect_url(server.url()).await
}

/// Like `connect`, for tasks that cannot borrow the server.
pub async fn connect_url(url: String) -> MultiplexedConnection {
    // No response timeout: a debug build runs long scripts slowly. A
    // connection may wait out a busy machine (redis-rs gives up after 1 s).
    let config = redis::AsyncConnectionConfig::new()
        .set_response_timeout(None)
        .set_connection_timeout(Some(WAIT));
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .expect("client connects")
}

pub async fn cmd<T: redis::FromRedisValue>(
    con: &mut MultiplexedConnection,
    args: &[&str],
) -> redis::RedisResult<T> {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query_async(con).await
}

/// The error text a command gets, for asserting Redis's exact wording.
pub async fn err(con: &mut MultiplexedConnection, args: &[&str]) -> String {
    match cmd::<redis::Value>(con, args).await {
        Ok(v) => panic!("{args:?} should fail, got {v:?}"),
        Err(e) => {
            let code = e.code().unwrap_or("");
            let detail = e.detail().unwrap_or("");
            format!("{code} {detail}").trim().to_string()
        }
    }
}

/// Sends raw bytes and collects what comes back until the server has
/// been quiet for a moment or closes.
pub async fn raw(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(bytes).await.unwrap();
    read_quiet(&mut s).await
}

pub async fn read_quiet(s: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match tokio::time::timeout(Duration::from_millis(200), s.read(&mut buf)).await {
            Ok(Ok(0)) | Err(_) | Ok(Err(_)) => return out,
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// Starts the `rlockd` binary of this build with `args` and reads the port
/// of its ready line (0: it listens on its unix socket alone); the rest of
/// its output is drained so it never blocks.
pub fn spawn_binary(args: &[&str]) -> (Child, u16) {
    let (child, port, _) = spawn_binary_logging(args, None);
    (child, port)
}

/// What the binary's ready line starts its addresses with.
const READY: &str = " ready to accept connections on ";

/// Reads the binary's ready line (`rlockd V ready to accept connections
/// on ADDR, …, SOCKET`): `None` for any other line, else its TCP port (0
/// when it lists none).
pub fn ready_port(line: &str) -> Option<u16> {
    let on = line.split(READY).nth(1)?;
    Some(
        on.split(", ")
            .find_map(|a| a.trim().parse::<SocketAddr>().ok())
            .map_or(0, |a| a.port()),
    )
}

/// `spawn_binary`, also waiting for a log line containing `marker` after
/// the ready line; returns what follows the marker in it. Each line must
/// come within `STARTUP_WAIT`.
pub fn spawn_binary_logging(args: &[&str], marker: Option<&str>) -> (Child, u16, String) {
    spawn_logging(
        Command::new(env!("CARGO_BIN_EXE_rlockd")).args(args),
        marker,
    )
}

/// `spawn_binary_logging` for an rlockd that `command` starts (another
/// build, or this one under an emulator).
pub fn spawn_logging(command: &mut Command, marker: Option<&str>) -> (Child, u16, String) {
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{command:?} starts: {e}"));
    let stdout = child.stdout.take().expect("stdout");
    let (tx, lines) = std::sync::mpsc::channel();
    // Reads to the end, so the server never blocks on a full pipe; the
    // lines nobody waits for any more are dropped.
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let _ = tx.send(line.expect("utf-8 output"));
        }
    });
    // A server that never gets ready is stopped before the test fails: one
    // left running keeps the test runner's output open, and the run hangs.
    let mut next_line = || match lines.recv_timeout(STARTUP_WAIT) {
        Ok(line) => line,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command:?}: no line in {STARTUP_WAIT:?}: {e}")
        }
    };
    let port = loop {
        if let Some(port) = ready_port(&next_line()) {
            break port;
        }
    };
    let found = match marker {
        Some(marker) => loop {
            if let Some(rest) = next_line().split(marker).nth(1) {
                break rest.trim().to_string();
            }
        },
        None => String::new(),
    };
    (child, port, found)
}

/// A fresh directory under the target dir, named for the test file and
/// `name`, removed at the end.
pub struct TempDir(std::path::PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "{}-{name}-{}",
            env!("CARGO_CRATE_NAME"),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// A file in it.
    pub fn file(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }

    /// The directory, as a `--dir` argument.
    pub fn arg(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
