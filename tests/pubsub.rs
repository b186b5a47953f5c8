//! Pub/sub over real sockets: subscription confirmations and messages in
//! RESP2 and RESP3, subscribed mode, patterns, shard channels, PUBSUB
//! introspection, ordering, slow subscribers, keyspace notifications, and
//! the redis crate's pub/sub APIs.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use rlockd::{Server, ServerHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod common;

use common::WAIT;
use common::resp::{Conn, F, arr, b};

async fn start() -> ServerHandle {
    Server::builder()
        .port(0)
        .start()
        .await
        .expect("server starts")
}

// ---------------------------------------------------------------------------

fn confirm(verb: &str, name: &str, n: i64) -> F {
    F::Arr(vec![b(verb), b(name), F::Int(n)])
}

fn push(items: Vec<F>) -> F {
    F::Push(items)
}

/// Polls `f` until it holds (the server cleans up asynchronously).
async fn eventually<Fut: Future<Output = bool>>(mut f: impl FnMut() -> Fut) {
    let deadline = Instant::now() + WAIT;
    while !f().await {
        assert!(Instant::now() < deadline, "condition never held");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn numsub(addr: SocketAddr, channel: &str) -> i64 {
    let mut c = Conn::open(addr).await;
    match c.cmd(&["PUBSUB", "NUMSUB", channel]).await {
        F::Arr(items) => match items[1] {
            F::Int(n) => n,
            _ => unreachable!(),
        },
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------
// RESP2

#[tokio::test]
async fn subscribe_confirms_each_channel_and_delivers_messages() {
    let server = start().await;
    let mut sub = Conn::open(server.addr()).await;
    let mut publisher = Conn::open(server.addr()).await;
    sub.send(&["SUBSCRIBE", "a", "b", "a"]).await;
    assert_eq!(sub.read().await, confirm("subscribe", "a", 1));
    assert_eq!(sub.read().await, confirm("subscribe", "b", 2));
    assert_eq!(sub.read().await, confirm("subscribe", "a", 2));
    assert_eq!(publisher.cmd(&["PUBLISH", "a", "hello"]).await, F::Int(1));
    assert_eq!(publisher.cmd(&["PUBLISH", "b", ""]).await, F::Int(1));
    assert_eq!(publisher.cmd(&["PUBLISH", "c", "x"]).await, F::Int(0));
    assert_eq!(sub.read().await, arr(&["message", "a", "hello"]));
    assert_eq!(sub.read().await, arr(&["message", "b", ""]));
    sub.quiet().await;
    // Binary-safe payloads.
    let payload = "\r\n\0*3\r\n";
    publisher.cmd(&["PUBLISH", "a", payload]).await;
    assert_eq!(sub.read().await, arr(&["message", "a", payload]));
}

#[tokio::test]
async fn subscribed_mode_allows_only_pubsub_commands() {
    let server = start().await;
    let mut c = Conn::open(server.addr()).await;
    c.send(&["SUBSCRIBE", "a"]).await;
    c.read().await;
    let only =
        "only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context";
    assert_eq!(
        c.cmd(&["GET", "x"]).await,
        F::Err(format!("ERR Can't execute 'get': {only}"))
    );
    assert_eq!(
        c.cmd(&["CLIENT", "ID"]).await,
        F::Err(format!("ERR Can't execute 'client|id': {only}"))
    );
    assert_eq!(
        c.cmd(&["MULTI"]).await,
        F::Err(format!("ERR Can't execute 'multi': {only}"))
    );
    // Unknown commands and wrong arity are reported first, as in Redis.
    assert_eq!(
        c.cmd(&["FOO", "bar"]).await,
        F::Err("ERR unknown command 'FOO', with args beginning with: 'bar' ".into())
    );
    assert_eq!(
        c.cmd(&["SUBSCRIBE"]).await,
        F::Err("ERR wrong number of arguments for 'subscribe' command".into())
    );
    assert_eq!(c.cmd(&["PING"]).await, arr(&["pong", ""]));
    assert_eq!(c.cmd(&["PING", "hi"]).await, arr(&["pong", "hi"]));
    // Leaving subscribed mode restores everything.
    assert_eq!(
        c.cmd(&["UNSUBSCRIBE"]).await,
        confirm("unsubscribe", "a", 0)
    );
    assert_eq!(c.cmd(&["PING"]).await, F::Simple("PONG".into()));
    assert_eq!(c.cmd(&["GET", "x"]).await, F::Nil);
    // QUIT works while subscribed.
    c.send(&["SUBSCRIBE", "a"]).await;
    c.read().await;
    assert_eq!(c.cmd(&["QUIT"]).await, F::Simple("OK".into()));
    assert_eq!(c.read_within(Duration::from_secs(2)).await, None);
}

#[tokio::test]
async fn rejected_commands_are_counted() {
    let server = start().await;
    let mut c = Conn::open(server.addr()).await;
    c.send(&["SUBSCRIBE", "a"]).await;
    c.read().await;
    c.cmd(&["GET", "x"]).await;
    let mut admin = Conn::open(server.addr()).await;
    let F::Bulk(stats) = admin.cmd(&["INFO", "commandstats"]).await else {
        panic!()
    };
    let stats = String::from_utf8(stats).unwrap();
    assert!(
        stats.contains("cmdstat_get:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1"),
        "{stats}"
    );
}

#[tokio::test]
async fn unsubscribe_forms() {
    let server = start().await;
    let mut c = Conn::open(server.addr()).await;
    // Nothing subscribed: one confirmation with a nil name.
    for verb in ["unsubscribe", "punsubscribe", "sunsubscribe"] {
        assert_eq!(
            c.cmd(&[verb]).await,
            F::Arr(vec![b(verb), F::Nil, F::Int(0)])
        );
    }
    c.send(&["SUBSCRIBE", "a", "b"]).await;
    c.read().await;
    c.read().await;
    c.send(&["PSUBSCRIBE", "p*"]).await;
    assert_eq!(c.read().await, confirm("psubscribe", "p*", 3));
    // Unsubscribing from a channel one is not subscribed to still answers.
    assert_eq!(
        c.cmd(&["UNSUBSCRIBE", "zz"]).await,
        confirm("unsubscribe", "zz", 3)
    );
    // No arguments: every channel, in subscription order; patterns stay.
    c.send(&["UNSUBSCRIBE"]).await;
    assert_eq!(c.read().await, confirm("unsubscribe", "a", 2));
    assert_eq!(c.read().await, confirm("unsubscribe", "b", 1));
    // With only patterns left, a bare UNSUBSCRIBE reports them.
    assert_eq!(
        c.cmd(&["UNSUBSCRIBE"]).await,
        F::Arr(vec![b("unsubscribe"), F::Nil, F::Int(1)])
    );
    assert_eq!(
        c.cmd(&["PUNSUBSCRIBE"]).await,
        confirm("punsubscribe", "p*", 0)
    );
    assert_eq!(c.cmd(&["PING"]).await, F::Simple("PONG".into()));
}

#[tokio::test]
async fn patterns_and_channels_both_deliver() {
    let server = start().await;
    let mut sub = Conn::open(server.addr()).await;
    let mut publisher = Conn::open(server.addr()).await;
    sub.send(&["SUBSCRIBE", "news.art"]).await;
    sub.read().await;
    sub.send(&["PSUBSCRIBE", "news.*", "n[aeiou]ws.?rt", "other"])
        .await;
    assert_eq!(sub.read().await, confirm("psubscribe", "news.*", 2));
    assert_eq!(sub.read().await, confirm("psubscribe", "n[aeiou]ws.?rt", 3));
    assert_eq!(sub.read().await, confirm("psubscribe", "other", 4));
    // One channel subscription and two matching patterns: three deliveries,
    // the channel's first, then the patterns' in subscription order.
    assert_eq!(
        publisher.cmd(&["PUBLISH", "news.art", "m1"]).await,
        F::Int(3)
    );
    assert_eq!(sub.read().await, arr(&["message", "news.art", "m1"]));
    assert_eq!(
        sub.read().await,
        arr(&["pmessage", "news.*", "news.art", "m1"])
    );
    assert_eq!(
        sub.read().await,
        arr(&["pmessage", "n[aeiou]ws.?rt", "news.art", "m1"])
    );
    assert_eq!(
        publisher.cmd(&["PUBLISH", "news.tech", "m2"]).await,
        F::Int(1)
    );
    assert_eq!(
        sub.read().await,
        arr(&["pmessage", "news.*", "news.tech", "m2"])
    );
    // Patterns are case-sensitive, and `*` does not match an empty channel.
    sub.send(&["PSUBSCRIBE", "*"]).await;
    sub.read().await;
    assert_eq!(publisher.cmd(&["PUBLISH", "NEWS.x", "m3"]).await, F::Int(1));
    assert_eq!(sub.read().await, arr(&["pmessage", "*", "NEWS.x", "m3"]));
    assert_eq!(publisher.cmd(&["PUBLISH", "", "m4"]).await, F::Int(0));
    sub.quiet().await;
    assert_eq!(publisher.cmd(&["PUBSUB", "NUMPAT"]).await, F::Int(4));
    // Two clients on one pattern: NUMPAT counts distinct patterns.
    let mut other = Conn::open(server.addr()).await;
    other.send(&["PSUBSCRIBE", "news.*"]).await;
    other.read().await;
    assert_eq!(publisher.cmd(&["PUBSUB", "NUMPAT"]).await, F::Int(4));
    assert_eq!(publisher.cmd(&["PUBLISH", "news.x", "m5"]).await, F::Int(3));
}

#[tokio::test]
async fn shard_channels_are_their_own_namespace() {
    let server = start().await;
    let mut sub = Conn::open(server.addr()).await;
    let mut publisher = Conn::open(server.addr()).await;
    sub.send(&["SSUBSCRIBE", "{lock}:ch", "s2"]).await;
    assert_eq!(sub.read().await, confirm("ssubscribe", "{lock}:ch", 1));
    assert_eq!(sub.read().await, confirm("ssubscribe", "s2", 2));
    // Channel and pattern counts are separate from shard counts.
    sub.send(&["PSUBSCRIBE", "*"]).await;
    assert_eq!(sub.read().await, confirm("psubscribe", "*", 1));
    assert_eq!(
        publisher.cmd(&["SPUBLISH", "{lock}:ch", "x"]).await,
        F::Int(1)
    );
    assert_eq!(sub.read().await, arr(&["smessage", "{lock}:ch", "x"]));
    // PUBLISH reaches the pattern, never the shard subscription.
    assert_eq!(publisher.cmd(&["PUBLISH", "s2", "y"]).await, F::Int(1));
    assert_eq!(sub.read().await, arr(&["pmessage", "*", "s2", "y"]));
    assert_eq!(publisher.cmd(&["SPUBLISH", "nobody", "z"]).await, F::Int(0));
    sub.quiet().await;
    assert_eq!(
        publisher
            .cmd(&["PUBSUB", "SHARDNUMSUB", "s2", "nope"])
            .await,
        F::Arr(vec![b("s2"), F::Int(1), b("nope"), F::Int(0)])
    );
    assert_eq!(
        publisher.cmd(&["PUBSUB", "SHARDCHANNELS", "s*"]).await,
        arr(&["s2"])
    );
    assert_eq!(publisher.cmd(&["PUBSUB", "CHANNELS"]).await, F::Arr(vec![]));
    assert_eq!(
        publisher
            .cmd(&["COMMAND", "GETKEYS", "SPUBLISH", "ch", "m"])
            .await,
        F::Err("ERR The command has no key arguments".into())
    );
    sub.send(&["SUNSUBSCRIBE"]).await;
    assert_eq!(sub.read().await, confirm("sunsubscribe", "{lock}:ch", 1));
    assert_eq!(sub.read().await, confirm("sunsubscribe", "s2", 0));
}

#[tokio::test]
async fn pubsub_introspection_and_cleanup_on_disconnect() {
    let server = start().await;
    let addr = server.addr();
    let mut a = Conn::open(addr).await;
    let mut b2 = Conn::open(addr).await;
    a.send(&["SUBSCRIBE", "lock:1", "lock:2", "other"]).await;
    for _ in 0..3 {
        a.read().await;
    }
    b2.send(&["SUBSCRIBE", "lock:1"]).await;
    b2.read().await;
    b2.send(&["PSUBSCRIBE", "lock:*"]).await;
    b2.read().await;
    let mut c = Conn::open(addr).await;
    let F::Arr(mut chans) = c.cmd(&["PUBSUB", "CHANNELS"]).await else {
        panic!()
    };
    chans.sort_by_key(|f| format!("{f:?}"));
    assert_eq!(chans, vec![b("lock:1"), b("lock:2"), b("other")]);
    let F::Arr(mut chans) = c.cmd(&["PUBSUB", "CHANNELS", "lock:*"]).await else {
        panic!()
    };
    chans.sort_by_key(|f| format!("{f:?}"));
    assert_eq!(chans, vec![b("lock:1"), b("lock:2")]);
    assert_eq!(
        c.cmd(&["PUBSUB", "NUMSUB", "lock:1", "lock:2", "none"])
            .await,
        F::Arr(vec![
            b("lock:1"),
            F::Int(2),
            b("lock:2"),
            F::Int(1),
            b("none"),
            F::Int(0)
        ])
    );
    assert_eq!(c.cmd(&["PUBSUB", "NUMSUB"]).await, F::Arr(vec![]));
    assert_eq!(c.cmd(&["PUBSUB", "NUMPAT"]).await, F::Int(1));
    let F::Bulk(info) = c.cmd(&["INFO", "stats"]).await else {
        panic!()
    };
    let info = String::from_utf8(info).unwrap();
    assert!(info.contains("pubsub_channels:3\r\n"), "{info}");
    assert!(info.contains("pubsub_patterns:1\r\n"), "{info}");
    assert!(info.contains("pubsubshard_channels:0\r\n"), "{info}");
    // Errors, with Redis's texts.
    assert_eq!(
        c.cmd(&["PUBSUB", "CHANNELS", "a", "b"]).await,
        F::Err(
            "ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB HELP."
                .into()
        )
    );
    assert_eq!(
        c.cmd(&["PUBSUB", "NUMPAT", "x"]).await,
        F::Err("ERR wrong number of arguments for 'pubsub|numpat' command".into())
    );
    assert_eq!(
        c.cmd(&["PUBSUB", "FOO"]).await,
        F::Err("ERR unknown subcommand 'FOO'. Try PUBSUB HELP.".into())
    );
    assert!(matches!(c.cmd(&["PUBSUB", "HELP"]).await, F::Arr(lines) if lines.len() > 10));
    // A disconnect drops every subscription of that client.
    drop(a);
    drop(b2);
    eventually(|| async move { numsub(addr, "lock:1").await == 0 }).await;
    eventually(|| async move {
        let mut c = Conn::open(addr).await;
        c.cmd(&["PUBSUB", "NUMPAT"]).await == F::Int(0)
            && c.cmd(&["PUBSUB", "CHANNELS"]).await == F::Arr(vec![])
    })
    .await;
}

#[tokio::test]
async fn client_list_shows_subscriptions() {
    let server = start().await;
    let mut sub = Conn::open(server.addr()).await;
    sub.send(&["SUBSCRIBE", "a", "b"]).await;
    sub.read().await;
    sub.read().await;
    sub.send(&["PSUBSCRIBE", "x"]).await;
    sub.read().await;
    sub.send(&["SSUBSCRIBE", "s"]).await;
    sub.read().await;
    let mut c = Conn::open(server.addr()).await;
    let F::Bulk(list) = c.cmd(&["CLIENT", "LIST", "TYPE", "pubsub"]).await else {
        panic!()
    };
    let list = String::from_utf8(list).unwrap();
    assert_eq!(list.lines().count(), 1, "{list}");
    assert!(
        list.contains(" flags=P db=0 sub=2 psub=1 ssub=1 multi=-1 "),
        "{list}"
    );
    let F::Bulk(normal) = c.cmd(&["CLIENT", "LIST", "TYPE", "normal"]).await else {
        panic!()
    };
    let normal = String::from_utf8(normal).unwrap();
    assert!(normal.contains("flags=N") && !normal.contains("flags=P"));
    // CLIENT KILL TYPE pubsub closes the subscriber only.
    assert_eq!(
        c.cmd(&["CLIENT", "KILL", "TYPE", "pubsub"]).await,
        F::Int(1)
    );
    assert_eq!(sub.read_within(Duration::from_secs(2)).await, None);
    assert_eq!(
        c.cmd(&["CLIENT", "KILL", "TYPE", "foo"]).await,
        F::Err("ERR Unknown client type 'foo'".into())
    );
}

#[tokio::test]
async fn reset_leaves_subscribed_mode() {
    let server = start().await;
    let mut c = Conn::open(server.addr()).await;
    c.send(&["SUBSCRIBE", "a"]).await;
    c.read().await;
    c.send(&["PSUBSCRIBE", "b*"]).await;
    c.read().await;
    assert_eq!(c.cmd(&["RESET"]).await, F::Simple("RESET".into()));
    assert_eq!(c.cmd(&["GET", "x"]).await, F::Nil);
    assert_eq!(numsub(server.addr(), "a").await, 0);
    assert_eq!(c.cmd(&["PUBSUB", "NUMPAT"]).await, F::Int(0));
    assert_eq!(c.cmd(&["PUBLISH", "a", "x"]).await, F::Int(0));
    c.quiet().await;
}

#[tokio::test]
async fn subscribe_inside_multi() {
    let server = start().await;
    let mut c = Conn::open(server.addr()).await;
    c.cmd(&["MULTI"]).await;
    assert_eq!(c.cmd(&["SUBSCRIBE", "a"]).await, F::Simple("QUEUED".into()));
    assert_eq!(
        c.cmd(&["EXEC"]).await,
        F::Arr(vec![confirm("subscribe", "a", 1)])
    );
    // Now subscribed, and messages arrive.
    assert!(matches!(c.cmd(&["GET", "x"]).await, F::Err(_)));
    let mut publisher = Conn::open(server.addr()).await;
    assert_eq!(publisher.cmd(&["PUBLISH", "a", "m"]).await, F::Int(1));
    assert_eq!(c.read().await, arr(&["message", "a", "m"]));
}

// ---------------------------------------------------------------------------
// RESP3

#[tokio::test]
async fn resp3_uses_push_frames_and_allows_every_command() {
    let server = start().await;
    let mut c = Conn::open(server.addr()).await;
    assert!(matches!(c.cmd(&["HELLO", "3"]).await, F::Map(_)));
    assert_eq!(
        c.cmd(&["UNSUBSCRIBE"]).await,
        push(vec![b("unsubscribe"), F::Nil, F::Int(0)])
    );
    c.send(&["SUBSCRIBE", "a", "b"]).await;
    assert_eq!(
        c.read().await,
        push(vec![b("subscribe"), b("a"), F::Int(1)])
    );
    assert_eq!(
        c.read().await,
        push(vec![b("subscribe"), b("b"), F::Int(2)])
    );
    // Ordinary commands and replies while subscribed.
    assert_eq!(c.cmd(&["PING"]).await, F::Simple("PONG".into()));
    assert_eq!(c.cmd(&["SET", "k", "v"]).await, F::Simple("OK".into()));
    assert_eq!(c.cmd(&["GET", "k"]).await, b("v"));
    // A message to one's own channel comes before the PUBLISH reply.
    c.send(&["PUBLISH", "a", "self"]).await;
    assert_eq!(c.read().await, push(vec![b("message"), b("a"), b("self")]));
    assert_eq!(c.read().await, F::Int(1));
    c.send(&["PSUBSCRIBE", "a*"]).await;
    assert_eq!(
        c.read().await,
        push(vec![b("psubscribe"), b("a*"), F::Int(3)])
    );
    let mut publisher = Conn::open(server.addr()).await;
    assert_eq!(publisher.cmd(&["PUBLISH", "a", "x"]).await, F::Int(2));
    assert_eq!(c.read().await, push(vec![b("message"), b("a"), b("x")]));
    assert_eq!(
        c.read().await,
        push(vec![b("pmessage"), b("a*"), b("a"), b("x")])
    );
    // Switching to RESP2 while subscribed enters subscribed mode.
    assert!(matches!(c.cmd(&["HELLO", "2"]).await, F::Arr(_)));
    assert!(matches!(c.cmd(&["GET", "k"]).await, F::Err(_)));
    assert_eq!(c.cmd(&["PING"]).await, arr(&["pong", ""]));
    publisher.cmd(&["PUBLISH", "b", "y"]).await;
    assert_eq!(c.read().await, arr(&["message", "b", "y"]));
}

// ---------------------------------------------------------------------------
// The redis crate

#[tokio::test]
async fn redis_crate_async_pubsub() {
    let server = start().await;
    let client = redis::Client::open(server.url()).unwrap();
    let mut pubsub = client.get_async_pubsub().await.unwrap();
    pubsub
        .subscribe("redisson_lock__channel:{order-42}")
        .await
        .unwrap();
    pubsub.psubscribe("redisson_lock__channel:*").await.unwrap();
    let mut publisher = client.get_multiplexed_async_connection().await.unwrap();
    let receivers: i64 = redis::cmd("PUBLISH")
        .arg("redisson_lock__channel:{order-42}")
        .arg("0")
        .query_async(&mut publisher)
        .await
        .unwrap();
    assert_eq!(receivers, 2);
    let mut stream = pubsub.on_message();
    let first = tokio::time::timeout(WAIT, stream.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        first.get_channel_name(),
        "redisson_lock__channel:{order-42}"
    );
    assert!(!first.from_pattern());
    assert_eq!(first.get_payload::<String>().unwrap(), "0");
    let second = tokio::time::timeout(WAIT, stream.next())
        .await
        .unwrap()
        .unwrap();
    assert!(second.from_pattern());
    assert_eq!(
        second.get_pattern::<String>().unwrap(),
        "redisson_lock__channel:*"
    );
    drop(stream);
    pubsub
        .unsubscribe("redisson_lock__channel:{order-42}")
        .await
        .unwrap();
    pubsub
        .punsubscribe("redisson_lock__channel:*")
        .await
        .unwrap();
    let receivers: i64 = redis::cmd("PUBLISH")
        .arg("redisson_lock__channel:{order-42}")
        .arg("0")
        .query_async(&mut publisher)
        .await
        .unwrap();
    assert_eq!(receivers, 0);
}

#[tokio::test]
async fn redis_crate_resp3_push() {
    let server = start().await;
    let client = redis::Client::open(format!("{}?protocol=resp3", server.url())).unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let config = redis::AsyncConnectionConfig::new().set_push_sender(tx);
    let mut con = client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .unwrap();
    con.subscribe("wake").await.unwrap();
    con.psubscribe("wa*").await.unwrap();
    // The same connection keeps serving commands.
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .query_async(&mut con)
        .await
        .unwrap();
    let mut publisher = client.get_multiplexed_async_connection().await.unwrap();
    let n: i64 = redis::cmd("PUBLISH")
        .arg("wake")
        .arg("up")
        .query_async(&mut publisher)
        .await
        .unwrap();
    assert_eq!(n, 2);
    let mut kinds = Vec::new();
    while kinds.len() < 2 {
        let info = tokio::time::timeout(WAIT, rx.recv())
            .await
            .unwrap()
            .unwrap();
        if matches!(
            info.kind,
            redis::PushKind::Message | redis::PushKind::PMessage
        ) {
            kinds.push((info.kind.clone(), info.data.len()));
        }
    }
    assert_eq!(
        kinds,
        vec![
            (redis::PushKind::Message, 2),
            (redis::PushKind::PMessage, 3)
        ]
    );
    let v: String = redis::cmd("GET")
        .arg("k")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(v, "v");
}

/// The lock wake-up path: Redisson's unlock script deletes the lock and
/// PUBLISHes on the lock's channel from inside Lua.
#[tokio::test]
async fn unlock_script_wakes_the_waiter() {
    let server = start().await;
    let mut waiter = Conn::open(server.addr()).await;
    waiter
        .send(&["SUBSCRIBE", "redisson_lock__channel:{res}"])
        .await;
    waiter.read().await;
    let mut owner = Conn::open(server.addr()).await;
    owner.cmd(&["HSET", "{res}", "owner-1:1", "1"]).await;
    let unlock = "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; \
                  local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); \
                  if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; \
                  else redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; end; \
                  return nil;";
    let started = Instant::now();
    assert_eq!(
        owner
            .cmd(&[
                "EVAL",
                unlock,
                "2",
                "{res}",
                "redisson_lock__channel:{res}",
                "0",
                "30000",
                "owner-1:1",
            ])
            .await,
        F::Int(1)
    );
    assert_eq!(
        waiter.read().await,
        arr(&["message", "redisson_lock__channel:{res}", "0"])
    );
    assert!(started.elapsed() < Duration::from_secs(1));
}

// ---------------------------------------------------------------------------
// Ordering and slow subscribers

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_from_one_publisher_arrive_in_order() {
    const N: usize = 5000;
    let server = start().await;
    let mut subs = Vec::new();
    for i in 0..3 {
        let mut c = Conn::open(server.addr()).await;
        if i == 2 {
            c.send(&["PSUBSCRIBE", "ord*"]).await;
        } else {
            c.send(&["SUBSCRIBE", "order"]).await;
        }
        c.read().await;
        subs.push(c);
    }
    let mut publisher = Conn::open(server.addr()).await;
    // One pipelined burst.
    let mut batch = Vec::new();
    for i in 0..N {
        let msg = i.to_string();
        batch.extend_from_slice(
            format!(
                "*3\r\n$7\r\nPUBLISH\r\n$5\r\norder\r\n${}\r\n{msg}\r\n",
                msg.len()
            )
            .as_bytes(),
        );
    }
    publisher.s.write_all(&batch).await.unwrap();
    for i in 0..N {
        assert_eq!(publisher.read().await, F::Int(3), "reply {i}");
    }
    for (n, sub) in subs.iter_mut().enumerate() {
        for i in 0..N {
            let f = sub.read().await;
            let F::Arr(items) = f else { panic!("{f:?}") };
            assert_eq!(
                items.last(),
                Some(&b(&i.to_string())),
                "subscriber {n} message {i}"
            );
        }
    }
}

fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// A subscriber that never reads while 100 MB are published to it is
/// disconnected alone; memory stays bounded by the pubsub hard limit; the
/// other subscribers get every message in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_subscriber_is_disconnected_alone() {
    const MESSAGES: usize = 100 * 1024;
    const SIZE: usize = 1024;
    let server = start().await;
    let addr = server.addr();

    // The slow one: subscribes, then never reads again.
    let mut slow = Conn::open(addr).await;
    slow.send(&["SUBSCRIBE", "firehose"]).await;
    slow.read().await;

    // The fast one, through the redis crate, counts what it has seen.
    let seen = Arc::new(AtomicUsize::new(0));
    let client = redis::Client::open(server.url()).unwrap();
    let mut pubsub = client.get_async_pubsub().await.unwrap();
    pubsub.subscribe("firehose").await.unwrap();
    let counter = seen.clone();
    let reader = tokio::spawn(async move {
        let mut stream = pubsub.into_on_message();
        for i in 0..MESSAGES {
            let msg = tokio::time::timeout(WAIT, stream.next())
                .await
                .expect("message in time")
                .expect("stream open");
            let payload: Vec<u8> = msg.get_payload().unwrap();
            assert_eq!(payload.len(), SIZE);
            let seq: usize = std::str::from_utf8(&payload[..10])
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(seq, i, "messages out of order");
            counter.store(i + 1, Ordering::Relaxed);
        }
        // Still subscribed while the test looks at the server.
        stream
    });

    let rss_before = rss_bytes();
    let mut rss_peak = rss_before;
    let mut backlog_peak = 0usize;
    let mut publisher = Conn::open(addr).await;
    let filler = "x".repeat(SIZE - 10);
    let mut sent = 0;
    while sent < MESSAGES {
        // Stay within a few MB of the fast reader: it must not be the one
        // that falls behind.
        while sent - seen.load(Ordering::Relaxed) > 4096 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let mut batch = Vec::new();
        for i in sent..(sent + 256).min(MESSAGES) {
            let msg = format!("{i:010}{filler}");
            batch.extend_from_slice(
                format!("*3\r\n$7\r\nPUBLISH\r\n$8\r\nfirehose\r\n${SIZE}\r\n{msg}\r\n").as_bytes(),
            );
        }
        publisher.s.write_all(&batch).await.unwrap();
        for _ in sent..(sent + 256).min(MESSAGES) {
            let F::Int(receivers) = publisher.read().await else {
                panic!()
            };
            assert!((1..=2).contains(&receivers));
        }
        sent = (sent + 256).min(MESSAGES);
        for backlog in server.backlogs() {
            backlog_peak = backlog_peak.max(backlog.bytes);
        }
        rss_peak = rss_peak.max(rss_bytes());
    }
    let _fast = reader.await.unwrap();

    // Only the fast subscriber is left.
    eventually(|| async move { numsub(addr, "firehose").await == 1 }).await;
    // The slow client's socket is closed after what was in flight.
    let mut drained = 0usize;
    loop {
        let mut buf = vec![0u8; 1 << 16];
        match tokio::time::timeout(WAIT, slow.s.read(&mut buf)).await {
            Ok(Ok(0)) => break,
            Ok(Ok(n)) => drained += n,
            Ok(Err(_)) => break,
            Err(_) => panic!("slow subscriber never closed"),
        }
    }
    assert!(
        drained < 64 << 20,
        "{drained} bytes reached the slow client"
    );
    let hard_limit = 32 << 20;
    assert!(
        backlog_peak <= hard_limit + 2 * SIZE,
        "backlog reached {backlog_peak}"
    );
    let growth = rss_peak.saturating_sub(rss_before);
    assert!(
        growth < 80 << 20,
        "RSS grew by {} MB while 100 MB were published",
        growth >> 20
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soft_limit_disconnects_after_its_grace_period() {
    let server = start().await;
    let addr = server.addr();
    let mut admin = Conn::open(addr).await;
    assert_eq!(
        admin
            .cmd(&[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "pubsub 0 256kb 1"
            ])
            .await,
        F::Simple("OK".into())
    );
    let F::Arr(got) = admin
        .cmd(&["CONFIG", "GET", "client-output-buffer-limit"])
        .await
    else {
        panic!()
    };
    assert_eq!(
        got[1],
        b("normal 0 0 0 slave 268435456 67108864 60 pubsub 0 262144 1")
    );
    let mut slow = Conn::open(addr).await;
    slow.send(&["SUBSCRIBE", "c"]).await;
    slow.read().await;
    let big = "y".repeat(64 * 1024);
    let started = Instant::now();
    // Far over the soft limit at once (the socket buffers fill first), but
    // no hard limit: the client stays until the grace period has passed.
    loop {
        admin.cmd(&["PUBLISH", "c", &big]).await;
        if numsub(addr, "c").await == 0 {
            break;
        }
        assert!(started.elapsed() < WAIT, "never disconnected");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "closed after {:?}, before the grace period",
        started.elapsed()
    );
}

/// A subscriber that fell behind past the soft limit and caught up again
/// starts a new grace period the next time it falls behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soft_limit_grace_starts_again_after_catching_up() {
    let server = start().await;
    let addr = server.addr();
    let mut admin = Conn::open(addr).await;
    admin
        .cmd(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "pubsub 0 256kb 1",
        ])
        .await;
    let mut slow = Conn::open(addr).await;
    let id = match slow.cmd(&["CLIENT", "ID"]).await {
        F::Int(id) => id as u64,
        other => panic!("{other:?}"),
    };
    slow.send(&["SUBSCRIBE", "c"]).await;
    slow.read().await;
    let over_soft_since = || {
        server
            .backlogs()
            .into_iter()
            .find(|b| b.client == id)
            .map(|b| b.over_soft_since)
            .expect("still connected")
    };
    let big = "y".repeat(64 * 1024);
    // Behind past the soft limit: its grace period starts.
    while over_soft_since() == 0 {
        admin.cmd(&["PUBLISH", "c", &big]).await;
    }
    // Caught up, and past the grace period.
    while slow.read_within(Duration::from_millis(200)).await.is_some() {}
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(admin.cmd(&["PUBLISH", "c", "small"]).await, F::Int(1));
    assert_eq!(slow.read().await, arr(&["message", "c", "small"]));
    assert_eq!(
        over_soft_since(),
        0,
        "the grace period ended with the backlog"
    );
    // Behind again: a new grace period, not the old one's end.
    while over_soft_since() == 0 {
        admin.cmd(&["PUBLISH", "c", &big]).await;
    }
    admin.cmd(&["PUBLISH", "c", &big]).await;
    assert_eq!(numsub(addr, "c").await, 1, "disconnected at once");
}

// ---------------------------------------------------------------------------
// Keyspace notifications

async fn keyspace_events(c: &mut Conn, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..n {
        match c.read().await {
            F::Arr(items) => {
                let words: Vec<String> = items[2..]
                    .iter()
                    .map(|f| match f {
                        F::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
                        other => panic!("{other:?}"),
                    })
                    .collect();
                out.push(words.join(" "));
            }
            other => panic!("{other:?}"),
        }
    }
    out
}

#[tokio::test]
async fn keyspace_notifications() {
    let server = start().await;
    let mut c = Conn::open(server.addr()).await;
    // Off by default: nothing is published.
    let mut sub = Conn::open(server.addr()).await;
    sub.send(&["PSUBSCRIBE", "__key*__:*"]).await;
    sub.read().await;
    c.cmd(&["SET", "quiet", "1"]).await;
    sub.quiet().await;

    c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KEA"])
        .await;
    c.cmd(&["SET", "k", "1", "EX", "100"]).await;
    assert_eq!(
        keyspace_events(&mut sub, 4).await,
        [
            "__keyspace@0__:k set",
            "__keyevent@0__:set k",
            "__keyspace@0__:k expire",
            "__keyevent@0__:expire k"
        ]
    );
    c.cmd(&["HSET", "h", "f", "1"]).await;
    c.cmd(&["HDEL", "h", "f"]).await;
    c.cmd(&["RENAME", "k", "k2"]).await;
    c.cmd(&["PERSIST", "k2"]).await;
    c.cmd(&["INCRBY", "n", "5"]).await;
    c.cmd(&["DEL", "k2", "n"]).await;
    let got = keyspace_events(&mut sub, 18).await;
    let keyspace: Vec<&str> = got
        .iter()
        .filter(|e| e.starts_with("__keyspace"))
        .map(|s| s.as_str())
        .collect();
    assert_eq!(
        keyspace,
        [
            "__keyspace@0__:h hset",
            "__keyspace@0__:h hdel",
            "__keyspace@0__:h del",
            "__keyspace@0__:k rename_from",
            "__keyspace@0__:k2 rename_to",
            "__keyspace@0__:k2 persist",
            "__keyspace@0__:n incrby",
            "__keyspace@0__:k2 del",
            "__keyspace@0__:n del",
        ]
    );
    // Only key events, only for expiry: `Ex`. The timer wheel reclaims
    // the key without anyone touching it.
    c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "Ex"])
        .await;
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "notify-keyspace-events"]).await,
        arr(&["notify-keyspace-events", "xE"])
    );
    c.cmd(&["SELECT", "3"]).await;
    c.cmd(&["SET", "lease", "v", "PX", "30"]).await;
    assert_eq!(
        keyspace_events(&mut sub, 1).await,
        ["__keyevent@3__:expired lease"]
    );
    // A read of a key past its deadline: `expired` (from the wheel or
    // from the read itself, whichever comes first), then `keymiss`.
    c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "Exm"])
        .await;
    c.cmd(&["SET", "lazy", "v", "PX", "1"]).await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    c.cmd(&["GET", "lazy"]).await;
    let got = keyspace_events(&mut sub, 2).await;
    assert_eq!(
        got,
        ["__keyevent@3__:expired lazy", "__keyevent@3__:keymiss lazy"]
    );
    // `n` adds new-key events, which `A` does not include.
    c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KAn"])
        .await;
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "notify-keyspace-events"]).await,
        arr(&["notify-keyspace-events", "AK"])
    );
    c.cmd(&["SET", "fresh", "1"]).await;
    assert_eq!(
        keyspace_events(&mut sub, 2).await,
        ["__keyspace@3__:fresh new", "__keyspace@3__:fresh set"]
    );
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KEq"]).await,
        F::Err("ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into())
    );
}

