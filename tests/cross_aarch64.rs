//! The aarch64 rlockd that the Java extension's jar carries, at work: the
//! cross-built binary (its C parts too: Lua, ring, mimalloc) started under
//! qemu-user on this x86_64 machine, then PING over TCP, SET/GET,
//! Redisson's lock script (which rlockd runs natively) and a script of its
//! own through the Lua interpreter, and a clean SHUTDOWN.
//!
//! It needs the binary (`cross::BUILD`, as `.ci/run` runs before the
//! tests), `qemu-aarch64` and Debian's aarch64 libc: without them it
//! prints `SKIP` (with the install line) and passes, unless
//! `RLOCKD_REQUIRE_CLIENTS=1` (as `.ci/run` sets).

mod common;
mod cross;
mod refserver;

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use redis::Value;
use refserver::find_tool;

const TEST: &str = "aarch64_binary_under_qemu";
const REQUIRE_CLIENTS_ENV: &str = "RLOCKD_REQUIRE_CLIENTS";
/// qemu-user's emulator (else `qemu-aarch64` on PATH).
const QEMU_ENV: &str = "RLOCKD_QEMU_AARCH64";
const LOCK_SCRIPT: &str = include_str!("../src/command/scripting/lock_scripts/redisson_lock.lua");

fn skip(reason: &str) {
    refserver::skip_unless_required(
        TEST,
        &format!("{reason}: {}", cross::INSTALL),
        REQUIRE_CLIENTS_ENV,
    );
}

/// The emulated server, killed if the test ends before its SHUTDOWN did.
struct Emulated(Child);

impl Drop for Emulated {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// ELF's `e_machine` of the file at `path`.
fn elf_machine(path: &Path) -> u16 {
    let bytes = std::fs::read(path).expect("the binary reads");
    assert_eq!(&bytes[..4], b"\x7fELF", "{} is an ELF file", path.display());
    u16::from_le_bytes([bytes[18], bytes[19]])
}

#[test]
fn aarch64_binary_under_qemu() {
    let Some(qemu) = find_tool("qemu-aarch64", QEMU_ENV) else {
        skip("no qemu-aarch64 on PATH (or $RLOCKD_QEMU_AARCH64)");
        return;
    };
    if !Path::new(cross::SYSROOT)
        .join("lib/ld-linux-aarch64.so.1")
        .is_file()
    {
        skip(&format!("no aarch64 libc in {}", cross::SYSROOT));
        return;
    }
    let binary = cross::binary();
    if !binary.is_file() {
        skip(&cross::not_built());
        return;
    }
    assert_eq!(
        elf_machine(&binary),
        cross::ELF_MACHINE,
        "{} is built for aarch64",
        binary.display()
    );

    let started = Instant::now();
    let (child, port, _) = common::spawn_logging(
        Command::new(&qemu)
            .arg("-L")
            .arg(cross::SYSROOT)
            .arg(&binary)
            .args(["--port", "0", "--save", ""]),
        None,
    );
    let mut server = Emulated(child);
    refserver::loud(&format!(
        "{TEST}: ready under qemu in {:.1}s",
        started.elapsed().as_secs_f64()
    ));

    let mut con = redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .unwrap()
        .get_connection_with_timeout(common::WAIT)
        .expect("a client connects");
    con.set_read_timeout(Some(common::WAIT)).unwrap();
    let mut query = |args: &[&str]| -> Value {
        let mut command = redis::cmd(args[0]);
        command.arg(&args[1..]);
        command
            .query(&mut con)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
    };
    let ok = Value::Okay;
    let text = |s: &str| Value::BulkString(s.as_bytes().to_vec());

    assert_eq!(query(&["PING"]), Value::SimpleString("PONG".into()));
    assert_eq!(query(&["SET", "k", "v"]), ok);
    assert_eq!(query(&["GET", "k"]), text("v"));

    // Taken, taken again by its holder (re-entrant), refused to another
    // with the lease's time left, as Redisson reads it.
    fn lock(holder: &str) -> [&str; 6] {
        ["EVAL", LOCK_SCRIPT, "1", "lock", "30000", holder]
    }
    assert_eq!(query(&lock("c1:1")), Value::Nil);
    assert_eq!(query(&lock("c1:1")), Value::Nil);
    let Value::Int(left) = query(&lock("c2:1")) else {
        panic!("a refused lock answers its lease's time left");
    };
    assert!((1..=30000).contains(&left), "{left} ms left");
    assert_eq!(query(&["HGET", "lock", "c1:1"]), text("2"));

    // Not a script rlockd knows: the Lua interpreter runs it.
    let own = "local n = redis.call('INCRBY', KEYS[1], ARGV[1]) return {n, string.rep('ab', n)}";
    assert_eq!(
        query(&["EVAL", own, "1", "n", "3"]),
        Value::Array(vec![Value::Int(3), text("ababab")])
    );

    // SHUTDOWN closes the connection without a reply.
    let shutdown = redis::cmd("SHUTDOWN")
        .arg("NOSAVE")
        .query::<Value>(&mut con);
    assert!(shutdown.is_err(), "SHUTDOWN answered {shutdown:?}");
    let deadline = Instant::now() + common::WAIT;
    let status = loop {
        if let Some(status) = server.0.try_wait().expect("waitpid") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "rlockd exits within {:?} of SHUTDOWN",
            common::WAIT
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "rlockd exited with {status}");
}
