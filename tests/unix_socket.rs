//! Clients on a unix socket (`unixsocket`, `unixsocketperm`): the binary
//! and a real `redis-server` 7.0 side by side over their sockets, with a
//! raw RESP client and `redis-cli -s`, and the embedding API's
//! `unix_socket`. Skips the comparisons without redis-server/redis-cli
//! unless `RLOCKD_REQUIRE_REDIS=1`.

mod common;
mod refserver;

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::WAIT;
use common::resp::{F, parse};
use refserver::{TempDir, free_port};

const LOCK_SCRIPT: &str = include_str!("../src/command/scripting/lock_scripts/redisson_lock.lua");

/// A raw RESP client on a unix socket.
struct Client {
    stream: UnixStream,
    buf: Vec<u8>,
}

impl Client {
    fn open(path: &Path) -> Client {
        let stream = UnixStream::connect(path).unwrap();
        stream.set_read_timeout(Some(WAIT)).unwrap();
        Client {
            stream,
            buf: Vec::new(),
        }
    }

    fn send(&mut self, args: &[&str]) {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
        }
        self.stream.write_all(&out).unwrap();
    }

    fn read(&mut self) -> F {
        let mut chunk = [0u8; 4096];
        loop {
            if let Some((frame, used)) = parse(&self.buf) {
                self.buf.drain(..used);
                return frame;
            }
            let n = self.stream.read(&mut chunk).expect("a reply in time");
            assert!(n > 0, "the server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn cmd(&mut self, args: &[&str]) -> F {
        self.send(args);
        self.read()
    }

    /// A bulk or status reply as text.
    fn text(&mut self, args: &[&str]) -> String {
        match self.cmd(args) {
            F::Bulk(b) => String::from_utf8(b).unwrap(),
            F::Simple(s) | F::Err(s) => s,
            other => panic!("{args:?}: {other:?}"),
        }
    }
}

/// A server process, killed if still running when dropped.
struct Process(Child);

impl Process {
    /// Starts `bin` (either server) on `socket` alone (`port 0`) and waits
    /// until it answers there.
    fn on_socket(bin: &Path, socket: &Path) -> Process {
        let child = Command::new(bin)
            .args(["--port", "0", "--unixsocket"])
            .arg(socket)
            .args(["--unixsocketperm", "700", "--enable-debug-command", "local"])
            .args(["--save", ""])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
        let mut process = Process(child);
        let deadline = Instant::now() + WAIT;
        while UnixStream::connect(socket).is_err() {
            assert!(
                process.0.try_wait().unwrap().is_none(),
                "{} exited",
                bin.display()
            );
            assert!(
                Instant::now() < deadline,
                "{} never listened",
                bin.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        process
    }

    /// SHUTDOWN over the socket, then waits for the process to end.
    fn shut_down(mut self, socket: &Path) {
        Client::open(socket).send(&["SHUTDOWN", "NOSAVE"]);
        self.wait_exit();
    }

    fn wait_exit(&mut self) {
        let deadline = Instant::now() + WAIT;
        while self.0.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "the server did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The `name=value` fields of a CLIENT INFO line.
fn fields(line: &str) -> Vec<(String, String)> {
    line.split_whitespace()
        .filter_map(|f| f.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn field(line: &str, name: &str) -> String {
    fields(line)
        .into_iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("no {name} in {line}"))
        .1
}

/// A reply as text, bulk strings as their words.
fn show(frame: &F) -> String {
    match frame {
        F::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        F::Arr(items) => items.iter().map(show).collect::<Vec<_>>().join(" "),
        other => format!("{other:?}"),
    }
}

/// What one server says over its socket, with the socket's path written
/// as `SOCK` so that two servers' answers compare.
fn observe(socket: &Path) -> Vec<String> {
    let path = socket.to_str().unwrap();
    let mut c = Client::open(socket);
    let mut seen = Vec::new();
    let mut see = |what: String| seen.push(what.replace(path, "SOCK"));
    // One name at a time: a pattern's matches come in Redis's hash order.
    for name in ["unixsocket", "unixsocketperm", "port"] {
        see(show(&c.cmd(&["CONFIG", "GET", name])));
    }
    see(c.text(&["CONFIG", "SET", "unixsocket", "/tmp/elsewhere.sock"]));
    see(c.text(&["CONFIG", "SET", "unixsocketperm", "777"]));
    see(c.text(&["CONFIG", "SET", "unixsocketperm", "8"]));
    let info = c.text(&["CLIENT", "INFO"]);
    for name in [
        "addr", "laddr", "flags", "db", "multi", "cmd", "user", "resp",
    ] {
        see(format!("{name}={}", field(&info, name)));
    }
    c.text(&["CLIENT", "NO-EVICT", "on"]);
    let list = c.text(&["CLIENT", "LIST"]);
    see(format!("flags={}", field(&list, "flags")));
    let me = field(&info, "addr");
    see(show(
        &c.cmd(&["CLIENT", "KILL", "ADDR", &me, "SKIPME", "yes"]),
    ));
    see(show(&c.cmd(&["DEBUG", "SLEEP", "0"])));
    let mode = std::fs::metadata(socket).unwrap().permissions().mode();
    see(format!("mode={:o}", mode & 0o777));
    seen
}

/// The lines a MONITOR on the socket sees while another socket client
/// sets a key, their timestamps cut off.
fn monitor_lines(socket: &Path) -> Vec<String> {
    let mut monitor = Client::open(socket);
    assert_eq!(monitor.cmd(&["MONITOR"]), F::Simple("OK".into()));
    Client::open(socket).cmd(&["SET", "k", "v"]);
    match monitor.read() {
        F::Simple(line) => {
            let cut = line.find(' ').unwrap();
            vec![line[cut..].replace(socket.to_str().unwrap(), "SOCK")]
        }
        other => panic!("{other:?}"),
    }
}

fn rlockd_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rlockd"))
}

#[test]
fn socket_clients_are_seen_as_redis_sees_them() {
    let Some(redis) = refserver::redis_server_path("unix_socket") else {
        return;
    };
    let dir = TempDir::new("unix");
    let mut seen = Vec::new();
    for bin in [redis, rlockd_bin()] {
        let socket = dir.path("server.sock");
        let process = Process::on_socket(&bin, &socket);
        let mut got = observe(&socket);
        got.extend(monitor_lines(&socket));
        process.shut_down(&socket);
        got.push(format!("socket left behind: {}", socket.exists()));
        seen.push(got);
    }
    assert_eq!(seen[1], seen[0]);
    for expected in [
        "unixsocket SOCK",
        "unixsocketperm 700",
        "addr=SOCK:0",
        "flags=U",
        " [0 unix:SOCK] \"SET\" \"k\" \"v\"",
    ] {
        assert!(seen[0].iter().any(|l| l == expected), "{:?}", seen[0]);
    }
}

/// The same redis-cli runs against both servers' sockets.
#[test]
fn redis_cli_works_over_the_socket() {
    let (Some(redis), Some(cli)) = (
        refserver::redis_server_path("unix_socket"),
        refserver::redis_cli_path("unix_socket"),
    ) else {
        return;
    };
    let dir = TempDir::new("unix");
    let runs: [&[&str]; 5] = [
        &["PING"],
        &["SET", "lock:a", "owner"],
        &["GET", "lock:a"],
        &["EVAL", LOCK_SCRIPT, "1", "lock:b", "30000", "c1:7"],
        &["HGETALL", "lock:b"],
    ];
    let mut outputs = Vec::new();
    for bin in [redis, rlockd_bin()] {
        let socket = dir.path("cli.sock");
        let process = Process::on_socket(&bin, &socket);
        let out: Vec<String> = runs
            .iter()
            .map(|run| {
                let out = Command::new(&cli)
                    .arg("-s")
                    .arg(&socket)
                    .args(*run)
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&out.stdout).into_owned()
            })
            .collect();
        process.shut_down(&socket);
        outputs.push(out);
    }
    assert_eq!(outputs[1], outputs[0]);
    assert_eq!(outputs[0][0], "PONG\n");
    assert_eq!(outputs[0][4], "c1:7\n1\n");
}

fn serve_socket_alone(socket: &Path) -> rlockd::BlockingServer {
    rlockd::Server::builder()
        .port(0)
        .unix_socket(socket)
        .start_blocking()
        .unwrap()
}

#[test]
fn a_socket_alone_with_port_zero() {
    let dir = TempDir::new("unix");
    let socket = dir.path("alone.sock");
    let server = serve_socket_alone(&socket);
    assert!(server.addrs().is_empty());
    assert_eq!(server.unix_socket(), Some(socket.as_path()));
    assert_eq!(server.url(), format!("unix://{}", socket.display()));
    let mut c = Client::open(&socket);
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "port"]),
        F::Arr(vec![common::resp::b("port"), common::resp::b("0")])
    );
    let info = c.text(&["INFO", "server"]);
    assert_eq!(common::info_value(&info, "tcp_port"), "0");
    // A client library reaches it by the URL.
    let mut con = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
    server.shutdown();
    assert!(!socket.exists());
}

#[test]
fn a_socket_beside_tcp_serves_the_same_keyspace() {
    let dir = TempDir::new("unix");
    let socket = dir.path("beside.sock");
    let port = free_port();
    let server = rlockd::Server::builder()
        .port(port)
        .unix_socket(&socket)
        .start_blocking()
        .unwrap();
    assert_eq!(server.url(), format!("redis://127.0.0.1:{port}"));
    let mut tcp = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let mut unix = Client::open(&socket);
    assert_eq!(unix.text(&["SET", "lock", "owner"]), "OK");
    let got: String = redis::cmd("GET").arg("lock").query(&mut tcp).unwrap();
    assert_eq!(got, "owner");
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut tcp).unwrap();
    let flags: Vec<String> = list.lines().map(|l| field(l, "flags")).collect();
    assert_eq!(flags, ["N", "U"], "{list}");
}

