//! Sorted sets combined: ZUNION, ZINTER, ZDIFF, their STORE forms, and
//! ZINTERCARD. Their inputs may be plain sets, whose members score 1.

use bytes::Bytes;

use super::{parse_long, scored_reply, store_result, syntax};
use crate::command::Ctx;
use crate::command::presets::{OW_UPDATE, RO_ACCESS};
use crate::command::spec::acl::SORTEDSET;
use crate::command::spec::flag::{DENYOOM, READONLY, WRITE};
use crate::command::spec::{CommandSpec, Group, KeySpec};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{SortedSet, Value};
use crate::protocol::{Protocol, Reply};
use crate::pubsub::Event;
use crate::util::{parse_f64, parse_i64};

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

/// A destination, then `numkeys` source keys (ZUNIONSTORE and kin).
const ZSTORE_KEYS: [KeySpec; 2] = [
    KeySpec::range(1, 0, 1, OW_UPDATE),
    KeySpec::keynum(2, RO_ACCESS),
];

pub(super) const ZUNION: CommandSpec = CommandSpec::new("zunion", -3, Group::SortedSet, zunion)
    .flags(READONLY)
    .acl(SORTEDSET)
    .keys(&[KeySpec::keynum(1, RO_ACCESS)])
    .syntax("numkeys key... [WEIGHTS weight...] [AGGREGATE (SUM | MIN | MAX)] [WITHSCORES]")
    .doc("6.2.0", "Returns the union of sorted sets (and sets).");

pub(super) const ZINTER: CommandSpec = CommandSpec::new("zinter", -3, Group::SortedSet, zinter)
    .flags(READONLY)
    .acl(SORTEDSET)
    .keys(&[KeySpec::keynum(1, RO_ACCESS)])
    .syntax("numkeys key... [WEIGHTS weight...] [AGGREGATE (SUM | MIN | MAX)] [WITHSCORES]")
    .doc(
        "6.2.0",
        "Returns the intersection of sorted sets (and sets).",
    );

pub(super) const ZDIFF: CommandSpec = CommandSpec::new("zdiff", -3, Group::SortedSet, zdiff)
    .flags(READONLY)
    .acl(SORTEDSET)
    .keys(&[KeySpec::keynum(1, RO_ACCESS)])
    .syntax("numkeys key... [WITHSCORES]")
    .doc(
        "6.2.0",
        "Returns the members of the first sorted set that are in none of the others.",
    );

pub(super) const ZUNIONSTORE: CommandSpec =
    CommandSpec::new("zunionstore", -4, Group::SortedSet, zunionstore)
        .records_itself()
        .flags(WRITE | DENYOOM)
        .acl(SORTEDSET)
        .keys(&ZSTORE_KEYS)
        .syntax("destination numkeys key... [WEIGHTS weight...] [AGGREGATE (SUM | MIN | MAX)]")
        .doc(
            "2.0.0",
            "Stores the union of sorted sets (and sets) in a key.",
        );

pub(super) const ZINTERSTORE: CommandSpec =
    CommandSpec::new("zinterstore", -4, Group::SortedSet, zinterstore)
        .records_itself()
        .flags(WRITE | DENYOOM)
        .acl(SORTEDSET)
        .keys(&ZSTORE_KEYS)
        .syntax("destination numkeys key... [WEIGHTS weight...] [AGGREGATE (SUM | MIN | MAX)]")
        .doc(
            "2.0.0",
            "Stores the intersection of sorted sets (and sets) in a key.",
        );

pub(super) const ZDIFFSTORE: CommandSpec =
    CommandSpec::new("zdiffstore", -4, Group::SortedSet, zdiffstore)
        .records_itself()
        .flags(WRITE | DENYOOM)
        .acl(SORTEDSET)
        .keys(&ZSTORE_KEYS)
        .syntax("destination numkeys key...")
        .doc("6.2.0", "Stores the difference of sorted sets in a key.");

pub(super) const ZINTERCARD: CommandSpec =
    CommandSpec::new("zintercard", -3, Group::SortedSet, zintercard)
        .flags(READONLY)
        .acl(SORTEDSET)
        .keys(&[KeySpec::keynum(1, RO_ACCESS)])
        .syntax("numkeys key... [LIMIT limit]")
        .doc(
            "7.0.0",
            "Counts the members common to sorted sets, up to a limit.",
        );
