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

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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
    r_run.stop();
    let port = port_of(&mut p).parse().unwrap();
    let before = offset(&mut p);
    // The write waits in its own connection; another client's read is
    // answered meanwhile.
    let writer = std::thread::spawn(move || {
        let mut con = connect(port);
        let asked = Instant::now();
        let answer = lock(&mut con, "held", "a:1", 30_000);
        (answer, asked.elapsed())
    });
    until("the write applied, its reply held", || {
        offset(&mut p) > before
    });
    // Far sooner than the write's 2 s timeout, even on a loaded machine.
    let read = Instant::now();
    q(&mut p, &["GET", "probe"]);
    assert!(
        read.elapsed() < Duration::from_secs(1),
        "a read waits for nobody: {:?}",
        read.elapsed()
    );
    let (answer, waited) = writer.join().unwrap();
    let e = answer.expect_err("no acknowledgement, no grant");
    assert_eq!(error_text(&e), NOREPLICAS);
    assert!(
        waited >= Duration::from_millis(400),
        "answered at the timeout: {waited:?}"
    );
    assert!(
        waited < Duration::from_secs(4),
        "not much later: {waited:?}"
    );
    // The timeout says nothing of whether the primary applied it (here it
    // did); once the replica is back, both agree again.
    r_run.resume();
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

/// What a client's pipelined lock requests were answered: when it sent
/// them, and how many were granted (the rest were refused NOREPLICAS).
struct LockBatch {
    sent: Instant,
    granted: usize,
}

/// Sends fresh locks `names` in one write and reads their answers: each
/// is granted (`nil`) or refused NOREPLICAS, nothing else.
fn lock_batch(con: &mut Connection, names: &[String]) -> LockBatch {
    let mut pipe = redis::pipe();
    for name in names {
        pipe.cmd("EVAL")
            .arg(LOCK)
            .arg(1)
            .arg(name)
            .arg(30_000)
            .arg("owner:1");
    }
    let sent = Instant::now();
    con.send_packed_command(&pipe.get_packed_pipeline())
        .unwrap();
    let mut granted = 0;
    for name in names {
        match con.recv_response() {
            Ok(Value::Nil) => granted += 1,
            Ok(Value::ServerError(e)) if e.code() == "NOREPLICAS" => {}
            other => panic!("{name}: neither a grant nor NOREPLICAS: {other:?}"),
        }
    }
    LockBatch { sent, granted }
}

/// The offset the primary's first replica last acknowledged (INFO's
/// `slave0:…,offset=N,…`).
fn acked_offset(con: &mut Connection) -> u64 {
    let info = info(con);
    let line = common::info_value(&info, "slave0");
    line.split(',')
        .find_map(|field| field.strip_prefix("offset="))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no offset in slave0:{line}"))
}

