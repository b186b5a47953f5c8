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
    server.clock().advance(Duration::from_millis(10_001));
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
