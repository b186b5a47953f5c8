//! Snapshots (issue #27, item 2), against the real binary and the real
//! redis-server 7.0.15: a file rlockd saves passes `redis-check-rdb` and
//! loads into redis-server with every key, value, encoding, deadline and
//! function library equal, and the other way round; a damaged file stops
//! the start; BGSAVE while writes go on saves one point in time; SHUTDOWN
//! SAVE|NOSAVE, the `save` schedule, FLUSHALL and DEBUG RELOAD.

mod common;
mod refserver;

use common::blocking::{connect, q, q_err};

use common::TempDir;

use std::path::Path;
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use redis::{Connection, Value};

/// An rlockd process, killed when dropped (a failing test included).
struct Rlockd(Child);

impl Rlockd {
    /// Waits for it to exit by itself (SHUTDOWN).
    fn exits(mut self) {
        self.0.wait().unwrap();
    }
}

impl Drop for Rlockd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// rlockd with its snapshot in `dir`.
fn start(dir: &TempDir, extra: &[&str]) -> (Rlockd, u16) {
    let mut args = vec!["--port", "0", "--dir", dir.arg()];
    args.extend_from_slice(extra);
    let (child, port) = common::spawn_binary(&args);
    (Rlockd(child), port)
}

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Okay => "OK".into(),
        Value::Int(n) => n.to_string(),
        Value::Nil => "nil".into(),
        Value::Array(items) => {
            format!("[{}]", items.iter().map(text).collect::<Vec<_>>().join(","))
        }
        Value::Map(pairs) => format!(
            "{{{}}}",
            pairs
                .iter()
                .map(|(k, v)| format!("{}={}", text(k), text(v)))
                .collect::<Vec<_>>()
                .join(",")
        ),
        Value::Double(d) => d.to_string(),
        other => format!("{other:?}"),
    }
}

fn sorted(v: Value) -> String {
    let Value::Array(items) = v else {
        return text(&v);
    };
    let mut items: Vec<String> = items.iter().map(text).collect();
    items.sort();
    items.join(",")
}

