//! Strings and keyspace commands over a real socket.

mod common;

use std::collections::HashSet;

use common::{cmd, connect, err, start};
use redis::Value;

#[tokio::test]
async fn set_get_and_options() {
    let server = start().await;
    let mut c = connect(&server).await;
    assert_eq!(
        cmd::<String>(&mut c, &["SET", "k", "v"]).await.unwrap(),
        "OK"
    );
    assert_eq!(cmd::<String>(&mut c, &["GET", "k"]).await.unwrap(), "v");
    assert_eq!(
        cmd::<Option<String>>(&mut c, &["SET", "k", "w", "NX"])
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        cmd::<Option<String>>(&mut c, &["SET", "k", "w", "xx", "GET"])
            .await
            .unwrap(),
        Some("v".into())
    );
    assert_eq!(
        cmd::<Option<String>>(&mut c, &["SET", "new", "x", "XX"])
            .await
            .unwrap(),
        None
    );
    assert_eq!(cmd::<i64>(&mut c, &["EXISTS", "new"]).await.unwrap(), 0);
    assert_eq!(
        err(&mut c, &["SET", "k", "v", "NX", "XX"]).await,
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["SET", "k", "v", "EX", "0"]).await,
        "ERR invalid expire time in 'set' command"
    );
    assert_eq!(
        err(&mut c, &["SET", "k", "v", "EX", "x"]).await,
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err(&mut c, &["SET", "k", "v", "EX", "10", "KEEPTTL"]).await,
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["GET"]).await,
        "ERR wrong number of arguments for 'get' command"
    );
    cmd::<()>(&mut c, &["HSET", "h", "f", "v"]).await.unwrap();
    assert_eq!(
        err(&mut c, &["GET", "h"]).await,
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    );
    assert_eq!(cmd::<i64>(&mut c, &["SETNX", "k", "z"]).await.unwrap(), 0);
    assert_eq!(cmd::<String>(&mut c, &["GETDEL", "k"]).await.unwrap(), "w");
    assert_eq!(
        cmd::<Option<String>>(&mut c, &["GETSET", "k", "1"])
            .await
            .unwrap(),
        None
    );
    assert_eq!(cmd::<i64>(&mut c, &["APPEND", "k", "23"]).await.unwrap(), 3);
    assert_eq!(cmd::<i64>(&mut c, &["STRLEN", "k"]).await.unwrap(), 3);
}

