//! Blocking clients for tests that drive servers step by step: a
//! connection, a command that must succeed, one that must fail.

use redis::{Connection, Value};

pub fn connect(port: u16) -> Connection {
    redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_connection()
        .unwrap()
}

/// Runs `args`, failing the test if it errs.
pub fn q(con: &mut Connection, args: &[&str]) -> Value {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query(con)
        .unwrap_or_else(|e| panic!("{args:?} failed: {e}"))
}

/// The error `args` answers, as `CODE detail`; fails the test if it
/// succeeds.
pub fn q_err(con: &mut Connection, args: &[&str]) -> String {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    match c.query::<Value>(con) {
        Ok(v) => panic!("{args:?} should fail, got {v:?}"),
        Err(e) => format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or(""))
            .trim()
            .to_string(),
    }
}

/// A server process, killed when dropped (a failing test included), and
/// the directory it works in, if it has one of its own (removed after).
pub struct Running(pub std::process::Child, Option<super::TempDir>);

impl Running {
    pub fn new(child: std::process::Child) -> Running {
        Running(child, None)
    }

    /// Freezes the process as a stalled machine is (SIGSTOP), and returns
    /// only once every thread of it has stopped. kill(2) does not wait:
    /// it wakes one thread to take the stop, and the others run on until
    /// that one is scheduled (milliseconds to tens of them on a loaded
    /// machine: a replica "stopped" so still applied and acknowledged a
    /// write sent after the signal).
    pub fn stop(&self) {
        self.signal("-STOP");
        let pid = self.0.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !every_thread_stopped(pid) {
            assert!(
                std::time::Instant::now() < deadline,
                "process {pid} did not stop"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Resumes a stopped process (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, sig: &str) {
        let status = std::process::Command::new("kill")
            .args([sig, &self.0.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {sig}");
    }
}

/// Whether every thread of process `pid` is in the stopped state (`T` in
/// its `/proc` stat line, after the command name in parentheses).
fn every_thread_stopped(pid: u32) -> bool {
    let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    threads.flatten().all(|thread| {
        std::fs::read_to_string(thread.path().join("stat")).is_ok_and(|stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('T'))
        })
    })
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The `rlockd` binary on a free port with `extra` arguments, in a
/// directory of its own (a replica writes the snapshot of a full sync
/// there), and a connection to it.
pub fn rlockd(extra: &[&str]) -> (Running, Connection) {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = super::TempDir::new(&format!("rlockd-{n}"));
    let mut args = vec!["--port", "0", "--dir", dir.arg()];
    args.extend_from_slice(extra);
    let (child, port) = super::spawn_binary(&args);
    (Running(child, Some(dir)), connect(port))
}
