//! Real lock clients against rlockd: redis-py's `Lock`, python-redis-lock,
//! ioredis, node-redis, node-redisson and redlock (programs in
//! `tests/clients/`), and the Rust `redis` crate from several OS processes
//! at once (this binary re-run as `mutex_worker`).
//!
//! Every scenario runs first against a real `redis-server` and then against
//! rlockd, so a scenario that fails only on rlockd is rlockd's fault, not
//! the client program's. A missing interpreter or package is a SKIP unless
//! `RLOCKD_REQUIRE_CLIENTS=1` (as `.ci/run` sets); `.ci/run` installs them.

mod refserver;

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use refserver::pki::Pki;
use refserver::{Setup, Subject, find_tool, loud, targets};

/// Env var that turns a missing client interpreter or package into a failure.
const REQUIRE_CLIENTS_ENV: &str = "RLOCKD_REQUIRE_CLIENTS";
const NODE_ENV: &str = "RLOCKD_NODE";

/// How long one client program may run before it is killed and fails.
const SCENARIO_LIMIT: Duration = Duration::from_secs(60);

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// The Python to run the client programs with ([`refserver::client_python`]),
/// or `None` after a SKIP.
fn python(test: &str) -> Option<PathBuf> {
    refserver::client_python()
        .map_err(|why| skip(test, &why))
        .ok()
}

/// `node` with the project's packages installed (`npm ci` in tests/clients/node).
fn node(test: &str) -> Option<PathBuf> {
    let Some(node) = find_tool("node", NODE_ENV) else {
        skip(
            test,
            "no `node` on PATH (or $RLOCKD_NODE): apt-get install nodejs npm",
        );
        return None;
    };
    let dir = clients_dir().join("node");
    let installed = || {
        ["ioredis", "redlock", "node-redisson", "@redis/client"]
            .iter()
            .find(|p| {
                !dir.join("node_modules")
                    .join(p)
                    .join("package.json")
                    .is_file()
            })
            .map_or(Ok(()), |p| Err(format!("npm package {p} not installed")))
    };
    // What `npm ci` installs needs no root: done on first use, one test
    // at a time.
    static SETUP: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = SETUP.lock().unwrap_or_else(|e| e.into_inner());
    let ready = installed().or_else(|_| {
        loud("running `npm ci` in tests/clients/node");
        let npm = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .output();
        match npm {
            Ok(o) if o.status.success() => installed(),
            Ok(o) => Err(String::from_utf8_lossy(&o.stderr).trim().to_string()),
            Err(e) => Err(format!("no npm ({e})")),
        }
    });
    if let Err(why) = ready {
        let fix = "apt-get install npm, then `npm ci` in tests/clients/node";
        skip(test, &format!("{why}: {fix}"));
        return None;
    }
    Some(node)
}

fn skip(test: &str, reason: &str) {
    refserver::skip_unless_required(test, reason, REQUIRE_CLIENTS_ENV);
}

/// Runs a client program (a path under tests/clients) against `servers`
/// fresh servers of each target. The program gets the servers' ports as its
/// arguments; it may print `@stop N` to have server N stopped, and is
/// answered `stopped` on stdin. It must exit 0 after printing a `PASS` line.
fn run_client(test: &str, interpreter: &Path, program: &str, servers: usize) {
    run_client_with(test, interpreter, program, servers, None);
}

/// Like `run_client`, with servers that require `password`, which the
/// program finds in `$REDIS_PASSWORD`.
fn run_client_with(
    test: &str,
    interpreter: &Path,
    program: &str,
    servers: usize,
    password: Option<&str>,
) {
    let setup = Setup {
        password,
        ..Setup::default()
    };
    run_client_setup(test, interpreter, program, servers, setup);
}

/// Like `run_client`, with servers set up as `setup`: with `tls`, the
/// program gets the TLS ports, and the certificates' directory in
/// `$RLOCKD_TLS_DIR`.
fn run_client_setup(test: &str, interpreter: &Path, program: &str, servers: usize, setup: Setup) {
    for target in targets(test) {
        let mut running: Vec<Option<Subject>> =
            (0..servers).map(|_| Some(target.start(setup))).collect();
        let ports: Vec<OsString> = running
            .iter()
            .flatten()
            .map(|s| match setup.tls {
                Some(_) => s.tls_port().expect("a TLS port").to_string().into(),
                None => s.port().to_string().into(),
            })
            .collect();
        let started = Instant::now();
        let mut command = Command::new(interpreter);
        command.arg(clients_dir().join(program)).args(&ports);
        if let Some(password) = setup.password {
            command.env("REDIS_PASSWORD", password);
        }
        if let Some(dir) = setup.tls {
            command.env("RLOCKD_TLS_DIR", dir);
        }
        let outcome = converse(&mut command, &mut running);
        let elapsed = started.elapsed().as_secs_f64();
        let passed = outcome.status.as_ref().is_ok_and(|s| s.success())
            && outcome.output.lines().any(|l| l.starts_with("PASS "));
        if !passed {
            let blame = target.blame();
            panic!(
                "{test}: {program} against {} ({elapsed:.1}s): {:?}; {blame}\n--- output ---\n{}",
                target.name(),
                outcome.status,
                outcome.output
            );
        }
        // Every check with its measured value, shown by `--nocapture`.
        println!("--- {program} on {} ---\n{}", target.name(), outcome.output);
        let summary = outcome
            .output
            .lines()
            .rfind(|l| l.starts_with("PASS "))
            .unwrap_or_default()
            .to_string();
        loud(&format!(
            "{test} on {}: {summary} ({elapsed:.1}s)",
            target.name()
        ));
    }
}

