//! Time to live: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (with NX|XX|GT|LT),
//! TTL, PTTL, EXPIRETIME, PEXPIRETIME, PERSIST.

use super::Ctx;
use super::args::{Base, Unit, deadline_ms};
use super::presets::{NONDET, READ_FAST, RO_ACCESS, RW_UPDATE, key1};
use super::spec::acl::KEYSPACE;
use super::spec::flag::{FAST, WRITE};
use super::spec::{CommandSpec, Group};
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;
use crate::pubsub::Event;

#[derive(Default)]
struct Condition {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

fn parse_condition(args: &[bytes::Bytes]) -> CmdResult<Condition> {
    let mut c = Condition::default();
    for arg in args {
        match &arg.to_ascii_lowercase()[..] {
            b"nx" => c.nx = true,
            b"xx" => c.xx = true,
            b"gt" => c.gt = true,
            b"lt" => c.lt = true,
            _ => {
                return Err(CmdError::other(format!(
                    "ERR Unsupported option {}",
                    String::from_utf8_lossy(arg)
                )));
            }
        }
    }
    if c.nx && (c.xx || c.gt || c.lt) {
        return Err(CmdError::other(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if c.gt && c.lt {
        return Err(CmdError::other(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    Ok(c)
}

fn expire_generic(ctx: &mut Ctx, unit: Unit, base: Base, cmd: &'static str) -> CmdResult<Reply> {
    let cond = parse_condition(&ctx.args[3..])?;
    let now = ctx.now();
    let when = deadline_ms(ctx.arg(2), unit, base, now, cmd)?;
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let Some(entry) = db.entry(&key)? else {
        return Ok(Reply::Int(0));
    };
    // No deadline counts as an infinite one for GT and LT.
    let current = entry.expire_at().map(|at| at as i64);
    let allowed = match current {
        None => !cond.xx && !cond.gt,
        Some(cur) => !(cond.nx || (cond.gt && when <= cur) || (cond.lt && when >= cur)),
    };
    if !allowed {
        return Ok(Reply::Int(0));
    }
    // Before the epoch is as past as the epoch itself.
    let at = u64::try_from(when).unwrap_or(0);
    if db.already_expired(at) {
        db.remove(&key)?;
        db.modified(&key, Event::Del)?;
    } else {
        db.set_expire(&key, Some(at))?;
        db.deadline_modified(&key)?;
    }
    Ok(Reply::Int(1))
}

pub fn expire(ctx: &mut Ctx) -> CmdResult<Reply> {
    expire_generic(ctx, Unit::Seconds, Base::Relative, "expire")
}

pub fn pexpire(ctx: &mut Ctx) -> CmdResult<Reply> {
    expire_generic(ctx, Unit::Millis, Base::Relative, "pexpire")
}

pub fn expireat(ctx: &mut Ctx) -> CmdResult<Reply> {
    expire_generic(ctx, Unit::Seconds, Base::Absolute, "expireat")
}

pub fn pexpireat(ctx: &mut Ctx) -> CmdResult<Reply> {
    expire_generic(ctx, Unit::Millis, Base::Absolute, "pexpireat")
}

/// -2 for a missing key, -1 for no deadline, else the remaining time or
/// the deadline itself; seconds are rounded to nearest like Redis.
fn ttl_generic(ctx: &mut Ctx, unit: Unit, base: Base) -> CmdResult<Reply> {
    let now = ctx.now() as i64;
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let Some(entry) = db.entry_untouched(&key)? else {
        return Ok(Reply::Int(-2));
    };
    let Some(at) = entry.expire_at() else {
        return Ok(Reply::Int(-1));
    };
    let ms = match base {
        Base::Relative => (at as i64 - now).max(0),
        Base::Absolute => at as i64,
    };
    Ok(Reply::Int(match unit {
        Unit::Millis => ms,
        Unit::Seconds => (ms + 500) / 1000,
    }))
}

pub fn ttl(ctx: &mut Ctx) -> CmdResult<Reply> {
    ttl_generic(ctx, Unit::Seconds, Base::Relative)
}

pub fn pttl(ctx: &mut Ctx) -> CmdResult<Reply> {
    ttl_generic(ctx, Unit::Millis, Base::Relative)
}

pub fn expiretime(ctx: &mut Ctx) -> CmdResult<Reply> {
    ttl_generic(ctx, Unit::Seconds, Base::Absolute)
}

pub fn pexpiretime(ctx: &mut Ctx) -> CmdResult<Reply> {
    ttl_generic(ctx, Unit::Millis, Base::Absolute)
}

pub fn persist(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let had = db.entry(&key)?.is_some_and(|e| e.expire_at().is_some());
    if had {
        db.set_expire(&key, None)?;
        db.modified(&key, Event::Persist)?;
    }
    Ok(Reply::Int(had as i64))
}

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("expire", -3, Group::Generic, expire)
        .flags(WRITE | FAST)
        .acl(KEYSPACE)
        .keys(&key1(RW_UPDATE))
        .syntax("key seconds [NX | XX | GT | LT]")
        .doc("1.0.0", "Sets a key's time to live in seconds."),
    CommandSpec::new("pexpire", -3, Group::Generic, pexpire)
        .flags(WRITE | FAST)
        .acl(KEYSPACE)
        .keys(&key1(RW_UPDATE))
        .syntax("key milliseconds [NX | XX | GT | LT]")
        .doc("2.6.0", "Sets a key's time to live in milliseconds."),
    CommandSpec::new("expireat", -3, Group::Generic, expireat)
        .flags(WRITE | FAST)
        .acl(KEYSPACE)
        .keys(&key1(RW_UPDATE))
        .syntax("key unix-time-seconds [NX | XX | GT | LT]")
        .doc("1.2.0", "Sets a key's deadline as a Unix time in seconds."),
    CommandSpec::new("pexpireat", -3, Group::Generic, pexpireat)
        .flags(WRITE | FAST)
        .acl(KEYSPACE)
        .keys(&key1(RW_UPDATE))
        .syntax("key unix-time-milliseconds [NX | XX | GT | LT]")
        .doc(
            "2.6.0",
            "Sets a key's deadline as a Unix time in milliseconds.",
        ),
    CommandSpec::new("ttl", 2, Group::Generic, ttl)
        .flags(READ_FAST)
        .acl(KEYSPACE)
        .tips(NONDET)
        .keys(&key1(RO_ACCESS))
        .syntax("key")
        .doc(
            "1.0.0",
            "Returns a key's remaining time to live in seconds.",
        ),
    CommandSpec::new("pttl", 2, Group::Generic, pttl)
        .flags(READ_FAST)
        .acl(KEYSPACE)
        .tips(NONDET)
        .keys(&key1(RO_ACCESS))
        .syntax("key")
        .doc(
            "2.6.0",
            "Returns a key's remaining time to live in milliseconds.",
        ),
    CommandSpec::new("expiretime", 2, Group::Generic, expiretime)
        .flags(READ_FAST)
        .acl(KEYSPACE)
        .keys(&key1(RO_ACCESS))
        .syntax("key")
        .doc(
            "7.0.0",
            "Returns a key's deadline as a Unix time in seconds.",
        ),
    CommandSpec::new("pexpiretime", 2, Group::Generic, pexpiretime)
        .flags(READ_FAST)
        .acl(KEYSPACE)
        .keys(&key1(RO_ACCESS))
        .syntax("key")
        .doc(
            "7.0.0",
            "Returns a key's deadline as a Unix time in milliseconds.",
        ),
    CommandSpec::new("persist", 2, Group::Generic, persist)
        .flags(WRITE | FAST)
        .acl(KEYSPACE)
        .keys(&key1(RW_UPDATE))
        .syntax("key")
        .doc("2.2.0", "Removes a key's time to live."),
];
