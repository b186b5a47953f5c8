//! Hash commands: HSET, HSETNX, HGET, HMGET, HGETALL, HDEL, HEXISTS, HLEN,
//! HKEYS, HVALS, HINCRBY, HINCRBYFLOAT, HSCAN, HMSET, HSTRLEN, HRANDFIELD.

use bytes::Bytes;
use rand::RngExt;

use super::Ctx;
use super::args::{RANDOM_REPEATS_MAX, parse_scan};
use super::presets::{
    NONDET, NONDET_ORDER, READ_FAST, RO, RO_ACCESS, RW_ACCESS_UPDATE, RW_UPDATE, WRITE_FAST, key1,
};
use super::spec::acl::HASH;
use super::spec::flag::{FAST, READONLY, WRITE};
use super::spec::{CommandSpec, Group, touches_first, touches_listed};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{HashValue, Touch, Value};
use crate::protocol::{Protocol, Reply};
use crate::pubsub::Event;
use crate::util::long_double::LongDouble;
use crate::util::scan::{Buckets, hash_of};
use crate::util::{glob_match, i64_bytes, parse_i64};

fn copy(b: &[u8]) -> Bytes {
    Bytes::copy_from_slice(b)
}

fn bulk(b: &[u8]) -> Reply {
    Reply::Bulk(copy(b))
}

pub fn hset(ctx: &mut Ctx) -> CmdResult<Reply> {
    if !ctx.args.len().is_multiple_of(2) {
        return Err(CmdError::WrongArity("hset".into()));
    }
    let key = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let limits = db.limits();
    let hash = db.typed_or_insert::<HashValue>(&key, Value::new_hash)?;
    let mut added = 0;
    for pair in ctx.args[2..].chunks(2) {
        if hash.insert(&pair[0], &pair[1], &limits) {
            added += 1;
        }
    }
    db.modified(&key, Event::Hset)?;
    Ok(Reply::Int(added))
}

pub fn hsetnx(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (key, field, value) = (ctx.arg(1).clone(), ctx.arg(2).clone(), ctx.arg(3).clone());
    let mut db = ctx.db();
    let limits = db.limits();
    let hash = db.typed_or_insert::<HashValue>(&key, Value::new_hash)?;
    if hash.contains_key(&field) {
        return Ok(Reply::Int(0));
    }
    hash.insert(&field, &value, &limits);
    db.modified(&key, Event::Hset)?;
    Ok(Reply::Int(1))
}

pub fn hget(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (key, field) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.db();
    Ok(Reply::opt_bulk(
        db.typed::<HashValue>(&key)?
            .and_then(|h| h.get(&field).map(copy)),
    ))
}

pub fn hmget(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let hash = db.typed::<HashValue>(&key)?;
    Ok(Reply::Array(
        ctx.args[2..]
            .iter()
            .map(|f| Reply::opt_bulk(hash.as_ref().and_then(|h| h.get(f).map(copy))))
            .collect(),
    ))
}

pub fn hgetall(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    Ok(Reply::Map(
        db.typed::<HashValue>(&key)?
            .map(|h| h.iter().map(|(f, v)| (bulk(f), bulk(v))).collect())
            .unwrap_or_default(),
    ))
}

pub fn hdel(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let Some(hash) = db.typed::<HashValue>(&key)? else {
        return Ok(Reply::Int(0));
    };
    let mut removed = 0;
    for field in &ctx.args[2..] {
        if hash.remove(field) {
            removed += 1;
        }
    }
    let emptied = hash.is_empty();
    if emptied {
        db.remove(&key)?;
    }
    if removed > 0 {
        db.modified(&key, Event::Hdel)?;
    }
    if emptied {
        db.notify(&key, Event::Del);
    }
    Ok(Reply::Int(removed))
}

pub fn hexists(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (key, field) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.db();
    let found = db
        .typed::<HashValue>(&key)?
        .is_some_and(|h| h.contains_key(&field));
    Ok(Reply::Int(found as i64))
}

