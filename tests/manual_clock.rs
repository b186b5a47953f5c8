//! The manual clock: time passes only when the test says so, and passing
//! time expires keys and raises their events at once — no sleeping.

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{cmd, connect};
use futures_util::StreamExt;
use rlockd::{Server, ServerHandle};

/// A server on a free port whose clock moves only when told.
async fn start() -> ServerHandle {
    Server::builder()
        .port(0)
        .manual_clock()
        .start()
        .await
        .unwrap()
}

#[tokio::test]
async fn leases_expire_when_the_test_moves_time() {
    let server = start().await;
    let mut c = connect(&server).await;
    cmd::<()>(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "Ex"])
        .await
        .unwrap();
    let mut events = redis::Client::open(server.url())
        .unwrap()
        .get_async_pubsub()
        .await
        .unwrap();
    events.subscribe("__keyevent@0__:expired").await.unwrap();

    cmd::<()>(&mut c, &["SET", "lease", "owner", "PX", "30000"])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        cmd::<i64>(&mut c, &["PTTL", "lease"]).await.unwrap(),
        30000,
        "time stands still"
    );

    server.clock().advance(Duration::from_millis(29_999));
    assert_eq!(cmd::<i64>(&mut c, &["PTTL", "lease"]).await.unwrap(), 1);
    server.clock().advance(Duration::from_millis(1));
    // As in Redis, a key lives through its deadline's millisecond.
    assert_eq!(cmd::<i64>(&mut c, &["PTTL", "lease"]).await.unwrap(), 0);
    server.clock().advance(Duration::from_millis(1));
    assert_eq!(
        cmd::<Option<String>>(&mut c, &["GET", "lease"])
            .await
            .unwrap(),
        None
    );
    // The advance itself reclaimed the key: DBSIZE counts stored keys.
    assert_eq!(cmd::<i64>(&mut c, &["DBSIZE"]).await.unwrap(), 0);
    let msg = tokio::time::timeout(Duration::from_secs(5), events.on_message().next())
        .await
        .expect("expired event")
        .unwrap();
    assert_eq!(msg.get_payload::<String>().unwrap(), "lease");
}

#[tokio::test]
async fn set_moves_the_clock_anywhere() {
    let server = start().await;
    let mut c = connect(&server).await;
    let noon = UNIX_EPOCH + Duration::from_secs(4_102_444_800);
    server.clock().set(noon);
    assert_eq!(server.clock().now(), noon);
    let (secs, _): (String, String) = cmd(&mut c, &["TIME"]).await.unwrap();
    assert_eq!(secs, "4102444800");
    cmd::<()>(&mut c, &["SET", "k", "v", "EXAT", "4102444810"])
        .await
        .unwrap();
    assert_eq!(cmd::<i64>(&mut c, &["TTL", "k"]).await.unwrap(), 10);
    server.clock().set(noon + Duration::from_secs(11));
    assert_eq!(cmd::<i64>(&mut c, &["EXISTS", "k"]).await.unwrap(), 0);
    assert!(SystemTime::now() < noon, "real time did not move");
}

/// CLIENT LIST's `idle` counts from a client's last request, on the
/// server's clock: the one that keeps asking stays at 0.
#[tokio::test]
async fn client_list_idle_counts_from_the_last_request() {
    let server = start().await;
    let mut quiet = connect(&server).await;
    cmd::<()>(&mut quiet, &["CLIENT", "SETNAME", "quiet"])
        .await
        .unwrap();
    let mut asking = connect(&server).await;
    let idle = |list: &str, name: &str| -> u64 {
        let line = list
            .lines()
            .find(|l| l.contains(&format!(" name={name} ")))
            .expect("the client is listed");
        let field = line
            .split(' ')
            .find_map(|f| f.strip_prefix("idle="))
            .expect("an idle field");
        field.parse().unwrap()
    };
    server.clock().advance(Duration::from_secs(7));
    let list: String = cmd(&mut asking, &["CLIENT", "LIST"]).await.unwrap();
    assert_eq!(idle(&list, "quiet"), 7);
    assert_eq!(idle(&list, ""), 0, "the asking client has just spoken");
    cmd::<()>(&mut quiet, &["PING"]).await.unwrap();
    server.clock().advance(Duration::from_secs(2));
    let list: String = cmd(&mut asking, &["CLIENT", "LIST"]).await.unwrap();
    assert_eq!(idle(&list, "quiet"), 2);
}
