//! The ranges of a sorted set, by rank, score or member: ZRANGE and its
//! older forms (ZRANGEBYSCORE, ZRANGEBYLEX, ZREV*), ZRANGESTORE, ZCOUNT,
//! ZLEXCOUNT and ZREMRANGEBY{SCORE,RANK,LEX}.

use bytes::Bytes;

use super::{Removed, finish_removal, parse_long, scored_reply, store_result, syntax};
use crate::command::Ctx;
use crate::command::presets::{OW_UPDATE, READ_FAST, RO_ACCESS, RW_DELETE, key1};
use crate::command::spec::acl::SORTEDSET;
use crate::command::spec::flag::{DENYOOM, READONLY, WRITE};
use crate::command::spec::{CommandSpec, Group, KeySpec};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::SortedSet;
use crate::protocol::{Protocol, Reply};
use crate::pubsub::Event;
use crate::util::parse_f64;

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
    let doomed: Vec<Bytes> = query.select(zset).into_iter().map(|(m, _)| m).collect();
    for m in &doomed {
        zset.remove(m);
    }
    let count = doomed.len() as i64;
    finish_removal(&mut db, &key, Removed::Members(doomed), event)?;
    Ok(Reply::Int(count))
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

pub(super) const ZCOUNT: CommandSpec = CommandSpec::new("zcount", 4, Group::SortedSet, zcount)
    .flags(READ_FAST)
    .acl(SORTEDSET)
    .keys(&key1(RO_ACCESS))
    .syntax("key min max")
    .doc(
        "2.0.0",
        "Counts the members of a sorted set with scores in a range.",
    );

pub(super) const ZRANGE: CommandSpec = CommandSpec::new("zrange", -4, Group::SortedSet, zrange)
    .flags(READONLY)
    .acl(SORTEDSET)
    .keys(&key1(RO_ACCESS))
    .syntax("key start stop [BYSCORE | BYLEX] [REV] [LIMIT offset count] [WITHSCORES]")
    .doc(
        "1.2.0",
        "Returns a range of sorted set members by rank, score or member.",
    );

pub(super) const ZRANGEBYSCORE: CommandSpec =
    CommandSpec::new("zrangebyscore", -4, Group::SortedSet, zrangebyscore)
        .flags(READONLY)
        .acl(SORTEDSET)
        .keys(&key1(RO_ACCESS))
        .syntax("key min max [WITHSCORES] [LIMIT offset count]")
        .doc(
            "1.0.5",
            "Returns the members of a sorted set with scores in a range.",
        );

pub(super) const ZREMRANGEBYSCORE: CommandSpec =
    CommandSpec::new("zremrangebyscore", 4, Group::SortedSet, zremrangebyscore)
        .flags(WRITE)
        .acl(SORTEDSET)
        .keys(&key1(RW_DELETE))
        .syntax("key min max")
        .doc(
            "1.2.0",
            "Removes the members of a sorted set with scores in a range.",
        );

pub(super) const ZREVRANGE: CommandSpec =
    CommandSpec::new("zrevrange", -4, Group::SortedSet, zrevrange)
        .flags(READONLY)
        .acl(SORTEDSET)
        .keys(&key1(RO_ACCESS))
        .syntax("key start stop [WITHSCORES]")
        .doc(
            "1.2.0",
            "Returns a range of sorted set members by rank, highest score first.",
        );

pub(super) const ZREVRANGEBYSCORE: CommandSpec =
    CommandSpec::new("zrevrangebyscore", -4, Group::SortedSet, zrevrangebyscore)
        .flags(READONLY)
        .acl(SORTEDSET)
        .keys(&key1(RO_ACCESS))
        .syntax("key max min [WITHSCORES] [LIMIT offset count]")
        .doc(
            "2.2.0",
            "Returns the members of a sorted set with scores in a range, highest first.",
        );

pub(super) const ZRANGEBYLEX: CommandSpec =
    CommandSpec::new("zrangebylex", -4, Group::SortedSet, zrangebylex)
        .flags(READONLY)
        .acl(SORTEDSET)
        .keys(&key1(RO_ACCESS))
        .syntax("key min max [LIMIT offset count]")
        .doc(
            "2.8.9",
            "Returns the members of a sorted set in a lexicographical range.",
        );

pub(super) const ZREVRANGEBYLEX: CommandSpec =
    CommandSpec::new("zrevrangebylex", -4, Group::SortedSet, zrevrangebylex)
        .flags(READONLY)
        .acl(SORTEDSET)
        .keys(&key1(RO_ACCESS))
        .syntax("key max min [LIMIT offset count]")
        .doc(
            "2.8.9",
            "Returns the members of a sorted set in a lexicographical range, in reverse.",
        );

pub(super) const ZRANGESTORE: CommandSpec =
    CommandSpec::new("zrangestore", -5, Group::SortedSet, zrangestore)
        .records_itself()
        .flags(WRITE | DENYOOM)
        .acl(SORTEDSET)
        .keys(&[
            KeySpec::range(1, 0, 1, OW_UPDATE),
            KeySpec::range(2, 0, 1, RO_ACCESS),
        ])
        .syntax("destination source min max [BYSCORE | BYLEX] [REV] [LIMIT offset count]")
        .doc("6.2.0", "Stores a range of a sorted set in another key.");

pub(super) const ZLEXCOUNT: CommandSpec =
    CommandSpec::new("zlexcount", 4, Group::SortedSet, zlexcount)
        .flags(READ_FAST)
        .acl(SORTEDSET)
        .keys(&key1(RO_ACCESS))
        .syntax("key min max")
        .doc(
            "2.8.9",
            "Counts the members of a sorted set in a lexicographical range.",
        );

pub(super) const ZREMRANGEBYRANK: CommandSpec =
    CommandSpec::new("zremrangebyrank", 4, Group::SortedSet, zremrangebyrank)
        .flags(WRITE)
        .acl(SORTEDSET)
        .keys(&key1(RW_DELETE))
        .syntax("key start stop")
        .doc(
            "2.0.0",
            "Removes the members of a sorted set in a range of ranks.",
        );

pub(super) const ZREMRANGEBYLEX: CommandSpec =
    CommandSpec::new("zremrangebylex", 4, Group::SortedSet, zremrangebylex)
        .flags(WRITE)
        .acl(SORTEDSET)
        .keys(&key1(RW_DELETE))
        .syntax("key min max")
        .doc(
            "2.8.9",
            "Removes the members of a sorted set in a lexicographical range.",
        );