pub fn hlen(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    Ok(Reply::Int(
        db.typed::<HashValue>(&key)?.map_or(0, |h| h.len()) as i64,
    ))
}

fn hash_list(ctx: &mut Ctx, pick: for<'h> fn(&'h [u8], &'h [u8]) -> &'h [u8]) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    Ok(Reply::Array(
        db.typed::<HashValue>(&key)?
            .map(|h| h.iter().map(|(f, v)| bulk(pick(f, v))).collect())
            .unwrap_or_default(),
    ))
}

pub fn hkeys(ctx: &mut Ctx) -> CmdResult<Reply> {
    hash_list(ctx, |f, _| f)
}

pub fn hvals(ctx: &mut Ctx) -> CmdResult<Reply> {
    hash_list(ctx, |_, v| v)
}

pub fn hincrby(ctx: &mut Ctx) -> CmdResult<Reply> {
    let delta = parse_i64(ctx.arg(3)).ok_or(CmdError::NotInteger)?;
    let (key, field) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.db();
    let limits = db.limits();
    let hash = db.typed_or_insert::<HashValue>(&key, Value::new_hash)?;
    let current = match hash.get(&field) {
        None => 0,
        Some(v) => parse_i64(v).ok_or(CmdError::HashValueNotInteger)?,
    };
    let next = current.checked_add(delta).ok_or(CmdError::Overflow)?;
    hash.insert(&field, &i64_bytes(next), &limits);
    db.modified(&key, Event::Hincrby)?;
    Ok(Reply::Int(next))
}

/// HSET and HMSET change the field of each field-value pair.
pub fn touches_pairs(args: &[Bytes]) -> Option<Touch<'_>> {
    Some(Touch::pairs(args.get(2..)?))
}

pub fn hincrbyfloat(ctx: &mut Ctx) -> CmdResult<Reply> {
    let delta = LongDouble::parse(ctx.arg(3)).ok_or(CmdError::NotFloat)?;
    if !delta.is_finite() {
        return Err(CmdError::other("ERR value is NaN or Infinity"));
    }
    let (key, field) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.db();
    let limits = db.limits();
    let hash = db.typed_or_insert::<HashValue>(&key, Value::new_hash)?;
    let current = match hash.get(&field) {
        None => LongDouble::ZERO,
        Some(v) => LongDouble::parse(v).ok_or(CmdError::HashValueNotFloat)?,
    };
    let next = current + delta;
    if !next.is_finite() {
        return Err(CmdError::IncrNanOrInf);
    }
    let text = Bytes::from(next.to_human());
    hash.insert(&field, &text, &limits);
    db.modified(&key, Event::Hincrbyfloat)?;
    Ok(Reply::Bulk(text))
}

pub fn hscan(ctx: &mut Ctx) -> CmdResult<Reply> {
    let opts = parse_scan(&ctx.args[2..], false)?;
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let Some(hash) = db.typed::<HashValue>(&key)? else {
        return Ok(Reply::Array(vec![
            Reply::bulk_str("0"),
            Reply::Array(Vec::new()),
        ]));
    };
    // A listpack comes back whole and in order, as Redis sends it.
    let (pairs, cursor): (Vec<_>, u64) = if hash.is_listpack() {
        (hash.iter().collect(), 0)
    } else {
        Buckets::for_len(hash.len()).page(
            hash.iter().map(|(f, v)| (hash_of(f), (f, v))),
            opts.cursor,
            opts.count,
        )
    };
    let mut items = Vec::new();
    for (field, value) in pairs {
        if opts
            .pattern
            .as_ref()
            .is_none_or(|p| glob_match(p, field, false))
        {
            items.push(Reply::Bulk(copy(field)));
            items.push(Reply::Bulk(copy(value)));
        }
    }
    Ok(Reply::Array(vec![
        Reply::bulk_str(&cursor.to_string()),
        Reply::Array(items),
    ]))
}

