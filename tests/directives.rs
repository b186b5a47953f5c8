//! Every redis.conf directive of Redis 7.0, differentially: CONFIG GET *
//! lists what redis-server 7.0 lists, with its defaults, and CONFIG SET
//! checks values with Redis's error texts. Skips without redis-server
//! unless `RLOCKD_REQUIRE_REDIS=1`.

mod common;
mod refserver;

use std::collections::BTreeMap;
use std::net::SocketAddr;

use refserver::{RedisServer, Rlockd};

/// Directives other work in issue #29 adds (TLS, snapshots, protected
/// configs); until it lands rlockd may lack them.
const PENDING: &[&str] = &[
    "tls-auth-clients",
    "tls-ca-cert-dir",
    "tls-ca-cert-file",
    "tls-cert-file",
    "tls-ciphers",
    "tls-ciphersuites",
    "tls-client-cert-file",
    "tls-client-key-file",
    "tls-client-key-file-pass",
    "tls-cluster",
    "tls-dh-params-file",
    "tls-key-file",
    "tls-key-file-pass",
    "tls-port",
    "tls-prefer-server-ciphers",
    "tls-protocols",
    "tls-replication",
    "tls-session-cache-size",
    "tls-session-cache-timeout",
    "tls-session-caching",
    "rdbchecksum",
    "rdbcompression",
    "rdb-del-sync-files",
    "rdb-save-incremental-fsync",
    "stop-writes-on-bgsave-error",
    "appenddirname",
    "aof-use-rdb-preamble",
    "enable-protected-configs",
];

/// rlockd's own directives, which Redis lacks.
const OURS: &[&str] = &[
    "enable-clock-control",
    "lock-restart-grace-ms",
    "lua-heap-limit",
    "metrics-port",
    "script-kill-rollback",
];

/// Values that differ by instance, not by default: each server's own
/// port and directory, and the reference's start-up flags.
const PER_INSTANCE: &[&str] = &["port", "dir", "loglevel", "io-threads", "save"];

fn request(addr: SocketAddr, args: &[&str]) -> redis::RedisResult<redis::Value> {
    let mut con = redis::Client::open(format!("redis://{addr}"))?.get_connection()?;
    redis::cmd(args[0]).arg(&args[1..]).query(&mut con)
}

/// A reply in a form both servers' can be compared in: the value, or the
/// error's whole text.
fn reply(con: &mut redis::Connection, args: &[&str]) -> String {
    match redis::cmd(args[0])
        .arg(&args[1..])
        .query::<redis::Value>(con)
    {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("{:?} {}", e.code(), e.detail().unwrap_or_default()),
    }
}

fn config_get_all(addr: SocketAddr) -> BTreeMap<String, String> {
    let redis::Value::Array(items) = request(addr, &["CONFIG", "GET", "*"]).unwrap() else {
        panic!("CONFIG GET * answers an array");
    };
    let text = |v: &redis::Value| match v {
        redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("a bulk string, not {other:?}"),
    };
    items
        .chunks(2)
        .map(|pair| (text(&pair[0]), text(&pair[1])))
        .collect()
}

#[test]
fn config_get_lists_what_redis_lists_with_its_defaults() {
    let Some(bin) = refserver::redis_server_path("directives") else {
        return;
    };
    let redis = RedisServer::start(&bin);
    let ours = Rlockd::start();
    let theirs = config_get_all(redis.addr);
    let mine = config_get_all(ours.addr);
    assert!(theirs.len() >= 192, "redis-server 7.0 lists 192");
    let missing: Vec<&String> = theirs
        .keys()
        .filter(|k| !mine.contains_key(*k) && !PENDING.contains(&k.as_str()))
        .collect();
    assert!(missing.is_empty(), "rlockd lacks {missing:?}");
    let extra: Vec<&String> = mine
        .keys()
        .filter(|k| !theirs.contains_key(*k) && !OURS.contains(&k.as_str()))
        .collect();
    assert!(extra.is_empty(), "Redis lacks {extra:?}");
    let differ: Vec<(&String, &String, &String)> = theirs
        .iter()
        .filter_map(|(k, v)| Some((k, v, mine.get(k)?)))
        .filter(|(k, v, m)| v != m && !PER_INSTANCE.contains(&k.as_str()))
        .collect();
    assert!(differ.is_empty(), "(name, Redis's, rlockd's): {differ:?}");
}

/// Settings the sweep leaves alone: changing them would cut the test's
/// own connection or change where the reference writes.
const UNSWEPT: &[&str] = &[
    "port",
    "bind",
    "dir",
    "requirepass",
    "appendonly",
    "maxclients",
    "timeout",
    "save",
    "dbfilename",
    "appendfilename",
];

/// Where rlockd answers otherwise on purpose (README, "Differences from
/// Redis 7.0"): the value it cannot honour, and what it refuses.
const DIFFERENT: &[(&str, &str)] = &[
    ("proto-max-bulk-len", "1mb"),
    ("proto-max-bulk-len", "2147483648"),
    ("acl-pubsub-default", "allchannels"),
];

/// Every setting both list, set to a spread of good and bad values on
/// both servers: the same replies (Redis's error texts), and the same
/// value read back. Each is put back after each try.
#[test]
fn config_set_checks_values_as_redis_does() {
    let Some(bin) = refserver::redis_server_path("directives") else {
        return;
    };
    let redis = RedisServer::start(&bin);
    let ours = Rlockd::start();
    let connect = |addr: SocketAddr| {
        redis::Client::open(format!("redis://{addr}"))
            .unwrap()
            .get_connection()
            .unwrap()
    };
    let (mut theirs, mut mine) = (connect(redis.addr), connect(ours.addr));
    let names: Vec<String> = config_get_all(redis.addr)
        .into_keys()
        .filter(|k| !UNSWEPT.contains(&k.as_str()) && !PENDING.contains(&k.as_str()))
        .collect();
    let values = [
        "abc",
        "-1",
        "0",
        "1",
        "yes",
        "NO",
        "101",
        "2147483648",
        "1mb",
        "10%",
        "",
        "no one",
        "1 2 3",
        "local",
        "99.9",
    ];
    let mut compared = 0;
    let mut wrong = Vec::new();
    for name in &names {
        let get = ["CONFIG", "GET", name.as_str()];
        let original = reply(&mut theirs, &get);
        let restore = config_get_all(redis.addr)[name.as_str()].clone();
        for value in values {
            if DIFFERENT.contains(&(name.as_str(), value)) {
                continue;
            }
            let set = ["CONFIG", "SET", name.as_str(), value];
            let want = reply(&mut theirs, &set);
            let got = reply(&mut mine, &set);
            if got != want {
                wrong.push(format!(
                    "CONFIG SET {name} {value:?}:\n  rlockd {got}\n  Redis  {want}"
                ));
            }
            let (got, want) = (reply(&mut mine, &get), reply(&mut theirs, &get));
            if got != want && !PER_INSTANCE.contains(&name.as_str()) {
                wrong.push(format!(
                    "CONFIG GET {name} after {value:?}:\n  rlockd {got}\n  Redis  {want}"
                ));
            }
            for con in [&mut theirs, &mut mine] {
                reply(con, &["CONFIG", "SET", name.as_str(), &restore]);
            }
            compared += 1;
        }
        assert_eq!(reply(&mut theirs, &get), original, "{name} put back");
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(compared > 2000, "{compared} settings compared");
}