struct Outcome {
    status: Result<ExitStatus, String>,
    output: String,
}

/// Runs `command` to its end (or `SCENARIO_LIMIT`), serving its `@stop N`
/// requests, and returns its exit status with its stdout and stderr.
fn converse(command: &mut Command, servers: &mut [Option<Subject>]) -> Outcome {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {:?}: {e}", command.get_program()));
    let mut stdin = child.stdin.take().unwrap();
    let lines = line_channel(child.stdout.take().unwrap());
    let stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = BufReader::new(stderr).read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + SCENARIO_LIMIT;
    let mut output = String::new();
    let status = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => {
                if let Some(index) = line.strip_prefix("@stop ") {
                    let stopped = index
                        .trim()
                        .parse::<usize>()
                        .ok()
                        .and_then(|i| servers.get_mut(i))
                        .and_then(Option::take);
                    let answer = if stopped.is_some() {
                        "stopped\n"
                    } else {
                        "no such server\n"
                    };
                    // The server is down (its clients disconnected) before
                    // the program hears so.
                    drop(stopped);
                    let _ = stdin.write_all(answer.as_bytes());
                }
                output.push_str(&line);
                output.push('\n');
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break wait_until(&mut child, deadline),
            Err(mpsc::RecvTimeoutError::Timeout) => break kill(&mut child),
        }
    };
    drop(stdin);
    let err = stderr.join().unwrap_or_default();
    if !err.trim().is_empty() {
        output.push_str("--- stderr ---\n");
        output.push_str(&err);
    }
    Outcome { status, output }
}

fn line_channel(out: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn wait_until(child: &mut Child, deadline: Instant) -> Result<ExitStatus, String> {
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Ok(status);
        }
        if Instant::now() >= deadline {
            return kill(child);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn kill(child: &mut Child) -> Result<ExitStatus, String> {
    let _ = child.kill();
    let _ = child.wait();
    Err(format!("killed after {}s", SCENARIO_LIMIT.as_secs()))
}

#[test]
fn redis_py_lock() {
    if let Some(python) = python("redis_py_lock") {
        run_client("redis_py_lock", &python, "redis_py_lock.py", 1);
    }
}

#[test]
fn redis_py_auth_and_db() {
    if let Some(python) = python("redis_py_auth_and_db") {
        run_client_with(
            "redis_py_auth_and_db",
            &python,
            "redis_py_auth.py",
            1,
            Some("s3cret pass"),
        );
    }
}

/// redis-py with `ssl=True`, with a client certificate and without one,
/// and refusing a server its CA did not vouch for.
#[test]
fn redis_py_over_tls() {
    if let Some(python) = python("redis_py_over_tls") {
        let pki = Pki::new();
        let setup = Setup::over_tls(&pki);
        run_client_setup("redis_py_over_tls", &python, "redis_py_tls.py", 1, setup);
    }
}

#[test]
fn python_redis_lock() {
    if let Some(python) = python("python_redis_lock") {
        run_client("python_redis_lock", &python, "python_redis_lock.py", 1);
    }
}

#[test]
fn ioredis_lock() {
    if let Some(node) = node("ioredis_lock") {
        run_client("ioredis_lock", &node, "node/ioredis_lock.js", 1);
    }
}

#[test]
fn node_redis() {
    if let Some(node) = node("node_redis") {
        run_client("node_redis", &node, "node/node_redis.js", 1);
    }
}

#[test]
fn node_redisson() {
    if let Some(node) = node("node_redisson") {
        run_client("node_redisson", &node, "node/node_redisson.js", 1);
    }
}

#[test]
fn node_clients_auth_and_db() {
    if let Some(node) = node("node_clients_auth_and_db") {
        run_client_with(
            "node_clients_auth_and_db",
            &node,
            "node/auth.js",
            1,
            Some("s3cret pass"),
        );
    }
}

#[test]
fn redlock_three_nodes() {
    if let Some(node) = node("redlock_three_nodes") {
        run_client("redlock_three_nodes", &node, "node/redlock.js", 3);
    }
}

/// Env vars that turn `mutex_worker` into one worker process of the
/// mutual-exclusion tests: the server's port and the kind of lock.
const WORKER_PORT_ENV: &str = "RLOCKD_MUTEX_WORKER_PORT";
const WORKER_LOCK_ENV: &str = "RLOCKD_MUTEX_WORKER_LOCK";
const WORKERS: usize = 8;
const ROUNDS: usize = 500;
const COUNTER: &str = "{mutex}:counter";
const LOCK: &str = "{mutex}:lock";
const CHANNEL: &str = "{mutex}:channel";
/// Lease of one lock hold; far longer than a GET and a SET take.
const LEASE_MS: u64 = 10_000;

/// Deletes the lock only while it still holds this owner's token.
const UNLOCK_SCRIPT: &str = r"
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0";

/// How the workers lock: a `SET NX PX` string released by compare-and-delete,
/// or seed 000's reentrant hash lock and its unlock-with-PUBLISH script,
/// taken twice and released twice each round.
#[derive(Clone, Copy, Debug)]
enum LockKind {
    SetNx,
    ReentrantHash,
}

impl LockKind {
    fn name(self) -> &'static str {
        match self {
            LockKind::SetNx => "setnx",
            LockKind::ReentrantHash => "hash",
        }
    }

    /// The hash-lock workers speak RESP3 (after HELLO 3), the others RESP2,
    /// so that both protocols carry the contended lock traffic.
    fn protocol(self) -> &'static str {
        match self {
            LockKind::SetNx => "resp2",
            LockKind::ReentrantHash => "resp3",
        }
    }

    fn from_name(name: &str) -> LockKind {
        match name {
            "setnx" => LockKind::SetNx,
            "hash" => LockKind::ReentrantHash,
            other => panic!("unknown lock kind {other:?}"),
        }
    }
}

