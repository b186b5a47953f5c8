//! MIGRATE between two rlockd servers over real sockets: keys moved or
//! copied with their time to live, REPLACE, the KEYS form, AUTH/AUTH2,
//! the target's refusals and unreachable targets, in Redis 7.0's words.
//! rlockd's DUMP payload is Redis's, so a redis-server target takes it
//! (checked against a real one when it is installed; every type, both
//! ways, in tests/dump_payloads.rs). The error cases that need no target
//! are in conformance/cases/keys.rcmd.

mod common;
mod refserver;

use common::{cmd, connect, err};
use redis::Value;
use redis::aio::MultiplexedConnection;
use rlockd::{Server, ServerHandle};

async fn start_with_password(password: Option<&str>) -> ServerHandle {
    let builder = Server::builder().port(0);
    let builder = match password {
        Some(p) => builder.requirepass(p),
        None => builder,
    };
    builder.start().await.expect("server starts")
}

async fn line<T: redis::FromRedisValue>(c: &mut MultiplexedConnection, text: &str) -> T {
    cmd(c, &text.split(' ').collect::<Vec<_>>()).await.unwrap()
}

/// A source and a target (kept alive by the first item), the target's
/// port, and a connection to each.
async fn two_servers() -> (
    [ServerHandle; 2],
    u16,
    MultiplexedConnection,
    MultiplexedConnection,
) {
    let source = start_with_password(None).await;
    let target = start_with_password(None).await;
    let (s, t) = (connect(&source).await, connect(&target).await);
    let port = target.addr().port();
    ([source, target], port, s, t)
}

/// `MIGRATE 127.0.0.1 <port> …` with the target's port filled in.
fn migrate(port: u16, rest: &str) -> Vec<String> {
    let mut words = vec!["MIGRATE".to_string(), "127.0.0.1".into(), port.to_string()];
    words.extend(rest.split(' ').map(|w| w.replace("''", "")));
    words
}

async fn run(c: &mut MultiplexedConnection, words: &[String]) -> redis::RedisResult<Value> {
    cmd(c, &words.iter().map(String::as_str).collect::<Vec<_>>()).await
}

async fn run_err(c: &mut MultiplexedConnection, words: &[String]) -> String {
    err(c, &words.iter().map(String::as_str).collect::<Vec<_>>()).await
}

