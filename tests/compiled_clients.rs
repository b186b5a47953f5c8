//! Real lock clients that need a build step, against rlockd: Redisson
//! (Java, `tests/clients/java`), redsync and redislock (Go,
//! `tests/clients/go`) and the seed article's C++ client
//! (`tests/clients/cpp`).
//!
//! As in `real_clients.rs`, every scenario runs first against a real
//! `redis-server` and then against rlockd, so a failure only on rlockd is
//! rlockd's. A client program may ask the harness, over a control socket
//! whose port it gets in `RLOCKD_CONTROL_PORT` (or `-Drlockd.control`), to
//! `stop N` server N or to `drop N` its connections. A missing toolchain is
//! a SKIP unless `RLOCKD_REQUIRE_CLIENTS=1` (as `.ci/run` sets).

mod refserver;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use refserver::pki::Pki;
use refserver::{Setup, Subject, Target, find_tool, loud, targets};

const REQUIRE_CLIENTS_ENV: &str = "RLOCKD_REQUIRE_CLIENTS";
const CONTROL_PORT_ENV: &str = "RLOCKD_CONTROL_PORT";

/// How long one client program may run before it is killed and fails.
const RUN_LIMIT: Duration = Duration::from_secs(240);

/// One client program at a time: their checks of wake-up latency must not
/// share the machine's cores with another JVM or Go build.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

fn skip(test: &str, reason: &str) {
    refserver::skip_unless_required(test, reason, REQUIRE_CLIENTS_ENV);
}

/// The servers of one run, which the client program may stop or cut off.
struct Servers<'a> {
    running: Vec<Option<Subject>>,
    password: Option<&'a str>,
    /// The programs talk to the TLS ports.
    tls: bool,
}

impl Servers<'_> {
    fn ports(&self) -> Vec<u16> {
        let port = |s: &Subject| match self.tls {
            true => s.tls_port().expect("a TLS port"),
            false => s.port(),
        };
        self.running.iter().flatten().map(port).collect()
    }

    /// Carries out one control request and returns the answer line.
    fn serve(&mut self, request: &str) -> String {
        let (verb, index) = request.trim().split_once(' ').unwrap_or((request, ""));
        let server = index
            .parse::<usize>()
            .ok()
            .and_then(|i| self.running.get_mut(i));
        match (verb, server) {
            ("stop", Some(slot)) if slot.is_some() => {
                // Down (its clients disconnected) before the program hears so.
                drop(slot.take());
                "stopped".into()
            }
            ("drop", Some(Some(subject))) => {
                subject.drop_connections(self.password);
                "dropped".into()
            }
            _ => format!("cannot {request:?}"),
        }
    }
}

/// Answers the control requests of whoever connects to `listener` until
/// `child` exits or the run's limit passes.
fn supervise(
    child: &mut Child,
    listener: &TcpListener,
    servers: &mut Servers,
) -> Result<ExitStatus, String> {
    let deadline = Instant::now() + RUN_LIMIT;
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Ok(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("killed after {}s", RUN_LIMIT.as_secs()));
        }
        match listener.accept() {
            Ok((stream, _)) => answer(stream, servers),
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

fn answer(stream: TcpStream, servers: &mut Servers) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut writer = stream.try_clone().expect("clone a control connection");
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { break };
        let reply = servers.serve(&line);
        if writeln!(writer, "{reply}").is_err() {
            break;
        }
    }
}

/// What a client program must print for its run to pass, and how to say
/// what it did.
type Judge<'a> = &'a dyn Fn(&Target, &str) -> Result<String, String>;

/// Runs the program that `make` builds (given the servers' ports and the
/// control port) against `count` fresh servers of each target, and fails
/// unless it exits 0 and `judge` accepts its output.
fn run_against_targets(
    test: &str,
    setup: Setup,
    count: usize,
    make: &dyn Fn(&Target, &[u16], u16) -> Command,
    judge: Judge,
) {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for target in targets(test) {
        let mut servers = Servers {
            running: (0..count).map(|_| Some(target.start(setup))).collect(),
            password: setup.password,
            tls: setup.tls.is_some(),
        };
        let listener = TcpListener::bind("127.0.0.1:0").expect("a control port");
        listener.set_nonblocking(true).unwrap();
        let control = listener.local_addr().unwrap().port();
        let mut command = make(&target, &servers.ports(), control);
        command.env(CONTROL_PORT_ENV, control.to_string());
        let started = Instant::now();
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{test}: cannot run {:?}: {e}", command.get_program()));
        let out = collect(child.stdout.take().unwrap());
        let err = collect(child.stderr.take().unwrap());
        let status = supervise(&mut child, &listener, &mut servers);
        let mut output = out.join().unwrap_or_default();
        let err = err.join().unwrap_or_default();
        if !err.trim().is_empty() {
            output.push_str("--- stderr ---\n");
            output.push_str(&err);
        }
        let elapsed = started.elapsed().as_secs_f64();
        let verdict = match &status {
            Ok(s) if s.success() => judge(&target, &output),
            other => Err(format!("exit {other:?}")),
        };
        match verdict {
            Ok(summary) => {
                println!("--- {test} on {} ---\n{output}", target.name());
                loud(&format!(
                    "{test} on {}: {summary} ({elapsed:.1}s)",
                    target.name()
                ));
            }
            Err(why) => panic!(
                "{test} against {} ({elapsed:.1}s): {why}; {}\n--- output ---\n{output}",
                target.name(),
                target.blame()
            ),
        }
    }
}

