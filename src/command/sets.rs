//! Set commands: SADD, SREM, SMEMBERS, SISMEMBER, SMISMEMBER, SCARD, SPOP,
//! SRANDMEMBER, SMOVE, SINTER/SINTERSTORE/SINTERCARD, SUNION/SUNIONSTORE,
//! SDIFF/SDIFFSTORE, SSCAN.

use bytes::Bytes;

use super::Ctx;
use super::args::{RANDOM_REPEATS_MAX, parse_scan};
use super::presets::{
    NONDET, NONDET_ORDER, OW_UPDATE, READ_FAST, RO, RO_ACCESS, RW_ACCESS_DELETE, RW_UPDATE,
    WRITE_FAST, key1, keys_all,
};
use super::spec::acl::SET;
use super::spec::flag::{DENYOOM, FAST, READONLY, WRITE};
use super::spec::{CommandSpec, Group, KeySpec, touches_listed};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{Db, EncodingLimits, SetValue, Ttl, Value};
use crate::protocol::Reply;
use crate::pubsub::Event;
use crate::util::scan::{Buckets, hash_of};
use crate::util::{glob_match, parse_cursor, parse_i64};

fn members_reply(members: Vec<Bytes>) -> Reply {
    Reply::Set(members.into_iter().map(Reply::Bulk).collect())
}

/// Deletes `key` if its set was emptied, raising `del` after the event
/// that emptied it, as Redis does.
fn drop_if_empty(db: &mut Db, key: &[u8]) -> CmdResult<()> {
    if matches!(db.get_mut(key)?, Some(Value::Set(s)) if s.is_empty()) {
        db.remove(key)?;
        db.notify(key, Event::Del);
    }
    Ok(())
}

pub fn sadd(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let limits = db.limits();
    if db.typed_for_write::<SetValue>(&key)?.is_none() {
        let set = SetValue::for_first_member(&ctx.args[2]);
        db.insert(&key, Value::Set(Box::new(set)), Ttl::Clear)?;
    }
    let Some(set) = db.typed_for_write::<SetValue>(&key)? else {
        return Err(CmdError::WrongType);
    };
    let added = ctx.args[2..]
        .iter()
        .filter(|m| set.insert(m, &limits))
        .count();
    if added > 0 {
        db.modified(&key, Event::Sadd)?;
    }
    Ok(Reply::Int(added as i64))
}

pub fn srem(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let Some(set) = db.typed_for_write::<SetValue>(&key)? else {
        return Ok(Reply::Int(0));
    };
    let removed = ctx.args[2..].iter().filter(|m| set.remove(m)).count();
    if removed > 0 {
        db.modified(&key, Event::Srem)?;
        drop_if_empty(&mut db, &key)?;
    }
    Ok(Reply::Int(removed as i64))
}

pub fn smembers(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    Ok(members_reply(
        db.typed::<SetValue>(&key)?
            .map_or_else(Vec::new, |s| s.members()),
    ))
}

pub fn sismember(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (key, member) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.db();
    let found = db
        .typed::<SetValue>(&key)?
        .is_some_and(|s| s.contains(&member));
    Ok(Reply::Int(found as i64))
}

pub fn smismember(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let set = db.typed::<SetValue>(&key)?;
    Ok(Reply::Array(
        ctx.args[2..]
            .iter()
            .map(|m| Reply::Int(set.as_ref().is_some_and(|s| s.contains(m)) as i64))
            .collect(),
    ))
}

pub fn scard(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    Ok(Reply::Int(
        db.typed::<SetValue>(&key)?.map_or(0, |s| s.len()) as i64,
    ))
}

/// A count that must not be negative (SPOP's).
fn positive_count(arg: &[u8]) -> CmdResult<u64> {
    parse_i64(arg)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| CmdError::NotPositive)
}

