//! Moving, multi-key popping and blocking commands: LMOVE, RPOPLPUSH,
//! LMPOP, ZMPOP, BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN,
//! BZPOPMAX, BZMPOP; and WAIT / WAITAOF, which block on time alone.
//! (XREAD and XREADGROUP block through `block` too.) A blocking command that finds nothing queues a
//! waiter on its keys (under their shard locks, so no push can slip in
//! between) and leaves it on the client; the connection then waits for the
//! keyspace to serve it (see `keyspace::blocked`), for its timeout, or for
//! the client to go away.

use std::time::Duration;

use bytes::Bytes;

use super::Ctx;
use super::presets::RW_ACCESS_DELETE;
use super::spec::acl::{CONNECTION, LIST, SORTEDSET};
use super::spec::flag::{BLOCKING, DENYOOM, FAST, NOSCRIPT, WRITE};
use super::spec::{CommandSpec, Group, KeySpec};
use super::waiting::{block, may_block, timeout_arg, timeout_ms_arg};
use crate::context::client::ServedReply;
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{End, Taken, Value, Wanted, ZEnd};
use crate::protocol::Reply;
use crate::util::parse_i64;

/// Members as the popping commands send them: each member, then its score.
fn taken_items(taken: Taken, nested: bool) -> Vec<Reply> {
    match taken {
        Taken::List(elements) => elements.into_iter().map(Reply::Bulk).collect(),
        Taken::ZSet(members) if nested => members
            .into_iter()
            .map(|(m, s)| Reply::Array(vec![Reply::Bulk(m), Reply::Double(s)]))
            .collect(),
        Taken::ZSet(members) => members
            .into_iter()
            .flat_map(|(m, s)| [Reply::Bulk(m), Reply::Double(s)])
            .collect(),
        // Stream reads build their own replies (see `streams`), WAIT its own.
        Taken::Stream(_) | Taken::Count(_) => Vec::new(),
    }
}

/// BLPOP's `[key, element]` and BZPOPMIN's `[key, member, score]`.
fn key_then_items(key: Bytes, taken: Taken) -> Reply {
    let mut out = vec![Reply::Bulk(key)];
    out.extend(taken_items(taken, false));
    Reply::Array(out)
}

/// The MPOP family's `[key, [item...]]`, each sorted set member as a
/// `[member, score]` pair (in RESP2 too).
pub fn key_and_items(key: Bytes, taken: Taken) -> Reply {
    Reply::Array(vec![
        Reply::Bulk(key),
        Reply::Array(taken_items(taken, true)),
    ])
}

/// BLMOVE's element alone.
fn element_only(_key: Bytes, taken: Taken) -> Reply {
    taken_items(taken, false)
        .into_iter()
        .next()
        .unwrap_or(Reply::Nil)
}

fn end_arg(arg: &[u8]) -> CmdResult<End> {
    if arg.eq_ignore_ascii_case(b"left") {
        Ok(End::Left)
    } else if arg.eq_ignore_ascii_case(b"right") {
        Ok(End::Right)
    } else {
        Err(CmdError::Syntax)
    }
}

/// LMOVE's work: `None` if the source has nothing to give.
fn move_element(
    ctx: &mut Ctx,
    source: &Bytes,
    dest: &Bytes,
    from: End,
    to: End,
) -> CmdResult<Option<Bytes>> {
    let mut db = ctx.db();
    db.check_list(source)?;
    if !matches!(db.get(source)?, Some(Value::List(_))) {
        return Ok(None);
    }
    db.check_list(dest)?;
    let Some(element) = db.pop_list(source, from)? else {
        return Ok(None);
    };
    db.push_list(dest, to, element.clone())?;
    Ok(Some(element))
}

pub fn lmove(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (from, to) = (end_arg(ctx.arg(3))?, end_arg(ctx.arg(4))?);
    let (source, dest) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    Ok(Reply::opt_bulk(move_element(
        ctx, &source, &dest, from, to,
    )?))
}