fn collect(out: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = BufReader::new(out).read_to_string(&mut text);
        text
    })
}

// ---------------------------------------------------------------- Java

/// The count on one of the JUnit console launcher's summary lines, such as
/// `[        11 tests successful      ]`.
fn junit_count(output: &str, what: &str) -> Option<u64> {
    output.lines().find_map(|line| {
        let inner = line.trim().strip_prefix('[')?.strip_suffix(']')?.trim();
        let (n, rest) = inner.split_once(' ')?;
        (rest.trim() == what).then(|| n.parse().ok()).flatten()
    })
}

/// A JUnit run passes with at least one test, none failed, and skips
/// (aborted tests: a #12 command missing) only on rlockd.
fn judge_junit(target: &Target, output: &str) -> Result<String, String> {
    let count = |what| junit_count(output, what).ok_or(format!("no `{what}` line"));
    let (found, passed, failed, aborted) = (
        count("tests found")?,
        count("tests successful")?,
        count("tests failed")?,
        count("tests aborted")?,
    );
    if found == 0 || failed > 0 || passed + aborted != found {
        return Err(format!(
            "{found} tests: {passed} passed, {failed} failed, {aborted} skipped"
        ));
    }
    if aborted > 0 && matches!(target, Target::Redis(_)) {
        return Err(format!(
            "{aborted} skipped on redis-server, which has every command"
        ));
    }
    Ok(format!(
        "{passed} passed, {failed} failed, {aborted} skipped"
    ))
}

/// Runs one JUnit class of `tests/clients/java` against `count` servers
/// set up as `setup`.
fn redisson(test: &str, class: &str, setup: Setup, count: usize) {
    redisson_prepared(test, class, setup, count, &|_| ());
}

/// `redisson`, with `prepare` run on the servers' ports before the class.
fn redisson_prepared(
    test: &str,
    class: &str,
    setup: Setup,
    count: usize,
    prepare: &dyn Fn(&[u16]),
) {
    let classpath = match refserver::java_classpath() {
        Ok(cp) => cp,
        Err(why) => return skip(test, why),
    };
    let java = find_tool("java", "RLOCKD_JAVA").expect("java was found before");
    let class = format!("rlockd.clients.{class}");
    let make = |target: &Target, ports: &[u16], control: u16| {
        prepare(ports);
        let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
        let mut command = Command::new(&java);
        command
            .arg(format!("-Drlockd.server={}", target.name()))
            .arg(format!("-Drlockd.ports={}", ports.join(",")))
            .arg(format!("-Drlockd.control={control}"));
        if let Some(password) = setup.password {
            command.arg(format!("-Drlockd.password={password}"));
        }
        if let Some(dir) = setup.tls {
            command.arg(format!("-Drlockd.tls={}", dir.display()));
        }
        command
            .args(["-cp", classpath])
            .arg("org.junit.platform.console.ConsoleLauncher")
            .args(["execute", "--disable-banner", "--disable-ansi-colors"])
            .args(["--details=tree", "--select-class", &class]);
        command
    };
    run_against_targets(test, setup, count, &make, &judge_junit);
}