/// Confirmations of one command come out in order and before the next
/// reply, however many there are (more than one write's worth here).
#[tokio::test]
async fn many_channels_in_one_subscribe() {
    const N: usize = 40_000;
    let server = start().await;
    let mut c = Conn::open(server.addr()).await;
    let names: Vec<String> = (0..N).map(|i| format!("channel:{i:06}")).collect();
    let mut args = vec!["SUBSCRIBE"];
    args.extend(names.iter().map(|s| s.as_str()));
    c.send(&args).await;
    c.send(&["PING"]).await;
    for (i, name) in names.iter().enumerate() {
        assert_eq!(c.read().await, confirm("subscribe", name, i as i64 + 1));
    }
    assert_eq!(c.read().await, arr(&["pong", ""]));
    let mut other = Conn::open(server.addr()).await;
    assert_eq!(
        other.cmd(&["PUBLISH", "channel:039999", "last"]).await,
        F::Int(1)
    );
    assert_eq!(c.read().await, arr(&["message", "channel:039999", "last"]));
    c.send(&["UNSUBSCRIBE"]).await;
    for (i, name) in names.iter().enumerate() {
        assert_eq!(
            c.read().await,
            confirm("unsubscribe", name, (N - i - 1) as i64)
        );
    }
    assert_eq!(numsub(server.addr(), "channel:000000").await, 0);
}