/// HMSET: HSET's old form, answering OK.
pub fn hmset(ctx: &mut Ctx) -> CmdResult<Reply> {
    if !ctx.args.len().is_multiple_of(2) {
        return Err(CmdError::WrongArity("hmset".into()));
    }
    hset(ctx)?;
    Ok(Reply::OK)
}

pub fn hstrlen(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (key, field) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.db();
    let len = db
        .typed::<HashValue>(&key)?
        .and_then(|h| h.get(&field).map(<[u8]>::len));
    Ok(Reply::Int(len.unwrap_or(0) as i64))
}

/// HRANDFIELD's count, checked as Redis checks it before the key is read.
fn random_count(ctx: &Ctx) -> CmdResult<Option<(i64, bool)>> {
    let Some(raw) = ctx.args.get(2) else {
        return Ok(None);
    };
    let count = parse_i64(raw).ok_or(CmdError::NotInteger)?;
    if count == i64::MIN {
        return Err(CmdError::CountOutOfRange);
    }
    let with_values = match ctx.args.get(3) {
        None => false,
        Some(opt) if ctx.args.len() == 4 && opt.eq_ignore_ascii_case(b"WITHVALUES") => true,
        Some(_) => return Err(CmdError::Syntax),
    };
    if with_values && !(-i64::MAX / 2..=i64::MAX / 2).contains(&count) {
        return Err(CmdError::OutOfRange);
    }
    Ok(Some((count, with_values)))
}

