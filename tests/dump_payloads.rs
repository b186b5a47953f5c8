//! DUMP payloads against redis-server 7.0.15, key by key: a generator
//! fills a server with every type in every encoding Redis 7.0 gives it
//! (strings int/raw/compressible, small and large lists, hashes, sets and
//! sorted sets, intsets, streams with groups, PEL, consumers and deleted
//! entries, keys with a TTL); each key's DUMP restores on the other server
//! and on its own, and the two copies agree in type, contents, OBJECT
//! ENCODING and TTL. Both directions; rlockd's payloads equal Redis's byte
//! for byte where Redis's encoding is deterministic; MIGRATE both ways;
//! FUNCTION DUMP/RESTORE both ways.

mod common;
mod refserver;

use common::{cmd, connect};
use redis::Value;
use redis::aio::MultiplexedConnection;
use refserver::RedisServer;

/// Commands that build one key each (several commands may build one).
/// The key is each line's second word.
fn generator() -> Vec<Vec<String>> {
    let mut lines: Vec<Vec<String>> = Vec::new();
    let owned = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
    macro_rules! add {
        ($words:expr) => {
            lines.push(owned($words))
        };
    }
    add!(&["SET", "str:int", "12345"]);
    add!(&["SET", "str:neg", "-7"]);
    add!(&["SET", "str:wide", "1099511627776"]);
    add!(&["SET", "str:word", "hello"]);
    add!(&["SET", "str:leading-zero", "007"]);
    add!(&["SET", "str:embstr", &"e".repeat(44)]);
    add!(&["SET", "str:compressible", &"abcd".repeat(300)]);
    add!(&["SET", "str:empty", ""]);
    add!(&["APPEND", "str:appended", "xyz"]);
    add!(&["PFADD", "str:hll", "a", "b", "c"]);
    add!(&[
        "RPUSH",
        "list:small",
        "a",
        "",
        "1",
        "-5000",
        "70000",
        "5000000000"
    ]);
    add!(&["RPUSH", "list:big-item", &"x".repeat(10_000), "tail"]);
    add!(&["HSET", "hash:small", "f", "v", "", "empty", "n", "42"]);
    add!(&["HSET", "hash:long-value", "f", &"v".repeat(100)]);
    add!(&["SADD", "set:ints", "3", "-1", "2"]);
    add!(&["SADD", "set:wide-ints", "-70000", "5000000000", "1"]);
    add!(&["SADD", "set:words", "x", "y", "1"]);
    add!(&[
        "ZADD",
        "zset:small",
        "1.5",
        "a",
        "-inf",
        "b",
        "0",
        "c",
        "3",
        "d",
        "1e100",
        "e"
    ]);
    add!(&["ZADD", "zset:long-member", "1", &"m".repeat(100), "2", "n"]);
    add!(&["GEOADD", "zset:geo", "13.361389", "38.115556", "Palermo"]);
    let mut list = vec!["RPUSH".to_string(), "list:nodes".into()];
    list.extend((0..3000).map(|i| format!("item-{i}")));
    lines.push(list);
    let mut hash = vec!["HSET".to_string(), "hash:table".into()];
    hash.extend((0..600).flat_map(|i| [format!("field{i}"), format!("{i}")]));
    lines.push(hash);
    let mut ints = vec!["SADD".to_string(), "set:many-ints".into()];
    ints.extend((0..600).map(|i| (i * 7).to_string()));
    lines.push(ints);
    let mut zset = vec!["ZADD".to_string(), "zset:skiplist".into()];
    zset.extend((0..200).flat_map(|i| [format!("{}", i as f64 / 3.0), format!("m{i}")]));
    lines.push(zset);
    for line in [
        "XADD stream 1-1 f v",
        "XADD stream 1-2 f w g x",
        "XADD stream 2-0 f 1",
        "XADD stream 3-0 a b",
        "XADD stream 4-0 f 2",
        "XDEL stream 1-2",
        "XGROUP CREATE stream g1 0",
        "XREADGROUP GROUP g1 alice COUNT 2 STREAMS stream >",
        "XREADGROUP GROUP g1 bob COUNT 1 STREAMS stream >",
        "XACK stream g1 2-0",
        "XGROUP CREATECONSUMER stream g1 carol",
        "XGROUP CREATE stream g2 $",
        "XADD stream:groups 1-1 f v",
        "XADD stream:groups 2-0 f w g x",
        "XADD stream:groups 3-0 f v",
        "XGROUP CREATE stream:groups readers 0",
        "XREADGROUP GROUP readers alice COUNT 2 STREAMS stream:groups >",
        "XREADGROUP GROUP readers bob COUNT 1 STREAMS stream:groups >",
        "XCLAIM stream:groups readers bob 0 1-1",
        "XGROUP CREATECONSUMER stream:groups readers carol",
        "XGROUP CREATE stream:groups late 2-0 ENTRIESREAD 2",
        "XADD stream:emptied 1-1 f v",
        "XDEL stream:emptied 1-1",
    ] {
        add!(&line.split(' ').collect::<Vec<_>>());
    }
    for line in [
        "XADD stream:plain 1-1 f v",
        "XADD stream:plain 1-2 f w g x",
        "XADD stream:plain 7-0 f 1",
    ] {
        add!(&line.split(' ').collect::<Vec<_>>());
    }
    for i in 1..=250 {
        let id = format!("{i}-0");
        let value = i.to_string();
        add!(&["XADD", "stream:nodes", &id, "field", &value, "other", "x"]);
    }
    add!(&["XDEL", "stream:nodes", "5-0", "120-0"]);
    add!(&["SET", "ttl:str", "v", "PX", "500000"]);
    add!(&["HSET", "ttl:hash", "f", "v"]);
    add!(&["PEXPIRE", "ttl:hash", "400000"]);
    lines
}