/// Messages to idle subscribers: the same frames in RESP2 and RESP3, in
/// order, counted in INFO's output bytes, and held back like replies
/// while a delay is injected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_subscribers_get_every_message() {
    const MESSAGES: usize = 200;
    let server = start().await;
    let mut resp2 = Conn::open(server.addr()).await;
    assert_eq!(
        resp2.cmd(&["SUBSCRIBE", "news"]).await,
        confirm("subscribe", "news", 1)
    );
    let mut resp3 = Conn::open(server.addr()).await;
    assert!(matches!(resp3.cmd(&["HELLO", "3"]).await, F::Map(_)));
    assert_eq!(
        resp3.cmd(&["SUBSCRIBE", "news"]).await,
        push(vec![b("subscribe"), b("news"), F::Int(1)])
    );
    let mut publisher = Conn::open(server.addr()).await;
    let output_bytes = |info: F| match info {
        F::Bulk(text) => {
            common::info_number(&String::from_utf8(text).unwrap(), "total_net_output_bytes")
        }
        other => panic!("{other:?}"),
    };
    let before = output_bytes(publisher.cmd(&["INFO", "stats"]).await);
    let mut frames = 0;
    for i in 0..MESSAGES {
        let message = format!("m{i}");
        assert_eq!(
            publisher.cmd(&["PUBLISH", "news", &message]).await,
            F::Int(2)
        );
        assert_eq!(resp2.read().await, arr(&["message", "news", &message]));
        assert_eq!(
            resp3.read().await,
            push(vec![b("message"), b("news"), b(&message)])
        );
        frames += format!(
            "*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n${}\r\n{message}\r\n",
            message.len()
        )
        .len();
    }
    let after = output_bytes(publisher.cmd(&["INFO", "stats"]).await);
    assert!(
        after - before >= 2 * frames as u64,
        "{} bytes counted for {} written",
        after - before,
        2 * frames
    );

    server.delay_replies(Duration::from_millis(150));
    publisher.send(&["PUBLISH", "news", "late"]).await;
    assert_eq!(resp2.read_within(Duration::from_millis(100)).await, None);
    assert_eq!(resp2.read().await, arr(&["message", "news", "late"]));
    assert_eq!(publisher.read().await, F::Int(2));
    server.delay_replies(Duration::ZERO);
    assert_eq!(
        resp3.read().await,
        push(vec![b("message"), b("news"), b("late")])
    );
}