#[tokio::test]
async fn counters_are_exact_and_checked() {
    let server = start().await;
    let mut c = connect(&server).await;
    assert_eq!(cmd::<i64>(&mut c, &["INCR", "n"]).await.unwrap(), 1);
    assert_eq!(
        cmd::<i64>(&mut c, &["INCRBY", "n", "-11"]).await.unwrap(),
        -10
    );
    assert_eq!(
        cmd::<i64>(&mut c, &["DECRBY", "n", "5"]).await.unwrap(),
        -15
    );
    assert_eq!(cmd::<i64>(&mut c, &["DECR", "n"]).await.unwrap(), -16);
    cmd::<()>(&mut c, &["SET", "max", "9223372036854775807"])
        .await
        .unwrap();
    assert_eq!(
        err(&mut c, &["INCR", "max"]).await,
        "ERR increment or decrement would overflow"
    );
    cmd::<()>(&mut c, &["SET", "f", "1.5"]).await.unwrap();
    assert_eq!(
        err(&mut c, &["INCR", "f"]).await,
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err(&mut c, &["DECRBY", "n", "-9223372036854775808"]).await,
        "ERR decrement would overflow"
    );

    // Many clients incrementing one counter: no lost update.
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let mut con = connect(&server).await;
        tasks.push(tokio::spawn(async move {
            for _ in 0..200 {
                cmd::<i64>(&mut con, &["INCR", "shared"]).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(cmd::<i64>(&mut c, &["GET", "shared"]).await.unwrap(), 4000);
}

#[tokio::test]
async fn multi_key_commands_across_shards() {
    let server = start().await;
    let mut c = connect(&server).await;
    let keys: Vec<String> = (0..50).map(|i| format!("key:{i}")).collect();
    let mut mset = vec!["MSET"];
    for k in &keys {
        mset.push(k);
        mset.push(k);
    }
    cmd::<()>(&mut c, &mset).await.unwrap();
    let mut mget = vec!["MGET"];
    mget.extend(keys.iter().map(|k| k.as_str()));
    mget.push("missing");
    let got: Vec<Option<String>> = cmd(&mut c, &mget).await.unwrap();
    assert_eq!(got.len(), 51);
    assert!(
        got[..50]
            .iter()
            .zip(&keys)
            .all(|(g, k)| g.as_deref() == Some(k.as_str()))
    );
    assert_eq!(got[50], None);
    let mut exists = vec!["EXISTS"];
    exists.extend(keys.iter().map(|k| k.as_str()));
    exists.push("key:0");
    assert_eq!(cmd::<i64>(&mut c, &exists).await.unwrap(), 51);
    assert_eq!(
        err(&mut c, &["MSET", "a", "1", "b"]).await,
        "ERR wrong number of arguments for 'mset' command"
    );
    let mut del = vec!["DEL"];
    del.extend(keys.iter().map(|k| k.as_str()));
    assert_eq!(cmd::<i64>(&mut c, &del).await.unwrap(), 50);
    assert_eq!(cmd::<i64>(&mut c, &["DBSIZE"]).await.unwrap(), 0);
}

#[tokio::test]
async fn scan_visits_every_key() {
    let server = start().await;
    let mut c = connect(&server).await;
    for i in 0..1000 {
        cmd::<()>(&mut c, &["SET", &format!("s:{i}"), "v"])
            .await
            .unwrap();
    }
    cmd::<()>(&mut c, &["HSET", "s:hash", "f", "v"])
        .await
        .unwrap();
    let mut seen = HashSet::new();
    let mut cursor = "0".to_string();
    let mut rounds = 0;
    loop {
        let (next, keys): (String, Vec<String>) =
            cmd(&mut c, &["SCAN", &cursor, "COUNT", "37", "MATCH", "s:*"])
                .await
                .unwrap();
        seen.extend(keys);
        rounds += 1;
        if next == "0" {
            break;
        }
        cursor = next;
    }
    assert_eq!(seen.len(), 1001);
    assert!(rounds > 10, "COUNT should bound each page");
    let (_, hashes): (String, Vec<String>) = loop_scan_type(&mut c).await;
    assert_eq!(hashes, vec!["s:hash".to_string()]);
    let keys: Vec<String> = cmd(&mut c, &["KEYS", "s:99?"]).await.unwrap();
    assert_eq!(keys.len(), 10);
    assert_eq!(err(&mut c, &["SCAN", "x"]).await, "ERR invalid cursor");
    assert_eq!(
        err(&mut c, &["SCAN", "0", "COUNT", "0"]).await,
        "ERR syntax error"
    );
}

async fn loop_scan_type(c: &mut redis::aio::MultiplexedConnection) -> (String, Vec<String>) {
    let mut all = Vec::new();
    let mut cursor = "0".to_string();
    loop {
        let (next, keys): (String, Vec<String>) =
            cmd(c, &["SCAN", &cursor, "TYPE", "hash", "COUNT", "1000"])
                .await
                .unwrap();
        all.extend(keys);
        if next == "0" {
            return (next, all);
        }
        cursor = next;
    }
}

#[tokio::test]
async fn rename_type_randomkey() {
    let server = start().await;
    let mut c = connect(&server).await;
    assert_eq!(
        cmd::<Value>(&mut c, &["RANDOMKEY"]).await.unwrap(),
        Value::Nil
    );
    assert_eq!(
        err(&mut c, &["RENAME", "nope", "x"]).await,
        "ERR no such key"
    );
    cmd::<()>(&mut c, &["SET", "a", "1", "EX", "100"])
        .await
        .unwrap();
    cmd::<()>(&mut c, &["SET", "b", "2"]).await.unwrap();
    cmd::<()>(&mut c, &["RENAME", "a", "b"]).await.unwrap();
    assert_eq!(cmd::<String>(&mut c, &["GET", "b"]).await.unwrap(), "1");
    assert!(
        cmd::<i64>(&mut c, &["TTL", "b"]).await.unwrap() > 90,
        "RENAME keeps the TTL"
    );
    assert_eq!(
        cmd::<String>(&mut c, &["TYPE", "b"]).await.unwrap(),
        "string"
    );
    assert_eq!(cmd::<String>(&mut c, &["TYPE", "a"]).await.unwrap(), "none");
    assert_eq!(cmd::<String>(&mut c, &["RANDOMKEY"]).await.unwrap(), "b");
}

#[tokio::test]
async fn databases_are_isolated() {
    let server = start().await;
    let mut c = connect(&server).await;
    cmd::<()>(&mut c, &["SET", "k", "db0"]).await.unwrap();
    let mut c1 = redis::Client::open(format!("{}/1", server.url()))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    assert_eq!(
        cmd::<Option<String>>(&mut c1, &["GET", "k"]).await.unwrap(),
        None
    );
    cmd::<()>(&mut c1, &["SET", "k", "db1"]).await.unwrap();
    cmd::<()>(&mut c1, &["FLUSHDB"]).await.unwrap();
    assert_eq!(cmd::<String>(&mut c, &["GET", "k"]).await.unwrap(), "db0");
    assert_eq!(
        err(&mut c, &["SELECT", "16"]).await,
        "ERR DB index is out of range"
    );
    assert_eq!(
        err(&mut c, &["SELECT", "x"]).await,
        "ERR value is not an integer or out of range"
    );
    cmd::<()>(&mut c1, &["FLUSHALL"]).await.unwrap();
    assert_eq!(
        cmd::<Option<String>>(&mut c, &["GET", "k"]).await.unwrap(),
        None
    );
}
