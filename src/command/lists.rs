//! List commands (non-blocking): RPUSH, LPUSH, RPUSHX, LPUSHX, LPOP, RPOP,
//! LINDEX, LRANGE, LLEN, LREM, LSET, LPOS, LINSERT, LTRIM.

use std::collections::VecDeque;

use bytes::Bytes;

use super::Ctx;
use super::presets::{
    READ_FAST, RO, RO_ACCESS, RW_ACCESS_DELETE, RW_DELETE, RW_UPDATE, WRITE_FAST, key1,
};
use super::spec::acl::LIST;
use super::spec::flag::{DENYOOM, FAST, READONLY, WRITE};
use super::spec::{CommandSpec, Group};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{Db, End, ListOp, Touch, Ttl, Value};
use crate::protocol::Reply;
use crate::pubsub::Event;
use crate::util::parse_i64;

type List = VecDeque<Bytes>;

fn int_arg(b: &[u8]) -> CmdResult<i64> {
    parse_i64(b).ok_or(CmdError::NotInteger)
}

/// A count that must be zero or more; `msg` is the error for anything else.
fn non_negative(b: &[u8], msg: &str) -> CmdResult<i64> {
    match parse_i64(b) {
        Some(n) if n >= 0 => Ok(n),
        _ => Err(CmdError::other(msg)),
    }
}

/// Resolves a possibly negative index against `len`; `None` if outside.
fn resolve(index: i64, len: usize) -> Option<usize> {
    let len = len as i64;
    let i = if index < 0 { index + len } else { index };
    (0..len).contains(&i).then_some(i as usize)
}

/// After a removal by `op`: deletes an emptied list, raises `event` (and
/// `del`).
fn after_removal(
    db: &mut Db,
    key: &[u8],
    op: impl FnOnce() -> ListOp,
    event: Event,
) -> CmdResult<()> {
    let emptied = matches!(db.get_mut(key)?, Some(Value::List(l)) if l.is_empty());
    if emptied {
        db.remove(key)?;
    }
    db.modified_list(key, op, event)?;
    if emptied {
        db.notify(key, Event::Del);
    }
    Ok(())
}

/// Pushes the arguments after the key; with `existing_only` (LPUSHX,
/// RPUSHX) a missing key stays missing and the reply is 0.
fn push(ctx: &mut Ctx, front: bool, existing_only: bool) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    if db.typed_for_write::<List>(&key)?.is_none() {
        if existing_only {
            return Ok(Reply::Int(0));
        }
        db.insert(&key, Value::List(List::new()), Ttl::Clear)?;
    }
    let Some(list) = db.typed_for_write::<List>(&key)? else {
        return Err(CmdError::WrongType);
    };
    for item in &ctx.args[2..] {
        let item = Bytes::copy_from_slice(item);
        if front {
            list.push_front(item);
        } else {
            list.push_back(item);
        }
    }
    let len = list.len() as i64;
    let (end, event) = if front {
        (End::Left, Event::Lpush)
    } else {
        (End::Right, Event::Rpush)
    };
    // A list made just now is recorded whole (`insert`).
    let args = ctx.args;
    let pushed = || {
        ListOp::Push(
            end,
            args[2..]
                .iter()
                .map(|a| Bytes::copy_from_slice(a))
                .collect(),
        )
    };
    db.modified_list(&key, pushed, event)?;
    db.signal_ready(&key)?;
    Ok(Reply::Int(len))
}

pub fn rpush(ctx: &mut Ctx) -> CmdResult<Reply> {
    push(ctx, false, false)
}

pub fn lpush(ctx: &mut Ctx) -> CmdResult<Reply> {
    push(ctx, true, false)
}

pub fn rpushx(ctx: &mut Ctx) -> CmdResult<Reply> {
    push(ctx, false, true)
}

pub fn lpushx(ctx: &mut Ctx) -> CmdResult<Reply> {
    push(ctx, true, true)
}

fn pop(ctx: &mut Ctx, front: bool, name: &str) -> CmdResult<Reply> {
    if ctx.args.len() > 3 {
        return Err(CmdError::WrongArity(name.into()));
    }
    let count = match ctx.args.get(2) {
        Some(b) => Some(non_negative(
            b,
            "ERR value is out of range, must be positive",
        )?),
        None => None,
    };
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    if db.typed_for_write::<List>(&key)?.is_none() {
        return Ok(if count.is_some() {
            Reply::NilArray
        } else {
            Reply::Nil
        });
    }
    let end = if front { End::Left } else { End::Right };
    Ok(match count {
        Some(0) => Reply::Array(Vec::new()),
        Some(n) => {
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            let taken = db.pop_list_many(&key, end, n)?;
            Reply::Array(taken.into_iter().map(Reply::Bulk).collect())
        }
        None => Reply::opt_bulk(db.pop_list(&key, end)?),
    })
}

