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

    server
        .clock()
        .unwrap()
        .advance(Duration::from_millis(29_999));
    assert_eq!(cmd::<i64>(&mut c, &["PTTL", "lease"]).await.unwrap(), 1);
    server.clock().unwrap().advance(Duration::from_millis(1));
    // As in Redis, a key lives through its deadline's millisecond.
    assert_eq!(cmd::<i64>(&mut c, &["PTTL", "lease"]).await.unwrap(), 0);
    server.clock().unwrap().advance(Duration::from_millis(1));
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
    server.clock().unwrap().set(noon);
    assert_eq!(server.clock().unwrap().now(), noon);
    let (secs, _): (String, String) = cmd(&mut c, &["TIME"]).await.unwrap();
    assert_eq!(secs, "4102444800");
    cmd::<()>(&mut c, &["SET", "k", "v", "EXAT", "4102444810"])
        .await
        .unwrap();
    assert_eq!(cmd::<i64>(&mut c, &["TTL", "k"]).await.unwrap(), 10);
    server.clock().unwrap().set(noon + Duration::from_secs(11));
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
    server.clock().unwrap().advance(Duration::from_secs(7));
    let list: String = cmd(&mut asking, &["CLIENT", "LIST"]).await.unwrap();
    assert_eq!(idle(&list, "quiet"), 7);
    assert_eq!(idle(&list, ""), 0, "the asking client has just spoken");
    cmd::<()>(&mut quiet, &["PING"]).await.unwrap();
    server.clock().unwrap().advance(Duration::from_secs(2));
    let list: String = cmd(&mut asking, &["CLIENT", "LIST"]).await.unwrap();
    assert_eq!(idle(&list, "quiet"), 2);
}

/// Each key keeps when it was last used, as Redis's objects do: reads and
/// writes of it (TOUCH included) start its idle time again; OBJECT, TYPE,
/// TTL and EXISTS leave it; a lock resting packed keeps its clock too.
/// Under an LFU policy the same clock counts uses and decays by minute.
#[tokio::test]
async fn object_idletime_and_freq_follow_the_clock() {
    let config = rlockd::Config {
        enable_debug_command: rlockd::DebugCommand::Yes,
        ..rlockd::Config::default()
    };
    let server = Server::builder()
        .config(config)
        .port(0)
        .manual_clock()
        .start()
        .await
        .unwrap();
    let mut c = connect(&server).await;
    let reader = c.clone();
    let idle = |key: &'static str| {
        let mut c = reader.clone();
        async move {
            cmd::<i64>(&mut c, &["OBJECT", "IDLETIME", key])
                .await
                .unwrap()
        }
    };
    cmd::<()>(&mut c, &["SET", "s", "v"]).await.unwrap();
    cmd::<()>(&mut c, &["HSET", "lock", "owner:1", "1"])
        .await
        .unwrap();
    // Another key changed, so the lock's node rests packed.
    cmd::<()>(&mut c, &["SET", "other", "v"]).await.unwrap();
    server.clock().unwrap().advance(Duration::from_secs(5));
    assert_eq!(idle("s").await, 5);
    assert_eq!(idle("lock").await, 5);
    for look in [&["TYPE", "s"][..], &["TTL", "s"], &["EXISTS", "s"]] {
        cmd::<redis::Value>(&mut c, look).await.unwrap();
    }
    assert_eq!(idle("s").await, 5, "looked at, not used");
    cmd::<String>(&mut c, &["GET", "s"]).await.unwrap();
    assert_eq!(idle("s").await, 0);
    server.clock().unwrap().advance(Duration::from_secs(3));
    cmd::<i64>(&mut c, &["TOUCH", "lock"]).await.unwrap();
    assert_eq!(idle("lock").await, 0);
    assert_eq!(idle("s").await, 3);
    let debug: String = cmd(&mut c, &["DEBUG", "OBJECT", "s"]).await.unwrap();
    assert!(debug.contains(" lru_seconds_idle:3"), "{debug}");
    // RESTORE's IDLETIME sets the clock; a use ends it.
    let payload: Vec<u8> = cmd(&mut c, &["DUMP", "s"]).await.unwrap();
    redis::cmd("RESTORE")
        .arg("r")
        .arg(0)
        .arg(payload)
        .arg("IDLETIME")
        .arg(1000)
        .query_async::<()>(&mut c)
        .await
        .unwrap();
    assert_eq!(idle("r").await, 1000);
    server.clock().unwrap().advance(Duration::from_secs(2));
    assert_eq!(idle("r").await, 1002);

    cmd::<()>(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"],
    )
    .await
    .unwrap();
    cmd::<()>(&mut c, &["SET", "f", "v"]).await.unwrap();
    let freq = |c: &mut redis::aio::MultiplexedConnection| {
        let mut c = c.clone();
        async move { cmd::<i64>(&mut c, &["OBJECT", "FREQ", "f"]).await.unwrap() }
    };
    assert_eq!(freq(&mut c).await, 5, "a new key's counter");
    for _ in 0..200 {
        cmd::<String>(&mut c, &["GET", "f"]).await.unwrap();
    }
    let used = freq(&mut c).await;
    assert!(used > 5, "uses count: {used}");
    server.clock().unwrap().advance(Duration::from_secs(3 * 60));
    assert_eq!(freq(&mut c).await, used - 3, "a step a minute");
    // Overwriting a key keeps its count under LFU, as Redis does, and so
    // does moving it.
    cmd::<()>(&mut c, &["SET", "f", "w"]).await.unwrap();
    let kept = freq(&mut c).await;
    assert!(kept >= used - 3);
    cmd::<()>(&mut c, &["RENAME", "f", "g"]).await.unwrap();
    cmd::<()>(&mut c, &["RENAME", "g", "f"]).await.unwrap();
    assert!(freq(&mut c).await >= kept, "renamed with its count");
}