pub fn spop(ctx: &mut Ctx) -> CmdResult<Reply> {
    if ctx.args.len() > 3 {
        return Err(CmdError::Syntax);
    }
    let count = ctx.args.get(2).map(|c| positive_count(c)).transpose()?;
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let Some(set) = db.typed_for_write::<SetValue>(&key)? else {
        return Ok(match count {
            None => Reply::Nil,
            Some(_) => Reply::Set(Vec::new()),
        });
    };
    let mut rng = rand::rng();
    let popped = match count {
        None => set.pop_random(&mut rng).into_iter().collect(),
        Some(0) => return Ok(Reply::Set(Vec::new())),
        // The whole set goes, in its own order (numeric for an intset).
        Some(n) if n >= set.len() as u64 => {
            std::mem::replace(set, SetValue::empty_ints()).members()
        }
        Some(n) => (0..n).map_while(|_| set.pop_random(&mut rng)).collect(),
    };
    db.modified_members(&key, popped.iter().cloned(), Event::Spop)?;
    drop_if_empty(&mut db, &key)?;
    Ok(match count {
        None => Reply::opt_bulk(popped.into_iter().next()),
        Some(_) => members_reply(popped),
    })
}

pub fn srandmember(ctx: &mut Ctx) -> CmdResult<Reply> {
    if ctx.args.len() > 3 {
        return Err(CmdError::Syntax);
    }
    let count = match ctx.args.get(2) {
        None => None,
        Some(c) => match parse_i64(c).ok_or(CmdError::NotInteger)? {
            i64::MIN => return Err(CmdError::CountOutOfRange),
            n => Some(n),
        },
    };
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let set = db.typed::<SetValue>(&key)?;
    let mut rng = rand::rng();
    let Some(count) = count else {
        return Ok(Reply::opt_bulk(set.and_then(|s| s.random(&mut rng))));
    };
    let Some(set) = set else {
        return Ok(Reply::Array(Vec::new()));
    };
    let picked = if count < 0 {
        let repeats = count.unsigned_abs();
        if repeats > RANDOM_REPEATS_MAX {
            return Err(CmdError::OutOfRange);
        }
        (0..repeats).filter_map(|_| set.random(&mut rng)).collect()
    } else if count as u64 >= set.len() as u64 {
        set.members()
    } else {
        set.sample(count as usize, &mut rng)
    };
    Ok(Reply::Array(picked.into_iter().map(Reply::Bulk).collect()))
}

pub fn smove(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (src, dst, member) = (ctx.arg(1).clone(), ctx.arg(2).clone(), ctx.arg(3).clone());
    let mut db = ctx.db();
    if db.typed_for_write::<SetValue>(&src)?.is_none() {
        return Ok(Reply::Int(0));
    }
    let dst_exists = db.typed_for_write::<SetValue>(&dst)?.is_some();
    let Some(source) = db.typed_for_write::<SetValue>(&src)? else {
        return Ok(Reply::Int(0));
    };
    if src == dst {
        return Ok(Reply::Int(source.contains(&member) as i64));
    }
    if !source.remove(&member) {
        return Ok(Reply::Int(0));
    }
    db.modified_members(&src, [member.clone()], Event::Srem)?;
    drop_if_empty(&mut db, &src)?;
    let limits = db.limits();
    if !dst_exists {
        let set = SetValue::for_first_member(&member);
        db.insert(&dst, Value::Set(Box::new(set)), Ttl::Clear)?;
    }
    if let Some(target) = db.typed_for_write::<SetValue>(&dst)?
        && target.insert(&member, &limits)
    {
        // A destination made just now is recorded whole (`insert`).
        db.modified_members(&dst, [member], Event::Sadd)?;
    }
    Ok(Reply::Int(1))
}

/// The sets at `keys`, every key checked for its type first; a missing
/// key reads as `None`.
fn sources(db: &mut Db, keys: &[Bytes]) -> CmdResult<Vec<Option<SetValue>>> {
    let mut sets = Vec::with_capacity(keys.len());
    for key in keys {
        sets.push(db.typed::<SetValue>(key)?.map(|s| (*s).clone()));
    }
    Ok(sets)
}

