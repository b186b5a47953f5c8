//! Members taken from a sorted set's ends or at random: ZPOPMIN, ZPOPMAX
//! and ZRANDMEMBER. The MPOP and blocking pops live in `blocking`.

use bytes::Bytes;
use rand::RngExt;

use super::{parse_long, scored_reply, syntax};
use crate::command::Ctx;
use crate::command::args::RANDOM_REPEATS_MAX;
use crate::command::presets::{NONDET, RO_ACCESS, RW_ACCESS_DELETE, key1};
use crate::command::spec::acl::SORTEDSET;
use crate::command::spec::flag::{FAST, READONLY, WRITE};
use crate::command::spec::{CommandSpec, Group};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{SortedSet, ZEnd};
use crate::protocol::{Protocol, Reply};
use crate::util::parse_i64;

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

pub(super) const ZPOPMIN: CommandSpec = CommandSpec::new("zpopmin", -2, Group::SortedSet, zpopmin)
    .flags(WRITE | FAST)
    .acl(SORTEDSET)
    .keys(&key1(RW_ACCESS_DELETE))
    .syntax("key [count]")
    .doc(
        "5.0.0",
        "Removes and returns the lowest-scored members of a sorted set.",
    );

pub(super) const ZPOPMAX: CommandSpec = CommandSpec::new("zpopmax", -2, Group::SortedSet, zpopmax)
    .flags(WRITE | FAST)
    .acl(SORTEDSET)
    .keys(&key1(RW_ACCESS_DELETE))
    .syntax("key [count]")
    .doc(
        "5.0.0",
        "Removes and returns the highest-scored members of a sorted set.",
    );

pub(super) const ZRANDMEMBER: CommandSpec =
    CommandSpec::new("zrandmember", -2, Group::SortedSet, zrandmember)
        .flags(READONLY)
        .acl(SORTEDSET)
        .tips(NONDET)
        .keys(&key1(RO_ACCESS))
        .syntax("key [count [WITHSCORES]]")
        .doc("6.2.0", "Returns random members of a sorted set.");
