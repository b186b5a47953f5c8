//! CLIENT UNBLOCK against every blocking command, and blocking sorted set
//! pops under concurrent producers, over real sockets (the differential
//! cases are in `conformance/cases/zset_blocking.rcmd`; CLIENT UNBLOCK
//! needs client ids, which differ between servers).

mod common;

use std::collections::HashSet;

use common::{WAIT, cmd, connect, connect_url, err, start, until_blocked};
use redis::Value;
use rlockd::ServerHandle;
use tokio::task::JoinHandle;

/// Every blocking command, each waiting on keys nobody fills (`k`, `d`).
const BLOCKING: &[&[&str]] = &[
    &["BLPOP", "k", "0"],
    &["BRPOP", "x", "k", "0"],
    &["BLMOVE", "k", "d", "LEFT", "RIGHT", "0"],
    &["BRPOPLPUSH", "k", "d", "0"],
    &["BLMPOP", "0", "1", "k", "LEFT", "COUNT", "2"],
    &["BZPOPMIN", "k", "0"],
    &["BZPOPMAX", "x", "k", "0"],
    &["BZMPOP", "0", "2", "x", "k", "MAX"],
    &["WAIT", "1", "0"],
];

/// Runs `args` on a new connection; returns its client id and the task
/// that ends with the command's reply (or error text).
async fn blocked(
    server: &ServerHandle,
    args: &'static [&'static str],
) -> (String, JoinHandle<Result<Value, String>>) {
    let mut w = connect(server).await;
    let id: i64 = cmd(&mut w, &["CLIENT", "ID"]).await.unwrap();
    let task = tokio::spawn(async move {
        cmd::<Value>(&mut w, args)
            .await
            .map_err(|e| format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or("")))
    });
    (id.to_string(), task)
}

