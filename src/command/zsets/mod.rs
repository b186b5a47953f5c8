//! Sorted set commands: ZADD, ZINCRBY, ZSCORE, ZMSCORE, ZREM, ZCARD, ZCOUNT,
//! ZLEXCOUNT, ZRANGE and its older forms (ZRANGEBYSCORE, ZRANGEBYLEX,
//! ZREV*), ZRANGESTORE, ZREMRANGEBY{SCORE,RANK,LEX}, ZRANK, ZREVRANK,
//! ZPOPMIN, ZPOPMAX, ZUNION/ZINTER/ZDIFF and their STORE forms,
//! ZINTERCARD, ZRANDMEMBER, ZSCAN. The MPOP and blocking pops live in
//! `blocking`; the geo commands, whose sets are sorted sets and whose
//! GEOADD is a ZADD, in `geo`.

pub(super) mod geo;

use bytes::Bytes;

use rand::RngExt;

use super::Ctx;
use super::args::{RANDOM_REPEATS_MAX, parse_scan};
use super::presets::{
    NONDET, OW_UPDATE, READ_FAST, RO, RO_ACCESS, RW_ACCESS_DELETE, RW_ACCESS_UPDATE, RW_DELETE,
    RW_UPDATE, WRITE_FAST, key1,
};
use super::spec::acl::SORTEDSET;
use super::spec::flag::{DENYOOM, FAST, READONLY, WRITE};
use super::spec::{CommandSpec, Group, KeySpec, touches_listed};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{Db, SortedSet, Touch, Ttl, Value, ZEnd};
use crate::protocol::{Protocol, Reply};
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
                    zset.insert(member, next, &limits);
                    updated += 1;
                }
            }
            None => {
                if xx {
                    continue;
                }
                zset.insert(member, score, &limits);
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
    finish_removal(&mut db, &key, removed, Event::Zrem)?;
    Ok(Reply::Int(removed as i64))
}

pub fn zcard(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    Ok(Reply::Int(
        db.typed::<SortedSet>(&key)?.map_or(0, |z| z.len()) as i64,
    ))
}

