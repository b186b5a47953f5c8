//! String commands: GET, SET and its variants, MGET, MSET, MSETNX,
//! counters, APPEND, STRLEN, GETRANGE.

use bytes::{Bytes, BytesMut};

use super::Ctx;
use super::expire::{Base, Unit, deadline_ms};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{Db, Ttl, Value};
use crate::protocol::Reply;
use crate::protocol::parse::MAX_BULK_LEN;
use crate::pubsub::Event;
use crate::util::{i64_bytes, parse_i64};

/// The string at `key`: `None` if absent, WRONGTYPE if another type.
fn string_at(db: &mut Db, key: &[u8]) -> CmdResult<Option<Bytes>> {
    match db.get(key)? {
        None => Ok(None),
        Some(Value::Str(s)) => Ok(Some(s.clone())),
        Some(_) => Err(CmdError::WrongType),
    }
}

/// `string_at` for commands that write the key: no hit/miss accounting
/// and no `keymiss` event, as Redis's write lookups.
fn string_for_write(db: &mut Db, key: &[u8]) -> CmdResult<Option<Bytes>> {
    match db.get_mut(key)? {
        None => Ok(None),
        Some(Value::Str(s)) => Ok(Some(s.clone())),
        Some(_) => Err(CmdError::WrongType),
    }
}

fn owned(b: &[u8]) -> Value {
    Value::Str(Bytes::copy_from_slice(b))
}

pub fn get(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    Ok(Reply::opt_bulk(string_at(&mut ctx.db(), &key)?))
}

#[derive(Default)]
struct SetOptions {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    /// The expiry option's unit, base and raw argument.
    expire: Option<(Unit, Base, Bytes)>,
}

fn parse_set_options(args: &[Bytes]) -> CmdResult<SetOptions> {
    let mut o = SetOptions::default();
    let mut i = 0;
    while i < args.len() {
        let opt = args[i].to_ascii_uppercase();
        let timed = match &opt[..] {
            b"EX" => Some((Unit::Seconds, Base::Relative)),
            b"PX" => Some((Unit::Millis, Base::Relative)),
            b"EXAT" => Some((Unit::Seconds, Base::Absolute)),
            b"PXAT" => Some((Unit::Millis, Base::Absolute)),
            _ => None,
        };
        match &opt[..] {
            b"NX" if !o.xx => o.nx = true,
            b"XX" if !o.nx => o.xx = true,
            b"GET" => o.get = true,
            b"KEEPTTL" if o.expire.is_none() => o.keepttl = true,
            // The same expiry option may repeat (the last wins); two
            // different ones may not.
            _ if timed.is_some()
                && !o.keepttl
                && o.expire
                    .as_ref()
                    .is_none_or(|(u, b, _)| Some((*u, *b)) == timed)
                && i + 1 < args.len() =>
            {
                let (unit, base) = timed.expect("matched above");
                o.expire = Some((unit, base, args[i + 1].clone()));
                i += 1;
            }
            _ => return Err(CmdError::Syntax),
        }
        i += 1;
    }
    Ok(o)
}

/// A SET-family expiry argument: positive, and no overflow once absolute.
fn expiry_deadline(
    raw: &[u8],
    unit: Unit,
    base: Base,
    now: u64,
    cmd: &'static str,
) -> CmdResult<u64> {
    let n = parse_i64(raw).ok_or(CmdError::NotInteger)?;
    if n <= 0 {
        return Err(CmdError::InvalidExpireTime(cmd));
    }
    let at = deadline_ms(raw, unit, base, now, cmd)?;
    u64::try_from(at).map_err(|_| CmdError::InvalidExpireTime(cmd))
}

