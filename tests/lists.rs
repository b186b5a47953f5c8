//! List commands (non-blocking): pushes, pops with and without a count,
//! indexes, ranges, LREM, LSET, LPOS, deletion of emptied lists, errors,
//! keyspace events and scripts.

mod common;

use std::time::Duration;

use common::{cmd, connect, err, start};
use futures_util::StreamExt;

const WAIT: Duration = Duration::from_secs(5);

#[tokio::test]
async fn queue_shape() {
    let server = start().await;
    let mut c = connect(&server).await;
    assert_eq!(
        cmd::<i64>(&mut c, &["RPUSH", "q", "a", "b", "c"])
            .await
            .unwrap(),
        3
    );
    assert_eq!(
        cmd::<i64>(&mut c, &["LPUSH", "q", "y", "z"]).await.unwrap(),
        5
    );
    assert_eq!(
        cmd::<Vec<String>>(&mut c, &["LRANGE", "q", "0", "-1"])
            .await
            .unwrap(),
        vec!["z", "y", "a", "b", "c"],
        "LPUSH puts each element at the head in turn"
    );
    assert_eq!(cmd::<String>(&mut c, &["TYPE", "q"]).await.unwrap(), "list");
    assert_eq!(cmd::<i64>(&mut c, &["LLEN", "q"]).await.unwrap(), 5);
    assert_eq!(
        cmd::<Option<String>>(&mut c, &["LPOP", "q"]).await.unwrap(),
        Some("z".into())
    );
    assert_eq!(
        cmd::<Option<String>>(&mut c, &["RPOP", "q"]).await.unwrap(),
        Some("c".into())
    );
    assert_eq!(
        cmd::<Vec<String>>(&mut c, &["LPOP", "q", "10"])
            .await
            .unwrap(),
        vec!["y", "a", "b"]
    );
    assert_eq!(
        cmd::<i64>(&mut c, &["EXISTS", "q"]).await.unwrap(),
        0,
        "an emptied list is deleted"
    );
    assert_eq!(
        cmd::<Option<String>>(&mut c, &["LPOP", "q"]).await.unwrap(),
        None
    );
    // A count on a missing key is a null array; on a list, zero is empty.
    assert_eq!(
        cmd::<redis::Value>(&mut c, &["RPOP", "q", "2"])
            .await
            .unwrap(),
        redis::Value::Nil
    );
    cmd::<()>(&mut c, &["RPUSH", "q", "x"]).await.unwrap();
    assert_eq!(
        cmd::<redis::Value>(&mut c, &["RPOP", "q", "0"])
            .await
            .unwrap(),
        redis::Value::Array(vec![])
    );
    assert_eq!(
        err(&mut c, &["LPOP", "q", "-1"]).await,
        "ERR value is out of range, must be positive"
    );
    assert_eq!(
        err(&mut c, &["LPOP", "q", "1", "2"]).await,
        "ERR wrong number of arguments for 'lpop' command"
    );
}

#[tokio::test]
async fn index_range_set_rem() {
    let server = start().await;
    let mut c = connect(&server).await;
    cmd::<()>(&mut c, &["RPUSH", "l", "a", "b", "a", "c", "a"])
        .await
        .unwrap();
    assert_eq!(
        cmd::<Option<String>>(&mut c, &["LINDEX", "l", "-2"])
            .await
            .unwrap(),
        Some("c".into())
    );
    assert_eq!(
        cmd::<Option<String>>(&mut c, &["LINDEX", "l", "5"])
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        cmd::<Vec<String>>(&mut c, &["LRANGE", "l", "-3", "100"])
            .await
            .unwrap(),
        vec!["a", "c", "a"]
    );
    assert!(
        cmd::<Vec<String>>(&mut c, &["LRANGE", "l", "3", "1"])
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        cmd::<String>(&mut c, &["LSET", "l", "-1", "z"])
            .await
            .unwrap(),
        "OK"
    );
    assert_eq!(
        err(&mut c, &["LSET", "l", "5", "z"]).await,
        "ERR index out of range"
    );
    assert_eq!(
        err(&mut c, &["LSET", "nokey", "0", "z"]).await,
        "ERR no such key"
    );
    // a b a c z: remove one `a` from the tail, then every `a`.
    assert_eq!(
        cmd::<i64>(&mut c, &["LREM", "l", "-1", "a"]).await.unwrap(),
        1
    );
    assert_eq!(
        cmd::<Vec<String>>(&mut c, &["LRANGE", "l", "0", "-1"])
            .await
            .unwrap(),
        vec!["a", "b", "c", "z"]
    );
    assert_eq!(
        cmd::<i64>(&mut c, &["LREM", "l", "0", "a"]).await.unwrap(),
        1
    );
    assert_eq!(
        cmd::<i64>(&mut c, &["LREM", "l", "2", "b"]).await.unwrap(),
        1
    );
    assert_eq!(
        cmd::<i64>(&mut c, &["LREM", "l", "0", "c"]).await.unwrap(),
        1
    );
    assert_eq!(
        cmd::<i64>(&mut c, &["LREM", "l", "0", "z"]).await.unwrap(),
        1
    );
    assert_eq!(cmd::<i64>(&mut c, &["EXISTS", "l"]).await.unwrap(), 0);
    cmd::<()>(&mut c, &["SET", "s", "v"]).await.unwrap();
    for args in [
        &["RPUSH", "s", "a"][..],
        &["LPOP", "s"],
        &["LLEN", "s"],
        &["LRANGE", "s", "0", "-1"],
        &["LINDEX", "s", "0"],
        &["LSET", "s", "0", "v"],
        &["LREM", "s", "0", "v"],
        &["LPOS", "s", "v"],
    ] {
        assert!(err(&mut c, args).await.starts_with("WRONGTYPE"), "{args:?}");
    }
}