pub fn zcount(ctx: &mut Ctx) -> CmdResult<Reply> {
    let range = ScoreRange::parse(ctx.arg(2), ctx.arg(3))?;
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let count = db.typed::<SortedSet>(&key)?.map_or(0, |z| {
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
        match db.typed::<SortedSet>(&key)?.and_then(|z| z.rank(&member)) {
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

/// A parsed range: ranks, scores or members.
enum Span {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexBound, LexBound),
}

impl Span {
    fn parse(by: RangeBy, lo: &[u8], hi: &[u8]) -> CmdResult<Span> {
        Ok(match by {
            RangeBy::Rank => Span::Rank(parse_long(lo)?, parse_long(hi)?),
            RangeBy::Score => Span::Score(ScoreRange::parse(lo, hi)?),
            RangeBy::Lex => match (LexBound::parse(lo), LexBound::parse(hi)) {
                (Some(a), Some(b)) => Span::Lex(a, b),
                _ => {
                    return Err(CmdError::other(
                        "ERR min or max not valid string range item",
                    ));
                }
            },
        })
    }
}

/// A ZRANGE-family query: the span, its direction and LIMIT.
struct RangeQuery {
    span: Span,
    rev: bool,
    offset: i64,
    limit: i64,
}

impl RangeQuery {
    /// The whole span, ascending (ZREMRANGEBY*, ZLEXCOUNT).
    fn all(span: Span) -> RangeQuery {
        RangeQuery {
            span,
            rev: false,
            offset: 0,
            limit: -1,
        }
    }

    /// The members the query selects, in the order it returns them.
    fn select(&self, zset: &SortedSet) -> Vec<(Bytes, f64)> {
        let len = zset.len() as i64;
        let rev = self.rev;
        let ordered: Box<dyn Iterator<Item = (&Bytes, f64)>> = if rev {
            Box::new(zset.iter().rev())
        } else {
            Box::new(zset.iter())
        };
        let window = limit_window(self.offset, self.limit, len);
        match &self.span {
            Span::Rank(start, end) => {
                let start = if *start < 0 { start + len } else { *start }.max(0);
                let end = if *end < 0 { end + len } else { *end };
                if start > end || start >= len {
                    return Vec::new();
                }
                let end = end.min(len - 1);
                ordered
                    .skip(start as usize)
                    .take((end - start + 1) as usize)
                    .map(|(m, s)| (m.clone(), s))
                    .collect()
            }
            Span::Score(range) => {
                // Walking down from the top, the first member in range is
                // the first at or below max.
                let starts = |_: &Bytes, s: f64| {
                    if rev {
                        range.below_max(s)
                    } else {
                        range.above_min(s)
                    }
                };
                walk_range(ordered, starts, |_, s| range.contains(s), window)
            }
            Span::Lex(min, max) => {
                let starts = |m: &Bytes, _: f64| {
                    if rev {
                        max.at_or_before_max(m)
                    } else {
                        min.at_or_after_min(m)
                    }
                };
                let inside = |m: &Bytes, _: f64| min.at_or_after_min(m) && max.at_or_before_max(m);
                walk_range(ordered, starts, inside, window)
            }
        }
    }
}

/// Parses ZRANGE's arguments with the source key at `at`: the range, then
/// options. `fixed` is the older commands' set kind and direction;
/// ZRANGESTORE (`store`) takes no WITHSCORES. Returns the query and
/// whether scores were asked for.
fn parse_range(
    args: &[Bytes],
    at: usize,
    fixed: Option<(RangeBy, bool)>,
    store: bool,
) -> CmdResult<(RangeQuery, bool)> {
    let mut by = fixed.map(|(by, _)| by);
    let mut rev = fixed.map(|(_, rev)| rev);
    let (mut with_scores, mut offset, mut limit) = (false, 0i64, -1i64);
    let mut j = at + 3;
    while j < args.len() {
        let left = args.len() - j - 1;
        match args[j].to_ascii_lowercase().as_slice() {
            b"withscores" if !store => with_scores = true,
            b"limit" if left >= 2 => {
                offset = parse_long(&args[j + 1])?;
                limit = parse_long(&args[j + 2])?;
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
    let (mut lo, mut hi) = (&args[at + 1], &args[at + 2]);
    if rev && by != RangeBy::Rank {
        std::mem::swap(&mut lo, &mut hi);
    }
    let span = Span::parse(by, lo, hi)?;
    let query = RangeQuery {
        span,
        rev,
        offset,
        limit,
    };
    Ok((query, with_scores))
}

pub fn zrange(ctx: &mut Ctx) -> CmdResult<Reply> {
    zrange_generic(ctx, None)
}

pub fn zrangebyscore(ctx: &mut Ctx) -> CmdResult<Reply> {
    zrange_generic(ctx, Some((RangeBy::Score, false)))
}

pub fn zrevrangebyscore(ctx: &mut Ctx) -> CmdResult<Reply> {
    zrange_generic(ctx, Some((RangeBy::Score, true)))
}

pub fn zrangebylex(ctx: &mut Ctx) -> CmdResult<Reply> {
    zrange_generic(ctx, Some((RangeBy::Lex, false)))
}

pub fn zrevrangebylex(ctx: &mut Ctx) -> CmdResult<Reply> {
    zrange_generic(ctx, Some((RangeBy::Lex, true)))
}

pub fn zrevrange(ctx: &mut Ctx) -> CmdResult<Reply> {
    zrange_generic(ctx, Some((RangeBy::Rank, true)))
}

fn zrange_generic(ctx: &mut Ctx, fixed: Option<(RangeBy, bool)>) -> CmdResult<Reply> {
    let (query, with_scores) = parse_range(ctx.args, 1, fixed, false)?;
    let resp3 = ctx.client.protocol == Protocol::Resp3;
    let key = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let Some(zset) = db.typed::<SortedSet>(&key)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    Ok(scored_reply(resp3, query.select(zset), with_scores))
}

pub fn zrangestore(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (query, _) = parse_range(ctx.args, 2, None, true)?;
    let (dst, src) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.locked.db(ctx.client.db);
    let items = db
        .typed::<SortedSet>(&src)?
        .map_or_else(Vec::new, |z| query.select(z));
    store_result(&mut db, &dst, items, Event::Zrangestore)
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
    zremrange(ctx, RangeBy::Score, Event::Zremrangebyscore)
}

pub fn zremrangebyrank(ctx: &mut Ctx) -> CmdResult<Reply> {
    zremrange(ctx, RangeBy::Rank, Event::Zremrangebyrank)
}

pub fn zremrangebylex(ctx: &mut Ctx) -> CmdResult<Reply> {
    zremrange(ctx, RangeBy::Lex, Event::Zremrangebylex)
}

fn zremrange(ctx: &mut Ctx, by: RangeBy, event: Event) -> CmdResult<Reply> {
    let query = RangeQuery::all(Span::parse(by, ctx.arg(2), ctx.arg(3))?);
    let key = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let Some(zset) = db.typed_for_write::<SortedSet>(&key)? else {
        return Ok(Reply::Int(0));
    };
    let doomed = query.select(zset);
    for (m, _) in &doomed {
        zset.remove(m);
    }
    finish_removal(&mut db, &key, doomed.len(), event)?;
    Ok(Reply::Int(doomed.len() as i64))
}

pub fn zlexcount(ctx: &mut Ctx) -> CmdResult<Reply> {
    let query = RangeQuery::all(Span::parse(RangeBy::Lex, ctx.arg(2), ctx.arg(3))?);
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let count = db
        .typed::<SortedSet>(&key)?
        .map_or(0, |z| query.select(z).len());
    Ok(Reply::Int(count as i64))
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

fn zpop(ctx: &mut Ctx, end: ZEnd) -> CmdResult<Reply> {
    if ctx.args.len() > 3 {
        return Err(syntax());
    }
    let count = match ctx.args.get(2) {
        Some(c) => {
            let n = parse_i64(c)
                .and_then(|n| u64::try_from(n).ok())
                .ok_or_else(|| CmdError::NotPositive)?;
            Some(usize::try_from(n).unwrap_or(usize::MAX))
        }
        None => None,
    };
    let resp3 = ctx.client.protocol == Protocol::Resp3;
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    if db.typed_for_write::<SortedSet>(&key)?.is_none() || count == Some(0) {
        return Ok(Reply::Array(Vec::new()));
    }
    let items = db.pop_zset(&key, end, count.unwrap_or(1))?;
    // Without a count the pair is flat, in RESP3 too.
    Ok(scored_reply(resp3 && count.is_some(), items, true))
}

pub fn zpopmin(ctx: &mut Ctx) -> CmdResult<Reply> {
    zpop(ctx, ZEnd::Min)
}

pub fn zpopmax(ctx: &mut Ctx) -> CmdResult<Reply> {
    zpop(ctx, ZEnd::Max)
}

/// How ZUNION and ZINTER combine one member's weighted scores.
#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    fn apply(self, total: f64, value: f64) -> f64 {
        match self {
            // inf + -inf is NaN, which Redis reads as 0.
            Aggregate::Sum => Some(total + value).filter(|t| !t.is_nan()).unwrap_or(0.0),
            // Compared as Redis does: a NaN or an equal value keeps the total.
            Aggregate::Min if value < total => value,
            Aggregate::Max if value > total => value,
            Aggregate::Min | Aggregate::Max => total,
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum ZOp {
    Union,
    Inter,
    Diff,
}

/// One input of ZUNION and kin: a sorted set, or a set whose members all
/// score 1; `None` for a missing key.
struct Input {
    zset: Option<SortedSet>,
    weight: f64,
}

impl Input {
    fn len(&self) -> usize {
        self.zset.as_ref().map_or(0, |z| z.len())
    }

    /// A member's weighted score (0 where weight × score is NaN).
    fn weighted(&self, score: f64) -> f64 {
        Some(self.weight * score)
            .filter(|v| !v.is_nan())
            .unwrap_or(0.0)
    }
}

/// The arguments of ZUNION, ZINTER, ZDIFF, their STORE forms and
/// ZINTERCARD, from `numkeys` at `at`.
struct Combine {
    inputs: Vec<Input>,
    aggregate: Aggregate,
    with_scores: bool,
    limit: usize,
}

/// Which of the combining commands runs: they take different options.
#[derive(Clone, Copy, PartialEq)]
enum CombineForm {
    Reply,
    Store,
    Card,
}

fn parse_combine(ctx: &mut Ctx, at: usize, op: ZOp, form: CombineForm) -> CmdResult<Combine> {
    let numkeys = parse_long(ctx.arg(at))?;
    if numkeys < 1 {
        let name = String::from_utf8_lossy(ctx.arg(0)).to_ascii_lowercase();
        return Err(CmdError::other(format!(
            "ERR at least 1 input key is needed for '{name}' command"
        )));
    }
    let numkeys = usize::try_from(numkeys)
        .ok()
        .filter(|n| *n < ctx.args.len() - at)
        .ok_or_else(syntax)?;
    let keys = &ctx.args[at + 1..at + 1 + numkeys];
    let mut inputs = Vec::with_capacity(numkeys);
    {
        let mut db = ctx.locked.db(ctx.client.db);
        let limits = db.limits();
        for key in keys {
            let zset = match db.get(key)? {
                None => None,
                Some(Value::ZSet(z)) => Some((**z).clone()),
                Some(Value::Set(set)) => {
                    let mut z = SortedSet::default();
                    for m in set.members() {
                        z.insert(m, 1.0, &limits);
                    }
                    Some(z)
                }
                Some(_) => return Err(CmdError::WrongType),
            };
            inputs.push(Input { zset, weight: 1.0 });
        }
    }
    let mut parsed = Combine {
        inputs,
        aggregate: Aggregate::Sum,
        with_scores: false,
        limit: usize::MAX,
    };
    let args = &ctx.args[at + 1 + numkeys..];
    let weighs = op != ZOp::Diff && form != CombineForm::Card;
    let mut j = 0;
    while j < args.len() {
        let left = args.len() - j;
        match args[j].to_ascii_lowercase().as_slice() {
            b"weights" if weighs && left > numkeys => {
                for (input, w) in parsed.inputs.iter_mut().zip(&args[j + 1..]) {
                    input.weight = parse_f64(w)
                        .ok_or_else(|| CmdError::other("ERR weight value is not a float"))?;
                }
                j += 1 + numkeys;
            }
            b"aggregate" if weighs && left >= 2 => {
                parsed.aggregate = match args[j + 1].to_ascii_lowercase().as_slice() {
                    b"sum" => Aggregate::Sum,
                    b"min" => Aggregate::Min,
                    b"max" => Aggregate::Max,
                    _ => return Err(syntax()),
                };
                j += 2;
            }
            b"withscores" if form == CombineForm::Reply => {
                parsed.with_scores = true;
                j += 1;
            }
            b"limit" if form == CombineForm::Card && left >= 2 => {
                let n = parse_i64(&args[j + 1])
                    .and_then(|n| u64::try_from(n).ok())
                    .ok_or(CmdError::LimitNegative)?;
                parsed.limit = match usize::try_from(n).unwrap_or(usize::MAX) {
                    0 => usize::MAX,
                    n => n,
                };
                j += 2;
            }
            _ => return Err(syntax()),
        }
    }
    Ok(parsed)
}

impl Combine {
    /// The combined members and scores, in no particular order; at most
    /// `limit` of them for an intersection.
    fn run(mut self, op: ZOp) -> Vec<(Bytes, f64)> {
        let agg = self.aggregate;
        if op == ZOp::Diff {
            let mut inputs = self.inputs.into_iter();
            let Some(Input {
                zset: Some(first), ..
            }) = inputs.next()
            else {
                return Vec::new();
            };
            let rest: Vec<SortedSet> = inputs.filter_map(|i| i.zset).collect();
            return first
                .iter()
                .filter(|(m, _)| rest.iter().all(|z| z.score(m).is_none()))
                .map(|(m, s)| (m.clone(), s))
                .collect();
        }
        // Redis walks the inputs smallest first, which decides the order
        // in which scores add up (inf + -inf + x).
        self.inputs.sort_by_key(Input::len);
        if op == ZOp::Union {
            let mut totals: std::collections::HashMap<Bytes, f64> = Default::default();
            for input in &self.inputs {
                for (m, s) in input.zset.iter().flat_map(|z| z.iter()) {
                    let value = input.weighted(s);
                    totals
                        .entry(m.clone())
                        .and_modify(|t| *t = agg.apply(*t, value))
                        .or_insert(value);
                }
            }
            return totals.into_iter().collect();
        }
        let Some((smallest, rest)) = self.inputs.split_first() else {
            return Vec::new();
        };
        let Some(base) = &smallest.zset else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (m, s) in base.iter() {
            if out.len() >= self.limit {
                break;
            }
            let mut total = smallest.weighted(s);
            let mut everywhere = true;
            for input in rest {
                // Unlike the first, these products are not cleared of NaN,
                // which MIN and MAX then pass over.
                match input.zset.as_ref().and_then(|z| z.score(m)) {
                    Some(other) => total = agg.apply(total, input.weight * other),
                    None => {
                        everywhere = false;
                        break;
                    }
                }
            }
            if everywhere {
                out.push((m.clone(), total));
            }
        }
        out
    }
}

/// ZUNION / ZINTER / ZDIFF: the result in score order.
fn combine(ctx: &mut Ctx, op: ZOp) -> CmdResult<Reply> {
    let parsed = parse_combine(ctx, 1, op, CombineForm::Reply)?;
    let with_scores = parsed.with_scores;
    let limits = ctx.shared.keyspace.limits();
    let mut zset = SortedSet::default();
    for (m, s) in parsed.run(op) {
        zset.insert(m, s, &limits);
    }
    let items = zset.iter().map(|(m, s)| (m.clone(), s)).collect();
    let resp3 = ctx.client.protocol == Protocol::Resp3;
    Ok(scored_reply(resp3, items, with_scores))
}

fn combine_store(ctx: &mut Ctx, op: ZOp, event: Event) -> CmdResult<Reply> {
    let parsed = parse_combine(ctx, 2, op, CombineForm::Store)?;
    let items = parsed.run(op);
    let dst = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    store_result(&mut db, &dst, items, event)
}

pub fn zunion(ctx: &mut Ctx) -> CmdResult<Reply> {
    combine(ctx, ZOp::Union)
}

pub fn zinter(ctx: &mut Ctx) -> CmdResult<Reply> {
    combine(ctx, ZOp::Inter)
}

pub fn zdiff(ctx: &mut Ctx) -> CmdResult<Reply> {
    combine(ctx, ZOp::Diff)
}

pub fn zunionstore(ctx: &mut Ctx) -> CmdResult<Reply> {
    combine_store(ctx, ZOp::Union, Event::Zunionstore)
}

pub fn zinterstore(ctx: &mut Ctx) -> CmdResult<Reply> {
    combine_store(ctx, ZOp::Inter, Event::Zinterstore)
}

pub fn zdiffstore(ctx: &mut Ctx) -> CmdResult<Reply> {
    combine_store(ctx, ZOp::Diff, Event::Zdiffstore)
}

pub fn zintercard(ctx: &mut Ctx) -> CmdResult<Reply> {
    let parsed = parse_combine(ctx, 1, ZOp::Inter, CombineForm::Card)?;
    Ok(Reply::Int(parsed.run(ZOp::Inter).len() as i64))
}

pub fn zrandmember(ctx: &mut Ctx) -> CmdResult<Reply> {
    let count = ctx.args.get(2).map(|c| parse_long(c)).transpose()?;
    let with_scores = match ctx.args.len() {
        0..=3 => false,
        4 if ctx.args[3].eq_ignore_ascii_case(b"withscores") => true,
        _ => return Err(syntax()),
    };
    if count == Some(i64::MIN) {
        return Err(CmdError::CountOutOfRange);
    }
    if with_scores && count.is_some_and(|n| n.unsigned_abs() > (i64::MAX / 2) as u64) {
        return Err(CmdError::OutOfRange);
    }
    let resp3 = ctx.client.protocol == Protocol::Resp3;
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let zset = db.typed::<SortedSet>(&key)?;
    let mut rng = rand::rng();
    let Some(count) = count else {
        let member = zset.filter(|z| !z.is_empty()).and_then(|z| {
            let at = rng.random_range(0..z.len());
            z.iter().nth(at).map(|(m, _)| m.clone())
        });
        return Ok(Reply::opt_bulk(member));
    };
    let Some(zset) = zset.filter(|z| !z.is_empty()) else {
        return Ok(Reply::Array(Vec::new()));
    };
    let all: Vec<(Bytes, f64)> = zset.iter().map(|(m, s)| (m.clone(), s)).collect();
    let picked = if count < 0 {
        let repeats = count.unsigned_abs();
        if repeats > RANDOM_REPEATS_MAX {
            return Err(CmdError::OutOfRange);
        }
        (0..repeats)
            .map(|_| all[rng.random_range(0..all.len())].clone())
            .collect()
    } else if count as u64 >= all.len() as u64 {
        all
    } else {
        rand::seq::index::sample(&mut rng, all.len(), count as usize)
            .into_iter()
            .map(|i| all[i].clone())
            .collect()
    };
    Ok(scored_reply(resp3, picked, with_scores))
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

/// A destination, then `numkeys` source keys (ZUNIONSTORE and kin).
const ZSTORE_KEYS: [KeySpec; 2] = [
    KeySpec::range(1, 0, 1, OW_UPDATE),
    KeySpec::keynum(2, RO_ACCESS),
];

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("zadd", -4, Group::SortedSet, zadd)
        .flags(WRITE_FAST)
        .acl(SORTEDSET)
        .keys(&key1(RW_UPDATE))
        .touches(touches_zadd)
        .syntax("key [NX | XX] [GT | LT] [CH] [INCR] (score member)...")
        .doc(
            "1.2.0",
            "Adds members to a sorted set or updates their scores.",
        ),
    CommandSpec::new("zincrby", 4, Group::SortedSet, zincrby)
        .flags(WRITE_FAST)
        .acl(SORTEDSET)
        .keys(&key1(RW_ACCESS_UPDATE))
        .touches(touches_zincrby)
        .syntax("key increment member")
        .doc(
            "1.2.0",
            "Adds to the score of a sorted set member; returns the new score.",
        ),
    CommandSpec::new("zscore", 3, Group::SortedSet, zscore)
        .flags(READ_FAST)
        .acl(SORTEDSET)
        .keys(&key1(RO_ACCESS))
        .syntax("key member")
        .doc("1.2.0", "Returns the score of a sorted set member."),
    CommandSpec::new("zmscore", -3, Group::SortedSet, zmscore)
        .flags(READ_FAST)
        .acl(SORTEDSET)
        .keys(&key1(RO_ACCESS))
        .syntax("key member...")
        .doc("6.2.0", "Returns the scores of several sorted set members."),
    CommandSpec::new("zrem", -3, Group::SortedSet, zrem)
        .flags(WRITE | FAST)
        .acl(SORTEDSET)
        .keys(&key1(RW_DELETE))
        .touches(touches_listed)
        .syntax("key member...")
        .doc(
            "1.2.0",
            "Removes members from a sorted set; returns how many existed.",
        ),
    CommandSpec::new("zcard", 2, Group::SortedSet, zcard)
        .flags(READ_FAST)
        .acl(SORTEDSET)
        .keys(&key1(RO))
        .syntax("key")
        .doc("1.2.0", "Returns the number of members of a sorted set."),
    CommandSpec::new("zcount", 4, Group::SortedSet, zcount)
        .flags(READ_FAST)
        .acl(SORTEDSET)
        .keys(&key1(RO_ACCESS))
        .syntax("key min max")
        .doc(
            "2.0.0",
            "Counts the members of a sorted set with scores in a range.",
        ),
    CommandSpec::new("zrange", -4, Group::SortedSet, zrange)
        .flags(READONLY)
        .acl(SORTEDSET)
        .keys(&key1(RO_ACCESS))
        .syntax("key start stop [BYSCORE | BYLEX] [REV] [LIMIT offset count] [WITHSCORES]")
        .doc(
            "1.2.0",
            "Returns a range of sorted set members by rank, score or member.",
        ),
    CommandSpec::new("zrangebyscore", -4, Group::SortedSet, zrangebyscore)
        .flags(READONLY)
        .acl(SORTEDSET)
        .keys(&key1(RO_ACCESS))
        .syntax("key min max [WITHSCORES] [LIMIT offset count]")
        .doc(
            "1.0.5",
            "Returns the members of a sorted set with scores in a range.",
        ),
    CommandSpec::new("zremrangebyscore", 4, Group::SortedSet, zremrangebyscore)
        .flags(WRITE)
        .acl(SORTEDSET)
        .keys(&key1(RW_DELETE))
        .syntax("key min max")
        .doc(
            "1.2.0",
            "Removes the members of a sorted set with scores in a range.",
        ),
    CommandSpec::new("zrank", 3, Group::SortedSet, zrank)
        .flags(READ_FAST)
        .acl(SORTEDSET)
        .keys(&key1(RO_ACCESS))
        .syntax("key member")
        .doc(
            "2.0.0",
            "Returns the rank of a sorted set member, lowest score first.",
        ),
    CommandSpec::new("zrevrange", -4, Group::SortedSet, zrevrange)
        .flags(READONLY)
        .acl(SORTEDSET)
        .keys(&key1(RO_ACCESS))
        .syntax("key start stop [WITHSCORES]")
        .doc(
            "1.2.0",
            "Returns a range of sorted set members by rank, highest score first.",
        ),
    CommandSpec::new("zrevrangebyscore", -4, Group::SortedSet, zrevrangebyscore)
        .flags(READONLY)
        .acl(SORTEDSET)
        .keys(&key1(RO_ACCESS))
        .syntax("key max min [WITHSCORES] [LIMIT offset count]")
        .doc(
            "2.2.0",
            "Returns the members of a sorted set with scores in a range, highest first.",
        ),
    CommandSpec::new("zrangebylex", -4, Group::SortedSet, zrangebylex)
        .flags(READONLY)
        .acl(SORTEDSET)
        .keys(&key1(RO_ACCESS))
        .syntax("key min max [LIMIT offset count]")
        .doc(
            "2.8.9",
            "Returns the members of a sorted set in a lexicographical range.",
        ),
    CommandSpec::new("zrevrangebylex", -4, Group::SortedSet, zrevrangebylex)
        .flags(READONLY)
        .acl(SORTEDSET)
        .keys(&key1(RO_ACCESS))
        .syntax("key max min [LIMIT offset count]")
        .doc(
            "2.8.9",
            "Returns the members of a sorted set in a lexicographical range, in reverse.",
        ),
    CommandSpec::new("zrangestore", -5, Group::SortedSet, zrangestore)
        .flags(WRITE | DENYOOM)
        .acl(SORTEDSET)
        .keys(&[
            KeySpec::range(1, 0, 1, OW_UPDATE),
            KeySpec::range(2, 0, 1, RO_ACCESS),
        ])
        .syntax("destination source min max [BYSCORE | BYLEX] [REV] [LIMIT offset count]")
        .doc("6.2.0", "Stores a range of a sorted set in another key."),
    CommandSpec::new("zlexcount", 4, Group::SortedSet, zlexcount)
        .flags(READ_FAST)
        .acl(SORTEDSET)
        .keys(&key1(RO_ACCESS))
        .syntax("key min max")
        .doc(
            "2.8.9",
            "Counts the members of a sorted set in a lexicographical range.",
        ),
    CommandSpec::new("zrevrank", 3, Group::SortedSet, zrevrank)
        .flags(READ_FAST)
        .acl(SORTEDSET)
        .keys(&key1(RO_ACCESS))
        .syntax("key member")
        .doc(
            "2.0.0",
            "Returns the rank of a sorted set member, highest score first.",
        ),
    CommandSpec::new("zremrangebyrank", 4, Group::SortedSet, zremrangebyrank)
        .flags(WRITE)
        .acl(SORTEDSET)
        .keys(&key1(RW_DELETE))
        .syntax("key start stop")
        .doc(
            "2.0.0",
            "Removes the members of a sorted set in a range of ranks.",
        ),
    CommandSpec::new("zremrangebylex", 4, Group::SortedSet, zremrangebylex)
        .flags(WRITE)
        .acl(SORTEDSET)
        .keys(&key1(RW_DELETE))
        .syntax("key min max")
        .doc(
            "2.8.9",
            "Removes the members of a sorted set in a lexicographical range.",
        ),
    CommandSpec::new("zpopmin", -2, Group::SortedSet, zpopmin)
        .flags(WRITE | FAST)
        .acl(SORTEDSET)
        .keys(&key1(RW_ACCESS_DELETE))
        .syntax("key [count]")
        .doc(
            "5.0.0",
            "Removes and returns the lowest-scored members of a sorted set.",
        ),
    CommandSpec::new("zpopmax", -2, Group::SortedSet, zpopmax)
        .flags(WRITE | FAST)
        .acl(SORTEDSET)
        .keys(&key1(RW_ACCESS_DELETE))
        .syntax("key [count]")
        .doc(
            "5.0.0",
            "Removes and returns the highest-scored members of a sorted set.",
        ),
    CommandSpec::new("zunion", -3, Group::SortedSet, zunion)
        .flags(READONLY)
        .acl(SORTEDSET)
        .keys(&[KeySpec::keynum(1, RO_ACCESS)])
        .syntax("numkeys key... [WEIGHTS weight...] [AGGREGATE (SUM | MIN | MAX)] [WITHSCORES]")
        .doc("6.2.0", "Returns the union of sorted sets (and sets)."),
    CommandSpec::new("zinter", -3, Group::SortedSet, zinter)
        .flags(READONLY)
        .acl(SORTEDSET)
        .keys(&[KeySpec::keynum(1, RO_ACCESS)])
        .syntax("numkeys key... [WEIGHTS weight...] [AGGREGATE (SUM | MIN | MAX)] [WITHSCORES]")
        .doc(
            "6.2.0",
            "Returns the intersection of sorted sets (and sets).",
        ),
    CommandSpec::new("zdiff", -3, Group::SortedSet, zdiff)
        .flags(READONLY)
        .acl(SORTEDSET)
        .keys(&[KeySpec::keynum(1, RO_ACCESS)])
        .syntax("numkeys key... [WITHSCORES]")
        .doc(
            "6.2.0",
            "Returns the members of the first sorted set that are in none of the others.",
        ),
    CommandSpec::new("zunionstore", -4, Group::SortedSet, zunionstore)
        .flags(WRITE | DENYOOM)
        .acl(SORTEDSET)
        .keys(&ZSTORE_KEYS)
        .syntax("destination numkeys key... [WEIGHTS weight...] [AGGREGATE (SUM | MIN | MAX)]")
        .doc(
            "2.0.0",
            "Stores the union of sorted sets (and sets) in a key.",
        ),
    CommandSpec::new("zinterstore", -4, Group::SortedSet, zinterstore)
        .flags(WRITE | DENYOOM)
        .acl(SORTEDSET)
        .keys(&ZSTORE_KEYS)
        .syntax("destination numkeys key... [WEIGHTS weight...] [AGGREGATE (SUM | MIN | MAX)]")
        .doc(
            "2.0.0",
            "Stores the intersection of sorted sets (and sets) in a key.",
        ),
    CommandSpec::new("zdiffstore", -4, Group::SortedSet, zdiffstore)
        .flags(WRITE | DENYOOM)
        .acl(SORTEDSET)
        .keys(&ZSTORE_KEYS)
        .syntax("destination numkeys key...")
        .doc("6.2.0", "Stores the difference of sorted sets in a key."),
    CommandSpec::new("zintercard", -3, Group::SortedSet, zintercard)
        .flags(READONLY)
        .acl(SORTEDSET)
        .keys(&[KeySpec::keynum(1, RO_ACCESS)])
        .syntax("numkeys key... [LIMIT limit]")
        .doc(
            "7.0.0",
            "Counts the members common to sorted sets, up to a limit.",
        ),
    CommandSpec::new("zrandmember", -2, Group::SortedSet, zrandmember)
        .flags(READONLY)
        .acl(SORTEDSET)
        .tips(NONDET)
        .keys(&key1(RO_ACCESS))
        .syntax("key [count [WITHSCORES]]")
        .doc("6.2.0", "Returns random members of a sorted set."),
    CommandSpec::new("zscan", -3, Group::SortedSet, zscan)
        .flags(READONLY)
        .acl(SORTEDSET)
        .tips(NONDET)
        .keys(&key1(RO_ACCESS))
        .syntax("key cursor [MATCH pattern] [COUNT count]")
        .doc(
            "2.8.0",
            "Iterates over the members and scores of a sorted set.",
        ),
];
