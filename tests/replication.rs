//! rlockd as a replica of a real redis-server 7.0.15 (issue #30, item 1):
//! a full sync from a disk-backed and from a diskless payload carries
//! every type, then the primary's stream (scripts, EXPIRE, SELECT,
//! transactions) is applied in order; keys compare equal by DUMP payload
//! and deadline. A dropped link resumes with a partial resync. REPLICAOF
//! at run time and in the config, `masterauth`, `-READONLY`, ROLE and
//! INFO replication as a redis-server replica of the same primary answers.

mod common;
mod refserver;

use common::blocking::{Running, connect, q, q_err, rlockd};

use std::time::{Duration, Instant};

use redis::{Connection, Value};
use refserver::RedisServer;

fn text(v: Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
        Value::SimpleString(s) => s,
        Value::Okay => "OK".into(),
        other => format!("{other:?}"),
    }
}

fn info(con: &mut Connection) -> String {
    text(q(con, &["INFO", "replication"]))
}

/// The primary, or `None` (and the test skipped) without redis-server.
fn primary(test: &str, password: Option<&str>) -> Option<(RedisServer, Connection)> {
    let bin = refserver::redis_server_path(test)?;
    let server = RedisServer::start_with(&bin, password);
    let mut con = connect(server.port());
    if let Some(p) = password {
        q(&mut con, &["AUTH", p]);
    }
    q(
        &mut con,
        &["CONFIG", "SET", "repl-diskless-sync-delay", "0"],
    );
    Some((server, con))
}

/// Every type, in the encodings small and large values take, with and
/// without deadlines, over two databases, and a function library.
fn fill(con: &mut Connection) {
    let big: String = "x".repeat(100);
    let many: Vec<String> = (0..200).map(|i| format!("m{i}")).collect();
    let mut cmds: Vec<Vec<String>> = vec![
        vec!["SET".into(), "str".into(), "hello".into()],
        vec!["SET".into(), "int".into(), "12345".into()],
        vec!["SET".into(), "raw".into(), big.clone()],
        vec!["SET".into(), "ttl".into(), "v".into(), "PX".into(), "500000".into()],
        vec!["RPUSH".into(), "list".into(), "a".into(), "b".into(), "3".into()],
        vec!["HSET".into(), "hash".into(), "f".into(), "v".into(), "n".into(), "1".into()],
        vec!["SADD".into(), "ints".into(), "1".into(), "2".into(), "3".into()],
        vec!["SADD".into(), "set".into(), "a".into(), "b".into()],
        vec!["ZADD".into(), "zset".into(), "1".into(), "a".into(), "2.5".into(), "b".into()],
        vec!["PFADD".into(), "hll".into(), "a".into(), "b".into(), "c".into()],
        vec!["XADD".into(), "stream".into(), "1-1".into(), "f".into(), "v".into()],
        vec!["XADD".into(), "stream".into(), "2-1".into(), "g".into(), "w".into()],
        vec!["XGROUP".into(), "CREATE".into(), "stream".into(), "grp".into(), "0".into()],
        vec!["XREADGROUP".into(), "GROUP".into(), "grp".into(), "c1".into(), "COUNT".into(), "1".into(), "STREAMS".into(), "stream".into(), ">".into()],
        vec!["SELECT".into(), "2".into()],
        vec!["SET".into(), "other-db".into(), "2".into()],
        vec!["EXPIRE".into(), "other-db".into(), "1000".into()],
        vec!["SELECT".into(), "0".into()],
        vec!["FUNCTION".into(), "LOAD".into(), "#!lua name=lib\nredis.register_function('f', function(keys) return redis.call('incr', keys[1]) end)".into()],
    ];
    for (key, kind) in [("biglist", "RPUSH"), ("bigset", "SADD")] {
        let mut c = vec![kind.to_string(), key.to_string()];
        c.extend(many.iter().cloned());
        cmds.push(c);
    }
    let mut hash = vec!["HSET".to_string(), "bighash".to_string()];
    let mut zset = vec!["ZADD".to_string(), "bigzset".to_string()];
    for (i, m) in many.iter().enumerate() {
        hash.extend([m.clone(), big.clone()]);
        zset.extend([i.to_string(), m.clone()]);
    }
    cmds.extend([hash, zset]);
    for c in cmds {
        let args: Vec<&str> = c.iter().map(String::as_str).collect();
        q(con, &args);
    }
}

/// Writes as a stream carries them: a script, deadlines, another
/// database, a transaction, deletions.
fn stream_writes(con: &mut Connection, round: &str) {
    let key = format!("s-{round}");
    q(con, &["SET", &key, round]);
    q(
        con,
        &[
            "EVAL",
            "redis.call('rpush', KEYS[1], ARGV[1]); return redis.call('incr', KEYS[2])",
            "2",
            "list",
            "counter",
            round,
        ],
    );
    q(con, &["FCALL", "f", "1", "fcounter"]);
    q(con, &["EXPIRE", "str", "777"]);
    q(con, &["PEXPIRE", &key, "900000"]);
    q(con, &["SELECT", "5"]);
    q(con, &["HSET", "in5", round, "1"]);
    q(con, &["SELECT", "0"]);
    q(con, &["MULTI"]);
    q(con, &["INCR", "counter"]);
    q(con, &["ZINCRBY", "zset", "1", "a"]);
    q(con, &["EXEC"]);
    q(con, &["DEL", "raw"]);
    q(con, &["XADD", "stream", "*", "r", round]);
    q(con, &["SPOP", "bigset"]);
    // Changes in place, which go as themselves or as the members they
    // removed.
    q(con, &["LSET", "biglist", "1", round]);
    q(con, &["LINSERT", "biglist", "BEFORE", "m5", round]);
    q(con, &["LREM", "biglist", "-1", round]);
    q(con, &["LTRIM", "biglist", "1", "-2"]);
    q(con, &["ZREMRANGEBYSCORE", "bigzset", "(3", "5"]);
    q(con, &["ZREMRANGEBYRANK", "bigzset", "-1", "-1"]);
    q(con, &["ZREMRANGEBYLEX", "zset", "[a", "[a"]);
    // Recorded as themselves: a result far larger than the line.
    let (union, copy) = (format!("union-{round}"), format!("copy-{round}"));
    q(con, &["SUNIONSTORE", &union, "bigset", "set"]);
    q(
        con,
        &[
            "ZUNIONSTORE",
            "zunion",
            "2",
            "bigzset",
            "zset",
            "WEIGHTS",
            "2",
            "1",
        ],
    );
    q(con, &["ZRANGESTORE", "zrange", "bigzset", "10", "20"]);
    q(
        con,
        &[
            "SORT", "biglist", "ALPHA", "LIMIT", "0", "50", "STORE", "sorted",
        ],
    );
    q(con, &["COPY", "bighash", &copy]);
    q(con, &["RENAME", &copy, "renamed"]);
    q(con, &["MOVE", "renamed", "3"]);
    q(con, &["RENAMENX", &union, "union"]);
}

/// Every key of every database: its DUMP payload and absolute deadline.
fn keyspace(con: &mut Connection) -> Vec<String> {
    let mut out = Vec::new();
    for db in 0..16 {
        q(con, &["SELECT", &db.to_string()]);
        let Value::Array(keys) = q(con, &["KEYS", "*"]) else {
            panic!("KEYS answers an array")
        };
        let mut keys: Vec<String> = keys.into_iter().map(text).collect();
        keys.sort();
        for key in keys {
            let encoding = text(q(con, &["OBJECT", "ENCODING", &key]));
            let deadline = q(con, &["PEXPIRETIME", &key]);
            let value = value(con, &key, &encoding);
            // Encodings show in the payloads; a string's differs from
            // Redis's own replica no more than it does (embstr once loaded).
            out.push(format!("{db} {key} {deadline:?} {value}"));
        }
    }
    q(con, &["SELECT", "0"]);
    out
}

/// A key's value: its DUMP payload, except for hash tables, whose
/// payloads follow their own iteration order; those are compared sorted;
/// and streams, whose payloads carry when each consumer was last seen,
/// which a replica sets by its own clock as it applies XCLAIM (Redis's
/// replicas too): XINFO STREAM FULL without it.
fn value(con: &mut Connection, key: &str, encoding: &str) -> String {
    if encoding == "stream" {
        let full = q(con, &["XINFO", "STREAM", key, "FULL"]);
        return common::without_seen_times(full);
    }
    if encoding != "hashtable" {
        return format!("{:?}", q(con, &["DUMP", key]));
    }
    let command = match text(q(con, &["TYPE", key])).as_str() {
        "hash" => "HGETALL",
        _ => "SMEMBERS",
    };
    let Value::Array(items) = q(con, &[command, key]) else {
        panic!("{command} answers an array")
    };
    let mut items: Vec<String> = items.into_iter().map(text).collect();
    if command == "HGETALL" {
        let mut pairs: Vec<String> = items.chunks(2).map(|p| p.join("=")).collect();
        pairs.sort();
        return format!("hashtable {}", pairs.join(" "));
    }
    items.sort();
    format!("hashtable {}", items.join(" "))
}

/// Fails with the entries that differ, not the whole keyspace.
fn assert_same_keys(got: &[String], want: &[String]) {
    let short = |s: &String| s.chars().take(300).collect::<String>();
    let missing: Vec<String> = want
        .iter()
        .filter(|w| !got.contains(w))
        .map(short)
        .collect();
    let extra: Vec<String> = got
        .iter()
        .filter(|g| !want.contains(g))
        .map(short)
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "the replica lacks {missing:#?}\nand has instead {extra:#?}"
    );
}

fn functions(con: &mut Connection) -> String {
    format!("{:?}", q(con, &["FUNCTION", "LIST", "WITHCODE"]))
}

/// Waits until the replica applied all the primary wrote, and its link
/// is up. The bound is for a full sync of the at-scale data too, which a
/// debug build on a loaded machine took over 20 s to finish (45 s for the
/// whole test on a busy machine; far less in release).
fn until_in_sync(primary: &mut Connection, replica: &mut Connection) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let p = info(primary);
        let r = info(replica);
        let offset = common::info_value(&p, "master_repl_offset");
        if common::info_value(&r, "master_link_status") == "up"
            && common::info_value(&r, "master_repl_offset") == offset
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the replica did not catch up:\n{p}\n{r}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_same_data(primary: &mut Connection, replica: &mut Connection) {
    until_in_sync(primary, replica);
    let (want, got) = (keyspace(primary), keyspace(replica));
    assert!(want.len() > 10, "the primary holds the data set");
    assert_same_keys(&got, &want);
    assert_eq!(functions(replica), functions(primary));
}

fn sync_counts(primary: &mut Connection) -> (u64, u64) {
    let stats = text(q(primary, &["INFO", "stats"]));
    (
        common::info_number(&stats, "sync_full"),
        common::info_number(&stats, "sync_partial_ok"),
    )
}

