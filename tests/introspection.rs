//! Which locks are held, by whom, for how long, and who waits on which
//! channel: from the Rust API and from RLOCKD.LOCKS / RLOCKD.WAITERS.

mod common;

use std::time::Duration;

use common::{cmd, connect};
use redis::Value;
use rlockd::Config;
use rlockd::server::{LockKind, LockOwner};

const LOCK_SCRIPT: &str = include_str!("../src/command/scripting/lock_scripts/dlock_lock.lua");

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Int(i) => i.to_string(),
        other => format!("{other:?}"),
    }
}

/// A RESP2 flat key/value array as (field, value) pairs.
fn pairs(v: &Value) -> Vec<(String, Value)> {
    let Value::Array(items) = v else {
        panic!("not an array: {v:?}")
    };
    items
        .chunks(2)
        .map(|p| (text(&p[0]), p[1].clone()))
        .collect()
}

fn get<'a>(fields: &'a [(String, Value)], name: &str) -> &'a Value {
    &fields.iter().find(|(f, _)| f == name).unwrap().1
}

#[tokio::test]
async fn locks_show_owners_holds_and_leases() {
    let config = Config {
        enable_clock_control: true,
        ..Config::default()
    };
    let server = common::start_with(config).await;
    let mut c = connect(&server).await;
    let lock = |owner: &'static str| {
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(LOCK_SCRIPT)
            .arg(1)
            .arg("{order:1}:lock")
            .arg(30_000)
            .arg(owner);
        cmd
    };
    // Redisson's lock taken twice by one owner (reentrant), refused to another.
    lock("c1:7").exec_async(&mut c).await.unwrap();
    lock("c1:7").exec_async(&mut c).await.unwrap();
    let refused: i64 = lock("c2:9").query_async(&mut c).await.unwrap();
    assert!(refused > 0);
    // A redis-py style lock, a plain cached string, a counter hash without a lease.
    cmd::<()>(&mut c, &["SET", "pylock", "token-1", "NX", "PX", "10000"])
        .await
        .unwrap();
    cmd::<()>(&mut c, &["SET", "plain", "v"]).await.unwrap();
    // Redisson's unlock latch has a lease but no holder.
    let latch = "redisson_unlock_latch:{order:1}:0123456789abcdef0123456789abcdef";
    cmd::<()>(&mut c, &["SET", latch, "1", "PX", "10000"])
        .await
        .unwrap();
    cmd::<()>(&mut c, &["HSET", "profile", "name", "ann"])
        .await
        .unwrap();
    server.clock().unwrap().advance(Duration::from_millis(1000));

    let locks = server.locks(None);
    assert_eq!(locks.len(), 2, "{locks:?}");
    let (redisson, py) = (&locks[1], &locks[0]);
    assert_eq!(&redisson.key[..], b"{order:1}:lock");
    assert_eq!(redisson.kind, LockKind::Hash);
    assert_eq!(
        redisson.owners,
        vec![LockOwner {
            owner: "c1:7".into(),
            holds: 2
        }]
    );
    assert_eq!(redisson.ttl, Some(Duration::from_millis(29_000)));
    assert_eq!(
        (py.kind, py.ttl),
        (LockKind::String, Some(Duration::from_secs(9)))
    );
    assert_eq!(&py.owners[0].owner[..], b"token-1");
    assert_eq!(server.locks(Some("{order:*")).len(), 1);
    assert!(server.locks(Some("nothing*")).is_empty());

    let reply: Vec<Value> = cmd(&mut c, &["RLOCKD.LOCKS", "{order:*"]).await.unwrap();
    assert_eq!(reply.len(), 1);
    let fields = pairs(&reply[0]);
    assert_eq!(text(get(&fields, "key")), "{order:1}:lock");
    assert_eq!(text(get(&fields, "db")), "0");
    assert_eq!(text(get(&fields, "type")), "hash");
    assert_eq!(text(get(&fields, "pttl")), "29000");
    let owners = pairs(get(&fields, "owners"));
    assert_eq!(owners, vec![("c1:7".to_string(), Value::Int(2))]);

    // Unlocking shows at once.
    cmd::<()>(&mut c, &["DEL", "{order:1}:lock"]).await.unwrap();
    let reply: Vec<Value> = cmd(&mut c, &["RLOCKD.LOCKS"]).await.unwrap();
    assert_eq!(reply.len(), 1);
    assert_eq!(text(get(&pairs(&reply[0]), "type")), "string");
    assert_eq!(
        common::err(&mut c, &["RLOCKD.LOCKS", "a", "b"]).await,
        "ERR syntax error"
    );
}

#[tokio::test]
async fn waiters_name_the_subscribed_clients() {
    let server = common::start().await;
    let client = redis::Client::open(server.url()).unwrap();
    let mut waiter = client.get_async_pubsub().await.unwrap();
    waiter
        .subscribe("redisson_lock__channel:{order:1}")
        .await
        .unwrap();
    waiter.psubscribe("__keyevent@*").await.unwrap();
    let mut other = client.get_async_pubsub().await.unwrap();
    other
        .subscribe("redisson_lock__channel:{order:1}")
        .await
        .unwrap();
    let mut c = connect(&server).await;
    let ids: Vec<Value> = cmd(&mut c, &["CLIENT", "LIST"])
        .await
        .map(|l: String| {
            l.lines()
                .filter(|line| line.contains(" cmd=subscribe") || line.contains(" cmd=psubscribe"))
                .map(|line| Value::Int(line.split(' ').next().unwrap()[3..].parse().unwrap()))
                .collect()
        })
        .unwrap();
    assert_eq!(ids.len(), 2, "two subscribed clients");

    let waiters = server.waiters(None);
    assert_eq!(waiters.len(), 2, "{waiters:?}");
    assert_eq!(waiters[0].kind, rlockd::pubsub::Kind::Channel);
    assert_eq!(waiters[0].clients.len(), 2);
    assert_eq!(waiters[1].kind, rlockd::pubsub::Kind::Pattern);
    assert_eq!(&waiters[1].name[..], b"__keyevent@*");
    assert_eq!(waiters[1].clients.len(), 1);

    let reply: Vec<Value> = cmd(&mut c, &["RLOCKD.WAITERS", "redisson*"]).await.unwrap();
    assert_eq!(reply.len(), 1);
    let fields = pairs(&reply[0]);
    assert_eq!(text(get(&fields, "kind")), "channel");
    assert_eq!(
        text(get(&fields, "name")),
        "redisson_lock__channel:{order:1}"
    );
    let Value::Array(mut clients) = get(&fields, "clients").clone() else {
        panic!()
    };
    let mut expected = ids.clone();
    let key = |v: &Value| text(v).parse::<i64>().unwrap();
    clients.sort_by_key(key);
    expected.sort_by_key(key);
    assert_eq!(clients, expected);

    drop(other);
    let mut left = Vec::new();
    for _ in 0..100 {
        left = server.waiters(Some("redisson*"));
        if left[0].clients.len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        left[0].clients.len(),
        1,
        "a closed subscriber stops waiting"
    );
}
