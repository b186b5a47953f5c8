//! MEMORY USAGE / STATS / DOCTOR / MALLOC-STATS / PURGE / HELP.

use super::Ctx;
use super::presets::{ALL_SHARDS_SPECIAL, OBJECT_KEY};
use super::reply::help_reply;
use super::spec::flag::{LOADING, READONLY, STALE, WHOLE_KEYSPACE};
use super::spec::{CommandSpec, Group};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::memory_usage;
use crate::protocol::Reply;
use crate::util::alloc::{MemoryNow, memory_now};
use crate::util::parse_i64;

pub fn usage(ctx: &mut Ctx) -> CmdResult<Reply> {
    let mut j = 3;
    while j < ctx.args.len() {
        // SAMPLES is checked and accepted: the estimate reads every element.
        match ctx.args.get(j + 1) {
            Some(n) if ctx.args[j].eq_ignore_ascii_case(b"samples") => {
                if parse_i64(n).ok_or(CmdError::NotInteger)? < 0 {
                    return Err(CmdError::Syntax);
                }
                j += 2;
            }
            _ => return Err(CmdError::Syntax),
        }
    }
    let key = ctx.arg(2).clone();
    let mut db = ctx.db();
    Ok(match db.get_mut(&key)? {
        Some(value) => Reply::Int(memory_usage(&key, value) as i64),
        None => Reply::Nil,
    })
}

/// As Redis asks jemalloc: freed pages go back to the system now.
pub fn purge(_ctx: &mut Ctx) -> CmdResult<Reply> {
    crate::util::alloc::give_back();
    Ok(Reply::OK)
}

/// A dictionary entry and its bucket pointer, as Redis 7.0's dict holds a key.
const DICT_ENTRY_BYTES: u64 = 24 + 8;

/// MEMORY STATS: Redis 7.0's fields in its order. rlockd has no replication
/// backlog, AOF buffer or cluster links (0), and its allocator reports one
/// figure, so `allocator.*` repeat it and the resident size.
pub fn stats(ctx: &mut Ctx) -> CmdResult<Reply> {
    let MemoryNow { used, peak, rss } = memory_now();
    let (_, scripts) = ctx.shared.scripts.cached();
    let databases = ctx.shared.config.read().databases;
    let int = |n: u64| Reply::Int(n as i64);
    let field = |name: &str| Reply::bulk_str(name);
    let mut out = vec![
        (field("peak.allocated"), int(peak)),
        (field("total.allocated"), int(used)),
        (field("startup.allocated"), int(0)),
        (field("replication.backlog"), int(0)),
        (field("clients.slaves"), int(0)),
        (field("clients.normal"), int(0)),
        (field("cluster.links"), int(0)),
        (field("aof.buffer"), int(0)),
        (field("lua.caches"), int(scripts as u64)),
        (field("functions.caches"), int(0)),
    ];
    let (mut keys, mut overhead) = (0u64, 0u64);
    for db in 0..databases {
        let (main, expires) = ctx.locked.shards().fold((0, 0), |(k, e), s| {
            (k + s.db_len(db) as u64, e + s.expires_len(db) as u64)
        });
        if main == 0 {
            continue;
        }
        keys += main;
        overhead += (main + expires) * DICT_ENTRY_BYTES;
        out.push((
            Reply::Bulk(format!("db.{db}").into()),
            Reply::Map(vec![
                (
                    field("overhead.hashtable.main"),
                    int(main * DICT_ENTRY_BYTES),
                ),
                (
                    field("overhead.hashtable.expires"),
                    int(expires * DICT_ENTRY_BYTES),
                ),
                (field("overhead.hashtable.slot-to-keys"), int(0)),
            ]),
        ));
    }
    let dataset = used.saturating_sub(overhead);
    let ratio = |a: u64, b: u64| a as f64 / b.max(1) as f64;
    out.extend([
        (field("overhead.total"), int(overhead)),
        (field("keys.count"), int(keys)),
        (field("keys.bytes-per-key"), int(used / keys.max(1))),
        (field("dataset.bytes"), int(dataset)),
        (
            field("dataset.percentage"),
            Reply::Double(100.0 * ratio(dataset, used)),
        ),
        (
            field("peak.percentage"),
            Reply::Double(100.0 * ratio(used, peak)),
        ),
        (field("allocator.allocated"), int(used)),
        (field("allocator.active"), int(used)),
        (field("allocator.resident"), int(rss)),
        (field("allocator-fragmentation.ratio"), Reply::Double(1.0)),
        (field("allocator-fragmentation.bytes"), int(0)),
        (
            field("allocator-rss.ratio"),
            Reply::Double(ratio(rss, used)),
        ),
        (field("allocator-rss.bytes"), int(rss.saturating_sub(used))),
        (field("rss-overhead.ratio"), Reply::Double(1.0)),
        (field("rss-overhead.bytes"), int(0)),
        (field("fragmentation"), Reply::Double(ratio(rss, used))),
        (field("fragmentation.bytes"), int(rss.saturating_sub(used))),
    ]);
    Ok(Reply::Map(out))
}

