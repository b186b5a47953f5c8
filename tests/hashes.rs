//! Hash commands, the shape lock clients rely on.

mod common;

use std::collections::HashMap;

use common::{cmd, connect, err, start};

#[tokio::test]
async fn reentrant_lock_shape() {
    let server = start().await;
    let mut c = connect(&server).await;
    let owner = "8743c9c0-0795-4907-87fd-6c719a6b4586:1";
    assert_eq!(
        cmd::<i64>(&mut c, &["HSET", "lock", owner, "1"])
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        cmd::<i64>(&mut c, &["HEXISTS", "lock", owner])
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        cmd::<i64>(&mut c, &["HINCRBY", "lock", owner, "1"])
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        cmd::<i64>(&mut c, &["HINCRBY", "lock", owner, "-2"])
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        cmd::<i64>(&mut c, &["HDEL", "lock", owner, "other"])
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        cmd::<i64>(&mut c, &["EXISTS", "lock"]).await.unwrap(),
        0,
        "an emptied hash is deleted"
    );
}

#[tokio::test]
async fn reads_and_errors() {
    let server = start().await;
    let mut c = connect(&server).await;
    assert_eq!(
        cmd::<i64>(&mut c, &["HSET", "h", "a", "1", "b", "2", "a", "3"])
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        cmd::<i64>(&mut c, &["HSETNX", "h", "a", "9"])
            .await
            .unwrap(),
        0
    );
    assert_eq!(cmd::<i64>(&mut c, &["HLEN", "h"]).await.unwrap(), 2);
    let all: Vec<String> = cmd(&mut c, &["HGETALL", "h"]).await.unwrap();
    assert_eq!(
        all,
        vec!["a", "3", "b", "2"],
        "insertion order, like a small Redis hash"
    );
    let got: Vec<Option<String>> = cmd(&mut c, &["HMGET", "h", "b", "zz"]).await.unwrap();
    assert_eq!(got, vec![Some("2".into()), None]);
    assert_eq!(
        cmd::<Vec<String>>(&mut c, &["HKEYS", "h"]).await.unwrap(),
        vec!["a", "b"]
    );
    assert_eq!(
        cmd::<Vec<String>>(&mut c, &["HVALS", "h"]).await.unwrap(),
        vec!["3", "2"]
    );
    assert_eq!(
        err(&mut c, &["HSET", "h", "a"]).await,
        "ERR wrong number of arguments for 'hset' command"
    );
    cmd::<()>(&mut c, &["HSET", "h", "s", "abc"]).await.unwrap();
    assert_eq!(
        err(&mut c, &["HINCRBY", "h", "s", "1"]).await,
        "ERR hash value is not an integer"
    );
    assert_eq!(
        err(&mut c, &["HINCRBY", "h", "a", "x"]).await,
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err(&mut c, &["HINCRBYFLOAT", "h", "s", "1"]).await,
        "ERR hash value is not a float"
    );
    assert_eq!(
        cmd::<String>(&mut c, &["HINCRBYFLOAT", "h", "fl", "10.5"])
            .await
            .unwrap(),
        "10.5"
    );
    assert_eq!(
        cmd::<String>(&mut c, &["HINCRBYFLOAT", "h", "fl", "5.0e3"])
            .await
            .unwrap(),
        "5010.5"
    );
    cmd::<()>(&mut c, &["SET", "str", "x"]).await.unwrap();
    assert!(
        err(&mut c, &["HGET", "str", "f"])
            .await
            .starts_with("WRONGTYPE")
    );
    assert_eq!(
        cmd::<Option<String>>(&mut c, &["HGET", "nohash", "f"])
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn binary_safe_fields() {
    let server = start().await;
    let mut c = connect(&server).await;
    let field: Vec<u8> = (0u8..16).map(|b| b.wrapping_mul(37) ^ 0x80).collect();
    redis::cmd("HSET")
        .arg("bin")
        .arg(&field)
        .arg(&b"\x00\xff"[..])
        .query_async::<()>(&mut c)
        .await
        .unwrap();
    let v: Vec<u8> = redis::cmd("HGET")
        .arg("bin")
        .arg(&field)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(v, b"\x00\xff");
    let keys: Vec<Vec<u8>> = redis::cmd("HKEYS")
        .arg("bin")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(keys, vec![field]);
}

#[tokio::test]
async fn hscan_covers_large_hashes() {
    let server = start().await;
    let mut c = connect(&server).await;
    for i in 0..500 {
        cmd::<()>(&mut c, &["HSET", "big", &format!("f{i}"), &i.to_string()])
            .await
            .unwrap();
    }
    let mut seen = HashMap::new();
    let mut cursor = "0".to_string();
    loop {
        let (next, items): (String, Vec<String>) =
            cmd(&mut c, &["HSCAN", "big", &cursor, "COUNT", "50"])
                .await
                .unwrap();
        for pair in items.chunks(2) {
            seen.insert(pair[0].clone(), pair[1].clone());
        }
        if next == "0" {
            break;
        }
        cursor = next;
    }
    assert_eq!(seen.len(), 500);
    assert_eq!(seen["f42"], "42");
    let (next, items): (String, Vec<String>) =
        cmd(&mut c, &["HSCAN", "missing", "0"]).await.unwrap();
    assert_eq!((next.as_str(), items.len()), ("0", 0));
}