// MIGRATE waits for the target on its own thread: a runtime of several.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_move_with_their_ttl_and_copies_stay() {
    let (_servers, port, mut s, mut t) = two_servers().await;
    let _: () = line(&mut s, "SET k v PX 50000").await;
    let _: () = line(&mut s, "RPUSH l a b c").await;
    assert_eq!(
        run(&mut s, &migrate(port, "k 0 1000")).await.unwrap(),
        Value::Okay
    );
    assert_eq!(line::<i64>(&mut s, "EXISTS k").await, 0, "moved away");
    assert_eq!(line::<String>(&mut t, "GET k").await, "v");
    let pttl: i64 = line(&mut t, "PTTL k").await;
    assert!((40_000..=50_000).contains(&pttl), "{pttl}");
    // COPY keeps the source's key; into another database.
    let copied = run(&mut s, &migrate(port, "l 5 1000 COPY")).await.unwrap();
    assert_eq!(copied, Value::Okay);
    assert_eq!(line::<i64>(&mut s, "LLEN l").await, 3);
    let _: () = line(&mut t, "SELECT 5").await;
    assert_eq!(
        line::<Vec<String>>(&mut t, "LRANGE l 0 -1").await,
        ["a", "b", "c"]
    );
    assert_eq!(line::<i64>(&mut t, "TTL l").await, -1);
    // A key the target has: refused unless REPLACE.
    let busy = run_err(&mut s, &migrate(port, "l 5 1000")).await;
    assert_eq!(
        busy,
        "ERR Target instance replied with error: BUSYKEY Target key name already exists."
    );
    assert_eq!(line::<i64>(&mut s, "EXISTS l").await, 1, "kept on refusal");
    let _: () = line(&mut s, "RPUSH l d").await;
    let replaced = run(&mut s, &migrate(port, "l 5 1000 REPLACE"))
        .await
        .unwrap();
    assert_eq!(replaced, Value::Okay);
    assert_eq!(line::<i64>(&mut t, "LLEN l").await, 4);
    assert_eq!(line::<i64>(&mut s, "EXISTS l").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_keys_form_moves_what_exists_and_reports_the_first_refusal() {
    let (_servers, port, mut s, mut t) = two_servers().await;
    let _: () = line(&mut s, "MSET a 1 b 2 c 3").await;
    let _: () = line(&mut t, "SET b theirs").await;
    let reply = run_err(&mut s, &migrate(port, "'' 0 1000 KEYS a nokey b c")).await;
    assert_eq!(
        reply,
        "ERR Target instance replied with error: BUSYKEY Target key name already exists."
    );
    // The keys the target took are gone here; the refused one stays.
    assert_eq!(line::<i64>(&mut s, "EXISTS a b c").await, 1);
    assert_eq!(line::<String>(&mut s, "GET b").await, "2");
    assert_eq!(
        line::<Vec<String>>(&mut t, "MGET a b c").await,
        ["1", "theirs", "3"]
    );
    let nokey = run(&mut s, &migrate(port, "'' 0 1000 KEYS x y"))
        .await
        .unwrap();
    assert_eq!(nokey, Value::SimpleString("NOKEY".into()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_and_auth2_reach_a_protected_target() {
    let source = start_with_password(None).await;
    let target = start_with_password(Some("sesame")).await;
    let port = target.addr().port();
    let mut s = connect(&source).await;
    let _: () = line(&mut s, "MSET a 1 b 2 c 3").await;
    let refused = run_err(&mut s, &migrate(port, "a 0 1000")).await;
    assert_eq!(
        refused,
        "ERR Target instance replied with error: NOAUTH Authentication required."
    );
    let wrong = run_err(&mut s, &migrate(port, "a 0 1000 AUTH nope")).await;
    assert!(
        wrong.starts_with("ERR Target instance replied with error: WRONGPASS"),
        "{wrong}"
    );
    assert_eq!(line::<i64>(&mut s, "EXISTS a").await, 1);
    let ok = run(&mut s, &migrate(port, "a 0 1000 AUTH sesame")).await;
    assert_eq!(ok.unwrap(), Value::Okay);
    let ok = run(
        &mut s,
        &migrate(port, "'' 0 1000 AUTH2 default sesame KEYS b c"),
    )
    .await;
    assert_eq!(ok.unwrap(), Value::Okay);
    assert_eq!(line::<i64>(&mut s, "EXISTS a b c").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_target_is_an_ioerr_and_nothing_moves() {
    let source = start_with_password(None).await;
    let mut s = connect(&source).await;
    let _: () = line(&mut s, "SET a 1").await;
    // A port nobody listens on: refused, which Redis learns as it writes.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    assert_eq!(
        run_err(&mut s, &migrate(port, "a 0 1000")).await,
        "IOERR error or timeout writing to target instance"
    );
    // A target that never answers: the timeout ends the wait.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let started = std::time::Instant::now();
    assert_eq!(
        run_err(&mut s, &migrate(port, "a 0 200")).await,
        "IOERR error or timeout reading to target instance"
    );
    assert!(started.elapsed() >= std::time::Duration::from_millis(200));
    assert_eq!(line::<i64>(&mut s, "EXISTS a").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_server_target_takes_rlockd_payloads() {
    let Some(bin) = refserver::redis_server_path("migrate_to_redis") else {
        return;
    };
    let redis = refserver::RedisServer::start(&bin);
    let source = start_with_password(None).await;
    let mut s = connect(&source).await;
    let _: () = line(&mut s, "SET a 1").await;
    let _: () = line(&mut s, "SET b 2").await;
    assert_eq!(
        run(&mut s, &migrate(redis.addr.port(), "a 0 1000")).await,
        Ok(Value::Okay)
    );
    assert_eq!(line::<i64>(&mut s, "EXISTS a").await, 0);
    let mut r = common::connect_url(format!("redis://{}", redis.addr)).await;
    assert_eq!(line::<String>(&mut r, "GET a").await, "1");
    // An existing key on the target is Redis's own refusal, passed on
    // as redis-server passes it on.
    let _: () = line(&mut r, "SET b x").await;
    assert_eq!(
        run_err(&mut s, &migrate(redis.addr.port(), "b 0 1000")).await,
        "ERR Target instance replied with error: BUSYKEY Target key name already exists."
    );
}
