//! What the differential lock suite (conformance/cases/lock_*.rcmd) cannot
//! show, because it runs one command at a time: the batched watchdog
//! renewal of 100 locks in 100 hash slots (conformance/scripts/
//! lock_renew_batch.lua) is atomic while other connections release those
//! locks, and what one such call costs on rlockd and on redis-server.

mod common;
mod refserver;

use std::collections::HashSet;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis::{Script, ScriptInvocation};
use rlockd::keyspace::key_shard;

static RENEW: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../conformance/scripts/lock_renew_batch.lua")));

/// Releases two locks together, or neither: the renewal must see both
/// held or both gone. KEYS[1], KEYS[2] locks; ARGV[1], ARGV[2] owners.
const RELEASE_PAIR: &str = "\
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 and redis.call('hexists', KEYS[2], ARGV[2]) == 1 then \
    redis.call('del', KEYS[1], KEYS[2]) \
    return 1 \
end \
return 0";

const LOCKS: usize = 100;
const ROUNDS: usize = 20;
const RELEASERS: usize = 8;

/// `LOCKS` lock names, each in an rlockd shard of its own, so that one
/// renewal spans as many shards as it can.
fn lock_names(prefix: &str) -> Vec<String> {
    let mut shards = HashSet::new();
    (0..)
        .map(|j| format!("{prefix}:{j}"))
        .filter(|name| shards.insert(key_shard(name.as_bytes())))
        .take(LOCKS)
        .collect()
}

fn owner(i: usize) -> String {
    format!("5c0ffee0-0000-4000-8000-{i:012}:1")
}

/// Takes every lock for its owner with a short lease (a renewal shows as a
/// longer one).
async fn hold_all(c: &mut MultiplexedConnection, names: &[String]) {
    let mut pipe = redis::pipe();
    for (i, name) in names.iter().enumerate() {
        pipe.hset(name, owner(i), 1).ignore();
        pipe.pexpire(name, 10_000).ignore();
    }
    let () = pipe.query_async(c).await.unwrap();
}

/// The watchdog's call: every lock with its owner, one new lease.
fn renewal(names: &[String], lease_ms: u64) -> ScriptInvocation<'static> {
    let mut call = RENEW.prepare_invoke();
    call.arg(lease_ms);
    for (i, name) in names.iter().enumerate() {
        call.key(name).arg(owner(i));
    }
    call
}

async fn renew(c: &mut MultiplexedConnection, names: &[String], lease_ms: u64) -> Vec<i64> {
    renewal(names, lease_ms).invoke_async(c).await.unwrap()
}

/// One round: renewals run back to back while `RELEASERS` connections
/// release the locks two at a time (lock i with lock LOCKS-1-i), spread
/// over a few milliseconds. Returns every renewal's answer.
async fn race_round(url: &str, names: &[String]) -> Vec<Vec<i64>> {
    let mut renewer = common::connect_url(url.to_string()).await;
    hold_all(&mut renewer, names).await;
    let mut releasers = Vec::new();
    for r in 0..RELEASERS {
        let mut c = common::connect_url(url.to_string()).await;
        let names = names.to_vec();
        releasers.push(tokio::spawn(async move {
            let release = Script::new(RELEASE_PAIR);
            for i in (r..LOCKS / 2).step_by(RELEASERS) {
                tokio::time::sleep(Duration::from_micros(300)).await;
                let j = LOCKS - 1 - i;
                let done: i64 = release
                    .key(&names[i])
                    .key(&names[j])
                    .arg(owner(i))
                    .arg(owner(j))
                    .invoke_async(&mut c)
                    .await
                    .unwrap();
                assert_eq!(done, 1, "pair {i}/{j} was still held before its release");
            }
        }));
    }
    let mut seen = Vec::new();
    loop {
        let answer = renew(&mut renewer, names, 60_000).await;
        let none_left = answer.iter().all(|&x| x == 0);
        seen.push(answer);
        if none_left {
            break;
        }
    }
    for r in releasers {
        r.await.unwrap();
    }
    let left: i64 = redis::cmd("EXISTS")
        .arg(names)
        .query_async(&mut renewer)
        .await
        .unwrap();
    assert_eq!(left, 0, "a renewal brought a released lock back");
    seen
}