/// One worker's connection and scripts.
struct Locker {
    kind: LockKind,
    con: redis::Connection,
    unlock: redis::Script,
    hash_lock: redis::Script,
    hash_unlock: redis::Script,
}

impl Locker {
    /// One attempt to take the lock; true when it is now held by `token`.
    fn try_lock(&mut self, token: &str) -> bool {
        match self.kind {
            LockKind::SetNx => redis::cmd("SET")
                .arg(LOCK)
                .arg(token)
                .arg("NX")
                .arg("PX")
                .arg(LEASE_MS)
                .query::<Option<String>>(&mut self.con)
                .expect("SET NX PX")
                .is_some(),
            // nil when taken (or re-entered), the lock's PTTL when held by another.
            LockKind::ReentrantHash => self
                .hash_lock
                .key(LOCK)
                .arg(LEASE_MS)
                .arg(token)
                .invoke::<Option<i64>>(&mut self.con)
                .expect("hash lock script")
                .is_none(),
        }
    }

    fn lock(&mut self, token: &str, deadline: Instant, busy: &mut u64) {
        while !self.try_lock(token) {
            *busy += 1;
            assert!(Instant::now() < deadline, "lock not taken in time");
            std::thread::sleep(Duration::from_micros(200));
        }
        if let LockKind::ReentrantHash = self.kind {
            assert!(self.try_lock(token), "re-entering a held lock");
        }
    }

    fn unlock(&mut self, token: &str) {
        match self.kind {
            LockKind::SetNx => {
                let released: i64 = self
                    .unlock
                    .key(LOCK)
                    .arg(token)
                    .invoke(&mut self.con)
                    .expect("unlock script");
                assert_eq!(released, 1, "the lock was no longer ours at release");
            }
            LockKind::ReentrantHash => {
                // 0: one hold of two released; 1: the last, lock deleted.
                for expected in [0, 1] {
                    let released: Option<i64> = self
                        .hash_unlock
                        .key(LOCK)
                        .key(CHANNEL)
                        .arg(0)
                        .arg(LEASE_MS)
                        .arg(token)
                        .invoke(&mut self.con)
                        .expect("hash unlock script");
                    assert_eq!(released, Some(expected), "unlock of a reentrant hold");
                }
            }
        }
    }
}

