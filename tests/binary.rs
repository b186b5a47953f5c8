//! The `rlockd` binary: config file and flags, port 0, SIGTERM.

mod common;
mod refserver;

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
        err.contains(&format!(
            "Reading the configuration file {}, at line 2\n>>> 'frobnicate yes'\nunknown directive",
            path.display()
        )),
        "{err}"
    );
}

/// A fresh directory for one test's files, removed at the end.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("rlockd-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn sigterm(server: &mut Running) {
    Command::new("kill")
        .args(["-TERM", &server.0.id().to_string()])
        .status()
        .unwrap();
    assert!(server.0.wait().unwrap().success());
}

/// The ready line goes to stdout at any log level, and to `--ready-file`,
/// with the port picked for port 0; the file goes at shutdown.
#[test]
fn the_ready_line_names_the_port_at_any_log_level_and_in_the_ready_file() {
    let scratch = Scratch::new("ready");
    let file = scratch.path("ready");
    let (mut server, port) = start(&[
        "--port",
        "0",
        "--loglevel",
        "nothing",
        "--ready-file",
        &file,
    ]);
    assert_ne!(port, 0);
    assert_eq!(ask(port, b"PING\r\n"), "+PONG\r\n");
    // Written just after the line is printed, whole.
    let started = std::time::Instant::now();
    let text = loop {
        if let Ok(text) = std::fs::read_to_string(&file) {
            break text;
        }
        assert!(started.elapsed() < common::WAIT, "no ready file");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(common::ready_port(&text), Some(port), "{text}");
    assert!(text.ends_with('\n'), "{text:?}");
    sigterm(&mut server);
    assert!(!std::path::Path::new(&file).exists(), "removed at shutdown");
    // A ready file that cannot be written stops the start, naming it.
    let out = Command::new(env!("CARGO_BIN_EXE_rlockd"))
        .args(["--port", "0", "--ready-file", "/proc/rlockd-ready"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("Can't write the ready file /proc/rlockd-ready: "),
        "{err}"
    );
}

/// With a unix socket the ready line lists it; alone (port 0), the line
/// has no TCP address.
#[test]
fn the_ready_line_names_the_unix_socket() {
    let scratch = Scratch::new("ready-unix");
    let socket = scratch.path("rlockd.sock");
    let (child, port) = start(&[
        "--port",
        "0",
        "--unixsocket",
        &socket,
        "--loglevel",
        "warning",
    ]);
    let _server = child;
    assert_eq!(port, 0, "no TCP beside the socket with port 0");
    let mut s = std::os::unix::net::UnixStream::connect(&socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"PING\r\n").unwrap();
    let mut buf = [0u8; 16];
    let n = s.read(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"+PONG\r\n");
}

/// What a program said (stdout and stderr) and its exit code, run from
/// `dir` for at most 10 s (one that starts after all is stopped: `124`).
fn said(program: &std::path::Path, args: &[&str], dir: &Scratch) -> (Option<i32>, String) {
    let out = Command::new("timeout")
        .arg("10")
        .arg(program)
        .args(args)
        .current_dir(&dir.0)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text.into_owned())
}

/// Every start-up failure names the port, address, path, file and line
/// it is about, with Redis's words and exit code; redis-server 7.0.15
/// is given the same bad input, and says the shared part too.
#[test]
fn startup_errors_name_what_they_are_about_as_redis_does() {
    let scratch = Scratch::new("startup-errors");
    let redis = refserver::redis_server_path("startup_errors");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let conf = scratch.path("bad.conf");
    std::fs::write(&conf, format!("port {free}\ndir /no/such/dir\n")).unwrap();
    let socket = "/no/such/dir/rlockd.sock";
    // (arguments, what rlockd says, what both say)
    let cases: Vec<(Vec<&str>, String, String)> = vec![
        (
            vec!["--port", &port, "--bind", "127.0.0.1"],
            format!(
                "Could not create server TCP listening socket 127.0.0.1:{port}: bind: Address already in use"
            ),
            format!(
                "Could not create server TCP listening socket 127.0.0.1:{port}: bind: Address already in use"
            ),
        ),
        (
            // TEST-NET-1: an address no host here has.
            vec!["--port", &free, "--bind", "192.0.2.1"],
            format!(
                "Could not create server TCP listening socket 192.0.2.1:{free}: bind: Cannot assign requested address"
            ),
            format!(
                "Could not create server TCP listening socket 192.0.2.1:{free}: bind: Cannot assign requested address"
            ),
        ),
        (
            vec!["--port", &free, "--bind", "-192.0.2.1"],
            "Configured to not listen anywhere, exiting.".into(),
            "Configured to not listen anywhere, exiting.".into(),
        ),
        (
            vec!["--port", "0", "--unixsocket", socket],
            format!("Failed opening Unix socket {socket}: bind: No such file or directory"),
            "bind: No such file or directory".into(),
        ),
        (
            vec!["/no/such.conf"],
            "Fatal error, can't open config file '/no/such.conf': No such file or directory".into(),
            "Fatal error, can't open config file '/no/such.conf': No such file or directory".into(),
        ),
        (
            vec![&conf],
            format!(
                "Reading the configuration file {conf}, at line 2\n>>> 'dir /no/such/dir'\nNo such file or directory"
            ),
            "at line 2\n>>> 'dir /no/such/dir'\nNo such file or directory".into(),
        ),
        (
            vec!["--port", &free, "--aclfile", "/no/such.acl"],
            "Aborting Redis startup because of ACL errors: Error loading ACLs, opening file '/no/such.acl': No such file or directory".into(),
            "Aborting Redis startup because of ACL errors: Error loading ACLs, opening file '/no/such.acl': No such file or directory".into(),
        ),
        (
            // Root writes anywhere but /proc.
            vec!["--port", &free, "--appendonly", "yes", "--dir", "/proc"],
            "Can't open or create append-only dir appendonlydir: No such file or directory"
                .into(),
            "Can't open or create append-only dir appendonlydir: No such file or directory"
                .into(),
        ),
    ];
    let ours = std::path::Path::new(env!("CARGO_BIN_EXE_rlockd"));
    for (args, own, shared) in &cases {
        let (code, text) = said(ours, args, &scratch);
        assert_eq!(code, Some(1), "rlockd {args:?}: {text}");
        assert!(text.contains(own.as_str()), "rlockd {args:?}: {text}");
        assert!(text.contains(shared.as_str()), "rlockd {args:?}: {text}");
        if let Some(redis) = &redis {
            let quiet = [&["--save", ""][..], args].concat();
            // A config file comes first, as Redis takes it.
            let redis_args = if args[0].starts_with("--") {
                &quiet
            } else {
                args
            };
            let (code, text) = said(redis, redis_args, &scratch);
            assert_eq!(code, Some(1), "redis-server {args:?}: {text}");
            assert!(
                text.contains(shared.as_str()),
                "redis-server {args:?}: {text}"
            );
        }
    }
    drop(taken);
}

/// `-addr` is an optional address, as in Redis: one the host lacks is
/// passed over with a warning, and CONFIG GET shows the list as given.
#[test]
fn an_optional_bind_address_the_host_lacks_is_passed_over() {
    let (_server, port) = start(&["--port", "0", "--bind", "127.0.0.1", "-192.0.2.1"]);
    assert_eq!(ask(port, b"PING\r\n"), "+PONG\r\n");
    assert_eq!(
        ask(port, b"CONFIG GET bind\r\n"),
        "*2\r\n$4\r\nbind\r\n$20\r\n127.0.0.1 -192.0.2.1\r\n"
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
    assert!(
        err.contains("at line 2\n>>> 'cluster-enabled maybe'\nargument must be 'yes' or 'no'"),
        "{err}"
    );
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
        // A dashed word is the directive's too, never clap's puzzle: a
        // second value for a one-value directive, which Redis refuses so.
        (
            &["--port", "0", "-::1"],
            "rlockd: --port 0 -::1: wrong number of arguments",
        ),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr).trim(), message);
    }
    // Exit 1 for what clap refuses too, as redis-server exits.
    let out = run(&["-x"]);
    assert_eq!(out.status.code(), Some(1));
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
    assert_eq!(log_after(&["--loglevel", "warning"], None), "");
}