pub fn set(ctx: &mut Ctx) -> CmdResult<Reply> {
    let opts = parse_set_options(&ctx.args[3..])?;
    let now = ctx.now();
    let ttl = match &opts.expire {
        Some((unit, base, raw)) => Ttl::At(expiry_deadline(raw, *unit, *base, now, "set")?),
        None if opts.keepttl => Ttl::Keep,
        None => Ttl::Clear,
    };
    let (key, value) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.db();
    let old = if opts.get {
        string_at(&mut db, &key)?
    } else {
        None
    };
    let exists = db.exists(&key)?;
    if (opts.nx && exists) || (opts.xx && !exists) {
        return Ok(if opts.get {
            Reply::opt_bulk(old)
        } else {
            Reply::Nil
        });
    }
    db.insert(&key, owned(&value), ttl)?;
    db.modified(&key, Event::Set)?;
    if opts.expire.is_some() {
        db.notify(&key, Event::Expire);
    }
    Ok(if opts.get {
        Reply::opt_bulk(old)
    } else {
        Reply::OK
    })
}

pub fn setnx(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (key, value) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.db();
    if db.exists(&key)? {
        return Ok(Reply::Int(0));
    }
    db.insert(&key, owned(&value), Ttl::Clear)?;
    db.modified(&key, Event::Set)?;
    Ok(Reply::Int(1))
}

fn set_with_ttl(ctx: &mut Ctx, unit: Unit, cmd: &'static str) -> CmdResult<Reply> {
    let at = expiry_deadline(ctx.arg(2), unit, Base::Relative, ctx.now(), cmd)?;
    let (key, value) = (ctx.arg(1).clone(), ctx.arg(3).clone());
    let mut db = ctx.db();
    db.insert(&key, owned(&value), Ttl::At(at))?;
    db.modified(&key, Event::Set)?;
    db.notify(&key, Event::Expire);
    Ok(Reply::OK)
}

pub fn setex(ctx: &mut Ctx) -> CmdResult<Reply> {
    set_with_ttl(ctx, Unit::Seconds, "setex")
}

pub fn psetex(ctx: &mut Ctx) -> CmdResult<Reply> {
    set_with_ttl(ctx, Unit::Millis, "psetex")
}

pub fn getset(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (key, value) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.db();
    let old = string_at(&mut db, &key)?;
    db.insert(&key, owned(&value), Ttl::Clear)?;
    db.modified(&key, Event::Set)?;
    Ok(Reply::opt_bulk(old))
}

pub fn getdel(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let old = string_at(&mut db, &key)?;
    if old.is_some() {
        db.remove(&key)?;
        db.modified(&key, Event::Del)?;
    }
    Ok(Reply::opt_bulk(old))
}

pub fn mget(ctx: &mut Ctx) -> CmdResult<Reply> {
    let mut db = ctx.locked.db(ctx.client.db);
    let mut out = Vec::with_capacity(ctx.args.len() - 1);
    for key in &ctx.args[1..] {
        out.push(match db.get(key)? {
            Some(Value::Str(s)) => Reply::Bulk(s.clone()),
            _ => Reply::Nil,
        });
    }
    Ok(Reply::Array(out))
}

pub fn mset(ctx: &mut Ctx) -> CmdResult<Reply> {
    set_pairs(ctx, "mset")?;
    Ok(Reply::OK)
}

/// Sets every key/value pair of the arguments, as MSET does; the name is
/// for the arity error of an odd count.
fn set_pairs(ctx: &mut Ctx, name: &str) -> CmdResult<()> {
    if ctx.args.len().is_multiple_of(2) {
        return Err(CmdError::WrongArity(name.into()));
    }
    let mut db = ctx.locked.db(ctx.client.db);
    for pair in ctx.args[1..].chunks(2) {
        db.insert(&pair[0], owned(&pair[1]), Ttl::Clear)?;
        db.modified(&pair[0], Event::Set)?;
    }
    Ok(())
}

