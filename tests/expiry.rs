//! Time to live: exact visibility at the deadline, reclamation by the
//! timer wheel without any access, and the EXPIRE option rules.

mod common;

use std::time::Duration;

use common::{cmd, connect, err, start};

fn info_field(info: &str, field: &str) -> Option<u64> {
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
}

/// DBSIZE once it is down to `left`, or after 2 s. It counts stored
/// entries, expired or not, so it only drops when the wheel has reclaimed
/// them (nothing here looks the keys up).
async fn dbsize_once_reclaimed(c: &mut redis::aio::MultiplexedConnection, left: i64) -> i64 {
    let mut dbsize = -1;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        dbsize = cmd(c, &["DBSIZE"]).await.unwrap();
        if dbsize == left {
            break;
        }
    }
    dbsize
}

#[tokio::test]
async fn key_is_invisible_after_its_deadline() {
    let server = start().await;
    let mut c = connect(&server).await;
    cmd::<()>(&mut c, &["SET", "lease", "owner", "PX", "80"])
        .await
        .unwrap();
    let pttl: i64 = cmd(&mut c, &["PTTL", "lease"]).await.unwrap();
    assert!((1..=80).contains(&pttl), "pttl {pttl}");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        cmd::<Option<String>>(&mut c, &["GET", "lease"])
            .await
            .unwrap(),
        None
    );
    assert_eq!(cmd::<i64>(&mut c, &["PTTL", "lease"]).await.unwrap(), -2);
    assert_eq!(cmd::<i64>(&mut c, &["EXISTS", "lease"]).await.unwrap(), 0);
}

#[tokio::test]
async fn wheel_reclaims_without_access() {
    let server = start().await;
    let mut c = connect(&server).await;
    for i in 0..300 {
        cmd::<()>(
            &mut c,
            &[
                "SET",
                &format!("t:{i}"),
                "v",
                "PX",
                &(20 + i % 50).to_string(),
            ],
        )
        .await
        .unwrap();
    }
    cmd::<()>(&mut c, &["SET", "forever", "v"]).await.unwrap();
    cmd::<()>(&mut c, &["SET", "later", "v", "EX", "100"])
        .await
        .unwrap();
    assert_eq!(dbsize_once_reclaimed(&mut c, 2).await, 2);
    let info: String = cmd(&mut c, &["INFO", "stats"]).await.unwrap();
    assert_eq!(info_field(&info, "expired_keys"), Some(300));
    let keyspace: String = cmd(&mut c, &["INFO", "keyspace"]).await.unwrap();
    assert!(
        keyspace.contains("db0:keys=2,expires=1,avg_ttl=0"),
        "{keyspace}"
    );
}

/// The expiry driver sleeps towards the earliest deadline it knows; a key
/// given an earlier one afterwards must wake it (nothing else would: with
/// no append-only file the server has no periodic work).
#[tokio::test]
async fn an_earlier_deadline_wakes_the_sleeping_driver() {
    let server = start().await;
    let mut c = connect(&server).await;
    cmd::<()>(&mut c, &["SET", "far", "v", "EX", "100"])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    cmd::<()>(&mut c, &["SET", "soon", "v", "PX", "30"])
        .await
        .unwrap();
    assert_eq!(dbsize_once_reclaimed(&mut c, 1).await, 1);
    let info: String = cmd(&mut c, &["INFO", "stats"]).await.unwrap();
    assert_eq!(info_field(&info, "expired_keys"), Some(1));
}

