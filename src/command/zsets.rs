//! Sorted set commands: ZADD, ZINCRBY, ZSCORE, ZMSCORE, ZREM, ZCARD, ZCOUNT,
//! ZRANGE, ZRANGEBYSCORE, ZREMRANGEBYSCORE, ZRANK.

use bytes::Bytes;

use super::Ctx;
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{Db, SortedSet, Ttl, Value};
use crate::protocol::{Protocol, Reply};
use crate::pubsub::Event;
use crate::util::{parse_f64, parse_i64};

fn zset_at<'d>(db: &'d mut Db, key: &[u8]) -> CmdResult<Option<&'d mut SortedSet>> {
    db.get_as(key, |v| match v {
        Value::ZSet(x) => Some(x),
        _ => None,
    })
}

fn zset_for_write<'d>(db: &'d mut Db, key: &[u8]) -> CmdResult<Option<&'d mut SortedSet>> {
    db.get_mut_as(key, |v| match v {
        Value::ZSet(x) => Some(x),
        _ => None,
    })
}

fn syntax() -> CmdError {
    CmdError::other("ERR syntax error")
}

fn parse_score(arg: &[u8]) -> CmdResult<f64> {
    parse_f64(arg).ok_or(CmdError::NotFloat)
}

fn parse_long(arg: &[u8]) -> CmdResult<i64> {
    parse_i64(arg).ok_or(CmdError::NotInteger)
}

/// `strtod` as Redis's range parser calls it: leading blanks skipped, an
/// empty rest reads as 0, NaN refused.
fn strtod_whole(text: &[u8]) -> Option<f64> {
    let start = text
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(text.len());
    if start == text.len() {
        return if text.is_empty() { Some(0.0) } else { None };
    }
    parse_f64(&text[start..])
}

/// One end of a score range: the value and whether it is exclusive.
#[derive(Clone, Copy)]
struct Bound {
    value: f64,
    exclusive: bool,
}

struct ScoreRange {
    min: Bound,
    max: Bound,
}

impl ScoreRange {
    fn parse(min: &[u8], max: &[u8]) -> CmdResult<ScoreRange> {
        let bound = |arg: &[u8]| -> Option<Bound> {
            match arg.first() {
                Some(b'(') => strtod_whole(&arg[1..]).map(|value| Bound {
                    value,
                    exclusive: true,
                }),
                _ => strtod_whole(arg).map(|value| Bound {
                    value,
                    exclusive: false,
                }),
            }
        };
        match (bound(min), bound(max)) {
            (Some(min), Some(max)) => Ok(ScoreRange { min, max }),
            _ => Err(CmdError::other("ERR min or max is not a float")),
        }
    }

    fn above_min(&self, s: f64) -> bool {
        if self.min.exclusive {
            s > self.min.value
        } else {
            s >= self.min.value
        }
    }

    fn below_max(&self, s: f64) -> bool {
        if self.max.exclusive {
            s < self.max.value
        } else {
            s <= self.max.value
        }
    }

    fn contains(&self, s: f64) -> bool {
        self.above_min(s) && self.below_max(s)
    }
}

/// A lexicographic range end: `-`, `+`, `[member` or `(member`.
enum LexBound {
    Least,
    Most,
    Incl(Bytes),
    Excl(Bytes),
}

impl LexBound {
    fn parse(arg: &[u8]) -> Option<LexBound> {
        match arg.first() {
            Some(b'-') if arg.len() == 1 => Some(LexBound::Least),
            Some(b'+') if arg.len() == 1 => Some(LexBound::Most),
            Some(b'[') => Some(LexBound::Incl(Bytes::copy_from_slice(&arg[1..]))),
            Some(b'(') => Some(LexBound::Excl(Bytes::copy_from_slice(&arg[1..]))),
            _ => None,
        }
    }

    fn at_or_after_min(&self, m: &[u8]) -> bool {
        match self {
            LexBound::Least => true,
            LexBound::Most => false,
            LexBound::Incl(b) => m >= &b[..],
            LexBound::Excl(b) => m > &b[..],
        }
    }

