//! What every worker thread keeps for itself (INFO's counters, copies of
//! script bodies) seen from connections served on several of them at once:
//! counts add up across threads, and SCRIPT FLUSH reaches every thread's
//! copies.

mod common;

use std::thread;

use common::{info_number, info_value};
use rlockd::{Config, Server};

const CLIENTS: usize = 8;
const ROUNDS: usize = 200;
const SCRIPT: &str = "return redis.call('INCR', KEYS[1])";

fn connect(url: &str) -> redis::Connection {
    redis::Client::open(url).unwrap().get_connection().unwrap()
}

/// `field=value` from an INFO line such as `cmdstat_incr:calls=3,usec=…`.
fn field(info: &str, line: &str, name: &str) -> u64 {
    info_value(info, line)
        .split(',')
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {name} in {line}"))
        .parse()
        .unwrap()
}

#[test]
fn counters_add_up_and_a_flush_reaches_every_thread() {
    let server = Server::builder()
        .port(0)
        .config(Config {
            io_threads: 4,
            ..Config::default()
        })
        .start_blocking()
        .unwrap();
    let url = server.url();
    let mut admin = connect(&url);
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(SCRIPT)
        .query(&mut admin)
        .unwrap();
    let mut conns: Vec<_> = (0..CLIENTS).map(|_| connect(&url)).collect();
    // Every connection runs the script and INCR at once, so that several
    // worker threads count and copy the body.
    thread::scope(|s| {
        for (n, con) in conns.iter_mut().enumerate() {
            let sha = &sha;
            s.spawn(move || {
                let key = format!("counter:{n}");
                for i in 1..=ROUNDS as i64 {
                    let by_script: i64 = redis::cmd("EVALSHA")
                        .arg(sha)
                        .arg(1)
                        .arg(&key)
                        .query(con)
                        .unwrap();
                    let direct: i64 = redis::cmd("INCR").arg(&key).query(con).unwrap();
                    assert_eq!((by_script, direct), (2 * i - 1, 2 * i));
                }
            });
        }
    });
    let runs = (CLIENTS * ROUNDS) as u64;
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut admin)
        .unwrap();
    assert_eq!(field(&stats, "cmdstat_evalsha", "calls"), runs);
    // The script's own INCRs count as INCR calls, as in Redis.
    assert_eq!(field(&stats, "cmdstat_incr", "calls"), 2 * runs);
    // RESP2: the command's name, then calls and cumulative buckets.
    let (name, (_, calls, _, buckets)): (String, (String, u64, String, Vec<u64>)) =
        redis::cmd("LATENCY")
            .arg("HISTOGRAM")
            .arg("incr")
            .query(&mut admin)
            .unwrap();
    assert_eq!((name.as_str(), calls), ("incr", 2 * runs));
    assert_eq!(buckets.last(), Some(&(2 * runs)), "{buckets:?}");
    let info: String = redis::cmd("INFO").arg("stats").query(&mut admin).unwrap();
    // EVALSHA, its INCR and the direct INCR, and the few commands around them.
    let processed = info_number(&info, "total_commands_processed");
    assert!(
        (3 * runs..3 * runs + 50).contains(&processed),
        "{processed}"
    );

    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut admin).unwrap();
    for con in &mut conns {
        let refused = redis::cmd("EVALSHA")
            .arg(&sha)
            .arg(1)
            .arg("k")
            .query::<i64>(con)
            .unwrap_err();
        assert_eq!(refused.code(), Some("NOSCRIPT"), "{refused}");
    }
    let _: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(SCRIPT)
        .query(&mut admin)
        .unwrap();
    for con in &mut conns {
        let n: i64 = redis::cmd("EVALSHA")
            .arg(&sha)
            .arg(1)
            .arg("fresh")
            .query(con)
            .unwrap();
        assert!(n >= 1);
    }

    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut admin)
        .unwrap();
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut admin)
        .unwrap();
    assert!(!stats.contains("cmdstat_incr"), "{stats}");
}