/// LPUSH and LPUSHX push every element after the key onto the front.
pub fn touches_front_push(args: &[Bytes]) -> Option<Touch<'_>> {
    Some(Touch::Pushed {
        front: true,
        count: args.len().checked_sub(2)?,
    })
}

/// RPUSH and RPUSHX push every element after the key onto the back.
pub fn touches_back_push(args: &[Bytes]) -> Option<Touch<'_>> {
    Some(Touch::Pushed {
        front: false,
        count: args.len().checked_sub(2)?,
    })
}

/// LPOP and RPOP take one element, or the count given, from one end.
fn touches_pop(args: &[Bytes], front: bool) -> Option<Touch<'_>> {
    let count = match args.get(2) {
        None => 1,
        Some(count) => match parse_i64(count) {
            Some(n) if n >= 0 && args.len() <= 3 => usize::try_from(n).unwrap_or(usize::MAX),
            _ => return Some(Touch::Nothing),
        },
    };
    Some(Touch::Popped { front, count })
}

pub fn touches_front_pop(args: &[Bytes]) -> Option<Touch<'_>> {
    touches_pop(args, true)
}

pub fn touches_back_pop(args: &[Bytes]) -> Option<Touch<'_>> {
    touches_pop(args, false)
}

/// LSET changes the element at its index.
pub fn touches_index(args: &[Bytes]) -> Option<Touch<'_>> {
    Some(match args.get(2).and_then(|i| parse_i64(i)) {
        Some(index) => Touch::Index(index),
        None => Touch::Nothing,
    })
}

pub fn lpop(ctx: &mut Ctx) -> CmdResult<Reply> {
    pop(ctx, true, "lpop")
}

pub fn rpop(ctx: &mut Ctx) -> CmdResult<Reply> {
    pop(ctx, false, "rpop")
}

pub fn lindex(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let Some(list) = db.typed::<List>(&key)? else {
        return Ok(Reply::Nil);
    };
    let index = int_arg(&ctx.args[2])?;
    Ok(Reply::opt_bulk(
        resolve(index, list.len()).and_then(|i| list.get(i).cloned()),
    ))
}

pub fn lrange(ctx: &mut Ctx) -> CmdResult<Reply> {
    let start = int_arg(ctx.arg(2))?;
    let stop = int_arg(ctx.arg(3))?;
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let Some(list) = db.typed::<List>(&key)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let len = list.len() as i64;
    let start = if start < 0 {
        (start + len).max(0)
    } else {
        start
    };
    let stop = if stop < 0 {
        stop + len
    } else {
        stop.min(len - 1)
    };
    if start > stop || start >= len {
        return Ok(Reply::Array(Vec::new()));
    }
    Ok(Reply::Array(
        list.range(start as usize..=stop as usize)
            .cloned()
            .map(Reply::Bulk)
            .collect(),
    ))
}

pub fn llen(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    Ok(Reply::Int(
        db.typed::<List>(&key)?.map_or(0, |l| l.len()) as i64
    ))
}

pub fn lrem(ctx: &mut Ctx) -> CmdResult<Reply> {
    let count = int_arg(ctx.arg(2))?;
    let (key, element) = (ctx.arg(1).clone(), ctx.arg(3).clone());
    let mut db = ctx.db();
    let Some(list) = db.typed_for_write::<List>(&key)? else {
        return Ok(Reply::Int(0));
    };
    let limit = if count == 0 {
        u64::MAX
    } else {
        count.unsigned_abs()
    };
    let mut removed: u64 = 0;
    if count >= 0 {
        let mut i = 0;
        while i < list.len() && removed < limit {
            if list[i] == element {
                list.remove(i);
                removed += 1;
            } else {
                i += 1;
            }
        }
    } else {
        let mut i = list.len();
        while i > 0 && removed < limit {
            i -= 1;
            if list[i] == element {
                list.remove(i);
                removed += 1;
            }
        }
    }
    if removed > 0 {
        let op = || ListOp::Remove(count, element);
        after_removal(&mut db, &key, op, Event::Lrem)?;
    }
    Ok(Reply::Int(removed as i64))
}