#[tokio::test]
async fn unblock_ends_every_blocking_command_as_a_timeout_or_an_error() {
    let server = start().await;
    let mut c = connect(&server).await;
    for args in BLOCKING {
        for with_error in [false, true] {
            let (id, task) = blocked(&server, args).await;
            until_blocked(&mut c, 1).await;
            let mut unblock = vec!["CLIENT", "UNBLOCK", &id];
            if with_error {
                unblock.push("ERROR");
            }
            let done: i64 = cmd(&mut c, &unblock).await.unwrap();
            assert_eq!(done, 1, "{args:?}");
            let reply = tokio::time::timeout(WAIT, task).await.unwrap().unwrap();
            let timed_out = if args[0] == "WAIT" {
                Value::Int(0)
            } else {
                Value::Nil
            };
            if with_error {
                assert_eq!(
                    reply,
                    Err("UNBLOCKED client unblocked via CLIENT UNBLOCK".to_string()),
                    "{args:?}"
                );
            } else {
                assert_eq!(reply, Ok(timed_out), "{args:?}");
            }
            until_blocked(&mut c, 0).await;
            // No longer blocked: nothing to unblock.
            let again: i64 = cmd(&mut c, &["CLIENT", "UNBLOCK", &id, "TIMEOUT"])
                .await
                .unwrap();
            assert_eq!(again, 0);
        }
    }
    // An unblocked waiter is owed nothing: what comes later stays.
    let (id, task) = blocked(&server, &["BZPOPMIN", "later", "0"]).await;
    until_blocked(&mut c, 1).await;
    let _: i64 = cmd(&mut c, &["CLIENT", "UNBLOCK", &id]).await.unwrap();
    tokio::time::timeout(WAIT, task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let _: i64 = cmd(&mut c, &["ZADD", "later", "1", "m"]).await.unwrap();
    let card: i64 = cmd(&mut c, &["ZCARD", "later"]).await.unwrap();
    assert_eq!(card, 1);
}

#[tokio::test]
async fn unblock_checks_its_arguments_as_redis_does() {
    let server = start().await;
    let mut c = connect(&server).await;
    let me: i64 = cmd(&mut c, &["CLIENT", "ID"]).await.unwrap();
    let me = me.to_string();
    for id in [me.as_str(), "999999", "0", "-1"] {
        let n: i64 = cmd(&mut c, &["CLIENT", "UNBLOCK", id]).await.unwrap();
        assert_eq!(n, 0, "{id}");
    }
    assert_eq!(
        err(&mut c, &["CLIENT", "UNBLOCK", "abc"]).await,
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err(&mut c, &["CLIENT", "UNBLOCK", &me, "later"]).await,
        "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"
    );
    assert_eq!(
        err(&mut c, &["CLIENT", "UNBLOCK", &me, "timeout", "x"]).await,
        "ERR unknown subcommand or wrong number of arguments for 'UNBLOCK'. Try CLIENT HELP."
    );
    assert_eq!(
        err(&mut c, &["CLIENT", "UNBLOCK"]).await,
        "ERR wrong number of arguments for 'client|unblock' command"
    );
}

#[tokio::test]
async fn a_client_held_by_pause_is_not_unblocked() {
    // Redis 7.0.15 crashes here; later versions answer 0, as rlockd does.
    let server = start().await;
    let mut c = connect(&server).await;
    let _: () = cmd(&mut c, &["CLIENT", "PAUSE", "10000", "WRITE"])
        .await
        .unwrap();
    let (id, task) = blocked(&server, &["SET", "k", "v"]).await;
    until_blocked(&mut c, 1).await;
    let n: i64 = cmd(&mut c, &["CLIENT", "UNBLOCK", &id, "ERROR"])
        .await
        .unwrap();
    assert_eq!(n, 0);
    let _: () = cmd(&mut c, &["CLIENT", "UNPAUSE"]).await.unwrap();
    let reply = tokio::time::timeout(WAIT, task).await.unwrap().unwrap();
    assert_eq!(reply, Ok(Value::Okay));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_member_is_lost_or_popped_twice() {
    const PRODUCERS: usize = 4;
    const PER_PRODUCER: usize = 300;
    const CONSUMERS: usize = 6;
    let server = start().await;
    let mut consumers = Vec::new();
    for n in 0..CONSUMERS {
        let url = server.url();
        consumers.push(tokio::spawn(async move {
            let mut w = connect_url(url).await;
            let mut got = Vec::new();
            loop {
                let members: Vec<String> = if n % 2 == 0 {
                    let r: Option<(String, String, f64)> =
                        cmd(&mut w, &["BZPOPMIN", "jobs", "other", "0.5"])
                            .await
                            .unwrap();
                    r.map(|(_, m, _)| m).into_iter().collect()
                } else {
                    let r: Option<(String, Vec<(String, f64)>)> =
                        cmd(&mut w, &["BZMPOP", "0.5", "1", "jobs", "MAX", "COUNT", "3"])
                            .await
                            .unwrap();
                    r.map(|(_, items)| items.into_iter().map(|(m, _)| m).collect())
                        .unwrap_or_default()
                };
                for m in members {
                    if m.starts_with("stop") {
                        return got;
                    }
                    got.push(m);
                }
            }
        }));
    }
    let mut producers = Vec::new();
    for p in 0..PRODUCERS {
        let url = server.url();
        producers.push(tokio::spawn(async move {
            let mut c = connect_url(url).await;
            for i in 0..PER_PRODUCER {
                let member = format!("{p}:{i}");
                let _: i64 = cmd(&mut c, &["ZADD", "jobs", "1", &member]).await.unwrap();
            }
        }));
    }
    for p in producers {
        tokio::time::timeout(WAIT * 3, p).await.unwrap().unwrap();
    }
    let mut c = connect(&server).await;
    // Members that sort last, so no consumer stops before the work is out.
    for n in 0..CONSUMERS {
        let stop = format!("stop{n}");
        let _: i64 = cmd(&mut c, &["ZADD", "jobs", "2", &stop]).await.unwrap();
        until_stop_taken(&mut c).await;
    }
    let mut seen = HashSet::new();
    for consumer in consumers {
        let got = tokio::time::timeout(WAIT * 3, consumer)
            .await
            .unwrap()
            .unwrap();
        for item in got {
            assert!(seen.insert(item.clone()), "{item} popped twice");
        }
    }
    assert_eq!(seen.len(), PRODUCERS * PER_PRODUCER, "members lost");
}

/// Waits until the last stop member has been taken.
async fn until_stop_taken(c: &mut redis::aio::MultiplexedConnection) {
    let start = std::time::Instant::now();
    loop {
        let stops: i64 = cmd(c, &["ZCOUNT", "jobs", "2", "2"]).await.unwrap();
        if stops == 0 {
            return;
        }
        assert!(start.elapsed() < WAIT, "a stop member was never taken");
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
}
