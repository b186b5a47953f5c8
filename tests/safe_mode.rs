//! The safe mode (issue #31, item 2), over real rlockd processes on
//! loopback: with `lock-sync-replicas 1` a write is answered only once its
//! replica acknowledged it (so the replica has it the instant the client
//! does), a stopped replica turns writes into NOREPLICAS at
//! `lock-sync-timeout-ms` without holding other clients back, a primary
//! without its replica refuses writes unapplied, and a primary stopped and
//! resumed after its replica was promoted grants nothing. Then
//! `lock-promotion-grace-ms`: a replica promoted (REPLICAOF NO ONE, FAILOVER)
//! refuses new locks and serves its holders' renewals and releases.

mod common;

use common::blocking::{Running, connect, q, q_err, rlockd};

use std::time::{Duration, Instant};

use redis::{Connection, Value};

const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";
const LOCK: &str = include_str!("../src/command/scripting/lock_scripts/redisson_lock.lua");
const UNLOCK: &str = include_str!("../src/command/scripting/lock_scripts/redisson_unlock.lua");

fn info(con: &mut Connection) -> String {
    match q(con, &["INFO", "replication"]) {
        Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("INFO answers a bulk string: {other:?}"),
    }
}

fn port_of(con: &mut Connection) -> String {
    let Value::Array(pair) = q(con, &["CONFIG", "GET", "port"]) else {
        panic!("CONFIG GET answers an array")
    };
    let Value::BulkString(port) = &pair[1] else {
        panic!("a port")
    };
    String::from_utf8_lossy(port).into_owned()
}