/// 8 OS processes (this test binary re-run as `mutex_worker`), each doing
/// 500 non-atomic GET/SET increments under the lock; any lost update shows
/// as a count below 4000.
fn mutual_exclusion(test: &str, kind: LockKind) {
    for target in targets(test) {
        let server = target.start(Setup::default());
        let url = format!("redis://127.0.0.1:{}/", server.port());
        let mut con = redis::Client::open(url.as_str())
            .and_then(|c| c.get_connection())
            .expect("connect");
        let _: () = redis::cmd("SET")
            .arg(COUNTER)
            .arg(0)
            .query(&mut con)
            .unwrap();
        let started = Instant::now();
        let mut workers: Vec<Child> = (0..WORKERS)
            .map(|_| {
                Command::new(std::env::current_exe().unwrap())
                    .args(["--exact", "mutex_worker", "--ignored", "--nocapture"])
                    .env(WORKER_PORT_ENV, server.port().to_string())
                    .env(WORKER_LOCK_ENV, kind.name())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("spawn a worker process")
            })
            .collect();
        let deadline = started + SCENARIO_LIMIT;
        let outcomes: Vec<(Result<ExitStatus, String>, String)> = workers
            .iter_mut()
            .map(|w| {
                let status = wait_until(w, deadline);
                let mut text = String::new();
                let _ = w.stdout.take().unwrap().read_to_string(&mut text);
                let _ = w.stderr.take().unwrap().read_to_string(&mut text);
                (status, text)
            })
            .collect();
        let elapsed = started.elapsed().as_secs_f64();
        for (status, text) in &outcomes {
            assert!(
                status.as_ref().is_ok_and(|s| s.success()),
                "{test}: a worker against {} failed: {status:?}\n{text}",
                target.name()
            );
        }
        let count: i64 = redis::cmd("GET").arg(COUNTER).query(&mut con).unwrap();
        assert_eq!(
            count,
            (WORKERS * ROUNDS) as i64,
            "{test}: lost updates against {} ({elapsed:.1}s)",
            target.name()
        );
        let busy: u64 = outcomes
            .iter()
            .filter_map(|(_, text)| text.lines().find_map(|l| l.strip_prefix("busy retries: ")))
            .filter_map(|n| n.trim().parse::<u64>().ok())
            .sum();
        loud(&format!(
            "{test} on {}: {WORKERS} processes x {ROUNDS} locked increments = {count} \
             ({elapsed:.1}s, {:.0} lock cycles/s, {busy} busy retries)",
            target.name(),
            count as f64 / elapsed
        ));
    }
}

#[test]
fn mutual_exclusion_across_processes() {
    mutual_exclusion("mutual_exclusion_across_processes", LockKind::SetNx);
}

#[test]
fn mutual_exclusion_reentrant_hash_lock() {
    mutual_exclusion(
        "mutual_exclusion_reentrant_hash_lock",
        LockKind::ReentrantHash,
    );
}

/// One worker of the mutual-exclusion tests; ignored in a normal run, and
/// started by them with `--ignored --exact mutex_worker`.
#[test]
#[ignore = "a worker process of the mutual-exclusion tests"]
fn mutex_worker() {
    let (Some(port), Ok(kind)) = (
        std::env::var_os(WORKER_PORT_ENV),
        std::env::var(WORKER_LOCK_ENV),
    ) else {
        loud("mutex_worker only runs as a child of the mutual-exclusion tests");
        return;
    };
    let kind = LockKind::from_name(&kind);
    let url = format!(
        "redis://127.0.0.1:{}/?protocol={}",
        port.to_string_lossy(),
        kind.protocol()
    );
    let mut locker = Locker {
        kind,
        con: redis::Client::open(url.as_str())
            .and_then(|c| c.get_connection())
            .expect("worker connects"),
        unlock: redis::Script::new(UNLOCK_SCRIPT),
        hash_lock: redis::Script::new(include_str!(
            "../src/command/scripting/lock_scripts/dlock_lock.lua"
        )),
        hash_unlock: redis::Script::new(include_str!(
            "../src/command/scripting/lock_scripts/dlock_unlock.lua"
        )),
    };
    let info: String = redis::cmd("CLIENT")
        .arg("INFO")
        .query(&mut locker.con)
        .expect("CLIENT INFO");
    let resp = format!("resp={}", &kind.protocol()[4..]);
    assert!(
        info.split_whitespace().any(|field| field == resp),
        "worker not on {resp}: {info}"
    );
    let deadline = Instant::now() + SCENARIO_LIMIT;
    let mut busy = 0u64;
    for round in 0..ROUNDS {
        let token = format!("{}:{round}", std::process::id());
        locker.lock(&token, deadline, &mut busy);
        let value: i64 = redis::cmd("GET")
            .arg(COUNTER)
            .query(&mut locker.con)
            .expect("GET");
        let _: () = redis::cmd("SET")
            .arg(COUNTER)
            .arg(value + 1)
            .query(&mut locker.con)
            .expect("SET");
        locker.unlock(&token);
    }
    println!("busy retries: {busy}");
}