pub fn rpoplpush(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (source, dest) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    Ok(Reply::opt_bulk(move_element(
        ctx,
        &source,
        &dest,
        End::Right,
        End::Left,
    )?))
}

/// BLPOP, BRPOP, BZPOPMIN, BZPOPMAX: `key... timeout`, one item.
fn blocking_single(ctx: &mut Ctx, wanted: Wanted) -> CmdResult<Reply> {
    let timeout = timeout_arg(ctx.arg(ctx.args.len() - 1))?;
    let keys = ctx.args[1..ctx.args.len() - 1].to_vec();
    pop_or_block(ctx, keys, wanted, timeout, key_then_items)
}

/// Pops what `wanted` asks from the first of `keys` that has something
/// (WRONGTYPE if a key before it holds another type), else blocks on
/// them all. Inside EXEC or a script it answers a nil array at once.
fn pop_or_block(
    ctx: &mut Ctx,
    keys: Vec<Bytes>,
    wanted: Wanted,
    timeout: Option<Duration>,
    served_reply: ServedReply,
) -> CmdResult<Reply> {
    if let Some((key, taken)) = pop_first(ctx, &keys, &wanted)? {
        return Ok(served_reply(key, taken));
    }
    if !may_block(ctx) {
        return Ok(Reply::NilArray);
    }
    block(ctx, keys, wanted, timeout, (Reply::NilArray, served_reply))
}

/// Takes what `wanted` asks from the first of `keys` holding its type;
/// WRONGTYPE if a key before that holds another type.
fn pop_first(ctx: &mut Ctx, keys: &[Bytes], wanted: &Wanted) -> CmdResult<Option<(Bytes, Taken)>> {
    let mut db = ctx.db();
    for key in keys {
        let taken = match (db.get(key)?, wanted) {
            (None, _) => continue,
            (Some(Value::List(_)), Wanted::List { end, count }) => {
                Taken::List(db.pop_list_many(key, *end, *count)?)
            }
            (Some(Value::ZSet(_)), Wanted::ZSet { end, count }) => {
                Taken::ZSet(db.pop_zset(key, *end, *count)?)
            }
            _ => return Err(CmdError::WrongType),
        };
        return Ok(Some((key.clone(), taken)));
    }
    Ok(None)
}

pub fn blpop(ctx: &mut Ctx) -> CmdResult<Reply> {
    let wanted = Wanted::List {
        end: End::Left,
        count: 1,
    };
    blocking_single(ctx, wanted)
}

pub fn brpop(ctx: &mut Ctx) -> CmdResult<Reply> {
    let wanted = Wanted::List {
        end: End::Right,
        count: 1,
    };
    blocking_single(ctx, wanted)
}

fn blocking_move(ctx: &mut Ctx, from: End, to: End, timeout_at: usize) -> CmdResult<Reply> {
    let timeout = timeout_arg(ctx.arg(timeout_at))?;
    let (source, dest) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.db();
    db.check_list(&source)?;
    if db.exists(&source)? {
        return Ok(Reply::opt_bulk(move_element(
            ctx, &source, &dest, from, to,
        )?));
    }
    if !may_block(ctx) {
        return Ok(Reply::Nil);
    }
    let wanted = Wanted::Move { from, dest, to };
    // Redis answers a timed-out BLMOVE with a nil array, like BLPOP.
    block(
        ctx,
        vec![source],
        wanted,
        timeout,
        (Reply::NilArray, element_only),
    )
}

pub fn blmove(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (from, to) = (end_arg(ctx.arg(3))?, end_arg(ctx.arg(4))?);
    blocking_move(ctx, from, to, 5)
}

pub fn brpoplpush(ctx: &mut Ctx) -> CmdResult<Reply> {
    blocking_move(ctx, End::Right, End::Left, 3)
}

