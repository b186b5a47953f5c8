//! What one `redis.call` costs, `redis-server` versus `rlockd`, in
//! instructions counted under callgrind (`support/callgrind.rs`): HGET,
//! HSET, SISMEMBER, SADD, ZSCORE, ZADD, LINDEX and LSET, each called from a
//! script's loop on a collection of 1,000 members under a 28-byte key.
//!
//! Each server runs once as the base: it fills the four collections, loads
//! the eight scripts and calls each of them `RLOCKD_BENCH_CALLS / 100`
//! times with a loop of no calls. Then once per command, the same but with
//! that command's script looping 100 times a run. The difference over the
//! calls made is the cost of one `redis.call` (the loop's step included),
//! with the script's own cost (EVALSHA, the run, its reply) cancelled out.
//! Only what runs inside each server's script function is counted
//! (`evalGenericCommand`, `eval_generic`), so start-up, shut-down and
//! background work (Redis's cron, which runs by wall time) are left out.
//!
//! The loop reads each call's arguments from ARGV, strings the bench made,
//! so that it spends nothing on making them (a number or a concatenation
//! would cost each server a `printf`); every run sends them all, looping
//! over them or not. The writes change something: HSET and LSET write a
//! value new to the run, ZADD a new score, SADD a new member.
//!
//! Run with `cargo bench --bench calls`. Knob: `RLOCKD_BENCH_CALLS` (2000
//! calls of each command). Needs `valgrind`; without it the bench says so
//! and exits.

mod support;

use std::io;
use std::net::SocketAddr;

use support::callgrind::{self, count_within};
use support::{Conn, Reply, knob, rlockd_binary};

/// Members of each collection.
const MEMBERS: usize = 1000;
/// `redis.call`s in one script run.
const PER_RUN: usize = 100;
/// The length of every collection's key.
const KEY_LEN: usize = 28;

/// One collection: the word its key starts with and the command that fills
/// it, called with a member `m1`…`m1000` and a number `i`.
struct Collection {
    name: &'static str,
    fill: &'static str,
}

const fn collection(name: &'static str, fill: &'static str) -> Collection {
    Collection { name, fill }
}

const HASH: Collection = collection("hash", "redis.call('hset', KEYS[1], 'm' .. i, i)");
const SET: Collection = collection("set", "redis.call('sadd', KEYS[1], 'm' .. i)");
const ZSET: Collection = collection("zset", "redis.call('zadd', KEYS[1], i, 'm' .. i)");
const LIST: Collection = collection("list", "redis.call('rpush', KEYS[1], 'm' .. i)");

/// One command measured: its collection, its call in the loop, and what
/// the call's `a` and `b` are in a script run's `i`th call.
struct Case {
    command: &'static str,
    on: &'static Collection,
    call: &'static str,
    args: fn(run: usize, i: usize) -> (String, String),
}

fn member(_: usize, i: usize) -> (String, String) {
    (format!("m{i}"), String::new())
}

fn new_value(run: usize, i: usize) -> (String, String) {
    (format!("m{i}"), format!("v{run}"))
}

fn index(_: usize, i: usize) -> (String, String) {
    (i.to_string(), String::new())
}

const CASES: [Case; 8] = [
    Case {
        command: "HGET",
        on: &HASH,
        call: "redis.call('hget', KEYS[1], a)",
        args: member,
    },
    Case {
        command: "HSET",
        on: &HASH,
        call: "redis.call('hset', KEYS[1], a, b)",
        args: new_value,
    },
    Case {
        command: "SISMEMBER",
        on: &SET,
        call: "redis.call('sismember', KEYS[1], a)",
        args: member,
    },
    Case {
        command: "SADD",
        on: &SET,
        call: "redis.call('sadd', KEYS[1], a)",
        args: |run, i| (format!("n{run}:{i}"), String::new()),
    },
    Case {
        command: "ZSCORE",
        on: &ZSET,
        call: "redis.call('zscore', KEYS[1], a)",
        args: member,
    },
    Case {
        command: "ZADD",
        on: &ZSET,
        call: "redis.call('zadd', KEYS[1], b, a)",
        args: |run, i| (format!("m{i}"), (MEMBERS + run * PER_RUN + i).to_string()),
    },
    Case {
        command: "LINDEX",
        on: &LIST,
        call: "redis.call('lindex', KEYS[1], a)",
        args: index,
    },
    Case {
        command: "LSET",
        on: &LIST,
        call: "redis.call('lset', KEYS[1], a, b)",
        args: |run, i| (i.to_string(), format!("v{run}")),
    },
];

