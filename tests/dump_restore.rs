//! DUMP and RESTORE over a real socket: every value type comes back as it
//! was, with RESTORE's TTL, and damaged payloads are refused with Redis's
//! errors. (tests/dump_payloads.rs compares payloads with redis-server's;
//! tests/conformance.rs compares the errors and restored values.)

mod common;

use common::{cmd, connect, err, start};
use redis::aio::MultiplexedConnection;

async fn dump(c: &mut MultiplexedConnection, key: &str) -> Vec<u8> {
    cmd::<Vec<u8>>(c, &["DUMP", key]).await.unwrap()
}

async fn restore(
    c: &mut MultiplexedConnection,
    key: &str,
    ttl: i64,
    payload: &[u8],
    extra: &[&str],
) -> redis::RedisResult<String> {
    let mut command = redis::cmd("RESTORE");
    command.arg(key).arg(ttl).arg(payload);
    for e in extra {
        command.arg(*e);
    }
    command.query_async(c).await
}

/// Every key's contents as one comparable value, whatever its type.
async fn contents(c: &mut MultiplexedConnection, key: &str) -> redis::Value {
    let kind: String = cmd(c, &["TYPE", key]).await.unwrap();
    if kind == "hash" {
        let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = cmd(c, &["HGETALL", key]).await.unwrap();
        pairs.sort();
        let pairs = pairs.into_iter().flat_map(|(f, v)| [f, v]);
        return redis::Value::Array(pairs.map(redis::Value::BulkString).collect());
    }
    let read: &[&str] = match kind.as_str() {
        "string" => &["GET", key],
        "list" => &["LRANGE", key, "0", "-1"],
        "set" => &["SORT", key, "ALPHA"],
        "zset" => &["ZRANGE", key, "0", "-1", "WITHSCORES"],
        other => panic!("no reader for {other}"),
    };
    cmd(c, read).await.unwrap()
}

#[tokio::test]
async fn every_type_round_trips() {
    let server = start().await;
    let mut c = connect(&server).await;
    let setup: &[&[&str]] = &[
        &["SET", "str", "hello"],
        &["SET", "int", "-12345"],
        &["RPUSH", "list", "a", "", "c"],
        &["SADD", "ints", "3", "1", "2"],
        &["SADD", "words", "x", "y", "1"],
        &["ZADD", "zset", "1.5", "a", "-inf", "b", "0", "c"],
        &["HSET", "hash", "f", "v", "", "empty"],
        &["GEOADD", "geo", "13.361389", "38.115556", "Palermo"],
    ];
    for line in setup {
        cmd::<redis::Value>(&mut c, line).await.unwrap();
    }
    let mut big = redis::cmd("HSET");
    big.arg("bighash");
    for i in 0..300 {
        big.arg(format!("field{i}")).arg(vec![b'v'; i]);
    }
    big.query_async::<i64>(&mut c).await.unwrap();
    let mut binary = redis::cmd("SET");
    binary.arg("binary").arg((0..=255u8).collect::<Vec<_>>());
    binary.query_async::<String>(&mut c).await.unwrap();

    for key in [
        "str", "int", "list", "ints", "words", "zset", "hash", "geo", "bighash", "binary",
    ] {
        let payload = dump(&mut c, key).await;
        let copy = format!("{key}:copy");
        assert_eq!(
            restore(&mut c, &copy, 0, &payload, &[]).await.unwrap(),
            "OK"
        );
        assert_eq!(
            contents(&mut c, &copy).await,
            contents(&mut c, key).await,
            "{key}"
        );
        let kind: String = cmd(&mut c, &["TYPE", key]).await.unwrap();
        assert_eq!(cmd::<String>(&mut c, &["TYPE", &copy]).await.unwrap(), kind);
        assert_eq!(
            cmd::<String>(&mut c, &["OBJECT", "ENCODING", &copy])
                .await
                .unwrap(),
            cmd::<String>(&mut c, &["OBJECT", "ENCODING", key])
                .await
                .unwrap(),
            "{key}"
        );
        // The same payload again: the key is taken unless REPLACE.
        assert_eq!(
            restore(&mut c, &copy, 0, &payload, &[])
                .await
                .unwrap_err()
                .code(),
            Some("BUSYKEY")
        );
        assert_eq!(
            restore(&mut c, &copy, 60_000, &payload, &["REPLACE"])
                .await
                .unwrap(),
            "OK"
        );
        let ttl: i64 = cmd(&mut c, &["PTTL", &copy]).await.unwrap();
        assert!((59_000..=60_000).contains(&ttl), "{key}: {ttl}");
    }
    assert_eq!(
        cmd::<Vec<Option<String>>>(&mut c, &["GEOHASH", "geo:copy", "Palermo"])
            .await
            .unwrap(),
        vec![Some("sqc8b49rny0".to_string())]
    );
}

#[tokio::test]
async fn damaged_payloads_are_refused() {
    let server = start().await;
    let mut c = connect(&server).await;
    cmd::<String>(&mut c, &["SET", "k", "value"]).await.unwrap();
    let payload = dump(&mut c, "k").await;
    for i in 0..payload.len() {
        let mut bad = payload.clone();
        bad[i] ^= 0x40;
        let e = restore(&mut c, "other", 0, &bad, &[]).await.unwrap_err();
        assert_eq!(
            e.detail(),
            Some("DUMP payload version or checksum are wrong"),
            "byte {i}"
        );
    }
    assert_eq!(
        err(&mut c, &["RESTORE", "other", "0", ""]).await,
        "ERR DUMP payload version or checksum are wrong"
    );
    assert_eq!(cmd::<i64>(&mut c, &["EXISTS", "other"]).await.unwrap(), 0);
    assert_eq!(
        cmd::<Option<Vec<u8>>>(&mut c, &["DUMP", "missing"])
            .await
            .unwrap(),
        None
    );
}
