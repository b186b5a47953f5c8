//! Fault injection: CLIENT PAUSE's timing (the replies themselves are
//! compared with Redis in conformance/cases/connection.rcmd), and the Rust
//! API's pause, dropped connections and delayed replies.

mod common;

use std::time::{Duration, Instant};

use common::{cmd, connect, raw};
use rlockd::server::PauseMode;

async fn timed<T: redis::FromRedisValue>(
    con: &mut redis::aio::MultiplexedConnection,
    args: &[&str],
) -> (T, Duration) {
    let started = Instant::now();
    let v = cmd(con, args).await.unwrap();
    (v, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_pause_holds_back_writes_and_scripts_only() {
    let server = common::start().await;
    let mut admin = connect(&server).await;
    let mut c = connect(&server).await;
    cmd::<()>(&mut c, &["SET", "k", "before"]).await.unwrap();
    cmd::<()>(&mut admin, &["CLIENT", "PAUSE", "300", "WRITE"])
        .await
        .unwrap();
    let (v, took) = timed::<String>(&mut c, &["GET", "k"]).await;
    assert_eq!(
        (v.as_str(), took < Duration::from_millis(200)),
        ("before", true),
        "{took:?}"
    );
    let (_, took) = timed::<i64>(&mut c, &["EVAL_RO", "return 1", "0"]).await;
    assert!(
        took < Duration::from_millis(200),
        "EVAL_RO is a read: {took:?}"
    );
    let (_, took) = timed::<()>(&mut c, &["SET", "k", "during"]).await;
    assert!(took >= Duration::from_millis(200), "SET waited {took:?}");

    cmd::<()>(&mut admin, &["CLIENT", "PAUSE", "300", "WRITE"])
        .await
        .unwrap();
    for args in [&["EVAL", "return 1", "0"][..], &["PUBLISH", "ch", "m"]] {
        let started = Instant::now();
        cmd::<i64>(&mut c, args).await.unwrap();
        assert!(started.elapsed() >= Duration::from_millis(150), "{args:?}");
        cmd::<()>(&mut admin, &["CLIENT", "PAUSE", "300", "WRITE"])
            .await
            .unwrap();
    }
    cmd::<()>(&mut admin, &["CLIENT", "UNPAUSE"]).await.unwrap();
    let (_, took) = timed::<()>(&mut c, &["SET", "k", "after"]).await;
    assert!(
        took < Duration::from_millis(200),
        "UNPAUSE released writes: {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_pause_holds_everything_until_the_api_unpauses() {
    let server = common::start().await;
    let mut c = connect(&server).await;
    server.pause(Duration::from_secs(30), PauseMode::All);
    let ping = tokio::spawn(async move { timed::<String>(&mut c, &["PING"]).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!ping.is_finished(), "PING is held back");
    server.unpause();
    let (pong, took) = tokio::time::timeout(Duration::from_secs(5), ping)
        .await
        .expect("released")
        .unwrap();
    assert_eq!(pong, "PONG");
    assert!(took >= Duration::from_millis(200));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipeline_gets_the_replies_before_the_paused_command() {
    let server = common::start().await;
    server.pause(Duration::from_millis(400), PauseMode::Write);
    let started = Instant::now();
    // `raw` reads until the server has been quiet for 200 ms: the GET's
    // reply arrives at once, the SET's only after the pause.
    let early = raw(server.addr(), b"GET k\r\nSET k v\r\n").await;
    assert_eq!(early, b"$-1\r\n");
    assert!(started.elapsed() < Duration::from_millis(400));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_do_not_expire_while_paused() {
    let server = common::start().await;
    let mut c = connect(&server).await;
    cmd::<()>(&mut c, &["SET", "lease", "x", "PX", "50"])
        .await
        .unwrap();
    cmd::<()>(&mut c, &["SET", "other", "x", "PX", "50"])
        .await
        .unwrap();
    server.pause(Duration::from_secs(30), PauseMode::Write);
    tokio::time::sleep(Duration::from_millis(150)).await;
    // Past their deadline they read as gone, yet neither the expiry driver
    // nor the lookup reclaims them, as in Redis.
    assert_eq!(cmd::<i64>(&mut c, &["EXISTS", "lease"]).await.unwrap(), 0);
    assert_eq!(
        cmd::<Option<String>>(&mut c, &["GET", "lease"])
            .await
            .unwrap(),
        None
    );
    assert_eq!(cmd::<i64>(&mut c, &["DBSIZE"]).await.unwrap(), 2);
    server.unpause();
    // The driver reclaims both once the pause is over.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(cmd::<i64>(&mut c, &["DBSIZE"]).await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_connections_and_delayed_replies() {
    let server = common::start().await;
    let mut a = connect(&server).await;
    let mut b = redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    cmd::<()>(&mut b, &["PING"]).await.unwrap();
    assert_eq!(server.drop_connections(), 2);
    assert!(
        cmd::<String>(&mut a, &["PING"]).await.is_err(),
        "the connection is gone"
    );
    let mut again = connect(&server).await;
    assert_eq!(cmd::<String>(&mut again, &["PING"]).await.unwrap(), "PONG");

    server.delay_replies(Duration::from_millis(150));
    let (_, took) = timed::<String>(&mut again, &["PING"]).await;
    assert!(took >= Duration::from_millis(150), "{took:?}");
    server.delay_replies(Duration::ZERO);
    let (_, took) = timed::<String>(&mut again, &["PING"]).await;
    assert!(took < Duration::from_millis(100), "{took:?}");
}

/// A client held by CLIENT PAUSE counts as blocked, as in Redis 7.0 (INFO
/// `blocked_clients`, CLIENT LIST's `b` flag): tools wait on that figure.
#[tokio::test]
async fn paused_clients_count_as_blocked() {
    let server = common::start().await;
    let mut admin = connect(&server).await;
    let blocked = |info: String| {
        info.lines()
            .find_map(|l| l.strip_prefix("blocked_clients:"))
            .map(|n| n.trim().to_string())
            .unwrap()
    };
    cmd::<()>(&mut admin, &["CLIENT", "PAUSE", "5000", "WRITE"])
        .await
        .unwrap();
    let mut writer = connect(&server).await;
    let held = tokio::spawn(async move { cmd::<()>(&mut writer, &["SET", "k", "v"]).await });
    let started = std::time::Instant::now();
    while blocked(cmd(&mut admin, &["INFO", "clients"]).await.unwrap()) != "1" {
        assert!(started.elapsed() < Duration::from_secs(3), "never counted");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let list: String = cmd(&mut admin, &["CLIENT", "LIST"]).await.unwrap();
    assert_eq!(
        list.lines().filter(|l| l.contains(" flags=b ")).count(),
        1,
        "{list}"
    );
    cmd::<()>(&mut admin, &["CLIENT", "UNPAUSE"]).await.unwrap();
    held.await.unwrap().unwrap();
    assert_eq!(
        blocked(cmd(&mut admin, &["INFO", "clients"]).await.unwrap()),
        "0"
    );
}
