//! The embedding API from a plain `#[test]`: the server brings its own
//! runtime, and the test talks to it with a synchronous client.

use std::net::TcpStream;
use std::time::Duration;

use redis::Commands;
use rlockd::Server;

#[test]
fn a_sync_test_locks_moves_time_and_shuts_down() {
    let server = Server::builder()
        .port(0)
        .manual_clock()
        .start_blocking()
        .unwrap();
    assert!(server.url().starts_with("redis://127.0.0.1:"));
    let mut con = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg("lock")
        .arg("token")
        .arg("NX")
        .arg("PX")
        .arg(10_000)
        .query(&mut con)
        .unwrap();
    assert_eq!(server.locks(None).len(), 1);
    // As in Redis, the key lives through its deadline's millisecond.
    server
        .clock()
        .unwrap()
        .advance(Duration::from_millis(10_001));
    assert_eq!(con.get::<_, Option<String>>("lock").unwrap(), None);
    assert!(server.locks(None).is_empty());

    let addr = server.addr();
    server.shutdown();
    assert!(
        TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err(),
        "nothing listens after shutdown"
    );
}

#[test]
fn dropping_stops_the_server_and_servers_are_isolated() {
    let a = Server::builder().port(0).start_blocking().unwrap();
    let b = Server::builder().port(0).start_blocking().unwrap();
    let mut ca = redis::Client::open(a.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let mut cb = redis::Client::open(b.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let _: () = ca.set("k", "a").unwrap();
    assert_eq!(cb.get::<_, Option<String>>("k").unwrap(), None);
    let addr = a.addr();
    drop(a);
    assert!(TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err());
    assert_eq!(cb.set::<_, _, String>("k", "b").unwrap(), "OK");
}

#[tokio::test]
async fn works_inside_an_async_test_too() {
    let server = Server::builder().port(0).start_blocking().unwrap();
    let mut con = redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let pong: String = redis::cmd("PING").query_async(&mut con).await.unwrap();
    assert_eq!(pong, "PONG");
    let addr = server.addr();
    drop(server);
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

/// A blocking client inside `#[tokio::test]` (one runtime thread) blocks
/// that thread: a server started with `start()` on it could never answer,
/// while one from `start_blocking()` runs on threads of its own. The read
/// timeout turns a regression into a failure rather than a hung test.
#[tokio::test]
async fn a_blocking_client_in_an_async_test_is_answered() {
    let server = Server::builder()
        .port(0)
        .manual_clock()
        .start_blocking()
        .unwrap();
    let mut con = redis::Client::open(server.url())
        .unwrap()
        .get_connection_with_timeout(Duration::from_secs(5))
        .unwrap();
    con.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let taken: Option<String> = redis::cmd("SET")
        .arg("lock")
        .arg("token")
        .arg("NX")
        .arg("PX")
        .arg(1_000)
        .query(&mut con)
        .unwrap();
    assert_eq!(taken.as_deref(), Some("OK"));
    server
        .clock()
        .unwrap()
        .advance(Duration::from_millis(1_001));
    assert_eq!(con.get::<_, Option<String>>("lock").unwrap(), None);
}

#[tokio::test]
async fn clock_is_an_error_without_a_manual_clock() {
    let server = Server::builder().port(0).start_blocking().unwrap();
    let err = server.clock().err().unwrap();
    assert_eq!(
        err.to_string(),
        "the server was not built with Server::builder().manual_clock()"
    );
}