#[test]
fn a_stale_socket_file_is_replaced() {
    let dir = TempDir::new("unix");
    let socket = dir.path("stale.sock");
    // A listener dropped leaves its file, as a killed server does.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    assert!(UnixStream::connect(&socket).is_err());
    let server = serve_socket_alone(&socket);
    assert_eq!(Client::open(&socket).text(&["PING"]), "PONG");
    drop(server);
    assert!(!socket.exists());
}

/// Redis unlinks whatever is at the path; rlockd replaces only a socket,
/// so a mistyped path cannot delete a file.
#[test]
fn a_file_that_is_not_a_socket_is_left_alone() {
    let dir = TempDir::new("unix");
    let path = dir.path("data.txt");
    std::fs::write(&path, "keep me").unwrap();
    let refused = rlockd::Server::builder()
        .port(0)
        .unix_socket(&path)
        .start_blocking()
        .err()
        .expect("the path is taken");
    assert!(
        refused
            .to_string()
            .starts_with(&format!("Failed opening Unix socket {}", path.display())),
        "{refused}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep me");
}

/// Protected mode without a password admits a socket's clients, which
/// are on this host, whatever the TCP side refuses.
#[test]
fn protected_mode_admits_socket_clients() {
    let dir = TempDir::new("unix");
    let socket = dir.path("protected.sock");
    let server = serve_socket_alone(&socket);
    assert!(server.config().protected_mode);
    assert_eq!(Client::open(&socket).text(&["PING"]), "PONG");
}