/// The members common to every set, in the order of the smallest one;
/// at most `limit` of them.
fn intersection(sets: &[Option<SetValue>], limit: usize) -> Vec<Bytes> {
    let Some(mut sets) = sets.iter().map(Option::as_ref).collect::<Option<Vec<_>>>() else {
        return Vec::new();
    };
    sets.sort_by_key(|s| s.len());
    let Some((smallest, rest)) = sets.split_first() else {
        return Vec::new();
    };
    smallest
        .members()
        .into_iter()
        .filter(|m| rest.iter().all(|s| s.contains(m)))
        .take(limit)
        .collect()
}

fn union(sets: &[Option<SetValue>], limits: &EncodingLimits) -> SetValue {
    let all: Vec<Bytes> = sets.iter().flatten().flat_map(|s| s.members()).collect();
    SetValue::collect(all.iter().map(|m| &m[..]), limits)
}

fn difference(sets: &[Option<SetValue>], limits: &EncodingLimits) -> SetValue {
    let Some(Some(first)) = sets.first() else {
        return SetValue::empty_ints();
    };
    let kept: Vec<Bytes> = first
        .members()
        .into_iter()
        .filter(|m| !sets[1..].iter().flatten().any(|s| s.contains(m)))
        .collect();
    SetValue::collect(kept.iter().map(|m| &m[..]), limits)
}

/// The three ways of combining sets.
#[derive(Clone, Copy)]
enum SetOp {
    Inter,
    Union,
    Diff,
}

impl SetOp {
    fn apply(self, sets: &[Option<SetValue>], limits: &EncodingLimits) -> SetValue {
        match self {
            SetOp::Inter => {
                let common = intersection(sets, usize::MAX);
                SetValue::collect(common.iter().map(|m| &m[..]), limits)
            }
            SetOp::Union => union(sets, limits),
            SetOp::Diff => difference(sets, limits),
        }
    }

    fn store_event(self) -> Event {
        match self {
            SetOp::Inter => Event::Sinterstore,
            SetOp::Union => Event::Sunionstore,
            SetOp::Diff => Event::Sdiffstore,
        }
    }
}

fn combine(ctx: &mut Ctx, op: SetOp) -> CmdResult<Reply> {
    let mut db = ctx.locked.db(ctx.client.db);
    let sets = sources(&mut db, &ctx.args[1..])?;
    Ok(match op {
        // Straight from the smallest set, never rebuilt as an intset.
        SetOp::Inter => members_reply(intersection(&sets, usize::MAX)),
        _ => members_reply(op.apply(&sets, &db.limits()).members()),
    })
}

fn combine_store(ctx: &mut Ctx, op: SetOp) -> CmdResult<Reply> {
    let dst = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let sets = sources(&mut db, &ctx.args[2..])?;
    let result = op.apply(&sets, &db.limits());
    let len = result.len();
    if len == 0 {
        if db.remove(&dst)?.is_some() {
            db.modified(&dst, Event::Del)?;
        }
    } else {
        db.insert(&dst, Value::Set(Box::new(result)), Ttl::Clear)?;
        db.modified(&dst, op.store_event())?;
    }
    Ok(Reply::Int(len as i64))
}

pub fn sinter(ctx: &mut Ctx) -> CmdResult<Reply> {
    combine(ctx, SetOp::Inter)
}

pub fn sunion(ctx: &mut Ctx) -> CmdResult<Reply> {
    combine(ctx, SetOp::Union)
}

pub fn sdiff(ctx: &mut Ctx) -> CmdResult<Reply> {
    combine(ctx, SetOp::Diff)
}

pub fn sinterstore(ctx: &mut Ctx) -> CmdResult<Reply> {
    combine_store(ctx, SetOp::Inter)
}

pub fn sunionstore(ctx: &mut Ctx) -> CmdResult<Reply> {
    combine_store(ctx, SetOp::Union)
}

pub fn sdiffstore(ctx: &mut Ctx) -> CmdResult<Reply> {
    combine_store(ctx, SetOp::Diff)
}