#[test]
fn no_lock_asked_after_its_replica_stopped_is_granted() {
    const CLIENTS: usize = 8;
    const PER_BATCH: usize = 4;
    // The replica counts as there throughout (its last ACK is recent
    // enough), so every write after the stop runs and waits.
    let ((_p, mut p), (r_run, _r)) = pair(&[
        "--lock-sync-timeout-ms",
        "300",
        "--min-replicas-max-lag",
        "60",
    ]);
    let port: u16 = port_of(&mut p).parse().unwrap();
    let granted = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let answered: Arc<Vec<AtomicUsize>> =
        Arc::new((0..CLIENTS).map(|_| AtomicUsize::new(0)).collect());
    // Clients pipelining lock requests for fresh names, as fast as they
    // are answered, across the stop.
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (granted, done, answered) = (granted.clone(), done.clone(), answered.clone());
            std::thread::spawn(move || {
                let mut con = connect(port);
                let mut batches = Vec::new();
                for round in 0.. {
                    if done.load(Ordering::Relaxed) {
                        break;
                    }
                    let names: Vec<String> = (0..PER_BATCH)
                        .map(|i| format!("lock-{c}-{round}-{i}"))
                        .collect();
                    let batch = lock_batch(&mut con, &names);
                    granted.fetch_add(batch.granted, Ordering::Relaxed);
                    answered[c].fetch_add(1, Ordering::Relaxed);
                    batches.push(batch);
                }
                batches
            })
        })
        .collect();
    until("locks granted while the replica follows", || {
        granted.load(Ordering::Relaxed) >= 200
    });
    r_run.stop();
    let stopped = Instant::now();
    // Every replica's ACK was sent before the stop, so none covers more
    // of the stream than there was then (or at this read, a little later).
    let stream_at_stop = offset(&mut p);
    // Each client's second batch answered from now was sent after the stop.
    let at_stop: Vec<usize> = answered.iter().map(|n| n.load(Ordering::Relaxed)).collect();
    until("every client answered twice after the stop", || {
        answered
            .iter()
            .zip(&at_stop)
            .all(|(n, at)| n.load(Ordering::Relaxed) >= at + 2)
    });
    done.store(true, Ordering::Relaxed);
    let batches: Vec<LockBatch> = clients
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    let after: Vec<&LockBatch> = batches.iter().filter(|b| b.sent > stopped).collect();
    assert!(
        after.len() >= CLIENTS,
        "{} batches after the stop",
        after.len()
    );
    let granted_after: usize = after.iter().map(|b| b.granted).sum();
    assert_eq!(
        granted_after,
        0,
        "locks asked after the replica stopped were granted ({} batches asked then)",
        after.len()
    );
    // The locks asked after the stop ran on the primary (the stream grew),
    // and no acknowledgement reached past where the stream stood.
    assert!(acked_offset(&mut p) <= stream_at_stop);
    assert!(offset(&mut p) > stream_at_stop);
    // Nothing else acknowledged for it: its one replica is all there is.
    assert_eq!(common::info_value(&info(&mut p), "connected_slaves"), "1");
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
    p_run.stop();
    // What Sentinel does once the primary is judged down.
    assert_eq!(q(&mut r, &["REPLICAOF", "NO", "ONE"]), Value::Okay);
    assert_eq!(
        q(&mut r, &["HGET", "before", "a:1"]),
        Value::BulkString(b"1".to_vec()),
        "the acknowledged lock survived"
    );
    assert_eq!(lock(&mut r, "new", "b:1", 30_000), Ok(Value::Nil));
    p_run.resume();
    // The old primary's clients are not granted anything, however they ask.
    // Until it sees its replica gone it applies a write and answers it
    // NOREPLICAS at the timeout; a later ask for the same lock is then
    // told that attempt's lease: no grant either.
    for i in 0..5 {
        for (name, owner) in [
            ("new".to_string(), format!("c:{i}")),
            (format!("other-{i}"), "c:1".into()),
        ] {
            match lock(&mut p, &name, &owner, 30_000) {
                Err(e) => assert!(error_text(&e).starts_with("NOREPLICAS"), "{e}"),
                Ok(Value::Int(_)) if name == "new" && i > 0 => {}
                Ok(granted) => panic!("{name} granted to {owner}: {granted:?}"),
            }
        }
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

/// How many clients the server counts as blocked.
fn blocked_clients(con: &mut Connection) -> u64 {
    let Value::BulkString(info) = q(con, &["INFO", "clients"]) else {
        panic!("INFO answers a bulk string")
    };
    common::info_number(&String::from_utf8_lossy(&info), "blocked_clients")
}

/// Runs `args` on a connection of its own in a thread that blocks in it;
/// returns once the server counts it blocked. The thread gives the answer
/// and how long after the push (`pushed`, set by the caller) it came.
fn block_on(
    port: u16,
    p: &mut Connection,
    args: &'static [&'static str],
) -> std::thread::JoinHandle<(redis::RedisResult<Value>, Instant)> {
    let before = blocked_clients(p);
    let waiter = std::thread::spawn(move || {
        let mut con = connect(port);
        let mut c = redis::cmd(args[0]);
        for a in &args[1..] {
            c.arg(*a);
        }
        let answer = c.query::<Value>(&mut con);
        (answer, Instant::now())
    });
    until("the client blocked", || blocked_clients(p) > before);
    waiter
}