/// HRANDFIELD: one random field, or `count` of them: distinct for a
/// positive count (the whole hash, in order, when it asks for as many),
/// repeating for a negative one. RESP3 pairs a field with its value.
pub fn hrandfield(ctx: &mut Ctx) -> CmdResult<Reply> {
    let count = random_count(ctx)?;
    let resp3 = ctx.client.protocol == Protocol::Resp3;
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let hash = db.typed::<HashValue>(&key)?;
    let mut rng = rand::rng();
    let Some((count, with_values)) = count else {
        return Ok(Reply::opt_bulk(hash.and_then(|h| {
            let i = rng.random_range(0..h.len().max(1));
            h.iter().nth(i).map(|(f, _)| copy(f))
        })));
    };
    let Some(hash) = hash.filter(|_| count != 0) else {
        return Ok(Reply::Array(Vec::new()));
    };
    let pairs: Vec<(&[u8], &[u8])> = hash.iter().collect();
    let picks: Vec<usize> = if count < 0 || count == 1 {
        let repeats = count.unsigned_abs();
        if repeats > RANDOM_REPEATS_MAX {
            return Err(CmdError::OutOfRange);
        }
        (0..repeats)
            .map(|_| rng.random_range(0..pairs.len()))
            .collect()
    } else if count as u64 >= pairs.len() as u64 {
        (0..pairs.len()).collect()
    } else {
        rand::seq::index::sample(&mut rng, pairs.len(), count as usize).into_vec()
    };
    let mut out = Vec::with_capacity(picks.len() * (1 + with_values as usize));
    for (field, value) in picks.into_iter().map(|i| pairs[i]) {
        match (with_values, resp3) {
            (false, _) => out.push(bulk(field)),
            (true, false) => out.extend([bulk(field), bulk(value)]),
            (true, true) => out.push(Reply::Array(vec![bulk(field), bulk(value)])),
        }
    }
    Ok(Reply::Array(out))
}

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("hset", -4, Group::Hash, hset).flags(WRITE_FAST).acl(HASH).keys(&key1(RW_UPDATE)).touches(touches_pairs)
        .syntax("key (field value)...")
        .doc("2.0.0", "Sets fields of a hash; returns how many were new."),
    CommandSpec::new("hsetnx", 4, Group::Hash, hsetnx).flags(WRITE_FAST).acl(HASH).keys(&key1(&["RW", "insert"])).touches(touches_first)
        .syntax("key field value")
        .doc("2.0.0", "Sets a hash field only if it does not exist."),
    CommandSpec::new("hget", 3, Group::Hash, hget).flags(READ_FAST).acl(HASH).keys(&key1(RO_ACCESS))
        .syntax("key field")
        .doc("2.0.0", "Returns the value of a hash field."),
    CommandSpec::new("hmget", -3, Group::Hash, hmget).flags(READ_FAST).acl(HASH).keys(&key1(RO_ACCESS))
        .syntax("key field...")
        .doc("2.0.0", "Returns the values of several hash fields."),
    CommandSpec::new("hgetall", 2, Group::Hash, hgetall).flags(READONLY).acl(HASH).tips(NONDET_ORDER).keys(&key1(RO_ACCESS))
        .syntax("key")
        .doc("2.0.0", "Returns every field and value of a hash."),
    CommandSpec::new("hdel", -3, Group::Hash, hdel).flags(WRITE | FAST).acl(HASH).keys(&key1(&["RW", "delete"])).touches(touches_listed)
        .syntax("key field...")
        .doc("2.0.0", "Deletes hash fields; returns how many existed."),
    CommandSpec::new("hexists", 3, Group::Hash, hexists).flags(READ_FAST).acl(HASH).keys(&key1(RO))
        .syntax("key field")
        .doc("2.0.0", "Tells whether a hash field exists."),
    CommandSpec::new("hlen", 2, Group::Hash, hlen).flags(READ_FAST).acl(HASH).keys(&key1(RO))
        .syntax("key")
        .doc("2.0.0", "Returns the number of fields in a hash."),
    CommandSpec::new("hkeys", 2, Group::Hash, hkeys).flags(READONLY).acl(HASH).tips(NONDET_ORDER).keys(&key1(RO_ACCESS))
        .syntax("key")
        .doc("2.0.0", "Returns every field name of a hash."),
    CommandSpec::new("hvals", 2, Group::Hash, hvals).flags(READONLY).acl(HASH).tips(NONDET_ORDER).keys(&key1(RO_ACCESS))
        .syntax("key")
        .doc("2.0.0", "Returns every value of a hash."),
    CommandSpec::new("hincrby", 4, Group::Hash, hincrby).flags(WRITE_FAST).acl(HASH).keys(&key1(RW_ACCESS_UPDATE)).touches(touches_first)
        .syntax("key field increment")
        .doc("2.0.0", "Adds an integer to a hash field."),
    CommandSpec::new("hincrbyfloat", 4, Group::Hash, hincrbyfloat).flags(WRITE_FAST).acl(HASH).keys(&key1(RW_ACCESS_UPDATE)).touches(touches_first)
        .syntax("key field increment")
        .doc("2.6.0", "Adds a floating point number to a hash field."),
    CommandSpec::new("hmset", -4, Group::Hash, hmset).flags(WRITE_FAST).acl(HASH).keys(&key1(RW_UPDATE)).touches(touches_pairs)
        .syntax("key (field value)...")
        .doc("2.0.0", "Sets fields of a hash (HSET's old form, answering OK)."),
    CommandSpec::new("hstrlen", 3, Group::Hash, hstrlen).flags(READ_FAST).acl(HASH).keys(&key1(RO))
        .syntax("key field")
        .doc("3.2.0", "Returns the length of a hash field's value."),
    CommandSpec::new("hrandfield", -2, Group::Hash, hrandfield).flags(READONLY).acl(HASH).tips(NONDET).keys(&key1(RO_ACCESS))
        .syntax("key [count [WITHVALUES]]")
        .doc("6.2.0", "Returns random fields of a hash, with their values if asked; a negative count may repeat them."),
    CommandSpec::new("hscan", -3, Group::Hash, hscan).flags(READONLY).acl(HASH).tips(NONDET).keys(&key1(RO_ACCESS))
        .syntax("key cursor [MATCH pattern] [COUNT count]")
        .doc("2.8.0", "Iterates over the fields of a hash with a cursor."),
];
