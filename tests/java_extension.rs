//! The Java package, as a newcomer meets it: the JUnit 5 extension
//! (`packages/java`) built around this build's rlockd binary and installed
//! with `mvn install` (its own tests run on the way) into a local Maven
//! repository under the target folder, then `mvn test` of `examples/java`
//! (Redisson's locks through the extension) resolving the extension from
//! that repository only, with no `$RLOCKD_BINARY`: the jar's own binary.
//! The example's session-wide server (`@RlockdSession`) leaves its process
//! id behind, and must be gone once Maven is done: the end of the run
//! stopped it.
//!
//! The jar carries the aarch64 binary too where it is built (`.ci/run`
//! cross-builds it; see `tests/cross_aarch64.rs`), and the extension's own
//! tests check that each carried binary is built for its platform.
//!
//! The repository is kept between runs, so Maven downloads Redisson, JUnit
//! and its plugins once; only the extension is removed before each install.
//! It needs `mvn`, `java` and, on the first run, Maven Central: without
//! them it prints `SKIP` (with the install command) and passes, unless
//! `RLOCKD_REQUIRE_CLIENTS=1` (as `.ci/run` sets, where it runs as a step
//! of its own after `cargo test --release`).

mod cross;
mod refserver;
mod steps;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use refserver::{find_tool, loud};
use steps::run;

const TEST: &str = "java_extension_example_suite";
const REQUIRE_CLIENTS_ENV: &str = "RLOCKD_REQUIRE_CLIENTS";
/// The extension's coordinates, as packages/java/pom.xml has them.
const GROUP_DIR: &str = "rlockd/rlockd-junit5";
/// Where the jar carries the binary for this platform.
const BUNDLED: &str = "native/linux-x86_64/rlockd";
/// And the cross-built one.
const BUNDLED_AARCH64: &str = "native/linux-aarch64/rlockd";
/// What a run without the aarch64 binary leaves untested.
const AARCH64_TEST: &str = "java_extension_carries_aarch64";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Surefire's closing count: `Tests run: N, Failures: F, Errors: E,
/// Skipped: S`, the last one Maven printed.
fn surefire_summary(output: &str) -> &str {
    output
        .lines()
        .rfind(|line| line.contains("Tests run: ") && !line.contains(" -- in "))
        .unwrap_or_else(|| panic!("no Surefire summary in:\n{output}"))
}

/// Asserts that the jar's `listing` (`jar tvf`) has `entry` of `binary`'s size.
fn assert_carries(listing: &str, entry: &str, binary: &Path) {
    let size = std::fs::metadata(binary).expect("the binary").len();
    let line = listing
        .lines()
        .find(|line| line.ends_with(entry))
        .unwrap_or_else(|| panic!("the jar has no {entry}:\n{listing}"));
    assert_eq!(
        line.split_whitespace().next(),
        Some(size.to_string().as_str()),
        "the jar's {entry} is {}",
        binary.display()
    );
}

fn assert_all_passed(suite: &str, output: &str) -> String {
    let summary = surefire_summary(output);
    let counts = &summary[summary.find("Tests run: ").unwrap()..];
    assert!(
        counts.ends_with("Failures: 0, Errors: 0, Skipped: 0")
            && !counts.starts_with("Tests run: 0,"),
        "every test of {suite} ran and passed: {counts}"
    );
    counts.to_string()
}

#[test]
fn java_extension_example_suite() {
    let tools = find_tool("mvn", "RLOCKD_MVN").zip(find_tool("java", "RLOCKD_JAVA"));
    let Some((mvn, _)) = tools else {
        refserver::skip_unless_required(
            TEST,
            "no mvn or java on PATH: apt-get install maven openjdk-17-jdk-headless",
            REQUIRE_CLIENTS_ENV,
        );
        return;
    };
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("java-extension");
    let local_repo = work.join("m2");
    let installed = local_repo.join(GROUP_DIR);
    let _ = std::fs::remove_dir_all(&installed);
    std::fs::create_dir_all(&work).expect("a work folder");
    let binary = Path::new(env!("CARGO_BIN_EXE_rlockd"));
    let aarch64 = cross::binary();
    if !aarch64.is_file() {
        refserver::skip_unless_required(
            AARCH64_TEST,
            &format!(
                "{}: the jar carries linux-x86_64 only ({})",
                cross::not_built(),
                cross::INSTALL
            ),
            REQUIRE_CLIENTS_ENV,
        );
    }
    let maven = |project: &str, goal: &str| {
        let mut command = Command::new(&mvn);
        command
            .args(["-B", "--no-transfer-progress", goal])
            .arg(format!("-Dmaven.repo.local={}", local_repo.display()))
            .current_dir(repo().join(project))
            .env_remove("RLOCKD_BINARY");
        command
    };

    let started = Instant::now();
    let mut install = maven("packages/java", "install");
    install
        .arg(format!(
            "-Drlockd.binary.dir={}",
            binary.parent().expect("the binary's folder").display()
        ))
        .arg(format!(
            "-Drlockd.aarch64.binary.dir={}",
            aarch64.parent().expect("the binary's folder").display()
        ));
    let step = run(&mut install, &work.join("install.log"));
    if !step.status.success() && step.output.contains("Could not transfer") {
        refserver::skip_unless_required(
            TEST,
            &format!(
                "Maven cannot download the extension's dependencies (no Maven Central?): {}",
                step.output.trim()
            ),
            REQUIRE_CLIENTS_ENV,
        );
        return;
    }
    let own = assert_all_passed(
        "packages/java",
        &step.expect_success("mvn install of packages/java"),
    );
    loud(&format!(
        "{TEST}: packages/java built, tested ({own}) and installed in {:.1}s",
        started.elapsed().as_secs_f64()
    ));

    // The jar carries this very binary, and the aarch64 one when built.
    let version = env!("CARGO_PKG_VERSION");
    let jar = installed.join(format!("{version}/rlockd-junit5-{version}.jar"));
    let listing = run(
        Command::new("jar").arg("tvf").arg(&jar),
        &work.join("jar.log"),
    )
    .expect_success("jar tvf");
    assert_carries(&listing, BUNDLED, binary);
    if aarch64.is_file() {
        assert_carries(&listing, BUNDLED_AARCH64, &aarch64);
    } else {
        assert!(
            !listing.contains(BUNDLED_AARCH64),
            "no aarch64 binary, none in the jar (one left in packages/java/target? mvn clean):\n{listing}"
        );
    }

    let session_pid = repo().join("examples/java/target/rlockd-session.pid");
    let _ = std::fs::remove_file(&session_pid);
    let started = Instant::now();
    let output = run(
        &mut maven("examples/java", "test"),
        &work.join("example.log"),
    )
    .expect_success("mvn test of examples/java");
    loud(&format!(
        "{TEST}: examples/java: {} ({:.1}s)",
        assert_all_passed("examples/java", &output),
        started.elapsed().as_secs_f64()
    ));
    let pid = std::fs::read_to_string(&session_pid).expect("the session server's process id");
    let pid: u32 = pid.trim().parse().expect("a process id");
    assert!(
        !Path::new("/proc").join(pid.to_string()).exists(),
        "the session's rlockd (pid {pid}) was stopped at the end of the run"
    );
}
