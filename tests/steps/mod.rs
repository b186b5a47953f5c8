//! Running a package build's steps (pip, Maven) to their end from a test:
//! each step's output goes to a log file (so that a chatty tool cannot fill
//! a pipe) and a step that hangs is killed.
#![allow(dead_code)]

use std::fs::File;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long one step may take before it is killed: the first run's
/// downloads are the slow part.
pub const STEP_LIMIT: Duration = Duration::from_secs(300);

/// A finished step: how it ended and what it printed.
pub struct Step {
    pub status: ExitStatus,
    pub output: String,
}

impl Step {
    pub fn expect_success(self, what: &str) -> String {
        assert!(
            self.status.success(),
            "{what}: {}\n{}",
            self.status,
            self.output
        );
        self.output
    }
}

/// Runs `command` to its end, its output in `log`, killing it after
/// `STEP_LIMIT`.
pub fn run(command: &mut Command, log: &Path) -> Step {
    let out = File::create(log).expect("a log file");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(out.try_clone().expect("a second handle"))
        .stderr(out)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {:?}: {e}", command.get_program()));
    let deadline = Instant::now() + STEP_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waitpid") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command:?} ran past {STEP_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = std::fs::read_to_string(log).unwrap_or_default();
    Step { status, output }
}
