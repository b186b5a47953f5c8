//! Sorted set commands. This file holds what the family shares (replies
//! with scores, a stored result, an emptied set's removal) and the
//! commands on a set's members one at a time: ZADD, ZINCRBY, ZSCORE,
//! ZMSCORE, ZREM, ZCARD, ZRANK, ZREVRANK, and ZSCAN. Ranges by rank, score
//! or member (ZRANGE and its older forms, ZRANGESTORE, ZCOUNT, ZLEXCOUNT,
//! ZREMRANGEBY{SCORE,RANK,LEX}) are in `range`; ZUNION/ZINTER/ZDIFF, their
//! STORE forms and ZINTERCARD in `combine`; ZPOPMIN, ZPOPMAX and
//! ZRANDMEMBER in `pop`. `COMMANDS` lists all their specs, in the order
//! COMMAND gives them. The MPOP and blocking pops live in `blocking`; the
//! geo commands, whose sets are sorted sets and whose GEOADD is a ZADD, in
//! `geo`.

mod combine;
pub(super) mod geo;
mod pop;
mod range;

use bytes::Bytes;

use super::Ctx;
use super::args::parse_scan;
use super::presets::{
    NONDET, READ_FAST, RO, RO_ACCESS, RW_ACCESS_UPDATE, RW_DELETE, RW_UPDATE, WRITE_FAST, key1,
};
use super::spec::acl::SORTEDSET;
use super::spec::flag::{FAST, READONLY, WRITE};
use super::spec::{CommandSpec, Group, touches_listed};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{Db, SortedSet, Touch, Ttl, Value};
use crate::protocol::Reply;
use crate::pubsub::Event;
use crate::util::scan::{Buckets, hash_of};
use crate::util::{format_double, glob_match, parse_cursor, parse_f64, parse_i64};

fn syntax() -> CmdError {
    CmdError::other("ERR syntax error")
}

fn parse_score(arg: &[u8]) -> CmdResult<f64> {
    parse_f64(arg).ok_or(CmdError::NotFloat)
}

fn parse_long(arg: &[u8]) -> CmdResult<i64> {
    parse_i64(arg).ok_or(CmdError::NotInteger)
}

/// Members with scores as Redis replies them: flat in RESP2, and
/// (member, score) pairs in RESP3.
fn scored_reply(resp3: bool, items: Vec<(Bytes, f64)>, with_scores: bool) -> Reply {
    if !with_scores {
        return Reply::Array(items.into_iter().map(|(m, _)| Reply::Bulk(m)).collect());
    }
    if resp3 {
        Reply::Array(
            items
                .into_iter()
                .map(|(m, s)| Reply::Array(vec![Reply::Bulk(m), Reply::Double(s)]))
                .collect(),
        )
    } else {
        let mut out = Vec::with_capacity(items.len() * 2);
        for (m, s) in items {
            out.push(Reply::Bulk(m));
            out.push(Reply::Double(s));
        }
        Reply::Array(out)
    }
}

pub fn zadd(ctx: &mut Ctx) -> CmdResult<Reply> {
    zadd_generic(ctx, 2, false)
}

pub fn zincrby(ctx: &mut Ctx) -> CmdResult<Reply> {
    zadd_generic(ctx, 2, true)
}

/// ZADD's options, before its score-member pairs.
const ZADD_OPTIONS: [&[u8]; 6] = [b"nx", b"xx", b"gt", b"lt", b"ch", b"incr"];

/// ZADD changes the member of each score-member pair after its options.
pub fn touches_zadd(args: &[Bytes]) -> Option<Touch<'_>> {
    let rest = args.get(2..)?;
    let options = rest
        .iter()
        .take_while(|a| ZADD_OPTIONS.iter().any(|o| a.eq_ignore_ascii_case(o)))
        .count();
    Some(Touch::pairs(rest.get(options + 1..).unwrap_or_default()))
}

/// ZINCRBY changes its one member, after the increment.
pub fn touches_zincrby(args: &[Bytes]) -> Option<Touch<'_>> {
    Some(Touch::each(args.get(3..4)?))
}

