//! rlockd's own commands for test suites outside Rust: RLOCKD.CLOCK moves
//! the manual clock (only with `enable-clock-control`), RLOCKD.LOCKS and
//! RLOCKD.WAITERS describe who holds which lock and who waits for it.

use std::time::{Duration, UNIX_EPOCH};

use super::Ctx;
use super::presets::NONDET;
use super::spec::flag::{
    ADMIN, CLOCK_CONTROL, FAST, LOADING, NO_MULTI, NOSCRIPT, READONLY, STALE, WHOLE_KEYSPACE,
};
use super::spec::{CommandSpec, Group};
use crate::clock::{Clock, ManualClock};
use crate::context::introspect::{held_locks, waiters};
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;
use crate::util::parse_u64;

fn manual_clock<'a>(ctx: &Ctx<'a, '_>) -> &'a ManualClock {
    // Dispatch offers RLOCKD.CLOCK only where a manual clock exists.
    ctx.shared
        .manual_clock
        .as_deref()
        .expect("RLOCKD.CLOCK runs only on a manual clock")
}

fn millis_arg(ctx: &Ctx) -> CmdResult<u64> {
    parse_u64(ctx.arg(2)).ok_or(CmdError::NotInteger)
}

/// RLOCKD.CLOCK ADVANCE ms: the new time, once every key it passed is gone.
pub fn clock_advance(ctx: &mut Ctx) -> CmdResult<Reply> {
    let by = Duration::from_millis(millis_arg(ctx)?);
    let now = ctx.shared.advance_clock(manual_clock(ctx), by);
    Ok(Reply::Int(now as i64))
}

/// RLOCKD.CLOCK SET unix-ms: like ADVANCE, to an absolute time.
pub fn clock_set(ctx: &mut Ctx) -> CmdResult<Reply> {
    let to = UNIX_EPOCH + Duration::from_millis(millis_arg(ctx)?);
    let now = ctx.shared.set_clock(manual_clock(ctx), to);
    Ok(Reply::Int(now as i64))
}

pub fn clock_get(ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(Reply::Int(manual_clock(ctx).now_ms() as i64))
}

pub fn clock_help(_ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(super::reply::help_reply(
        "RLOCKD.CLOCK",
        &[
            "ADVANCE <milliseconds>",
            "    Move the clock forward; keys whose deadline passes expire now.",
            "SET <unix-time-milliseconds>",
            "    Move the clock to a time, earlier or later.",
            "GET",
            "    Return the clock's time in Unix milliseconds.",
        ],
    ))
}

fn pattern_arg<'c>(ctx: &Ctx<'c, '_>) -> CmdResult<Option<&'c [u8]>> {
    match ctx.args {
        [_] => Ok(None),
        [_, pattern] => Ok(Some(pattern)),
        _ => Err(CmdError::Syntax),
    }
}

fn field(name: &'static str, value: Reply) -> (Reply, Reply) {
    (Reply::bulk_str(name), value)
}

/// RLOCKD.LOCKS [pattern]: one map per lock: key, db, type, pttl (-1 for
/// none) and owners (owner to hold count).
pub fn locks(ctx: &mut Ctx) -> CmdResult<Reply> {
    let pattern = pattern_arg(ctx)?;
    let databases = ctx.shared.keyspace.databases();
    let found = held_locks(ctx.locked, databases, pattern);
    Ok(Reply::Array(
        found
            .into_iter()
            .map(|lock| {
                let pttl = lock.ttl.map_or(-1, |t| t.as_millis() as i64);
                let owners = lock
                    .owners
                    .into_iter()
                    .map(|o| (Reply::Bulk(o.owner), Reply::Int(o.holds)))
                    .collect();
                Reply::Map(vec![
                    field("key", Reply::Bulk(lock.key)),
                    field("db", Reply::Int(lock.db as i64)),
                    field("type", Reply::bulk_str(lock.kind.name())),
                    field("pttl", Reply::Int(pttl)),
                    field("owners", Reply::Map(owners)),
                ])
            })
            .collect(),
    ))
}

/// RLOCKD.WAITERS [pattern]: one map per subscribed channel, pattern or
/// shard channel: kind, name, and the subscribed clients' ids.
pub fn waiting(ctx: &mut Ctx) -> CmdResult<Reply> {
    let pattern = pattern_arg(ctx)?;
    Ok(Reply::Array(
        waiters(&ctx.shared.pubsub, pattern)
            .into_iter()
            .map(|w| {
                Reply::Map(vec![
                    field("kind", Reply::bulk_str(w.kind.name())),
                    field("name", Reply::Bulk(w.name)),
                    field(
                        "clients",
                        Reply::Array(
                            w.clients
                                .into_iter()
                                .map(|id| Reply::Int(id as i64))
                                .collect(),
                        ),
                    ),
                ])
            })
            .collect(),
    ))
}

/// Moving the clock reclaims keys in every shard, so it cannot run where
/// shards are already held (MULTI, scripts).
const CLOCK: u32 = CLOCK_CONTROL | ADMIN | NOSCRIPT | NO_MULTI | LOADING | STALE;

static CLOCK_SUBS: &[CommandSpec] = &[
    CommandSpec::new("advance", 3, Group::Server, clock_advance)
        .flags(CLOCK)
        .syntax("milliseconds")
        .doc(
            "0.1.0",
            "Moves the manual clock forward; keys it passes expire at once (rlockd only).",
        ),
    CommandSpec::new("set", 3, Group::Server, clock_set)
        .flags(CLOCK)
        .syntax("unix-time-milliseconds")
        .doc(
            "0.1.0",
            "Moves the manual clock to a Unix time in milliseconds (rlockd only).",
        ),
    CommandSpec::new("get", 2, Group::Server, clock_get)
        .flags(CLOCK | FAST)
        .doc(
            "0.1.0",
            "Returns the manual clock's time in Unix milliseconds (rlockd only).",
        ),
    CommandSpec::new("help", 2, Group::Server, clock_help)
        .flags(CLOCK)
        .doc("0.1.0", "Lists the RLOCKD.CLOCK subcommands."),
];

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::container("rlockd.clock", Group::Server, CLOCK_SUBS).flags(CLOCK)
        .doc("0.1.0", "Moves the manual clock of a server started with --enable-clock-control (rlockd only)."),
    CommandSpec::new("rlockd.locks", -1, Group::Server, locks).flags(ADMIN | READONLY | LOADING | STALE | WHOLE_KEYSPACE)
        .tips(NONDET)
        .syntax("[pattern]")
        .doc("0.1.0", "Describes the locks held: hashes of owner to hold count, and strings with a deadline (rlockd only)."),
    CommandSpec::new("rlockd.waiters", -1, Group::Server, waiting).flags(ADMIN | LOADING | STALE)
        .tips(NONDET)
        .syntax("[pattern]")
        .doc("0.1.0", "Describes who is subscribed to which channel, pattern and shard channel (rlockd only)."),
];
