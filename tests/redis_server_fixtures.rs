//! rlockd where `redis-server` is expected: started by that name (a
//! symlink, as a package or a test's PATH would provide it) it answers
//! `--version` as Redis 7.0.15 does, and tools that start redis-server
//! themselves run it unchanged: go-redsync's tempredis fixture, go-redsync's
//! own test suite and pytest-redis's fixtures, each also run against the
//! real redis-server to show the test tells the two apart. Skips a tool that is missing unless
//! `RLOCKD_REQUIRE_CLIENTS=1` (the real redis-server: `RLOCKD_REQUIRE_REDIS=1`).

mod refserver;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use refserver::{TempDir, find_tool};

const RLOCKD: &str = env!("CARGO_BIN_EXE_rlockd");
const REQUIRE_CLIENTS_ENV: &str = "RLOCKD_REQUIRE_CLIENTS";
/// Which server a fixture's own test must find it started.
const EXPECTS_ENV: &str = "RLOCKD_FIXTURE_EXPECTS";

fn skip(test: &str, reason: &str) {
    refserver::skip_unless_required(test, reason, REQUIRE_CLIENTS_ENV);
}

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// A directory holding `redis-server`, a symlink to this build's rlockd.
fn rlockd_as_redis_server() -> TempDir {
    let dir = TempDir::new("fixtures");
    std::os::unix::fs::symlink(RLOCKD, dir.path("redis-server")).unwrap();
    dir
}

/// PATH with `dir` first.
fn path_with(dir: &Path) -> OsString {
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(dir.to_path_buf()).chain(std::env::split_paths(&rest)))
        .unwrap()
}

fn stdout_of(command: &mut Command) -> String {
    let out = command.stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "{command:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The first `v=N.N.N` of a `redis-server --version` line, as tools read it.
fn version_field(line: &str) -> &str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("v="))
        .unwrap_or_default()
}

#[test]
fn version_as_redis_server() {
    let dir = rlockd_as_redis_server();
    let by_name = stdout_of(Command::new(dir.path("redis-server")).arg("--version"));
    let rlockd_version = format!("rlockd={}", env!("CARGO_PKG_VERSION"));
    assert!(by_name.starts_with("Redis server v=7.0.15 "), "{by_name}");
    assert!(by_name.ends_with(&rlockd_version), "{by_name}");
    assert_eq!(
        stdout_of(Command::new(dir.path("redis-server")).arg("-v")),
        by_name
    );
    assert_eq!(
        stdout_of(Command::new(RLOCKD).args(["--as-redis-server", "--version"])),
        by_name
    );
    assert_eq!(
        stdout_of(Command::new(RLOCKD).arg("--version")),
        format!("rlockd {}", env!("CARGO_PKG_VERSION"))
    );
    if let Some(redis) = refserver::redis_server_path("redis_server_fixtures") {
        let theirs = stdout_of(Command::new(redis).arg("--version"));
        assert_eq!(version_field(&by_name), version_field(&theirs));
    }
}

/// Runs `command` for rlockd (`redis-server` on PATH is rlockd) and for the
/// real redis-server (found on PATH); the fixture's test checks which one
/// it started.
fn against_both(test: &str, mut command: impl FnMut(&Path, &str) -> Command) {
    let dir = rlockd_as_redis_server();
    let mut targets = vec![(dir.path("redis-server"), "rlockd")];
    if let Some(redis) = refserver::redis_server_path(test) {
        targets.push((redis, "redis"));
    }
    for (bin, name) in targets {
        let dir_of = bin.parent().unwrap().to_path_buf();
        let out = command(&bin, name)
            .env("PATH", path_with(&dir_of))
            .env(EXPECTS_ENV, name)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{test} against {name}:\n{text}");
        assert!(
            text.contains("PASS") || text.contains(" passed"),
            "{test} against {name} ran nothing:\n{text}"
        );
    }
}

/// go-redsync's test fixture (tempredis: `redis-server -` with its config
/// on standard input, a unix socket, "Ready to accept connections"),
/// three servers and a redsync mutex over them.
#[test]
fn go_redsync_tempredis_fixture() {
    let test = "go_redsync_tempredis_fixture";
    let Some(go) = find_tool("go", "RLOCKD_GO") else {
        return skip(test, "no `go` on PATH (or $RLOCKD_GO)");
    };
    against_both(test, |_, _| {
        let mut command = Command::new(&go);
        command
            .args(["test", "-count=1", "-v", "-timeout=120s"])
            .args(["-run", "^TestTempredisFixture$", "./..."])
            .current_dir(clients_dir().join("go"));
        command
    });
}

/// go-redsync's release whose whole module builds from what the Go proxy
/// serves here: from v4.16 on it has a valkey driver whose
/// `valkey-go/valkeycompat` module the proxy refuses. Its test files are
/// those of v4.18.1 (which `tests/clients/go` pins) but for that driver's
/// compile-time checks.
const REDSYNC_MODULE: &str = "github.com/go-redsync/redsync/v4@v4.15.0";

/// Servers the suite's `TestMain` starts before any test: six driver
/// groups (redigo, go-redis v6 to v9, rueidis) of eight, on ports 51200-51247.
const REDSYNC_SUITE_SERVERS: usize = 48;

/// The pinned go-redsync module's source as the Go module cache holds it
/// (read-only), downloaded through the Go proxy the first time.
fn redsync_source(go: &Path) -> PathBuf {
    let out = Command::new(go)
        .args(["mod", "download", "-json", REDSYNC_MODULE])
        .env("GOWORK", "off")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let json = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "go mod download {REDSYNC_MODULE}: {json}{out:?}"
    );
    let dir = json
        .lines()
        .find_map(|l| l.trim().strip_prefix("\"Dir\": \""))
        .and_then(|rest| rest.strip_suffix("\","))
        .unwrap_or_else(|| panic!("no Dir in go mod download's answer: {json}"));
    PathBuf::from(dir)
}

