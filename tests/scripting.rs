//! Lua scripting over real sockets: the seed documents' lock scripts,
//! atomicity, busy scripts and the sandbox.

mod common;

use std::time::Duration;

use common::{cmd, connect, err, start};
use redis::{Script, Value};

/// Redisson's reentrant lock acquire, as in the seed documents.
const LOCK: &str = "if (redis.call('exists', KEYS[1]) == 0) then \
    redis.call('hincrby', KEYS[1], ARGV[2], 1); \
    redis.call('pexpire', KEYS[1], ARGV[1]); \
    return nil; \
end; \
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then \
    redis.call('hincrby', KEYS[1], ARGV[2], 1); \
    redis.call('pexpire', KEYS[1], ARGV[1]); \
    return nil; \
end; \
return redis.call('pttl', KEYS[1]);";

/// Redisson's unlock with the wake-up PUBLISH, as in the seed documents.
const UNLOCK: &str = "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then \
    return nil;\
end; \
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); \
if (counter > 0) then \
    redis.call('pexpire', KEYS[1], ARGV[2]); \
    return 0; \
else \
    redis.call('del', KEYS[1]); \
    redis.call('publish', KEYS[2], ARGV[1]); \
    return 1; \
end; \
return nil;";

/// Compare-and-delete release of a SET NX PX lock (seed 001).
const RELEASE: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/// Runs the seed lock script for `owner` on `name` (30 s lease).
async fn lock_as(
    c: &mut redis::aio::MultiplexedConnection,
    name: &str,
    owner: &str,
) -> Option<i64> {
    Script::new(LOCK)
        .key(name)
        .arg(30000)
        .arg(owner)
        .invoke_async(c)
        .await
        .unwrap()
}

/// Runs the seed unlock script for `owner` on `name`, publishing on `chan`.
async fn unlock_as(
    c: &mut redis::aio::MultiplexedConnection,
    name: &str,
    chan: &str,
    owner: &str,
) -> Option<i64> {
    Script::new(UNLOCK)
        .key(name)
        .key(chan)
        .arg(0)
        .arg(30000)
        .arg(owner)
        .invoke_async(c)
        .await
        .unwrap()
}

#[tokio::test]
async fn reentrant_lock_scripts() {
    let server = start().await;
    let mut c = connect(&server).await;
    let (me, other) = ("uuid-1:1", "uuid-2:7");
    let chan = "redisson_lock__channel:{anyLock}";
    // EVALSHA first: NOSCRIPT, then the client loads it and retries.
    assert_eq!(lock_as(&mut c, "anyLock", me).await, None, "acquired");
    assert_eq!(lock_as(&mut c, "anyLock", me).await, None, "re-entered");
    assert_eq!(
        cmd::<String>(&mut c, &["HGET", "anyLock", me])
            .await
            .unwrap(),
        "2"
    );
    let pttl = lock_as(&mut c, "anyLock", other).await;
    assert!(
        matches!(pttl, Some(t) if t > 29_000 && t <= 30_000),
        "contender sees the pttl: {pttl:?}"
    );
    assert_eq!(
        unlock_as(&mut c, "anyLock", chan, other).await,
        None,
        "someone else cannot unlock"
    );
    assert_eq!(
        unlock_as(&mut c, "anyLock", chan, me).await,
        Some(0),
        "one level released"
    );
    assert_eq!(
        unlock_as(&mut c, "anyLock", chan, me).await,
        Some(1),
        "released"
    );
    assert_eq!(cmd::<i64>(&mut c, &["EXISTS", "anyLock"]).await.unwrap(), 0);
}