pub fn sintercard(ctx: &mut Ctx) -> CmdResult<Reply> {
    let numkeys = parse_i64(ctx.arg(1))
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| *n > 0)
        .ok_or(CmdError::NumkeysNotPositive)?;
    let after_keys = numkeys
        .checked_add(2)
        .filter(|end| *end <= ctx.args.len())
        .ok_or_else(|| {
            CmdError::other("ERR Number of keys can't be greater than number of args")
        })?;
    let mut limit = usize::MAX;
    let mut at = after_keys;
    while at < ctx.args.len() {
        match ctx.args.get(at + 1) {
            Some(value) if ctx.args[at].eq_ignore_ascii_case(b"limit") => {
                limit = parse_i64(value)
                    .and_then(|n| u64::try_from(n).ok())
                    .ok_or(CmdError::LimitNegative)?
                    .try_into()
                    .unwrap_or(usize::MAX);
                at += 2;
            }
            _ => return Err(CmdError::Syntax),
        }
    }
    if limit == 0 {
        limit = usize::MAX;
    }
    let mut db = ctx.locked.db(ctx.client.db);
    let sets = sources(&mut db, &ctx.args[2..after_keys])?;
    Ok(Reply::Int(intersection(&sets, limit).len() as i64))
}

pub fn sscan(ctx: &mut Ctx) -> CmdResult<Reply> {
    let empty = || Reply::Array(vec![Reply::bulk_str("0"), Reply::Array(Vec::new())]);
    parse_cursor(ctx.arg(2)).ok_or(CmdError::InvalidCursor)?;
    let key = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let Some(set) = db.typed::<SetValue>(&key)? else {
        return Ok(empty());
    };
    let opts = parse_scan(&ctx.args[2..], false)?;
    // An intset comes back whole and in order, as Redis sends it.
    let (members, next) = match set {
        SetValue::Table(members) => {
            let (page, next) = Buckets::for_len(members.len()).page(
                members.iter().map(|m| (hash_of(m), m)),
                opts.cursor,
                opts.count,
            );
            (page.into_iter().cloned().collect(), next)
        }
        SetValue::Ints { .. } => (set.members(), 0),
    };
    let items = members
        .into_iter()
        .filter(|m| {
            opts.pattern
                .as_ref()
                .is_none_or(|p| glob_match(p, m, false))
        })
        .map(Reply::Bulk)
        .collect();
    Ok(Reply::Array(vec![
        Reply::bulk_str(&next.to_string()),
        Reply::Array(items),
    ]))
}