pub fn lset(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (key, element) = (ctx.arg(1).clone(), ctx.arg(3).clone());
    let mut db = ctx.locked.db(ctx.client.db);
    let Some(list) = db.typed_for_write::<List>(&key)? else {
        return Err(CmdError::NoSuchKey);
    };
    let index = int_arg(&ctx.args[2])?;
    let Some(i) = resolve(index, list.len()) else {
        return Err(CmdError::other("ERR index out of range"));
    };
    list[i] = Bytes::copy_from_slice(&element);
    db.modified_list(&key, || ListOp::Set(i, element), Event::Lset)?;
    Ok(Reply::OK)
}

pub fn lpos(ctx: &mut Ctx) -> CmdResult<Reply> {
    let mut rank: i64 = 1;
    let mut count: Option<i64> = None;
    let mut maxlen: i64 = 0;
    let mut j = 3;
    while j < ctx.args.len() {
        let opt = ctx.args[j].to_ascii_uppercase();
        let value = ctx.args.get(j + 1);
        match (&opt[..], value) {
            (b"RANK", Some(v)) => {
                rank = int_arg(v)?;
                if rank == 0 {
                    return Err(CmdError::other(
                        "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                    ));
                }
            }
            (b"COUNT", Some(v)) => count = Some(non_negative(v, "ERR COUNT can't be negative")?),
            (b"MAXLEN", Some(v)) => maxlen = non_negative(v, "ERR MAXLEN can't be negative")?,
            _ => return Err(CmdError::Syntax),
        }
        j += 2;
    }
    let (key, element) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.db();
    let Some(list) = db.typed::<List>(&key)? else {
        return Ok(if count.is_some() {
            Reply::Array(Vec::new())
        } else {
            Reply::Nil
        });
    };
    let len = list.len();
    let from_tail = rank < 0;
    // Matches to skip before the first one reported (RANK n skips n-1).
    // Redis negates RANK in a C long, so the most negative RANK acts as -1.
    let skip = if rank == i64::MIN {
        0
    } else {
        rank.unsigned_abs() - 1
    };
    let scan = if maxlen == 0 {
        len
    } else {
        (maxlen as u64).min(len as u64) as usize
    };
    let wanted = match count {
        None => 1,
        Some(0) => u64::MAX,
        Some(n) => n as u64,
    };
    let mut seen: u64 = 0;
    let mut found = Vec::new();
    for step in 0..scan {
        let i = if from_tail { len - 1 - step } else { step };
        if list[i] == element {
            seen += 1;
            if seen > skip {
                found.push(i as i64);
                if found.len() as u64 >= wanted {
                    break;
                }
            }
        }
    }
    Ok(match count {
        Some(_) => Reply::Array(found.into_iter().map(Reply::Int).collect()),
        None => found.first().map_or(Reply::Nil, |&i| Reply::Int(i)),
    })
}

pub fn linsert(ctx: &mut Ctx) -> CmdResult<Reply> {
    let after = match ctx.arg(2) {
        w if w.eq_ignore_ascii_case(b"after") => true,
        w if w.eq_ignore_ascii_case(b"before") => false,
        _ => return Err(CmdError::Syntax),
    };
    let (key, pivot, element) = (ctx.arg(1).clone(), ctx.arg(3).clone(), ctx.arg(4).clone());
    let mut db = ctx.db();
    let Some(list) = db.typed_for_write::<List>(&key)? else {
        return Ok(Reply::Int(0));
    };
    let Some(at) = list.iter().position(|e| *e == pivot) else {
        return Ok(Reply::Int(-1));
    };
    list.insert(at + after as usize, element.clone());
    let len = list.len() as i64;
    let op = || ListOp::Insert {
        after,
        pivot,
        element,
    };
    db.modified_list(&key, op, Event::Linsert)?;
    Ok(Reply::Int(len))
}

pub fn ltrim(ctx: &mut Ctx) -> CmdResult<Reply> {
    let start = int_arg(ctx.arg(2))?;
    let stop = int_arg(ctx.arg(3))?;
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let Some(list) = db.typed_for_write::<List>(&key)? else {
        return Ok(Reply::OK);
    };
    let len = list.len() as i64;
    let start = if start < 0 { start + len } else { start }.max(0);
    let stop = if stop < 0 { stop + len } else { stop };
    if start > stop || start >= len {
        list.clear();
    } else {
        list.truncate(stop.min(len - 1) as usize + 1);
        list.drain(..start as usize);
    }
    // What is left, from the head: an emptied list is recorded as gone.
    let kept = list.len().saturating_sub(1);
    let op = || ListOp::Trim(start as usize, start as usize + kept);
    after_removal(&mut db, &key, op, Event::Ltrim)?;
    Ok(Reply::OK)
}

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("rpush", -3, Group::List, rpush)
        .flags(WRITE_FAST)
        .acl(LIST)
        .keys(&key1(&["RW", "insert"]))
        .touches(touches_back_push)
        .syntax("key element...")
        .doc(
            "1.0.0",
            "Appends elements to a list, creating it if needed; returns the new length.",
        ),
    CommandSpec::new("lpush", -3, Group::List, lpush)
        .flags(WRITE_FAST)
        .acl(LIST)
        .keys(&key1(&["RW", "insert"]))
        .touches(touches_front_push)
        .syntax("key element...")
        .doc(
            "1.0.0",
            "Prepends elements to a list, creating it if needed; returns the new length.",
        ),
    CommandSpec::new("lpop", -2, Group::List, lpop)
        .flags(WRITE | FAST)
        .acl(LIST)
        .keys(&key1(RW_ACCESS_DELETE))
        .touches(touches_front_pop)
        .syntax("key [count]")
        .doc("1.0.0", "Removes and returns the first elements of a list."),
    CommandSpec::new("rpop", -2, Group::List, rpop)
        .flags(WRITE | FAST)
        .acl(LIST)
        .keys(&key1(RW_ACCESS_DELETE))
        .touches(touches_back_pop)
        .syntax("key [count]")
        .doc("1.0.0", "Removes and returns the last elements of a list."),
    CommandSpec::new("lindex", 3, Group::List, lindex)
        .flags(READONLY)
        .acl(LIST)
        .keys(&key1(RO_ACCESS))
        .syntax("key index")
        .doc("1.0.0", "Returns the element at an index of a list."),
    CommandSpec::new("lrange", 4, Group::List, lrange)
        .flags(READONLY)
        .acl(LIST)
        .keys(&key1(RO_ACCESS))
        .syntax("key start stop")
        .doc("1.0.0", "Returns a range of elements of a list."),
    CommandSpec::new("llen", 2, Group::List, llen)
        .flags(READ_FAST)
        .acl(LIST)
        .keys(&key1(RO))
        .syntax("key")
        .doc("1.0.0", "Returns the length of a list."),
    CommandSpec::new("lrem", 4, Group::List, lrem)
        .flags(WRITE)
        .acl(LIST)
        .keys(&key1(RW_DELETE))
        .syntax("key count element")
        .doc(
            "1.0.0",
            "Removes elements equal to a value from a list; returns how many.",
        ),
    CommandSpec::new("lset", 4, Group::List, lset)
        .flags(WRITE | DENYOOM)
        .acl(LIST)
        .keys(&key1(RW_UPDATE))
        .touches(touches_index)
        .syntax("key index element")
        .doc("1.0.0", "Sets the element at an index of a list."),
    CommandSpec::new("lpos", -3, Group::List, lpos)
        .flags(READONLY)
        .acl(LIST)
        .keys(&key1(RO_ACCESS))
        .syntax("key element [RANK rank] [COUNT num-matches] [MAXLEN len]")
        .doc(
            "6.0.6",
            "Returns the positions of elements equal to a value in a list.",
        ),
    CommandSpec::new("rpushx", -3, Group::List, rpushx)
        .flags(WRITE_FAST)
        .acl(LIST)
        .keys(&key1(&["RW", "insert"]))
        .touches(touches_back_push)
        .syntax("key element...")
        .doc(
            "2.2.0",
            "Appends elements to a list only if it exists; returns the new length.",
        ),
    CommandSpec::new("lpushx", -3, Group::List, lpushx)
        .flags(WRITE_FAST)
        .acl(LIST)
        .keys(&key1(&["RW", "insert"]))
        .touches(touches_front_push)
        .syntax("key element...")
        .doc(
            "2.2.0",
            "Prepends elements to a list only if it exists; returns the new length.",
        ),
    CommandSpec::new("linsert", 5, Group::List, linsert)
        .flags(WRITE | DENYOOM)
        .acl(LIST)
        .keys(&key1(&["RW", "insert"]))
        .syntax("key (BEFORE | AFTER) pivot element")
        .doc(
            "2.2.0",
            "Inserts an element before or after the first one equal to a pivot.",
        ),
    CommandSpec::new("ltrim", 4, Group::List, ltrim)
        .flags(WRITE)
        .acl(LIST)
        .keys(&key1(RW_DELETE))
        .syntax("key start stop")
        .doc("1.0.0", "Keeps only a range of a list's elements."),
];