/// An embedded-redis style launcher (`EmbeddedLauncherTest`: a config
/// file, `--port`, Redis's ready line, destroy()) given a `redis-server`
/// symlink to rlockd, then the real redis-server; the class checks which
/// one it started.
#[test]
fn java_embedded_redis_style_launcher() {
    let test = "java_embedded_redis_style_launcher";
    let classpath = match refserver::java_classpath() {
        Ok(cp) => cp,
        Err(why) => return skip(test, why),
    };
    let java = find_tool("java", "RLOCKD_JAVA").expect("java was found before");
    let dir = refserver::TempDir::new("embedded");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_rlockd"), dir.path("redis-server")).unwrap();
    let mut executables = vec![(dir.path("redis-server"), "rlockd")];
    if let Some(redis) = refserver::redis_server_path(test) {
        executables.push((redis, "redis"));
    }
    for (executable, name) in executables {
        let out = Command::new(&java)
            .arg(format!("-Drlockd.redisExecutable={}", executable.display()))
            .arg(format!("-Drlockd.expects={name}"))
            .args(["-cp", classpath])
            .arg("org.junit.platform.console.ConsoleLauncher")
            .args(["execute", "--disable-banner", "--disable-ansi-colors"])
            .args(["--select-class", "rlockd.clients.EmbeddedLauncherTest"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && junit_count(&text, "tests successful") == Some(1),
            "{test} with {name}:\n{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        loud(&format!("{test} with {name}: 1 passed, 0 failed"));
    }
}

fn one_server() -> Setup<'static> {
    Setup::default()
}

#[test]
fn redisson_rlock() {
    redisson("redisson_rlock", "LockTest", one_server(), 1);
}

/// The lock family's tests once more, Redisson connecting by `rediss://`
/// with a client certificate.
#[test]
fn redisson_rlock_over_tls() {
    let pki = Pki::new();
    let setup = Setup::over_tls(&pki);
    redisson("redisson_rlock_over_tls", "LockTest", setup, 1);
}

#[test]
fn redisson_synchronizers() {
    redisson(
        "redisson_synchronizers",
        "SynchronizerTest",
        one_server(),
        1,
    );
}

/// Makes servers 1.. replicas of server 0 and waits until each synced.
fn replicas_of_the_first(ports: &[u16]) {
    let connect = |port: u16| {
        redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .and_then(|c| c.get_connection())
            .unwrap_or_else(|e| panic!("connect to {port}: {e}"))
    };
    let mut primary = connect(ports[0]);
    redis::cmd("CONFIG")
        .arg(&["SET", "repl-diskless-sync-delay", "0"])
        .query::<()>(&mut primary)
        .expect("CONFIG SET");
    for &port in &ports[1..] {
        let mut replica = connect(port);
        redis::cmd("REPLICAOF")
            .arg("127.0.0.1")
            .arg(ports[0])
            .query::<()>(&mut replica)
            .expect("REPLICAOF");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query(&mut replica)
                .expect("INFO");
            if info.contains("master_link_status:up") {
                break;
            }
            assert!(Instant::now() < deadline, "{port} did not sync:\n{info}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Redisson in master/slave mode over a primary and two replicas: its
/// locks reach the replicas exactly, its WAIT is answered by their acks.
#[test]
fn redisson_master_slave() {
    redisson_prepared(
        "redisson_master_slave",
        "MasterSlaveTest",
        one_server(),
        3,
        &replicas_of_the_first,
    );
}

#[test]
fn redisson_connections() {
    redisson("redisson_connections", "ConnectionTest", one_server(), 1);
}

#[test]
fn redisson_client_side_caching() {
    redisson(
        "redisson_client_side_caching",
        "ClientSideCachingTest",
        one_server(),
        1,
    );
}

#[test]
fn redisson_data_objects() {
    redisson("redisson_data_objects", "DataObjectsTest", one_server(), 1);
}

#[test]
fn redisson_jvm_processes() {
    redisson("redisson_jvm_processes", "ProcessesTest", one_server(), 1);
}

#[test]
fn redisson_password_and_database() {
    let setup = Setup {
        password: Some("s3cret pass"),
        ..Setup::default()
    };
    redisson("redisson_password_and_database", "AuthDbTest", setup, 1);
}

#[test]
fn redisson_redlock_three_servers() {
    redisson(
        "redisson_redlock_three_servers",
        "RedLockTest",
        one_server(),
        3,
    );
}

#[test]
fn redisson_cluster() {
    let setup = Setup {
        cluster: true,
        ..Setup::default()
    };
    redisson("redisson_cluster", "ClusterTest", setup, 1);
}

// ---------------------------------------------------------------- C++

/// The seed's C++ client built with g++ and hiredis (once per test
/// binary), or why it could not be.
fn cpp_client() -> &'static Result<PathBuf, String> {
    static CLIENT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    CLIENT.get_or_init(|| {
        let gxx = find_tool("g++", "RLOCKD_CXX")
            .ok_or("no `g++` on PATH (or $RLOCKD_CXX): apt-get install g++ libhiredis-dev")?;
        let binary = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dlock");
        let built = Command::new(gxx)
            .args([
                "-std=c++17",
                "-O2",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pthread",
                "-o",
            ])
            .arg(&binary)
            .arg(clients_dir().join("cpp/dlock.cpp"))
            .arg("-lhiredis")
            .output()
            .map_err(|e| format!("cannot run g++: {e}"))?;
        if !built.status.success() {
            return Err(format!(
                "g++ could not build tests/clients/cpp/dlock.cpp (libhiredis-dev installed?):\n{}",
                String::from_utf8_lossy(&built.stderr)
            ));
        }
        Ok(binary)
    })
}

/// A client program passes when it prints a `PASS` line.
fn judge_pass_line(_: &Target, output: &str) -> Result<String, String> {
    output
        .lines()
        .rfind(|l| l.starts_with("PASS "))
        .map(str::to_string)
        .ok_or_else(|| "no PASS line".to_string())
}

#[test]
fn seed_cpp_client() {
    let test = "seed_cpp_client";
    let binary = match cpp_client() {
        Ok(binary) => binary,
        Err(why) => return skip(test, why),
    };
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/command/scripting/lock_scripts");
    let make = |_: &Target, ports: &[u16], _control: u16| {
        let mut command = Command::new(binary);
        command.arg(ports[0].to_string()).arg(&scripts);
        command
    };
    run_against_targets(test, one_server(), 1, &make, &judge_pass_line);
}

// ---------------------------------------------------------------- Go

/// A `go test -v` run passes with at least one test passed and skips (a
/// #12 command missing) only on rlockd; `go test` itself exits non-zero on
/// any failure.
fn judge_go_test(target: &Target, output: &str) -> Result<String, String> {
    let count = |mark: &str| {
        output
            .lines()
            .filter(|l| l.trim_start().starts_with(mark))
            .count()
    };
    let (passed, skipped) = (count("--- PASS"), count("--- SKIP"));
    if passed == 0 {
        return Err("no test passed".into());
    }
    if skipped > 0 && matches!(target, Target::Redis(_)) {
        return Err(format!(
            "{skipped} skipped on redis-server, which has every command"
        ));
    }
    Ok(format!("{passed} passed, 0 failed, {skipped} skipped"))
}

/// Runs the Go tests matching `pattern` (`tests/clients/go`, modules from
/// the Go proxy as pinned in go.sum) against `count` servers.
fn go_clients(test: &str, pattern: &str, count: usize) {
    go_clients_setup(test, pattern, count, one_server());
}

/// `go_clients` against servers set up as `setup`; with `tls`, the tests
/// get the TLS ports, and the certificates' directory in
/// `$RLOCKD_TLS_DIR`.
fn go_clients_setup(test: &str, pattern: &str, count: usize, setup: Setup) {
    let Some(go) = find_tool("go", "RLOCKD_GO") else {
        return skip(
            test,
            "no `go` on PATH (or $RLOCKD_GO): install Go 1.26+ (go.dev/dl)",
        );
    };
    let make = |target: &Target, ports: &[u16], _control: u16| {
        let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
        let mut command = Command::new(&go);
        command
            // go kills its test binary itself before the harness kills go,
            // which would leave the binary holding the output pipe.
            .args([
                "test",
                "-count=1",
                "-v",
                "-timeout=150s",
                "-run",
                pattern,
                "./...",
            ])
            .current_dir(clients_dir().join("go"))
            .env("RLOCKD_PORTS", ports.join(","))
            .env("RLOCKD_SERVER", target.name());
        if let Some(dir) = setup.tls {
            command.env("RLOCKD_TLS_DIR", dir);
        }
        command
    };
    run_against_targets(test, setup, count, &make, &judge_go_test);
}

#[test]
fn go_redsync_redislock_and_handshake() {
    go_clients(
        "go_redsync_redislock_and_handshake",
        "^(TestGoRedisHandshake|TestRedsyncMutex|TestRedsyncExpiry|TestRedislock)$",
        1,
    );
}

/// go-redis with a `tls.Config`, with a client certificate and without
/// one, and refusing a server its CA did not vouch for.
#[test]
fn go_redis_over_tls() {
    let pki = Pki::new();
    let setup = Setup::over_tls(&pki);
    go_clients_setup("go_redis_over_tls", "^TestGoRedisTLS$", 1, setup);
}

#[test]
fn go_redsync_quorum_three_servers() {
    go_clients("go_redsync_quorum_three_servers", "^TestRedsyncQuorum$", 3);
}