/// WAIT numreplicas timeout: rlockd has no replicas, so 0 acknowledge; a
/// client asking for more waits out its timeout, as on a lone Redis.
pub fn wait(ctx: &mut Ctx) -> CmdResult<Reply> {
    if ctx.shared.replica.is_replica() {
        return Err(CmdError::other(
            "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.",
        ));
    }
    let timeout = timeout_ms_arg(ctx.arg(2))?;
    let wanted = parse_i64(ctx.arg(1)).ok_or(CmdError::NotInteger)?;
    // Everything written so far, this client's writes among it.
    let offset = ctx.shared.replica.backlog.offset();
    let replicas = ctx.shared.replicas.clone();
    let acked = replicas.acked_at_least(offset) as i64;
    if acked >= wanted || !may_block(ctx) {
        return Ok(Reply::Int(acked));
    }
    // Replicas are asked for their offsets now, not at their next ACK.
    ctx.shared
        .replica
        .backlog
        .command(None, &[b"REPLCONF", b"GETACK", b"*"]);
    // The timeout is `serve_wait`'s: it answers how many acknowledged.
    let reply = block(
        ctx,
        Vec::new(),
        Wanted::Time,
        None,
        (Reply::Int(0), acked_count),
    )?;
    if let (Some(blocked), Ok(runtime)) =
        (&ctx.client.blocked, tokio::runtime::Handle::try_current())
    {
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        runtime.spawn(replicas.serve_wait(
            blocked.waiter.clone(),
            offset,
            wanted as usize,
            deadline,
        ));
    }
    Ok(reply)
}

fn acked_count(_key: Bytes, taken: Taken) -> Reply {
    match taken {
        Taken::Count(n) => Reply::Int(n),
        _ => Reply::Int(0),
    }
}

/// WAITAOF numlocal numreplicas timeout (Redis 7.2; Redisson probes it):
/// no append-only file and no replicas, so `[0, 0]`.
pub fn waitaof(ctx: &mut Ctx) -> CmdResult<Reply> {
    let local = parse_i64(ctx.arg(1)).ok_or(CmdError::NotInteger)?;
    if !(0..=1).contains(&local) {
        return Err(CmdError::other(
            "ERR value is out of range, value must between 0 and 1",
        ));
    }
    let replicas = parse_i64(ctx.arg(2)).ok_or(CmdError::NotInteger)?;
    if replicas < 0 {
        return Err(CmdError::other(
            "ERR value is out of range, must be positive",
        ));
    }
    let timeout = timeout_ms_arg(ctx.arg(3))?;
    if local > 0 {
        return Err(CmdError::other(
            "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.",
        ));
    }
    let none = Reply::Array(vec![Reply::Int(0), Reply::Int(0)]);
    if replicas == 0 || !may_block(ctx) {
        return Ok(none);
    }
    block(ctx, Vec::new(), Wanted::Time, timeout, (none, element_only))
}

/// `numkeys key... (LEFT|RIGHT|MIN|MAX) [COUNT count]`, as the MPOP family
/// takes it from argument `at`: the keys and what to take from them.
fn mpop_args(ctx: &Ctx, at: usize, zset: bool) -> CmdResult<(Vec<Bytes>, Wanted)> {
    let numkeys = parse_i64(ctx.arg(at))
        .filter(|n| *n > 0)
        .ok_or(CmdError::NumkeysNotPositive)?;
    let where_at = usize::try_from(numkeys)
        .ok()
        .and_then(|n| n.checked_add(at + 1))
        .filter(|w| *w < ctx.args.len())
        .ok_or(CmdError::Syntax)?;
    let side = &ctx.args[where_at];
    let mut count = None;
    let mut j = where_at + 1;
    while j < ctx.args.len() {
        match ctx.args.get(j + 1) {
            Some(value) if count.is_none() && ctx.args[j].eq_ignore_ascii_case(b"count") => {
                count = Some(
                    parse_i64(value)
                        .filter(|n| *n > 0)
                        .ok_or_else(|| CmdError::other("ERR count should be greater than 0"))?,
                );
                j += 2;
            }
            _ => return Err(CmdError::Syntax),
        }
    }
    let count = usize::try_from(count.unwrap_or(1)).unwrap_or(usize::MAX);
    let wanted = if zset {
        let end = if side.eq_ignore_ascii_case(b"min") {
            ZEnd::Min
        } else if side.eq_ignore_ascii_case(b"max") {
            ZEnd::Max
        } else {
            return Err(CmdError::Syntax);
        };
        Wanted::ZSet { end, count }
    } else {
        Wanted::List {
            end: end_arg(side)?,
            count,
        }
    };
    Ok((ctx.args[at + 1..where_at].to_vec(), wanted))
}