#[tokio::test]
async fn lease_expires() {
    let server = start().await;
    let mut c = connect(&server).await;
    let lock = Script::new(LOCK);
    let _: Option<i64> = lock
        .key("lease")
        .arg(60)
        .arg("a:1")
        .invoke_async(&mut c)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let got: Option<i64> = lock
        .key("lease")
        .arg(60)
        .arg("b:1")
        .invoke_async(&mut c)
        .await
        .unwrap();
    assert_eq!(
        got, None,
        "the lease ran out, so another owner gets the lock"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_exclusion_under_contention() {
    let server = start().await;
    let mut tasks = Vec::new();
    for worker in 0..8 {
        let mut c = connect(&server).await;
        tasks.push(tokio::spawn(async move {
            let release = Script::new(RELEASE);
            let token = format!("token-{worker}");
            for _ in 0..50 {
                loop {
                    let ok: Option<String> =
                        cmd(&mut c, &["SET", "mutex", &token, "NX", "PX", "5000"])
                            .await
                            .unwrap();
                    if ok.is_some() {
                        break;
                    }
                    tokio::task::yield_now().await;
                }
                // A deliberately non-atomic read-modify-write under the lock.
                let n: i64 = cmd::<Option<i64>>(&mut c, &["GET", "counter"])
                    .await
                    .unwrap()
                    .unwrap_or(0);
                cmd::<()>(&mut c, &["SET", "counter", &(n + 1).to_string()])
                    .await
                    .unwrap();
                let released: i64 = release
                    .key("mutex")
                    .arg(&token)
                    .invoke_async(&mut c)
                    .await
                    .unwrap();
                assert_eq!(released, 1);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let mut c = connect(&server).await;
    assert_eq!(cmd::<i64>(&mut c, &["GET", "counter"]).await.unwrap(), 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_are_atomic_across_shards_even_with_undeclared_keys() {
    let server = start().await;
    // Moves one unit from a declared key to an undeclared one in another
    // slot; the sum must never be seen torn.
    let transfer = Script::new(
        "local v = tonumber(redis.call('get', KEYS[1]) or '0') \
         redis.call('set', KEYS[1], v - 1) \
         redis.call('incr', ARGV[1]) return v",
    );
    let mut setup = connect(&server).await;
    cmd::<()>(&mut setup, &["MSET", "acct:a", "1000", "acct:b", "0"])
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let mut c = connect(&server).await;
        let t = transfer.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..100 {
                let _: i64 = t
                    .key("acct:a")
                    .arg("acct:b")
                    .invoke_async(&mut c)
                    .await
                    .unwrap();
            }
        }));
    }
    let mut reader = connect(&server).await;
    let checker = tokio::spawn(async move {
        let sum = Script::new("return redis.call('get', KEYS[1]) + redis.call('get', KEYS[2])");
        for _ in 0..200 {
            let s: i64 = sum
                .key("acct:a")
                .key("acct:b")
                .invoke_async(&mut reader)
                .await
                .unwrap();
            assert_eq!(s, 1000);
        }
    });
    for t in tasks {
        t.await.unwrap();
    }
    checker.await.unwrap();
    let vals: Vec<i64> = cmd(&mut setup, &["MGET", "acct:a", "acct:b"])
        .await
        .unwrap();
    assert_eq!(vals, vec![600, 400]);
}

/// A script that must start over undoes only what it changed in big
/// collections (each member it named, not a copy of the value), and
/// brings back a large-encoded key it emptied; small (compact) ones, kept
/// whole, come back too: every counter ends at exactly one application
/// per call, every size where it started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_scripts_undo_their_changes_to_big_collections() {
    let server = start().await;
    let mut setup = connect(&server).await;
    let long = "m".repeat(80);
    let fill = Script::new(
        "for i = 1, 300 do \
           redis.call('hset', KEYS[1], 'f' .. i, i) \
           redis.call('sadd', KEYS[2], 'm' .. i) \
           redis.call('zadd', KEYS[3], i, 'm' .. i) \
           redis.call('rpush', KEYS[4], 'e' .. i) \
         end \
         redis.call('zadd', KEYS[5], 1, ARGV[1]) \
         redis.call('hset', KEYS[6], ARGV[1], 'v') \
         redis.call('hset', KEYS[7], 'a', 0, 'b', 0) \
         redis.call('zadd', KEYS[8], 0, 'a', 0, 'b')",
    );
    let keys = [
        "{c}h",
        "{c}s",
        "{c}z",
        "{c}l",
        "{c}zlong",
        "{c}hlong",
        "{c}hsmall",
        "{c}zsmall",
    ];
    let mut call = fill.prepare_invoke();
    keys.iter().for_each(|k| {
        call.key(*k);
    });
    call.arg(&long)
        .invoke_async::<()>(&mut setup)
        .await
        .unwrap();
    // Each call changes members of every collection, empties and refills
    // two large-encoded keys, then reaches an undeclared key in a shard
    // below theirs ({e} is shard 3, {c} shard 69), where it may have to
    // start over.
    let work = Script::new(
        "redis.call('hincrby', KEYS[1], 'f1', 1) \
         redis.call('hset', KEYS[1], 'f2', ARGV[2]) \
         redis.call('hdel', KEYS[1], 'f3') \
         redis.call('hset', KEYS[1], 'f3', 'back') \
         redis.call('sadd', KEYS[2], 'call' .. ARGV[2]) \
         redis.call('srem', KEYS[2], 'm1') \
         redis.call('sadd', KEYS[2], 'm1') \
         redis.call('zincrby', KEYS[3], 1, 'm1') \
         redis.call('zadd', KEYS[3], 'GT', 'CH', ARGV[2], 'm2') \
         redis.call('lpush', KEYS[4], ARGV[2]) \
         redis.call('rpop', KEYS[4]) \
         redis.call('lset', KEYS[4], -1, 'tail') \
         redis.call('zrem', KEYS[5], ARGV[1]) \
         redis.call('zadd', KEYS[5], 1, ARGV[1]) \
         redis.call('hdel', KEYS[6], ARGV[1]) \
         redis.call('hset', KEYS[6], ARGV[1], 'v') \
         redis.call('hincrby', KEYS[7], 'a', 1) \
         redis.call('zincrby', KEYS[8], 1, 'a') \
         return redis.call('incr', ARGV[3])",
    );
    let (clients, calls) = (4, 100);
    let mut tasks = Vec::new();
    for client in 0..clients {
        let mut c = connect(&server).await;
        let (work, long) = (work.clone(), long.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..calls {
                let mut call = work.prepare_invoke();
                keys.iter().for_each(|k| {
                    call.key(*k);
                });
                let _: i64 = call
                    .arg(&long)
                    .arg(1000 + client * calls + i)
                    .arg("{e}n")
                    .invoke_async(&mut c)
                    .await
                    .unwrap();
            }
        }));
    }
    // Holds the undeclared key's shard (below the declared keys' one, so
    // a call only tries it) now and then: calls find it busy and start over.
    let mut other = connect(&server).await;
    let hold = Script::new("for i = 1, 2000 do redis.call('exists', KEYS[1]) end return 1");
    let holder = tokio::spawn(async move {
        for _ in 0..2000 {
            let _: i64 = hold.key("{e}x").invoke_async(&mut other).await.unwrap();
        }
    });
    for t in tasks {
        t.await.unwrap();
    }
    holder.abort();
    let total = (clients * calls) as i64;
    let n = |args: &'static [&'static str]| {
        let mut c = setup.clone();
        async move { cmd::<i64>(&mut c, args).await.unwrap() }
    };
    assert_eq!(n(&["GET", "{e}n"]).await, total);
    assert_eq!(n(&["HGET", "{c}h", "f1"]).await, 1 + total);
    assert_eq!(n(&["HLEN", "{c}h"]).await, 300);
    assert_eq!(n(&["SCARD", "{c}s"]).await, 300 + total);
    assert_eq!(n(&["ZSCORE", "{c}z", "m1"]).await, 1 + total);
    assert_eq!(n(&["ZCARD", "{c}z"]).await, 300);
    assert_eq!(n(&["LLEN", "{c}l"]).await, 300);
    assert_eq!(n(&["ZCARD", "{c}zlong"]).await, 1);
    assert_eq!(n(&["HLEN", "{c}hlong"]).await, 1);
    assert_eq!(n(&["HGET", "{c}hsmall", "a"]).await, total);
    assert_eq!(n(&["ZSCORE", "{c}zsmall", "a"]).await, total);
    let encoding = |key: &'static str| {
        let mut c = setup.clone();
        async move {
            cmd::<String>(&mut c, &["OBJECT", "ENCODING", key])
                .await
                .unwrap()
        }
    };
    assert_eq!(encoding("{c}zlong").await, "skiplist");
    assert_eq!(encoding("{c}hlong").await, "hashtable");
    assert_eq!(encoding("{c}hsmall").await, "listpack");
    assert_eq!(encoding("{c}zsmall").await, "listpack");
}

