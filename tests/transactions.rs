//! MULTI/EXEC/WATCH: queueing, aborts, and atomicity across shards.

mod common;

use std::time::Duration;

use common::resp::{Conn, F};
use common::{cmd, connect, err, raw, start};
use redis::Value;

#[tokio::test]
async fn exec_runs_the_queue() {
    let server = start().await;
    let mut c = connect(&server).await;
    let mut pipe = redis::pipe();
    pipe.atomic()
        .set("a", 1)
        .incr("a", 5)
        .get("a")
        .hset("h", "f", "v");
    let (ok, n, a, added): (String, i64, i64, i64) = pipe.query_async(&mut c).await.unwrap();
    assert_eq!((ok.as_str(), n, a, added), ("OK", 6, 6, 1));
}

#[tokio::test]
async fn queue_errors_abort_and_runtime_errors_do_not() {
    let server = start().await;
    let out = raw(
        server.addr(),
        b"MULTI\r\nSET a 1\r\nGET\r\nEXEC\r\nGET a\r\nMULTI\r\nSET b x\r\nINCR b\r\nSET c 2\r\nEXEC\r\nEXEC\r\nDISCARD\r\nMULTI\r\nMULTI\r\nWATCH x\r\nDISCARD\r\n",
    )
    .await;
    let text = String::from_utf8(out).unwrap();
    let expected = "+OK\r\n+QUEUED\r\n-ERR wrong number of arguments for 'get' command\r\n-EXECABORT Transaction discarded because of previous errors.\r\n$-1\r\n\
+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n+OK\r\n-ERR value is not an integer or out of range\r\n+OK\r\n\
-ERR EXEC without MULTI\r\n-ERR DISCARD without MULTI\r\n\
+OK\r\n-ERR MULTI calls can not be nested\r\n-ERR WATCH inside MULTI is not allowed\r\n+OK\r\n";
    assert_eq!(text, expected);
}

fn ok() -> F {
    F::Simple("OK".into())
}

fn queued() -> F {
    F::Simple("QUEUED".into())
}

#[tokio::test]
async fn watch_aborts_on_change_by_another_client() {
    let server = start().await;
    let mut a = connect(&server).await;
    let mut b = connect(&server).await;
    cmd::<()>(&mut a, &["SET", "w", "1"]).await.unwrap();
    // WATCH needs one connection for the whole exchange, each reply read
    // as a frame (a quiet spell could end before a slow one arrives).
    let mut s = Conn::open(server.addr()).await;
    assert_eq!(s.cmd(&["WATCH", "w"]).await, ok());
    cmd::<()>(&mut b, &["SET", "w", "2"]).await.unwrap();
    assert_eq!(s.cmd(&["MULTI"]).await, ok());
    assert_eq!(s.cmd(&["SET", "w", "3"]).await, queued());
    assert_eq!(s.cmd(&["EXEC"]).await, F::Nil);
    assert_eq!(cmd::<String>(&mut a, &["GET", "w"]).await.unwrap(), "2");
    // Untouched watch: EXEC runs.
    assert_eq!(s.cmd(&["WATCH", "w"]).await, ok());
    assert_eq!(s.cmd(&["MULTI"]).await, ok());
    assert_eq!(s.cmd(&["SET", "w", "4"]).await, queued());
    assert_eq!(s.cmd(&["EXEC"]).await, F::Arr(vec![ok()]));
}

#[tokio::test]
async fn watch_aborts_when_the_key_expires() {
    // The lease expires on a manual clock between WATCH and EXEC: on the
    // wall clock, a WATCH that a loaded machine sent after the lease's 50 ms
    // found the key already gone and watched nothing (as in Redis), and the
    // EXEC ran.
    let server = common::start_with_manual_clock().await;
    let mut c = Conn::open(server.addr()).await;
    assert_eq!(c.cmd(&["SET", "lease", "1", "PX", "50"]).await, ok());
    assert_eq!(c.cmd(&["WATCH", "lease"]).await, ok());
    server.clock().unwrap().advance(Duration::from_millis(100));
    assert_eq!(c.cmd(&["MULTI"]).await, ok());
    assert_eq!(c.cmd(&["SET", "lease", "2"]).await, queued());
    assert_eq!(c.cmd(&["EXEC"]).await, F::Nil);
}

#[tokio::test]
async fn exec_is_atomic_across_shards() {
    let server = start().await;
    let mut setup = connect(&server).await;
    // Keys in different hash slots, hence (very likely) different shards.
    let keys = ["alpha", "beta", "gamma", "delta"];
    for k in keys {
        cmd::<()>(&mut setup, &["SET", k, "0"]).await.unwrap();
    }
    let mut writers = Vec::new();
    for _ in 0..4 {
        let mut con = connect(&server).await;
        writers.push(tokio::spawn(async move {
            for _ in 0..200 {
                let mut pipe = redis::pipe();
                pipe.atomic();
                for k in keys {
                    pipe.incr(k, 1);
                }
                let _: Vec<i64> = pipe.query_async(&mut con).await.unwrap();
            }
        }));
    }
    let mut reader = connect(&server).await;
    let checker = tokio::spawn(async move {
        let mut reads = 0;
        loop {
            let vals: Vec<i64> = cmd(&mut reader, &["MGET", "alpha", "beta", "gamma", "delta"])
                .await
                .unwrap();
            assert!(
                vals.windows(2).all(|w| w[0] == w[1]),
                "torn transaction seen: {vals:?}"
            );
            reads += 1;
            if vals[0] == 800 {
                return reads;
            }
        }
    });
    for w in writers {
        w.await.unwrap();
    }
    assert!(checker.await.unwrap() > 0);
    let v: Value = cmd(&mut setup, &["GET", "delta"]).await.unwrap();
    assert_eq!(v, Value::BulkString(b"800".to_vec()));
    assert_eq!(err(&mut setup, &["EXEC"]).await, "ERR EXEC without MULTI");
}