fn pairs_sorted(v: Value) -> String {
    let Value::Array(items) = v else {
        return text(&v);
    };
    let mut pairs: Vec<String> = items
        .chunks(2)
        .map(|p| format!("{}={}", text(&p[0]), text(&p[1])))
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// A list of `[k1, v1, k2, v2…]` (XINFO's replies) without the keys named.
fn without(v: Value, dropped: &[&str]) -> String {
    let Value::Array(items) = v else {
        return text(&v);
    };
    items
        .chunks(2)
        .filter(|p| !dropped.contains(&text(&p[0]).as_str()))
        .map(|p| format!("{}={}", text(&p[0]), text(&p[1])))
        .collect::<Vec<_>>()
        .join(",")
}

/// Every key of both databases, value by value, with its type, encoding
/// and absolute deadline, then the function libraries.
fn keyspace(con: &mut Connection) -> Vec<String> {
    let mut out = Vec::new();
    for db in 0..2 {
        q(con, &["SELECT", &db.to_string()]);
        let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(con).unwrap();
        keys.sort();
        for key in keys {
            let k = key.as_str();
            let kind = text(&q(con, &["TYPE", k]));
            let value = match kind.as_str() {
                "string" => text(&q(con, &["GET", k])),
                "list" => text(&q(con, &["LRANGE", k, "0", "-1"])),
                "set" => sorted(q(con, &["SMEMBERS", k])),
                "zset" => text(&q(con, &["ZRANGE", k, "0", "-1", "WITHSCORES"])),
                "hash" => pairs_sorted(q(con, &["HGETALL", k])),
                "stream" => stream(con, k),
                other => panic!("unexpected type {other}"),
            };
            let encoding = text(&q(con, &["OBJECT", "ENCODING", k]));
            let deadline = text(&q(con, &["PEXPIRETIME", k]));
            out.push(format!("db{db} {k} {kind} {encoding} {deadline} {value}"));
        }
    }
    q(con, &["SELECT", "0"]);
    out.push(text(&q(con, &["FUNCTION", "LIST", "WITHCODE"])));
    out
}

/// A stream's entries, its metadata, groups, consumers and pending
/// entries, leaving out the times (idle) that differ between servers.
fn stream(con: &mut Connection, key: &str) -> String {
    let mut parts = vec![
        text(&q(con, &["XRANGE", key, "-", "+"])),
        without(q(con, &["XINFO", "STREAM", key]), &[]),
    ];
    let Value::Array(groups) = q(con, &["XINFO", "GROUPS", key]) else {
        panic!("groups");
    };
    for group in groups {
        parts.push(without(group.clone(), &[]));
        let Value::Array(fields) = group else {
            panic!("group");
        };
        let name = text(&fields[1]);
        let Value::Array(consumers) = q(con, &["XINFO", "CONSUMERS", key, &name]) else {
            panic!("consumers");
        };
        for consumer in consumers {
            parts.push(without(consumer, &["idle", "inactive"]));
        }
        let Value::Array(pending) = q(con, &["XPENDING", key, &name, "-", "+", "100"]) else {
            panic!("pending");
        };
        for entry in pending {
            let Value::Array(f) = entry else {
                panic!("entry");
            };
            // id, consumer, (idle left out), deliveries.
            parts.push(format!("{} {} {}", text(&f[0]), text(&f[1]), text(&f[3])));
        }
    }
    parts.join(" | ")
}

/// Far enough ahead that no deadline passes during a test.
const FAR: u64 = 4_102_444_800_000;

/// Fills a server with every type in each of its encodings, in both
/// databases, with deadlines, a stream with groups, and a library.
fn fill(con: &mut Connection) {
    let long = "x".repeat(100);
    let varied: String = (0..300)
        .map(|i| char::from(b'a' + (i * 7 % 26) as u8))
        .collect();
    for db in ["0", "1"] {
        q(con, &["SELECT", db]);
        // Strings: int, embstr, raw, compressible, incompressible, empty.
        q(con, &["SET", "s:int", "12345"]);
        q(con, &["SET", "s:neg", "-987654321"]);
        q(con, &["SET", "s:bigint", "1099511627776"]);
        q(con, &["SET", "s:embstr", "hello"]);
        q(con, &["SET", "s:raw", &long]);
        q(con, &["SET", "s:varied", &varied]);
        q(con, &["SET", "s:empty", ""]);
        q(
            con,
            &["SET", "s:lease", "owner", "PXAT", &(FAR + 1).to_string()],
        );
        // Lists: one listpack node, several quicklist nodes.
        q(con, &["RPUSH", "l:small", "a", "1", "-2", &long]);
        let many: Vec<String> = (0..600).map(|i| format!("item-{i}")).collect();
        let mut args = vec!["RPUSH", "l:big"];
        args.extend(many.iter().map(String::as_str));
        q(con, &args);
        // Sets: intset, hashtable (strings), hashtable (many integers).
        q(
            con,
            &["SADD", "set:int", "1", "2", "3", "-70000", "5000000000"],
        );
        q(con, &["SADD", "set:str", "a", "b", &long]);
        let ints: Vec<String> = (0..600).map(|i| i.to_string()).collect();
        let mut args = vec!["SADD", "set:bigint"];
        args.extend(ints.iter().map(String::as_str));
        q(con, &args);
        // Sorted sets: listpack, skiplist.
        q(
            con,
            &[
                "ZADD", "z:small", "1.5", "a", "-2", "b", "inf", "c", "3", "d",
            ],
        );
        let mut args = vec!["ZADD", "z:big"];
        let scored: Vec<(String, String)> = (0..200)
            .map(|i| (format!("{}.25", i * 3), format!("m{i}")))
            .collect();
        for (s, m) in &scored {
            args.extend([s.as_str(), m.as_str()]);
        }
        q(con, &args);
        // Hashes: listpack, hashtable, a Redisson lock with its lease.
        q(con, &["HSET", "h:small", "f1", "v1", "f2", "2"]);
        let mut args = vec!["HSET", "h:big", "long", &long];
        let fields: Vec<String> = (0..200).map(|i| format!("f{i}")).collect();
        for f in &fields {
            args.extend([f.as_str(), "v"]);
        }
        q(con, &args);
        q(
            con,
            &[
                "HSET",
                "{lock}:order",
                "b983c153-7421-469a-addb-44fb92259a1b:1",
                "1",
            ],
        );
        q(con, &["PEXPIREAT", "{lock}:order", &FAR.to_string()]);
        q(con, &["PEXPIREAT", "z:small", &(FAR + 2).to_string()]);
        q(con, &["PEXPIREAT", "l:small", &(FAR + 3).to_string()]);
    }
    q(con, &["SELECT", "0"]);
    // A stream with deletions, a trimmed length, groups, consumers and
    // pending entries, some acknowledged.
    for i in 1..=20 {
        q(
            con,
            &[
                "XADD",
                "st",
                &format!("{i}-1"),
                "f",
                &format!("v{i}"),
                "n",
                "1",
            ],
        );
    }
    q(con, &["XDEL", "st", "3-1", "20-1"]);
    q(con, &["XTRIM", "st", "MAXLEN", "15"]);
    q(con, &["XGROUP", "CREATE", "st", "g1", "0"]);
    q(con, &["XGROUP", "CREATE", "st", "g2", "10-1"]);
    q(
        con,
        &[
            "XREADGROUP",
            "GROUP",
            "g1",
            "alice",
            "COUNT",
            "4",
            "STREAMS",
            "st",
            ">",
        ],
    );
    q(
        con,
        &[
            "XREADGROUP",
            "GROUP",
            "g1",
            "bob",
            "COUNT",
            "2",
            "STREAMS",
            "st",
            ">",
        ],
    );
    q(con, &["XACK", "st", "g1", "6-1"]);
    q(con, &["XGROUP", "CREATECONSUMER", "st", "g2", "carol"]);
    q(con, &["XADD", "st:empty", "5-5", "f", "v"]);
    q(con, &["XDEL", "st:empty", "5-5"]);
    q(
        con,
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=locks\nredis.register_function('holder', function(keys) return redis.call('GET', keys[1]) end)",
        ],
    );
}