/// A read-only script that spins for `secs` seconds of wall time: bounded,
/// so a failing test cannot leave it running forever.
fn spin_script(secs: u32) -> String {
    format!(
        "redis.call('get', KEYS[1]) local s = tonumber(redis.call('time')[1]) \
         while tonumber(redis.call('time')[1]) < s + {secs} do end return 'done'"
    )
}

// Spinning scripts hold runtime workers: leave spare ones for the
// accept loop and the other clients.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn busy_script_and_script_kill() {
    let server = start().await;
    let mut admin = connect(&server).await;
    cmd::<()>(&mut admin, &["CONFIG", "SET", "lua-time-limit", "100"])
        .await
        .unwrap();
    assert_eq!(
        err(&mut admin, &["SCRIPT", "KILL"]).await,
        "NOTBUSY No scripts in execution right now."
    );
    let mut runner = connect(&server).await;
    let spin = tokio::spawn(async move {
        cmd::<String>(&mut runner, &["EVAL", &spin_script(10), "1", "spin"]).await
    });
    // A command on the script's shard waits until the threshold, then is
    // answered BUSY rather than left waiting (nil means the script has not
    // started yet).
    let mut other = connect(&server).await;
    let mut answer = Value::Nil;
    for _ in 0..500 {
        match cmd::<Value>(&mut other, &["GET", "spin"]).await {
            Ok(v) => answer = v,
            Err(e) => {
                assert_eq!(e.code(), Some("BUSY"), "{e}");
                answer = Value::Okay;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(answer, Value::Okay, "GET was never answered BUSY");
    // Keys in other shards are not held up.
    cmd::<()>(&mut other, &["SET", "elsewhere", "1"])
        .await
        .unwrap();
    assert_eq!(
        cmd::<String>(&mut admin, &["SCRIPT", "KILL"])
            .await
            .unwrap(),
        "OK"
    );
    let killed = spin.await.unwrap().unwrap_err();
    assert!(
        killed
            .detail()
            .unwrap_or("")
            .starts_with("Script killed by user with SCRIPT KILL... script: "),
        "{killed}"
    );
    assert_eq!(
        cmd::<Option<String>>(&mut other, &["GET", "spin"])
            .await
            .unwrap(),
        None
    );
    // Scripts that wrote: tests/script_kill.rs.
}

#[tokio::test]
async fn heap_limit_stops_runaway_scripts() {
    let server = start().await;
    let mut c = connect(&server).await;
    cmd::<()>(&mut c, &["CONFIG", "SET", "lua-heap-limit", "8mb"])
        .await
        .unwrap();
    let e = err(
        &mut c,
        &[
            "EVAL",
            "local t = {} for i = 1, 10000000 do t[i] = 'xxxxxxxxxxxxxxxx' .. i end return #t",
            "0",
        ],
    )
    .await;
    assert!(e.contains("lua-heap-limit"), "{e}");
    assert_eq!(
        cmd::<i64>(&mut c, &["EVAL", "return 1", "0"])
            .await
            .unwrap(),
        1
    );
}

#[tokio::test]
async fn sandbox_holds() {
    let server = start().await;
    let mut c = connect(&server).await;
    for escape in [
        "return os.execute('true')",
        "return io.open('/etc/passwd')",
        "return require('os')",
        "return dofile('/etc/passwd')",
        "return loadfile('/etc/passwd')",
        "return debug.getinfo(1)",
        "return setfenv(1, {})",
        "return getfenv(1)",
        "return print('x')",
        "newglobal = 1",
        "string.rep = function() return 'pwned' end",
        "rawset(_G, 'KEYS', 1)",
        "setmetatable(_G, {})",
        "getmetatable('').__index = {rep = function() return 'pwned' end}",
        "rawset(string, 'rep', function() return 'pwned' end)",
        "redis.call = nil",
    ] {
        let e = err(&mut c, &["EVAL", escape, "0"]).await;
        assert!(e.starts_with("ERR "), "{escape}: {e}");
    }
    let v: Option<Vec<u8>> = cmd(
        &mut c,
        &[
            "EVAL",
            "return loadstring(string.dump(function() return 1 end))",
            "0",
        ],
    )
    .await
    .unwrap();
    assert_eq!(v, None, "bytecode is refused");
    let v: Value = cmd(
        &mut c,
        &["EVAL", "local f = loadstring('x = 1') return pcall(f)", "0"],
    )
    .await
    .unwrap();
    assert_eq!(v, Value::Nil, "code loaded at run time is sandboxed too");
    // Nothing above leaked into the next script.
    assert_eq!(
        cmd::<String>(&mut c, &["EVAL", "return string.rep('ab', 2)", "0"])
            .await
            .unwrap(),
        "abab"
    );
    assert_eq!(
        cmd::<String>(&mut c, &["EVAL", "return ('x'):rep(3)", "0"])
            .await
            .unwrap(),
        "xxx"
    );
    assert_eq!(cmd::<String>(&mut c, &["PING"]).await.unwrap(), "PONG");
}

#[tokio::test]
async fn scripts_in_transactions_and_resp3() {
    let server = start().await;
    let mut c = connect(&server).await;
    let mut pipe = redis::pipe();
    pipe.atomic()
        .cmd("EVAL")
        .arg("return redis.call('incr', KEYS[1])")
        .arg(1)
        .arg("n")
        .cmd("EVAL")
        .arg("return redis.call('incrby', ARGV[1], 10)")
        .arg(0)
        .arg("m");
    let (a, b): (i64, i64) = pipe.query_async(&mut c).await.unwrap();
    assert_eq!((a, b), (1, 10));
    cmd::<()>(&mut c, &["HSET", "h", "f", "v"]).await.unwrap();
    let v: String = cmd(
        &mut c,
        &[
            "EVAL",
            "redis.setresp(3) return redis.call('hgetall', KEYS[1]).map.f",
            "1",
            "h",
        ],
    )
    .await
    .unwrap();
    assert_eq!(v, "v");
    let v: Vec<String> = cmd(
        &mut c,
        &["EVAL", "return redis.call('hgetall', KEYS[1])", "1", "h"],
    )
    .await
    .unwrap();
    assert_eq!(v, vec!["f", "v"]);
    assert_eq!(
        err(
            &mut c,
            &["EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"]
        )
        .await,
        "NOSCRIPT No matching script. Please use EVAL."
    );
}

// Spinning scripts hold runtime workers: leave spare ones for the
// accept loop and the other clients.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn restart_after_write_leaves_no_trace() {
    use rlockd::keyspace::key_shard;
    let server = start().await;
    // `low` sorts below `high`, so a script holding `high` may not wait for
    // `low` (that could deadlock): it must roll back and start over.
    let names: Vec<String> = (0..100).map(|i| format!("k{i}")).collect();
    let high = names
        .iter()
        .max_by_key(|k| key_shard(k.as_bytes()))
        .unwrap()
        .clone();
    let low = names
        .iter()
        .min_by_key(|k| key_shard(k.as_bytes()))
        .unwrap()
        .clone();
    assert!(key_shard(low.as_bytes()) < key_shard(high.as_bytes()));

    let mut holder = connect(&server).await;
    let low_key = low.clone();
    let hold = tokio::spawn(async move {
        cmd::<String>(
            &mut holder,
            &[
                "EVAL",
                "redis.call('set', KEYS[1], 'a') local s = tonumber(redis.call('time')[1]) \
                 while tonumber(redis.call('time')[1]) < s + 1 do end return 'held'",
                "1",
                &low_key,
            ],
        )
        .await
        .unwrap()
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut c = connect(&server).await;
    let got: i64 = cmd(
        &mut c,
        &[
            "EVAL",
            "local n = redis.call('incr', KEYS[1]) redis.call('set', ARGV[1], 'b') return n",
            "1",
            &high,
            &low,
        ],
    )
    .await
    .unwrap();
    assert_eq!(hold.await.unwrap(), "held");
    assert_eq!(got, 1, "the first attempt's INCR was rolled back");
    assert_eq!(cmd::<i64>(&mut c, &["GET", &high]).await.unwrap(), 1);
    assert_eq!(cmd::<String>(&mut c, &["GET", &low]).await.unwrap(), "b");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlock_publish_wakes_a_waiting_client() {
    use futures_util::StreamExt;
    let server = start().await;
    let chan = "redisson_lock__channel:{wake}";
    let mut waiter = redis::Client::open(server.url())
        .unwrap()
        .get_async_pubsub()
        .await
        .unwrap();
    waiter.subscribe(chan).await.unwrap();
    let mut c = connect(&server).await;
    assert_eq!(lock_as(&mut c, "wake", "a:1").await, None);
    let released = unlock_as(&mut c, "wake", chan, "a:1").await;
    assert_eq!(released, Some(1));
    let msg = tokio::time::timeout(Duration::from_secs(5), waiter.on_message().next())
        .await
        .expect("woken before the lease ran out")
        .unwrap();
    assert_eq!(msg.get_channel_name(), chan);
    assert_eq!(msg.get_payload::<String>().unwrap(), "0");
}
