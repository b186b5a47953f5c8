//! Client-side caching over real sockets: CLIENT TRACKING in default and
//! broadcast modes, RESP3 pushes and RESP2 redirection to a
//! `__redis__:invalidate` subscriber, OPTIN/OPTOUT with CLIENT CACHING,
//! NOLOOP, flushes, expiry, scripts, broken redirects, and what CLIENT
//! LIST, TRACKINGINFO, GETREDIR and INFO show.

mod common;

use std::time::Duration;

use common::resp::{Conn, F, arr, b};

fn ok() -> F {
    F::Simple("OK".into())
}

fn int(n: i64) -> F {
    F::Int(n)
}

/// `>2 invalidate [keys]`.
fn invalidate(keys: &[&str]) -> F {
    F::Push(vec![b("invalidate"), arr(keys)])
}

/// A RESP2 redirect target's message: `message __redis__:invalidate [keys]`.
fn message(keys: &[&str]) -> F {
    F::Arr(vec![b("message"), b("__redis__:invalidate"), arr(keys)])
}

async fn resp3(addr: std::net::SocketAddr) -> Conn {
    let mut c = Conn::open(addr).await;
    assert!(matches!(c.cmd(&["HELLO", "3"]).await, F::Map(_)));
    c
}

/// A RESP3 client tracking in default mode, and a RESP2 one to write with.
async fn tracking(addr: std::net::SocketAddr) -> (Conn, Conn) {
    let mut r = resp3(addr).await;
    assert_eq!(r.cmd(&["CLIENT", "TRACKING", "on"]).await, ok());
    (r, Conn::open(addr).await)
}

/// A RESP2 client subscribed to the invalidation channel, and its id.
async fn redirect_target(addr: std::net::SocketAddr) -> (Conn, String) {
    let mut c = Conn::open(addr).await;
    let F::Int(id) = c.cmd(&["CLIENT", "ID"]).await else {
        panic!("no id");
    };
    assert_eq!(
        c.cmd(&["SUBSCRIBE", "__redis__:invalidate"]).await,
        F::Arr(vec![b("subscribe"), b("__redis__:invalidate"), int(1)])
    );
    (c, id.to_string())
}

/// A redirect target with its id, a RESP2 client to track and one to write.
async fn redirected(addr: std::net::SocketAddr) -> (Conn, String, Conn, Conn) {
    let (target, id) = redirect_target(addr).await;
    (target, id, Conn::open(addr).await, Conn::open(addr).await)
}

fn info_field(info: &F, name: &str) -> String {
    let F::Bulk(text) = info else {
        panic!("{info:?}");
    };
    let text = String::from_utf8_lossy(text);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in INFO"));
    line.to_string()
}

#[tokio::test]
async fn resp3_default_mode_invalidates_read_keys_once() {
    let server = common::start().await;
    let (mut r, mut w) = tracking(server.addr()).await;
    w.cmd(&["SET", "k", "1"]).await;
    w.cmd(&["SET", "unread", "1"]).await;
    assert_eq!(r.cmd(&["GET", "k"]).await, b("1"));
    w.cmd(&["SET", "unread", "2"]).await;
    w.cmd(&["SET", "k", "2"]).await;
    assert_eq!(r.read().await, invalidate(&["k"]));
    // The key is forgotten once told: a second write says nothing.
    w.cmd(&["SET", "k", "3"]).await;
    r.quiet().await;

    // The client's own write: the reply first, then the invalidation.
    assert_eq!(
        r.cmd(&["MGET", "k", "j"]).await,
        F::Arr(vec![b("3"), F::Nil])
    );
    assert_eq!(r.cmd(&["DEL", "k", "j"]).await, int(1));
    assert_eq!(r.read().await, invalidate(&["k"]));
    r.quiet().await;

    // Inside a transaction: EXEC's reply, then the invalidation.
    w.cmd(&["SET", "a", "1"]).await;
    r.cmd(&["GET", "a"]).await;
    r.cmd(&["MULTI"]).await;
    r.cmd(&["INCR", "a"]).await;
    assert_eq!(r.cmd(&["EXEC"]).await, F::Arr(vec![int(2)]));
    assert_eq!(r.read().await, invalidate(&["a"]));

    // NOLOOP: the client's own writes are not reported.
    assert_eq!(r.cmd(&["CLIENT", "TRACKING", "on", "NOLOOP"]).await, ok());
    r.cmd(&["GET", "a"]).await;
    r.cmd(&["SET", "a", "5"]).await;
    r.quiet().await;
}