/// INFO persistence once it has `line`, within a minute.
fn wait_for_info(con: &mut Connection, line: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let info = text(&q(con, &["INFO", "persistence"]));
        if info.contains(line) {
            return info;
        }
        assert!(Instant::now() < deadline, "no {line} in {info}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn check_rdb(test: &str, path: &Path) {
    if let Some(check) = refserver::require_tool(test, "redis-check-rdb", "REDIS_CHECK_RDB") {
        let out = Command::new(check).arg(path).output().unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && all.contains("RDB looks OK"),
            "redis-check-rdb: {all}"
        );
    }
}

/// redis-server started from `dir`'s snapshot holds `expected`.
fn redis_loads(test: &str, dir: &TempDir, expected: &[String]) {
    let Some(server) = refserver::redis_server_path(test) else {
        return;
    };
    let rdb = dir.file("dump.rdb");
    let redis = refserver::RedisServer::start_setup(
        &server,
        refserver::Setup {
            rdb: Some(&rdb),
            ..refserver::Setup::default()
        },
    );
    let mut rcon = connect(redis.port());
    assert_eq!(
        keyspace(&mut rcon),
        expected,
        "redis-server loading rlockd's file"
    );
}

#[test]
fn redis_loads_our_snapshot_with_every_value() {
    let test = "redis_loads_our_snapshot_with_every_value";
    let dir = TempDir::new("ours");
    let (child, port) = start(&dir, &[]);
    let mut con = connect(port);
    fill(&mut con);
    let ours = keyspace(&mut con);
    assert_eq!(text(&q(&mut con, &["SAVE"])), "OK");
    drop(child);
    check_rdb(test, &dir.file("dump.rdb"));

    // rlockd loads its own file back.
    let (child, port) = start(&dir, &[]);
    let mut con = connect(port);
    assert_eq!(keyspace(&mut con), ours, "rlockd reloading its own file");
    drop(child);

    redis_loads(test, &dir, &ours);
}

#[test]
fn we_load_redis_snapshot_with_every_value() {
    let test = "we_load_redis_snapshot_with_every_value";
    let Some(server) = refserver::redis_server_path(test) else {
        return;
    };
    let redis = refserver::RedisServer::start(&server);
    let mut rcon = connect(redis.port());
    fill(&mut rcon);
    let theirs = keyspace(&mut rcon);
    assert_eq!(text(&q(&mut rcon, &["SAVE"])), "OK");
    let dir = TempDir::new("theirs");
    std::fs::copy(redis.dir().join("dump.rdb"), dir.file("dump.rdb")).unwrap();
    let (child, port) = start(&dir, &[]);
    let mut con = connect(port);
    assert_eq!(
        keyspace(&mut con),
        theirs,
        "rlockd loading redis-server's file"
    );
    drop(child);
}

