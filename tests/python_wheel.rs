//! The Python package, as a newcomer meets it: the wheel
//! (`packages/python`) built around this build's rlockd binary, installed
//! into a clean venv beside the pinned packages of
//! `examples/python/requirements.txt` only, then `pytest examples/python`
//! (redis-py's `Lock` and python-redis-lock through the plugin's fixtures),
//! and the plugin's own tests, `pytest packages/python/tests`.
//!
//! It needs `python3` with `venv` and a reachable package index: without
//! them it prints `SKIP` (with the install command) and passes, unless
//! `RLOCKD_REQUIRE_CLIENTS=1` (as `.ci/run` sets, where it runs as a step
//! of its own after `cargo test --release`).

mod refserver;
mod steps;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use refserver::{find_tool, loud};
use steps::run;

const TEST: &str = "python_wheel_example_suite";
const REQUIRE_CLIENTS_ENV: &str = "RLOCKD_REQUIRE_CLIENTS";
/// The Python to make the venv from (else `python3` on PATH).
const PYTHON_ENV: &str = "RLOCKD_PYTHON";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn skip(reason: &str) {
    refserver::skip_unless_required(TEST, reason, REQUIRE_CLIENTS_ENV);
}

/// The only file in `dir` (the wheel pip built).
fn only_file(dir: &Path) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the wheel folder")
        .map(|e| e.expect("a folder entry").path())
        .collect();
    assert_eq!(found.len(), 1, "one wheel in {}: {found:?}", dir.display());
    found.into_iter().next().unwrap()
}

#[test]
fn python_wheel_example_suite() {
    let Some(python) = find_tool("python3", PYTHON_ENV) else {
        skip("no python3 on PATH (or $RLOCKD_PYTHON): apt-get install python3 python3-venv");
        return;
    };
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-wheel");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).expect("a work folder");
    let venv = work.join("venv");
    let venv_python = venv.join("bin/python");
    let made = run(
        Command::new(&python).arg("-m").arg("venv").arg(&venv),
        &work.join("venv.log"),
    );
    if !made.status.success() {
        skip(&format!(
            "{} cannot make a venv (apt-get install python3-venv): {}",
            python.display(),
            made.output.trim()
        ));
        return;
    }
    let pip = |args: &[&str]| {
        let mut command = Command::new(&venv_python);
        command
            .args(["-m", "pip", "--disable-pip-version-check"])
            .args(args)
            .current_dir(repo());
        command
    };

    // The only step that needs the package index first: if it cannot be
    // reached, there is nothing to test with.
    let started = Instant::now();
    let requirements = run(
        &mut pip(&["install", "-q", "-r", "examples/python/requirements.txt"]),
        &work.join("requirements.log"),
    );
    if !requirements.status.success() {
        skip(&format!(
            "pip cannot install examples/python/requirements.txt (no package index?): {}",
            requirements.output.trim()
        ));
        return;
    }
    let dist = work.join("dist");
    let dist_arg = dist.to_str().expect("a UTF-8 path");
    let mut build = pip(&[
        "wheel",
        "-q",
        "--no-deps",
        "-w",
        dist_arg,
        "packages/python",
    ]);
    build.env("RLOCKD_WHEEL_BINARY", env!("CARGO_BIN_EXE_rlockd"));
    run(&mut build, &work.join("wheel.log")).expect_success("pip wheel packages/python");
    let wheel = only_file(&dist);
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!("rlockd-{}-py3-none-", env!("CARGO_PKG_VERSION"))),
        "the wheel is named for the binary's version and no Python ABI: {name}"
    );
    // Its dependencies are in the venv already; nothing else comes in.
    let wheel_arg = wheel.to_str().expect("a UTF-8 path");
    run(
        &mut pip(&["install", "-q", "--no-index", wheel_arg]),
        &work.join("install.log"),
    )
    .expect_success("pip install the wheel");
    let prepared = started.elapsed();

    // The suites find the binary the wheel installed, nothing of the
    // developer's: no $RLOCKD_BINARY, no $REDIS_URL. The examples are what a
    // user writes; the plugin's own tests check its errors and clean-up.
    for suite in ["examples/python", "packages/python/tests"] {
        let mut pytest = Command::new(&venv_python);
        pytest
            .args(["-m", "pytest", "-p", "no:cacheprovider", suite])
            .current_dir(repo())
            .env_remove("RLOCKD_BINARY")
            .env_remove("REDIS_URL")
            .env_remove("PYTHONPATH");
        let started = Instant::now();
        let log = work.join(format!("pytest-{}.log", suite.replace('/', "-")));
        let output = run(&mut pytest, &log).expect_success(&format!("pytest {suite}"));
        let summary = output.lines().last().unwrap_or_default();
        assert!(
            summary.contains(" passed") && !summary.contains("skipped"),
            "every test of {suite} ran: {summary}"
        );
        loud(&format!(
            "{TEST}: pytest {suite}: {summary} ({:.1}s)",
            started.elapsed().as_secs_f64()
        ));
    }
    loud(&format!(
        "{TEST}: the wheel was built and installed in {:.1}s",
        prepared.as_secs_f64()
    ));
}