/// The keys the generator makes: the second word of each line that
/// writes a value (the others name a key made before).
fn keys() -> Vec<String> {
    const MAKERS: &[&str] = &[
        "SET", "APPEND", "PFADD", "RPUSH", "HSET", "SADD", "ZADD", "GEOADD", "XADD",
    ];
    let mut keys: Vec<String> = generator()
        .into_iter()
        .filter(|l| MAKERS.contains(&l[0].as_str()))
        .map(|l| l[1].clone())
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

async fn run(c: &mut MultiplexedConnection, words: &[String]) -> Value {
    let refs: Vec<&str> = words.iter().map(String::as_str).collect();
    cmd(c, &refs)
        .await
        .unwrap_or_else(|e| panic!("{words:?}: {e}"))
}

async fn fill(c: &mut MultiplexedConnection) {
    for line in generator() {
        run(c, &line).await;
    }
}

async fn dump(c: &mut MultiplexedConnection, key: &str) -> Vec<u8> {
    cmd::<Vec<u8>>(c, &["DUMP", key]).await.unwrap()
}

async fn restore(c: &mut MultiplexedConnection, key: &str, ttl: i64, payload: &[u8]) {
    let mut command = redis::cmd("RESTORE");
    command.arg(key).arg(ttl).arg(payload);
    let reply: redis::RedisResult<String> = command.query_async(c).await;
    assert_eq!(reply.as_deref(), Ok("OK"), "RESTORE {key}");
}

/// Everything a client can see of a key, in one comparable value: its
/// type, its encoding and its contents (hashes and sets sorted, as their
/// order is the table's; a stream's full XINFO).
async fn seen(c: &mut MultiplexedConnection, key: &str) -> Vec<Value> {
    let kind: String = cmd(c, &["TYPE", key]).await.unwrap();
    let encoding: Value = cmd(c, &["OBJECT", "ENCODING", key]).await.unwrap();
    let contents = match kind.as_str() {
        "string" => cmd(c, &["GET", key]).await.unwrap(),
        "list" => cmd(c, &["LRANGE", key, "0", "-1"]).await.unwrap(),
        "zset" => cmd(c, &["ZRANGE", key, "0", "-1", "WITHSCORES"])
            .await
            .unwrap(),
        "hash" => {
            let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = cmd(c, &["HGETALL", key]).await.unwrap();
            pairs.sort();
            let items = pairs.into_iter().flat_map(|(f, v)| [f, v]);
            Value::Array(items.map(Value::BulkString).collect())
        }
        "set" => {
            let mut members: Vec<Vec<u8>> = cmd(c, &["SMEMBERS", key]).await.unwrap();
            members.sort();
            Value::Array(members.into_iter().map(Value::BulkString).collect())
        }
        "stream" => without_radix_nodes(cmd(c, &["XINFO", "STREAM", key, "FULL"]).await.unwrap()),
        other => panic!("no reader for {other}"),
    };
    vec![Value::SimpleString(kind), encoding, contents]
}

/// XINFO STREAM FULL without `radix-tree-nodes`: the count of Redis's
/// radix tree nodes depends on the order keys went into the tree (a
/// restored stream's differs from the original's on Redis itself).
fn without_radix_nodes(info: Value) -> Value {
    let Value::Array(items) = info else {
        return info;
    };
    let mut kept = Vec::new();
    let mut items = items.into_iter();
    while let (Some(name), Some(value)) = (items.next(), items.next()) {
        if name != Value::BulkString(b"radix-tree-nodes".to_vec()) {
            kept.extend([name, value]);
        }
    }
    Value::Array(kept)
}

async fn pttl(c: &mut MultiplexedConnection, key: &str) -> i64 {
    cmd(c, &["PTTL", key]).await.unwrap()
}

/// Each key of `from` restored on `to` and on `from` itself under a new
/// name: the copies look the same on both servers, as the original, and
/// keep its TTL.
async fn restore_everywhere(
    from: &mut MultiplexedConnection,
    to: &mut MultiplexedConnection,
    direction: &str,
) {
    for key in keys() {
        let payload = dump(from, &key).await;
        let ttl = pttl(from, &key).await.max(0);
        let copy = format!("{key}:{direction}");
        restore(to, &copy, ttl, &payload).await;
        restore(from, &copy, ttl, &payload).await;
        let there = seen(to, &copy).await;
        assert_eq!(there, seen(from, &copy).await, "{direction} {key}");
        assert_eq!(there[2], seen(from, &key).await[2], "{direction} {key}");
        let left = pttl(to, &copy).await;
        match ttl {
            0 => assert_eq!(left, -1, "{direction} {key}"),
            ttl => assert!(
                left > ttl - 60_000 && left <= ttl,
                "{direction} {key}: {left}"
            ),
        }
    }
}

struct Pair {
    _redis: RedisServer,
    _rlockd: rlockd::ServerHandle,
    redis: MultiplexedConnection,
    rlockd: MultiplexedConnection,
    redis_port: u16,
    rlockd_port: u16,
}

async fn pair(test: &str) -> Option<Pair> {
    let bin = refserver::redis_server_path(test)?;
    let redis_server = RedisServer::start(&bin);
    let rlockd_server = common::start_with(rlockd::Config {
        enable_debug_command: rlockd::DebugCommand::Yes,
        ..rlockd::Config::default()
    })
    .await;
    let redis = common::connect_url(format!("redis://{}", redis_server.addr)).await;
    let rlockd = connect(&rlockd_server).await;
    Some(Pair {
        redis_port: redis_server.port(),
        rlockd_port: rlockd_server.addr().port(),
        _redis: redis_server,
        _rlockd: rlockd_server,
        redis,
        rlockd,
    })
}

#[tokio::test]
async fn redis_payloads_restore_on_rlockd_key_by_key() {
    let Some(mut p) = pair("redis_payloads_restore_on_rlockd").await else {
        return;
    };
    fill(&mut p.redis).await;
    restore_everywhere(&mut p.redis, &mut p.rlockd, "from-redis").await;
}

#[tokio::test]
async fn rlockd_payloads_restore_on_redis_key_by_key() {
    let Some(mut p) = pair("rlockd_payloads_restore_on_redis").await else {
        return;
    };
    fill(&mut p.rlockd).await;
    restore_everywhere(&mut p.rlockd, &mut p.redis, "from-rlockd").await;
}

/// Keys whose Redis encoding is laid out the same whatever the history of
/// the server (no hash table order; lists pushed at the tail only, whose
/// nodes rlockd cuts where Redis does).
/// LZF-compressed ones among them: rlockd compresses as liblzf does.
const SAME_BYTES: &[&str] = &[
    "str:int",
    "str:neg",
    "str:wide",
    "str:word",
    "str:leading-zero",
    "str:embstr",
    "str:empty",
    "str:compressible",
    "str:appended",
    "str:hll",
    "list:small",
    "list:big-item",
    "list:nodes",
    "hash:small",
    "set:ints",
    "set:wide-ints",
    "zset:small",
    "zset:geo",
    // Written from the highest score down, ties by member, as Redis walks
    // its skiplist from the tail.
    "zset:skiplist",
    "zset:long-member",
    // Deleted entries stay in Redis's nodes, flagged, where rlockd keeps
    // none: only a stream never deleted from has the same bytes. Its
    // consumers' times would be each server's clock: it has no group.
    "stream:plain",
];

#[tokio::test]
async fn rlockd_writes_redis_bytes() {
    let Some(mut p) = pair("rlockd_writes_redis_bytes").await else {
        return;
    };
    fill(&mut p.redis).await;
    fill(&mut p.rlockd).await;
    for key in SAME_BYTES {
        assert_eq!(
            dump(&mut p.rlockd, key).await,
            dump(&mut p.redis, key).await,
            "{key}"
        );
        assert_eq!(
            serialized(&mut p.rlockd, key).await,
            serialized(&mut p.redis, key).await,
            "{key}"
        );
    }
}

/// DEBUG OBJECT's sizes: `serializedlength`, and a list's `ql_` figures.
async fn serialized(c: &mut MultiplexedConnection, key: &str) -> Vec<String> {
    let line: String = cmd(c, &["DEBUG", "OBJECT", key]).await.unwrap();
    line.split(' ')
        .filter(|field| field.starts_with("serializedlength:") || field.starts_with("ql_"))
        .map(String::from)
        .collect()
}

/// Keys whose Redis payload holds what rlockd does not keep: deleted
/// stream entries, flagged in their node.
const HOLDS_TOMBSTONES: &[&str] = &["stream", "stream:nodes"];

/// A Redis payload restored on rlockd dumps back to the same bytes: every
/// key, groups, PEL and consumers included, hash tables in the order the
/// payload gave.
#[tokio::test]
async fn redis_payloads_come_back_byte_for_byte() {
    let Some(mut p) = pair("redis_payloads_come_back_byte_for_byte").await else {
        return;
    };
    fill(&mut p.redis).await;
    for key in keys() {
        if HOLDS_TOMBSTONES.contains(&key.as_str()) {
            continue;
        }
        let payload = dump(&mut p.redis, &key).await;
        restore(&mut p.rlockd, &key, 0, &payload).await;
        assert_eq!(dump(&mut p.rlockd, &key).await, payload, "{key}");
    }
}

/// A packed hash or sorted set holding an item longer than the server's
/// limit (written under a larger one) stays packed when restored: Redis
/// converts what it loads packed by its length alone.
#[tokio::test]
async fn packed_values_convert_by_length_alone() {
    let Some(mut p) = pair("packed_values_convert_by_length_alone").await else {
        return;
    };
    let long = "m".repeat(100);
    for c in [&mut p.redis, &mut p.rlockd] {
        for line in ["CONFIG SET zset-max-listpack-value 128 hash-max-listpack-value 128"] {
            run(c, &line.split(' ').map(String::from).collect::<Vec<_>>()).await;
        }
        let _: i64 = cmd(c, &["ZADD", "z", "1", &long]).await.unwrap();
        let _: i64 = cmd(c, &["HSET", "h", "f", &long]).await.unwrap();
        let _: i64 = cmd(c, &["ZADD", "z3", "1", &long, "2", "b", "3", "c"])
            .await
            .unwrap();
    }
    let payloads = [
        dump(&mut p.redis, "z").await,
        dump(&mut p.redis, "h").await,
        dump(&mut p.redis, "z3").await,
    ];
    for c in [&mut p.redis, &mut p.rlockd] {
        let line = "CONFIG SET zset-max-listpack-value 64 hash-max-listpack-value 64 zset-max-listpack-entries 2";
        run(c, &line.split(' ').map(String::from).collect::<Vec<_>>()).await;
        for (key, payload) in ["z:copy", "h:copy", "z3:copy"].iter().zip(&payloads) {
            restore(c, key, 0, payload).await;
        }
    }
    for (key, encoding) in [
        ("z:copy", "listpack"),
        ("h:copy", "listpack"),
        ("z3:copy", "skiplist"),
    ] {
        let (there, here) = (
            seen(&mut p.rlockd, key).await,
            seen(&mut p.redis, key).await,
        );
        assert_eq!(there, here, "{key}");
        assert_eq!(here[1], Value::BulkString(encoding.into()), "{key}");
    }
}

async fn migrate_all(from: &mut MultiplexedConnection, port: u16) {
    let mut words = vec![
        "MIGRATE".to_string(),
        "127.0.0.1".into(),
        port.to_string(),
        "".into(),
        "0".into(),
        "5000".into(),
        "COPY".into(),
        "KEYS".into(),
    ];
    words.extend(keys());
    assert_eq!(run(from, &words).await, Value::Okay);
}

/// Every key on `target` has the type and contents it has on `source`.
async fn same_contents(
    target: &mut MultiplexedConnection,
    source: &mut MultiplexedConnection,
    direction: &str,
) {
    for key in keys() {
        let (there, here) = (seen(target, &key).await, seen(source, &key).await);
        assert_eq!(
            [&there[0], &there[2]],
            [&here[0], &here[2]],
            "{direction} {key}"
        );
    }
}

/// MIGRATE ... COPY KEYS every key, each way: the target holds what the
/// source does (its type and contents: the encoding of a restored key is
/// compared with Redis's by the tests above; an original's may differ, as
/// an APPENDed string is `raw` and restored `embstr` on Redis too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_both_ways() {
    let Some(mut p) = pair("migrate_both_ways").await else {
        return;
    };
    fill(&mut p.redis).await;
    migrate_all(&mut p.redis, p.rlockd_port).await;
    same_contents(&mut p.rlockd, &mut p.redis, "redis -> rlockd").await;
    run(&mut p.redis, &["FLUSHALL".to_string()]).await;
    migrate_all(&mut p.rlockd, p.redis_port).await;
    same_contents(&mut p.redis, &mut p.rlockd, "rlockd -> redis").await;
    for key in keys() {
        let source_ttl = pttl(&mut p.rlockd, &key).await;
        let target_ttl = pttl(&mut p.redis, &key).await;
        match source_ttl {
            -1 => assert_eq!(target_ttl, -1, "{key}"),
            // MIGRATE sends the time left: the target counts it from
            // its own arrival.
            ttl => assert!(
                (ttl - 60_000..=ttl + 1_000).contains(&target_ttl),
                "{key}: {target_ttl} {ttl}"
            ),
        }
    }
}