/// A write from a client of its own, in a thread: its answer.
fn write_in_thread(
    port: u16,
    script: &'static [&'static [&'static str]],
) -> std::thread::JoinHandle<Vec<redis::RedisResult<Value>>> {
    std::thread::spawn(move || {
        let mut con = connect(port);
        script
            .iter()
            .map(|args| {
                let mut c = redis::cmd(args[0]);
                for a in &args[1..] {
                    c.arg(*a);
                }
                c.query::<Value>(&mut con)
            })
            .collect()
    })
}

/// The pushes that serve a blocked client in these tests: a plain
/// command, a transaction and a script.
const PUSHES: [&[&[&str]]; 3] = [
    &[&["RPUSH", "queue", "job"]],
    &[&["MULTI"], &["RPUSH", "queue", "job"], &["EXEC"]],
    &[&[
        "EVAL",
        "return redis.call('rpush', KEYS[1], 'job')",
        "1",
        "queue",
    ]],
];

/// The blocking commands served by a push to `queue` (or an entry added
/// to the stream `events`, for the group read), with the push.
const BLOCKING: [(&[&str], &[&[&str]]); 4] = [
    (&["BLPOP", "queue", "0"], &[&["RPUSH", "queue", "job"]]),
    (
        &["BLMOVE", "queue", "taken", "LEFT", "RIGHT", "0"],
        &[&["RPUSH", "queue", "job"]],
    ),
    (
        &["BZPOPMIN", "queue", "0"],
        &[&["ZADD", "queue", "1", "job"]],
    ),
    (
        &[
            "XREADGROUP",
            "GROUP",
            "workers",
            "w1",
            "BLOCK",
            "0",
            "STREAMS",
            "events",
            ">",
        ],
        &[&["XADD", "events", "*", "job", "1"]],
    ),
];

#[test]
fn a_blocked_pop_is_answered_once_its_replica_has_it() {
    let ((_p, mut p), (r_run, mut r)) = pair(&[]);
    let port: u16 = port_of(&mut p).parse().unwrap();
    q(
        &mut p,
        &["XGROUP", "CREATE", "events", "workers", "$", "MKSTREAM"],
    );
    // Served while the replica follows: the pop is on the replica once the
    // waiter hears of it.
    for (wait, push) in BLOCKING
        .iter()
        .map(|(w, p)| (*w, *p))
        .chain(PUSHES.iter().map(|p| (&["BLPOP", "queue", "0"][..], *p)))
    {
        let waiter = block_on(port, &mut p, wait);
        let pushed = write_in_thread(port, push).join().unwrap();
        assert!(pushed.iter().all(|a| a.is_ok()), "{push:?}: {pushed:?}");
        let (answer, _) = waiter.join().unwrap();
        assert!(
            matches!(answer, Ok(Value::Array(_) | Value::BulkString(_))),
            "{wait:?} served: {answer:?}"
        );
        assert_eq!(
            q(&mut r, &["EXISTS", "queue"]),
            Value::Int(0),
            "{wait:?}: the pop is on the replica"
        );
        let pending = q(&mut r, &["XPENDING", "events", "workers"]);
        assert_eq!(
            pending,
            q(&mut p, &["XPENDING", "events", "workers"]),
            "{wait:?}: the delivery too"
        );
    }
    // The replica stopped: the waiter is told NOREPLICAS at the timeout,
    // as the client whose push served it is, and not handed the element.
    r_run.stop();
    for (wait, push) in BLOCKING
        .iter()
        .map(|(w, p)| (*w, *p))
        .chain(PUSHES.iter().map(|p| (&["BLPOP", "queue", "0"][..], *p)))
    {
        let waiter = block_on(port, &mut p, wait);
        let pushed_at = Instant::now();
        let pushed = write_in_thread(port, push).join().unwrap();
        let refused = pushed
            .last()
            .unwrap()
            .as_ref()
            .expect_err("the push is not acknowledged");
        assert_eq!(error_text(refused), NOREPLICAS, "{push:?}");
        let (answer, at) = waiter.join().unwrap();
        let e = answer.expect_err("the waiter is not acknowledged either");
        assert_eq!(error_text(&e), NOREPLICAS, "{wait:?}");
        assert!(
            at - pushed_at >= Duration::from_millis(400),
            "{wait:?} answered at the timeout"
        );
    }
    // A plain stream read changes nothing: answered at once, long before
    // the XADD's own timeout (made longer than a loaded machine's thread
    // start, connection and round trips).
    q(&mut p, &["CONFIG", "SET", "lock-sync-timeout-ms", "3000"]);
    let waiter = block_on(
        port,
        &mut p,
        &["XREAD", "BLOCK", "0", "STREAMS", "events", "$"],
    );
    let pushed_at = Instant::now();
    let pusher = write_in_thread(port, &[&["XADD", "events", "*", "job", "2"]]);
    let (answer, at) = waiter.join().unwrap();
    assert!(matches!(answer, Ok(Value::Array(_))), "{answer:?}");
    assert!(
        at - pushed_at < Duration::from_millis(1500),
        "a read waits for no replica: {:?}",
        at - pushed_at
    );
    assert!(pusher.join().unwrap()[0].is_err(), "the XADD itself waits");
    r_run.resume();
}

/// The stream offset INFO reports.
fn offset(con: &mut Connection) -> u64 {
    common::info_number(&info(con), "master_repl_offset")
}

/// The bytes `args` take in the replication stream.
fn stream_len(args: &[&str]) -> u64 {
    let head = format!("*{}\r\n", args.len()).len();
    let body: usize = args
        .iter()
        .map(|a| format!("${}\r\n", a.len()).len() + a.len() + 2)
        .sum();
    (head + body) as u64
}

/// The next reply read, an error, as `CODE detail`.
fn recv_error(con: &mut Connection) -> String {
    match con.recv_response() {
        Ok(Value::ServerError(e)) => format!("{} {}", e.code(), e.details().unwrap_or("")),
        Err(e) => error_text(&e),
        other => panic!("an error, not {other:?}"),
    }
}

fn set_pipeline(prefix: &str, n: usize) -> redis::Pipeline {
    let mut pipe = redis::pipe();
    for i in 0..n {
        pipe.cmd("SET").arg(format!("{prefix}{i:03}")).arg("v");
    }
    pipe
}

#[test]
fn a_pipeline_of_writes_waits_once() {
    let ((_p, mut p), (r_run, mut r)) = pair(&[]);
    // What one SET takes in the stream, the safe mode off (no GETACK).
    q(&mut p, &["CONFIG", "SET", "lock-sync-replicas", "0"]);
    q(&mut p, &["SET", "k999", "v"]);
    let before = offset(&mut p);
    q(&mut p, &["SET", "k998", "v"]);
    let set_bytes = offset(&mut p) - before;
    q(&mut p, &["CONFIG", "SET", "lock-sync-replicas", "1"]);

    // 100 SETs in one write: answered in order, after one GETACK (or a
    // few, should the pipeline arrive in pieces), where waiting write by
    // write asked 100 times.
    let before = offset(&mut p);
    let replies: Vec<Value> = set_pipeline("k", 100).query(&mut p).unwrap();
    assert_eq!(replies, vec![Value::Okay; 100]);
    let getacks =
        (offset(&mut p) - before - 100 * set_bytes) / stream_len(&["REPLCONF", "GETACK", "*"]);
    assert!(getacks <= 3, "{getacks} GETACKs for one pipeline");
    // Every reply meant the replica had the write.
    let Value::Array(on_replica) = q(&mut r, &["MGET", "k000", "k050", "k099"]) else {
        panic!("MGET answers an array")
    };
    assert!(
        on_replica
            .iter()
            .all(|v| *v == Value::BulkString(b"v".to_vec()))
    );

    // The replica stops in the middle of a pipeline: what it acknowledged
    // is answered, what came after is NOREPLICAS, in order. (The BLPOP
    // sends what was answered before it blocks, as it always did.)
    let mut pipe = set_pipeline("a", 50);
    pipe.cmd("BLPOP").arg("nothing").arg("1");
    pipe.add_command(redis::cmd("INCR").arg("after").to_owned());
    for i in 0..49 {
        pipe.cmd("SET").arg(format!("b{i:03}")).arg("v");
    }
    pipe.cmd("GET").arg("after");
    p.send_packed_command(&pipe.get_packed_pipeline()).unwrap();
    for i in 0..50 {
        assert_eq!(p.recv_response(), Ok(Value::Okay), "a{i:03}");
    }
    assert_eq!(
        q(&mut r, &["EXISTS", "a049"]),
        Value::Int(1),
        "acknowledged"
    );
    r_run.stop();
    let stopped = Instant::now();
    assert_eq!(p.recv_response(), Ok(Value::Nil), "BLPOP timed out");
    for i in 0..50 {
        assert_eq!(recv_error(&mut p), NOREPLICAS, "write {i} after the stop");
    }
    // A read in the pipeline is answered as it ran: the INCR applied on
    // the primary, unacknowledged.
    assert_eq!(p.recv_response(), Ok(Value::BulkString(b"1".to_vec())));
    // One 400 ms timeout for the batch, where one for each write would
    // take 20 s.
    assert!(
        stopped.elapsed() < common::WAIT,
        "one timeout for the batch: {:?}",
        stopped.elapsed()
    );
    r_run.resume();
}

const SEM_SET: &str = include_str!("../conformance/scripts/semaphore_set_permits.lua");
const SEM_ACQUIRE: &str = include_str!("../conformance/scripts/semaphore_acquire.lua");
const SEM_RELEASE: &str = include_str!("../conformance/scripts/semaphore_release.lua");
const EXP_ACQUIRE: &str = include_str!("../conformance/scripts/expirable_acquire.lua");
const EXP_RELEASE: &str = include_str!("../conformance/scripts/expirable_release.lua");
const LOADING: &str = "LOADING Redis is loading the dataset in memory";

fn eval(
    con: &mut Connection,
    script: &str,
    keys: &[&str],
    args: &[&str],
) -> redis::RedisResult<Value> {
    let mut c = redis::cmd("EVAL");
    c.arg(script).arg(keys.len());
    for k in keys {
        c.arg(*k);
    }
    for a in args {
        c.arg(*a);
    }
    c.query(con)
}

/// The expirable semaphore's keys: counter, permits' sorted set, channel.
const EXP: [&str; 3] = ["exp", "{exp}:timeout", "redisson_sc:{exp}"];

/// Takes an expirable permit `id` at client time `now` for `lease` ms.
fn exp_acquire(con: &mut Connection, id: &str, lease: u64, now: u64) -> redis::RedisResult<Value> {
    eval(
        con,
        EXP_ACQUIRE,
        &EXP,
        &[id, &lease.to_string(), &now.to_string()],
    )
}

#[test]
fn the_grace_refuses_permits_taken_from_a_counter() {
    let ((p_run, mut p), (_r, mut r)) = graced_pair("3000");
    // A semaphore of 3 with one permit out; an expirable one of 3 with a
    // permit out for an hour and one that lapsed at client time 1001; a
    // plain counter.
    assert_eq!(
        eval(&mut p, SEM_SET, &["sem", "redisson_sc:{sem}"], &["3"]),
        Ok(Value::Int(1))
    );
    assert_eq!(
        eval(&mut p, SEM_ACQUIRE, &["sem"], &["1"]),
        Ok(Value::Int(1))
    );
    q(&mut p, &["SET", "exp", "3"]);
    exp_acquire(&mut p, "held", 3_600_000, 1000).unwrap();
    exp_acquire(&mut p, "lapsing", 1, 1000).unwrap();
    q(&mut p, &["SET", "counter", "10"]);
    q(&mut p, &["SET", "word", "ten"]);
    drop(p_run);
    assert_eq!(q(&mut r, &["REPLICAOF", "NO", "ONE"]), Value::Okay);

    // Taking permits lowers a counter: refused, undone, whatever says it.
    let e = eval(&mut r, SEM_ACQUIRE, &["sem"], &["1"]).expect_err("no permit");
    assert_eq!(error_text(&e), LOADING);
    for take in [
        &["DECR", "counter"][..],
        &["DECRBY", "counter", "3"],
        &["INCRBY", "counter", "-1"],
        &["SET", "counter", "9"],
        &["GETSET", "counter", "0"],
    ] {
        assert_eq!(q_err(&mut r, take), LOADING, "{take:?}");
    }
    let e = eval(
        &mut r,
        "redis.call('incr', KEYS[1]); return redis.call('decrby', KEYS[1], 2)",
        &["counter"],
        &[],
    )
    .expect_err("lowered over the script as a whole");
    assert_eq!(error_text(&e), LOADING);
    // An expirable permit, with permits out (its sorted set exists, so no
    // key is created), and one taken in the run that gives the lapsed one
    // back (the counter ends where it was).
    let e = exp_acquire(&mut r, "new", 1000, 2000).expect_err("no expirable permit");
    assert_eq!(error_text(&e), LOADING);
    assert_eq!(
        q(&mut r, &["GET", "counter"]),
        Value::BulkString(b"10".to_vec())
    );
    assert_eq!(q(&mut r, &["GET", "sem"]), Value::BulkString(b"2".to_vec()));
    assert_eq!(q(&mut r, &["GET", "exp"]), Value::BulkString(b"1".to_vec()));
    assert_eq!(q(&mut r, &["ZCARD", EXP[1]]), Value::Int(2));

    // Releases raise counters: served. So are writes that lower nothing.
    assert_eq!(
        eval(&mut r, SEM_RELEASE, &["sem", "redisson_sc:{sem}"], &["1"]),
        Ok(Value::Int(3))
    );
    assert_eq!(
        eval(&mut r, EXP_RELEASE, &EXP, &["held"]),
        Ok(Value::Int(1))
    );
    assert_eq!(q(&mut r, &["INCRBY", "counter", "5"]), Value::Int(15));
    assert_eq!(q(&mut r, &["SET", "word", "nine"]), Value::Okay);
    assert_eq!(q(&mut r, &["SET", "counter", "20"]), Value::Okay);

    // Once the grace is over, permits are taken again.
    until("the grace over", || grace_left(&mut r) == 0);
    assert_eq!(
        eval(&mut r, SEM_ACQUIRE, &["sem"], &["1"]),
        Ok(Value::Int(1))
    );
    assert_eq!(q(&mut r, &["DECR", "counter"]), Value::Int(19));
    assert_eq!(
        exp_acquire(&mut r, "new", 1000, 2000),
        Ok(Value::BulkString(b"new".to_vec()))
    );
}