/// Runs the binary with `--port 0` and `args`, applies `config_set`
/// (CONFIG SET arguments, if any), sends SIGTERM and returns every line it
/// printed but the ready line.
fn log_after(args: &[&str], config_set: Option<&str>) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rlockd"))
        .args(["--port", "0"])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut log = String::new();
    let port: u16 = loop {
        let line = lines.next().expect("a ready line").unwrap();
        match common::ready_port(&line) {
            Some(port) => break port,
            None => log.push_str(&(line + "\n")),
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
    log.extend(lines.map(|l| l.unwrap() + "\n"));
    log
}

#[test]
fn config_set_loglevel_takes_effect_at_once() {
    assert!(log_after(&[], None).contains("received SIGTERM"));
    assert_eq!(log_after(&[], Some("loglevel warning")), "");
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

/// The health check of a server with a password authenticates with the
/// password it is told, by flag or by RLOCKD_PASSWORD (as a container's
/// health check inherits the container's environment); without it, or
/// with a wrong one, the server is not healthy to it.
#[test]
fn the_health_check_authenticates_with_the_configured_password() {
    let (_server, port) = start(&["--port", "0", "--requirepass", "s3cret pass"]);
    let port = port.to_string();
    let health = |extra: &[&str], env: Option<&str>| {
        let mut check = Command::new(env!("CARGO_BIN_EXE_rlockd"));
        check
            .args(["--health-check", "--port", &port])
            .args(extra)
            .env_remove("RLOCKD_PASSWORD");
        if let Some(password) = env {
            check.env("RLOCKD_PASSWORD", password);
        }
        check.status().unwrap().success()
    };
    assert!(!health(&[], None), "no password");
    assert!(!health(&["--requirepass", "wrong"], None));
    assert!(health(&["--requirepass", "s3cret pass"], None));
    assert!(health(&[], Some("s3cret pass")));
    // The flag follows the environment, as it follows the file.
    assert!(!health(&["--requirepass", "wrong"], Some("s3cret pass")));
    assert!(health(&["--requirepass", "s3cret pass"], Some("wrong")));
}