#[tokio::test]
async fn expire_options() {
    let server = start().await;
    let mut c = connect(&server).await;
    assert_eq!(
        cmd::<i64>(&mut c, &["EXPIRE", "missing", "10"])
            .await
            .unwrap(),
        0
    );
    cmd::<()>(&mut c, &["SET", "k", "v"]).await.unwrap();
    assert_eq!(cmd::<i64>(&mut c, &["TTL", "k"]).await.unwrap(), -1);
    assert_eq!(
        cmd::<i64>(&mut c, &["EXPIRE", "k", "100", "XX"])
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        cmd::<i64>(&mut c, &["EXPIRE", "k", "100", "GT"])
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        cmd::<i64>(&mut c, &["EXPIRE", "k", "100", "LT"])
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        cmd::<i64>(&mut c, &["EXPIRE", "k", "200", "NX"])
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        cmd::<i64>(&mut c, &["EXPIRE", "k", "50", "GT"])
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        cmd::<i64>(&mut c, &["PEXPIRE", "k", "200000", "gt"])
            .await
            .unwrap(),
        1
    );
    assert_eq!(cmd::<i64>(&mut c, &["TTL", "k"]).await.unwrap(), 200);
    assert_eq!(
        err(&mut c, &["EXPIRE", "k", "1", "NX", "XX"]).await,
        "ERR NX and XX, GT or LT options at the same time are not compatible"
    );
    assert_eq!(
        err(&mut c, &["EXPIRE", "k", "1", "GT", "LT"]).await,
        "ERR GT and LT options at the same time are not compatible"
    );
    assert_eq!(
        err(&mut c, &["EXPIRE", "k", "1", "YY"]).await,
        "ERR Unsupported option YY"
    );
    assert_eq!(
        err(&mut c, &["EXPIRE", "k", "9223372036854775807"]).await,
        "ERR invalid expire time in 'expire' command"
    );
    cmd::<()>(&mut c, &["EXPIREAT", "k", "4102444800"])
        .await
        .unwrap();
    assert_eq!(
        cmd::<i64>(&mut c, &["EXPIRETIME", "k"]).await.unwrap(),
        4102444800
    );
    assert_eq!(
        cmd::<i64>(&mut c, &["PEXPIRETIME", "k"]).await.unwrap(),
        4102444800000
    );
    assert_eq!(cmd::<i64>(&mut c, &["PERSIST", "k"]).await.unwrap(), 1);
    assert_eq!(cmd::<i64>(&mut c, &["PERSIST", "k"]).await.unwrap(), 0);
    assert_eq!(cmd::<i64>(&mut c, &["EXPIRETIME", "k"]).await.unwrap(), -1);
    // A deadline in the past deletes at once.
    assert_eq!(cmd::<i64>(&mut c, &["EXPIRE", "k", "-1"]).await.unwrap(), 1);
    assert_eq!(cmd::<i64>(&mut c, &["EXISTS", "k"]).await.unwrap(), 0);
}

#[tokio::test]
async fn set_variants_and_keepttl() {
    let server = start().await;
    let mut c = connect(&server).await;
    cmd::<()>(&mut c, &["SETEX", "a", "100", "v"])
        .await
        .unwrap();
    assert_eq!(cmd::<i64>(&mut c, &["TTL", "a"]).await.unwrap(), 100);
    cmd::<()>(&mut c, &["SET", "a", "w", "KEEPTTL"])
        .await
        .unwrap();
    assert_eq!(cmd::<i64>(&mut c, &["TTL", "a"]).await.unwrap(), 100);
    cmd::<()>(&mut c, &["INCR", "n"]).await.unwrap();
    cmd::<()>(&mut c, &["PEXPIRE", "n", "100000"])
        .await
        .unwrap();
    cmd::<()>(&mut c, &["INCR", "n"]).await.unwrap();
    assert!(
        cmd::<i64>(&mut c, &["PTTL", "n"]).await.unwrap() > 90_000,
        "INCR keeps the TTL"
    );
    cmd::<()>(&mut c, &["SET", "a", "x"]).await.unwrap();
    assert_eq!(
        cmd::<i64>(&mut c, &["TTL", "a"]).await.unwrap(),
        -1,
        "plain SET clears it"
    );
    assert_eq!(
        err(&mut c, &["SETEX", "a", "0", "v"]).await,
        "ERR invalid expire time in 'setex' command"
    );
    assert_eq!(
        err(&mut c, &["PSETEX", "a", "-5", "v"]).await,
        "ERR invalid expire time in 'psetex' command"
    );
    let past = "1000";
    cmd::<()>(&mut c, &["SET", "gone", "v", "PXAT", past])
        .await
        .unwrap();
    assert_eq!(cmd::<i64>(&mut c, &["EXISTS", "gone"]).await.unwrap(), 0);
}