/// LMPOP / ZMPOP: the first key that has something, or a nil array.
fn mpop(ctx: &mut Ctx, zset: bool) -> CmdResult<Reply> {
    let (keys, wanted) = mpop_args(ctx, 1, zset)?;
    Ok(match pop_first(ctx, &keys, &wanted)? {
        Some((key, taken)) => key_and_items(key, taken),
        None => Reply::NilArray,
    })
}

/// BLMPOP / BZMPOP: like the MPOP, waiting for a key up to the timeout.
fn blocking_mpop(ctx: &mut Ctx, zset: bool) -> CmdResult<Reply> {
    // Redis 7.0 reads the timeout after the other arguments.
    let (keys, wanted) = mpop_args(ctx, 2, zset)?;
    let timeout = timeout_arg(ctx.arg(1))?;
    pop_or_block(ctx, keys, wanted, timeout, key_and_items)
}

pub fn lmpop(ctx: &mut Ctx) -> CmdResult<Reply> {
    mpop(ctx, false)
}

pub fn zmpop(ctx: &mut Ctx) -> CmdResult<Reply> {
    mpop(ctx, true)
}

pub fn blmpop(ctx: &mut Ctx) -> CmdResult<Reply> {
    blocking_mpop(ctx, false)
}

pub fn bzmpop(ctx: &mut Ctx) -> CmdResult<Reply> {
    blocking_mpop(ctx, true)
}

pub fn bzpopmin(ctx: &mut Ctx) -> CmdResult<Reply> {
    let wanted = Wanted::ZSet {
        end: ZEnd::Min,
        count: 1,
    };
    blocking_single(ctx, wanted)
}

pub fn bzpopmax(ctx: &mut Ctx) -> CmdResult<Reply> {
    let wanted = Wanted::ZSet {
        end: ZEnd::Max,
        count: 1,
    };
    blocking_single(ctx, wanted)
}

