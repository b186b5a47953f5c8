//! Shared test helpers: a real rlockd on an ephemeral port, real clients.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use rlockd::{Server, ServerHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub async fn start() -> ServerHandle {
    Server::builder()
        .port(0)
        .start()
        .await
        .expect("server starts")
}

pub async fn connect(server: &ServerHandle) -> MultiplexedConnection {
    connect_url(server.url()).await
}

/// Like `connect`, for tasks that cannot borrow the server.
pub async fn connect_url(url: String) -> MultiplexedConnection {
    // No response timeout: a debug build runs long scripts slowly.
    let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .expect("client connects")
}

pub async fn cmd<T: redis::FromRedisValue>(
    con: &mut MultiplexedConnection,
    args: &[&str],
) -> redis::RedisResult<T> {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query_async(con).await
}

/// The error text a command gets, for asserting Redis's exact wording.
pub async fn err(con: &mut MultiplexedConnection, args: &[&str]) -> String {
    match cmd::<redis::Value>(con, args).await {
        Ok(v) => panic!("{args:?} should fail, got {v:?}"),
        Err(e) => {
            let code = e.code().unwrap_or("");
            let detail = e.detail().unwrap_or("");
            format!("{code} {detail}").trim().to_string()
        }
    }
}

/// Sends raw bytes and collects what comes back until the server has
/// been quiet for a moment or closes.
pub async fn raw(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(bytes).await.unwrap();
    read_quiet(&mut s).await
}

pub async fn read_quiet(s: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match tokio::time::timeout(Duration::from_millis(200), s.read(&mut buf)).await {
            Ok(Ok(0)) | Err(_) | Ok(Err(_)) => return out,
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
        }
    }
}