#[tokio::test]
async fn resp2_redirect_gets_pubsub_messages_and_flush_nulls() {
    let server = common::start().await;
    let (mut target, id, mut r, mut w) = redirected(server.addr()).await;
    assert_eq!(
        r.cmd(&["CLIENT", "TRACKING", "on", "REDIRECT", &id]).await,
        ok()
    );
    assert_eq!(
        r.cmd(&["CLIENT", "GETREDIR"]).await,
        int(id.parse().unwrap())
    );
    w.cmd(&["MSET", "a", "1", "b", "2"]).await;
    r.cmd(&["MGET", "a", "b"]).await;
    w.cmd(&["INCR", "b"]).await;
    assert_eq!(target.read().await, message(&["b"]));
    // A RESP2 tracking client gets nothing on its own connection.
    r.quiet().await;
    w.cmd(&["FLUSHALL"]).await;
    assert_eq!(
        target.read().await,
        F::Arr(vec![b("message"), b("__redis__:invalidate"), F::Nil])
    );
    let info = w.cmd(&["INFO", "stats"]).await;
    assert_eq!(info_field(&info, "tracking_total_keys"), "0");
}

#[tokio::test]
async fn broadcast_batches_keys_per_prefix_per_command() {
    let server = common::start().await;
    let (mut target, id, mut r, mut w) = redirected(server.addr()).await;
    let on = ["CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", &id];
    assert_eq!(
        r.cmd(&[&on[..], &["PREFIX", "a:", "PREFIX", "b:"]].concat())
            .await,
        ok()
    );
    r.cmd(&["MULTI"]).await;
    for key in ["a:2", "a:1", "b:1", "c:1"] {
        r.cmd(&["INCR", key]).await;
    }
    r.cmd(&["EXEC"]).await;
    assert_eq!(target.read().await, message(&["a:1", "a:2"]));
    assert_eq!(target.read().await, message(&["b:1"]));
    target.quiet().await;
    // ON again adds prefixes.
    assert_eq!(r.cmd(&[&on[..], &["PREFIX", "c:"]].concat()).await, ok());
    w.cmd(&["SET", "c:9", "x"]).await;
    assert_eq!(target.read().await, message(&["c:9"]));
    assert_eq!(
        r.cmd(&[&on[..], &["PREFIX", "a"]].concat()).await,
        F::Err("ERR Prefix 'a' overlaps with an existing prefix 'a:'. Prefixes for a single client must not overlap.".into())
    );
    let info = w.cmd(&["INFO", "stats"]).await;
    assert_eq!(info_field(&info, "tracking_total_prefixes"), "3");

    // NOLOOP in broadcast mode; expiry is reported (the server did it).
    r.cmd(&["CLIENT", "TRACKING", "off"]).await;
    r.cmd(&[&on[..], &["NOLOOP"]].concat()).await;
    r.cmd(&["SET", "mine", "1", "PX", "1"]).await;
    w.cmd(&["SET", "theirs", "1"]).await;
    assert_eq!(target.read().await, message(&["theirs"]));
    assert_eq!(target.read().await, message(&["mine"]));
}

#[tokio::test]
async fn optin_and_optout_follow_client_caching() {
    let server = common::start().await;
    let mut r = resp3(server.addr()).await;
    let mut w = Conn::open(server.addr()).await;
    w.cmd(&["MSET", "x", "1", "y", "1"]).await;
    r.cmd(&["CLIENT", "TRACKING", "on", "OPTIN"]).await;
    r.cmd(&["GET", "x"]).await;
    assert_eq!(r.cmd(&["CLIENT", "CACHING", "yes"]).await, ok());
    r.cmd(&["GET", "y"]).await;
    w.cmd(&["MSET", "x", "2", "y", "2"]).await;
    assert_eq!(r.read().await, invalidate(&["y"]));
    r.quiet().await;
    assert_eq!(
        r.cmd(&["CLIENT", "CACHING", "no"]).await,
        F::Err(
            "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.".into()
        )
    );

    r.cmd(&["CLIENT", "TRACKING", "off"]).await;
    r.cmd(&["CLIENT", "TRACKING", "on", "OPTOUT"]).await;
    r.cmd(&["CLIENT", "CACHING", "no"]).await;
    r.cmd(&["GET", "x"]).await;
    r.cmd(&["GET", "y"]).await;
    w.cmd(&["MSET", "x", "3", "y", "3"]).await;
    assert_eq!(r.read().await, invalidate(&["y"]));
    r.quiet().await;
}

