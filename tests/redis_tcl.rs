//! Redis 7.0.15's own Tcl tests for the data types, run in external mode
//! (`--host/--port`) against a fresh redis-server and a fresh rlockd per
//! unit, with a ratchet: every test that passes on redis-server must pass
//! on rlockd unless tests/redis-tcl/known-failures.txt lists it.
//!
//! The Tcl suite is fetched at test time (tests/redis-tcl/fetch, from
//! Debian's source package) into a cache under target/; none of it lives
//! in this repository.
//!
//! - `RLOCKD_REQUIRE_REDIS=1`: fail, rather than skip, when tclsh,
//!   redis-server or the Tcl suite is missing (CI sets it).
//! - `RLOCKD_TCL_UPDATE=1`: rewrite known-failures.txt from this run
//!   (tests/redis-tcl/run --update does it): each reason is rlockd's error
//!   of this run, except reasons written by hand (marked `[kept]`), kept
//!   for entries that still fail.
//! - `RLOCKD_TCL_UNITS=unit/type/hash,unit/sort`: run only these units.
//! - `RLOCKD_TCL_JOBS=N`: Tcl runs at once (default: the cores, at most 4).
//! - `RLOCKD_TCL_BASEPORT=P`: the first worker's port range (default 20000;
//!   each worker takes 100 ports from there).

mod common;
mod refserver;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use refserver::{RedisServer, env_flag, loud, skip_unless_required};

const TEST: &str = "redis_tcl";
const REDIS_VERSION: &str = "7.0.15";

/// The units of the families rlockd serves, the longest first so that a
/// parallel run ends sooner (unit/type/list-2 is left out: all its tests
/// are `slow`), then the connection and server units. Left out because
/// external mode skips all of their tests: acl, acl-v2, auth, limits,
/// networking, client-eviction, pubsubshard, shutdown, oom-score-adj, tls,
/// and querybuf (`slow`).
const UNITS: &[&str] = &[
    "unit/scripting",
    "unit/hyperloglog",
    "unit/geo",
    "unit/type/list",
    "unit/type/zset",
    "unit/dump",
    "unit/type/string",
    "unit/type/stream",
    "unit/expire",
    "unit/type/set",
    "unit/sort",
    "unit/type/hash",
    "unit/type/stream-cgroups",
    "unit/scan",
    "unit/bitops",
    "unit/bitfield",
    "unit/keyspace",
    "unit/type/incr",
    "unit/type/list-3",
    "unit/tracking",
    "unit/multi",
    "unit/pubsub",
    "unit/other",
    "unit/protocol",
    "unit/pause",
    "unit/info-command",
    "unit/lazyfree",
    "unit/quit",
    // The server's surface: functions and the operator's tools (unit/info
    // is left out: all of it is `external:skip`).
    "unit/functions",
    "unit/introspection-2",
    "unit/introspection",
    "unit/latency-monitor",
    "unit/slowlog",
];

/// Skipped on both servers alike: tests that fill memory past `maxmemory`
/// and wait for an eviction (rlockd evicts nothing, so the harness would
/// stall), tests that need DEBUG (several leave the server changed when
/// they fail on rlockd, another database selected or active expiry off,
/// and a later test of their unit then waits forever), and the `slow`
/// fuzzers, which Redis's own external-server CI leaves out too. The
/// tests that read the replication stream, SAVE and PFDEBUG run.
const DENIED_TAGS: &str = "-needs:debug -needs:config-maxmemory -slow";

/// Skipped on both servers alike, by name: tests whose outcome depends on
/// which of several connections the server reads first, where the order
/// that is not Redis's usual one leaves a client blocked for good, so the
/// unit stalls for `STALL_SECS` and loses its remaining tests (listing one
/// in known-failures.txt would not stop that). rlockd serves connections
/// in parallel; Redis's one thread happens to read them in the order the
/// test wrote to them.
///
/// - unit/type/list's: two clients send BRPOPLPUSH and a third LPUSHes,
///   none waiting for the others; when the second client's pop (or the
///   push) is served before the first client's, the first blocks for good
///   and its `read` never returns (the harness timed out on it in 4 of 80
///   runs of the test alone against rlockd on 2 loaded cores, in none of
///   80 against redis-server).
const RACING_TESTS: &[&str] = &["BRPOPLPUSH with multiple blocked clients"];

