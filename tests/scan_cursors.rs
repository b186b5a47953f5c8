//! Scan cursors of Redis's size, against redis-server and rlockd alike.
//!
//! Redisson's distributed iterators keep a scan cursor in a key and read it
//! back in Lua with `tonumber` (a double): a cursor past 2^53 loses its low
//! bits there and the iteration skips members. Redis's cursors are bucket
//! indexes, below its table's size; each scenario runs on redis-server
//! first, so a bound that Redis itself breaks fails as the test's fault.

mod refserver;

use std::collections::BTreeSet;

use redis::Connection;
use refserver::{Setup, Target, targets};

/// Members per collection: past every compact encoding's limit.
const MEMBERS: usize = 3000;

/// Redis's table for `MEMBERS` elements: the next power of two.
const TABLE: u64 = 4096;

/// A Redisson-style iterator: the script reads the cursor it left in a key
/// with `tonumber`, scans one page and stores the next cursor.
const ITERATE: &str = r#"
local cursor = tonumber(redis.call('get', KEYS[2]) or '0')
local page = redis.call(ARGV[1], KEYS[1], cursor, 'COUNT', 10)
redis.call('set', KEYS[2], page[1])
return page
"#;

fn connect(target: &Target) -> (refserver::Subject, Connection) {
    let subject = target.start(Setup::default());
    let client = redis::Client::open(format!("redis://{}", subject.addr())).unwrap();
    let con = client.get_connection().expect("connects");
    (subject, con)
}

fn fill(con: &mut Connection) {
    let script = r#"
for i = 1, tonumber(ARGV[1]) do
  local m = 'member:' .. i
  redis.call('sadd', KEYS[1], m)
  redis.call('hset', KEYS[2], m, i)
  redis.call('zadd', KEYS[3], i, m)
end
"#;
    let _: () = redis::cmd("EVAL")
        .arg(script)
        .arg(3)
        .arg(&["s", "h", "z"])
        .arg(MEMBERS)
        .query(con)
        .unwrap();
}

/// Runs the iterator script to the end; answers every cursor it stored and
/// the members it saw (every other element for HSCAN and ZSCAN).
fn iterate(con: &mut Connection, command: &str, key: &str) -> (Vec<u64>, BTreeSet<String>) {
    let _: () = redis::cmd("DEL").arg("cursor").query(con).unwrap();
    let (mut cursors, mut seen) = (Vec::new(), BTreeSet::new());
    let step = if command == "SSCAN" { 1 } else { 2 };
    for _ in 0..MEMBERS * 2 {
        let (cursor, items): (String, Vec<String>) = redis::cmd("EVAL")
            .arg(ITERATE)
            .arg(2)
            .arg(&[key, "cursor"])
            .arg(command)
            .query(con)
            .unwrap();
        seen.extend(items.into_iter().step_by(step));
        let cursor: u64 = cursor.parse().unwrap();
        if cursor == 0 {
            return (cursors, seen);
        }
        cursors.push(cursor);
    }
    panic!("{command} did not finish in {} pages", MEMBERS * 2);
}

#[test]
fn collection_cursors_fit_a_lua_number_and_the_table() {
    let want: BTreeSet<String> = (1..=MEMBERS).map(|i| format!("member:{i}")).collect();
    for target in targets("scan_cursors") {
        let (_server, mut con) = connect(&target);
        fill(&mut con);
        for (command, key) in [("SSCAN", "s"), ("HSCAN", "h"), ("ZSCAN", "z")] {
            let (cursors, seen) = iterate(&mut con, command, key);
            let name = target.name();
            assert!(
                cursors.iter().all(|&c| c < TABLE),
                "{name} {command}: a cursor at or past {TABLE}: {:?}",
                cursors.iter().max()
            );
            assert_eq!(
                seen.len(),
                want.len(),
                "{name} {command} through tonumber missed {:?}",
                want.difference(&seen).take(5).collect::<Vec<_>>()
            );
        }
    }
}

#[test]
fn keyspace_cursors_stay_near_the_table_size() {
    for target in targets("scan_cursors") {
        let (_server, mut con) = connect(&target);
        let _: () = redis::cmd("EVAL")
            .arg("for i = 1, tonumber(ARGV[1]) do redis.call('set', 'key:' .. i, i) end")
            .arg(0)
            .arg(MEMBERS)
            .query(&mut con)
            .unwrap();
        let (mut cursor, mut seen, mut largest) = (0u64, BTreeSet::new(), 0u64);
        for _ in 0..MEMBERS * 2 {
            let (next, keys): (u64, Vec<String>) =
                redis::cmd("SCAN").arg(cursor).query(&mut con).unwrap();
            seen.extend(keys);
            largest = largest.max(next);
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
        assert_eq!(cursor, 0, "{}: SCAN did not finish", target.name());
        assert_eq!(seen.len(), MEMBERS, "{}", target.name());
        // rlockd's keyspace is sharded, each shard a table of its own: its
        // cursors are of the same size, not the same numbers.
        assert!(
            largest < 8 * TABLE,
            "{}: SCAN cursor {largest}",
            target.name()
        );
    }
}