    fn at_or_before_max(&self, m: &[u8]) -> bool {
        match self {
            LexBound::Least => false,
            LexBound::Most => true,
            LexBound::Incl(b) => m <= &b[..],
            LexBound::Excl(b) => m < &b[..],
        }
    }
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

fn zadd_generic(ctx: &mut Ctx, mut at: usize, mut incr: bool) -> CmdResult<Reply> {
    let (mut nx, mut xx, mut gt, mut lt, mut ch) = (false, false, false, false, false);
    if !incr {
        while at < ctx.args.len() {
            match ctx.args[at].to_ascii_lowercase().as_slice() {
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
    if zset_for_write(&mut db, &key)?.is_none() {
        if xx {
            return Ok(if incr { Reply::Nil } else { Reply::Int(0) });
        }
        let zset = SortedSet::for_first_member(&pairs[0].1);
        db.insert(&key, Value::ZSet(Box::new(zset)), Ttl::Clear)?;
    }
    let Some(zset) = zset_for_write(&mut db, &key)? else {
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
                    zset.insert(member, next);
                    updated += 1;
                }
            }
            None => {
                if xx {
                    continue;
                }
                zset.insert(member, score);
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
        match zset_at(&mut db, &key)?.and_then(|z| z.score(&member)) {
            Some(s) => Reply::Double(s),
            None => Reply::Nil,
        },
    )
}

pub fn zmscore(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let zset = zset_at(&mut db, &key)?;
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

/// Deletes the key if its set is now empty, after the command's own event.
fn finish_removal(db: &mut Db, key: &[u8], removed: usize, event: Event) -> CmdResult<()> {
    let emptied = matches!(db.get_mut(key)?, Some(Value::ZSet(z)) if z.is_empty());
    if emptied {
        db.remove(key)?;
    }
    if removed > 0 {
        db.modified(key, event)?;
    }
    if emptied {
        db.notify(key, Event::Del);
    }
    Ok(())
}

pub fn zrem(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let Some(zset) = zset_for_write(&mut db, &key)? else {
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
    finish_removal(&mut db, &key, removed, Event::Zrem)?;
    Ok(Reply::Int(removed as i64))
}

pub fn zcard(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    Ok(Reply::Int(
        zset_at(&mut db, &key)?.map_or(0, |z| z.len()) as i64
    ))
}

pub fn zcount(ctx: &mut Ctx) -> CmdResult<Reply> {
    let range = ScoreRange::parse(ctx.arg(2), ctx.arg(3))?;
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let count = zset_at(&mut db, &key)?.map_or(0, |z| {
        z.iter()
            .skip_while(|(_, s)| !range.above_min(*s))
            .take_while(|(_, s)| range.below_max(*s))
            .count()
    });
    Ok(Reply::Int(count as i64))
}

pub fn zrank(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (key, member) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.db();
    Ok(
        match zset_at(&mut db, &key)?.and_then(|z| z.rank(&member)) {
            Some(r) => Reply::Int(r as i64),
            None => Reply::Nil,
        },
    )
}

#[derive(Clone, Copy, PartialEq)]
enum RangeBy {
    Rank,
    Score,
    Lex,
}

pub fn zrange(ctx: &mut Ctx) -> CmdResult<Reply> {
    zrange_generic(ctx, None)
}

pub fn zrangebyscore(ctx: &mut Ctx) -> CmdResult<Reply> {
    zrange_generic(ctx, Some(RangeBy::Score))
}

fn zrange_generic(ctx: &mut Ctx, fixed: Option<RangeBy>) -> CmdResult<Reply> {
    let mut by = fixed;
    let mut rev = if fixed.is_some() { Some(false) } else { None };
    let (mut with_scores, mut offset, mut limit) = (false, 0i64, -1i64);
    let mut j = 4;
    while j < ctx.args.len() {
        let left = ctx.args.len() - j - 1;
        match ctx.args[j].to_ascii_lowercase().as_slice() {
            b"withscores" => with_scores = true,
            b"limit" if left >= 2 => {
                offset = parse_long(&ctx.args[j + 1])?;
                limit = parse_long(&ctx.args[j + 2])?;
                j += 2;
            }
            b"rev" if rev.is_none() => rev = Some(true),
            b"bylex" if by.is_none() => by = Some(RangeBy::Lex),
            b"byscore" if by.is_none() => by = Some(RangeBy::Score),
            _ => return Err(syntax()),
        }
        j += 1;
    }
    let rev = rev.unwrap_or(false);
    let by = by.unwrap_or(RangeBy::Rank);
    if limit != -1 && by == RangeBy::Rank {
        return Err(CmdError::other(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if with_scores && by == RangeBy::Lex {
        return Err(CmdError::other(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let (mut lo, mut hi) = (ctx.arg(2).clone(), ctx.arg(3).clone());
    if rev && by != RangeBy::Rank {
        std::mem::swap(&mut lo, &mut hi);
    }
    enum Parsed {
        Rank(i64, i64),
        Score(ScoreRange),
        Lex(LexBound, LexBound),
    }
    let parsed = match by {
        RangeBy::Rank => Parsed::Rank(parse_long(&lo)?, parse_long(&hi)?),
        RangeBy::Score => Parsed::Score(ScoreRange::parse(&lo, &hi)?),
        RangeBy::Lex => match (LexBound::parse(&lo), LexBound::parse(&hi)) {
            (Some(a), Some(b)) => Parsed::Lex(a, b),
            _ => {
                return Err(CmdError::other(
                    "ERR min or max not valid string range item",
                ));
            }
        },
    };
    let resp3 = ctx.client.protocol == Protocol::Resp3;
    let key = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let Some(zset) = zset_at(&mut db, &key)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let len = zset.len() as i64;
    let ordered: Box<dyn Iterator<Item = (&Bytes, f64)>> = if rev {
        Box::new(zset.iter().rev())
    } else {
        Box::new(zset.iter())
    };
    let items: Vec<(Bytes, f64)> = match parsed {
        Parsed::Rank(mut start, mut end) => {
            if start < 0 {
                start += len;
            }
            if end < 0 {
                end += len;
            }
            start = start.max(0);
            if start > end || start >= len {
                Vec::new()
            } else {
                end = end.min(len - 1);
                ordered
                    .skip(start as usize)
                    .take((end - start + 1) as usize)
                    .map(|(m, s)| (m.clone(), s))
                    .collect()
            }
        }
        Parsed::Score(range) => {
            // Walking down from the top, the first member in range is the
            // first at or below max.
            let starts = |_: &Bytes, s: f64| {
                if rev {
                    range.below_max(s)
                } else {
                    range.above_min(s)
                }
            };
            walk_range(
                ordered,
                starts,
                |_, s| range.contains(s),
                limit_window(offset, limit, len),
            )
        }
        Parsed::Lex(min, max) => {
            let starts = |m: &Bytes, _: f64| {
                if rev {
                    max.at_or_before_max(m)
                } else {
                    min.at_or_after_min(m)
                }
            };
            let inside = |m: &Bytes, _: f64| min.at_or_after_min(m) && max.at_or_before_max(m);
            walk_range(ordered, starts, inside, limit_window(offset, limit, len))
        }
    };
    Ok(scored_reply(resp3, items, with_scores))
}

/// LIMIT's (skip, take) over the members in range, or `None` when Redis
/// answers an empty list outright.
fn limit_window(offset: i64, limit: i64, len: i64) -> Option<(usize, usize)> {
    if offset < 0 || (offset > 0 && offset >= len) {
        return None;
    }
    Some((
        offset as usize,
        if limit < 0 {
            usize::MAX
        } else {
            limit as usize
        },
    ))
}

/// The members from the first that `starts` accepts for as long as
/// `inside` holds, through the LIMIT window.
fn walk_range<'z>(
    ordered: impl Iterator<Item = (&'z Bytes, f64)>,
    starts: impl Fn(&Bytes, f64) -> bool,
    inside: impl Fn(&Bytes, f64) -> bool,
    window: Option<(usize, usize)>,
) -> Vec<(Bytes, f64)> {
    let Some((skip, take)) = window else {
        return Vec::new();
    };
    ordered
        .skip_while(|(m, s)| !starts(m, *s))
        .take_while(|(m, s)| inside(m, *s))
        .skip(skip)
        .take(take)
        .map(|(m, s)| (m.clone(), s))
        .collect()
}

pub fn zremrangebyscore(ctx: &mut Ctx) -> CmdResult<Reply> {
    let range = ScoreRange::parse(ctx.arg(2), ctx.arg(3))?;
    let key = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let Some(zset) = zset_for_write(&mut db, &key)? else {
        return Ok(Reply::Int(0));
    };
    let doomed: Vec<Bytes> = zset
        .iter()
        .skip_while(|(_, s)| !range.above_min(*s))
        .take_while(|(_, s)| range.below_max(*s))
        .map(|(m, _)| m.clone())
        .collect();
    for m in &doomed {
        zset.remove(m);
    }
    finish_removal(&mut db, &key, doomed.len(), Event::Zremrangebyscore)?;
    Ok(Reply::Int(doomed.len() as i64))
}
