//! The `rlockd` binary: config file and flags, port 0, SIGTERM.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the binary and reads the port it logs once ready.
fn start(args: &[&str]) -> (Running, u16) {
    let (child, port) = common::spawn_binary(args);
    (Running(child), port)
}

fn ask(port: u16, request: &[u8]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(request).unwrap();
    let mut buf = [0u8; 256];
    let n = s.read(&mut buf).unwrap();
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// Starts the binary on a config file holding `text`, which it must
/// refuse; returns what it said.
fn refused_config(path: &std::path::Path, text: &str) -> String {
    std::fs::write(path, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rlockd"))
        .arg(path)
        .output()
        .unwrap();
    assert!(!out.status.success(), "started on {text:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn config_file_then_flags() {
    let dir = std::env::temp_dir().join(format!("rlockd-conf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rlockd.conf");
    std::fs::write(
        &path,
        "# test\nport 1\nmaxclients 7\nnotify-keyspace-events Ex\n",
    )
    .unwrap();
    let (server, port) = start(&[path.to_str().unwrap(), "--port", "0"]);
    assert_ne!(port, 1, "the flag overrides the file");
    // Port 0 picked a port: the one in force, as CONFIG GET says.
    let text = port.to_string();
    assert_eq!(
        ask(port, b"CONFIG GET port\r\n"),
        format!("*2\r\n$4\r\nport\r\n${}\r\n{text}\r\n", text.len())
    );
    assert_eq!(
        ask(port, b"CONFIG GET maxclients\r\n"),
        "*2\r\n$10\r\nmaxclients\r\n$1\r\n7\r\n"
    );
    drop(server);
    let err = refused_config(&path, "port 0\nfrobnicate yes\n");
    assert!(
        err.contains("line 2: 'frobnicate yes': unknown directive"),
        "{err}"
    );
}

/// Worker threads of the process, by the name the binary gives them.
fn workers(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter(|t| {
            let comm = t.as_ref().unwrap().path().join("comm");
            std::fs::read_to_string(comm).is_ok_and(|c| c.trim_end() == "rlockd-worker")
        })
        .count()
}

/// `workers`, once it reaches `want` or five seconds pass: a thread takes
/// its name when it first runs, which a loaded machine may delay past the
/// server's first reply.
fn workers_settled(pid: u32, want: usize) -> usize {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let now = workers(pid);
        if now == want || std::time::Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn io_threads_sets_the_workers() {
    for threads in [1, 3] {
        let (server, port) = start(&["--port", "0", "--io-threads", &threads.to_string()]);
        let reply = format!("*2\r\n$10\r\nio-threads\r\n$1\r\n{threads}\r\n");
        assert_eq!(ask(port, b"CONFIG GET io-threads\r\n"), reply);
        assert_eq!(workers_settled(server.0.id(), threads), threads);
        assert_eq!(
            ask(port, b"CONFIG SET io-threads 2\r\n"),
            "-ERR CONFIG SET failed (possibly related to argument 'io-threads') - can't set immutable config\r\n"
        );
    }
    let dir = std::env::temp_dir().join(format!("rlockd-threads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let err = refused_config(&dir.join("rlockd.conf"), "io-threads 0\n");
    assert!(
        err.contains("io-threads must be between 1 and 128"),
        "{err}"
    );
}

#[test]
fn cluster_enabled_by_flag_or_file() {
    let (server, port) = start(&["--port", "0", "--cluster-enabled", "yes"]);
    assert_eq!(
        ask(port, b"CONFIG GET cluster-enabled\r\n"),
        "*2\r\n$15\r\ncluster-enabled\r\n$3\r\nyes\r\n"
    );
    assert_eq!(
        ask(port, b"MGET a b\r\n"),
        "-CROSSSLOT Keys in request don't hash to the same slot\r\n"
    );
    drop(server);

    let dir = std::env::temp_dir().join(format!("rlockd-cluster-conf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rlockd.conf");
    std::fs::write(&path, "port 0\ncluster-enabled yes\n").unwrap();
    let (server, port) = start(&[path.to_str().unwrap()]);
    assert_eq!(
        ask(port, b"INFO cluster\r\n"),
        "$30\r\n# Cluster\r\ncluster_enabled:1\r\n\r\n"
    );
    drop(server);
    // The flag overrides the file; the default is off.
    let (server, port) = start(&[path.to_str().unwrap(), "--cluster-enabled", "no"]);
    assert_eq!(ask(port, b"MGET a b\r\n"), "*2\r\n$-1\r\n$-1\r\n");
    drop(server);

    let err = refused_config(&path, "port 0\ncluster-enabled maybe\n");
    assert!(err.contains("line 2: 'cluster-enabled maybe'"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigterm_stops_gracefully() {
    let (mut server, port) = start(&["--port", "0"]);
    assert_eq!(ask(port, b"PING\r\n"), "+PONG\r\n");
    let pid = server.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = server.0.wait().unwrap();
    assert!(status.success(), "exit status {status}");
}

#[test]
fn shutdown_command_stops_gracefully_without_a_reply() {
    let (mut server, port) = start(&["--port", "0"]);
    assert_eq!(
        ask(port, b"SHUTDOWN ABORT\r\n"),
        "-ERR No shutdown in progress.\r\n"
    );
    assert_eq!(
        ask(port, b"SHUTDOWN SAVE NOSAVE\r\n"),
        "-ERR syntax error\r\n"
    );
    assert_eq!(
        ask(port, b"MULTI\r\nSHUTDOWN\r\n"),
        "+OK\r\n-ERR Command not allowed inside a transaction\r\n"
    );
    // Redis answers a successful SHUTDOWN with the close alone.
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"PING\r\nSHUTDOWN NOSAVE NOW\r\n").unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    assert_eq!(String::from_utf8_lossy(&got), "+PONG\r\n");
    let status = server.0.wait().unwrap();
    assert!(status.success(), "exit status {status}");
}

#[test]
fn clock_control_by_flag_or_directive() {
    let (server, port) = start(&["--port", "0"]);
    assert!(
        ask(port, b"RLOCKD.CLOCK GET\r\n").starts_with("-ERR unknown command 'RLOCKD.CLOCK'"),
        "off by default"
    );
    drop(server);

    let (_server, port) = start(&["--port", "0", "--enable-clock-control"]);
    let now: u64 = ask(port, b"RLOCKD.CLOCK GET\r\n")[1..]
        .trim()
        .parse()
        .unwrap();
    assert_eq!(
        ask(port, b"RLOCKD.CLOCK ADVANCE 60000\r\n"),
        format!(":{}\r\n", now + 60_000)
    );
    assert_eq!(
        ask(port, b"CONFIG GET enable-clock-control\r\n"),
        "*2\r\n$20\r\nenable-clock-control\r\n$3\r\nyes\r\n"
    );

    let dir = std::env::temp_dir().join(format!("rlockd-clock-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rlockd.conf");
    std::fs::write(&path, "enable-clock-control yes\n").unwrap();
    let (_server, port) = start(&[path.to_str().unwrap(), "--port", "0"]);
    assert!(ask(port, b"RLOCKD.CLOCK SET 1000\r\n").starts_with(":1000"));
    assert!(ask(port, b"TIME\r\n").starts_with("*2\r\n$1\r\n1\r\n"));
}

#[test]
fn metrics_port_flag_serves_prometheus_text() {
    // Port 0: the server picks both and logs where.
    let (child, redis_port, metrics) = common::spawn_binary_logging(
        &["--port", "0", "--metrics-port", "0"],
        Some("metrics at http://"),
    );
    let _server = Running(child);
    let addr = metrics.strip_suffix("/metrics").expect("the metrics URL");
    assert_eq!(ask(redis_port, b"PING\r\n"), "+PONG\r\n");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
    let mut page = String::new();
    s.read_to_string(&mut page).unwrap();
    assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "{page}");
    assert!(
        page.contains("\nrlockd_commands_processed_total{cmd=\"ping\"} 1\n"),
        "{page}"
    );
}

#[test]
fn version_help_and_bad_flags() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_rlockd"))
            .args(args)
            .output()
            .unwrap()
    };
    let version = run(&["--version"]);
    assert!(version.status.success());
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("rlockd {}", env!("CARGO_PKG_VERSION"))
    );
    let help = run(&["--help"]);
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in [
        "--port",
        "--bind",
        "--requirepass",
        "--databases",
        "--maxclients",
        "--loglevel",
        "--protected-mode",
        "--metrics-port",
        "--enable-clock-control",
        "--health-check",
        "--version",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}");
    }
    for (args, message) in [
        (
            &["--protected-mode", "maybe"][..],
            "rlockd: --protected-mode maybe: argument must be 'yes' or 'no'",
        ),
        (
            &["--loglevel", "loud"],
            // Redis 7.0's text: `nothing` (7.2's) is accepted but not named.
            "rlockd: --loglevel loud: argument(s) must be one of the following: debug, verbose, notice, warning",
        ),
        (
            &["--port", "70000"],
            "rlockd: --port 70000: the port must be a number from 0 to 65535",
        ),
    ] {
        let out = run(args);
        assert!(!out.status.success(), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr).trim(), message);
    }
}

#[test]
fn any_config_parameter_is_a_flag() {
    let (_server, port) = start(&[
        "--port",
        "0",
        "--hash-max-listpack-entries",
        "5",
        "--notify-keyspace-events",
        "KEA",
        "--save",
    ]);
    for (name, value) in [
        ("hash-max-listpack-entries", "5"),
        ("notify-keyspace-events", "AKE"),
        ("save", ""),
    ] {
        let request = format!("CONFIG GET {name}\r\n");
        let reply = format!(
            "*2\r\n${}\r\n{name}\r\n${}\r\n{value}\r\n",
            name.len(),
            value.len()
        );
        assert_eq!(ask(port, request.as_bytes()), reply);
    }
    for (args, message) in [
        (
            &["--frobnicate", "yes"][..],
            "rlockd: --frobnicate yes: unknown directive",
        ),
        (
            &["--hash-max-listpack-entries", "many"],
            "rlockd: --hash-max-listpack-entries many: ",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_rlockd"))
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.trim().starts_with(message), "{args:?}: {err}");
    }
}

#[test]
fn protected_mode_and_loglevel_flags_reach_config() {
    let (_server, port) = start(&[
        "--port",
        "0",
        "--protected-mode",
        "no",
        "--loglevel",
        "verbose",
    ]);
    assert_eq!(
        ask(port, b"CONFIG GET protected-mode\r\n"),
        "*2\r\n$14\r\nprotected-mode\r\n$2\r\nno\r\n"
    );
    assert_eq!(
        ask(port, b"CONFIG GET loglevel\r\n"),
        "*2\r\n$8\r\nloglevel\r\n$7\r\nverbose\r\n"
    );
}

#[test]
fn loglevel_warning_leaves_out_notices() {
    // No ready line names the port at this level, so the test picks one;
    // another process may take it first, so a server is ours only when
    // INFO names our child's pid, and a child that could not bind is
    // started again on another port.
    let (child, port) = (0..5)
        .find_map(|_| {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let mut child = Command::new(env!("CARGO_BIN_EXE_rlockd"))
                .args(["--port", &port.to_string(), "--loglevel", "warning"])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let ours = format!("process_id:{}\r\n", child.id());
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while std::time::Instant::now() < deadline {
                if child.try_wait().unwrap().is_some() {
                    return None;
                }
                if serves_as(port, &ours) {
                    return Some((child, port));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = child.kill();
            let _ = child.wait();
            panic!("never listened");
        })
        .expect("a free port within five tries");
    assert_eq!(ask(port, b"PING\r\n"), "+PONG\r\n");
    let pid = child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "",
        "no notice-level lines"
    );
}

/// Whether the server on `port` answers INFO with `line` (read whole:
/// INFO server is longer than one read).
fn serves_as(port: u16, line: &str) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    if s.write_all(b"INFO server\r\n").is_err() {
        return false;
    }
    let mut info = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n @ 1..) = s.read(&mut buf) {
        info.extend_from_slice(&buf[..n]);
        if info.ends_with(b"\r\n\r\n") {
            break;
        }
    }
    String::from_utf8_lossy(&info).contains(line)
}

/// Runs the binary, applies `config_set` (CONFIG SET arguments, if any),
/// sends SIGTERM and returns what it logged after becoming ready.
fn log_after(config_set: Option<&str>) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rlockd"))
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let port: u16 = loop {
        let line = lines.next().unwrap().unwrap();
        if let Some(addr) = line.split("connections on ").nth(1) {
            break addr.rsplit(':').next().unwrap().trim().parse().unwrap();
        }
    };
    if let Some(args) = config_set {
        assert_eq!(
            ask(port, format!("CONFIG SET {args}\r\n").as_bytes()),
            "+OK\r\n"
        );
    }
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(child.wait().unwrap().success());
    lines.map(|l| l.unwrap() + "\n").collect()
}

#[test]
fn config_set_loglevel_takes_effect_at_once() {
    assert!(log_after(None).contains("received SIGTERM"));
    assert_eq!(log_after(Some("loglevel warning")), "");
}

#[test]
fn sigint_right_after_ready_stops_gracefully() {
    let (mut server, _) = start(&["--port", "0"]);
    Command::new("kill")
        .args(["-INT", &server.0.id().to_string()])
        .status()
        .unwrap();
    let status = server.0.wait().unwrap();
    assert!(status.success(), "exit status {status}");
}

/// SIGTERM while a script that wrote loops for ever: the script is
/// stopped (rolled back) and the process exits promptly (issue #10).
#[test]
fn sigterm_stops_a_looping_script() {
    let (mut server, port) = start(&["--port", "0"]);
    assert_eq!(
        ask(port, b"CONFIG SET busy-reply-threshold 100\r\n"),
        "+OK\r\n"
    );
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"EVAL \"redis.call('set', KEYS[1], 1) while true do end\" 1 k\r\n")
        .unwrap();
    // Once busy, the script's key answers BUSY.
    let started = std::time::Instant::now();
    while !ask(port, b"GET k\r\n").starts_with("-BUSY") {
        assert!(started.elapsed() < Duration::from_secs(10), "never busy");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = server.0.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let asked = std::time::Instant::now();
    while server.0.try_wait().unwrap().is_none() {
        assert!(
            asked.elapsed() < Duration::from_secs(3),
            "still running after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(server.0.wait().unwrap().success());
}