#[tokio::test]
async fn lpos_options() {
    let server = start().await;
    let mut c = connect(&server).await;
    cmd::<()>(&mut c, &["RPUSH", "p", "a", "b", "c", "a", "b", "c", "a"])
        .await
        .unwrap();
    assert_eq!(
        cmd::<Option<i64>>(&mut c, &["LPOS", "p", "c"])
            .await
            .unwrap(),
        Some(2)
    );
    assert_eq!(
        cmd::<Option<i64>>(&mut c, &["LPOS", "p", "a", "RANK", "-2"])
            .await
            .unwrap(),
        Some(3)
    );
    assert_eq!(
        cmd::<Vec<i64>>(&mut c, &["LPOS", "p", "a", "COUNT", "0"])
            .await
            .unwrap(),
        vec![0, 3, 6]
    );
    assert_eq!(
        cmd::<Vec<i64>>(&mut c, &["LPOS", "p", "a", "RANK", "-1", "COUNT", "2"])
            .await
            .unwrap(),
        vec![6, 3]
    );
    assert_eq!(
        cmd::<Option<i64>>(&mut c, &["LPOS", "p", "c", "MAXLEN", "2"])
            .await
            .unwrap(),
        None
    );
    assert!(
        cmd::<Vec<i64>>(&mut c, &["LPOS", "nokey", "a", "COUNT", "1"])
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        err(&mut c, &["LPOS", "p", "a", "RANK", "0"])
            .await
            .starts_with("ERR RANK can't be zero")
    );
    assert_eq!(
        err(&mut c, &["LPOS", "p", "a", "COUNT", "-1"]).await,
        "ERR COUNT can't be negative"
    );
    assert_eq!(
        err(&mut c, &["LPOS", "p", "a", "MAXLEN", "-1"]).await,
        "ERR MAXLEN can't be negative"
    );
    assert_eq!(
        err(&mut c, &["LPOS", "p", "a", "RANK"]).await,
        "ERR syntax error"
    );
}

#[tokio::test]
async fn keyspace_events() {
    let server = start().await;
    let client = redis::Client::open(server.url()).unwrap();
    let mut c = connect(&server).await;
    cmd::<()>(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "Elg"])
        .await
        .unwrap();
    let mut pubsub = client.get_async_pubsub().await.unwrap();
    pubsub.psubscribe("__keyevent@0__:*").await.unwrap();
    cmd::<()>(&mut c, &["RPUSH", "k", "a", "b"]).await.unwrap();
    cmd::<()>(&mut c, &["LPUSH", "k", "z"]).await.unwrap();
    cmd::<()>(&mut c, &["LSET", "k", "0", "y"]).await.unwrap();
    cmd::<()>(&mut c, &["LREM", "k", "0", "nothing"])
        .await
        .unwrap();
    cmd::<()>(&mut c, &["LREM", "k", "0", "a"]).await.unwrap();
    cmd::<()>(&mut c, &["LPOP", "k"]).await.unwrap();
    cmd::<()>(&mut c, &["RPOP", "k", "5"]).await.unwrap();
    let mut stream = pubsub.on_message();
    let mut seen = Vec::new();
    for _ in 0..7 {
        let msg = tokio::time::timeout(WAIT, stream.next())
            .await
            .unwrap()
            .unwrap();
        seen.push(
            msg.get_channel_name()
                .trim_start_matches("__keyevent@0__:")
                .to_string(),
        );
    }
    assert_eq!(
        seen,
        vec!["rpush", "lpush", "lset", "lrem", "lpop", "rpop", "del"]
    );
}

#[tokio::test]
async fn scripts_and_transactions() {
    let server = start().await;
    let mut c = connect(&server).await;
    let got: Vec<String> = cmd(
        &mut c,
        &[
            "EVAL",
            "redis.call('rpush', KEYS[1], 'a', 'b', 'c'); \
             return {redis.call('lindex', KEYS[1], -1), redis.call('lpop', KEYS[1])}",
            "1",
            "lk",
        ],
    )
    .await
    .unwrap();
    assert_eq!(got, vec!["c", "a"]);
    // A missing list pops as false in Lua.
    assert_eq!(
        cmd::<i64>(
            &mut c,
            &[
                "EVAL",
                "if redis.call('rpop', KEYS[1]) == false then return 1 end return 0",
                "1",
                "none",
            ],
        )
        .await
        .unwrap(),
        1
    );
    let replies: (i64, Vec<String>, i64) = redis::pipe()
        .atomic()
        .cmd("RPUSH")
        .arg("m")
        .arg("1")
        .arg("2")
        .cmd("LRANGE")
        .arg("m")
        .arg(0)
        .arg(-1)
        .cmd("LLEN")
        .arg("m")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(replies, (2, vec!["1".into(), "2".into()], 2));
}
