//! rlockd where `redis-server` is expected: started by that name (a
//! symlink, as a package or a test's PATH would provide it) it answers
//! `--version` as Redis 7.0.15 does, and tools that start redis-server
//! themselves run it unchanged: go-redsync's tempredis fixture and
//! pytest-redis's fixtures, each also run against the real redis-server to
//! show the test tells the two apart. Skips a tool that is missing unless
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