/// Below this many bytes a report has too little to go on (Redis's bar too).
const DOCTOR_MIN_BYTES: u64 = 5 << 20;

/// MEMORY DOCTOR: rlockd's own short report.
pub fn doctor(_ctx: &mut Ctx) -> CmdResult<Reply> {
    let MemoryNow { used, peak, rss } = memory_now();
    let report = if used < DOCTOR_MIN_BYTES {
        "rlockd holds less than 5 MB: too little to say anything about its memory.\n".to_string()
    } else {
        let mut lines = Vec::new();
        if peak > used.saturating_mul(3) / 2 {
            lines.push(format!(
                "* The peak ({peak} bytes) is well above what is used now ({used} bytes): \
                 a burst of keys or large values came and went."
            ));
        }
        if rss > used.saturating_mul(3) / 2 {
            lines.push(format!(
                "* The process holds {rss} bytes for {used} bytes in use: the allocator \
                 keeps freed pages; MEMORY PURGE asks it to return them."
            ));
        }
        if lines.is_empty() {
            "rlockd's memory looks healthy: no peak far above the current use, and the \
             resident size close to it.\n"
                .to_string()
        } else {
            lines.join("\n") + "\n"
        }
    };
    Ok(Reply::Verbatim(report.into()))
}

/// The allocator's figures are in INFO memory and MEMORY STATS; like a
/// Redis built without jemalloc, this has no report of its own.
pub fn malloc_stats(_ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(Reply::bulk_str(
        "Stats not supported for the current allocator",
    ))
}

pub fn help(_ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(help_reply(
        "MEMORY",
        &[
            "USAGE <key> [SAMPLES <count>]",
            "    The bytes <key> and its value would take in Redis 7.0.",
            "PURGE",
            "    Accepted; the allocator returns memory by itself.",
            "STATS",
            "    Memory use: Redis 7.0's fields, rlockd's figures.",
            "DOCTOR",
            "    A short report on memory use.",
            "MALLOC-STATS",
            "    The allocator's own report (none: see STATS).",
        ],
    ))
}

static MEMORY_SUBS: &[CommandSpec] = &[
    CommandSpec::new("usage", -3, Group::Server, usage)
        .flags(READONLY)
        .keys(OBJECT_KEY)
        .syntax("key [SAMPLES count]")
        .doc(
            "4.0.0",
            "Returns the bytes a key and its value would take in Redis.",
        ),
    CommandSpec::new("stats", 2, Group::Server, stats)
        .flags(WHOLE_KEYSPACE)
        .tips(&[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ])
        .doc("4.0.0", "Describes the server's memory use."),
    CommandSpec::new("doctor", 2, Group::Server, doctor)
        .tips(ALL_SHARDS_SPECIAL)
        .doc("4.0.0", "A short report on the server's memory use."),
    CommandSpec::new("malloc-stats", 2, Group::Server, malloc_stats)
        .tips(&[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ])
        .doc("4.0.0", "The allocator's own statistics."),
    CommandSpec::new("purge", 2, Group::Server, purge)
        .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
        .doc("4.0.0", "Asks the allocator to give memory back."),
    CommandSpec::new("help", 2, Group::Server, help)
        .flags(LOADING | STALE)
        .doc("4.0.0", "Lists the MEMORY subcommands."),
];

pub(super) static COMMANDS: &[CommandSpec] =
    &[CommandSpec::container("memory", Group::Server, MEMORY_SUBS)
        .doc("4.0.0", "Memory diagnostics.")];
