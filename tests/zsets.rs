//! Sorted set commands, in the shapes lock clients use them (Redisson's
//! fair lock keeps its waiters' timeouts in a sorted set).

mod common;

use common::{cmd, connect, err, start};

#[tokio::test]
async fn add_score_range_and_remove() {
    let server = start().await;
    let mut c = connect(&server).await;
    let added: i64 = cmd(&mut c, &["ZADD", "q", "3", "c", "1", "a", "2", "b"])
        .await
        .unwrap();
    assert_eq!(added, 3);
    let all: Vec<String> = cmd(&mut c, &["ZRANGE", "q", "0", "-1"]).await.unwrap();
    assert_eq!(all, ["a", "b", "c"]);
    let scored: Vec<String> = cmd(&mut c, &["ZRANGE", "q", "0", "0", "WITHSCORES"])
        .await
        .unwrap();
    assert_eq!(scored, ["a", "1"]);
    let score: String = cmd(&mut c, &["ZSCORE", "q", "b"]).await.unwrap();
    assert_eq!(score, "2");
    let rank: Option<i64> = cmd(&mut c, &["ZRANK", "q", "c"]).await.unwrap();
    assert_eq!(rank, Some(2));
    let due: Vec<String> = cmd(
        &mut c,
        &["ZRANGEBYSCORE", "q", "-inf", "(3", "LIMIT", "0", "10"],
    )
    .await
    .unwrap();
    assert_eq!(due, ["a", "b"]);
    let counted: i64 = cmd(&mut c, &["ZCOUNT", "q", "(1", "+inf"]).await.unwrap();
    assert_eq!(counted, 2);
    let removed: i64 = cmd(&mut c, &["ZREMRANGEBYSCORE", "q", "-inf", "1"])
        .await
        .unwrap();
    assert_eq!(removed, 1);
    let removed: i64 = cmd(&mut c, &["ZREM", "q", "b", "c", "nope"]).await.unwrap();
    assert_eq!(removed, 2);
    let exists: i64 = cmd(&mut c, &["EXISTS", "q"]).await.unwrap();
    assert_eq!(exists, 0, "an emptied sorted set is deleted");
}

#[tokio::test]
async fn zadd_flags_and_increments() {
    let server = start().await;
    let mut c = connect(&server).await;
    let _: i64 = cmd(&mut c, &["ZADD", "z", "5", "m"]).await.unwrap();
    let changed: i64 = cmd(&mut c, &["ZADD", "z", "GT", "CH", "4", "m", "1", "n"])
        .await
        .unwrap();
    assert_eq!(changed, 1, "GT keeps 5 but adds n");
    let score: String = cmd(&mut c, &["ZINCRBY", "z", "0.5", "m"]).await.unwrap();
    assert_eq!(score, "5.5");
    let aborted: Option<String> = cmd(&mut c, &["ZADD", "z", "NX", "INCR", "1", "m"])
        .await
        .unwrap();
    assert_eq!(aborted, None);
    let big: String = cmd(&mut c, &["ZINCRBY", "z", "922337203685477", "n"])
        .await
        .unwrap();
    assert_eq!(big, "922337203685478");
    let scores: Vec<Option<String>> = cmd(&mut c, &["ZMSCORE", "z", "m", "x"]).await.unwrap();
    assert_eq!(scores, [Some("5.5".to_string()), None]);
    let card: i64 = cmd(&mut c, &["ZCARD", "z"]).await.unwrap();
    assert_eq!(card, 2);

    assert_eq!(
        err(&mut c, &["ZADD", "z", "NX", "XX", "1", "m"]).await,
        "ERR XX and NX options at the same time are not compatible"
    );
    assert_eq!(
        err(&mut c, &["ZADD", "z", "GT", "LT", "1", "m"]).await,
        "ERR GT, LT, and/or NX options at the same time are not compatible"
    );
    let _: i64 = cmd(&mut c, &["ZADD", "z", "inf", "i"]).await.unwrap();
    assert_eq!(
        err(&mut c, &["ZINCRBY", "z", "-inf", "i"]).await,
        "ERR resulting score is not a number (NaN)"
    );
    assert_eq!(
        err(&mut c, &["ZRANGEBYSCORE", "z", "x", "1"]).await,
        "ERR min or max is not a float"
    );
    let _: () = cmd(&mut c, &["SET", "s", "v"]).await.unwrap();
    assert!(
        err(&mut c, &["ZADD", "s", "1", "a"])
            .await
            .starts_with("WRONGTYPE")
    );
}

#[tokio::test]
async fn fair_lock_script_shapes() {
    let server = start().await;
    let mut c = connect(&server).await;
    let script = "redis.call('zadd', KEYS[1], ARGV[1], 'w1', ARGV[2], 'w2') \
        local first = redis.call('zrange', KEYS[1], 0, 0, 'WITHSCORES') \
        local due = redis.call('zrangebyscore', KEYS[1], 0, ARGV[1], 'limit', 0, 10) \
        local n = redis.call('zrem', KEYS[1], unpack(due)) \
        return {first[1], first[2], n, redis.call('zcard', KEYS[1])}";
    let reply: (String, String, i64, i64) = cmd(
        &mut c,
        &[
            "EVAL",
            script,
            "1",
            "timeouts",
            "1700000000000",
            "1700000005000",
        ],
    )
    .await
    .unwrap();
    assert_eq!(reply, ("w1".to_string(), "1700000000000".to_string(), 1, 1));
}