/// The binary on a socket alone: its health check goes through the
/// socket, and SIGTERM removes the file.
#[test]
fn the_binary_serves_a_socket_and_removes_it_on_sigterm() {
    let dir = TempDir::new("unix");
    let socket = dir.path("binary.sock");
    let mut process = Process::on_socket(&rlockd_bin(), &socket);
    let health = Command::new(rlockd_bin())
        .args(["--health-check", "--port", "0", "--unixsocket"])
        .arg(&socket)
        .status()
        .unwrap();
    assert!(health.success());
    let kill = Command::new("kill")
        .arg("-TERM")
        .arg(process.0.id().to_string())
        .status();
    assert!(kill.unwrap().success());
    process.wait_exit();
    assert!(!socket.exists());
}

#[test]
fn a_bad_mode_stops_startup_with_redis_words() {
    let out = Command::new(rlockd_bin())
        .args(["--unixsocketperm", "8"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--unixsocketperm 8: argument couldn't be parsed as an octal number"),
        "{err}"
    );
}

/// A cluster node reached over its socket has no address to give, and
/// gives none, with its TCP port, as a Redis node that never learnt its
/// address does (`:7011@17011`).
#[test]
fn a_cluster_node_reached_over_the_socket_names_no_address() {
    let dir = TempDir::new("unix");
    let socket = dir.path("cluster.sock");
    let port = free_port();
    let _server = rlockd::Server::builder()
        .port(port)
        .unix_socket(&socket)
        .cluster_enabled(true)
        .start_blocking()
        .unwrap();
    let nodes = Client::open(&socket).text(&["CLUSTER", "NODES"]);
    let at = nodes.split(' ').nth(1).unwrap();
    assert_eq!(at, format!(":{port}@{}", u32::from(port) + 10000));
}
