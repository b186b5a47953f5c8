//! String commands: GET, SET and its variants, GETEX, MGET, MSET, MSETNX,
//! counters, INCRBYFLOAT, APPEND, STRLEN, GETRANGE/SUBSTR, SETRANGE, LCS.

use bytes::{Bytes, BytesMut};

use super::Ctx;
use super::args::{Base, Unit, deadline_ms};
use super::presets::{
    OW_UPDATE, READ_FAST, RO, RO_ACCESS, RW_ACCESS_UPDATE, RW_UPDATE, WRITE_FAST, key1, keys_all,
};
use super::spec::acl::STRING;
use super::spec::flag::{DENYOOM, FAST, READONLY, WRITE};
use super::spec::{CommandSpec, Group, KeySpec};
use super::values::edit_string;
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{Db, StrForm, Ttl, Value};
use crate::protocol::Reply;
use crate::protocol::parse::MAX_BULK_LEN;
use crate::pubsub::Event;
use crate::util::long_double::LongDouble;
use crate::util::{i64_bytes, parse_i64};

fn owned(b: &[u8]) -> Value {
    Value::string(Bytes::copy_from_slice(b))
}

pub fn get(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    Ok(Reply::opt_bulk(ctx.db().typed::<Bytes>(&key)?.cloned()))
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

/// The unit and base an expiry option (EX, PX, EXAT, PXAT) names.
fn expiry_option(upper: &[u8]) -> Option<(Unit, Base)> {
    match upper {
        b"EX" => Some((Unit::Seconds, Base::Relative)),
        b"PX" => Some((Unit::Millis, Base::Relative)),
        b"EXAT" => Some((Unit::Seconds, Base::Absolute)),
        b"PXAT" => Some((Unit::Millis, Base::Absolute)),
        _ => None,
    }
}

fn parse_set_options(args: &[Bytes]) -> CmdResult<SetOptions> {
    let mut o = SetOptions::default();
    let mut i = 0;
    while i < args.len() {
        let opt = args[i].to_ascii_uppercase();
        let timed = expiry_option(&opt);
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

/// SET reads its key only with GET (an ACL user without read access to
/// the key may still overwrite it).
pub fn set_key_flags(args: &[Bytes]) -> &'static [&'static str] {
    if args.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get")) {
        &["RW", "access", "update"]
    } else {
        &["OW", "update"]
    }
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
    // A SET that keeps the deadline goes as itself, as Redis sends it;
    // any other as the value and deadline it left (`SET key value PXAT`).
    if opts.keepttl {
        ctx.locked.begin_command_record();
    }
    let mut db = ctx.db();
    let old = if opts.get {
        db.typed::<Bytes>(&key)?.cloned()
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
    if opts.keepttl {
        let mut line: Vec<&[u8]> = ctx.args.iter().map(|a| &a[..]).collect();
        line[0] = b"SET";
        ctx.locked.record_as_command(ctx.client.db, &line);
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
    let old = db.typed::<Bytes>(&key)?.cloned();
    db.insert(&key, owned(&value), Ttl::Clear)?;
    db.modified(&key, Event::Set)?;
    Ok(Reply::opt_bulk(old))
}

pub fn getdel(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let old = db.typed::<Bytes>(&key)?.cloned();
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
            Some(Value::Str(s, _)) => Reply::Bulk(s.clone()),
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
    let current = match db.typed_for_write::<Bytes>(&key)?.cloned() {
        None => 0,
        Some(s) => parse_i64(&s).ok_or(CmdError::NotInteger)?,
    };
    let next = current.checked_add(delta).ok_or(CmdError::Overflow)?;
    db.insert(&key, Value::string(i64_bytes(next)), Ttl::Keep)?;
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
    // A new key is stored whole; Redis appends to its own raw copy.
    let (joined, form) = match db.typed_for_write::<Bytes>(&key)?.cloned() {
        None => (Bytes::copy_from_slice(&tail), StrForm::ByBytes),
        Some(head) => {
            if (head.len() + tail.len()) as i64 > MAX_BULK_LEN {
                return Err(CmdError::other(
                    "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
                ));
            }
            let mut buf = BytesMut::with_capacity(head.len() + tail.len());
            buf.extend_from_slice(&head);
            buf.extend_from_slice(&tail);
            (buf.freeze(), StrForm::Raw)
        }
    };
    let len = joined.len();
    db.insert(&key, Value::Str(joined, form), Ttl::Keep)?;
    db.modified(&key, Event::Append)?;
    Ok(Reply::Int(len as i64))
}

pub fn strlen(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    Ok(Reply::Int(
        ctx.db().typed::<Bytes>(&key)?.map_or(0, |s| s.len()) as i64,
    ))
}

/// GETRANGE: the bytes from `start` to `end` inclusive, negative offsets
/// counting from the end, clamped to the string; empty (never nil) for a
/// missing key. The offsets are checked before the key's type, as Redis does.
pub fn getrange(ctx: &mut Ctx) -> CmdResult<Reply> {
    let start = parse_i64(ctx.arg(2)).ok_or(CmdError::NotInteger)?;
    let end = parse_i64(ctx.arg(3)).ok_or(CmdError::NotInteger)?;
    let key = ctx.arg(1).clone();
    let Some(value) = ctx.db().typed::<Bytes>(&key)?.cloned() else {
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

/// SUBSTR is GETRANGE's old name.
pub fn substr(ctx: &mut Ctx) -> CmdResult<Reply> {
    getrange(ctx)
}

/// What GETEX does to the key's time to live.
enum GetexTtl {
    Untouched,
    Persist,
    Expire(Unit, Base, Bytes),
}

/// GETEX's options: one kind of expiry (repeatable, the last wins) or
/// PERSIST, never both.
fn parse_getex_options(args: &[Bytes]) -> CmdResult<GetexTtl> {
    let mut ttl = GetexTtl::Untouched;
    let mut i = 0;
    while i < args.len() {
        let opt = args[i].to_ascii_uppercase();
        ttl = match (expiry_option(&opt), &ttl) {
            (None, GetexTtl::Untouched | GetexTtl::Persist) if opt == b"PERSIST" => {
                GetexTtl::Persist
            }
            (Some((unit, base)), GetexTtl::Untouched) if i + 1 < args.len() => {
                i += 1;
                GetexTtl::Expire(unit, base, args[i].clone())
            }
            (Some(kind), GetexTtl::Expire(u, b, _)) if kind == (*u, *b) && i + 1 < args.len() => {
                i += 1;
                GetexTtl::Expire(kind.0, kind.1, args[i].clone())
            }
            _ => return Err(CmdError::Syntax),
        };
        i += 1;
    }
    Ok(ttl)
}

/// GETEX: GET that also sets or clears the time to live. The key is looked
/// up before the expiry is checked, so a missing key answers nil whatever
/// the time given.
pub fn getex(ctx: &mut Ctx) -> CmdResult<Reply> {
    let ttl = parse_getex_options(&ctx.args[2..])?;
    let now = ctx.now();
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let Some(value) = db.typed::<Bytes>(&key)?.cloned() else {
        return Ok(Reply::Nil);
    };
    match ttl {
        GetexTtl::Untouched => {}
        GetexTtl::Expire(unit, base, raw) => {
            let at = expiry_deadline(&raw, unit, base, now, "getex")?;
            // Only an absolute time can already be past.
            if base == Base::Absolute && db.already_expired(at) {
                db.remove(&key)?;
                db.modified(&key, Event::Del)?;
            } else {
                db.set_expire(&key, Some(at))?;
                db.deadline_modified(&key)?;
            }
        }
        GetexTtl::Persist => {
            if db.entry(&key)?.is_some_and(|e| e.expire_at().is_some()) {
                db.set_expire(&key, None)?;
                db.modified(&key, Event::Persist)?;
            }
        }
    }
    Ok(Reply::Bulk(value))
}

/// Refuses a string that would grow past the largest bulk Redis accepts.
pub(super) fn check_string_size(len: u64) -> CmdResult<()> {
    if len > MAX_BULK_LEN as u64 {
        return Err(CmdError::other(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
        ));
    }
    Ok(())
}

/// SETRANGE: overwrites the string from `offset`, zero-padding a gap; an
/// empty value changes nothing (and creates nothing).
pub fn setrange(ctx: &mut Ctx) -> CmdResult<Reply> {
    let offset = parse_i64(ctx.arg(2)).ok_or(CmdError::NotInteger)?;
    let offset =
        usize::try_from(offset).map_err(|_| CmdError::other("ERR offset is out of range"))?;
    let (key, patch) = (ctx.arg(1).clone(), ctx.arg(3).clone());
    let mut db = ctx.db();
    let current_len = db.typed_for_write::<Bytes>(&key)?.map(|s| s.len());
    if patch.is_empty() {
        return Ok(Reply::Int(current_len.unwrap_or(0) as i64));
    }
    check_string_size(offset as u64 + patch.len() as u64)?;
    let end = offset + patch.len();
    let len = edit_string(&mut db, &key, end, |buf| {
        buf[offset..end].copy_from_slice(&patch);
        buf.len()
    })?;
    db.modified(&key, Event::Setrange)?;
    Ok(Reply::Int(len as i64))
}

/// INCRBYFLOAT: the stored value is checked before the increment, and the
/// result kept in the human form (no exponent), TTL untouched.
pub fn incrbyfloat(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (key, raw_delta) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    // Sent as Redis sends it: the value it left, the deadline kept.
    ctx.locked.begin_command_record();
    let mut db = ctx.db();
    let current = match db.typed_for_write::<Bytes>(&key)?.cloned() {
        None => LongDouble::ZERO,
        Some(s) => LongDouble::parse(&s).ok_or(CmdError::NotFloat)?,
    };
    let delta = LongDouble::parse(&raw_delta).ok_or(CmdError::NotFloat)?;
    let next = current + delta;
    if !next.is_finite() {
        return Err(CmdError::IncrNanOrInf);
    }
    let text = Bytes::from(next.to_human());
    db.insert(&key, Value::Str(text.clone(), StrForm::Text), Ttl::Keep)?;
    db.modified(&key, Event::Incrbyfloat)?;
    let line: [&[u8]; 4] = [b"SET", &key, &text, b"KEEPTTL"];
    ctx.locked.record_as_command(ctx.client.db, &line);
    Ok(Reply::Bulk(text))
}

#[derive(Default)]
struct LcsOptions {
    len: bool,
    idx: bool,
    with_match_len: bool,
    min_match_len: u64,
}

fn parse_lcs_options(args: &[Bytes]) -> CmdResult<LcsOptions> {
    let mut o = LcsOptions::default();
    let mut i = 0;
    while i < args.len() {
        match &args[i].to_ascii_uppercase()[..] {
            b"IDX" => o.idx = true,
            b"LEN" => o.len = true,
            b"WITHMATCHLEN" => o.with_match_len = true,
            b"MINMATCHLEN" if i + 1 < args.len() => {
                i += 1;
                let n = parse_i64(&args[i]).ok_or(CmdError::NotInteger)?;
                o.min_match_len = n.max(0) as u64;
            }
            _ => return Err(CmdError::Syntax),
        }
        i += 1;
    }
    if o.idx && o.len {
        return Err(CmdError::other(
            "ERR If you want both the length and indexes, please just use IDX.",
        ));
    }
    Ok(o)
}

/// LCS: the longest common subsequence of two strings, its length, or the
/// matching ranges (newest first, as Redis walks its table backwards).
pub fn lcs(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (ka, kb) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.db();
    let strings = |db: &mut Db, key: &[u8]| match db.get(key)? {
        None => Ok(Bytes::new()),
        Some(Value::Str(s, _)) => Ok(s.clone()),
        Some(_) => Err(CmdError::other(
            "ERR The specified keys must contain string values",
        )),
    };
    let a = strings(&mut db, &ka)?;
    let b = strings(&mut db, &kb)?;
    let opts = parse_lcs_options(&ctx.args[3..])?;
    let table = LcsTable::build(&a, &b)?;
    let total = table.at(a.len(), b.len()) as i64;
    if opts.len {
        return Ok(Reply::Int(total));
    }
    let walk = table.walk(&a, &b);
    if !opts.idx {
        return Ok(Reply::Bulk(walk.common.into()));
    }
    let matches = walk
        .ranges
        .iter()
        .filter(|r| r.len() >= opts.min_match_len)
        .map(|r| {
            let mut item = vec![
                Reply::Array(vec![Reply::Int(r.a.0 as i64), Reply::Int(r.a.1 as i64)]),
                Reply::Array(vec![Reply::Int(r.b.0 as i64), Reply::Int(r.b.1 as i64)]),
            ];
            if opts.with_match_len {
                item.push(Reply::Int(r.len() as i64));
            }
            Reply::Array(item)
        })
        .collect();
    Ok(Reply::Map(vec![
        (Reply::bulk_str("matches"), Reply::Array(matches)),
        (Reply::bulk_str("len"), Reply::Int(total)),
    ]))
}

/// The dynamic-programming table of LCS: cell (i, j) holds the length of
/// the longest common subsequence of `a[..i]` and `b[..j]`.
struct LcsTable {
    cells: Vec<u32>,
    width: usize,
}

/// One run of matching bytes: inclusive index ranges in each string.
struct LcsRange {
    a: (usize, usize),
    b: (usize, usize),
}

impl LcsRange {
    fn len(&self) -> u64 {
        (self.a.1 - self.a.0 + 1) as u64
    }
}

struct LcsWalk {
    common: Vec<u8>,
    ranges: Vec<LcsRange>,
}

impl LcsTable {
    /// Refuses, as Redis does, a table larger than the largest bulk string,
    /// and reports an allocation that fails instead of aborting.
    fn build(a: &[u8], b: &[u8]) -> CmdResult<LcsTable> {
        let width = b.len() + 1;
        let cells = (a.len() as u64 + 1).saturating_mul(width as u64);
        if cells.saturating_mul(4) > MAX_BULK_LEN as u64 {
            return Err(CmdError::other(
                "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
            ));
        }
        let mut table = Vec::new();
        table.try_reserve_exact(cells as usize).map_err(|_| {
            CmdError::other("ERR Insufficient memory, failed allocating transient memory for LCS")
        })?;
        table.resize(cells as usize, 0u32);
        for i in 1..=a.len() {
            for j in 1..width {
                table[i * width + j] = if a[i - 1] == b[j - 1] {
                    table[(i - 1) * width + j - 1] + 1
                } else {
                    table[(i - 1) * width + j].max(table[i * width + j - 1])
                };
            }
        }
        Ok(LcsTable {
            cells: table,
            width,
        })
    }

    fn at(&self, i: usize, j: usize) -> u32 {
        self.cells[i * self.width + j]
    }

    /// Walks back from the last cell, preferring to drop a byte of `b` on
    /// a tie, as Redis does: the common bytes and the runs of matches.
    fn walk(&self, a: &[u8], b: &[u8]) -> LcsWalk {
        let mut common = vec![0u8; self.at(a.len(), b.len()) as usize];
        let mut fill = common.len();
        let mut ranges = Vec::new();
        let mut run: Option<LcsRange> = None;
        let (mut i, mut j) = (a.len(), b.len());
        while i > 0 && j > 0 {
            if a[i - 1] == b[j - 1] {
                fill -= 1;
                common[fill] = a[i - 1];
                i -= 1;
                j -= 1;
                match &mut run {
                    Some(r) => {
                        r.a.0 = i;
                        r.b.0 = j;
                    }
                    None => {
                        run = Some(LcsRange {
                            a: (i, i),
                            b: (j, j),
                        })
                    }
                }
                if i == 0 || j == 0 {
                    ranges.extend(run.take());
                }
            } else {
                if self.at(i - 1, j) > self.at(i, j - 1) {
                    i -= 1;
                } else {
                    j -= 1;
                }
                ranges.extend(run.take());
            }
        }
        LcsWalk { common, ranges }
    }
}

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("get", 2, Group::String, get).flags(READ_FAST).acl(STRING).keys(&key1(RO_ACCESS))
        .syntax("key")
        .doc("1.0.0", "Returns the string value of a key."),
    CommandSpec::new("set", -3, Group::String, set).flags(WRITE | DENYOOM).acl(STRING)
        .keys(&key1(&["RW", "access", "update", "variable_flags"])).vary_key_flags(set_key_flags)
        .syntax("key value [NX | XX] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]")
        .doc("1.0.0", "Sets a string value, optionally only if absent or present, with a time to live."),
    CommandSpec::new("setnx", 3, Group::String, setnx).flags(WRITE_FAST).acl(STRING).keys(&key1(&["OW", "insert"]))
        .syntax("key value")
        .doc("1.0.0", "Sets a string value only if the key does not exist."),
    CommandSpec::new("setex", 4, Group::String, setex).flags(WRITE | DENYOOM).acl(STRING).keys(&key1(OW_UPDATE))
        .syntax("key seconds value")
        .doc("2.0.0", "Sets a string value with a time to live in seconds."),
    CommandSpec::new("psetex", 4, Group::String, psetex).flags(WRITE | DENYOOM).acl(STRING).keys(&key1(OW_UPDATE))
        .syntax("key milliseconds value")
        .doc("2.6.0", "Sets a string value with a time to live in milliseconds."),
    CommandSpec::new("getset", 3, Group::String, getset).flags(WRITE_FAST).acl(STRING).keys(&key1(RW_ACCESS_UPDATE))
        .syntax("key value")
        .doc("1.0.0", "Sets a string value and returns the old one."),
    CommandSpec::new("getdel", 2, Group::String, getdel).flags(WRITE | FAST).acl(STRING).keys(&key1(&["RW", "access", "delete"]))
        .syntax("key")
        .doc("6.2.0", "Returns a string value and deletes the key."),
    CommandSpec::new("mget", -2, Group::String, mget).flags(READ_FAST).acl(STRING).tips(&["request_policy:multi_shard"])
        .keys(&keys_all(RO_ACCESS))
        .syntax("key...")
        .doc("1.0.0", "Returns the values of several keys."),
    CommandSpec::new("mset", -3, Group::String, mset).records_itself().flags(WRITE | DENYOOM).acl(STRING)
        .tips(&["request_policy:multi_shard", "response_policy:all_succeeded"])
        .keys(&[KeySpec::range(1, -1, 2, OW_UPDATE)])
        .syntax("(key value)...")
        .doc("1.0.1", "Sets several string values atomically."),
    CommandSpec::new("msetnx", -3, Group::String, msetnx).records_itself().flags(WRITE | DENYOOM).acl(STRING)
        .tips(&["request_policy:multi_shard", "response_policy:agg_min"])
        .keys(&[KeySpec::range(1, -1, 2, &["OW", "insert"])])
        .syntax("(key value)...")
        .doc("1.0.1", "Sets several string values only if none of the keys exists."),
    CommandSpec::new("getrange", 4, Group::String, getrange).flags(READONLY).acl(STRING).keys(&key1(RO_ACCESS))
        .syntax("key start end")
        .doc("2.4.0", "Returns a substring of a string value."),
    CommandSpec::new("incr", 2, Group::String, incr).records_itself().flags(WRITE_FAST).acl(STRING).keys(&key1(RW_ACCESS_UPDATE))
        .syntax("key")
        .doc("1.0.0", "Adds one to an integer value."),
    CommandSpec::new("incrby", 3, Group::String, incrby).records_itself().flags(WRITE_FAST).acl(STRING).keys(&key1(RW_ACCESS_UPDATE))
        .syntax("key increment")
        .doc("1.0.0", "Adds an amount to an integer value."),
    CommandSpec::new("decr", 2, Group::String, decr).records_itself().flags(WRITE_FAST).acl(STRING).keys(&key1(RW_ACCESS_UPDATE))
        .syntax("key")
        .doc("1.0.0", "Subtracts one from an integer value."),
    CommandSpec::new("decrby", 3, Group::String, decrby).records_itself().flags(WRITE_FAST).acl(STRING).keys(&key1(RW_ACCESS_UPDATE))
        .syntax("key decrement")
        .doc("1.0.0", "Subtracts an amount from an integer value."),
    CommandSpec::new("append", 3, Group::String, append).records_itself().flags(WRITE_FAST).acl(STRING).keys(&key1(&["RW", "insert"]))
        .syntax("key value")
        .doc("2.0.0", "Appends to a string value; returns the new length."),
    CommandSpec::new("substr", 4, Group::String, substr).flags(READONLY).acl(STRING).keys(&key1(RO_ACCESS))
        .syntax("key start end")
        .doc("1.0.0", "Returns a substring of a string value (GETRANGE's old name)."),
    CommandSpec::new("setrange", 4, Group::String, setrange).records_itself().flags(WRITE | DENYOOM).acl(STRING).keys(&key1(RW_UPDATE))
        .syntax("key offset value")
        .doc("2.2.0", "Overwrites part of a string value from an offset; returns the new length."),
    CommandSpec::new("getex", -2, Group::String, getex).flags(WRITE | FAST).acl(STRING).keys(&key1(RW_ACCESS_UPDATE))
        .syntax("key [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | PERSIST]")
        .doc("6.2.0", "Returns a string value and sets or clears its time to live."),
    CommandSpec::new("incrbyfloat", 3, Group::String, incrbyfloat).flags(WRITE_FAST).acl(STRING).keys(&key1(RW_ACCESS_UPDATE))
        .syntax("key increment")
        .doc("2.6.0", "Adds a floating point number to a string value."),
    CommandSpec::new("lcs", -3, Group::String, lcs).flags(READONLY).acl(STRING).keys(&[KeySpec::range(1, 1, 1, RO_ACCESS)])
        .syntax("key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]")
        .doc("7.0.0", "Returns the longest common subsequence of two strings, its length or its matches."),
    CommandSpec::new("strlen", 2, Group::String, strlen).flags(READ_FAST).acl(STRING).keys(&key1(RO))
        .syntax("key")
        .doc("2.2.0", "Returns the length of a string value."),
];