/// MSET only when none of the keys exists, of any type: 1 if it set them.
pub fn msetnx(ctx: &mut Ctx) -> CmdResult<Reply> {
    if !ctx.args.len().is_multiple_of(2) {
        let mut db = ctx.locked.db(ctx.client.db);
        for key in ctx.args[1..].iter().step_by(2) {
            if db.exists(key)? {
                return Ok(Reply::Int(0));
            }
        }
    }
    set_pairs(ctx, "msetnx")?;
    Ok(Reply::Int(1))
}

/// Adds `delta` to the integer at `key` (0 if absent), keeping its TTL.
fn incr_by(ctx: &mut Ctx, delta: i64) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let current = match string_for_write(&mut db, &key)? {
        None => 0,
        Some(s) => parse_i64(&s).ok_or(CmdError::NotInteger)?,
    };
    let next = current.checked_add(delta).ok_or(CmdError::Overflow)?;
    db.insert(&key, Value::Str(i64_bytes(next)), Ttl::Keep)?;
    db.modified(&key, Event::Incrby)?;
    Ok(Reply::Int(next))
}

fn delta_arg(ctx: &Ctx) -> CmdResult<i64> {
    parse_i64(ctx.arg(2)).ok_or(CmdError::NotInteger)
}

pub fn incr(ctx: &mut Ctx) -> CmdResult<Reply> {
    incr_by(ctx, 1)
}

pub fn decr(ctx: &mut Ctx) -> CmdResult<Reply> {
    incr_by(ctx, -1)
}

pub fn incrby(ctx: &mut Ctx) -> CmdResult<Reply> {
    let delta = delta_arg(ctx)?;
    incr_by(ctx, delta)
}

pub fn decrby(ctx: &mut Ctx) -> CmdResult<Reply> {
    let delta = delta_arg(ctx)?;
    let negated = delta
        .checked_neg()
        .ok_or_else(|| CmdError::other("ERR decrement would overflow"))?;
    incr_by(ctx, negated)
}

pub fn append(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (key, tail) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.db();
    let joined = match string_for_write(&mut db, &key)? {
        None => Bytes::copy_from_slice(&tail),
        Some(head) => {
            if (head.len() + tail.len()) as i64 > MAX_BULK_LEN {
                return Err(CmdError::other(
                    "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
                ));
            }
            let mut buf = BytesMut::with_capacity(head.len() + tail.len());
            buf.extend_from_slice(&head);
            buf.extend_from_slice(&tail);
            buf.freeze()
        }
    };
    let len = joined.len();
    db.insert(&key, Value::Str(joined), Ttl::Keep)?;
    db.modified(&key, Event::Append)?;
    Ok(Reply::Int(len as i64))
}

pub fn strlen(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    Ok(Reply::Int(
        string_at(&mut ctx.db(), &key)?.map_or(0, |s| s.len()) as i64,
    ))
}

/// GETRANGE: the bytes from `start` to `end` inclusive, negative offsets
/// counting from the end, clamped to the string; empty (never nil) for a
/// missing key. The offsets are checked before the key's type, as Redis does.
pub fn getrange(ctx: &mut Ctx) -> CmdResult<Reply> {
    let start = parse_i64(ctx.arg(2)).ok_or(CmdError::NotInteger)?;
    let end = parse_i64(ctx.arg(3)).ok_or(CmdError::NotInteger)?;
    let key = ctx.arg(1).clone();
    let Some(value) = string_at(&mut ctx.db(), &key)? else {
        return Ok(Reply::Bulk(Bytes::new()));
    };
    let len = value.len() as i64;
    if (start < 0 && end < 0 && start > end) || len == 0 {
        return Ok(Reply::Bulk(Bytes::new()));
    }
    let from_end = |i: i64| if i < 0 { (len + i).max(0) } else { i };
    let (start, end) = (from_end(start), from_end(end).min(len - 1));
    Ok(Reply::Bulk(if start > end {
        Bytes::new()
    } else {
        value.slice(start as usize..=end as usize)
    }))
}