/// REPLICAOF NO ONE: a primary now, the history it followed kept as
/// its second.
fn promote(r: &mut Connection) {
    let before = info(r);
    assert_eq!(text(q(r, &["REPLICAOF", "NO", "ONE"])), "OK");
    let after = info(r);
    assert_eq!(common::info_value(&after, "role"), "master");
    assert_eq!(
        common::info_value(&after, "master_replid2"),
        common::info_value(&before, "master_replid")
    );
}

/// One full sync (the data compared), then the stream applied.
fn full_sync_then_stream(p: &mut Connection, r: &mut Connection) {
    assert_same_data(p, r);
    assert_eq!(sync_counts(p), (1, 0));
    stream_writes(p, "one");
    assert_same_data(p, r);
}

/// The primary drops its replica's link after a write to another
/// database; writes go on meanwhile, the first of them in that database
/// with no SELECT of its own in the stream; the replica continues with a
/// partial resync.
fn drop_link_and_resume(p: &mut Connection, r: &mut Connection) {
    q(p, &["SELECT", "5"]);
    q(p, &["SET", "before-the-drop", "1"]);
    until_in_sync(p, r);
    assert_eq!(q(p, &["CLIENT", "KILL", "TYPE", "replica"]), Value::Int(1));
    q(p, &["SET", "after-the-drop", "1"]);
    q(p, &["SELECT", "0"]);
    stream_writes(p, "two");
    assert_same_data(p, r);
    assert_eq!(
        sync_counts(p),
        (1, 1),
        "one partial resync, no new full one"
    );
}

#[test]
fn full_sync_from_disk_then_the_stream_then_a_partial_resync() {
    let Some((server, mut p)) = primary("full_sync_from_disk", None) else {
        return;
    };
    q(&mut p, &["CONFIG", "SET", "repl-diskless-sync", "no"]);
    fill(&mut p);
    let port = server.port().to_string();
    let (_r, mut r) = rlockd(&["--replicaof", "127.0.0.1", &port]);
    full_sync_then_stream(&mut p, &mut r);

    let clients = text(q(&mut r, &["CLIENT", "LIST", "TYPE", "master"]));
    assert!(clients.contains(" flags=M "), "{clients}");
    drop_link_and_resume(&mut p, &mut r);

    // Dropped from this side, as Redis's CLIENT KILL TYPE master drops it.
    assert_eq!(
        q(&mut r, &["CLIENT", "KILL", "TYPE", "master"]),
        Value::Int(1)
    );
    stream_writes(&mut p, "three");
    assert_same_data(&mut p, &mut r);
    assert_eq!(sync_counts(&mut p), (1, 2));
}

#[test]
fn diskless_sync_at_run_time_read_only_and_promotion() {
    let Some((server, mut p)) = primary("diskless_sync_at_run_time", None) else {
        return;
    };
    q(&mut p, &["CONFIG", "SET", "repl-diskless-sync", "yes"]);
    fill(&mut p);
    let (_r, mut r) = rlockd(&[]);
    q(&mut r, &["SET", "mine", "gone after the sync"]);
    let port = server.port().to_string();
    assert_eq!(text(q(&mut r, &["REPLICAOF", "127.0.0.1", &port])), "OK");
    assert_eq!(
        text(q(&mut r, &["REPLICAOF", "127.0.0.1", &port])),
        "OK Already connected to specified master"
    );
    assert_same_data(&mut p, &mut r);
    stream_writes(&mut p, "one");
    assert_same_data(&mut p, &mut r);

    // WAIT is answered within 100 ms each time: the primary's GETACK is
    // answered at once (the ACKs of every second alone would not do).
    for i in 0..5 {
        q(&mut p, &["SET", "acked", &i.to_string()]);
        assert_eq!(q(&mut p, &["WAIT", "1", "100"]), Value::Int(1), "write {i}");
    }
    assert_eq!(
        q_err(&mut r, &["SET", "k", "v"]),
        "READONLY You can't write against a read only replica."
    );
    assert_eq!(
        q(&mut r, &["CONFIG", "GET", "replicaof"]),
        Value::Array(vec![
            Value::BulkString(b"replicaof".to_vec()),
            Value::BulkString(format!("127.0.0.1 {port}").into_bytes()),
        ])
    );
    let refused = q_err(&mut r, &["EVAL", "return redis.call('set','k','v')", "0"]);
    assert!(
        refused.starts_with("READONLY You can't write against a read only replica. script: "),
        "{refused}"
    );
    q(&mut r, &["CONFIG", "SET", "replica-read-only", "no"]);
    q(&mut r, &["SET", "local", "1"]);
    q(&mut r, &["CONFIG", "SET", "replica-read-only", "yes"]);
    q_err(&mut r, &["DEL", "local"]);

    promote(&mut r);
    assert_eq!(text(q(&mut r, &["SET", "k", "v"])), "OK");
    assert_eq!(text(q(&mut r, &["GET", "str"])), "hello");
    q(&mut p, &["SET", "after-promotion", "1"]);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(q(&mut r, &["EXISTS", "after-promotion"]), Value::Int(0));
}

#[test]
fn masterauth_authenticates_to_the_primary() {
    let Some((server, mut p)) = primary("masterauth", Some("s3cret")) else {
        return;
    };
    fill(&mut p);
    let port = server.port().to_string();
    let (_r, mut r) = rlockd(&["--replicaof", "127.0.0.1", &port, "--masterauth", "s3cret"]);
    assert_same_data(&mut p, &mut r);
}

/// The shape of ROLE and INFO replication: names in order, with the
/// values that do not depend on timing or ids.
fn replication_shape(con: &mut Connection) -> (Vec<String>, String) {
    let info = info(con);
    let names = info
        .lines()
        .filter_map(|l| {
            let (name, value) = l.split_once(':')?;
            Some(match name {
                "master_port"
                | "master_repl_offset"
                | "slave_repl_offset"
                | "slave_read_repl_offset"
                | "repl_backlog_first_byte_offset"
                | "repl_backlog_histlen"
                | "master_last_io_seconds_ago" => name.to_string(),
                _ => format!("{name}:{value}"),
            })
        })
        .collect();
    let role = match q(con, &["ROLE"]) {
        Value::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, v)| match (i, v) {
                (2 | 4, _) => "n".to_string(),
                (_, v) => text(v),
            })
            .collect::<Vec<_>>()
            .join(" "),
        other => panic!("ROLE answered {other:?}"),
    };
    (names, role)
}