/// Sends a signal to a server process (SIGSTOP freezes it as a stalled
/// machine would be; SIGCONT resumes it).
fn signal(server: &Running, sig: &str) {
    let status = std::process::Command::new("kill")
        .args([sig, &server.0.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill {sig}");
}

/// Polls `done` every 20 ms for up to 20 s.
fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A safe-mode primary (`extra` added) and one rlockd replica of it,
/// online.
fn pair(extra: &[&str]) -> ((Running, Connection), (Running, Connection)) {
    let mut args = vec![
        "--lock-sync-replicas",
        "1",
        "--lock-sync-timeout-ms",
        "400",
        "--repl-diskless-sync-delay",
        "0",
    ];
    args.extend_from_slice(extra);
    let (p_run, mut p) = rlockd(&args);
    let port = port_of(&mut p);
    let (r_run, r) = rlockd(&["--replicaof", "127.0.0.1", &port]);
    until("the replica online", || {
        info(&mut p).contains("state=online")
    });
    // Its first ACK makes it a good replica for the check before writes.
    until("a write accepted", || {
        redis::cmd("SET")
            .arg("probe")
            .arg("1")
            .query::<Value>(&mut p)
            .is_ok()
    });
    ((p_run, p), (r_run, r))
}

/// Redisson's lock script: `nil` when granted, else the holder's pttl.
fn lock(con: &mut Connection, name: &str, owner: &str, lease_ms: u64) -> redis::RedisResult<Value> {
    redis::cmd("EVAL")
        .arg(LOCK)
        .arg(1)
        .arg(name)
        .arg(lease_ms)
        .arg(owner)
        .query(con)
}

fn unlock(con: &mut Connection, name: &str, owner: &str) -> redis::RedisResult<Value> {
    redis::cmd("EVAL")
        .arg(UNLOCK)
        .arg(2)
        .arg(name)
        .arg(format!("redisson_lock__channel:{{{name}}}"))
        .arg(0)
        .arg(30_000)
        .arg(owner)
        .query(con)
}

fn error_text(e: &redis::RedisError) -> String {
    format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or(""))
        .trim()
        .to_string()
}

#[test]
fn a_write_is_answered_once_its_replica_has_it() {
    let ((_p, mut p), (_r, mut r)) = pair(&[]);
    // Each reply means the replica applied the write: read there at once,
    // it is always seen (asynchronous replication would race here).
    for i in 0..50 {
        let owner = format!("client-{i}:1");
        assert_eq!(
            lock(&mut p, &format!("lock-{i}"), &owner, 30_000),
            Ok(Value::Nil)
        );
        assert_eq!(
            q(&mut r, &["HGET", &format!("lock-{i}"), &owner]),
            Value::BulkString(b"1".to_vec()),
            "lock {i} on the replica as soon as granted"
        );
        q(&mut p, &["INCR", "fence"]);
        assert_eq!(
            q(&mut r, &["GET", "fence"]),
            Value::BulkString((i + 1).to_string().into_bytes())
        );
    }
    // A write that changes nothing has nothing to wait for, and a
    // transaction waits once, for all it wrote.
    assert!(matches!(
        lock(&mut p, "lock-0", "other:1", 30_000),
        Ok(Value::Int(_))
    ));
    q(&mut p, &["MULTI"]);
    q(&mut p, &["SET", "a", "1"]);
    q(&mut p, &["SET", "b", "2"]);
    q(&mut p, &["EXEC"]);
    assert_eq!(
        q(&mut r, &["MGET", "a", "b"]),
        q(&mut p, &["MGET", "a", "b"])
    );
    assert_eq!(unlock(&mut p, "lock-0", "client-0:1"), Ok(Value::Int(1)));
    assert_eq!(q(&mut r, &["EXISTS", "lock-0"]), Value::Int(0));
}

#[test]
fn a_stopped_replica_turns_writes_into_noreplicas_at_the_timeout() {
    let ((_p, mut p), (r_run, mut r)) = pair(&["--lock-sync-timeout-ms", "2000"]);
    signal(&r_run, "-STOP");
    let port = port_of(&mut p).parse().unwrap();
    // The write waits in its own connection; another client's read is
    // answered meanwhile.
    let writer = std::thread::spawn(move || {
        let mut con = connect(port);
        let asked = Instant::now();
        let answer = lock(&mut con, "held", "a:1", 30_000);
        (answer, asked.elapsed())
    });
    std::thread::sleep(Duration::from_millis(100));
    let read = Instant::now();
    q(&mut p, &["GET", "probe"]);
    assert!(
        read.elapsed() < Duration::from_millis(200),
        "a read waits for nobody"
    );
    let (answer, waited) = writer.join().unwrap();
    let e = answer.expect_err("no acknowledgement, no grant");
    assert_eq!(error_text(&e), NOREPLICAS);
    assert!(
        waited >= Duration::from_millis(400),
        "answered at the timeout: {waited:?}"
    );
    assert!(
        waited < Duration::from_secs(3),
        "not much later: {waited:?}"
    );
    // The timeout says nothing of whether the primary applied it (here it
    // did); once the replica is back, both agree again.
    signal(&r_run, "-CONT");
    assert_eq!(
        q(&mut p, &["SET", "after", "1"]),
        Value::Okay,
        "writes go on once the replica is back"
    );
    assert_eq!(
        q(&mut r, &["GET", "after"]),
        Value::BulkString(b"1".to_vec())
    );
    assert_eq!(
        q(&mut r, &["EXISTS", "held"]),
        q(&mut p, &["EXISTS", "held"])
    );
}

#[test]
fn without_its_replica_a_primary_refuses_writes_unapplied() {
    let ((_p, mut p), (r_run, _r)) = pair(&[]);
    drop(r_run);
    until("the replica gone", || {
        info(&mut p).contains("connected_slaves:0")
    });
    assert_eq!(q_err(&mut p, &["SET", "x", "1"]), NOREPLICAS);
    let e = lock(&mut p, "lock", "a:1", 30_000).expect_err("refused");
    assert!(error_text(&e).starts_with("NOREPLICAS"), "{e}");
    assert_eq!(
        q(&mut p, &["EXISTS", "x", "lock"]),
        Value::Int(0),
        "nothing applied"
    );
    // Reads are served.
    assert_eq!(
        q(&mut p, &["GET", "probe"]),
        Value::BulkString(b"1".to_vec())
    );
    // With the safe mode off, writes are taken again.
    q(&mut p, &["CONFIG", "SET", "lock-sync-replicas", "0"]);
    assert_eq!(q(&mut p, &["SET", "x", "1"]), Value::Okay);
}

#[test]
fn a_primary_resumed_after_its_replica_was_promoted_grants_nothing() {
    let ((p_run, mut p), (_r, mut r)) = pair(&[]);
    assert_eq!(lock(&mut p, "before", "a:1", 30_000), Ok(Value::Nil));
    signal(&p_run, "-STOP");
    // What Sentinel does once the primary is judged down.
    assert_eq!(q(&mut r, &["REPLICAOF", "NO", "ONE"]), Value::Okay);
    assert_eq!(
        q(&mut r, &["HGET", "before", "a:1"]),
        Value::BulkString(b"1".to_vec()),
        "the acknowledged lock survived"
    );
    assert_eq!(lock(&mut r, "new", "b:1", 30_000), Ok(Value::Nil));
    signal(&p_run, "-CONT");
    // The old primary's clients are not granted anything, however they ask.
    for i in 0..5 {
        let e = lock(&mut p, "new", &format!("c:{i}"), 30_000).expect_err("no grant");
        assert!(error_text(&e).starts_with("NOREPLICAS"), "{e}");
        let e = lock(&mut p, &format!("other-{i}"), "c:1", 30_000).expect_err("no grant");
        assert!(error_text(&e).starts_with("NOREPLICAS"), "{e}");
    }
}

/// Redisson's watchdog renewal: 1 if the owner still holds the lock.
const RENEW: &str = "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then \
    redis.call('pexpire', KEYS[1], ARGV[1]); return 1; end; return 0;";

fn grace_left(con: &mut Connection) -> u64 {
    common::info_number(&info(con), "lock_promotion_grace_left_ms")
}

/// `pair`, its replica under a promotion grace of `ms`, and the lock
/// `held` granted to `a:1` on the primary.
fn graced_pair(ms: &str) -> ((Running, Connection), (Running, Connection)) {
    let ((p_run, mut p), (r_run, mut r)) = pair(&[]);
    q(&mut r, &["CONFIG", "SET", "lock-promotion-grace-ms", ms]);
    assert_eq!(lock(&mut p, "held", "a:1", 30_000), Ok(Value::Nil));
    ((p_run, p), (r_run, r))
}

#[test]
fn a_promoted_replica_grants_nothing_new_through_its_grace() {
    let ((p_run, mut p), (_r, mut r)) = graced_pair("3000");
    q(&mut p, &["SET", "plain", "token", "NX", "PX", "30000"]);
    drop(p_run);
    assert_eq!(q(&mut r, &["REPLICAOF", "NO", "ONE"]), Value::Okay);
    assert!(grace_left(&mut r) > 0, "INFO shows the grace");

    // A new grant, by a script or a plain command, is refused and undone.
    let e = lock(&mut r, "fresh", "b:1", 30_000).expect_err("no new lock");
    assert_eq!(
        error_text(&e),
        "LOADING Redis is loading the dataset in memory"
    );
    assert_eq!(
        q_err(&mut r, &["SET", "fresh-plain", "t", "NX", "PX", "30000"]),
        "LOADING Redis is loading the dataset in memory"
    );
    q(&mut r, &["MULTI"]);
    q(&mut r, &["INCR", "fresh-counter"]);
    assert!(q_err(&mut r, &["EXEC"]).starts_with("EXECABORT"));
    assert_eq!(
        q(&mut r, &["EXISTS", "fresh", "fresh-plain", "fresh-counter"]),
        Value::Int(0),
        "nothing created"
    );

    // The holders renew, re-enter and release; others are told the lease.
    assert!(matches!(
        lock(&mut r, "held", "b:1", 30_000),
        Ok(Value::Int(_))
    ));
    let renewed: i64 = redis::cmd("EVAL")
        .arg(RENEW)
        .arg(1)
        .arg("held")
        .arg(30_000)
        .arg("a:1")
        .query(&mut r)
        .unwrap();
    assert_eq!(renewed, 1);
    assert_eq!(q(&mut r, &["PEXPIRE", "plain", "30000"]), Value::Int(1));
    assert_eq!(
        lock(&mut r, "held", "a:1", 30_000),
        Ok(Value::Nil),
        "re-entered"
    );
    assert_eq!(unlock(&mut r, "held", "a:1"), Ok(Value::Int(0)));
    assert_eq!(unlock(&mut r, "held", "a:1"), Ok(Value::Int(1)));
    assert_eq!(q(&mut r, &["DEL", "plain"]), Value::Int(1));
    assert_eq!(q(&mut r, &["EXISTS", "held", "plain"]), Value::Int(0));

    // Once it is over, locks are granted again.
    until("the grace over", || grace_left(&mut r) == 0);
    assert_eq!(lock(&mut r, "fresh", "b:1", 30_000), Ok(Value::Nil));
    assert_eq!(
        q(&mut r, &["SET", "fresh-plain", "t", "NX", "PX", "30000"]),
        Value::Okay
    );
}

#[test]
fn failover_starts_the_grace_on_the_promoted_replica() {
    let ((_p, mut p), (_r, mut r)) = graced_pair("5000");
    assert_eq!(grace_left(&mut r), 0, "no grace while a replica");
    assert_eq!(q(&mut p, &["FAILOVER"]), Value::Okay);
    until("the replica promoted", || {
        common::info_value(&info(&mut r), "role") == "master"
    });
    assert!(grace_left(&mut r) > 0);
    let e = lock(&mut r, "fresh", "b:1", 30_000).expect_err("no new lock");
    assert_eq!(
        error_text(&e),
        "LOADING Redis is loading the dataset in memory"
    );
    let lease = lock(&mut r, "held", "b:1", 30_000).expect("the holder's lease");
    assert!(matches!(lease, Value::Int(_)));
    assert_eq!(unlock(&mut r, "held", "a:1"), Ok(Value::Int(1)));
}