const LIBRARY: &str =
    "#!lua name=mylib\nredis.register_function('myfunc', function(keys, args) return args[1] end)";
const OTHER_LIBRARY: &str = "#!lua name=other\nredis.register_function{function_name='other', callback=function() return 7 end, flags={'no-writes'}}";

/// FUNCTION LIST WITHCODE, libraries by name (Redis lists them in its
/// dictionary's order).
async fn functions(c: &mut MultiplexedConnection) -> Vec<Value> {
    let mut libraries: Vec<Value> = cmd(c, &["FUNCTION", "LIST", "WITHCODE"]).await.unwrap();
    libraries.sort_by_key(|library| format!("{library:?}"));
    libraries
}

/// FUNCTION DUMP on each server restores on the other, and the payloads
/// are the same bytes.
#[tokio::test]
async fn function_dump_restore_both_ways() {
    let Some(mut p) = pair("function_dump_restore_both_ways").await else {
        return;
    };
    for c in [&mut p.redis, &mut p.rlockd] {
        let _: String = cmd(c, &["FUNCTION", "LOAD", LIBRARY]).await.unwrap();
    }
    let one: Vec<u8> = cmd(&mut p.redis, &["FUNCTION", "DUMP"]).await.unwrap();
    let rlockd_one: Vec<u8> = cmd(&mut p.rlockd, &["FUNCTION", "DUMP"]).await.unwrap();
    assert_eq!(rlockd_one, one);
    // With two libraries each server lists them in its own order (Redis:
    // its dictionary's), so the payloads are compared by what they load.
    for c in [&mut p.redis, &mut p.rlockd] {
        let _: String = cmd(c, &["FUNCTION", "LOAD", OTHER_LIBRARY]).await.unwrap();
    }
    let from_redis: Vec<u8> = cmd(&mut p.redis, &["FUNCTION", "DUMP"]).await.unwrap();
    let from_rlockd: Vec<u8> = cmd(&mut p.rlockd, &["FUNCTION", "DUMP"]).await.unwrap();
    let listed = functions(&mut p.redis).await;
    for (c, payload) in [(&mut p.rlockd, &from_redis), (&mut p.redis, &from_rlockd)] {
        let mut restore = redis::cmd("FUNCTION");
        restore.arg("RESTORE").arg(payload.as_slice()).arg("FLUSH");
        let reply: String = restore.query_async(c).await.unwrap();
        assert_eq!(reply, "OK");
        assert_eq!(functions(c).await, listed);
        let called: String = cmd(c, &["FCALL", "myfunc", "0", "hi"]).await.unwrap();
        assert_eq!(called, "hi");
    }
    // A key's payload is not a function's, on either server.
    let _: () = cmd(&mut p.redis, &["SET", "k", "v"]).await.unwrap();
    let key_payload = dump(&mut p.redis, "k").await;
    for c in [&mut p.redis, &mut p.rlockd] {
        let mut restore = redis::cmd("FUNCTION");
        restore.arg("RESTORE").arg(key_payload.as_slice());
        let e = restore.query_async::<Value>(c).await.unwrap_err();
        assert_eq!(e.detail(), Some("given type is not a function"));
    }
    let mut damaged = from_redis.clone();
    damaged[3] ^= 1;
    for c in [&mut p.redis, &mut p.rlockd] {
        let mut restore = redis::cmd("FUNCTION");
        restore.arg("RESTORE").arg(damaged.as_slice());
        let e = restore.query_async::<Value>(c).await.unwrap_err();
        assert_eq!(
            e.detail(),
            Some("DUMP payload version or checksum are wrong")
        );
    }
}
