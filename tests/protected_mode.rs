//! Protected mode, differentially: a client connecting from 127.0.0.2 (a
//! loopback address, yet not 127.0.0.1) to a server listening on 127.0.0.1
//! is what Redis treats as an outside client.

mod common;
mod refserver;

use std::io::{Read, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use refserver::{RedisServer, Rlockd, Setup};
use tokio::io::AsyncWriteExt;

/// Sends `request` (one command) from source address 127.0.0.2 and reads
/// its reply.
async fn ask_from_outside(server: SocketAddr, request: &[u8]) -> String {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(([127, 0, 0, 2], 0).into()).unwrap();
    let mut s = socket.connect(server).await.unwrap();
    s.write_all(request).await.unwrap();
    String::from_utf8_lossy(&common::read_replies(&mut s, 1).await).into_owned()
}

fn ask(server: SocketAddr, request: &[u8]) -> String {
    let mut s = TcpStream::connect(server).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(request).unwrap();
    let mut buf = [0u8; 256];
    let n = s.read(&mut buf).unwrap();
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[tokio::test]
async fn outside_clients_are_denied_as_redis_denies_them() {
    let Some(bin) = refserver::redis_server_path("protected_mode") else {
        return;
    };
    let redis = RedisServer::start(&bin);
    let theirs: SocketAddr = ([127, 0, 0, 1], redis.port()).into();
    let server = rlockd::Server::builder().port(0).start_blocking().unwrap();
    let ours = server.addr();

    let denied = ask_from_outside(theirs, b"PING\r\n").await;
    assert!(
        denied.starts_with("-DENIED Redis is running in protected mode"),
        "{denied}"
    );
    assert_eq!(ask_from_outside(ours, b"PING\r\n").await, denied);

    for addr in [theirs, ours] {
        assert_eq!(
            ask(addr, b"CONFIG GET protected-mode\r\n"),
            "*2\r\n$14\r\nprotected-mode\r\n$3\r\nyes\r\n"
        );
        assert_eq!(ask(addr, b"CONFIG SET protected-mode no\r\n"), "+OK\r\n");
    }
    assert_eq!(ask_from_outside(ours, b"PING\r\n").await, "+PONG\r\n");
    assert_eq!(ask_from_outside(theirs, b"PING\r\n").await, "+PONG\r\n");

    // A password lifts protected mode: the client is asked to authenticate.
    for addr in [theirs, ours] {
        assert_eq!(ask(addr, b"CONFIG SET protected-mode yes\r\n"), "+OK\r\n");
        assert_eq!(ask(addr, b"CONFIG SET requirepass pw\r\n"), "+OK\r\n");
    }
    let noauth = ask_from_outside(theirs, b"PING\r\n").await;
    assert_eq!(ask_from_outside(ours, b"PING\r\n").await, noauth);
    assert!(noauth.starts_with("-NOAUTH"), "{noauth}");
}

/// `enable-protected-configs local`: CONFIG SET of `dir` is open to
/// loopback clients only, as in Redis: the one from 127.0.0.2 is refused
/// with Redis's error (protected mode off, so it is served at all).
#[tokio::test]
async fn protected_configs_local_admits_local_clients_only() {
    let Some(bin) = refserver::redis_server_path("protected_configs_local") else {
        return;
    };
    let setup = Setup {
        protected_configs: Some("local"),
        ..Setup::default()
    };
    let redis = RedisServer::start_setup(&bin, setup);
    let ours = Rlockd::start_setup(setup);
    let dir = std::env::temp_dir();
    let set_dir = format!("CONFIG SET dir {}\r\n", dir.display());
    for addr in [redis.addr, ours.addr] {
        assert_eq!(ask(addr, b"CONFIG SET protected-mode no\r\n"), "+OK\r\n");
        assert_eq!(
            ask_from_outside(addr, set_dir.as_bytes()).await,
            "-ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected config\r\n",
            "{addr}"
        );
        assert_eq!(ask(addr, set_dir.as_bytes()), "+OK\r\n", "{addr}");
    }
}
