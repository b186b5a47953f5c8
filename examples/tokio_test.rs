//! rlockd as a fixture in an async (tokio) test: a Redisson-style lease
//! lock taken with the real Lua script, its lease run out with the manual
//! clock instead of sleeping, and the lock and its waiter inspected.
//!
//! `cargo run --example tokio_test` exits 0 when every check holds.

use std::time::Duration;

use rlockd::Server;

/// Redisson's tryLock script: take or re-enter the lock, else answer its PTTL.
const LOCK: &str = "if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then \
redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; \
return redis.call('pttl', KEYS[1]);";

#[tokio::main(flavor = "current_thread")]
pub async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder().port(0).manual_clock().start().await?;
    let client = redis::Client::open(server.url())?;
    let mut con = client.get_multiplexed_async_connection().await?;
    let try_lock = |owner: &str| {
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(LOCK)
            .arg(1)
            .arg("{order:42}")
            .arg(30_000)
            .arg(owner);
        cmd
    };

    let taken: Option<i64> = try_lock("client-a:1").query_async(&mut con).await?;
    assert_eq!(taken, None, "client a takes the lock");
    let mut waiter = client.get_async_pubsub().await?;
    waiter
        .subscribe("redisson_lock__channel:{order:42}")
        .await?;
    let refused: Option<i64> = try_lock("client-b:1").query_async(&mut con).await?;
    assert_eq!(refused, Some(30_000), "client b is told how long to wait");

    let locks = server.locks(Some("{order:*"));
    assert_eq!(&locks[0].owners[0].owner[..], b"client-a:1");
    assert_eq!(
        server.waiters(Some("redisson_lock__channel:*"))[0]
            .clients
            .len(),
        1
    );

    // Client a "crashes": its lease runs out 30 s later, with no sleeping
    // (as in Redis, the key lives through its deadline's millisecond).
    server.clock()?.advance(Duration::from_millis(30_001));
    let taken: Option<i64> = try_lock("client-b:1").query_async(&mut con).await?;
    assert_eq!(taken, None, "client b takes the expired lock");

    server.shutdown().await;
    println!("tokio_test: ok");
    Ok(())
}
