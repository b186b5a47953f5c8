//! Counting a server's instructions under `valgrind --tool=callgrind`,
//! which counts every instruction of every thread the same way on a quiet
//! or a busy machine.

use std::io;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::{Conn, free_port};

/// A workload a server runs under callgrind, `n` times over.
pub type Workload<'a> = &'a dyn Fn(SocketAddr, usize) -> io::Result<()>;

/// Whether valgrind can be run; if not, says so.
pub fn available() -> bool {
    let found = Command::new("valgrind").arg("--version").output().is_ok();
    if !found {
        println!("valgrind not available (Debian: apt-get install valgrind): nothing measured");
    }
    found
}

/// Instructions the server ran, start to shut-down, running `workload`
/// with `pairs` as its count.
pub fn count(program: &str, args: &[&str], workload: Workload<'_>, pairs: usize) -> u64 {
    count_within(program, args, workload, pairs, None)
}

/// `count`, or with `function` (a callgrind `--toggle-collect` pattern)
/// only the instructions run inside that function: what the server does
/// in the background (Redis's cron runs ten times a second of a run's
/// wall time, which valgrind stretches by how busy the machine is) is
/// left out.
pub fn count_within(
    program: &str,
    args: &[&str],
    workload: Workload<'_>,
    pairs: usize,
    function: Option<&str>,
) -> u64 {
    // One file a process: redis-server's forks (a replica's snapshot)
    // must not write over the server's.
    let stem = format!("rlockd-callgrind-{}.out", free_port());
    let out = std::env::temp_dir().join(&stem);
    let port = free_port();
    let mut child = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}.%p", out.display()))
        .args(function.map(|f| format!("--toggle-collect={f}")))
        .arg(program)
        .args(args)
        .args(["--port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("valgrind starts");
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(60);
    while Conn::open(addr).and_then(|mut c| c.cmd(&["PING"])).is_err() {
        assert!(Instant::now() < deadline, "{program} did not start");
        thread::sleep(Duration::from_millis(100));
    }
    workload(addr, pairs).expect("the workload runs");
    let _ = Conn::open(addr).and_then(|mut c| c.send(&["SHUTDOWN", "NOSAVE"]));
    child.wait().expect("the server exits");
    let text = std::fs::read_to_string(format!("{}.{}", out.display(), child.id()))
        .expect("callgrind's output");
    for file in std::fs::read_dir(std::env::temp_dir())
        .into_iter()
        .flatten()
        .flatten()
    {
        if file.file_name().to_string_lossy().starts_with(&stem) {
            let _ = std::fs::remove_file(file.path());
        }
    }
    text.lines()
        .find_map(|l| l.strip_prefix("summary:").or(l.strip_prefix("totals:")))
        .and_then(|n| n.trim().parse().ok())
        .expect("a total in callgrind's output")
}
