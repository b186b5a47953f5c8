//! Blocking stream reads over real sockets: group readers served oldest
//! first, plain readers all served, a reader that hangs up owed nothing,
//! timeouts, and no entry lost or delivered twice to a group under
//! concurrent producers and consumers (the differential cases are in
//! `conformance/cases/streams.rcmd`).

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::{cmd, connect, connect_url, start, until_blocked};
use redis::Value;
use redis::aio::MultiplexedConnection;

const WAIT: Duration = Duration::from_secs(10);

/// The ids in an XREAD/XREADGROUP reply (RESP2: `[[key, [[id, fields]...]]...]`).
fn ids_of(reply: &Value) -> Vec<String> {
    let Value::Array(streams) = reply else {
        return Vec::new();
    };
    let text = |v: &Value| match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("not a bulk string: {other:?}"),
    };
    streams
        .iter()
        .flat_map(|s| match s {
            Value::Array(pair) => match &pair[1] {
                Value::Array(entries) => entries
                    .iter()
                    .map(|e| match e {
                        Value::Array(e) => text(&e[0]),
                        other => panic!("not an entry: {other:?}"),
                    })
                    .collect::<Vec<_>>(),
                other => panic!("not a list of entries: {other:?}"),
            },
            other => panic!("not a stream reply: {other:?}"),
        })
        .collect()
}

async fn spawn_read(url: String, args: Vec<String>) -> tokio::task::JoinHandle<Vec<String>> {
    tokio::spawn(async move {
        let mut w = connect_url(url).await;
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let reply: Value = cmd(&mut w, &args).await.unwrap();
        ids_of(&reply)
    })
}

fn words(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_string).collect()
}

#[tokio::test]
async fn group_readers_are_served_in_arrival_order_and_plain_readers_all() {
    let server = start().await;
    let mut c = connect(&server).await;
    let _: String = cmd(&mut c, &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"])
        .await
        .unwrap();
    let mut group = Vec::new();
    for i in 0..3 {
        let line = format!("XREADGROUP GROUP g c{i} COUNT 1 BLOCK 0 STREAMS s >");
        group.push(spawn_read(server.url(), words(&line)).await);
        until_blocked(&mut c, i + 1).await;
    }
    let mut plain = Vec::new();
    for i in 0..2 {
        plain.push(spawn_read(server.url(), words("XREAD BLOCK 0 STREAMS s $")).await);
        until_blocked(&mut c, 4 + i).await;
    }
    // One entry per XADD: each goes to the oldest group reader still
    // waiting, and every plain reader sees the first one.
    for i in 1..=3 {
        let id: String = cmd(&mut c, &["XADD", "s", &format!("{i}-0"), "f", "v"])
            .await
            .unwrap();
        assert_eq!(id, format!("{i}-0"));
    }
    for (i, reader) in group.into_iter().enumerate() {
        let got = tokio::time::timeout(WAIT, reader).await.unwrap().unwrap();
        assert_eq!(got, vec![format!("{}-0", i + 1)], "group reader {i}");
    }
    for reader in plain {
        let got = tokio::time::timeout(WAIT, reader).await.unwrap().unwrap();
        assert_eq!(got, vec!["1-0".to_string()]);
    }
    until_blocked(&mut c, 0).await;
    let pending: Vec<Value> = cmd(&mut c, &["XPENDING", "s", "g"]).await.unwrap();
    assert_eq!(pending[0], Value::Int(3));
}

#[tokio::test]
async fn a_group_reader_that_hangs_up_is_handed_nothing() {
    let server = start().await;
    let mut c = connect(&server).await;
    let _: String = cmd(&mut c, &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"])
        .await
        .unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let mut s = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
        let line = "XREADGROUP GROUP g gone BLOCK 0 STREAMS s >\r\n";
        s.write_all(line.as_bytes()).await.unwrap();
        until_blocked(&mut c, 1).await;
    }
    until_blocked(&mut c, 0).await;
    let _: String = cmd(&mut c, &["XADD", "s", "1-0", "f", "v"]).await.unwrap();
    let pending: Vec<Value> = cmd(&mut c, &["XPENDING", "s", "g"]).await.unwrap();
    assert_eq!(
        pending[0],
        Value::Int(0),
        "nothing went to the closed reader"
    );
    let reply: Value = cmd(
        &mut c,
        &["XREADGROUP", "GROUP", "g", "next", "STREAMS", "s", ">"],
    )
    .await
    .unwrap();
    assert_eq!(ids_of(&reply), vec!["1-0".to_string()]);
}

#[tokio::test]
async fn block_times_out_with_a_nil() {
    let server = start().await;
    let mut c = connect(&server).await;
    let started = Instant::now();
    let reply: Value = cmd(&mut c, &["XREAD", "BLOCK", "200", "STREAMS", "s", "$"])
        .await
        .unwrap();
    assert_eq!(reply, Value::Nil);
    assert!(started.elapsed() >= Duration::from_millis(200));
    // A timeout past the 64-bit range of Unix milliseconds waits for ever,
    // like BLOCK 0: an entry still answers it.
    let reader = spawn_read(
        server.url(),
        words("XREAD BLOCK 9223372036854775807 STREAMS s $"),
    )
    .await;
    until_blocked(&mut c, 1).await;
    let _: String = cmd(&mut c, &["XADD", "s", "5-0", "f", "v"]).await.unwrap();
    let got = tokio::time::timeout(WAIT, reader).await.unwrap().unwrap();
    assert_eq!(got, vec!["5-0".to_string()]);
}

/// Reads for a consumer until `total` entries were seen by all of them,
/// acknowledging each batch.
async fn consume(
    url: String,
    name: String,
    seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    total: usize,
) {
    let mut c: MultiplexedConnection = connect_url(url).await;
    loop {
        if seen.lock().unwrap().len() >= total {
            return;
        }
        let reply: Value = cmd(
            &mut c,
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                &name,
                "COUNT",
                "7",
                "BLOCK",
                "50",
                "STREAMS",
                "s",
                ">",
            ],
        )
        .await
        .unwrap();
        let ids = ids_of(&reply);
        if ids.is_empty() {
            continue;
        }
        let mut ack = vec!["XACK", "s", "g"];
        ack.extend(ids.iter().map(String::as_str));
        let acked: i64 = cmd(&mut c, &ack).await.unwrap();
        assert_eq!(acked as usize, ids.len());
        seen.lock().unwrap().extend(ids);
    }
}