/// The start fails with this log line in its output.
fn refused_start(dir: &TempDir) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_rlockd"))
        .args(["--port", "0", "--dir", dir.arg()])
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "a damaged snapshot must stop the start"
    );
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_damaged_snapshot_stops_the_start() {
    let dir = TempDir::new("damaged");
    let (child, port) = start(&dir, &[]);
    let mut con = connect(port);
    q(
        &mut con,
        &["SET", "key", "a value long enough to be worth a byte"],
    );
    q(&mut con, &["SAVE"]);
    drop(child);
    let good = std::fs::read(dir.file("dump.rdb")).unwrap();

    let mut flipped = good.clone();
    let at = flipped.len() - 12;
    flipped[at] ^= 0x20;
    std::fs::write(dir.file("dump.rdb"), &flipped).unwrap();
    let log = refused_start(&dir);
    assert!(log.contains("Wrong RDB checksum"), "{log}");

    std::fs::write(dir.file("dump.rdb"), &good[..good.len() - 20]).unwrap();
    let log = refused_start(&dir);
    assert!(log.contains("Short read"), "{log}");

    std::fs::write(dir.file("dump.rdb"), b"REDIS0099 not a snapshot").unwrap();
    let log = refused_start(&dir);
    assert!(log.contains("Wrong signature"), "{log}");

    // A key named twice (the fuzz corpus's finding): refused, not one of
    // its values dropped.
    let twice = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fuzz/corpus/rdb/regression-duplicate-key.rdb"
    );
    std::fs::copy(twice, dir.file("dump.rdb")).unwrap();
    let log = refused_start(&dir);
    assert!(log.contains("duplicated key"), "{log}");
}

