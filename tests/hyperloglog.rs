//! HyperLogLog values move between redis-server and rlockd: a sketch Redis
//! built, stored in rlockd with SET, counts the same, and grows and merges
//! into the same bytes on both. Also HRANDFIELD's random picks, checked
//! for the rules Redis keeps.

mod common;
mod refserver;

use std::collections::HashSet;

use common::{cmd, connect, start};
use redis::aio::MultiplexedConnection;
use refserver::RedisServer;

async fn connect_addr(addr: std::net::SocketAddr) -> MultiplexedConnection {
    common::connect_url(format!("redis://{addr}")).await
}

async fn pfadd_range(c: &mut MultiplexedConnection, key: &str, from: u32, to: u32) {
    for chunk in (from..to).collect::<Vec<_>>().chunks(500) {
        let mut add = redis::cmd("PFADD");
        add.arg(key);
        for i in chunk {
            add.arg(format!("element:{i}"));
        }
        let _: i64 = add.query_async(c).await.unwrap();
    }
}

async fn get_bytes(c: &mut MultiplexedConnection, key: &str) -> Vec<u8> {
    redis::cmd("GET").arg(key).query_async(c).await.unwrap()
}

#[tokio::test]
async fn sketches_move_between_redis_and_rlockd_byte_for_byte() {
    let Some(bin) = refserver::redis_server_path("hyperloglog_interop") else {
        return;
    };
    let redis_server = RedisServer::start(&bin);
    let mut theirs = connect_addr(redis_server.addr).await;
    let ours_server = start().await;
    let mut ours = connect(&ours_server).await;

    // A sparse sketch and a dense one, built by Redis.
    pfadd_range(&mut theirs, "sparse", 0, 200).await;
    pfadd_range(&mut theirs, "dense", 0, 6000).await;
    for key in ["sparse", "dense"] {
        let bytes = get_bytes(&mut theirs, key).await;
        let _: () = redis::cmd("SET")
            .arg(key)
            .arg(&bytes)
            .query_async(&mut ours)
            .await
            .unwrap();
        let want: i64 = cmd(&mut theirs, &["PFCOUNT", key]).await.unwrap();
        let got: i64 = cmd(&mut ours, &["PFCOUNT", key]).await.unwrap();
        assert_eq!(got, want, "{key}: the count of Redis's sketch");
        // Both now hold the count in the header.
        assert_eq!(
            get_bytes(&mut ours, key).await,
            get_bytes(&mut theirs, key).await,
            "{key}: after PFCOUNT"
        );
    }
    // Growing them on both sides, the sparse one past its 3000-byte limit.
    for c in [&mut theirs, &mut ours] {
        pfadd_range(c, "sparse", 150, 4000).await;
        pfadd_range(c, "dense", 5000, 9000).await;
        let _: () = cmd(c, &["PFMERGE", "union", "sparse", "dense"])
            .await
            .unwrap();
    }
    for key in ["sparse", "dense", "union"] {
        assert_eq!(
            get_bytes(&mut ours, key).await,
            get_bytes(&mut theirs, key).await,
            "{key}: after PFADD and PFMERGE on both"
        );
    }
    let want: i64 = cmd(&mut theirs, &["PFCOUNT", "sparse", "dense", "union"])
        .await
        .unwrap();
    let got: i64 = cmd(&mut ours, &["PFCOUNT", "sparse", "dense", "union"])
        .await
        .unwrap();
    assert_eq!(got, want);
}

#[tokio::test]
async fn hrandfield_picks_follow_the_count() {
    let server = start().await;
    let mut c = connect(&server).await;
    let fields: Vec<String> = (0..20).map(|i| format!("f{i}")).collect();
    let mut hset = redis::cmd("HSET");
    hset.arg("h");
    for f in &fields {
        hset.arg(f).arg(format!("v{f}"));
    }
    let _: i64 = hset.query_async(&mut c).await.unwrap();

    // A positive count: distinct fields of the hash.
    let picked: Vec<String> = cmd(&mut c, &["HRANDFIELD", "h", "7"]).await.unwrap();
    let unique: HashSet<&String> = picked.iter().collect();
    assert_eq!(unique.len(), 7);
    assert!(picked.iter().all(|f| fields.contains(f)));

    // A negative count: exactly that many, repeats allowed, and over many
    // picks every field turns up.
    let picked: Vec<String> = cmd(&mut c, &["HRANDFIELD", "h", "-2000"]).await.unwrap();
    assert_eq!(picked.len(), 2000);
    let seen: HashSet<&String> = picked.iter().collect();
    assert_eq!(
        seen.len(),
        fields.len(),
        "every field is picked at some point"
    );

    // WITHVALUES keeps each field with its own value.
    let pairs: Vec<String> = cmd(&mut c, &["HRANDFIELD", "h", "-50", "WITHVALUES"])
        .await
        .unwrap();
    assert_eq!(pairs.len(), 100);
    for pair in pairs.chunks(2) {
        assert_eq!(pair[1], format!("v{}", pair[0]));
    }
    let pairs: Vec<String> = cmd(&mut c, &["HRANDFIELD", "h", "5", "WITHVALUES"])
        .await
        .unwrap();
    let unique: HashSet<&String> = pairs.iter().step_by(2).collect();
    assert_eq!(unique.len(), 5);
}