#[tokio::test]
async fn scripts_track_their_declared_keys_when_they_read() {
    let server = common::start().await;
    let (mut r, mut w) = tracking(server.addr()).await;
    r.cmd(&["EVAL", "redis.call('set', 'k3', 'v')", "2", "k1", "k2"])
        .await;
    w.cmd(&["MSET", "k2", "1", "k1", "1"]).await;
    r.quiet().await;
    r.cmd(&["EVAL", "redis.call('get', 'k3')", "2", "k1", "k2"])
        .await;
    w.cmd(&["MSET", "k2", "2", "k1", "2"]).await;
    assert_eq!(r.read().await, invalidate(&["k2"]));
    assert_eq!(r.read().await, invalidate(&["k1"]));
}

#[tokio::test]
async fn a_vanished_redirect_target_is_reported() {
    let server = common::start().await;
    let (mut target, id) = redirect_target(server.addr()).await;
    let mut r = resp3(server.addr()).await;
    let mut w = Conn::open(server.addr()).await;
    r.cmd(&["CLIENT", "TRACKING", "on", "REDIRECT", &id]).await;
    r.cmd(&["GET", "k"]).await;
    assert_eq!(target.cmd(&["QUIT"]).await, ok());
    let gone = async {
        while w.cmd(&["CLIENT", "LIST", "ID", &id]).await != b("") {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(common::WAIT, gone).await.unwrap();
    w.cmd(&["SET", "k", "1"]).await;
    assert_eq!(
        r.read().await,
        F::Push(vec![b("tracking-redir-broken"), int(id.parse().unwrap())])
    );
    let F::Map(info) = r.cmd(&["CLIENT", "TRACKINGINFO"]).await else {
        panic!("no map");
    };
    assert_eq!(info[0].1, F::Arr(vec![b("on"), b("broken_redirect")]));
    let F::Bulk(list) = w.cmd(&["CLIENT", "LIST"]).await else {
        panic!("no list");
    };
    let list = String::from_utf8(list).unwrap();
    assert!(
        list.lines()
            .any(|l| l.contains(" flags=tR ") && l.contains(&format!(" redir={id} "))),
        "{list}"
    );
}

#[tokio::test]
async fn the_table_limit_evicts_keys_with_invalidations() {
    let server = common::start().await;
    let (mut r, mut admin) = tracking(server.addr()).await;
    r.cmd(&["MGET", "a", "b", "c"]).await;
    let info = admin.cmd(&["INFO"]).await;
    assert_eq!(info_field(&info, "tracking_total_keys"), "3");
    assert_eq!(info_field(&info, "tracking_clients"), "1");
    admin
        .cmd(&["CONFIG", "SET", "tracking-table-max-keys", "1"])
        .await;
    for _ in 0..2 {
        assert!(matches!(r.read().await, F::Push(_)));
    }
    r.quiet().await;
    let info = admin.cmd(&["INFO", "stats"]).await;
    assert_eq!(info_field(&info, "tracking_total_keys"), "1");
}

#[tokio::test]
async fn client_reply_off_and_skip_still_let_invalidations_through() {
    let server = common::start().await;
    let (mut r, mut w) = tracking(server.addr()).await;
    r.cmd(&["GET", "k"]).await;
    r.send(&["CLIENT", "REPLY", "OFF"]).await;
    r.send(&["GET", "k"]).await;
    r.quiet().await;
    w.cmd(&["SET", "k", "1"]).await;
    assert_eq!(r.read().await, invalidate(&["k"]));
    assert_eq!(r.cmd(&["CLIENT", "REPLY", "ON"]).await, ok());
    // SKIP: neither it nor the next command is answered.
    r.send(&["CLIENT", "REPLY", "SKIP"]).await;
    r.send(&["ECHO", "skipped"]).await;
    assert_eq!(r.cmd(&["ECHO", "answered"]).await, b("answered"));
    assert_eq!(
        r.cmd(&["CLIENT", "REPLY", "MAYBE"]).await,
        F::Err("ERR syntax error".into())
    );
}