fn zadd_generic(ctx: &mut Ctx, mut at: usize, mut incr: bool) -> CmdResult<Reply> {
    let (mut nx, mut xx, mut gt, mut lt, mut ch) = (false, false, false, false, false);
    if !incr {
        while at < ctx.args.len() {
            match ctx.args[at].to_ascii_lowercase().as_slice() {
                // The options of ZADD_OPTIONS.
                b"nx" => nx = true,
                b"xx" => xx = true,
                b"gt" => gt = true,
                b"lt" => lt = true,
                b"ch" => ch = true,
                b"incr" => incr = true,
                _ => break,
            }
            at += 1;
        }
    }
    let elements = ctx.args.len() - at;
    if elements == 0 || !elements.is_multiple_of(2) {
        return Err(syntax());
    }
    if nx && xx {
        return Err(CmdError::other(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if (nx && (gt || lt)) || (gt && lt) {
        return Err(CmdError::other(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if incr && elements > 2 {
        return Err(CmdError::other(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    let mut pairs = Vec::with_capacity(elements / 2);
    for pair in ctx.args[at..].chunks(2) {
        pairs.push((parse_score(&pair[0])?, pair[1].clone()));
    }
    let key = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let limits = db.limits();
    if db.typed_for_write::<SortedSet>(&key)?.is_none() {
        if xx {
            return Ok(if incr { Reply::Nil } else { Reply::Int(0) });
        }
        let zset = SortedSet::for_first_member(&pairs[0].1, &limits);
        db.insert(&key, Value::ZSet(Box::new(zset)), Ttl::Clear)?;
    }
    let Some(zset) = db.typed_for_write::<SortedSet>(&key)? else {
        return Err(CmdError::WrongType);
    };
    let (mut added, mut updated, mut processed) = (0, 0, 0);
    let mut last = 0.0;
    let mut failed = None;
    for (score, member) in pairs {
        match zset.score(&member) {
            Some(current) => {
                if nx {
                    continue;
                }
                let mut next = score;
                if incr {
                    next += current;
                    if next.is_nan() {
                        failed = Some(CmdError::other("ERR resulting score is not a number (NaN)"));
                        break;
                    }
                }
                if (lt && next >= current) || (gt && next <= current) {
                    continue;
                }
                last = next;
                processed += 1;
                // Redis compares with `!=`, so 0 and -0 count as unchanged.
                if next != current {
                    // The set keeps a copy of its own, as every collection
                    // does: a slice of the command line would keep the
                    // whole line's buffer alive with it.
                    zset.insert(Bytes::copy_from_slice(&member), next, &limits);
                    updated += 1;
                }
            }
            None => {
                if xx {
                    continue;
                }
                zset.insert(Bytes::copy_from_slice(&member), score, &limits);
                last = score;
                added += 1;
                processed += 1;
            }
        }
    }
    if added + updated > 0 {
        db.modified(&key, if incr { Event::Zincr } else { Event::Zadd })?;
    }
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(if incr {
        if processed > 0 {
            Reply::Double(last)
        } else {
            Reply::Nil
        }
    } else {
        Reply::Int(if ch { added + updated } else { added })
    })
}

pub fn zscore(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (key, member) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.db();
    Ok(
        match db.typed::<SortedSet>(&key)?.and_then(|z| z.score(&member)) {
            Some(s) => Reply::Double(s),
            None => Reply::Nil,
        },
    )
}

pub fn zmscore(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let zset = db.typed::<SortedSet>(&key)?;
    Ok(Reply::Array(
        ctx.args[2..]
            .iter()
            .map(|m| match zset.as_ref().and_then(|z| z.score(m)) {
                Some(s) => Reply::Double(s),
                None => Reply::Nil,
            })
            .collect(),
    ))
}

/// What a removal took out of a sorted set.
enum Removed {
    /// This many of the members the command declared it touches (ZREM).
    Declared(usize),
    /// These members, which the records name (ZREMRANGEBY…).
    Members(Vec<Bytes>),
}

/// Deletes the key if its set is now empty, after the command's own event.
fn finish_removal(db: &mut Db, key: &[u8], removed: Removed, event: Event) -> CmdResult<()> {
    let emptied = matches!(db.get_mut(key)?, Some(Value::ZSet(z)) if z.is_empty());
    if emptied {
        db.remove(key)?;
    }
    match removed {
        Removed::Declared(0) => {}
        Removed::Declared(_) => db.modified(key, event)?,
        Removed::Members(members) if members.is_empty() => {}
        Removed::Members(members) => db.modified_members(key, members, event)?,
    }
    if emptied {
        db.notify(key, Event::Del);
    }
    Ok(())
}

pub fn zrem(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let Some(zset) = db.typed_for_write::<SortedSet>(&key)? else {
        return Ok(Reply::Int(0));
    };
    let mut removed = 0;
    for member in &ctx.args[2..] {
        if zset.remove(member) {
            removed += 1;
            if zset.is_empty() {
                break;
            }
        }
    }
    finish_removal(&mut db, &key, Removed::Declared(removed), Event::Zrem)?;
    Ok(Reply::Int(removed as i64))
}

pub fn zcard(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    Ok(Reply::Int(
        db.typed::<SortedSet>(&key)?.map_or(0, |z| z.len()) as i64,
    ))
}

/// Stores `items` as the sorted set at `dst` (deleting it when there are
/// none, as Redis does) and answers their number.
fn store_result(
    db: &mut Db,
    dst: &[u8],
    items: Vec<(Bytes, f64)>,
    event: Event,
) -> CmdResult<Reply> {
    let len = items.len();
    if len == 0 {
        if db.remove(dst)?.is_some() {
            db.modified(dst, Event::Del)?;
        }
        return Ok(Reply::Int(0));
    }
    let limits = db.limits();
    let mut zset = SortedSet::default();
    for (member, score) in items {
        zset.insert(member, score, &limits);
    }
    db.insert(dst, Value::ZSet(Box::new(zset)), Ttl::Clear)?;
    db.modified(dst, event)?;
    Ok(Reply::Int(len as i64))
}

pub fn zrank(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (key, member) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.db();
    Ok(
        match db.typed::<SortedSet>(&key)?.and_then(|z| z.rank(&member)) {
            Some(r) => Reply::Int(r as i64),
            None => Reply::Nil,
        },
    )
}

pub fn zrevrank(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (key, member) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.db();
    let zset = db.typed::<SortedSet>(&key)?;
    Ok(
        match zset.and_then(|z| z.rank(&member).map(|r| z.len() - 1 - r)) {
            Some(r) => Reply::Int(r as i64),
            None => Reply::Nil,
        },
    )
}

/// A score as ZSCAN sends it. A compact set hands back the text its
/// listpack holds, where a whole number within ±2^62 is written as an
/// integer (so 1e17 reads `100000000000000000`).
fn scan_score(score: f64, compact: bool) -> String {
    const WHOLE_MAX: f64 = (i64::MAX / 2) as f64;
    if compact && score.fract() == 0.0 && score.abs() <= WHOLE_MAX {
        (score as i64).to_string()
    } else {
        format_double(score)
    }
}

pub fn zscan(ctx: &mut Ctx) -> CmdResult<Reply> {
    parse_cursor(ctx.arg(2)).ok_or(CmdError::InvalidCursor)?;
    let key = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let Some(zset) = db.typed::<SortedSet>(&key)? else {
        return Ok(Reply::Array(vec![
            Reply::bulk_str("0"),
            Reply::Array(Vec::new()),
        ]));
    };
    // Options are checked only on a set that exists, as in Redis.
    let opts = parse_scan(&ctx.args[2..], false)?;
    // A compact set comes back whole and in order, as Redis sends it.
    let (members, next): (Vec<(&Bytes, f64)>, u64) = if zset.is_compact() {
        (zset.iter().collect(), 0)
    } else {
        Buckets::for_len(zset.len()).page(
            zset.iter().map(|(m, s)| (hash_of(m), (m, s))),
            opts.cursor,
            opts.count,
        )
    };
    let mut items = Vec::new();
    for (m, s) in members {
        if opts
            .pattern
            .as_ref()
            .is_none_or(|p| glob_match(p, m, false))
        {
            items.push(Reply::Bulk(m.clone()));
            items.push(Reply::bulk_str(&scan_score(s, zset.is_compact())));
        }
    }
    Ok(Reply::Array(vec![
        Reply::bulk_str(&next.to_string()),
        Reply::Array(items),
    ]))
}

const ZADD: CommandSpec = CommandSpec::new("zadd", -4, Group::SortedSet, zadd)
    .flags(WRITE_FAST)
    .acl(SORTEDSET)
    .keys(&key1(RW_UPDATE))
    .touches(touches_zadd)
    .syntax("key [NX | XX] [GT | LT] [CH] [INCR] (score member)...")
    .doc(
        "1.2.0",
        "Adds members to a sorted set or updates their scores.",
    );

const ZINCRBY: CommandSpec = CommandSpec::new("zincrby", 4, Group::SortedSet, zincrby)
    .flags(WRITE_FAST)
    .acl(SORTEDSET)
    .keys(&key1(RW_ACCESS_UPDATE))
    .touches(touches_zincrby)
    .syntax("key increment member")
    .doc(
        "1.2.0",
        "Adds to the score of a sorted set member; returns the new score.",
    );

const ZSCORE: CommandSpec = CommandSpec::new("zscore", 3, Group::SortedSet, zscore)
    .flags(READ_FAST)
    .acl(SORTEDSET)
    .keys(&key1(RO_ACCESS))
    .syntax("key member")
    .doc("1.2.0", "Returns the score of a sorted set member.");

const ZMSCORE: CommandSpec = CommandSpec::new("zmscore", -3, Group::SortedSet, zmscore)
    .flags(READ_FAST)
    .acl(SORTEDSET)
    .keys(&key1(RO_ACCESS))
    .syntax("key member...")
    .doc("6.2.0", "Returns the scores of several sorted set members.");

const ZREM: CommandSpec = CommandSpec::new("zrem", -3, Group::SortedSet, zrem)
    .flags(WRITE | FAST)
    .acl(SORTEDSET)
    .keys(&key1(RW_DELETE))
    .touches(touches_listed)
    .syntax("key member...")
    .doc(
        "1.2.0",
        "Removes members from a sorted set; returns how many existed.",
    );

const ZCARD: CommandSpec = CommandSpec::new("zcard", 2, Group::SortedSet, zcard)
    .flags(READ_FAST)
    .acl(SORTEDSET)
    .keys(&key1(RO))
    .syntax("key")
    .doc("1.2.0", "Returns the number of members of a sorted set.");

const ZRANK: CommandSpec = CommandSpec::new("zrank", 3, Group::SortedSet, zrank)
    .flags(READ_FAST)
    .acl(SORTEDSET)
    .keys(&key1(RO_ACCESS))
    .syntax("key member")
    .doc(
        "2.0.0",
        "Returns the rank of a sorted set member, lowest score first.",
    );

const ZREVRANK: CommandSpec = CommandSpec::new("zrevrank", 3, Group::SortedSet, zrevrank)
    .flags(READ_FAST)
    .acl(SORTEDSET)
    .keys(&key1(RO_ACCESS))
    .syntax("key member")
    .doc(
        "2.0.0",
        "Returns the rank of a sorted set member, highest score first.",
    );

const ZSCAN: CommandSpec = CommandSpec::new("zscan", -3, Group::SortedSet, zscan)
    .flags(READONLY)
    .acl(SORTEDSET)
    .tips(NONDET)
    .keys(&key1(RO_ACCESS))
    .syntax("key cursor [MATCH pattern] [COUNT count]")
    .doc(
        "2.8.0",
        "Iterates over the members and scores of a sorted set.",
    );

/// The specs of this file and of `range`, `combine` and `pop`, in the
/// order COMMAND lists them.
pub(super) static COMMANDS: &[CommandSpec] = &[
    ZADD,
    ZINCRBY,
    ZSCORE,
    ZMSCORE,
    ZREM,
    ZCARD,
    range::ZCOUNT,
    range::ZRANGE,
    range::ZRANGEBYSCORE,
    range::ZREMRANGEBYSCORE,
    ZRANK,
    range::ZREVRANGE,
    range::ZREVRANGEBYSCORE,
    range::ZRANGEBYLEX,
    range::ZREVRANGEBYLEX,
    range::ZRANGESTORE,
    range::ZLEXCOUNT,
    ZREVRANK,
    range::ZREMRANGEBYRANK,
    range::ZREMRANGEBYLEX,
    pop::ZPOPMIN,
    pop::ZPOPMAX,
    combine::ZUNION,
    combine::ZINTER,
    combine::ZDIFF,
    combine::ZUNIONSTORE,
    combine::ZINTERSTORE,
    combine::ZDIFFSTORE,
    combine::ZINTERCARD,
    pop::ZRANDMEMBER,
    ZSCAN,
];
