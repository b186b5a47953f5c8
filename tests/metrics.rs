//! The Prometheus endpoint, scraped over a real socket while real clients
//! change what it reports.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{cmd, connect};
use rlockd::{Server, ServerHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn http_get(addr: SocketAddr, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut page = String::new();
    s.read_to_string(&mut page).await.unwrap();
    let (head, body) = page.split_once("\r\n\r\n").expect("a head and a body");
    (head.to_string(), body.to_string())
}

/// The value of one sample (`name{labels}`), if present.
fn sample(body: &str, series: &str) -> Option<u64> {
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

async fn scrape(server: &ServerHandle) -> String {
    let (head, body) = http_get(server.metrics_addr().unwrap(), "/metrics").await;
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(head.contains("Content-Type: text/plain; version=0.0.4"));
    assert!(head.contains(&format!("Content-Length: {}", body.len())));
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scraped_values_follow_the_server() {
    let server = Server::builder()
        .port(0)
        .metrics_port(0)
        .start()
        .await
        .unwrap();
    let before = scrape(&server).await;
    assert_eq!(sample(&before, "rlockd_connected_clients"), Some(0));
    assert_eq!(sample(&before, "rlockd_held_locks"), Some(0));
    assert_eq!(sample(&before, "rlockd_keys{db=\"0\"}"), None);
    assert_eq!(sample(&before, "rlockd_script_runs_total"), Some(0));
    assert!(before.contains("# TYPE rlockd_commands_processed_total counter\n"));

    let mut c = connect(&server).await;
    let mut sub = redis::Client::open(server.url())
        .unwrap()
        .get_async_pubsub()
        .await
        .unwrap();
    sub.subscribe("redisson_lock__channel:{a}").await.unwrap();
    sub.psubscribe("__keyevent@*").await.unwrap();
    cmd::<()>(&mut c, &["SET", "k", "v"]).await.unwrap();
    cmd::<()>(&mut c, &["SET", "k2", "v"]).await.unwrap();
    cmd::<()>(&mut c, &["SELECT", "3"]).await.unwrap();
    cmd::<()>(&mut c, &["HSET", "{a}", "c1:1", "1"])
        .await
        .unwrap();
    cmd::<()>(
        &mut c,
        &[
            "EVAL",
            "return redis.call('PEXPIRE', KEYS[1], 30000)",
            "1",
            "{a}",
        ],
    )
    .await
    .unwrap();
    cmd::<()>(&mut c, &["SET", "short", "v", "PX", "20"])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;

    let after = scrape(&server).await;
    assert_eq!(sample(&after, "rlockd_connected_clients"), Some(2));
    assert_eq!(
        sample(&after, "rlockd_commands_processed_total{cmd=\"set\"}"),
        Some(3)
    );
    assert_eq!(
        sample(&after, "rlockd_commands_processed_total{cmd=\"eval\"}"),
        Some(1)
    );
    assert_eq!(sample(&after, "rlockd_keys{db=\"0\"}"), Some(2));
    assert_eq!(sample(&after, "rlockd_keys{db=\"3\"}"), Some(1));
    assert_eq!(sample(&after, "rlockd_held_locks"), Some(1));
    assert_eq!(
        sample(&after, "rlockd_pubsub_channels{kind=\"channel\"}"),
        Some(1)
    );
    assert_eq!(
        sample(&after, "rlockd_pubsub_channels{kind=\"pattern\"}"),
        Some(1)
    );
    assert_eq!(
        sample(&after, "rlockd_pubsub_subscribers{kind=\"channel\"}"),
        Some(1)
    );
    assert_eq!(sample(&after, "rlockd_script_runs_total"), Some(1));
    assert_eq!(
        sample(&after, "rlockd_expired_keys_total"),
        Some(1),
        "reclaimed by the expiry driver"
    );
    let lag = sample(&after, "rlockd_expiry_lag_milliseconds").unwrap();
    assert!(lag < 300, "reclaimed {lag} ms late");

    // A client waiting in BLPOP is counted while it waits.
    assert_eq!(sample(&after, "rlockd_blocked_clients"), Some(0));
    let mut waiter = connect(&server).await;
    let blpop = tokio::spawn(async move {
        cmd::<Option<Vec<String>>>(&mut waiter, &["BLPOP", "queue", "0"]).await
    });
    let mut blocked = 0;
    for _ in 0..100 {
        blocked = sample(&scrape(&server).await, "rlockd_blocked_clients").unwrap();
        if blocked == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(blocked, 1);
    // `c` is on database 3; the waiter on 0.
    let mut pusher = connect(&server).await;
    cmd::<()>(&mut pusher, &["RPUSH", "queue", "job"])
        .await
        .unwrap();
    let popped = tokio::time::timeout(Duration::from_secs(5), blpop).await;
    assert!(popped.expect("BLPOP answered").unwrap().is_ok());
    assert_eq!(
        sample(&scrape(&server).await, "rlockd_blocked_clients"),
        Some(0)
    );

    // A script past the busy threshold is counted.
    cmd::<()>(&mut c, &["CONFIG", "SET", "busy-reply-threshold", "5"])
        .await
        .unwrap();
    cmd::<()>(
        &mut c,
        &[
            "EVAL",
            "local i = 0 while i < 20000000 do i = i + 1 end",
            "0",
        ],
    )
    .await
    .unwrap();
    let busy = scrape(&server).await;
    assert_eq!(sample(&busy, "rlockd_script_busy_total"), Some(1));
    assert_eq!(sample(&busy, "rlockd_script_runs_total"), Some(2));
}

#[tokio::test]
async fn other_paths_and_methods_are_refused() {
    let server = Server::builder()
        .port(0)
        .metrics_port(0)
        .start()
        .await
        .unwrap();
    let addr = server.metrics_addr().unwrap();
    let (head, _) = http_get(addr, "/").await;
    assert!(head.starts_with("HTTP/1.1 404 Not Found\r\n"), "{head}");
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"POST /metrics HTTP/1.1\r\n\r\n")
        .await
        .unwrap();
    let mut page = String::new();
    s.read_to_string(&mut page).await.unwrap();
    assert!(
        page.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"),
        "{page}"
    );
    assert!(
        common::start().await.metrics_addr().is_none(),
        "off by default"
    );
}
