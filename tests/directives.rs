//! Every redis.conf directive of Redis 7.0, differentially: CONFIG GET *
//! lists what redis-server 7.0 lists, with its defaults, and CONFIG SET
//! checks values with Redis's error texts. Skips without redis-server
//! unless `RLOCKD_REQUIRE_REDIS=1`.

mod common;
mod refserver;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use refserver::{RedisServer, Rlockd, TempDir, free_port};

/// rlockd's own directives, which Redis lacks.
const OURS: &[&str] = &[
    "clock-control-runs",
    "enable-clock-control",
    "lock-promotion-grace-ms",
    "lock-restart-grace-ms",
    "lock-sync-replicas",
    "lock-sync-timeout-ms",
    "lua-heap-limit",
    "metrics-port",
    "ready-file",
    "script-kill-rollback",
    "tls-handshake-timeout-ms",
];

/// Values that differ by instance, not by default: each server's own
/// port and directory, and the reference's start-up flags.
const PER_INSTANCE: &[&str] = &["port", "dir", "loglevel", "io-threads", "save"];

fn request(addr: SocketAddr, args: &[&str]) -> redis::RedisResult<redis::Value> {
    let mut con = redis::Client::open(format!("redis://{addr}"))?.get_connection()?;
    redis::cmd(args[0]).arg(&args[1..]).query(&mut con)
}

/// A reply in a form both servers' can be compared in: the value, or the
/// error's whole text.
fn reply(con: &mut redis::Connection, args: &[&str]) -> String {
    match redis::cmd(args[0])
        .arg(&args[1..])
        .query::<redis::Value>(con)
    {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("{:?} {}", e.code(), e.detail().unwrap_or_default()),
    }
}

fn config_get_all(addr: SocketAddr) -> BTreeMap<String, String> {
    let redis::Value::Array(items) = request(addr, &["CONFIG", "GET", "*"]).unwrap() else {
        panic!("CONFIG GET * answers an array");
    };
    let text = |v: &redis::Value| match v {
        redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("a bulk string, not {other:?}"),
    };
    items
        .chunks(2)
        .map(|pair| (text(&pair[0]), text(&pair[1])))
        .collect()
}

#[test]
fn config_get_lists_what_redis_lists_with_its_defaults() {
    let Some(bin) = refserver::redis_server_path("directives") else {
        return;
    };
    let redis = RedisServer::start(&bin);
    let ours = Rlockd::start();
    let theirs = config_get_all(redis.addr);
    let mine = config_get_all(ours.addr);
    assert!(theirs.len() >= 192, "redis-server 7.0 lists 192");
    let missing: Vec<&String> = theirs.keys().filter(|k| !mine.contains_key(*k)).collect();
    assert!(missing.is_empty(), "rlockd lacks {missing:?}");
    let extra: Vec<&String> = mine
        .keys()
        .filter(|k| !theirs.contains_key(*k) && !OURS.contains(&k.as_str()))
        .collect();
    assert!(extra.is_empty(), "Redis lacks {extra:?}");
    let differ: Vec<(&String, &String, &String)> = theirs
        .iter()
        .filter_map(|(k, v)| Some((k, v, mine.get(k)?)))
        .filter(|(k, v, m)| v != m && !PER_INSTANCE.contains(&k.as_str()))
        .collect();
    assert!(differ.is_empty(), "(name, Redis's, rlockd's): {differ:?}");
    // Redis's hidden settings answer for their exact names only.
    for hidden in [
        "key-load-delay",
        "use-exit-on-panic",
        "watchdog-period",
        "loading-process-events-interval-bytes",
    ] {
        let get = ["CONFIG", "GET", hidden];
        let (want, got) = (request(redis.addr, &get), request(ours.addr, &get));
        assert_eq!(format!("{got:?}"), format!("{want:?}"), "{hidden}");
        assert!(!theirs.contains_key(hidden) && !mine.contains_key(hidden));
    }
}