/// A unit whose harness makes no progress for this long gives up. Well
/// above the longest single test: HyperLogLog's encoding fuzzer takes
/// 43 s on either server here, and more on a busier machine.
const STALL_SECS: u32 = 180;
/// A unit still running after this long is killed, whatever it is doing.
const UNIT_LIMIT: Duration = Duration::from_secs(600);

fn manifest_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn known_failures_path() -> PathBuf {
    manifest_path("tests/redis-tcl/known-failures.txt")
}

/// The unpacked Tcl suite, fetching it first when the cache lacks it.
fn redis_tree() -> Result<PathBuf, String> {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("redis-tcl");
    let out = Command::new(manifest_path("tests/redis-tcl/fetch"))
        .arg(&cache)
        .output()
        .map_err(|e| format!("cannot run tests/redis-tcl/fetch: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "the Redis {REDIS_VERSION} Tcl suite could not be fetched:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(cache.join(format!("redis-{REDIS_VERSION}")))
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Side {
    Redis,
    Rlockd,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Redis => "redis-server",
            Side::Rlockd => "rlockd",
        }
    }
}

/// What one Tcl run of one unit reported.
#[derive(Default, Debug)]
struct UnitRun {
    /// How many times each test name passed (a loop may reuse a name).
    passed: BTreeMap<String, usize>,
    /// Failed tests, with the first line of why.
    failed: BTreeMap<String, String>,
    /// Failures that were Tcl errors rather than failed assertions; the
    /// rest of their `start_server` block did not run.
    exceptions: Vec<String>,
    skipped: usize,
    /// Why the run ended early (a timeout, the harness dying), if it did.
    cut_short: Option<String>,
    secs: f64,
}

impl UnitRun {
    fn passes(&self, name: &str, times: usize) -> bool {
        !self.failed.contains_key(name) && self.passed.get(name).is_some_and(|&n| n >= times)
    }
}

/// The harness's status lines, once colours are off (`TERM=dumb`).
const STATUS_PREFIXES: &[&str] = &[
    "[ok]: ",
    "[err]: ",
    "[skip]: ",
    "[ignore]: ",
    "[exception]: ",
];

fn is_status_line(line: &str) -> bool {
    STATUS_PREFIXES.iter().any(|p| line.starts_with(p)) || line.starts_with("Testing ")
}

/// Reads a harness log: `[ok]: NAME (N ms)`, `[err]: NAME in tests/U.tcl`
/// followed by its message lines, `[skip]`/`[ignore]` lines, and
/// `[exception]` when the harness itself died. Names are trimmed: a few of
/// Redis's end in a space, which the list file would not keep.
fn parse_log(log: &str, unit: &str) -> UnitRun {
    let mut run = UnitRun::default();
    let suffix = format!(" in tests/{unit}.tcl");
    let mut lines = log.lines().peekable();
    let mut finished = false;
    while let Some(line) = lines.next() {
        if line.trim() == "The End" {
            finished = true;
            break;
        }
        if let Some(rest) = line.strip_prefix("[ok]: ") {
            let name = rest.rsplit_once(" (").map_or(rest, |(n, _)| n);
            *run.passed.entry(name.trim().to_string()).or_default() += 1;
        } else if line.starts_with("[skip]: ") || line.starts_with("[ignore]: ") {
            run.skipped += 1;
        } else if let Some(rest) = line.strip_prefix("[err]: ") {
            let mut body = Vec::new();
            while let Some(next) = lines.next_if(|l| !is_status_line(l) && l.trim() != "The End") {
                body.push(next);
            }
            // A Tcl error (not a failed assertion) is followed by its stack,
            // whose first line has the whole message; the harness cuts the
            // first ten characters off the line before it (for an error
            // outside any test, the `[err]` line itself).
            let exception = body
                .iter()
                .any(|l| l.trim_start().starts_with("while executing"));
            let line_of = |i: usize| clip(body.get(i).map_or("", |l| l.trim()));
            match rest.strip_suffix(&suffix) {
                Some(name) => {
                    let name = name.trim();
                    let why = line_of(usize::from(exception));
                    if exception {
                        run.exceptions.push(format!("{name}: {why}"));
                    }
                    run.failed.insert(name.to_string(), why);
                }
                // An error outside any test: the rest of its block is lost.
                None => run.exceptions.push(line_of(0)),
            }
        } else if let Some(rest) = line.strip_prefix("[exception]: ") {
            // The line after it is the error alone.
            let why = clip(lines.next().unwrap_or(rest));
            run.exceptions.push(why.clone());
            run.cut_short = Some(format!("the harness stopped on {why}"));
        } else if line.starts_with("[TIMEOUT]") {
            run.cut_short = Some(format!("no progress for {STALL_SECS}s"));
        }
    }
    if !finished && run.cut_short.is_none() {
        run.cut_short = Some("the harness ended without finishing".into());
    }
    run
}

/// One short line of why: Redis's "unknown command" error quotes the
/// arguments, which only make the line long.
fn clip(s: &str) -> String {
    const MAX: usize = 120;
    let s = s
        .split(", with args beginning with")
        .next()
        .unwrap_or(s)
        .trim();
    match s.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// A server to run a unit against, stopped when dropped.
struct Running {
    _redis: Option<RedisServer>,
    rlockd: Option<std::process::Child>,
    /// rlockd's `dir`, for the `dump.rdb` that SAVE and DEBUG RELOAD write.
    _dir: Option<common::TempDir>,
    port: u16,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(child) = &mut self.rlockd {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn start(side: Side, redis_bin: &Path, worker: u16) -> Running {
    match side {
        Side::Redis => {
            let s = RedisServer::start(redis_bin);
            Running {
                port: s.port(),
                _redis: Some(s),
                rlockd: None,
                _dir: None,
            }
        }
        Side::Rlockd => {
            let dir = common::TempDir::new(&format!("worker{worker}"));
            // As refserver starts redis-server: DEBUG allowed.
            let args = [
                "--port",
                "0",
                "--dir",
                dir.arg(),
                "--enable-debug-command",
                "yes",
            ];
            let (child, port) = common::spawn_binary(&args);
            Running {
                _redis: None,
                rlockd: Some(child),
                _dir: Some(dir),
                port,
            }
        }
    }
}

/// Runs one unit against a fresh server of `side`, killing the harness
/// (and the test client it spawned) if it outlives `UNIT_LIMIT`. Each
/// worker gives its harness its own `baseport`: the harness listens for its
/// test client just below it, and two probing the same range race.
fn run_unit(job: &Job, side: Side, unit: &str, worker: u16) -> UnitRun {
    let (tree, logs, redis_bin) = (job.tree, job.logs, job.redis_bin);
    let server = start(side, redis_bin, worker);
    let log_path = logs.join(format!(
        "{}-{}{}.log",
        side.name(),
        unit.replace('/', "_"),
        job.attempt
    ));
    let log = File::create(&log_path).expect("log file");
    let started = Instant::now();
    let mut child = {
        use std::os::unix::process::CommandExt;
        Command::new("tclsh")
            .arg("tests/test_helper.tcl")
            .args(["--host", "127.0.0.1", "--port", &server.port.to_string()])
            .args(["--single", unit, "--clients", "1", "--durable"])
            .args(["--baseport", &(base_port() + 100 * worker).to_string()])
            .args(["--timeout", &STALL_SECS.to_string(), "--tags", DENIED_TAGS])
            .args(RACING_TESTS.iter().flat_map(|t| ["--skiptest", t]))
            .current_dir(tree)
            .env("TERM", "dumb")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("tclsh starts")
    };
    let timed_out = loop {
        if child.try_wait().expect("wait for tclsh").is_some() {
            break false;
        }
        if started.elapsed() > UNIT_LIMIT {
            // The harness forks a test client; end the whole group.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
            break true;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let text = String::from_utf8_lossy(&std::fs::read(&log_path).unwrap_or_default()).into_owned();
    let mut run = parse_log(&text, unit);
    if timed_out {
        run.cut_short = Some(format!("killed after {}s", UNIT_LIMIT.as_secs()));
    }
    run.secs = started.elapsed().as_secs_f64();
    run
}

/// known-failures.txt: `unit: test name`, optionally followed by
/// `  # reason`; `unit: *` skips a whole unit on both servers.
#[derive(Default)]
struct Known {
    tests: BTreeMap<(String, String), String>,
    skipped_units: BTreeMap<String, String>,
}

const REASON_SEP: &str = "  # ";

fn parse_known(text: &str) -> Known {
    let mut known = Known::default();
    for line in text.lines() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let (entry, reason) = line.rsplit_once(REASON_SEP).unwrap_or((line, ""));
        let Some((unit, name)) = entry.split_once(": ") else {
            panic!("known-failures.txt: not `unit: test name`: {line:?}");
        };
        let (unit, name, reason) = (unit.trim(), name.trim(), reason.trim().to_string());
        if name == "*" {
            known.skipped_units.insert(unit.to_string(), reason);
        } else {
            known
                .tests
                .insert((unit.to_string(), name.to_string()), reason);
        }
    }
    known
}

const KNOWN_HEADER: &str = "\
# Redis 7.0.15's Tcl tests (tests/redis_tcl.rs runs them) that pass on
# redis-server in external mode but not on rlockd: `unit: test name`, then
# after two spaces and `#` why: rlockd's error in the last --update run, or
# a reason written by hand starting `[kept]`, which --update keeps.
# `unit: *` skips a whole unit on both servers (give the reason).
# Regenerate after a fix: tests/redis-tcl/run --update
";

/// Marks a reason written by hand, which `--update` keeps.
const KEPT: &str = "[kept]";

fn render_known(known: &Known) -> String {
    let mut out = KNOWN_HEADER.to_string();
    let line = |unit: &str, name: &str, reason: &str| {
        if reason.is_empty() {
            format!("{unit}: {name}\n")
        } else {
            format!("{unit}: {name}{REASON_SEP}{reason}\n")
        }
    };
    for (unit, reason) in &known.skipped_units {
        out.push_str(&line(unit, "*", reason));
    }
    for ((unit, name), reason) in &known.tests {
        out.push_str(&line(unit, name, reason));
    }
    out
}

/// The tests of one unit that pass on redis-server but not on rlockd,
/// each with rlockd's reason.
fn differences(redis: &UnitRun, rlockd: &UnitRun) -> BTreeMap<String, String> {
    redis
        .passed
        .iter()
        .filter(|(name, _)| !redis.failed.contains_key(*name))
        .filter(|(name, times)| !rlockd.passes(name, **times))
        .map(|(name, _)| {
            let why = rlockd.failed.get(name).cloned().unwrap_or_else(|| {
                let cause = rlockd
                    .cut_short
                    .clone()
                    .or_else(|| rlockd.exceptions.first().cloned())
                    .unwrap_or_else(|| "an earlier error ended its block".into());
                clip(&format!("not reached: {cause}"))
            });
            (name.clone(), why)
        })
        .collect()
}

fn selected_units() -> Vec<String> {
    match std::env::var("RLOCKD_TCL_UNITS") {
        Ok(list) if !list.trim().is_empty() => list.split(',').map(|u| u.trim().into()).collect(),
        _ => UNITS.iter().map(|u| u.to_string()).collect(),
    }
}

/// What every unit run shares.
#[derive(Clone, Copy)]
struct Job<'a> {
    tree: &'a Path,
    logs: &'a Path,
    redis_bin: &'a Path,
    /// Added to the log file names ("" for the first run).
    attempt: &'a str,
}

/// Runs every (side, unit) of `queue`, `jobs()` at a time.
fn run_all(job: &Job, queue: Vec<(Side, String)>) -> BTreeMap<(String, Side), UnitRun> {
    let queue = Mutex::new(queue.into_iter());
    let results: Mutex<BTreeMap<_, _>> = Mutex::default();
    std::thread::scope(|s| {
        for worker in 0..jobs() {
            let (queue, results) = (&queue, &results);
            s.spawn(move || {
                loop {
                    let next = queue.lock().unwrap().next();
                    let Some((side, unit)) = next else { break };
                    let run = run_unit(job, side, &unit, worker);
                    results.lock().unwrap().insert((unit, side), run);
                }
            });
        }
    });
    results.into_inner().unwrap()
}

/// Where the workers' port ranges start: several checkouts on one machine
/// each need their own (`RLOCKD_TCL_BASEPORT`).
fn base_port() -> u16 {
    std::env::var("RLOCKD_TCL_BASEPORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(20_000)
}

fn jobs() -> u16 {
    std::env::var("RLOCKD_TCL_JOBS")
        .ok()
        .and_then(|j| j.parse().ok())
        .unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(2, |n| n.get().min(4) as u16)
        })
        .clamp(1, 50)
}

fn counts(run: &UnitRun) -> String {
    let ok: usize = run.passed.values().sum();
    format!(
        "{ok:>4} ok {:>3} err {:>3} exc {:>3} skip {:>5.1}s{}",
        run.failed.len(),
        run.exceptions.len(),
        run.skipped,
        run.secs,
        if run.cut_short.is_some() { " CUT" } else { "" }
    )
}

#[test]
fn redis_tcl_suite() {
    let started = Instant::now();
    let Some(redis_bin) = refserver::redis_server_path(TEST) else {
        return;
    };
    if refserver::find_tool("tclsh", "TCLSH").is_none() {
        skip_unless_required(
            TEST,
            "`tclsh` not found (apt-get install tcl)",
            refserver::REQUIRE_ENV,
        );
        return;
    }
    let tree = match redis_tree() {
        Ok(t) => t,
        Err(e) => {
            skip_unless_required(TEST, &e, refserver::REQUIRE_ENV);
            return;
        }
    };
    let fetched = started.elapsed().as_secs_f64();
    let logs = Path::new(env!("CARGO_TARGET_TMPDIR")).join("redis-tcl/logs");
    std::fs::create_dir_all(&logs).expect("log dir");

    let known_text = std::fs::read_to_string(known_failures_path()).unwrap_or_default();
    let known = parse_known(&known_text);
    let units = selected_units();
    for unit in &units {
        assert!(
            tree.join(format!("tests/{unit}.tcl")).is_file(),
            "no such Tcl unit: {unit}"
        );
    }
    let queue: Vec<(Side, String)> = units
        .iter()
        .filter(|u| !known.skipped_units.contains_key(*u))
        .flat_map(|u| [(Side::Redis, u.clone()), (Side::Rlockd, u.clone())])
        .collect();
    let job = Job {
        tree: &tree,
        logs: &logs,
        redis_bin: &redis_bin,
        attempt: "",
    };
    let results = run_all(&job, queue);

    let mut report = format!(
        "Redis {REDIS_VERSION} Tcl suite (fetch/unpack {fetched:.1}s), tags `{DENIED_TAGS}`, logs in {}\n",
        logs.display()
    );
    let mut failing: BTreeMap<(String, String), String> = BTreeMap::new();
    for unit in &units {
        if let Some(reason) = known.skipped_units.get(unit) {
            report.push_str(&format!("{unit:<26} skipped: {reason}\n"));
            continue;
        }
        let redis = &results[&(unit.clone(), Side::Redis)];
        let rlockd = &results[&(unit.clone(), Side::Rlockd)];
        let diff = differences(redis, rlockd);
        report.push_str(&format!(
            "{unit:<26} redis-server {} | rlockd {} | {} differ\n",
            counts(redis),
            counts(rlockd),
            diff.len()
        ));
        for (name, why) in &redis.failed {
            report.push_str(&format!("    redis-server itself fails {name:?}: {why}\n"));
        }
        if let Some(cut) = &redis.cut_short {
            report.push_str(&format!("    redis-server's run was cut short: {cut}\n"));
        }
        for e in &rlockd.exceptions {
            report.push_str(&format!("    rlockd exception: {e}\n"));
        }
        failing.extend(diff.into_iter().map(|(n, w)| ((unit.clone(), n), w)));
    }

    let ran: BTreeSet<&String> = units.iter().collect();
    let regressions: Vec<_> = failing
        .iter()
        .filter(|(k, _)| !known.tests.contains_key(*k))
        .collect();
    let now_passing: Vec<_> = known
        .tests
        .keys()
        .filter(|k| ran.contains(&k.0) && !failing.contains_key(*k))
        .collect();
    report.push_str(&format!(
        "{} tests differ from redis-server ({} listed in known-failures.txt); {:.0}s in all\n",
        failing.len(),
        known.tests.len(),
        started.elapsed().as_secs_f64()
    ));
    for (unit, name) in &now_passing {
        report.push_str(&format!(
            "    now passes (or redis-server no longer passes it), still listed: {unit}: {name}\n"
        ));
    }

    if env_flag("RLOCKD_TCL_UPDATE") {
        let mut updated = Known {
            skipped_units: known.skipped_units.clone(),
            tests: known
                .tests
                .iter()
                .filter(|(k, _)| !ran.contains(&k.0))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        };
        for (key, why) in failing {
            let reason = known
                .tests
                .get(&key)
                .filter(|r| r.starts_with(KEPT))
                .cloned();
            updated.tests.insert(key, reason.unwrap_or(why));
        }
        std::fs::write(known_failures_path(), render_known(&updated)).expect("write list");
        loud(&report);
        loud("known-failures.txt rewritten from this run");
        return;
    }

    // Timing-sensitive tests can fail on a busy machine: a regression
    // counts only if it fails again in a second run of its unit.
    let retry_units: BTreeSet<String> = regressions.iter().map(|((u, _), _)| u.clone()).collect();
    let retried = run_all(
        &Job {
            attempt: ".retry",
            ..job
        },
        retry_units.into_iter().map(|u| (Side::Rlockd, u)).collect(),
    );
    let regressions: Vec<_> = regressions
        .into_iter()
        .filter(|((unit, name), _)| {
            let times = results[&(unit.clone(), Side::Redis)].passed[name];
            let again = &retried[&(unit.clone(), Side::Rlockd)];
            let flaky = again.passes(name, times);
            if flaky {
                report.push_str(&format!("    FLAKY (passed when retried) {unit}: {name}\n"));
            }
            !flaky
        })
        .collect();
    for ((unit, name), why) in &regressions {
        report.push_str(&format!("    REGRESSION {unit}: {name}  # {why}\n"));
    }
    loud(&report);
    // Named here too: CI's log may keep only the panic's last lines.
    let named: Vec<String> = regressions
        .iter()
        .map(|((unit, name), why)| format!("{unit}: {name}  # {why}"))
        .collect();
    assert!(
        regressions.is_empty(),
        "{} Tcl tests pass on redis-server but fail on rlockd and are not in \
         tests/redis-tcl/known-failures.txt:\n{}",
        regressions.len(),
        named.join("\n")
    );
}

/// The log reader on a log shaped as the harness writes one: passes (one
/// name twice), a failed assertion, a Tcl error inside a test and one
/// outside any test, skips, and a run that never reached "The End".
#[test]
fn harness_log_is_read() {
    let log = "\
Testing unit/type/demo
[ok]: Counter goes up (1 ms)
[ok]: Counter goes up (0 ms)
[ok]: Name with a trailing space  (2 ms)
[err]: Values match in tests/unit/type/demo.tcl
Expected '2' to be equal to '3' (context: type eval line 3)
[err]: Command exists in tests/unit/type/demo.tcl
n command 'zzz', with args beginning with: 'k'
ERR unknown command 'zzz', with args beginning with: 'k'
    while executing
\"r zzz k\"
[skip]: Not selected
[ignore]: Needs replication: Tag: needs:repl denied
[err]: n option or number of arguments for CONFIG SET - 'knob'
ERR Unknown option or number of arguments for CONFIG SET - 'knob'
    while executing
\"r config set knob 1\"
";
    let died =
        "[exception]: Executing test client: ERR no knob.\nERR no knob\n    while executing\n";
    assert_eq!(
        parse_log(died, "unit/type/demo").cut_short.as_deref(),
        Some("the harness stopped on ERR no knob")
    );
    let run = parse_log(log, "unit/type/demo");
    assert_eq!(run.passed["Counter goes up"], 2);
    assert!(run.passes("Name with a trailing space", 1));
    assert!(!run.passes("Counter goes up", 3));
    assert_eq!(
        run.failed["Values match"],
        "Expected '2' to be equal to '3' (context: type eval line 3)"
    );
    assert_eq!(run.failed["Command exists"], "ERR unknown command 'zzz'");
    assert_eq!(run.failed.len(), 2);
    assert_eq!(
        run.exceptions,
        [
            "Command exists: ERR unknown command 'zzz'",
            "ERR Unknown option or number of arguments for CONFIG SET - 'knob'"
        ]
    );
    assert_eq!(run.skipped, 2);
    assert_eq!(
        run.cut_short.as_deref(),
        Some("the harness ended without finishing")
    );
    assert!(
        parse_log(&format!("{log}\n   The End\n"), "unit/type/demo")
            .cut_short
            .is_none()
    );
}

/// known-failures.txt lines, reasons and whole-unit skips, read back as
/// they were written.
#[test]
fn known_failures_round_trip() {
    let text = "# header\n\
                unit/a: *  # hangs in BLPOP\n\
                unit/b: Test (issue #1345)  # ERR unknown command 'x'\n\
                unit/b: No reason\n";
    let known = parse_known(text);
    assert_eq!(known.skipped_units["unit/a"], "hangs in BLPOP");
    assert_eq!(
        known.tests[&("unit/b".into(), "Test (issue #1345)".into())],
        "ERR unknown command 'x'"
    );
    assert_eq!(known.tests[&("unit/b".into(), "No reason".into())], "");
    let again = parse_known(&render_known(&known));
    assert_eq!(again.tests, known.tests);
    assert_eq!(again.skipped_units, known.skipped_units);
}