/// BGSAVE while clients write: every transaction moves all the counters
/// at once, across shards, so a file taken one shard at a time at
/// different moments would hold counters that differ.
#[test]
fn bgsave_saves_one_point_in_time_while_writes_go_on() {
    let dir = TempDir::new("bgsave");
    let (child, port) = start(&dir, &["--enable-debug-command", "yes"]);
    let mut con = connect(port);
    let keys: Vec<String> = (0..64).map(|i| format!("counter:{i}")).collect();
    for k in &keys {
        q(&mut con, &["SET", k, "0"]);
    }
    // Bulk, so the capture takes long enough to overlap the writes.
    q(&mut con, &["DEBUG", "POPULATE", "200000", "bulk", "50"]);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        let keys = keys.clone();
        std::thread::spawn(move || {
            let mut con = connect(port);
            let mut rounds = 0u64;
            while !stop.load(Ordering::Relaxed) && rounds < 1_000_000 {
                let mut pipe = redis::pipe();
                pipe.atomic();
                for k in &keys {
                    pipe.cmd("INCR").arg(k).ignore();
                }
                let _: () = pipe.query(&mut con).unwrap();
                rounds += 1;
            }
            rounds
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(text(&q(&mut con, &["BGSAVE"])), "Background saving started");
    let info = wait_for_info(&mut con, "rdb_bgsave_in_progress:0");
    assert!(info.contains("rdb_last_bgsave_status:ok"), "{info}");
    // The counters changed before the saver reached them were set aside.
    let aside: u64 = info_field(&info, "rdb_last_cow_size").parse().unwrap();
    assert!(aside > 0, "{info}");
    stop.store(true, Ordering::Relaxed);
    let rounds = writer.join().unwrap();
    assert!(rounds > 0);
    drop(child);

    let (child, port) = start(&dir, &[]);
    let mut con = connect(port);
    let mut args = vec!["MGET"];
    args.extend(keys.iter().map(String::as_str));
    let Value::Array(values) = q(&mut con, &args) else {
        panic!("MGET");
    };
    let values: Vec<String> = values.iter().map(text).collect();
    assert!(
        values.iter().all(|v| *v == values[0]),
        "counters from different moments: {values:?}"
    );
    assert_eq!(text(&q(&mut con, &["DBSIZE"])), (200_000 + 64).to_string());
    drop(child);
}

/// SWAPDB and FLUSHDB during a BGSAVE change nothing in its file: each
/// database is saved as it was when BGSAVE answered.
#[test]
fn swapdb_and_flushdb_during_bgsave_leave_its_point_in_time_alone() {
    let dir = TempDir::new("swapdb");
    let (child, port) = start(&dir, &["--enable-debug-command", "yes"]);
    let mut con = connect(port);
    q(&mut con, &["DEBUG", "POPULATE", "100000", "zero"]);
    q(&mut con, &["SELECT", "1"]);
    q(&mut con, &["DEBUG", "POPULATE", "50000", "one"]);
    q(&mut con, &["SELECT", "2"]);
    q(&mut con, &["DEBUG", "POPULATE", "20000", "two"]);
    assert_eq!(text(&q(&mut con, &["BGSAVE"])), "Background saving started");
    q(&mut con, &["SWAPDB", "0", "1"]);
    q(&mut con, &["FLUSHDB"]);
    q(&mut con, &["SET", "two:new", "x"]);
    let info = text(&q(&mut con, &["INFO", "persistence"]));
    assert!(
        info.contains("rdb_bgsave_in_progress:1"),
        "the save ended before the changes: {info}"
    );
    let info = wait_for_info(&mut con, "rdb_bgsave_in_progress:0");
    assert!(info.contains("rdb_last_bgsave_status:ok"), "{info}");
    drop(child);

    let (child, port) = start(&dir, &[]);
    let mut con = connect(port);
    for (db, size, prefix) in [
        ("0", "100000", "zero"),
        ("1", "50000", "one"),
        ("2", "20000", "two"),
    ] {
        q(&mut con, &["SELECT", db]);
        assert_eq!(text(&q(&mut con, &["DBSIZE"])), size, "db {db}");
        assert_eq!(
            text(&q(&mut con, &["GET", &format!("{prefix}:7")])),
            "value:7",
            "db {db}"
        );
    }
    assert_eq!(text(&q(&mut con, &["EXISTS", "two:new"])), "0");
    drop(child);
}

/// INFO persistence's field names, in order.
fn persistence_fields(con: &mut Connection) -> Vec<String> {
    text(&q(con, &["INFO", "persistence"]))
        .lines()
        .filter_map(|l| l.split_once(':').map(|(name, _)| name.to_string()))
        .collect()
}

fn info_field(info: &str, name: &str) -> String {
    info.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("no {name} in {info}"))
        .to_string()
}

/// INFO persistence has redis-server's fields in its order, and those
/// about saves say what Redis's say: saves counted, a save's keys
/// processed out of its total while it runs, the keys the last load
/// loaded.
#[test]
fn info_persistence_reports_saves_as_redis_does() {
    let dir = TempDir::new("info");
    let (child, port) = start(&dir, &["--enable-debug-command", "yes"]);
    let mut con = connect(port);
    if let Some(server) =
        refserver::redis_server_path("info_persistence_reports_saves_as_redis_does")
    {
        let redis = refserver::RedisServer::start_setup(&server, refserver::Setup::default());
        let mut rcon = connect(redis.port());
        assert_eq!(persistence_fields(&mut con), persistence_fields(&mut rcon));
    }
    q(&mut con, &["DEBUG", "POPULATE", "200000"]);
    q(&mut con, &["SAVE"]);
    assert_eq!(text(&q(&mut con, &["BGSAVE"])), "Background saving started");
    let during = text(&q(&mut con, &["INFO", "persistence"]));
    assert_eq!(
        info_field(&during, "rdb_bgsave_in_progress"),
        "1",
        "{during}"
    );
    assert_eq!(info_field(&during, "current_save_keys_total"), "200000");
    let saved: u64 = info_field(&during, "current_save_keys_processed")
        .parse()
        .unwrap();
    assert!(saved <= 200_000, "{during}");
    let after = wait_for_info(&mut con, "rdb_bgsave_in_progress:0");
    assert_eq!(info_field(&after, "rdb_saves"), "2");
    assert_eq!(info_field(&after, "current_save_keys_total"), "0");
    assert_eq!(info_field(&after, "current_fork_perc"), "0.00");
    // Nothing changed during the save: nothing was set aside.
    assert_eq!(info_field(&after, "rdb_last_cow_size"), "0");
    drop(child);
    let (child, port) = start(&dir, &[]);
    let mut con = connect(port);
    let info = text(&q(&mut con, &["INFO", "persistence"]));
    assert_eq!(info_field(&info, "rdb_last_load_keys_loaded"), "200000");
    assert_eq!(info_field(&info, "rdb_last_load_keys_expired"), "0");
    assert_eq!(info_field(&info, "rdb_saves"), "0");
    drop(child);
}

#[test]
fn shutdown_save_and_nosave() {
    let dir = TempDir::new("shutdown");
    // No save points: SHUTDOWN SAVE saves anyway.
    let (child, port) = start(&dir, &[]);
    let mut con = connect(port);
    q(&mut con, &["SET", "kept", "1"]);
    let _ = redis::cmd("SHUTDOWN").arg("SAVE").query::<Value>(&mut con);
    child.exits();
    assert!(
        dir.file("dump.rdb").exists(),
        "SHUTDOWN SAVE writes the snapshot"
    );

    // Save points: SHUTDOWN NOSAVE leaves the file as it was.
    let (child, port) = start(&dir, &["--save", "3600 1"]);
    let mut con = connect(port);
    assert_eq!(text(&q(&mut con, &["GET", "kept"])), "1");
    q(&mut con, &["SET", "dropped", "1"]);
    let _ = redis::cmd("SHUTDOWN")
        .arg("NOSAVE")
        .query::<Value>(&mut con);
    child.exits();

    // Save points and a plain SHUTDOWN: saved.
    let (child, port) = start(&dir, &["--save", "3600 1"]);
    let mut con = connect(port);
    assert_eq!(text(&q(&mut con, &["EXISTS", "dropped"])), "0");
    q(&mut con, &["SET", "last", "1"]);
    let _ = redis::cmd("SHUTDOWN").query::<Value>(&mut con);
    child.exits();

    let (child, port) = start(&dir, &[]);
    let mut con = connect(port);
    assert_eq!(text(&q(&mut con, &["EXISTS", "last"])), "1");
    drop(child);
}

#[test]
fn the_save_schedule_saves_after_enough_changes() {
    let dir = TempDir::new("schedule");
    let (child, port) = start(&dir, &["--save", "1 3"]);
    let mut con = connect(port);
    let before = text(&q(&mut con, &["LASTSAVE"]));
    q(&mut con, &["SET", "a", "1"]);
    q(&mut con, &["SET", "b", "1"]);
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        !dir.file("dump.rdb").exists(),
        "two changes do not reach the point"
    );
    q(&mut con, &["SET", "c", "1"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !dir.file("dump.rdb").exists() {
        assert!(Instant::now() < deadline, "no save after 3 changes in 1 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    wait_for_info(&mut con, "rdb_changes_since_last_save:0");
    assert_ne!(text(&q(&mut con, &["LASTSAVE"])), before);
    drop(child);
}

#[test]
fn commands_answer_as_redis_does() {
    let dir = TempDir::new("replies");
    // dbfilename is a protected config: open to CONFIG SET here, so its
    // value's own check answers.
    let (child, port) = start(
        &dir,
        &["--save", "3600 1", "--enable-protected-configs", "yes"],
    );
    let mut con = connect(port);
    assert_eq!(q_err(&mut con, &["BGSAVE", "NOW"]), "ERR syntax error");
    assert_eq!(
        q_err(&mut con, &["CONFIG", "SET", "save", "1 2 3"]),
        "ERR CONFIG SET failed (possibly related to argument 'save') - Invalid save parameters"
    );
    assert_eq!(
        q_err(&mut con, &["CONFIG", "SET", "dbfilename", "a/b"]),
        "ERR CONFIG SET failed (possibly related to argument 'dbfilename') - dbfilename can't be a path, just a filename"
    );
    q(&mut con, &["CONFIG", "SET", "save", "100   5 60 1"]);
    assert_eq!(
        text(&q(&mut con, &["CONFIG", "GET", "save"])),
        "[save,100 5 60 1]"
    );
    // FLUSHALL with save points leaves an empty snapshot behind.
    q(&mut con, &["SET", "k", "v"]);
    q(&mut con, &["FLUSHALL"]);
    assert!(dir.file("dump.rdb").exists(), "FLUSHALL saved");
    let info = text(&q(&mut con, &["INFO", "persistence"]));
    assert!(info.contains("rdb_changes_since_last_save:1"), "{info}");
    drop(child);
    // DEBUG RELOAD saves, empties and loads back.
    let (child, port) = start(&dir, &["--enable-debug-command", "yes"]);
    let mut con = connect(port);
    assert_eq!(text(&q(&mut con, &["DBSIZE"])), "0");
    q(&mut con, &["SET", "k", "v", "PXAT", &FAR.to_string()]);
    q(&mut con, &["DEBUG", "RELOAD"]);
    assert_eq!(text(&q(&mut con, &["PEXPIRETIME", "k"])), FAR.to_string());
    q(&mut con, &["SET", "later", "1"]);
    q(&mut con, &["DEBUG", "RELOAD", "NOSAVE"]);
    assert_eq!(text(&q(&mut con, &["EXISTS", "later"])), "0");
    drop(child);
}

/// A BGSAVE that cannot write its file (a folder stands where it goes):
/// writes and PING are refused with Redis's MISCONF while
/// `stop-writes-on-bgsave-error` and `save` points are set; a SAVE that
/// works lifts it.
#[test]
fn a_failed_bgsave_refuses_writes() {
    let dir = TempDir::new("misconf");
    let (child, port) = start(&dir, &["--save", "3600 1"]);
    std::fs::create_dir_all(dir.file("dump.rdb").join("occupied")).unwrap();
    let mut con = connect(port);
    q(&mut con, &["SET", "k", "v"]);
    assert_eq!(text(&q(&mut con, &["BGSAVE"])), "Background saving started");
    let info = wait_for_info(&mut con, "rdb_bgsave_in_progress:0");
    assert!(info.contains("rdb_last_bgsave_status:err"), "{info}");
    let misconf = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.";
    assert_eq!(q_err(&mut con, &["SET", "k", "w"]), misconf);
    assert_eq!(q_err(&mut con, &["PING"]), misconf);
    assert_eq!(text(&q(&mut con, &["GET", "k"])), "v");
    q(
        &mut con,
        &["CONFIG", "SET", "stop-writes-on-bgsave-error", "no"],
    );
    q(&mut con, &["SET", "k", "w"]);
    q(
        &mut con,
        &["CONFIG", "SET", "stop-writes-on-bgsave-error", "yes"],
    );
    assert_eq!(q_err(&mut con, &["SET", "k", "x"]), misconf);
    std::fs::remove_dir_all(dir.file("dump.rdb")).unwrap();
    assert_eq!(text(&q(&mut con, &["SAVE"])), "OK");
    q(&mut con, &["SET", "k", "x"]);
    drop(child);
}

/// Clients that connect while a snapshot loads are told LOADING (INFO
/// answering `loading:1`), then served the loaded data.
#[test]
fn clients_get_loading_while_the_snapshot_loads() {
    let dir = TempDir::new("loading");
    let (child, port) = start(&dir, &["--enable-debug-command", "yes"]);
    let mut con = connect(port);
    q(&mut con, &["DEBUG", "POPULATE", "300000", "k", "20"]);
    q(&mut con, &["SAVE"]);
    drop(child);

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let child = Rlockd(
        Command::new(env!("CARGO_BIN_EXE_rlockd"))
            .args(["--port", &port.to_string(), "--dir", dir.arg()])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let (mut loading, mut info_loading) = (false, false);
    let deadline = Instant::now() + Duration::from_secs(120);
    let value = loop {
        assert!(Instant::now() < deadline, "never served");
        let Ok(mut con) = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .unwrap()
            .get_connection()
        else {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        };
        match redis::cmd("GET").arg("k:299999").query::<Value>(&mut con) {
            Ok(v) => break text(&v),
            Err(e) => {
                assert_eq!(e.code(), Some("LOADING"), "{e}");
                loading = true;
                let info = text(&q(&mut con, &["INFO", "persistence"]));
                info_loading |= info.contains("loading:1");
            }
        }
    };
    assert!(
        loading,
        "300000 keys load long enough to be asked meanwhile"
    );
    assert!(info_loading, "INFO says loading:1 meanwhile");
    assert!(value.starts_with("value:299999"), "{value}");
    drop(child);
}

/// `rdbcompression no` and `rdbchecksum no` write files redis-check-rdb
/// and redis-server take as well (zeros for the checksum, no LZF).
#[test]
fn files_without_compression_or_checksum_load_too() {
    let test = "files_without_compression_or_checksum_load_too";
    let dir = TempDir::new("plain");
    let (child, port) = start(&dir, &["--rdbcompression", "no", "--rdbchecksum", "no"]);
    let mut con = connect(port);
    fill(&mut con);
    let ours = keyspace(&mut con);
    q(&mut con, &["SAVE"]);
    drop(child);
    let bytes = std::fs::read(dir.file("dump.rdb")).unwrap();
    assert!(
        bytes.ends_with(&[0xff, 0, 0, 0, 0, 0, 0, 0, 0]),
        "no checksum"
    );
    check_rdb(test, &dir.file("dump.rdb"));
    redis_loads(test, &dir, &ours);
}

/// What FLUSHALL did to a slow BGSAVE under way, on one server.
#[derive(Debug, PartialEq, Eq)]
struct FlushDuringSave {
    /// The save was still running when FLUSHALL came.
    running_at_flush: bool,
    /// It ended within seconds, not the twenty its keys' delays take.
    stopped_soon: bool,
    last_status: String,
    /// `dump.rdb` after: as the SAVE before left it, or holding no key.
    file_kept: bool,
    file_empty: bool,
}

/// SAVE of one key, then 1000 keys saved at 20 ms each by a BGSAVE that
/// FLUSHALL interrupts; `save` is the `save` schedule meanwhile.
fn flush_during_save(con: &mut Connection, file: &Path, save: &str) -> FlushDuringSave {
    q(con, &["SET", "before", "1"]);
    q(con, &["SAVE"]);
    let before = std::fs::read(file).unwrap();
    q(con, &["DEBUG", "POPULATE", "1000"]);
    q(con, &["CONFIG", "SET", "save", save]);
    q(con, &["CONFIG", "SET", "rdb-key-save-delay", "20000"]);
    assert_eq!(text(&q(con, &["BGSAVE"])), "Background saving started");
    std::thread::sleep(Duration::from_millis(300));
    let running = text(&q(con, &["INFO", "persistence"]));
    q(con, &["FLUSHALL"]);
    let flushed = Instant::now();
    let after = wait_for_info(con, "rdb_bgsave_in_progress:0");
    let stopped_soon = flushed.elapsed() < Duration::from_secs(10);
    q(con, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    q(con, &["CONFIG", "SET", "save", ""]);
    let now = std::fs::read(file).unwrap();
    let check = TempDir::new("flushed-file");
    std::fs::write(check.file("dump.rdb"), &now).unwrap();
    let (_loaded, port) = start(&check, &[]);
    let file_empty = text(&q(&mut connect(port), &["DBSIZE"])) == "0";
    FlushDuringSave {
        running_at_flush: info_field(&running, "rdb_bgsave_in_progress") == "1",
        stopped_soon,
        last_status: info_field(&after, "rdb_last_bgsave_status"),
        file_kept: now == before,
        file_empty,
    }
}

/// FLUSHALL stops a BGSAVE under way, as Redis kills its child: the file
/// it leaves is never one of the data just flushed. Without save points
/// the last file stays; with them, FLUSHALL's own save of the empty
/// dataset replaces it. The last save's status stays "ok". The same
/// steps on redis-server give the same.
#[test]
fn flushall_stops_a_bgsave_under_way() {
    let dir = TempDir::new("flushcancel");
    let (_child, port) = start(&dir, &["--enable-debug-command", "yes"]);
    let mut con = connect(port);
    let file = dir.file("dump.rdb");
    let kept = flush_during_save(&mut con, &file, "");
    assert_eq!(
        kept,
        FlushDuringSave {
            running_at_flush: true,
            stopped_soon: true,
            last_status: "ok".into(),
            file_kept: true,
            file_empty: false,
        }
    );
    let emptied = flush_during_save(&mut con, &file, "3600 1");
    assert_eq!(
        emptied,
        FlushDuringSave {
            running_at_flush: true,
            stopped_soon: true,
            last_status: "ok".into(),
            file_kept: false,
            file_empty: true,
        }
    );
    if let Some(server) = refserver::redis_server_path("flushall_stops_a_bgsave_under_way") {
        let redis = refserver::RedisServer::start_setup(&server, refserver::Setup::default());
        let mut rcon = connect(redis.port());
        let rfile = redis.dir().join("dump.rdb");
        assert_eq!(
            flush_during_save(&mut rcon, &rfile, ""),
            kept,
            "redis-server"
        );
        assert_eq!(
            flush_during_save(&mut rcon, &rfile, "3600 1"),
            emptied,
            "redis-server"
        );
    }
}

/// A snapshot's keys already past their deadline are not loaded, as Redis
/// skips them (only an append-only file's base keeps them, for the records
/// after it).
#[test]
fn a_snapshot_s_expired_keys_are_skipped_at_load() {
    let dir = TempDir::new("expired-at-load");
    let (child, port) = start(&dir, &[]);
    let mut con = connect(port);
    q(&mut con, &["SET", "kept", "v"]);
    q(&mut con, &["SET", "gone", "v", "PX", "300"]);
    q(&mut con, &["SAVE"]);
    drop(child);
    std::thread::sleep(Duration::from_millis(400));
    let (child, port) = start(&dir, &[]);
    let mut con = connect(port);
    let info = text(&q(&mut con, &["INFO", "persistence"]));
    assert_eq!(info_field(&info, "rdb_last_load_keys_loaded"), "1");
    assert_eq!(info_field(&info, "rdb_last_load_keys_expired"), "1");
    drop(child);
}