/// Settings the sweep leaves alone: changing them would cut the test's
/// own connection or change where the reference writes.
const UNSWEPT: &[&str] = &[
    "port",
    "bind",
    "dir",
    "requirepass",
    "appendonly",
    "maxclients",
    "timeout",
    "save",
    "dbfilename",
    "appendfilename",
];

/// Where rlockd answers otherwise on purpose (docs/compatibility.md,
/// "Differences from Redis 7.0"): values it cannot honour, which Redis takes.
const DIFFERENT: &[(&str, &str)] = &[
    ("proto-max-bulk-len", "1mb"),
    ("proto-max-bulk-len", "2147483648"),
    ("acl-pubsub-default", "allchannels"),
    ("hll-sparse-max-bytes", "0"),
    ("hll-sparse-max-bytes", "1"),
    ("hll-sparse-max-bytes", "101"),
    ("hll-sparse-max-bytes", "2147483648"),
    ("hll-sparse-max-bytes", "1mb"),
    ("hll-sparse-max-bytes", ""),
];

/// Every setting both list, set to a spread of good and bad values on
/// both servers: the same replies (Redis's error texts), and the same
/// value read back. Each is put back after each try.
#[test]
fn config_set_checks_values_as_redis_does() {
    let Some(bin) = refserver::redis_server_path("directives") else {
        return;
    };
    let redis = RedisServer::start(&bin);
    let ours = Rlockd::start();
    let (mut theirs, mut mine) = (connect(redis.addr), connect(ours.addr));
    let names: Vec<String> = config_get_all(redis.addr)
        .into_keys()
        .filter(|k| !UNSWEPT.contains(&k.as_str()))
        .collect();
    let values = [
        "abc",
        "-1",
        "0",
        "1",
        "yes",
        "NO",
        "101",
        "2147483648",
        "1mb",
        "10%",
        "",
        "no one",
        "1 2 3",
        "local",
        "99.9",
    ];
    let mut compared = 0;
    let mut wrong = Vec::new();
    for name in &names {
        let get = ["CONFIG", "GET", name.as_str()];
        let original = reply(&mut theirs, &get);
        let restore = config_get_all(redis.addr)[name.as_str()].clone();
        for value in values {
            if DIFFERENT.contains(&(name.as_str(), value)) {
                continue;
            }
            let set = ["CONFIG", "SET", name.as_str(), value];
            let want = reply(&mut theirs, &set);
            let got = reply(&mut mine, &set);
            if got != want {
                wrong.push(format!(
                    "CONFIG SET {name} {value:?}:\n  rlockd {got}\n  Redis  {want}"
                ));
            }
            let (got, want) = (reply(&mut mine, &get), reply(&mut theirs, &get));
            if got != want && !PER_INSTANCE.contains(&name.as_str()) {
                wrong.push(format!(
                    "CONFIG GET {name} after {value:?}:\n  rlockd {got}\n  Redis  {want}"
                ));
            }
            for con in [&mut theirs, &mut mine] {
                reply(con, &["CONFIG", "SET", name.as_str(), &restore]);
            }
            compared += 1;
        }
        assert_eq!(reply(&mut theirs, &get), original, "{name} put back");
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(compared > 2000, "{compared} settings compared");
}

fn loopback(port: u16) -> SocketAddr {
    ([127, 0, 0, 1], port).into()
}

/// Waits until a server answers PING at `addr`.
fn until_serving(addr: SocketAddr) {
    let deadline = Instant::now() + common::WAIT;
    while !refserver::ping(addr) {
        assert!(Instant::now() < deadline, "nothing serves {addr}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A server process, killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `bin` with `args`, its output dropped, serving on `port`.
fn run(bin: &Path, args: &[&str], port: u16) -> Running {
    let child = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the server starts");
    let running = Running(child);
    until_serving(loopback(port));
    running
}

const RLOCKD: &str = env!("CARGO_BIN_EXE_rlockd");

/// Debian's stock /etc/redis/redis.conf, as the redis-server package
/// installs it, starts rlockd (with the directives other work adds
/// commented out until it lands), to the same settings as redis-server:
/// only the instance's own paths and port are given as flags after it.
#[test]
fn debian_stock_redis_conf_starts_rlockd_as_it_starts_redis() {
    let Some(bin) = refserver::redis_server_path("directives") else {
        return;
    };
    let stock = Path::new("/etc/redis/redis.conf");
    let Ok(text) = std::fs::read_to_string(stock) else {
        common_skip("Debian's /etc/redis/redis.conf is not installed");
        return;
    };
    let dir = TempDir::new("directives");
    let conf = dir.path("redis.conf");
    std::fs::write(&conf, text).unwrap();
    let start = |bin: &Path, name: &str| {
        let port = free_port();
        let (pid, work) = (dir.path(&format!("{name}.pid")), dir.path(name));
        std::fs::create_dir_all(&work).unwrap();
        let running = run(
            bin,
            &[
                conf.to_str().unwrap(),
                "--port",
                &port.to_string(),
                "--daemonize",
                "no",
                "--logfile",
                "",
                "--pidfile",
                pid.to_str().unwrap(),
                "--dir",
                work.to_str().unwrap(),
            ],
            port,
        );
        (running, port)
    };
    let (_redis, theirs) = start(&bin, "redis");
    let (_rlockd, mine) = start(Path::new(RLOCKD), "rlockd");
    let (theirs, mine) = (
        config_get_all(loopback(theirs)),
        config_get_all(loopback(mine)),
    );
    let differ: Vec<(&String, &String, Option<&String>)> = theirs
        .iter()
        .filter(|(k, _)| !PER_INSTANCE.contains(&k.as_str()))
        .filter(|(k, v)| !matches!(k.as_str(), "pidfile") && mine.get(*k) != Some(v))
        .map(|(k, v)| (k, v, mine.get(k)))
        .collect();
    assert!(differ.is_empty(), "(name, Redis's, rlockd's): {differ:?}");
    assert_eq!(mine["oom-score-adj-values"], "0 200 800");
}

fn common_skip(reason: &str) {
    refserver::skip_unless_required("directives", reason, refserver::REQUIRE_ENV);
}

fn connect(addr: SocketAddr) -> redis::Connection {
    redis::Client::open(format!("redis://{addr}"))
        .unwrap()
        .get_connection()
        .unwrap()
}

/// redis-server and rlockd started from the same config file, with `dir`
/// their working directory, and a connection to each; stopped when dropped.
struct SideBySide {
    _servers: [Running; 2],
    theirs: redis::Connection,
    mine: redis::Connection,
}

impl SideBySide {
    fn start(redis: &Path, conf: &Path, dir: &Path) -> SideBySide {
        let start = |bin: &Path| {
            let port = free_port();
            let args = [conf.to_str().unwrap(), "--port", &port.to_string()];
            let args = [&args[..], &["--dir", dir.to_str().unwrap()]].concat();
            (run(bin, &args, port), port)
        };
        let (redis, theirs) = start(redis);
        let (rlockd, mine) = start(Path::new(RLOCKD));
        SideBySide {
            _servers: [redis, rlockd],
            theirs: connect(loopback(theirs)),
            mine: connect(loopback(mine)),
        }
    }

    /// Sends each request to both, in order: the same replies.
    fn same_replies(&mut self, requests: &[&[&str]]) {
        for args in requests {
            assert_eq!(
                reply(&mut self.mine, args),
                reply(&mut self.theirs, args),
                "{args:?}"
            );
        }
    }
}

/// `include` (a pattern, in name order) and `rename-command`, against
/// redis-server given the same file: the same replies.
#[test]
fn include_and_rename_command_as_redis_reads_them() {
    let Some(bin) = refserver::redis_server_path("directives") else {
        return;
    };
    let dir = TempDir::new("directives");
    std::fs::write(dir.path("10-a.conf"), "hz 20\nrename-command get fetch\n").unwrap();
    std::fs::write(
        dir.path("20-b.conf"),
        "hz 30\nrename-command flushall \"\"\n",
    )
    .unwrap();
    std::fs::write(dir.path("other.txt"), "no-such-directive 1\n").unwrap();
    let conf = dir.path("main.conf");
    let pattern = dir.path("*-*.conf");
    std::fs::write(
        &conf,
        format!(
            "save \"\"\ninclude {}\nrename-command set put\nrename-command fetch get2\n",
            pattern.display()
        ),
    )
    .unwrap();
    let mut both = SideBySide::start(&bin, &conf, dir.root());
    both.same_replies(&[
        &["PUT", "k", "v"],
        &["SET", "k", "v"],
        &["GET2", "k"],
        &["get", "k"],
        &["FETCH", "k"],
        &["FLUSHALL"],
        &["CONFIG", "GET", "hz"],
        &["EVAL", "return redis.call('get2', 'k')", "0"],
    ]);
    assert_eq!(
        reply(&mut both.mine, &["GET2", "k"]),
        "bulk-string('\"v\"')"
    );
}

/// `user` lines declare ACL users at start, beside `requirepass` for the
/// default user, as redis-server reads them: the same ACL LIST and AUTH
/// replies.
#[test]
fn users_declared_in_the_config_file_as_redis_declares_them() {
    let Some(bin) = refserver::redis_server_path("directives") else {
        return;
    };
    let dir = TempDir::new("directives");
    let conf = dir.path("users.conf");
    std::fs::write(
        &conf,
        "save \"\"\nrequirepass secret\nuser alice on >wonderland ~lock:* +@all -flushall\nuser bob off\n",
    )
    .unwrap();
    SideBySide::start(&bin, &conf, dir.root()).same_replies(&[
        &["PING"],
        &["AUTH", "bob", "x"],
        &["AUTH", "alice", "wonderland"],
        &["SET", "lock:1", "a"],
        &["SET", "other", "a"],
        &["FLUSHALL"],
        &["AUTH", "default", "secret"],
        &["ACL", "LIST"],
    ]);
}

/// Start-up stops, naming the directive, on a bad include or rename and
/// on a value rlockd cannot honour.
#[test]
fn what_cannot_be_done_stops_start_up() {
    let dir = TempDir::new("directives");
    let conf = dir.path("bad.conf");
    for (text, flags, says) in [
        (
            "rename-command nosuch x\n",
            &[][..],
            "No such command in rename-command",
        ),
        (
            "rename-command get set\n",
            &[],
            "Target command name already exists",
        ),
        (
            "include /nonexistent/rlockd.conf\n",
            &[],
            "can't open config file '/nonexistent/rlockd.conf'",
        ),
        ("include\n", &[], "a value is missing"),
        (
            "port 0\n",
            &["--proto-max-bulk-len", "1gb"],
            "--proto-max-bulk-len 1gb: rlockd reads bulk strings of up to 536870912 bytes",
        ),
        (
            "port 0\n",
            &["--replicaof", "host"],
            "--replicaof host: wrong number of arguments",
        ),
        ("timeout 1 2\n", &[], "wrong number of arguments"),
        (
            "loadmodule /usr/lib/redis/modules/redisbloom.so\n",
            &[],
            "rlockd loads no modules",
        ),
        ("bf.error-rate 0.01\n", &[], "rlockd loads no modules"),
        (
            "user alice on nosuchrule\n",
            &[],
            "Error in user declaration 'nosuchrule'",
        ),
        (
            "user alice on\naclfile /tmp/users.acl\n",
            &[],
            "Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid",
        ),
    ] {
        std::fs::write(&conf, text).unwrap();
        let out = Command::new(RLOCKD)
            .arg(&conf)
            .args(flags)
            .args(["--port", "0"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{text:?} {flags:?} started");
        assert!(stderr.contains(says), "{text:?} {flags:?}: {stderr}");
    }
}

/// `daemonize yes`: the command returns at once, the server runs on in
/// the background, its pid in `pidfile` and its log in `logfile`; the pid
/// file goes at shutdown.
#[test]
fn daemonize_detaches_with_pid_and_log_files() {
    let dir = TempDir::new("directives");
    let (pid_file, log_file) = (dir.path("rlockd.pid"), dir.path("rlockd.log"));
    let port = free_port();
    let status = Command::new(RLOCKD)
        .args(["--daemonize", "yes", "--port", &port.to_string()])
        .arg("--pidfile")
        .arg(&pid_file)
        .arg("--logfile")
        .arg(&log_file)
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    until_serving(loopback(port));
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let stop = Stopper(pid);
    let mut con = redis::Client::open(format!("redis://{}", loopback(port)))
        .unwrap()
        .get_connection()
        .unwrap();
    let info: String = redis::cmd("INFO").arg("server").query(&mut con).unwrap();
    assert!(info.contains(&format!("process_id:{pid}\r\n")), "{info}");
    // The log has the ready line, written once the server listens.
    let deadline = Instant::now() + common::WAIT;
    loop {
        let log = std::fs::read_to_string(&log_file).unwrap();
        if log.contains(" ready to accept connections on ") {
            break;
        }
        assert!(Instant::now() < deadline, "no ready line in the log: {log}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = redis::cmd("SHUTDOWN").query::<()>(&mut con);
    let deadline = Instant::now() + common::WAIT;
    while pid_file.exists() || refserver::ping(loopback(port)) {
        assert!(Instant::now() < deadline, "the daemon did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(stop);
}

/// Sends SIGTERM to a daemon this test started, if it still runs.
struct Stopper(u32);

impl Drop for Stopper {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(self.0.to_string()).status();
    }
}

/// The state letter of `pid` in /proc (`T`: stopped).
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name's closing parenthesis: " <state> ...".
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// `supervised upstart` with UPSTART_JOB set: the server stops itself
/// (SIGSTOP) once it serves, as upstart's `expect stop` waits for, and
/// serves on when continued.
#[test]
fn supervised_upstart_stops_itself_when_ready() {
    let port = free_port();
    let child = Command::new(RLOCKD)
        .args(["--supervised", "upstart", "--port", &port.to_string()])
        .env("UPSTART_JOB", "rlockd")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let running = Running(child);
    let pid = running.0.id();
    let deadline = Instant::now() + common::WAIT;
    while process_state(pid) != Some('T') {
        assert!(Instant::now() < deadline, "never stopped itself");
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = Command::new("kill")
        .args(["-CONT", &pid.to_string()])
        .status();
    assert!(refserver::ping(loopback(port)), "serves once continued");
}

/// `supervised systemd`: READY=1 on NOTIFY_SOCKET once the server serves,
/// STOPPING=1 when it stops.
#[test]
fn supervised_systemd_notifies_readiness() {
    let dir = TempDir::new("directives");
    let socket_path = dir.path("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).unwrap();
    socket.set_read_timeout(Some(common::WAIT)).unwrap();
    let port = free_port();
    let child = Command::new(RLOCKD)
        .args(["--supervised", "systemd", "--port", &port.to_string()])
        .env("NOTIFY_SOCKET", &socket_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut running = Running(child);
    let mut buf = [0u8; 512];
    let n = socket.recv(&mut buf).expect("a notification");
    let ready = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(ready.lines().any(|l| l == "READY=1"), "{ready}");
    assert!(refserver::ping(loopback(port)), "ready before serving");
    let _ = Command::new("kill")
        .arg(running.0.id().to_string())
        .status();
    let n = socket.recv(&mut buf).expect("a notification");
    assert_eq!(String::from_utf8_lossy(&buf[..n]), "STOPPING=1\n");
    assert!(running.0.wait().unwrap().success());
}

/// The directives' table in `docs/configuration.md` ("Every directive") has
/// a row for every setting rlockd lists.
#[test]
fn docs_table_lists_every_directive() {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md");
    let page = std::fs::read_to_string(page).unwrap();
    let start = page
        .find("## Every directive")
        .expect("docs/configuration.md has the section");
    let section = &page[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    let listed: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .collect();
    let missing: Vec<&str> = rlockd::config::params()
        .map(|p| p.name)
        .filter(|name| !listed.contains(name))
        .collect();
    assert!(missing.is_empty(), "the table lacks {missing:?}");
    for file_only in ["include", "rename-command", "user"] {
        assert!(listed.contains(&file_only), "the table lacks {file_only}");
    }
}