#[tokio::test]
async fn concurrent_producers_and_consumers_lose_and_repeat_nothing() {
    let server = start().await;
    let mut c = connect(&server).await;
    let _: String = cmd(&mut c, &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"])
        .await
        .unwrap();
    const PER_PRODUCER: usize = 300;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let consumers: Vec<_> = (0..4)
        .map(|i| {
            tokio::spawn(consume(
                server.url(),
                format!("c{i}"),
                seen.clone(),
                2 * PER_PRODUCER,
            ))
        })
        .collect();
    let producers: Vec<_> = (0..2)
        .map(|p| {
            let url = server.url();
            tokio::spawn(async move {
                let mut c = connect_url(url).await;
                let mut ids = Vec::new();
                for i in 0..PER_PRODUCER {
                    let id: String = cmd(&mut c, &["XADD", "s", "*", "p", &format!("{p}:{i}")])
                        .await
                        .unwrap();
                    ids.push(id);
                }
                ids
            })
        })
        .collect();
    let mut added = HashSet::new();
    for p in producers {
        added.extend(tokio::time::timeout(WAIT, p).await.unwrap().unwrap());
    }
    for consumer in consumers {
        tokio::time::timeout(WAIT, consumer).await.unwrap().unwrap();
    }
    let seen = seen.lock().unwrap().clone();
    let unique: HashSet<String> = seen.iter().cloned().collect();
    assert_eq!(unique.len(), seen.len(), "no entry delivered twice");
    assert_eq!(unique, added, "every entry delivered");
    let pending: Vec<Value> = cmd(&mut c, &["XPENDING", "s", "g"]).await.unwrap();
    assert_eq!(pending[0], Value::Int(0));
}

/// Blocks a group reader of `s` (group `g`, made here), runs `end` on
/// another connection and returns the error the reader got.
async fn group_reader_error(end: &[&[&str]]) -> String {
    let server = start().await;
    let mut c = connect(&server).await;
    let _: String = cmd(&mut c, &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"])
        .await
        .unwrap();
    let mut reader = connect(&server).await;
    let read = tokio::spawn(async move {
        common::err(
            &mut reader,
            &words("XREADGROUP GROUP g alice BLOCK 0 STREAMS s >")
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        )
        .await
    });
    until_blocked(&mut c, 1).await;
    for line in end {
        let _: Value = cmd(&mut c, line).await.unwrap();
    }
    let got = tokio::time::timeout(WAIT, read).await.unwrap().unwrap();
    until_blocked(&mut c, 0).await;
    // Counted like any failed call: the error, and XREADGROUP's failure.
    let info: String = cmd(&mut c, &["INFO", "stats"]).await.unwrap();
    assert!(info.contains("total_error_replies:1"), "{info}");
    let stats: String = cmd(&mut c, &["INFO", "commandstats"]).await.unwrap();
    let line = stats
        .lines()
        .find(|l| l.starts_with("cmdstat_xreadgroup:"))
        .unwrap();
    assert!(
        line.contains("calls=1,") && line.ends_with("failed_calls=1"),
        "{line}"
    );
    got
}

const GONE: &str = "UNBLOCKED the stream key no longer exists";

#[tokio::test]
async fn a_group_reader_learns_that_its_stream_was_deleted_or_replaced() {
    assert_eq!(group_reader_error(&[&["DEL", "s"]]).await, GONE);
    assert_eq!(group_reader_error(&[&["SET", "s", "v"]]).await, GONE);
    assert_eq!(group_reader_error(&[&["FLUSHDB"]]).await, GONE);
    assert_eq!(group_reader_error(&[&["FLUSHALL"]]).await, GONE);
    // Replaced inside a transaction by another type: told once EXEC ends.
    let multi: &[&[&str]] = &[&["MULTI"], &["DEL", "s"], &["SADD", "s", "e"], &["EXEC"]];
    assert_eq!(group_reader_error(multi).await, GONE);
    // Renamed away, and a list renamed over it.
    assert_eq!(group_reader_error(&[&["RENAME", "s", "t"]]).await, GONE);
    let over: &[&[&str]] = &[&["RPUSH", "l", "x"], &["RENAME", "l", "s"]];
    assert_eq!(group_reader_error(over).await, GONE);
}

#[tokio::test]
async fn a_group_reader_learns_that_its_group_is_gone() {
    let nogroup = "NOGROUP the consumer group this client was blocked on no longer exists";
    let destroy: &[&[&str]] = &[&["XGROUP", "DESTROY", "s", "g"]];
    assert_eq!(group_reader_error(destroy).await, nogroup);
    // A stream without the group renamed over it.
    let renamed: &[&[&str]] = &[&["XADD", "t", "1-0", "f", "v"], &["RENAME", "t", "s"]];
    assert_eq!(group_reader_error(renamed).await, nogroup);
}

#[tokio::test]
async fn a_group_reader_learns_that_its_stream_expired() {
    // Reclaimed by the expiry wheel, with no command touching the key.
    let wheel: &[&[&str]] = &[&["PEXPIRE", "s", "30"]];
    assert_eq!(group_reader_error(wheel).await, GONE);
}

#[tokio::test]
async fn a_stream_renamed_over_the_key_serves_a_group_reader_of_its_group() {
    let server = start().await;
    let mut c = connect(&server).await;
    let _: String = cmd(&mut c, &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"])
        .await
        .unwrap();
    let reader = spawn_read(
        server.url(),
        words("XREADGROUP GROUP g alice BLOCK 0 STREAMS s >"),
    )
    .await;
    until_blocked(&mut c, 1).await;
    let _: String = cmd(&mut c, &["XGROUP", "CREATE", "t", "g", "$", "MKSTREAM"])
        .await
        .unwrap();
    let _: String = cmd(&mut c, &["XADD", "t", "100-0", "f", "v"])
        .await
        .unwrap();
    let _: String = cmd(&mut c, &["RENAME", "t", "s"]).await.unwrap();
    let got = tokio::time::timeout(WAIT, reader).await.unwrap().unwrap();
    assert_eq!(got, vec!["100-0".to_string()]);
}

#[tokio::test]
async fn a_plain_reader_waits_on_through_deletion_and_type_changes() {
    let server = start().await;
    let mut c = connect(&server).await;
    let _: String = cmd(&mut c, &["XADD", "s", "666-0", "f", "v"])
        .await
        .unwrap();
    let reader = spawn_read(server.url(), words("XREAD BLOCK 0 STREAMS s $")).await;
    until_blocked(&mut c, 1).await;
    for line in ["SET s v", "DEL s", "FLUSHALL"] {
        let _: Value = cmd(&mut c, &line.split(' ').collect::<Vec<_>>())
            .await
            .unwrap();
    }
    let _: String = cmd(&mut c, &["XADD", "s", "1-0", "f", "v"]).await.unwrap();
    // `$` was 666-0 when it blocked: an earlier entry of the new stream
    // does not serve it.
    until_blocked(&mut c, 1).await;
    let _: String = cmd(&mut c, &["XADD", "s", "667-0", "f", "v"])
        .await
        .unwrap();
    let got = tokio::time::timeout(WAIT, reader).await.unwrap().unwrap();
    assert_eq!(got, vec!["667-0".to_string()]);
}