#[test]
fn role_and_info_replication_as_a_redis_replica_answers() {
    let Some((server, mut p)) = primary("role_and_info", None) else {
        return;
    };
    let bin = refserver::redis_server_path("role_and_info").unwrap();
    let reference = RedisServer::start(&bin);
    let mut theirs = connect(reference.port());
    let (_r, mut ours) = rlockd(&[]);
    assert_eq!(
        replication_shape(&mut ours).1,
        replication_shape(&mut theirs).1
    );
    let port = server.port().to_string();
    for con in [&mut ours, &mut theirs] {
        q(con, &["REPLICAOF", "127.0.0.1", &port]);
    }
    q(&mut p, &["SET", "k", "v"]);
    until_in_sync(&mut p, &mut ours);
    until_in_sync(&mut p, &mut theirs);
    assert_eq!(replication_shape(&mut ours), replication_shape(&mut theirs));
    // The primary goes away: both say the link is down.
    drop(server);
    for con in [&mut ours, &mut theirs] {
        let deadline = Instant::now() + Duration::from_secs(10);
        while common::info_value(&info(con), "master_link_status") != "down" {
            assert!(Instant::now() < deadline, "the link stays up");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let (ours_info, ours_role) = replication_shape(&mut ours);
    let (theirs_info, _) = replication_shape(&mut theirs);
    // Both retry once a second: between tries, or connecting.
    let words: Vec<&str> = ours_role.split(' ').collect();
    assert_eq!(words[..2], ["slave", "127.0.0.1"]);
    assert!(["connect", "connecting"].contains(&words[3]), "{ours_role}");
    let names = |lines: &[String]| -> Vec<String> {
        lines
            .iter()
            .map(|l| l.split(':').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&ours_info), names(&theirs_info));
}

/// A replica does not expire keys itself: past its deadline a key reads
/// as gone but stays stored (DBSIZE counts it, as on a Redis replica)
/// until the primary's DEL arrives.
#[test]
fn a_replica_waits_for_the_primarys_del() {
    let Some((server, mut p)) = primary("waits_for_the_del", None) else {
        return;
    };
    q(&mut p, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    let port = server.port().to_string();
    let (_r, mut r) = rlockd(&["--replicaof", "127.0.0.1", &port]);
    q(&mut p, &["SET", "brief", "v", "PX", "100"]);
    until_in_sync(&mut p, &mut r);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(q(&mut r, &["GET", "brief"]), Value::Nil);
    assert_eq!(q(&mut r, &["DBSIZE"]), Value::Int(1), "still stored");
    // The primary's own read expires it, and sends the DEL.
    assert_eq!(q(&mut p, &["GET", "brief"]), Value::Nil);
    until_in_sync(&mut p, &mut r);
    assert_eq!(q(&mut r, &["DBSIZE"]), Value::Int(0));
}

/// A command's reply, or its error's text.
fn reply_or_error(con: &mut Connection, args: &[&str]) -> String {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    match c.query::<Value>(con) {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or("")),
    }
}

/// `replica-serve-stale-data no`: while the link is down, what is not
/// flagged `stale` is refused with MASTERDOWN, as redis-server refuses it.
#[test]
fn no_stale_data_while_the_link_is_down() {
    let Some(bin) = refserver::redis_server_path("no_stale_data") else {
        return;
    };
    let reference = RedisServer::start(&bin);
    let mut theirs = connect(reference.port());
    let (_r, mut ours) = rlockd(&[]);
    // A port nobody listens on.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = dead.local_addr().unwrap().port().to_string();
    drop(dead);
    let lines: &[&[&str]] = &[
        &["SET", "k", "v"],
        &["GET", "k"],
        &["PING"],
        &["DBSIZE"],
        &["CONFIG", "GET", "replica-serve-stale-data"],
        &["ECHO", "x"],
        &["MULTI"],
        &["DISCARD"],
        &["ROLE"],
    ];
    for con in [&mut ours, &mut theirs] {
        q(con, &["SET", "k", "v"]);
        q(con, &["CONFIG", "SET", "replica-serve-stale-data", "no"]);
        q(con, &["REPLICAOF", "127.0.0.1", &port]);
    }
    for line in lines {
        let (mine, redis) = (
            reply_or_error(&mut ours, line),
            reply_or_error(&mut theirs, line),
        );
        // ROLE's link state may be caught between tries.
        if line[0] != "ROLE" {
            assert_eq!(mine, redis, "{line:?}");
        }
    }
    assert!(reply_or_error(&mut ours, &["GET", "k"]).starts_with("MASTERDOWN"));
    q(
        &mut ours,
        &["CONFIG", "SET", "replica-serve-stale-data", "yes"],
    );
    assert_eq!(
        q(&mut ours, &["GET", "k"]),
        Value::BulkString(b"v".to_vec())
    );
}

/// After a failover: the replica follows the promoted one, which knows
/// its history under its old id and continues it under its new one
/// (`+CONTINUE <new id>`), without a full sync.
#[test]
fn following_a_promoted_replica_continues_under_its_new_id() {
    let Some((server, mut p)) = primary("promoted_replica", None) else {
        return;
    };
    fill(&mut p);
    let bin = refserver::redis_server_path("promoted_replica").unwrap();
    let other = RedisServer::start(&bin);
    let mut o = connect(other.port());
    let port = server.port().to_string();
    q(&mut o, &["REPLICAOF", "127.0.0.1", &port]);
    let (_r, mut r) = rlockd(&["--replicaof", "127.0.0.1", &port]);
    stream_writes(&mut p, "one");
    until_in_sync(&mut p, &mut o);
    assert_same_data(&mut p, &mut r);

    q(&mut o, &["REPLICAOF", "NO", "ONE"]);
    let other_port = other.port().to_string();
    q(&mut r, &["REPLICAOF", "127.0.0.1", &other_port]);
    stream_writes(&mut o, "two");
    assert_same_data(&mut o, &mut r);
    assert_eq!(sync_counts(&mut o), (0, 1), "a partial resync only");
    assert_eq!(
        common::info_value(&info(&mut r), "master_replid"),
        common::info_value(&info(&mut o), "master_replid")
    );
}

/// The handshake of a Redis 7.0 replica, with `masteruser`/`masterauth`
/// and the announced address; a primary silent past `repl-timeout` is
/// dropped and connected to again.
#[test]
fn the_handshake_and_repl_timeout() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let (_r, mut r) = rlockd(&[
        "--masteruser",
        "repl",
        "--masterauth",
        "pw",
        "--replica-announce-ip",
        "10.1.2.3",
        "--replica-announce-port",
        "7777",
        "--repl-timeout",
        "1",
    ]);
    q(&mut r, &["REPLICAOF", "127.0.0.1", &port]);
    let expected: Vec<Vec<String>> = [
        &["PING"][..],
        &["AUTH", "repl", "pw"],
        &["REPLCONF", "listening-port", "7777"],
        &["REPLCONF", "ip-address", "10.1.2.3"],
        &["REPLCONF", "capa", "eof", "capa", "psync2"],
        &["PSYNC", "?", "-1"],
    ]
    .iter()
    .map(|c| c.iter().map(|s| s.to_string()).collect())
    .collect();
    let started = Instant::now();
    let (_first, seen) = common::fake_primary::handshake_seen(&listener);
    assert_eq!(seen, expected);
    // The full resync was taken: the replica waits for the payload.
    let deadline = Instant::now() + common::WAIT;
    while common::info_value(&info(&mut r), "master_sync_in_progress") != "1" {
        assert!(
            Instant::now() < deadline,
            "no sync in progress: {}",
            info(&mut r)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // Silent for a second: the link is dropped, and made again.
    assert_eq!(common::fake_primary::handshake_seen(&listener).1, expected);
    assert!(started.elapsed() >= Duration::from_secs(1));
}

/// A key past its deadline in the primary's snapshot is loaded all the
/// same (DBSIZE counts it, as on a Redis replica), for the primary's DEL.
#[test]
fn a_replica_keeps_expired_keys_of_the_snapshot() {
    let Some((server, mut p)) = primary("keeps_expired_keys", None) else {
        return;
    };
    q(&mut p, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    q(&mut p, &["SET", "brief", "v", "PX", "1"]);
    std::thread::sleep(Duration::from_millis(20));
    let port = server.port().to_string();
    let (_r, mut r) = rlockd(&["--replicaof", "127.0.0.1", &port]);
    until_in_sync(&mut p, &mut r);
    assert_eq!(q(&mut r, &["DBSIZE"]), Value::Int(1));
    assert_eq!(q(&mut r, &["EXISTS", "brief"]), Value::Int(0));
}

/// While the primary's snapshot loads, clients are told LOADING, as
/// Redis tells them; before it, they read the old data.
#[test]
fn clients_are_told_loading_during_a_full_sync() {
    let Some((server, mut p)) = primary("loading_during_sync", None) else {
        return;
    };
    q(&mut p, &["DEBUG", "POPULATE", "300000"]);
    let (_r, mut r) = rlockd(&[]);
    q(&mut r, &["SET", "old", "1"]);
    let port = server.port().to_string();
    q(&mut r, &["REPLICAOF", "127.0.0.1", &port]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    loop {
        let answer = reply_or_error(&mut r, &["DBSIZE"]);
        if seen.last() != Some(&answer) {
            seen.push(answer.clone());
        }
        if answer == "int(300000)" {
            break;
        }
        assert!(Instant::now() < deadline, "{seen:?}");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        seen,
        [
            "int(1)",
            "LOADING Redis is loading the dataset in memory",
            "int(300000)"
        ]
    );
}

/// `repl-diskless-load` and `rdb-del-sync-files` as a Redis 7.0 replica
/// takes them (issue #30): `disabled`, and `on-empty-db` over keys of the
/// replica's own, leave the primary's snapshot as the replica's
/// `dump.rdb`, which `rdb-del-sync-files yes` removes once loaded (the
/// replica saving nothing itself); `on-empty-db` on an empty replica and
/// `swapdb` load it from the link and write no file.
#[test]
fn diskless_load_and_the_sync_file_as_a_redis_replica() {
    let Some((server, mut p)) = primary("diskless_load", None) else {
        return;
    };
    q(&mut p, &["SET", "k", "v"]);
    let port = server.port().to_string();
    let bin = refserver::redis_server_path("diskless_load").unwrap();
    let cases = [
        ("disabled", "no", false),
        ("on-empty-db", "no", false),
        ("on-empty-db", "no", true),
        ("swapdb", "no", true),
        ("disabled", "yes", false),
    ];
    for (load, delete, own_keys) in cases {
        let case =
            format!("repl-diskless-load {load}, rdb-del-sync-files {delete}, keys {own_keys}");
        let reference = RedisServer::start(&bin);
        let dir = common::TempDir::new(&format!("load-{load}-{delete}-{own_keys}"));
        let (_r, mut ours) = rlockd(&["--dir", dir.arg()]);
        let mut theirs = connect(reference.port());
        let mut files = Vec::new();
        for (con, dir) in [
            (&mut ours, std::path::Path::new(dir.arg())),
            (&mut theirs, reference.dir()),
        ] {
            q(con, &["CONFIG", "SET", "repl-diskless-load", load]);
            q(con, &["CONFIG", "SET", "rdb-del-sync-files", delete]);
            if own_keys {
                q(con, &["SET", "mine", "1"]);
            }
            q(con, &["REPLICAOF", "127.0.0.1", &port]);
            until_in_sync(&mut p, con);
            assert_eq!(text(q(con, &["GET", "k"])), "v", "{case}");
            assert_eq!(q(con, &["EXISTS", "mine"]), Value::Int(0), "{case}");
            files.push(dir.join("dump.rdb").exists());
        }
        let written = (load == "disabled" || own_keys && load == "on-empty-db") && delete == "no";
        assert_eq!(
            files,
            [written, written],
            "{case}: dump.rdb (rlockd's, redis-server's)"
        );
    }
}

// rlockd as a primary (issue #30, item 2): redis-server 7.0.15 and rlockd
// as its replicas.

/// A redis-server replica of the rlockd listening on `port`, or `None`
/// (and the test skipped) without redis-server.
fn redis_replica_of(test: &str, port: u16) -> Option<(RedisServer, Connection)> {
    let bin = refserver::redis_server_path(test)?;
    let server = RedisServer::start(&bin);
    let mut con = connect(server.port());
    q(&mut con, &["REPLICAOF", "127.0.0.1", &port.to_string()]);
    Some((server, con))
}

fn port_of(con: &mut Connection) -> u16 {
    let Value::Array(pair) = q(con, &["CONFIG", "GET", "port"]) else {
        panic!("CONFIG GET answers an array")
    };
    text(pair[1].clone()).parse().expect("a port")
}

/// Writes from another connection while `during` runs (a full sync).
fn writing_while(port: u16, during: impl FnOnce()) {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut con = connect(port);
            for i in 0..5000 {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                q(
                    &mut con,
                    &["SET", &format!("during-{}", i % 50), &i.to_string()],
                );
                q(&mut con, &["HSET", "during-hash", &i.to_string(), "v"]);
            }
        })
    };
    during();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().expect("the writer");
}

/// Waits until `con`'s replica is listed online.
fn until_online(primary: &mut Connection) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !info(primary).contains("state=online") {
        assert!(Instant::now() < deadline, "no replica came online");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_redis_replica_of_rlockd_full_sync_stream_and_partial_resync() {
    let (_p, mut p) = rlockd(&["--repl-diskless-sync", "no"]);
    fill(&mut p);
    let port = port_of(&mut p);
    let mut replica = None;
    writing_while(port, || {
        replica = redis_replica_of("redis_replica_of_rlockd", port);
        if let Some((_, r)) = &mut replica {
            until_online(&mut p);
            until_in_sync(&mut p, r);
        }
    });
    let Some((server, mut r)) = replica else {
        return;
    };
    full_sync_then_stream(&mut p, &mut r);

    let listed = text(q(&mut p, &["CLIENT", "LIST", "TYPE", "replica"]));
    assert!(listed.contains(" flags=S "), "{listed}");
    // The replica acknowledges once a second; ROLE lists it with the
    // offset it acknowledged.
    let deadline = Instant::now() + common::WAIT;
    loop {
        let Value::Array(role) = q(&mut p, &["ROLE"]) else {
            panic!("ROLE answers an array")
        };
        let Value::Int(offset) = role[1] else {
            panic!("ROLE's offset: {role:?}")
        };
        let want = Value::Array(vec![Value::Array(vec![
            Value::BulkString(b"127.0.0.1".to_vec()),
            Value::BulkString(server.port().to_string().into_bytes()),
            Value::BulkString(offset.to_string().into_bytes()),
        ])]);
        assert_eq!(role[0], Value::BulkString(b"master".to_vec()));
        if role[2] == want {
            break;
        }
        assert!(Instant::now() < deadline, "{role:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let replication = info(&mut p);
    assert_eq!(common::info_value(&replication, "connected_slaves"), "1");
    assert!(
        common::info_value(&replication, "slave0").starts_with(&format!(
            "ip=127.0.0.1,port={},state=online,offset=",
            server.port()
        )),
        "{replication}"
    );

    drop_link_and_resume(&mut p, &mut r);

    // Libraries loaded and deleted reach the replica as they are.
    q(
        &mut p,
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=later\nredis.register_function('g', function() return 1 end)",
        ],
    );
    q(&mut p, &["FUNCTION", "DELETE", "lib"]);
    until_in_sync(&mut p, &mut r);
    assert_eq!(functions(&mut r), functions(&mut p));

    // PUBLISH reaches the replica's subscribers.
    let mut sub = connect(server.port());
    q(&mut sub, &["SUBSCRIBE", "news"]);
    q(&mut p, &["PUBLISH", "news", "hello"]);
    let message = sub.recv_response().expect("the message");
    assert_eq!(
        message,
        Value::Array(vec![
            Value::BulkString(b"message".to_vec()),
            Value::BulkString(b"news".to_vec()),
            Value::BulkString(b"hello".to_vec()),
        ])
    );

    // A key past its deadline stays on the replica until the primary's
    // DEL: DBSIZE counts it there until then.
    let before = q(&mut p, &["DBSIZE"]);
    q(&mut p, &["SET", "short", "v", "PX", "50"]);
    std::thread::sleep(Duration::from_millis(300));
    until_in_sync(&mut p, &mut r);
    assert_eq!(q(&mut p, &["DBSIZE"]), before);
    assert_eq!(
        q(&mut r, &["DBSIZE"]),
        before,
        "the DEL reached the replica"
    );
}

#[test]
fn an_rlockd_replica_of_rlockd_diskless_then_promoted() {
    let (_p, mut p) = rlockd(&["--repl-diskless-sync-delay", "0"]);
    fill(&mut p);
    let port = port_of(&mut p).to_string();
    let (_r, mut r) = rlockd(&["--replicaof", "127.0.0.1", &port]);
    full_sync_then_stream(&mut p, &mut r);
    drop_link_and_resume(&mut p, &mut r);

    // WAIT counts the replica's acknowledgement of each write, at once
    // (the primary asks for it), and a second replica that is not there
    // only after the timeout.
    for i in 0..5 {
        q(&mut p, &["SET", "acked", &i.to_string()]);
        assert_eq!(q(&mut p, &["WAIT", "1", "500"]), Value::Int(1), "write {i}");
    }
    let asked = Instant::now();
    assert_eq!(q(&mut p, &["WAIT", "2", "300"]), Value::Int(1));
    assert!(asked.elapsed() >= Duration::from_millis(300));
    assert_eq!(
        q_err(&mut r, &["WAIT", "1", "0"]),
        "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 \
         if a replica is configured to be writable (which is not the default) writes to \
         replicas are just local and are not propagated."
    );
    // PINGs every repl-ping-replica-period are part of the stream.
    q(&mut p, &["CONFIG", "SET", "repl-ping-replica-period", "1"]);
    let offset = |p: &mut Connection| common::info_number(&info(p), "master_repl_offset");
    let before = offset(&mut p);
    std::thread::sleep(Duration::from_millis(2500));
    let pinged = offset(&mut p) - before;
    assert!(
        pinged > 0 && pinged % 14 == 0,
        "PINGs of 14 bytes each: {pinged}"
    );
    until_in_sync(&mut p, &mut r);

    // min-replicas-to-write counts the replicas that acknowledged lately.
    q(&mut p, &["CONFIG", "SET", "min-replicas-to-write", "1"]);
    assert_eq!(text(q(&mut p, &["SET", "guarded", "1"])), "OK");
    q(&mut p, &["CONFIG", "SET", "min-replicas-to-write", "2"]);
    assert_eq!(
        q_err(&mut p, &["SET", "guarded", "2"]),
        "NOREPLICAS Not enough good replicas to write."
    );
    assert_eq!(
        common::info_value(&info(&mut p), "min_slaves_good_slaves"),
        "1"
    );
    q(&mut p, &["CONFIG", "SET", "min-replicas-to-write", "0"]);

    until_in_sync(&mut p, &mut r);
    promote(&mut r);
    let (want, got) = (keyspace(&mut p), keyspace(&mut r));
    assert_same_keys(&got, &want);
    assert_eq!(text(q(&mut r, &["SET", "k", "v"])), "OK");
}

#[test]
fn a_replica_of_an_rlockd_replica_keeps_the_top_primarys_offsets() {
    let (_p, mut p) = rlockd(&["--repl-diskless-sync-delay", "0"]);
    fill(&mut p);
    let port = port_of(&mut p).to_string();
    let (_r1, mut r1) = rlockd(&["--replicaof", "127.0.0.1", &port]);
    until_in_sync(&mut p, &mut r1);
    let Some((_r2, mut r2)) = redis_replica_of("chained_replica", port_of(&mut r1)) else {
        return;
    };
    // The second replica's offset is the top primary's: the first one
    // passes the stream on as it came.
    stream_writes(&mut p, "one");
    assert_same_data(&mut p, &mut r2);
    assert_eq!(sync_counts(&mut r1), (1, 0));

    // Promoted, the first replica drops its own replicas, which continue
    // under its new id without a new snapshot.
    promote(&mut r1);
    q(&mut r1, &["SET", "after-promotion", "1"]);
    assert_same_data(&mut r1, &mut r2);
    assert_eq!(sync_counts(&mut r1), (1, 1));
}

fn role_name(con: &mut Connection) -> String {
    let Value::Array(role) = q(con, &["ROLE"]) else {
        panic!("ROLE answers an array")
    };
    text(role[0].clone())
}

#[test]
fn failover_switches_to_the_replica_with_the_data_and_offsets_kept() {
    // A lone server's refusals are Redis's.
    let (_lone, mut lone) = rlockd(&[]);
    let refusals: &[&[&str]] = &[
        &["FAILOVER"],
        &["FAILOVER", "ABORT"],
        &["FAILOVER", "TIMEOUT", "0"],
        &["FAILOVER", "FORCE", "TO", "127.0.0.1", "1"],
        &["FAILOVER", "BOGUS"],
    ];
    let bin = refserver::redis_server_path("failover");
    let reference = bin.as_ref().map(|bin| RedisServer::start(bin));
    for args in refusals {
        let ours = q_err(&mut lone, args);
        if let Some(server) = &reference {
            let theirs = q_err(&mut connect(server.port()), args);
            assert_eq!(ours, theirs, "{args:?}");
        }
    }

    let (_p, mut p) = rlockd(&["--repl-diskless-sync-delay", "0"]);
    fill(&mut p);
    let port = port_of(&mut p).to_string();
    let (_r, mut r) = rlockd(&["--replicaof", "127.0.0.1", &port]);
    let replica_port = port_of(&mut r).to_string();
    until_in_sync(&mut p, &mut r);
    assert_eq!(
        q_err(&mut p, &["FAILOVER", "TO", "127.0.0.1", "1"]),
        "ERR FAILOVER target HOST and PORT is not a replica."
    );
    let want = keyspace(&mut p);
    assert_eq!(
        text(q(
            &mut p,
            &[
                "FAILOVER",
                "TO",
                "127.0.0.1",
                &replica_port,
                "TIMEOUT",
                "5000"
            ]
        )),
        "OK"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while role_name(&mut p) != "slave"
        || common::info_value(&info(&mut p), "master_failover_state") != "no-failover"
    {
        assert!(Instant::now() < deadline, "{}", info(&mut p));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(role_name(&mut r), "master");
    // The old primary continued the new one's history: no new snapshot.
    assert_eq!(sync_counts(&mut r), (0, 1));
    assert_same_keys(&keyspace(&mut r), &want);
    q(&mut r, &["SET", "after-failover", "1"]);
    until_in_sync(&mut r, &mut p);
    assert_eq!(text(q(&mut p, &["GET", "after-failover"])), "1");
}

#[test]
fn redis_cli_rdb_takes_a_snapshot_over_sync() {
    let Some(cli) = refserver::redis_cli_path("redis_cli_rdb") else {
        return;
    };
    let (_p, mut p) = rlockd(&["--repl-diskless-sync-delay", "0"]);
    fill(&mut p);
    let dir = refserver::TempDir::new("rdb-over-sync");
    let file = dir.path("taken.rdb");
    let status = std::process::Command::new(&cli)
        .args(["-p", &port_of(&mut p).to_string(), "--rdb"])
        .arg(&file)
        .output()
        .expect("redis-cli runs");
    assert!(status.status.success(), "{status:?}");
    // The file loads into redis-server with the same keys.
    let bin = refserver::redis_server_path("redis_cli_rdb").expect("redis-server beside redis-cli");
    let loaded = RedisServer::start_setup(
        &bin,
        refserver::Setup {
            rdb: Some(&file),
            ..Default::default()
        },
    );
    let mut r = connect(loaded.port());
    assert_same_keys(&keyspace(&mut r), &keyspace(&mut p));
    assert_eq!(sync_counts(&mut p), (1, 0));

    // With no replica left, the backlog is freed after repl-backlog-ttl,
    // and the history with it.
    let before = info(&mut p);
    assert_eq!(common::info_value(&before, "repl_backlog_active"), "1");
    q(&mut p, &["CONFIG", "SET", "repl-backlog-ttl", "1"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    let after = loop {
        let now = info(&mut p);
        if common::info_value(&now, "repl_backlog_active") == "0" {
            break now;
        }
        assert!(Instant::now() < deadline, "{now}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_ne!(
        common::info_value(&after, "master_replid"),
        common::info_value(&before, "master_replid")
    );
}

// Replication ids that survive a restart (issue #30, item 3): the
// snapshot file says where in a history it stands (`repl-id`,
// `repl-offset`, `repl-stream-db`), as Redis 7.0's does.

/// An rlockd on `port` (0: any) working in `dir`, with `extra` arguments.
fn rlockd_in(dir: &common::TempDir, port: u16, extra: &[&str]) -> (Running, Connection) {
    let port = port.to_string();
    let mut args = vec!["--port", &port, "--dir", dir.arg()];
    args.extend_from_slice(extra);
    let (child, port) = common::spawn_binary(&args);
    (Running::new(child), connect(port))
}

/// `SHUTDOWN` (with `how`'s words), then waits for the process to end.
fn shut_down(server: &mut Running, con: &mut Connection, how: &[&str]) {
    let mut c = redis::cmd("SHUTDOWN");
    for word in how {
        c.arg(*word);
    }
    // The server closes the connection rather than answer.
    let _ = c.query::<Value>(con);
    let status = server.0.wait().expect("the server ends");
    assert!(
        status.success(),
        "SHUTDOWN ends the server cleanly: {status}"
    );
}

/// A replica with `save` points is shut down (its snapshot saved),
/// misses writes, and starts again from its file: it asks to continue
/// the primary's history where the file stood, and does, with no new
/// full sync.
fn restarted_replica_continues(p: &mut Connection, primary_port: u16) {
    fill(p);
    let dir = common::TempDir::new(&format!("restarted-replica-{primary_port}"));
    let port = primary_port.to_string();
    let follow = ["--replicaof", "127.0.0.1", &port, "--save", "3600 1"];
    let (mut server, mut r) = rlockd_in(&dir, 0, &follow);
    full_sync_then_stream(p, &mut r);
    q(p, &["SELECT", "5"]);
    q(p, &["SET", "selected-before-the-restart", "1"]);
    until_in_sync(p, &mut r);
    let before = info(&mut r);
    shut_down(&mut server, &mut r, &[]);

    // The stream after the restart goes on in the database it had
    // selected: the file says which.
    q(p, &["SET", "while-down", "1"]);
    q(p, &["SELECT", "0"]);
    stream_writes(p, "while-down");
    let (_server, mut r) = rlockd_in(&dir, 0, &follow);
    assert_same_data(p, &mut r);
    assert_eq!(sync_counts(p), (1, 1), "a partial resync, no new full one");
    assert_eq!(
        common::info_value(&info(&mut r), "master_replid"),
        common::info_value(&before, "master_replid")
    );
}

#[test]
fn a_restarted_replica_of_redis_continues_from_its_snapshot() {
    let Some((server, mut p)) = primary("restarted_replica_of_redis", None) else {
        return;
    };
    restarted_replica_continues(&mut p, server.port());
}

#[test]
fn a_restarted_replica_of_rlockd_continues_from_its_snapshot() {
    let (_p, mut p) = rlockd(&["--repl-diskless-sync-delay", "0"]);
    let port = port_of(&mut p);
    restarted_replica_continues(&mut p, port);
}

/// A primary restarted from its snapshot keeps the history it saved as
/// its second id: an rlockd replica and a redis-server one, which stood
/// at the file's offset, continue under its new id.
#[test]
fn a_restarted_primary_keeps_its_replicas_history() {
    let dir = common::TempDir::new("restarted-primary");
    let port = refserver::free_port();
    let args = ["--repl-diskless-sync-delay", "0"];
    let (mut server, mut p) = rlockd_in(&dir, port, &args);
    fill(&mut p);
    let p_port = port.to_string();
    let (_r1, r1) = rlockd(&["--replicaof", "127.0.0.1", &p_port]);
    // Without redis-server, the rlockd replica alone.
    let (_redis, r2) = redis_replica_of("restarted_primary", port).unzip();
    let mut replicas: Vec<Connection> = std::iter::once(r1).chain(r2).collect();
    for r in &mut replicas {
        assert_same_data(&mut p, r);
    }
    let before = info(&mut p);
    shut_down(&mut server, &mut p, &["SAVE"]);

    let (_server, mut p) = rlockd_in(&dir, port, &args);
    let after = info(&mut p);
    assert_eq!(
        common::info_value(&after, "master_replid2"),
        common::info_value(&before, "master_replid")
    );
    assert_ne!(
        common::info_value(&after, "master_replid"),
        common::info_value(&before, "master_replid")
    );
    assert_eq!(
        common::info_number(&after, "second_repl_offset"),
        common::info_number(&before, "master_repl_offset") + 1
    );
    stream_writes(&mut p, "after-the-restart");
    for r in &mut replicas {
        assert_same_data(&mut p, r);
    }
    assert_eq!(
        sync_counts(&mut p),
        (0, replicas.len() as u64),
        "each replica continued, none synced in full"
    );
}

/// A redis-server replica of `primary_port` started from the snapshot in
/// `dir`, on a free port: as Redis takes a file's history back only when
/// it starts as a replica, with `--replicaof`.
fn redis_replica_from(
    bin: &std::path::Path,
    dir: &common::TempDir,
    primary_port: u16,
) -> (Running, Connection) {
    let port = refserver::free_port();
    let child = std::process::Command::new(bin)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--dir", dir.arg(), "--save", "", "--appendonly", "no"])
        .args(["--replicaof", "127.0.0.1", &primary_port.to_string()])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("redis-server starts");
    let server = Running::new(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(mut con) = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .and_then(|c| c.get_connection())
            && redis::cmd("PING").query::<String>(&mut con).is_ok()
        {
            return (server, con);
        }
        assert!(Instant::now() < deadline, "redis-server did not answer");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The files go both ways: redis-server restarted as a replica from the
/// snapshot an rlockd replica saved continues the primary's history, and
/// rlockd from the one redis-server saved does too.
#[test]
fn restart_files_carry_the_history_between_redis_and_rlockd() {
    let test = "restart_files_between_redis_and_rlockd";
    let Some((server, mut p)) = primary(test, None) else {
        return;
    };
    let bin = refserver::redis_server_path(test).expect("found before");
    fill(&mut p);
    let port = server.port();
    let port_arg = port.to_string();
    let written_by_rlockd = common::TempDir::new("written-by-rlockd");
    let follow = ["--replicaof", "127.0.0.1", &port_arg];
    let (mut rlockd_replica, mut r) = rlockd_in(&written_by_rlockd, 0, &follow);
    full_sync_then_stream(&mut p, &mut r);
    shut_down(&mut rlockd_replica, &mut r, &["SAVE"]);

    stream_writes(&mut p, "redis-reads-rlockd");
    let (mut redis_replica, mut r) = redis_replica_from(&bin, &written_by_rlockd, port);
    assert_same_data(&mut p, &mut r);
    assert_eq!(sync_counts(&mut p), (1, 1), "redis-server continued");
    shut_down(&mut redis_replica, &mut r, &["SAVE"]);

    stream_writes(&mut p, "rlockd-reads-redis");
    let (_rlockd_again, mut r) = rlockd_in(&written_by_rlockd, 0, &follow);
    assert_same_data(&mut p, &mut r);
    assert_eq!(sync_counts(&mut p), (1, 2), "rlockd continued");
}

// The issue's scale: a full sync of 100k keys of every type.

const SCALE_KEYS: usize = 100_000;

/// `SCALE_KEYS` keys, every type in turn (small enough for the compact
/// encodings, whose payloads do not depend on a hash table's order), a
/// tenth of them with a deadline, sent pipelined.
fn fill_at_scale(con: &mut Connection) {
    for chunk in (0..SCALE_KEYS).collect::<Vec<_>>().chunks(2000) {
        let mut pipe = redis::pipe();
        for &i in chunk {
            let key = format!("scale:{i}");
            let n = i.to_string();
            match i % 6 {
                0 => pipe.cmd("SET").arg(&key).arg(format!("value-{n}")),
                1 => pipe.cmd("HSET").arg(&key).arg(&["a", &n, "b", "text"]),
                2 => pipe.cmd("RPUSH").arg(&key).arg(&["a", &n, "c"]),
                3 => pipe.cmd("SADD").arg(&key).arg(&["1", &n, "300"]),
                4 => pipe.cmd("ZADD").arg(&key).arg(&["1", "a", "2.5", &n]),
                _ => pipe.cmd("XADD").arg(&key).arg(&["*", "f", &n]),
            };
            if i % 10 == 0 {
                pipe.cmd("PEXPIRE").arg(&key).arg(3_600_000);
            }
        }
        pipe.query::<()>(con).expect("the fill");
    }
}

/// Every key of database 0 with its DUMP payload and deadline, read
/// pipelined, sorted.
fn keyspace_at_scale(con: &mut Connection) -> Vec<(String, Vec<u8>, i64)> {
    let Value::Array(keys) = q(con, &["KEYS", "*"]) else {
        panic!("KEYS answers an array")
    };
    let mut keys: Vec<String> = keys.into_iter().map(text).collect();
    keys.sort();
    let mut out = Vec::with_capacity(keys.len());
    for chunk in keys.chunks(2000) {
        let mut pipe = redis::pipe();
        for key in chunk {
            pipe.cmd("DUMP").arg(key).cmd("PEXPIRETIME").arg(key);
        }
        let replies: Vec<Value> = pipe.query(con).expect("DUMP and PEXPIRETIME");
        for (key, pair) in chunk.iter().zip(replies.chunks(2)) {
            let (Value::BulkString(payload), Value::Int(deadline)) = (&pair[0], &pair[1]) else {
                panic!("{key}: {pair:?}")
            };
            out.push((key.clone(), payload.clone(), *deadline));
        }
    }
    out
}

fn assert_same_at_scale(p: &mut Connection, r: &mut Connection) {
    until_in_sync(p, r);
    let (want, got) = (keyspace_at_scale(p), keyspace_at_scale(r));
    assert!(want.len() >= SCALE_KEYS, "{} keys", want.len());
    let differ: Vec<&String> = want
        .iter()
        .zip(&got)
        .filter(|(w, g)| w != g)
        .map(|(w, _)| &w.0)
        .take(10)
        .collect();
    assert!(
        want.len() == got.len() && differ.is_empty(),
        "{} keys on the primary, {} on the replica; first that differ: {differ:?}",
        want.len(),
        got.len()
    );
}

#[test]
fn a_full_sync_of_100k_keys_of_every_type_both_ways() {
    let Some((server, mut p)) = primary("full_sync_at_scale", None) else {
        return;
    };
    fill_at_scale(&mut p);
    let port = server.port().to_string();
    let (_r, mut r) = rlockd(&["--replicaof", "127.0.0.1", &port]);
    assert_same_at_scale(&mut p, &mut r);

    // And from rlockd to a redis-server replica.
    let (_p, mut p) = rlockd(&["--repl-diskless-sync-delay", "0"]);
    fill_at_scale(&mut p);
    let port = port_of(&mut p);
    let (_server, mut r) =
        redis_replica_of("full_sync_at_scale", port).expect("redis-server was found before");
    assert_same_at_scale(&mut p, &mut r);
}

// One full sync for several replicas (issue #30, the streamed sync): the
// snapshot is taken once and streamed to every replica that asked within
// the delay, as Redis 7.0 does.

/// How many snapshots for replicas the log at `path` tells of, with the
/// `target` Redis names (`replicas sockets`, `disk`).
fn syncs_started(path: &std::path::Path, target: &str) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .matches(&format!("Starting BGSAVE for SYNC with target: {target}\n"))
        .count()
}

/// Each `slaveN` line's `state=`, in INFO replication.
fn replica_states(primary: &mut Connection) -> Vec<String> {
    info(primary)
        .lines()
        .filter(|l| l.starts_with("slave") && l.contains("state="))
        .filter_map(|l| {
            l.split("state=")
                .nth(1)?
                .split(',')
                .next()
                .map(String::from)
        })
        .collect()
}

/// A primary with DEBUG on and `extra` arguments, logging to a file in
/// `dir`, whose path comes back too.
fn logging_primary(
    dir: &common::TempDir,
    extra: &[&str],
) -> (Running, Connection, std::path::PathBuf) {
    let log = dir.file("primary.log");
    let mut args = vec![
        "--logfile",
        log.to_str().unwrap(),
        "--enable-debug-command",
        "yes",
    ];
    args.extend_from_slice(extra);
    let (server, con) = rlockd_in(dir, 0, &args);
    (server, con, log)
}

/// A redis-server replica of `port` (`test` names it for the skip
/// list), or, without redis-server, another rlockd one in `replicas`.
fn redis_or_rlockd_replica(
    test: &str,
    port: u16,
    replicas: &mut Vec<(Running, Connection)>,
) -> Option<(RedisServer, Connection)> {
    let redis = redis_replica_of(test, port);
    if redis.is_none() {
        replicas.push(rlockd(&["--replicaof", "127.0.0.1", &port.to_string()]));
    }
    redis
}

/// Each replica ends with the primary's data.
fn assert_all_same_data(
    p: &mut Connection,
    replicas: &mut [(Running, Connection)],
    redis: &mut Option<(RedisServer, Connection)>,
) {
    for (_, r) in replicas.iter_mut() {
        assert_same_data(p, r);
    }
    if let Some((_, r)) = redis {
        assert_same_data(p, r);
    }
}

#[test]
fn replicas_within_the_delay_share_one_streamed_snapshot() {
    let dir = common::TempDir::new("shared-sync");
    // A delay far longer than the test waits: the transfer starts because
    // `repl-diskless-sync-max-replicas` replicas wait.
    let (_p, mut p, log) = logging_primary(
        &dir,
        &[
            "--repl-diskless-sync-delay",
            "60",
            "--repl-diskless-sync-max-replicas",
            "3",
        ],
    );
    fill(&mut p);
    q(&mut p, &["DEBUG", "POPULATE", "3000", "bulk", "100"]);
    let port = port_of(&mut p);
    let arg = port.to_string();
    let mut replicas = Vec::new();
    let mut redis = None;
    writing_while(port, || {
        let (r1, c1) = rlockd(&["--replicaof", "127.0.0.1", &arg]);
        let (r2, c2) = rlockd(&["--replicaof", "127.0.0.1", &arg]);
        // Two wait, which is not enough to start.
        let deadline = Instant::now() + Duration::from_secs(20);
        while replica_states(&mut p).len() < 2 {
            assert!(Instant::now() < deadline, "{}", info(&mut p));
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(replica_states(&mut p), ["wait_bgsave", "wait_bgsave"]);
        assert_eq!(
            syncs_started(&log, "replicas sockets"),
            0,
            "no snapshot before the third"
        );
        replicas.extend([(r1, c1), (r2, c2)]);
        redis = redis_or_rlockd_replica("replicas_share_one_snapshot", port, &mut replicas);
        let deadline = Instant::now() + Duration::from_secs(30);
        while replica_states(&mut p) != ["online", "online", "online"] {
            assert!(Instant::now() < deadline, "{}", info(&mut p));
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    assert_eq!(
        syncs_started(&log, "replicas sockets"),
        1,
        "one snapshot for the three"
    );
    assert_eq!(sync_counts(&mut p), (3, 0));
    stream_writes(&mut p, "after");
    assert_all_same_data(&mut p, &mut replicas, &mut redis);
}

/// Waits, at most `limit`, until the replica's link to its primary is up
/// (its full sync done).
fn until_link_up(replica: &mut Connection, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let now = info(replica);
        if common::info_value(&now, "master_link_status") == "up" {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the replica never synced:\n{now}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The primary's resident memory, from /proc.
fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kb * 1024
}

#[test]
fn a_streamed_sync_does_not_hold_the_image_in_memory() {
    let (p_server, mut p) = rlockd(&[
        "--repl-diskless-sync-delay",
        "0",
        "--rdbcompression",
        "no",
        "--enable-debug-command",
        "yes",
    ]);
    // 64 MB of values, incompressible as the file is not compressed.
    const KEYS: u64 = 200_000;
    const SIZE: u64 = 320;
    q(
        &mut p,
        &[
            "DEBUG",
            "POPULATE",
            &KEYS.to_string(),
            "big",
            &SIZE.to_string(),
        ],
    );
    let pid = p_server.0.id();
    let before = rss_bytes(pid);
    let port = port_of(&mut p).to_string();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut peak = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(rss_bytes(pid));
                std::thread::sleep(Duration::from_millis(2));
            }
            peak
        })
    };
    let (_r, mut r) = rlockd(&["--replicaof", "127.0.0.1", &port]);
    until_link_up(&mut r, Duration::from_secs(120));
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let peak = sampler.join().expect("the sampler");
    assert_eq!(q(&mut r, &["DBSIZE"]), Value::Int(KEYS as i64));
    let image = KEYS * SIZE;
    let grown = peak.saturating_sub(before);
    assert!(
        grown < image / 4,
        "the primary grew by {grown} bytes for an image of over {image}"
    );
}

#[test]
fn diskless_load_swapdb_serves_the_old_data_until_the_swap() {
    let (_old, mut old) = rlockd(&["--repl-diskless-sync-delay", "0"]);
    q(&mut old, &["SET", "old-key", "old"]);
    let old_port = port_of(&mut old).to_string();
    let (_r, mut r) = rlockd(&[
        "--replicaof",
        "127.0.0.1",
        &old_port,
        "--repl-diskless-load",
        "swapdb",
    ]);
    until_in_sync(&mut old, &mut r);
    assert_eq!(text(q(&mut r, &["GET", "old-key"])), "old");

    // Another primary, with data enough for its load to take a while: a
    // full sync, during which the replica answers from the old data.
    const KEYS: i64 = 300_000;
    let (_new, mut new) = rlockd(&[
        "--repl-diskless-sync-delay",
        "0",
        "--enable-debug-command",
        "yes",
    ]);
    q(
        &mut new,
        &["DEBUG", "POPULATE", &KEYS.to_string(), "new", "20"],
    );
    let new_port = port_of(&mut new).to_string();
    q(&mut r, &["REPLICAOF", "127.0.0.1", &new_port]);
    let (mut served_old_while_loading, mut stale_reads) = (false, 0);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let loading = text(q(&mut r, &["INFO", "persistence"]));
        let value = q(&mut r, &["GET", "old-key"]);
        if value == Value::Nil {
            break;
        }
        assert_eq!(text(value), "old", "the old data, not -LOADING");
        stale_reads += 1;
        if common::info_value(&loading, "async_loading") == "1" {
            assert_eq!(common::info_value(&loading, "loading"), "0");
            served_old_while_loading = true;
        }
        assert!(Instant::now() < deadline, "the new data never came");
    }
    assert!(
        served_old_while_loading,
        "no read landed during the load ({stale_reads} reads of the old data)"
    );
    assert_eq!(q(&mut r, &["DBSIZE"]), Value::Int(KEYS));
    assert_eq!(
        common::info_value(&text(q(&mut r, &["INFO", "persistence"])), "async_loading"),
        "0"
    );
    until_in_sync(&mut new, &mut r);
    q(&mut new, &["SET", "after-the-swap", "1"]);
    until_in_sync(&mut new, &mut r);
    assert_eq!(text(q(&mut r, &["GET", "after-the-swap"])), "1");
}

#[test]
fn a_replica_that_stops_reading_is_dropped_and_the_others_finish() {
    let (_p, mut p) = rlockd(&[
        "--repl-diskless-sync-delay",
        "60",
        "--repl-diskless-sync-max-replicas",
        "2",
        "--repl-timeout",
        "3",
        "--rdbcompression",
        "no",
        "--enable-debug-command",
        "yes",
    ]);
    // 30 MB: more than the sockets' buffers hold for a replica that reads
    // nothing.
    q(&mut p, &["DEBUG", "POPULATE", "100000", "big", "300"]);
    let port = port_of(&mut p);
    // A replica that asks for the diskless form, then never reads.
    let mut stuck = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let mut reply = [0u8; 5];
    for request in [
        "*3\r\n$8\r\nREPLCONF\r\n$4\r\ncapa\r\n$3\r\neof\r\n",
        "*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n",
    ] {
        std::io::Write::write_all(&mut stuck, request.as_bytes()).expect("send");
        if request.contains("REPLCONF") {
            std::io::Read::read_exact(&mut stuck, &mut reply).expect("+OK");
            assert_eq!(&reply, b"+OK\r\n");
        }
    }
    let (_r, mut r) = rlockd(&["--replicaof", "127.0.0.1", &port.to_string()]);
    // Not held up by the replica that reads nothing beyond `repl-timeout`
    // (3 s): the bound is for the 30 MB themselves, which took over 60 s in
    // a debug build on a loaded machine.
    until_link_up(&mut r, Duration::from_secs(120));
    assert_eq!(q(&mut r, &["DBSIZE"]), Value::Int(100_000));
    // A replica that takes longer than `repl-timeout` to load the snapshot
    // and send its first ACK is dropped (by Redis too) and continues with
    // a partial resync, as a loaded machine's did here: the partial
    // resyncs are not counted, and the one left may be reconnecting.
    let deadline = Instant::now() + common::WAIT;
    while common::info_value(&info(&mut p), "connected_slaves") != "1" {
        assert!(Instant::now() < deadline, "{}", info(&mut p));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(sync_counts(&mut p).0, 2, "both took the one snapshot");
    drop(stuck);
}

#[test]
fn a_replica_asking_during_a_disk_backed_sync_attaches_to_its_save() {
    let dir = common::TempDir::new("disk-sync");
    let (_p, mut p, log) = logging_primary(&dir, &["--repl-diskless-sync", "no"]);
    fill(&mut p);
    q(&mut p, &["DEBUG", "POPULATE", "4000", "bulk", "100"]);
    // About four seconds of saving, time for a second replica to ask.
    q(&mut p, &["CONFIG", "SET", "rdb-key-save-delay", "1000"]);
    let port = port_of(&mut p);
    let arg = port.to_string();
    let mut replicas = Vec::new();
    let mut redis = None;
    writing_while(port, || {
        replicas.push(rlockd(&["--replicaof", "127.0.0.1", &arg]));
        let deadline = Instant::now() + Duration::from_secs(20);
        while syncs_started(&log, "disk") == 0 {
            assert!(Instant::now() < deadline, "no save for the replica");
            std::thread::sleep(Duration::from_millis(20));
        }
        redis = redis_or_rlockd_replica("disk_backed_sync_attaches", port, &mut replicas);
        while replica_states(&mut p).len() < 2 {
            assert!(Instant::now() < deadline, "{}", info(&mut p));
            std::thread::sleep(Duration::from_millis(20));
        }
        let persistence = text(q(&mut p, &["INFO", "persistence"]));
        assert_eq!(
            common::info_value(&persistence, "rdb_bgsave_in_progress"),
            "1",
            "the second asked while the save ran"
        );
        assert_eq!(replica_states(&mut p), ["wait_bgsave", "wait_bgsave"]);
        let deadline = Instant::now() + Duration::from_secs(60);
        while replica_states(&mut p) != ["online", "online"] {
            assert!(Instant::now() < deadline, "{}", info(&mut p));
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    q(&mut p, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    assert_eq!(syncs_started(&log, "disk"), 1, "one save for the two");
    let stats = text(q(&mut p, &["INFO", "persistence"]));
    assert_eq!(common::info_number(&stats, "rdb_saves"), 1);
    assert_eq!(sync_counts(&mut p), (2, 0));
    assert!(dir.file("dump.rdb").exists(), "the save wrote dump.rdb");
    assert_all_same_data(&mut p, &mut replicas, &mut redis);
}

/// A replica of the server at `port` made by hand (issue #30): it asks
/// for a full sync, skips the snapshot, and reads the stream after it.
struct RawReplica {
    link: std::net::TcpStream,
    buf: Vec<u8>,
}

impl RawReplica {
    fn attach(port: u16) -> RawReplica {
        use std::io::Write;
        let mut link = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        link.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        link.write_all(b"REPLCONF capa psync2\r\n").unwrap();
        let mut replica = RawReplica {
            link,
            buf: Vec::new(),
        };
        // Redis refuses a PSYNC while a reply is still to be sent.
        assert_eq!(replica.line(), "+OK");
        replica.link.write_all(b"PSYNC ? -1\r\n").unwrap();
        let answer = replica.line();
        assert!(answer.starts_with("+FULLRESYNC"), "{answer}");
        // Newlines keep the link alive while the snapshot is made.
        let mut head = replica.line();
        while head.is_empty() {
            head = replica.line();
        }
        match head.strip_prefix("$EOF:") {
            Some(mark) => {
                let mark = mark.as_bytes().to_vec();
                while !replica.buf.windows(mark.len()).any(|w| w == mark) {
                    replica.more();
                }
                let at = replica.buf.windows(mark.len()).position(|w| w == mark);
                replica.buf.drain(..at.unwrap() + mark.len());
            }
            None => {
                let len: usize = head.strip_prefix('$').unwrap().parse().unwrap();
                while replica.buf.len() < len {
                    replica.more();
                }
                replica.buf.drain(..len);
            }
        }
        replica
    }

    fn more(&mut self) {
        use std::io::Read;
        let mut chunk = [0u8; 4096];
        let n = self.link.read(&mut chunk).expect("the stream stalled");
        assert!(n > 0, "the primary closed the link");
        self.buf.extend_from_slice(&chunk[..n]);
    }

    fn line(&mut self) -> String {
        loop {
            if let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=end).collect();
                return String::from_utf8_lossy(&line).trim_end().to_string();
            }
            self.more();
        }
    }

    /// The commands of the stream up to `SET <end> 1`, that one left out,
    /// and the primary's PINGs; absolute deadlines shown as `<at>`, which
    /// differ by when each server ran the script.
    fn until_set(&mut self, end: &str) -> Vec<String> {
        let mut seen: Vec<Vec<String>> = Vec::new();
        loop {
            let Some(mut cmd) = common::fake_primary::take_command(&mut self.buf) else {
                self.more();
                continue;
            };
            cmd[0] = cmd[0].to_uppercase();
            if cmd[..] == ["SET", end, "1"] {
                return seen.into_iter().map(shown).collect();
            }
            if cmd[0] == "PING" {
                continue;
            }
            if cmd[0] == "PEXPIREAT" {
                cmd[2] = "<at>".into();
            }
            // rlockd sends the state a script left where Redis sends its
            // calls: a change the DEL after it undoes is not in it.
            let undone = cmd[0] == "DEL"
                && seen
                    .last()
                    .is_some_and(|last| last[0] == "HINCRBY" && last[1] == cmd[1]);
            if undone {
                seen.pop();
            }
            seen.push(cmd);
        }
    }
}

/// A command of the stream as text; Redis's HINCRBY of a new field shown
/// as the HSET of the count it left, which rlockd sends.
fn shown(mut cmd: Vec<String>) -> String {
    if cmd[0] == "HINCRBY" {
        cmd[0] = "HSET".into();
    }
    cmd.join(" ")
}

/// What a server's replicas are sent for Redisson's lock on a new key, its
/// renewal and its unlock, a script that publishes between its writes,
/// one that replaces a string with a hash, and a hash's new deadline.
fn scripts_as_streamed(con: &mut Connection) -> Vec<String> {
    let mut replica = RawReplica::attach(port_of(con));
    let wrote = |con: &mut Connection, script: &str, keys: &[&str], args: &[&str]| {
        let n = keys.len().to_string();
        let mut line = vec!["EVAL", script, &n];
        line.extend_from_slice(keys);
        line.extend_from_slice(args);
        q(con, &line);
    };
    let lock = ["lock:{order}"];
    wrote(con, common::redisson::LOCK, &lock, &["30000", "owner:1"]);
    wrote(con, common::redisson::RENEW, &lock, &["30000", "owner:1"]);
    let unlock = ["lock:{order}", "redisson_lock__channel:{order}"];
    wrote(
        con,
        common::redisson::UNLOCK,
        &unlock,
        &["0", "30000", "owner:1"],
    );
    let publishing = "redis.call('set', KEYS[1], 'a') redis.call('publish', 'ch', 'm') \
                      redis.call('set', KEYS[2], 'b') redis.call('publish', 'ch', 'n') \
                      redis.call('set', KEYS[1], 'c')";
    wrote(con, publishing, &["p:{order}", "q:{order}"], &[]);
    q(con, &["SET", "s:{order}", "text"]);
    let replacing = "redis.call('del', KEYS[1]) redis.call('hset', KEYS[1], 'f', 'v')";
    wrote(con, replacing, &["s:{order}"], &[]);
    q(con, &["HSET", "h:{order}", "f", "v"]);
    q(con, &["PEXPIRE", "h:{order}", "100000"]);
    q(con, &["SET", "end:{order}", "1"]);
    replica.until_set("end:{order}")
}

/// What `streamed` reads from a redis-server primary and from an rlockd
/// one, which must be the same; `None` (the test skipped) without
/// redis-server.
fn streamed_by_both(
    test: &str,
    streamed: fn(&mut Connection) -> Vec<String>,
) -> Option<Vec<String>> {
    let (_redis, mut redis) = primary(test, None)?;
    let (_r, mut rlockd) = rlockd(&["--repl-diskless-sync-delay", "0"]);
    let want = streamed(&mut redis);
    let got = streamed(&mut rlockd);
    assert_eq!(got, want);
    Some(got)
}

#[test]
fn scripts_reach_replicas_in_the_order_and_shape_redis_sends() {
    let Some(got) = streamed_by_both("stream_order", scripts_as_streamed) else {
        return;
    };
    // What the comparison covers, so that it cannot pass on two empty
    // streams: a new lock is four commands, no DEL; the PUBLISH sits
    // inside the script's MULTI where it was called.
    let lock = "SELECT 0|MULTI|HSET lock:{order} owner:1 1|PEXPIREAT lock:{order} <at>|EXEC|\
                PEXPIREAT lock:{order} <at>|\
                MULTI|DEL lock:{order}|PUBLISH redisson_lock__channel:{order} 0|EXEC";
    assert!(got.join("|").starts_with(lock), "{got:?}");
    let publishing = "MULTI|SET p:{order} a|PUBLISH ch m|SET q:{order} b|PUBLISH ch n|\
                      SET p:{order} c|EXEC";
    assert!(got.join("|").contains(publishing), "{got:?}");
}

/// FLUSHALL during a full sync's snapshot stops it, as Redis kills its
/// RDB child: the replica, streamed or handed a file, never gets the
/// flushed data; it syncs again, to the empty dataset, long before the
/// stopped snapshot's twenty seconds.
#[test]
fn flushall_stops_a_full_sync_and_the_replica_syncs_again() {
    for (diskless, target) in [("yes", "replicas sockets"), ("no", "disk")] {
        let dir = common::TempDir::new("flush-sync");
        let (_p, mut p, log) = logging_primary(
            &dir,
            &[
                "--repl-diskless-sync",
                diskless,
                "--repl-diskless-sync-delay",
                "0",
            ],
        );
        q(&mut p, &["DEBUG", "POPULATE", "1000"]);
        q(&mut p, &["CONFIG", "SET", "rdb-key-save-delay", "20000"]);
        let port = port_of(&mut p);
        let mut replicas = Vec::new();
        let mut redis = redis_or_rlockd_replica(
            "flushall_stops_a_full_sync_and_the_replica_syncs_again",
            port,
            &mut replicas,
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        while syncs_started(&log, target) == 0 {
            assert!(Instant::now() < deadline, "no sync for the replica");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(300));
        q(&mut p, &["FLUSHALL"]);
        let flushed = Instant::now();
        q(&mut p, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
        q(&mut p, &["SET", "after", "1"]);
        let r = match (&mut redis, replicas.first_mut()) {
            (Some((_, r)), _) | (None, Some((_, r))) => r,
            (None, None) => unreachable!("one replica or the other"),
        };
        until_link_up(r, Duration::from_secs(10));
        until_in_sync(&mut p, r);
        assert!(
            flushed.elapsed() < Duration::from_secs(10),
            "{target}: the stopped snapshot ran on"
        );
        assert_eq!(syncs_started(&log, target), 2, "{target}: synced again");
        assert_eq!(sync_counts(&mut p).0, 2, "{target}");
        assert_eq!(q(r, &["DBSIZE"]), Value::Int(1), "{target}");
        assert_eq!(keyspace(r), keyspace(&mut p), "{target}");
    }
}

/// Waits up to `limit` for `file` to be gone; whether it went.
fn gone_within(file: &std::path::Path, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while file.exists() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// `rdb-del-sync-files yes` on a primary without persistence: the
/// `dump.rdb` a disk-backed sync wrote is removed once its replica is
/// online, as redis-server removes its own in the same steps; a file
/// SAVE wrote stays.
#[test]
fn a_primary_without_persistence_removes_its_sync_file() {
    let settings = [("repl-diskless-sync", "no"), ("rdb-del-sync-files", "yes")];
    let dir = common::TempDir::new("del-sync");
    let (_p, mut p, log) = logging_primary(&dir, &[]);
    let mut primaries = vec![("rlockd", dir.file("dump.rdb"), port_of(&mut p))];
    let redis = refserver::redis_server_path("a_primary_without_persistence_removes_its_sync_file")
        .map(|bin| RedisServer::start(&bin));
    if let Some(redis) = &redis {
        primaries.push(("redis-server", redis.dir().join("dump.rdb"), redis.port()));
    }
    for (who, file, port) in primaries {
        let mut con = connect(port);
        for (name, value) in settings {
            q(&mut con, &["CONFIG", "SET", name, value]);
        }
        q(&mut con, &["SET", "k", "v"]);
        let (_r, mut r) = rlockd(&["--replicaof", "127.0.0.1", &port.to_string()]);
        until_in_sync(&mut con, &mut r);
        assert!(gone_within(&file, common::WAIT), "{who}: kept {file:?}");
        q(&mut con, &["SAVE"]);
        assert!(
            !gone_within(&file, Duration::from_secs(2)),
            "{who}: removed SAVE's file"
        );
    }
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains("Removing the RDB file used to feed replicas in a persistence-less instance"),
        "{log}"
    );
}

/// The commands a replica ran since its stats were reset, each with its
/// count of calls, but those a test or the link asks of it (INFO, PING,
/// CONFIG, SELECT, REPLCONF).
fn applied(replica: &mut Connection) -> Vec<String> {
    let stats = text(q(replica, &["INFO", "commandstats"]));
    let mut ran: Vec<String> = stats
        .lines()
        .filter_map(|l| l.strip_prefix("cmdstat_")?.split_once(':'))
        .filter(|(name, _)| {
            let command = name.split('|').next().unwrap_or_default();
            !["info", "ping", "config", "select", "replconf"].contains(&command)
        })
        .map(|(name, stats)| {
            let calls = stats.split(',').find_map(|s| s.strip_prefix("calls="));
            format!("{name} {}", calls.unwrap_or("?"))
        })
        .collect();
    ran.sort();
    ran
}

/// Redisson's watchdog renewing a lease reaches replicas as the lease's
/// `PEXPIREAT` alone, as Redis sends it, rather than the lock's hash
/// again: after the lock's MULTI (HSET, PEXPIREAT), an rlockd and a
/// redis-server replica each run that one command more. Once the first
/// lease has passed, both still hold the lock, with the primary's fields
/// and deadline.
#[test]
fn a_renewal_reaches_replicas_as_its_deadline_alone() {
    let test = "a_renewal_reaches_replicas_as_its_deadline_alone";
    let (_p, mut p) = rlockd(&["--repl-diskless-sync-delay", "0"]);
    let port = port_of(&mut p);
    let (_r, mut ours) = rlockd(&["--replicaof", "127.0.0.1", &port.to_string()]);
    let mut redis = redis_replica_of(test, port);
    let mut replicas = vec![&mut ours];
    replicas.extend(redis.as_mut().map(|(_, r)| r));
    for r in replicas.iter_mut() {
        until_in_sync(&mut p, r);
        q(r, &["CONFIG", "RESETSTAT"]);
    }
    let lock = "lock:{renewed}";
    let taken = ["EVAL", common::redisson::LOCK, "1", lock, "1000", "owner:1"];
    assert_eq!(q(&mut p, &taken), Value::Nil);
    let Value::Int(first) = q(&mut p, &["PEXPIRETIME", lock]) else {
        panic!("the lock has a deadline")
    };
    let renew = [
        "EVAL",
        common::redisson::RENEW,
        "1",
        lock,
        "600000",
        "owner:1",
    ];
    assert_eq!(q(&mut p, &renew), Value::Int(1));
    common::until_clock_past(first as u64);
    let want = (
        q(&mut p, &["HGETALL", lock]),
        q(&mut p, &["PEXPIRETIME", lock]),
    );
    let fields = ["owner:1", "1"].map(|f| Value::BulkString(f.into()));
    assert_eq!(want.0, Value::Array(fields.to_vec()));
    for r in replicas {
        until_in_sync(&mut p, r);
        assert_eq!(applied(r), ["exec 1", "hset 1", "multi 1", "pexpireat 2"]);
        let got = (q(r, &["HGETALL", lock]), q(r, &["PEXPIRETIME", lock]));
        assert_eq!(got, want);
    }
}

/// Writes to streams and strings that Redis sends as commands of its own
/// forms (issue #30): XADD with the id it made and an approximate trim
/// made exact, XTRIM likewise, the group commands as themselves, XCLAIM
/// and XAUTOCLAIM as one XCLAIM per entry, a NOACK read as the consumer
/// and the group's position, and the string and bit commands as they came
/// (INCRBYFLOAT as the SET of its result), MSET and a SET that keeps the
/// deadline as themselves, and pops that empty a list as the pops.
fn forms_writes(con: &mut Connection) {
    let lines = [
        "XADD fs * f v",
        "XADD fs * f w",
        "XADD fs MAXLEN ~ 1 * g h",
        "XADD fs MINID ~ 0 LIMIT 10 * g h",
        "XADD ids 5-* a b",
        "XADD ids 5-* a c",
        "XADD ids 7-1 a d",
        "XDEL ids 5-0 6-0",
        "XTRIM ids MINID 6",
        "XTRIM fs MAXLEN = 3",
        "XGROUP CREATE fs g 0",
        "XGROUP CREATECONSUMER fs g c9",
        "XREADGROUP GROUP g c2 NOACK COUNT 2 STREAMS fs >",
        "XGROUP SETID fs g 0 ENTRIESREAD 0",
        "XGROUP CREATE new g $ MKSTREAM",
        "XADD cs 1-1 a 1",
        "XADD cs 2-1 b 2",
        "XADD cs 3-1 c 3",
        "XGROUP CREATE cs g 0",
        "XCLAIM cs g c1 0 1-1 2-1 3-1 FORCE TIME 1000 RETRYCOUNT 2",
        "XCLAIM cs g c1 0 9-9 LASTID 3-1",
        "XCLAIM cs g c3 0 2-1 JUSTID",
        "XDEL cs 1-1",
        "XAUTOCLAIM cs g c2 0 0 COUNT 2",
        "XACK cs g 2-1 8-8",
        "XGROUP DELCONSUMER cs g c3",
        "XGROUP CREATE cs h $",
        "XGROUP DESTROY cs h",
        "SETEX str 100 ab",
        "APPEND str cd",
        "APPEND made x",
        "SETRANGE str 1 zz",
        "SETBIT bits 7 1",
        "BITFIELD bf SET u8 0 200 INCRBY u8 0 100",
        "BITFIELD bf OVERFLOW FAIL INCRBY u8 0 250",
        "BITOP OR or str bits",
        "PFADD hll a b c",
        "PFADD hll2 c d",
        "PFMERGE hll3 hll hll2",
        "INCR n",
        "INCRBY n 10",
        "DECR n",
        "DECRBY n 3",
        "INCRBYFLOAT fl 1.5",
        "INCRBYFLOAT fl 2",
        "MSET m1 a m2 b",
        "MSETNX m3 c m4 d",
        "SET str ef KEEPTTL",
        "RPUSH pl a b c",
        "LPOP pl 2",
        "RPOP pl 1",
        "RPUSH pl2 x y",
        "LMPOP 1 pl2 LEFT COUNT 10",
    ];
    for line in lines {
        q(con, &line.split(' ').collect::<Vec<_>>());
    }
}

/// A stream command's text with what the clock chose shown as `<id>`
/// (generated ids, whose sequence depends on how many fell in one
/// millisecond) and `<t>` (delivery times).
fn untimed(command: &str) -> String {
    command
        .split(' ')
        .map(|arg| {
            let digits = arg.bytes().take_while(u8::is_ascii_digit).count();
            match arg.split_once('-') {
                _ if digits < 12 => arg.to_string(),
                Some(_) => "<id>".to_string(),
                None => "<t>".to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn forms_as_streamed(con: &mut Connection) -> Vec<String> {
    let mut replica = RawReplica::attach(port_of(con));
    forms_writes(con);
    q(con, &["SET", "end:forms", "1"]);
    let streamed = replica.until_set("end:forms");
    streamed.iter().map(|c| untimed(c)).collect()
}

#[test]
fn stream_and_string_writes_reach_replicas_in_redis_forms() {
    let Some(got) = streamed_by_both("stream_forms", forms_as_streamed) else {
        return;
    };
    // What the comparison covers, so that it cannot pass on two empty
    // streams.
    let all = got.join("|");
    for form in [
        "XADD fs <id> f v",
        "XADD fs MAXLEN = 3 <id> g h",
        "XADD fs MINID = <id> LIMIT 10 <id> g h",
        "MULTI|XGROUP CREATECONSUMER fs g c2|XGROUP SETID fs g <id> ENTRIESREAD 3|EXEC",
        "XCLAIM cs g c1 0 1-1 TIME 1000 RETRYCOUNT 2 FORCE JUSTID LASTID 0-0",
        "XGROUP SETID cs g 3-1 ENTRIESREAD ",
        "APPEND str cd",
        "SET fl 3.5 KEEPTTL",
        "MSETNX m3 c m4 d",
        "SET str ef KEEPTTL",
        "RPOP pl 1",
        "LPOP pl2 2",
    ] {
        assert!(all.contains(form), "{form} in {got:#?}");
    }
}

/// Group reads and claims (Redis's forms, and the group's position after
/// a read, which Redis leaves out) and a blocked group read served by an
/// XADD.
fn group_reads(con: &mut Connection, waiter_port: u16) {
    q(con, &["XGROUP", "CREATE", "fs", "r", "0"]);
    q(
        con,
        &[
            "XREADGROUP",
            "GROUP",
            "r",
            "c1",
            "COUNT",
            "2",
            "STREAMS",
            "fs",
            ">",
        ],
    );
    q(
        con,
        &["XREADGROUP", "GROUP", "r", "c1", "STREAMS", "fs", "0"],
    );
    q(
        con,
        &["XREADGROUP", "GROUP", "r", "c5", "STREAMS", "fs", ">"],
    );
    q(
        con,
        &["XREADGROUP", "GROUP", "r", "empty", "STREAMS", "fs", ">"],
    );
    q(con, &["XGROUP", "CREATE", "blocked", "r", "$", "MKSTREAM"]);
    let mut waiter = connect(waiter_port);
    let read = [
        "XREADGROUP",
        "GROUP",
        "r",
        "w",
        "BLOCK",
        "0",
        "STREAMS",
        "blocked",
        ">",
    ];
    let mut cmd = redis::cmd(read[0]);
    for arg in &read[1..] {
        cmd.arg(*arg);
    }
    waiter
        .send_packed_command(&cmd.get_packed_command())
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while common::info_number(&text(q(con, &["INFO", "clients"])), "blocked_clients") == 0 {
        assert!(Instant::now() < deadline, "the reader never blocked");
        std::thread::sleep(Duration::from_millis(10));
    }
    q(con, &["XADD", "blocked", "1-1", "f", "v"]);
    assert!(matches!(waiter.recv_response().unwrap(), Value::Array(_)));
    q(con, &["XAUTOCLAIM", "fs", "r", "c6", "0", "0"]);
}

#[test]
fn replicas_of_rlockd_end_with_its_streams_and_strings() {
    let (_p, mut p) = rlockd(&["--repl-diskless-sync-delay", "0"]);
    fill(&mut p);
    let port = port_of(&mut p);
    let (_r, mut r) = rlockd(&["--replicaof", "127.0.0.1", &port.to_string()]);
    let mut redis = redis_replica_of("forms_redis_replica", port);
    until_in_sync(&mut p, &mut r);
    forms_writes(&mut p);
    group_reads(&mut p, port);
    assert_same_data(&mut p, &mut r);
    if let Some((_, redis)) = &mut redis {
        assert_same_data(&mut p, redis);
    }
}

/// rlockd follows a redis-server primary through the same writes: it
/// applies Redis's forms of them (an approximate trim sent as `MAXLEN = n
/// LIMIT m`, which only a primary's link may send, XCLAIM … FORCE JUSTID
/// LASTID, XGROUP SETID … ENTRIESREAD) and ends with the primary's data.
#[test]
fn an_rlockd_replica_applies_redis_forms() {
    let Some((server, mut p)) = primary("forms_from_redis", None) else {
        return;
    };
    fill(&mut p);
    let (_r, mut r) = rlockd(&["--replicaof", "127.0.0.1", &server.port().to_string()]);
    until_in_sync(&mut p, &mut r);
    forms_writes(&mut p);
    assert_same_data(&mut p, &mut r);
}
