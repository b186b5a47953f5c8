//! rlockd as a fixture in a plain (synchronous) test: the server runs on a
//! runtime of its own, the test uses a blocking client, and CLIENT PAUSE's
//! effect on a lock holder is checked with the fault-injection API.
//!
//! `cargo run --example sync_test` exits 0 when every check holds.

use std::time::{Duration, Instant};

use redis::Commands;
use rlockd::Server;
use rlockd::server::PauseMode;

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder().port(0).manual_clock().start_blocking()?;
    let mut con = redis::Client::open(server.url())?.get_connection()?;

    // A redis-py style lock: SET NX PX with a token.
    let first: Option<String> = redis::cmd("SET")
        .arg("job-lock")
        .arg("token-1")
        .arg("NX")
        .arg("PX")
        .arg(10_000)
        .query(&mut con)?;
    assert_eq!(first.as_deref(), Some("OK"));
    let second: Option<String> = redis::cmd("SET")
        .arg("job-lock")
        .arg("token-2")
        .arg("NX")
        .arg("PX")
        .arg(10_000)
        .query(&mut con)?;
    assert_eq!(second, None, "held");
    assert_eq!(server.locks(None)[0].ttl, Some(Duration::from_secs(10)));

    // While writes are paused, renewing the lease waits for the pause.
    server.pause(Duration::from_millis(100), PauseMode::Write);
    let asked = Instant::now();
    let renewed: bool = con.pexpire("job-lock", 10_000)?;
    assert!(renewed && asked.elapsed() >= Duration::from_millis(90));

    // As in Redis, a key lives through its deadline's millisecond.
    server.clock()?.advance(Duration::from_millis(10_001));
    assert_eq!(
        con.get::<_, Option<String>>("job-lock")?,
        None,
        "lease ran out"
    );

    server.shutdown();
    println!("sync_test: ok");
    Ok(())
}