/// A collection's key: its name, padded to `KEY_LEN` bytes.
fn key(on: &Collection) -> String {
    format!("{:0<KEY_LEN$}", format!("callbench:{}:", on.name))
}

/// The script of `case`: `ARGV[1]` calls, the `i`th with `a` and `b` from
/// `ARGV[2i]` and `ARGV[2i + 1]`, strings made by the bench, so that the
/// loop makes none (a number argument or a concatenation would cost each
/// server a `printf`).
fn script(case: &Case) -> String {
    format!(
        "local n = tonumber(ARGV[1]) \
         for i = 1, n do local a, b = ARGV[2 * i], ARGV[2 * i + 1] {} end return n",
        case.call
    )
}

/// Fills the collections and runs every case's script `runs` times,
/// looping `PER_RUN` times in `measured`'s and not at all in the others'.
fn workload(addr: SocketAddr, runs: usize, measured: Option<usize>) -> io::Result<()> {
    let mut conn = Conn::open(addr)?;
    for on in [&HASH, &SET, &ZSET, &LIST] {
        let fill = format!("for i = 1, {MEMBERS} do {} end", on.fill);
        conn.cmd(&["EVAL", &fill, "1", &key(on)])?;
    }
    let shas = CASES
        .iter()
        .map(|case| conn.script_load(&script(case)))
        .collect::<io::Result<Vec<_>>>()?;
    for (idx, (case, sha)) in CASES.iter().zip(&shas).enumerate() {
        let calls = if measured == Some(idx) { PER_RUN } else { 0 };
        for run in 0..runs {
            // Every run sends every call's arguments, looping over them or
            // not, so that only the calls differ between the runs.
            let mut line = vec![
                "EVALSHA".to_string(),
                sha.clone(),
                "1".into(),
                key(case.on),
                calls.to_string(),
            ];
            for i in 1..=PER_RUN {
                let (a, b) = (case.args)(run, i);
                line.extend([a, b]);
            }
            let line: Vec<&str> = line.iter().map(String::as_str).collect();
            match conn.cmd(&line)? {
                Reply::Int(n) if n as usize == calls => {}
                other => {
                    return Err(io::Error::other(format!("{}: {other:?}", case.command)));
                }
            }
        }
    }
    Ok(())
}

fn main() {
    if !callgrind::available() {
        return;
    }
    let runs = (knob("RLOCKD_BENCH_CALLS", 2000) / PER_RUN).max(1);
    let calls = (runs * PER_RUN) as f64;
    let redis = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    let rlockd = rlockd_binary();
    // Each server with the function that runs a script: only what runs
    // inside it is counted.
    let servers: [(&str, &[&str], &str); 2] = [
        (
            &redis,
            &["--save", "", "--appendonly", "no"],
            "evalGenericCommand",
        ),
        (&rlockd, &[], "rlockd::command::scripting::eval_generic"),
    ];
    // Instructions per call, by case, for each server.
    let per_call: Vec<Vec<f64>> = servers
        .iter()
        .map(|&(program, args, eval)| {
            let base = count_within(
                program,
                args,
                &|addr, n| workload(addr, n, None),
                runs,
                Some(eval),
            );
            assert!(base > 0, "nothing counted in {eval}: was it renamed?");
            (0..CASES.len())
                .map(|idx| {
                    let measured = |addr, n| workload(addr, n, Some(idx));
                    let total = count_within(program, args, &measured, runs, Some(eval));
                    total.saturating_sub(base) as f64 / calls
                })
                .collect()
        })
        .collect();
    println!(
        "instructions per redis.call in a script, {MEMBERS}-member collections, \
         {KEY_LEN}-byte keys ({calls} calls each)"
    );
    println!(
        "{:<10} {:>9} {:>9} {:>14}",
        "command", "redis", "rlockd", "rlockd / redis"
    );
    let mut fields = Vec::new();
    for (idx, case) in CASES.iter().enumerate() {
        let (theirs, ours) = (per_call[0][idx], per_call[1][idx]);
        let ratio = ours / theirs;
        println!(
            "{:<10} {theirs:>9.0} {ours:>9.0} {ratio:>14.2}",
            case.command
        );
        fields.push(format!(
            "\"{}\":{{\"redis\":{theirs:.0},\"rlockd\":{ours:.0},\"ratio\":{ratio:.3}}}",
            case.command.to_lowercase()
        ));
    }
    println!(
        "BENCH {{\"bench\":\"calls\",\"calls\":{calls},{}}}",
        fields.join(",")
    );
}