/// A writable copy of `source` at `dest` (a fresh one: a redis-server
/// leaves its `dump.rdb` in the package's folder, which the next run's
/// servers would load).
fn fresh_copy(source: &Path, dest: &Path) {
    let _ = std::fs::remove_dir_all(dest);
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    stdout_of(Command::new("cp").arg("-R").arg(source).arg(dest));
    stdout_of(Command::new("chmod").args(["-R", "u+w"]).arg(dest));
}

/// A `redis-server` script in `dir` that notes each start in `starts`, then
/// runs `program` with `first`, the suite's arguments and `last`.
fn counting_redis_server(dir: &Path, starts: &Path, program: &str, first: &str, last: &str) {
    let quoted = |p: &str| format!("'{}'", p.replace('\'', r"'\''"));
    let script = format!(
        "#!/bin/sh\necho $$ >> {}\nexec {} {first} \"$@\" {last}\n",
        quoted(&starts.to_string_lossy()),
        quoted(program)
    );
    let path = dir.join("redis-server");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

/// `go test ./...` in `module`, in a network namespace of its own where the
/// system grants one (root): the suite's servers listen on fixed ports
/// (51200-51247), inside the range the kernel hands outgoing connections,
/// so on a busy machine one may be taken for a moment. Its clients reach
/// the servers over unix sockets, which the namespace leaves as they are.
/// The module's dependencies are downloaded first, since the namespace
/// has no network.
fn go_test_isolated(go: &Path, module: &Path) -> Command {
    stdout_of(
        Command::new(go)
            .args(["mod", "download"])
            .current_dir(module)
            .env("GOWORK", "off"),
    );
    let isolated = Command::new("unshare")
        .args(["--net", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let mut command = if isolated {
        let mut command = Command::new("unshare");
        command.args([
            "--net",
            "sh",
            "-c",
            "ip link set lo up && exec \"$@\"",
            "sh",
        ]);
        command.arg(go);
        command
    } else {
        Command::new(go)
    };
    command
        .args(["test", "-count=1", "-timeout=240s", "./..."])
        .current_dir(module)
        .env("GOWORK", "off")
        .env("GOPROXY", "off")
        .stdin(Stdio::null());
    command
}

/// go-redsync's own test suite, unmodified (`go test ./...` in its module):
/// its `TestMain` starts 48 servers through tempredis (`redis-server -`,
/// the config on standard input, a unix socket that every driver group
/// connects over) and runs the mutex tests for six client libraries. Run
/// against rlockd standing in for `redis-server` on PATH, then the real one.
#[test]
fn go_redsync_own_suite() {
    let test = "go_redsync_own_suite";
    let Some(go) = find_tool("go", "RLOCKD_GO") else {
        return skip(test, "no `go` on PATH (or $RLOCKD_GO)");
    };
    let source = redsync_source(&go);
    let mut targets = vec![("rlockd", RLOCKD.to_string(), "--as-redis-server", "")];
    if let Some(redis) = refserver::redis_server_path(test) {
        // The suite's fixed ports would otherwise listen on every
        // interface (Redis's default bind); rlockd's default is loopback.
        let redis = redis.display().to_string();
        targets.push(("redis", redis, "", "--bind 127.0.0.1"));
    }
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("go-redsync");
    for (name, program, first, last) in targets {
        let module = work.join(name).join("module");
        fresh_copy(&source, &module);
        let bin = work.join(name).join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let starts = work.join(name).join("starts");
        let _ = std::fs::remove_file(&starts);
        counting_redis_server(&bin, &starts, &program, first, last);
        let out = go_test_isolated(&go, &module)
            .env("PATH", path_with(&bin))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{test} against {name}:\n{text}");
        let root_package = REDSYNC_MODULE.split('@').next().unwrap();
        assert!(
            text.lines().any(|l| {
                let mut words = l.split_whitespace();
                words.next() == Some("ok") && words.next() == Some(root_package)
            }),
            "{test} against {name}: no `ok` for {root_package}:\n{text}"
        );
        let started = std::fs::read_to_string(&starts).unwrap_or_default();
        assert!(
            started.lines().count() >= REDSYNC_SUITE_SERVERS,
            "{test} against {name}: the suite started {} servers through {}, not {REDSYNC_SUITE_SERVERS}:\n{text}",
            started.lines().count(),
            bin.display()
        );
    }
}

/// pytest-redis's `redis_proc` and `redisdb` fixtures, given the server as
/// `--redis-exec`.
#[test]
fn pytest_redis_fixtures() {
    let test = "pytest_redis_fixtures";
    let Some(python) = refserver::project_python() else {
        return skip(test, "no Python (set $RLOCKD_PYTHON or create .venv)");
    };
    let has_plugin = Command::new(&python)
        .args(["-c", "import pytest_redis, redis"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_plugin {
        return skip(
            test,
            &format!(
                "{} lacks pytest-redis (tests/clients/requirements.txt)",
                python.display()
            ),
        );
    }
    let base = TempDir::new("fixtures");
    against_both(test, |bin, name| {
        let mut command = Command::new(&python);
        command
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .arg(clients_dir().join("pytest_redis_fixture.py"))
            .arg(format!("--redis-exec={}", bin.display()))
            // pytest-redis refuses a unix socket path past 107 bytes.
            .arg(format!("--basetemp={}", base.path(name).display()));
        command
    });
}