/// A destination, then the source keys (SINTERSTORE and kin).
const fn store_keys(dst: &'static [&'static str]) -> [KeySpec; 2] {
    [
        KeySpec::range(1, 0, 1, dst),
        KeySpec::range(2, -1, 1, RO_ACCESS),
    ]
}

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("sadd", -3, Group::Set, sadd)
        .flags(WRITE_FAST)
        .acl(SET)
        .keys(&key1(&["RW", "insert"]))
        .touches(touches_listed)
        .syntax("key member...")
        .doc("1.0.0", "Adds members to a set; returns how many were new."),
    CommandSpec::new("srem", -3, Group::Set, srem)
        .flags(WRITE | FAST)
        .acl(SET)
        .keys(&key1(&["RW", "delete"]))
        .touches(touches_listed)
        .syntax("key member...")
        .doc(
            "1.0.0",
            "Removes members from a set; returns how many were there.",
        ),
    CommandSpec::new("smembers", 2, Group::Set, smembers)
        .flags(READONLY)
        .acl(SET)
        .tips(NONDET_ORDER)
        .keys(&key1(RO_ACCESS))
        .syntax("key")
        .doc("1.0.0", "Returns every member of a set."),
    CommandSpec::new("sismember", 3, Group::Set, sismember)
        .flags(READ_FAST)
        .acl(SET)
        .keys(&key1(RO))
        .syntax("key member")
        .doc("1.0.0", "Tells whether a value is a member of a set."),
    CommandSpec::new("smismember", -3, Group::Set, smismember)
        .flags(READ_FAST)
        .acl(SET)
        .keys(&key1(RO_ACCESS))
        .syntax("key member...")
        .doc(
            "6.2.0",
            "Tells, for each of several values, whether it is a member of a set.",
        ),
    CommandSpec::new("scard", 2, Group::Set, scard)
        .flags(READ_FAST)
        .acl(SET)
        .keys(&key1(RO))
        .syntax("key")
        .doc("1.0.0", "Returns the number of members of a set."),
    CommandSpec::new("spop", -2, Group::Set, spop)
        .flags(WRITE | FAST)
        .acl(SET)
        .tips(NONDET)
        .keys(&key1(RW_ACCESS_DELETE))
        .syntax("key [count]")
        .doc("1.0.0", "Removes and returns random members of a set."),
    CommandSpec::new("srandmember", -2, Group::Set, srandmember)
        .flags(READONLY)
        .acl(SET)
        .tips(NONDET)
        .keys(&key1(RO_ACCESS))
        .syntax("key [count]")
        .doc(
            "1.0.0",
            "Returns random members of a set; a negative count may repeat them.",
        ),
    CommandSpec::new("smove", 4, Group::Set, smove)
        .flags(WRITE | FAST)
        .acl(SET)
        .keys(&[
            KeySpec::range(1, 0, 1, RW_ACCESS_DELETE),
            KeySpec::range(2, 0, 1, &["RW", "insert"]),
        ])
        .syntax("source destination member")
        .doc("1.0.0", "Moves a member from one set to another."),
    CommandSpec::new("sinter", -2, Group::Set, sinter)
        .flags(READONLY)
        .acl(SET)
        .tips(NONDET_ORDER)
        .keys(&keys_all(RO_ACCESS))
        .syntax("key...")
        .doc("1.0.0", "Returns the members every given set has."),
    CommandSpec::new("sinterstore", -3, Group::Set, sinterstore)
        .records_itself()
        .flags(WRITE | DENYOOM)
        .acl(SET)
        .keys(&store_keys(RW_UPDATE))
        .syntax("destination key...")
        .doc(
            "1.0.0",
            "Stores the intersection of sets at a key; returns its size.",
        ),
    CommandSpec::new("sintercard", -3, Group::Set, sintercard)
        .flags(READONLY)
        .acl(SET)
        .keys(&[KeySpec::keynum(1, RO_ACCESS)])
        .syntax("numkeys key... [LIMIT limit]")
        .doc(
            "7.0.0",
            "Counts the members every given set has, stopping at a limit.",
        ),
    CommandSpec::new("sunion", -2, Group::Set, sunion)
        .flags(READONLY)
        .acl(SET)
        .tips(NONDET_ORDER)
        .keys(&keys_all(RO_ACCESS))
        .syntax("key...")
        .doc("1.0.0", "Returns the members of any of the given sets."),
    CommandSpec::new("sunionstore", -3, Group::Set, sunionstore)
        .records_itself()
        .flags(WRITE | DENYOOM)
        .acl(SET)
        .keys(&store_keys(OW_UPDATE))
        .syntax("destination key...")
        .doc(
            "1.0.0",
            "Stores the union of sets at a key; returns its size.",
        ),
    CommandSpec::new("sdiff", -2, Group::Set, sdiff)
        .flags(READONLY)
        .acl(SET)
        .tips(NONDET_ORDER)
        .keys(&keys_all(RO_ACCESS))
        .syntax("key...")
        .doc(
            "1.0.0",
            "Returns the members of the first set that no other given set has.",
        ),
    CommandSpec::new("sdiffstore", -3, Group::Set, sdiffstore)
        .records_itself()
        .flags(WRITE | DENYOOM)
        .acl(SET)
        .keys(&store_keys(OW_UPDATE))
        .syntax("destination key...")
        .doc(
            "1.0.0",
            "Stores the difference of sets at a key; returns its size.",
        ),
    CommandSpec::new("sscan", -3, Group::Set, sscan)
        .flags(READONLY)
        .acl(SET)
        .tips(NONDET)
        .keys(&key1(RO_ACCESS))
        .syntax("key cursor [MATCH pattern] [COUNT count]")
        .doc("2.8.0", "Iterates over the members of a set with a cursor."),
];