/// A source list and a destination list (LMOVE and its kin).
const MOVE_KEYS: [KeySpec; 2] = [
    KeySpec::range(1, 0, 1, RW_ACCESS_DELETE),
    KeySpec::range(2, 0, 1, &["RW", "insert"]),
];

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("wait", 3, Group::Connection, wait).flags(NOSCRIPT).acl(CONNECTION).tips(&["request_policy:all_shards", "response_policy:agg_min"])
        .syntax("numreplicas timeout")
        .doc("3.0.0", "Waits for replicas to acknowledge earlier writes; rlockd has none, so 0."),
    CommandSpec::new("waitaof", 4, Group::Connection, waitaof).flags(NOSCRIPT).acl(CONNECTION).tips(&["request_policy:all_shards", "response_policy:agg_min"])
        .syntax("numlocal numreplicas timeout")
        .doc("7.2.0", "Waits for writes to reach the append-only file; rlockd keeps none, so [0, 0]."),
    CommandSpec::new("lmpop", -4, Group::List, lmpop).flags(WRITE).acl(LIST).keys(&[KeySpec::keynum(1, RW_ACCESS_DELETE)])
        .syntax("numkeys key... (LEFT | RIGHT) [COUNT count]")
        .doc("7.0.0", "Pops elements from the first non-empty list of several."),
    CommandSpec::new("blmpop", -5, Group::List, blmpop).flags(WRITE | BLOCKING).acl(LIST).keys(&[KeySpec::keynum(2, RW_ACCESS_DELETE)])
        .syntax("timeout numkeys key... (LEFT | RIGHT) [COUNT count]")
        .doc("7.0.0", "Pops elements like LMPOP, waiting for a list up to a timeout."),
    CommandSpec::new("lmove", 5, Group::List, lmove).flags(WRITE | DENYOOM).acl(LIST).keys(&MOVE_KEYS)
        .syntax("source destination (LEFT | RIGHT) (LEFT | RIGHT)")
        .doc("6.2.0", "Moves an element from one end of a list to an end of another, and returns it."),
    CommandSpec::new("rpoplpush", 3, Group::List, rpoplpush).flags(WRITE | DENYOOM).acl(LIST).keys(&MOVE_KEYS)
        .syntax("source destination")
        .doc("1.2.0", "Moves the last element of a list to the front of another, and returns it."),
    CommandSpec::new("blpop", -3, Group::List, blpop).flags(WRITE | NOSCRIPT | BLOCKING).acl(LIST).keys(&[KeySpec::range(1, -2, 1, RW_ACCESS_DELETE)])
        .syntax("key... timeout")
        .doc("2.0.0", "Removes and returns the first element of the first non-empty list, waiting for one up to a timeout."),
    CommandSpec::new("brpop", -3, Group::List, brpop).flags(WRITE | NOSCRIPT | BLOCKING).acl(LIST).keys(&[KeySpec::range(1, -2, 1, RW_ACCESS_DELETE)])
        .syntax("key... timeout")
        .doc("2.0.0", "Removes and returns the last element of the first non-empty list, waiting for one up to a timeout."),
    CommandSpec::new("blmove", 6, Group::List, blmove).flags(WRITE | DENYOOM | NOSCRIPT | BLOCKING).acl(LIST).keys(&MOVE_KEYS)
        .syntax("source destination (LEFT | RIGHT) (LEFT | RIGHT) timeout")
        .doc("6.2.0", "Moves an element between lists like LMOVE, waiting for one up to a timeout."),
    CommandSpec::new("brpoplpush", 4, Group::List, brpoplpush).flags(WRITE | DENYOOM | NOSCRIPT | BLOCKING).acl(LIST).keys(&MOVE_KEYS)
        .syntax("source destination timeout")
        .doc("2.2.0", "Moves an element between lists like RPOPLPUSH, waiting for one up to a timeout."),
    CommandSpec::new("zmpop", -4, Group::SortedSet, zmpop).flags(WRITE).acl(SORTEDSET).keys(&[KeySpec::keynum(1, RW_ACCESS_DELETE)])
        .syntax("numkeys key... (MIN | MAX) [COUNT count]")
        .doc("7.0.0", "Pops the lowest or highest members of the first non-empty sorted set of several."),
    CommandSpec::new("bzpopmin", -3, Group::SortedSet, bzpopmin).flags(WRITE | NOSCRIPT | FAST | BLOCKING).acl(SORTEDSET).keys(&[KeySpec::range(1, -2, 1, RW_ACCESS_DELETE)])
        .syntax("key... timeout")
        .doc("5.0.0", "Pops the lowest-scored member of the first non-empty sorted set, waiting for one up to a timeout."),
    CommandSpec::new("bzpopmax", -3, Group::SortedSet, bzpopmax).flags(WRITE | NOSCRIPT | FAST | BLOCKING).acl(SORTEDSET).keys(&[KeySpec::range(1, -2, 1, RW_ACCESS_DELETE)])
        .syntax("key... timeout")
        .doc("5.0.0", "Pops the highest-scored member of the first non-empty sorted set, waiting for one up to a timeout."),
    CommandSpec::new("bzmpop", -5, Group::SortedSet, bzmpop).flags(WRITE | BLOCKING).acl(SORTEDSET).keys(&[KeySpec::keynum(2, RW_ACCESS_DELETE)])
        .syntax("timeout numkeys key... (MIN | MAX) [COUNT count]")
        .doc("7.0.0", "Pops members like ZMPOP, waiting for a sorted set up to a timeout."),
];