/// Checks one server; returns how many renewals saw some locks held and
/// some released (so the race really interleaved).
async fn check_atomic_renewal(url: &str, server: &str) -> usize {
    let mut mixed = 0;
    for round in 0..ROUNDS {
        let names = lock_names(&format!("watchdog:{round}"));
        let seen = race_round(url, &names).await;
        for (n, answer) in seen.iter().enumerate() {
            assert_eq!(answer.len(), LOCKS, "{server}: one answer per lock");
            for i in 0..LOCKS / 2 {
                assert_eq!(
                    answer[i],
                    answer[LOCKS - 1 - i],
                    "{server}, round {round}, renewal {n}: locks {i} and {} were released \
                     together, but the renewal saw only one of them: {answer:?}",
                    LOCKS - 1 - i
                );
            }
            if let Some(before) = n.checked_sub(1).map(|m| &seen[m]) {
                let revived = (0..LOCKS).find(|&i| answer[i] > before[i]);
                assert_eq!(revived, None, "{server}: a released lock renewed again");
            }
        }
        mixed += seen
            .iter()
            .filter(|a| a.contains(&0) && a.contains(&1))
            .count();
    }
    mixed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn batched_renewal_is_atomic_under_concurrent_releases() {
    let server = common::start().await;
    let mixed = check_atomic_renewal(&server.url(), "rlockd").await;
    refserver::loud(&format!(
        "lock_semantics: {ROUNDS} rounds x {LOCKS} locks, {mixed} renewals ran between releases"
    ));
    assert!(mixed > 0, "the releases never interleaved with a renewal");
    // The same invariants hold on Redis itself, so they are Redis's
    // behaviour and not an rlockd artefact.
    if let Some(bin) = refserver::redis_server_path("lock_semantics") {
        let redis = refserver::RedisServer::start(&bin);
        let url = format!("redis://{}", redis.addr);
        check_atomic_renewal(&url, "redis-server").await;
    }
}

/// Times one renewal of 100 cross-slot locks, on rlockd (on a runtime of
/// its own, as a server would be) and, when found, on redis-server:
/// reported, not asserted (a shared machine's timings are noise for a
/// pass/fail decision).
#[test]
fn batched_renewal_timing() {
    const CALLS: usize = 2000;
    fn time_it(addr: std::net::SocketAddr) -> (Duration, Duration) {
        let mut c = redis::Client::open(format!("redis://{addr}"))
            .unwrap()
            .get_connection()
            .unwrap();
        let names = lock_names("timed");
        let mut hold = redis::pipe();
        for (i, name) in names.iter().enumerate() {
            hold.hset(name, owner(i), 1).ignore();
        }
        let () = hold.query(&mut c).unwrap();
        let call = renewal(&names, 30_000);
        let mut each = Vec::with_capacity(CALLS);
        for _ in 0..=CALLS {
            let t = Instant::now();
            let answer: Vec<i64> = call.invoke(&mut c).unwrap();
            each.push(t.elapsed());
            assert_eq!(answer, vec![1; LOCKS]);
        }
        // The first call loaded the script after NOSCRIPT.
        each.remove(0);
        each.sort();
        (each[CALLS / 2], each[CALLS * 99 / 100])
    }
    let server = refserver::Rlockd::start();
    let (median, p99) = time_it(server.addr);
    refserver::loud(&format!(
        "lock_semantics: one EVALSHA renewing {LOCKS} cross-slot locks, round trip over \
         {CALLS} calls: rlockd median {median:?}, p99 {p99:?}"
    ));
    if let Some(bin) = refserver::redis_server_path("lock_semantics") {
        let redis = refserver::RedisServer::start(&bin);
        let (median, p99) = time_it(redis.addr);
        refserver::loud(&format!(
            "lock_semantics: the same on redis-server: median {median:?}, p99 {p99:?}"
        ));
    }
}
