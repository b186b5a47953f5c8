//! Fault injection: CLIENT PAUSE's timing (the replies themselves are
//! compared with Redis in conformance/cases/connection.rcmd), and the Rust
//! API's pause, dropped connections and delayed replies.

mod common;

use std::time::{Duration, Instant};

use common::resp::{Conn, F};
use common::{cmd, connect};
use rlockd::server::PauseMode;
use tokio::io::AsyncWriteExt;

async fn timed<T: redis::FromRedisValue>(
    con: &mut redis::aio::MultiplexedConnection,
    args: &[&str],
) -> (T, Duration) {
    let started = Instant::now();
    let v = cmd(con, args).await.unwrap();
    (v, started.elapsed())
}

/// Far longer than any round trip takes on a loaded machine, and shorter
/// than `LONG_PAUSE`: a command answered within it was not held back.
const NOT_HELD: Duration = common::WAIT;

/// A pause that only CLIENT UNPAUSE (or the API's) ends within a test.
const LONG_PAUSE: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_pause_holds_back_writes_and_scripts_only() {
    let server = common::start().await;
    let mut admin = connect(&server).await;
    let mut c = connect(&server).await;
    cmd::<()>(&mut c, &["SET", "k", "before"]).await.unwrap();
    let long = LONG_PAUSE.as_millis().to_string();
    cmd::<()>(&mut admin, &["CLIENT", "PAUSE", &long, "WRITE"])
        .await
        .unwrap();
    let (v, took) = timed::<String>(&mut c, &["GET", "k"]).await;
    assert_eq!((v.as_str(), took < NOT_HELD), ("before", true), "{took:?}");
    let (_, took) = timed::<i64>(&mut c, &["EVAL_RO", "return 1", "0"]).await;
    assert!(took < NOT_HELD, "EVAL_RO is a read: {took:?}");
    cmd::<()>(&mut admin, &["CLIENT", "UNPAUSE"]).await.unwrap();

    // Each write waits out a pause of its own (a shorter pause would not
    // shorten one in force, as in Redis).
    for args in [
        &["SET", "k", "during"][..],
        &["EVAL", "return 1", "0"],
        &["PUBLISH", "ch", "m"],
    ] {
        let asked = Instant::now();
        cmd::<()>(&mut admin, &["CLIENT", "PAUSE", "300", "WRITE"])
            .await
            .unwrap();
        cmd::<redis::Value>(&mut c, args).await.unwrap();
        // The pause began after `asked`, so ends 300 ms after it at the
        // earliest, however slow the round trips.
        let waited = asked.elapsed();
        assert!(
            waited >= Duration::from_millis(300),
            "{args:?} answered after {waited:?}"
        );
    }

    // UNPAUSE releases a write the pause holds.
    cmd::<()>(&mut admin, &["CLIENT", "PAUSE", &long, "WRITE"])
        .await
        .unwrap();
    let mut writer = connect(&server).await;
    let held = tokio::spawn(async move { timed::<()>(&mut writer, &["SET", "k", "after"]).await });
    common::until_blocked(&mut admin, 1).await;
    cmd::<()>(&mut admin, &["CLIENT", "UNPAUSE"]).await.unwrap();
    let (_, took) = held.await.unwrap();
    assert!(took < NOT_HELD, "UNPAUSE released writes: {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_pause_holds_everything_until_the_api_unpauses() {
    let server = common::start().await;
    let mut c = connect(&server).await;
    server.pause(LONG_PAUSE, PauseMode::All);
    // When the PING is answered: the task may start late on a loaded
    // machine, so what it measures itself proves nothing.
    let ping = tokio::spawn(async move {
        let pong = cmd::<String>(&mut c, &["PING"]).await.unwrap();
        (pong, Instant::now())
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!ping.is_finished(), "PING is held back");
    let unpaused = Instant::now();
    server.unpause();
    let (pong, answered) = tokio::time::timeout(NOT_HELD, ping)
        .await
        .expect("released")
        .unwrap();
    assert_eq!(pong, "PONG");
    assert!(answered >= unpaused, "answered before the unpause");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipeline_gets_the_replies_before_the_paused_command() {
    let server = common::start().await;
    server.pause(LONG_PAUSE, PauseMode::Write);
    let mut c = Conn::open(server.addr()).await;
    c.s.write_all(b"GET k\r\nSET k v\r\n").await.unwrap();
    // The GET's reply comes long before the pause ends, the SET's only
    // after it.
    assert_eq!(c.read_within(NOT_HELD).await, Some(F::Nil));
    c.quiet().await;
    server.unpause();
    assert_eq!(c.read().await, F::Simple("OK".into()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_do_not_expire_while_paused() {
    // The keys' deadline passes on a manual clock once the pause is on,
    // however long the commands before it take.
    let server = common::start_with_manual_clock().await;
    let mut c = connect(&server).await;
    cmd::<()>(&mut c, &["SET", "lease", "x", "PX", "50"])
        .await
        .unwrap();
    cmd::<()>(&mut c, &["SET", "other", "x", "PX", "50"])
        .await
        .unwrap();
    server.pause(LONG_PAUSE, PauseMode::Write);
    server.clock().unwrap().advance(Duration::from_millis(51));
    // Time for the expiry driver to run, were it not held.
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
    let unpaused = Instant::now();
    while cmd::<i64>(&mut c, &["DBSIZE"]).await.unwrap() != 0 {
        assert!(unpaused.elapsed() < common::WAIT, "never reclaimed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
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

    // A delay well above a loaded machine's round trip tells the two apart.
    let delay = Duration::from_millis(600);
    server.delay_replies(delay);
    let (_, took) = timed::<String>(&mut again, &["PING"]).await;
    assert!(took >= delay, "{took:?}");
    server.delay_replies(Duration::ZERO);
    let (_, took) = timed::<String>(&mut again, &["PING"]).await;
    assert!(took < delay, "{took:?}");
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
    let long = LONG_PAUSE.as_millis().to_string();
    cmd::<()>(&mut admin, &["CLIENT", "PAUSE", &long, "WRITE"])
        .await
        .unwrap();
    let mut writer = connect(&server).await;
    let held = tokio::spawn(async move { cmd::<()>(&mut writer, &["SET", "k", "v"]).await });
    let started = std::time::Instant::now();
    while blocked(cmd(&mut admin, &["INFO", "clients"]).await.unwrap()) != "1" {
        assert!(started.elapsed() < common::WAIT, "never counted");
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
