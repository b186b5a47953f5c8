//! Stream commands: XADD, XLEN, XRANGE, XREVRANGE, XDEL, XTRIM, XSETID,
//! XREAD, XREADGROUP, XGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO.
//! Blocking reads queue a waiter like BLPOP does (see `blocking`); the
//! keyspace serves it when an XADD (or a deleted key or group) makes one
//! of its streams ready.

use std::time::Duration;

use bytes::Bytes;

use super::Ctx;
use super::presets::{NONDET, READ_FAST, RO, RO_ACCESS, RW_DELETE, RW_UPDATE, WRITE_FAST, key1};
use super::reply::help_reply;
use super::spec::acl::STREAM;
use super::spec::flag::{BLOCKING, DENYOOM, FAST, LOADING, READONLY, STALE, WRITE};
use super::spec::{self, CommandSpec, KeySpec};
use super::waiting::{block, may_block, timeout_ms_arg};
use crate::context::client::ServedReply;
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{
    Db, ENTRIES_READ_UNKNOWN, Group, GroupRead, ReadEntry, Stream, StreamId, StreamWait, Taken,
    Trim, Ttl, Value, Wanted,
};
use crate::protocol::{Protocol, Reply};
use crate::pubsub::Event;
use crate::util::parse_i64;

const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

fn text(arg: &[u8]) -> String {
    String::from_utf8_lossy(arg).into_owned()
}

fn other(message: String) -> CmdError {
    CmdError::Other(message)
}

fn no_group_for_key(key: &[u8], group: &[u8]) -> CmdError {
    other(format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        text(key),
        text(group)
    ))
}

/// An unsigned number as Redis's `string2ull` reads it: decimal, with a
/// leading `+` or blanks tolerated, nothing past the 64-bit range.
fn parse_u64(arg: &[u8]) -> Option<u64> {
    let trimmed = arg.trim_ascii_start();
    let digits = trimmed.strip_prefix(b"+").unwrap_or(trimmed);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// `ms[-seq]` (a missing sequence reads as `missing_seq`); with `special`,
/// `-` and `+` stand for the smallest and largest ids.
fn parse_id_with(arg: &[u8], missing_seq: u64, special: bool) -> CmdResult<StreamId> {
    let invalid = || CmdError::other(INVALID_ID);
    // Redis copies the argument into a 128-byte buffer first.
    if arg.len() > 127 {
        return Err(invalid());
    }
    if special && arg == b"-" {
        return Ok(StreamId::ZERO);
    }
    if special && arg == b"+" {
        return Ok(StreamId::MAX);
    }
    let (ms, seq) = match arg.iter().position(|&b| b == b'-') {
        Some(dash) => (
            &arg[..dash],
            parse_u64(&arg[dash + 1..]).ok_or_else(invalid)?,
        ),
        None => (arg, missing_seq),
    };
    Ok(StreamId::new(parse_u64(ms).ok_or_else(invalid)?, seq))
}

/// An exact id: no `-`/`+`.
fn parse_id(arg: &[u8]) -> CmdResult<StreamId> {
    parse_id_with(arg, 0, false)
}

/// One end of an interval: `-`, `+`, an id, or `(id` for an exclusive end.
fn interval_start(arg: &[u8]) -> CmdResult<StreamId> {
    match arg.strip_prefix(b"(").filter(|rest| !rest.is_empty()) {
        Some(rest) => parse_id_with(rest, 0, false)?
            .next()
            .ok_or_else(|| CmdError::other("ERR invalid start ID for the interval")),
        None => parse_id_with(arg, 0, true),
    }
}

fn interval_end(arg: &[u8]) -> CmdResult<StreamId> {
    match arg.strip_prefix(b"(").filter(|rest| !rest.is_empty()) {
        Some(rest) => parse_id_with(rest, u64::MAX, false)?
            .prev()
            .ok_or_else(|| CmdError::other("ERR invalid end ID for the interval")),
        None => parse_id_with(arg, u64::MAX, true),
    }
}

fn id_reply(id: StreamId) -> Reply {
    Reply::bulk(id.to_string())
}

fn entry_reply(id: StreamId, fields: &[Bytes]) -> Reply {
    Reply::Array(vec![
        id_reply(id),
        Reply::Array(fields.iter().cloned().map(Reply::Bulk).collect()),
    ])
}

/// Entries as XRANGE lists them; a `None` is an entry that is gone (a
/// pending one read back from history).
pub fn entries_reply(entries: Vec<ReadEntry>) -> Reply {
    Reply::Array(
        entries
            .into_iter()
            .map(|(id, fields)| match fields {
                Some(fields) => entry_reply(id, &fields),
                None => Reply::Array(vec![id_reply(id), Reply::NilArray]),
            })
            .collect(),
    )
}

/// XREAD's reply: a map from key to entries in RESP3, pairs in RESP2.
pub fn read_reply(per_key: Vec<(Bytes, Reply)>, resp3: bool) -> Reply {
    if resp3 {
        Reply::Map(
            per_key
                .into_iter()
                .map(|(k, v)| (Reply::Bulk(k), v))
                .collect(),
        )
    } else {
        Reply::Array(
            per_key
                .into_iter()
                .map(|(k, v)| Reply::Array(vec![Reply::Bulk(k), v]))
                .collect(),
        )
    }
}

fn parse_count(arg: &[u8]) -> CmdResult<i64> {
    parse_i64(arg).ok_or(CmdError::NotInteger)
}

/// The id XADD was given.
#[derive(Clone, Copy)]
enum AddId {
    Auto,
    /// `ms-*`: the next sequence number within that millisecond.
    Partial(u64),
    Exact(StreamId),
}

fn parse_add_id(arg: &[u8]) -> CmdResult<AddId> {
    if arg == b"*" {
        return Ok(AddId::Auto);
    }
    if arg.len() <= 127
        && let Some(ms) = arg.strip_suffix(b"-*")
    {
        return parse_u64(ms)
            .map(AddId::Partial)
            .ok_or_else(|| CmdError::other(INVALID_ID));
    }
    parse_id(arg).map(AddId::Exact)
}

/// XADD's and XTRIM's options.
struct TrimArgs {
    trim: Option<Trim>,
    approx: bool,
    limit: u64,
    no_mkstream: bool,
    id: AddId,
    /// Where the parse stopped: XADD's id.
    next: usize,
}

/// Parses XADD's options (up to its id) or XTRIM's, with Redis's checks
/// in its order.
/// `node_entries` is `stream-node-max-entries`: an approximate trim's
/// default LIMIT is a hundred nodes' worth.
fn parse_trim_args(args: &[Bytes], xadd: bool, node_entries: u64) -> CmdResult<TrimArgs> {
    let mut out = TrimArgs {
        trim: None,
        approx: false,
        limit: 0,
        no_mkstream: false,
        id: AddId::Auto,
        next: args.len(),
    };
    let mut limit: Option<i64> = None;
    let mut i = 2;
    while i < args.len() {
        let more = args.len() - 1 - i;
        let opt = &args[i][..];
        let is = |word: &str| opt.eq_ignore_ascii_case(word.as_bytes());
        if xadd && opt == b"*" {
            out.next = i;
            break;
        } else if (is("maxlen") || is("minid")) && more > 0 {
            if out.trim.is_some() {
                return Err(CmdError::other(
                    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
                ));
            }
            out.approx = false;
            if more >= 2 && args[i + 1][..] == *b"~" {
                out.approx = true;
                i += 1;
            } else if more >= 2 && args[i + 1][..] == *b"=" {
                i += 1;
            }
            let threshold = &args[i + 1];
            out.trim = Some(if is("maxlen") {
                let n = parse_count(threshold)?;
                if n < 0 {
                    return Err(CmdError::other("ERR The MAXLEN argument must be >= 0."));
                }
                Trim::MaxLen(n as u64)
            } else {
                Trim::MinId(parse_id(threshold)?)
            });
            i += 1;
        } else if is("limit") && more > 0 {
            let n = parse_count(&args[i + 1])?;
            if n < 0 {
                return Err(CmdError::other("ERR The LIMIT argument must be >= 0."));
            }
            limit = Some(n);
            i += 1;
        } else if xadd && is("nomkstream") {
            out.no_mkstream = true;
        } else if xadd {
            out.id = parse_add_id(opt)?;
            out.next = i;
            break;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if limit.is_some_and(|n| n > 0) && out.trim.is_none() {
        return Err(CmdError::other(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && out.trim.is_none() {
        return Err(CmdError::other(
            "ERR syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    out.limit = match limit {
        Some(_) if !out.approx => {
            return Err(CmdError::other(
                "ERR syntax error, LIMIT cannot be used without the special ~ option",
            ));
        }
        Some(n) => n as u64,
        None if out.approx && node_entries > 0 => node_entries.saturating_mul(100),
        // With nodes of any size, Redis's fixed default.
        None if out.approx => 10_000,
        None => 0,
    };
    Ok(out)
}

/// The id XADD gives its entry, or Redis's error.
fn next_id(stream: &Stream, wanted: AddId, now: u64) -> CmdResult<StreamId> {
    let last = stream.last_id;
    let too_small = || {
        CmdError::other(
            "ERR The ID specified in XADD is equal or smaller than the target stream top item",
        )
    };
    let id = match wanted {
        AddId::Auto if now > last.ms => StreamId::new(now, 0),
        AddId::Auto => last.next().ok_or_else(too_small)?,
        AddId::Partial(ms) if ms == last.ms => {
            StreamId::new(ms, last.seq.checked_add(1).ok_or_else(too_small)?)
        }
        AddId::Partial(ms) => StreamId::new(ms, 0),
        AddId::Exact(id) => id,
    };
    if id <= last {
        return Err(too_small());
    }
    Ok(id)
}

pub fn xadd(ctx: &mut Ctx) -> CmdResult<Reply> {
    let limits = ctx.db().limits();
    let opts = parse_trim_args(ctx.args, true, limits.stream_node_max_entries)?;
    let fields = ctx.args.get(opts.next + 1..).unwrap_or_default();
    if fields.len() < 2 || fields.len() % 2 == 1 {
        return Err(CmdError::WrongArity("xadd".into()));
    }
    if let AddId::Exact(StreamId::ZERO) = opts.id {
        return Err(CmdError::other(
            "ERR The ID specified in XADD must be greater than 0-0",
        ));
    }
    let key = ctx.arg(1).clone();
    let now = ctx.now();
    let mut db = ctx.db();
    if db.typed_for_write::<Stream>(&key)?.is_none() {
        if opts.no_mkstream {
            return Ok(Reply::Nil);
        }
        db.insert(&key, Value::Stream(Box::default()), Ttl::Clear)?;
    }
    let Some(stream) = db.typed_for_write::<Stream>(&key)? else {
        return Err(CmdError::WrongType);
    };
    if stream.last_id == StreamId::MAX {
        return Err(CmdError::other(
            "ERR The stream has exhausted the last possible ID, unable to add more items",
        ));
    }
    let id = next_id(stream, opts.id, now)?;
    stream.append(id, fields.to_vec(), &limits);
    let trimmed = opts
        .trim
        .map_or(0, |how| stream.trim(how, opts.approx, opts.limit));
    db.modified(&key, Event::Xadd)?;
    if trimmed > 0 {
        db.notify(&key, Event::Xtrim);
    }
    db.signal_ready(&key)?;
    Ok(id_reply(id))
}

pub fn xlen(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    Ok(Reply::Int(
        db.typed::<Stream>(&key)?.map_or(0, |s| s.len()) as i64
    ))
}

fn range_command(ctx: &mut Ctx, rev: bool) -> CmdResult<Reply> {
    let (start_arg, end_arg) = if rev { (3, 2) } else { (2, 3) };
    let start = interval_start(ctx.arg(start_arg))?;
    let end = interval_end(ctx.arg(end_arg))?;
    let mut count: Option<i64> = None;
    let mut i = 4;
    while i < ctx.args.len() {
        if ctx.args[i].eq_ignore_ascii_case(b"count") && i + 1 < ctx.args.len() {
            count = Some(parse_count(&ctx.args[i + 1])?.max(0));
            i += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let Some(stream) = db.typed::<Stream>(&key)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    if count == Some(0) {
        return Ok(Reply::NilArray);
    }
    let limit = count.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    Ok(Reply::Array(
        stream
            .range(start, end, rev)
            .take(limit)
            .map(|(id, fields)| entry_reply(id, fields))
            .collect(),
    ))
}

pub fn xrange(ctx: &mut Ctx) -> CmdResult<Reply> {
    range_command(ctx, false)
}

pub fn xrevrange(ctx: &mut Ctx) -> CmdResult<Reply> {
    range_command(ctx, true)
}

pub fn xdel(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let args = ctx.args;
    let mut db = ctx.db();
    if db.typed_for_write::<Stream>(&key)?.is_none() {
        return Ok(Reply::Int(0));
    }
    // Every id is checked before any is deleted.
    let ids = args[2..]
        .iter()
        .map(|a| parse_id(a))
        .collect::<CmdResult<Vec<_>>>()?;
    let Some(stream) = db.typed_for_write::<Stream>(&key)? else {
        return Ok(Reply::Int(0));
    };
    let mut deleted = 0;
    for id in ids {
        if stream.delete(id) {
            stream.max_deleted = stream.max_deleted.max(id);
            deleted += 1;
        }
    }
    if deleted > 0 {
        db.modified(&key, Event::Xdel)?;
    }
    Ok(Reply::Int(deleted))
}

pub fn xtrim(ctx: &mut Ctx) -> CmdResult<Reply> {
    let limits = ctx.db().limits();
    let opts = parse_trim_args(ctx.args, false, limits.stream_node_max_entries)?;
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let Some(stream) = db.typed_for_write::<Stream>(&key)? else {
        return Ok(Reply::Int(0));
    };
    let trimmed = opts
        .trim
        .map_or(0, |how| stream.trim(how, opts.approx, opts.limit));
    if trimmed > 0 {
        db.modified(&key, Event::Xtrim)?;
    }
    Ok(Reply::Int(trimmed as i64))
}

pub fn xsetid(ctx: &mut Ctx) -> CmdResult<Reply> {
    let id = parse_id(ctx.arg(2))?;
    let mut entries_added: Option<u64> = None;
    let mut max_deleted = StreamId::ZERO;
    let mut i = 3;
    while i < ctx.args.len() {
        let more = i + 1 < ctx.args.len();
        let opt = &ctx.args[i];
        if opt.eq_ignore_ascii_case(b"entriesadded") && more {
            let n = parse_count(&ctx.args[i + 1])?;
            entries_added = Some(
                u64::try_from(n)
                    .map_err(|_| CmdError::other("ERR entries_added must be positive"))?,
            );
        } else if opt.eq_ignore_ascii_case(b"maxdeletedid") && more {
            max_deleted = parse_id(&ctx.args[i + 1])?;
            if id < max_deleted {
                return Err(CmdError::other(
                    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                ));
            }
        } else {
            return Err(CmdError::Syntax);
        }
        i += 2;
    }
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let Some(stream) = db.typed_for_write::<Stream>(&key)? else {
        return Err(CmdError::NoSuchKey);
    };
    // Redis 7.0 checks only the top entry (not the largest deleted id).
    if let Some((top, _)) = stream.last() {
        if id < top {
            return Err(CmdError::other(
                "ERR The ID specified in XSETID is smaller than the target stream top item",
            ));
        }
        if entries_added.is_some_and(|n| n < stream.len() as u64) {
            return Err(CmdError::other(
                "ERR The entries_added specified in XSETID is smaller than the target stream length",
            ));
        }
    }
    stream.last_id = id;
    if let Some(n) = entries_added {
        stream.entries_added = n;
    }
    if !max_deleted.is_zero() {
        stream.max_deleted = max_deleted;
    }
    db.modified(&key, Event::Xsetid)?;
    Ok(Reply::OK)
}

/// XREAD's and XREADGROUP's options.
struct ReadArgs {
    count: usize,
    /// `None`: no BLOCK; `Some(None)`: block for ever.
    block: Option<Option<Duration>>,
    group: Option<(Bytes, Bytes)>,
    noack: bool,
    keys: Vec<Bytes>,
    ids: Vec<Bytes>,
}

fn parse_read_args(ctx: &Ctx, group_read: bool) -> CmdResult<ReadArgs> {
    let args = ctx.args;
    let mut out = ReadArgs {
        count: 0,
        block: None,
        group: None,
        noack: false,
        keys: Vec::new(),
        ids: Vec::new(),
    };
    let mut streams_at = None;
    let mut i = 1;
    while i < args.len() {
        let more = args.len() - 1 - i;
        let opt = &args[i][..];
        let is = |word: &str| opt.eq_ignore_ascii_case(word.as_bytes());
        if is("block") && more > 0 {
            if ctx.client.for_script {
                return Err(other(format!(
                    "ERR {} command is not allowed with BLOCK option from scripts",
                    text(&args[0])
                )));
            }
            i += 1;
            out.block = Some(timeout_ms_arg(&args[i])?);
        } else if is("count") && more > 0 {
            i += 1;
            let n = parse_count(&args[i])?.max(0);
            out.count = usize::try_from(n).unwrap_or(usize::MAX);
        } else if is("streams") && more > 0 {
            let rest = &args[i + 1..];
            if !rest.len().is_multiple_of(2) {
                // Redis 7.0 names XREAD and `$` for XREADGROUP too.
                return Err(CmdError::other(
                    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
                ));
            }
            let (keys, ids) = rest.split_at(rest.len() / 2);
            out.keys = keys.to_vec();
            out.ids = ids.to_vec();
            streams_at = Some(i);
            break;
        } else if is("group") && more >= 2 {
            if !group_read {
                return Err(CmdError::other(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            out.group = Some((args[i + 1].clone(), args[i + 2].clone()));
            i += 2;
        } else if is("noack") {
            if !group_read {
                return Err(CmdError::other(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            out.noack = true;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if streams_at.is_none() {
        return Err(CmdError::Syntax);
    }
    if group_read && out.group.is_none() {
        return Err(CmdError::other("ERR Missing GROUP option for XREADGROUP"));
    }
    Ok(out)
}

/// Where a read starts for one key: after an id, or (`>`) after what the
/// group last delivered.
#[derive(Clone, Copy)]
enum ReadFrom {
    After(StreamId),
    New,
}

/// Resolves the ids of a read, checking types and groups on the way.
fn resolve_ids(db: &mut Db, read: &ReadArgs) -> CmdResult<Vec<ReadFrom>> {
    let mut out = Vec::with_capacity(read.ids.len());
    for (key, id) in read.keys.iter().zip(&read.ids) {
        let stream = db.typed::<Stream>(key)?;
        if let Some((group, _)) = &read.group
            && !stream
                .as_ref()
                .is_some_and(|s| s.groups.contains_key(group))
        {
            return Err(other(format!(
                "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                text(key),
                text(group)
            )));
        }
        let from = match &id[..] {
            b"$" if read.group.is_some() => {
                return Err(CmdError::other(
                    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.",
                ));
            }
            b"$" => ReadFrom::After(stream.map_or(StreamId::ZERO, |s| s.last_id)),
            b">" if read.group.is_none() => {
                return Err(CmdError::other(
                    "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
                ));
            }
            b">" => ReadFrom::New,
            _ => ReadFrom::After(parse_id(id)?),
        };
        out.push(from);
    }
    Ok(out)
}

/// Makes `consumer` in `group` if it is new (raising the event) and marks
/// it seen now.
pub fn touch_consumer(db: &mut Db, key: &[u8], read: &GroupRead, now: u64) -> CmdResult<()> {
    let Some(group) = db
        .typed_for_write::<Stream>(key)?
        .and_then(|s| s.groups.get_mut(&read.group))
    else {
        return Ok(());
    };
    let (consumer, created) = group.consumer(&read.consumer, now);
    consumer.seen_time = now;
    if created {
        db.notify(key, Event::XgroupCreateConsumer);
    }
    Ok(())
}

fn read_command(ctx: &mut Ctx, group_read: bool) -> CmdResult<Reply> {
    let read = parse_read_args(ctx, group_read)?;
    let resp3 = ctx.client.protocol == Protocol::Resp3;
    let now = ctx.now();
    let group = read.group.clone().map(|(group, consumer)| GroupRead {
        group,
        consumer,
        noack: read.noack,
    });
    let mut db = ctx.db();
    let from = resolve_ids(&mut db, &read)?;
    let mut served = Vec::new();
    let mut dirty = false;
    for (key, from) in read.keys.iter().zip(&from) {
        if let Some(g) = &group {
            touch_consumer(&mut db, key, g, now)?;
        }
        let Some(stream) = db.typed_for_write::<Stream>(key)? else {
            continue;
        };
        let top = stream.last().map(|(id, _)| id);
        let entries = match (&group, *from) {
            (None, ReadFrom::After(after)) if top.is_some_and(|t| t > after) => {
                stream.read_after(after, read.count)
            }
            (None, _) => continue,
            (Some(g), from) => {
                let entries = match from {
                    ReadFrom::After(after) => {
                        Some(stream.deliver_history(g, after, read.count, now))
                    }
                    ReadFrom::New => {
                        let last = stream.groups.get(&g.group).map(|x| x.last_id);
                        (top > last).then(|| stream.deliver_new(g, read.count, now))
                    }
                };
                let Some(entries) = entries else { continue };
                dirty = true;
                entries
            }
        };
        served.push((key.clone(), entries_reply(entries)));
    }
    if dirty {
        for key in &read.keys {
            db.dirtied(key)?;
        }
    }
    if !served.is_empty() {
        return Ok(read_reply(served, resp3));
    }
    let Some(timeout) = read.block else {
        return Ok(Reply::NilArray);
    };
    if !may_block(ctx) {
        return Ok(Reply::NilArray);
    }
    let after = from
        .iter()
        .map(|f| match f {
            ReadFrom::After(id) => *id,
            ReadFrom::New => StreamId::MAX,
        })
        .collect();
    let wait = StreamWait {
        after,
        count: read.count,
        group,
        resp3,
    };
    let served: ServedReply = if resp3 {
        streamed_resp3
    } else {
        streamed_resp2
    };
    block(
        ctx,
        read.keys,
        Wanted::Stream(Box::new(wait)),
        timeout,
        (Reply::NilArray, served),
    )
}

/// A blocked read's reply: the one key that served it, with its entries.
fn streamed(key: Bytes, taken: Taken, resp3: bool) -> Reply {
    // Only a stream serves a stream read.
    let entries = match taken {
        Taken::Stream(entries) => entries,
        Taken::List(_) | Taken::ZSet(_) => Vec::new(),
    };
    read_reply(vec![(key, entries_reply(entries))], resp3)
}

fn streamed_resp2(key: Bytes, taken: Taken) -> Reply {
    streamed(key, taken, false)
}

fn streamed_resp3(key: Bytes, taken: Taken) -> Reply {
    streamed(key, taken, true)
}

pub fn xread(ctx: &mut Ctx) -> CmdResult<Reply> {
    read_command(ctx, false)
}

pub fn xreadgroup(ctx: &mut Ctx) -> CmdResult<Reply> {
    read_command(ctx, true)
}

pub fn xack(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (key, group) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let args = ctx.args;
    let mut db = ctx.db();
    let Some(g) = db
        .typed::<Stream>(&key)?
        .and_then(|s| s.groups.get_mut(&group))
    else {
        return Ok(Reply::Int(0));
    };
    let ids = args[3..]
        .iter()
        .map(|a| parse_id(a))
        .collect::<CmdResult<Vec<_>>>()?;
    let acked = ids.into_iter().filter(|id| g.acknowledge(*id)).count();
    if acked > 0 {
        db.dirtied(&key)?;
    }
    Ok(Reply::Int(acked as i64))
}

fn group_at<'d>(db: &'d mut Db, key: &[u8], group: &[u8]) -> CmdResult<&'d mut Group> {
    db.typed::<Stream>(key)?
        .and_then(|s| s.groups.get_mut(group))
        .ok_or_else(|| no_group_for_key(key, group))
}

pub fn xpending(ctx: &mut Ctx) -> CmdResult<Reply> {
    let argc = ctx.args.len();
    if argc != 3 && !(6..=9).contains(&argc) {
        return Err(CmdError::Syntax);
    }
    struct Extended {
        min_idle: i64,
        start: StreamId,
        end: StreamId,
        count: usize,
        consumer: Option<Bytes>,
    }
    let extended = if argc >= 6 {
        let mut at = 3;
        let mut min_idle = 0;
        if ctx.args[3].eq_ignore_ascii_case(b"idle") {
            min_idle = parse_count(&ctx.args[4])?;
            if argc < 8 {
                return Err(CmdError::Syntax);
            }
            at += 2;
        }
        let count = parse_count(ctx.arg(at + 2))?.max(0);
        let start = interval_start(ctx.arg(at))?;
        let end = interval_end(ctx.arg(at + 1))?;
        Some(Extended {
            min_idle,
            start,
            end,
            count: usize::try_from(count).unwrap_or(usize::MAX),
            consumer: ctx.args.get(at + 3).cloned(),
        })
    } else {
        None
    };
    let (key, group_name) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let now = ctx.now();
    let mut db = ctx.db();
    let group = group_at(&mut db, &key, &group_name)?;
    let Some(ext) = extended else {
        let (Some((first, _)), Some((last, _))) = (
            group.pending.first_key_value(),
            group.pending.last_key_value(),
        ) else {
            return Ok(Reply::Array(vec![
                Reply::Int(0),
                Reply::Nil,
                Reply::Nil,
                Reply::NilArray,
            ]));
        };
        let owners = group
            .consumers
            .iter()
            .filter(|(_, c)| !c.pending.is_empty())
            .map(|(name, c)| {
                Reply::Array(vec![
                    Reply::Bulk(name.clone()),
                    Reply::bulk(c.pending.len().to_string()),
                ])
            })
            .collect();
        return Ok(Reply::Array(vec![
            Reply::Int(group.pending.len() as i64),
            id_reply(*first),
            id_reply(*last),
            Reply::Array(owners),
        ]));
    };
    let ids: Vec<StreamId> = match &ext.consumer {
        Some(name) => match group.consumers.get(name) {
            Some(c) if ext.start <= ext.end => {
                c.pending.range(ext.start..=ext.end).copied().collect()
            }
            Some(_) => Vec::new(),
            None => return Ok(Reply::Array(Vec::new())),
        },
        None if ext.start <= ext.end => group
            .pending
            .range(ext.start..=ext.end)
            .map(|(id, _)| *id)
            .collect(),
        None => Vec::new(),
    };
    let rows = ids
        .into_iter()
        .filter_map(|id| group.pending.get(&id).map(|p| (id, p)))
        .filter(|(_, p)| ext.min_idle == 0 || idle(now, p.delivery_time) >= ext.min_idle)
        .take(ext.count)
        .map(|(id, p)| {
            Reply::Array(vec![
                id_reply(id),
                Reply::Bulk(p.consumer.clone()),
                Reply::Int(idle(now, p.delivery_time).max(0)),
                Reply::Int(p.delivery_count as i64),
            ])
        })
        .collect();
    Ok(Reply::Array(rows))
}

/// Milliseconds from `since` to `now`, negative if `since` is ahead.
fn idle(now: u64, since: u64) -> i64 {
    (now as i64).wrapping_sub(since as i64)
}

/// Moves a pending entry to `consumer` for XCLAIM and XAUTOCLAIM; the
/// consumer is made (and marked seen) on the first claim.
struct Claimer<'n> {
    consumer: &'n Bytes,
    now: u64,
    made: bool,
    created: bool,
}

impl Claimer<'_> {
    fn claim(&mut self, group: &mut Group, id: StreamId, time: u64, count: Option<u64>) {
        if !self.made {
            let (consumer, created) = group.consumer(self.consumer, self.now);
            consumer.seen_time = self.now;
            self.made = true;
            self.created = created;
        }
        let previous = group.pending.get(&id).map_or(0, |p| p.delivery_count);
        group.deliver(id, self.consumer, time, count.unwrap_or(previous));
    }
}

fn parse_option_int(arg: &[u8], option: &str, command: &str) -> CmdResult<i64> {
    parse_i64(arg).ok_or_else(|| other(format!("ERR Invalid {option} argument for {command}")))
}

pub fn xclaim(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (key, group_name, consumer) = (ctx.arg(1).clone(), ctx.arg(2).clone(), ctx.arg(3).clone());
    let now = ctx.now();
    let args = ctx.args;
    let mut db = ctx.db();
    group_at(&mut db, &key, &group_name)?;
    let min_idle = parse_option_int(&args[4], "min-idle-time", "XCLAIM")?.max(0);
    let mut ids = Vec::new();
    let mut j = 5;
    while let Some(id) = args.get(j).and_then(|a| parse_id(a).ok()) {
        ids.push(id);
        j += 1;
    }
    let (mut force, mut justid) = (false, false);
    let mut time: Option<i64> = None;
    let mut retry: Option<i64> = None;
    let mut last_id = StreamId::ZERO;
    while j < args.len() {
        let more = j + 1 < args.len();
        let opt = &args[j][..];
        let is = |word: &str| opt.eq_ignore_ascii_case(word.as_bytes());
        if is("force") {
            force = true;
        } else if is("justid") {
            justid = true;
        } else if is("idle") && more {
            j += 1;
            let ms = parse_option_int(&args[j], "IDLE option", "XCLAIM")?;
            time = Some((now as i64).wrapping_sub(ms));
        } else if is("time") && more {
            j += 1;
            time = Some(parse_option_int(&args[j], "TIME option", "XCLAIM")?);
        } else if is("retrycount") && more {
            j += 1;
            retry = Some(parse_option_int(&args[j], "RETRYCOUNT option", "XCLAIM")?);
        } else if is("lastid") && more {
            j += 1;
            last_id = parse_id(&args[j])?;
        } else {
            return Err(other(format!(
                "ERR Unrecognized XCLAIM option '{}'",
                text(opt)
            )));
        }
        j += 1;
    }
    // A time in the future or before the epoch is taken as now.
    let time = time
        .and_then(|t| u64::try_from(t).ok())
        .filter(|t| *t <= now)
        .unwrap_or(now);
    let Some(stream) = db.typed_for_write::<Stream>(&key)? else {
        return Err(no_group_for_key(&key, &group_name));
    };
    let exists: Vec<bool> = ids.iter().map(|id| stream.get(*id).is_some()).collect();
    let Some(group) = stream.groups.get_mut(&group_name) else {
        return Err(no_group_for_key(&key, &group_name));
    };
    group.last_id = group.last_id.max(last_id);
    let mut claimer = Claimer {
        consumer: &consumer,
        now,
        made: false,
        created: false,
    };
    let mut claimed = Vec::new();
    for (id, exists) in ids.into_iter().zip(exists) {
        if !exists {
            group.acknowledge(id);
            continue;
        }
        let owner = match group.pending.get(&id) {
            Some(p) => Some(p.delivery_time),
            None if force => None,
            None => continue,
        };
        if let Some(delivered) = owner
            && min_idle > 0
            && idle(now, delivered) < min_idle
        {
            continue;
        }
        let previous = group.pending.get(&id).map_or(1, |p| p.delivery_count);
        let count = match retry {
            Some(n) if n >= 0 => n as u64,
            _ if justid => previous,
            _ => previous.saturating_add(1),
        };
        claimer.claim(group, id, time, Some(count));
        claimed.push(id);
    }
    if claimer.created {
        db.notify(&key, Event::XgroupCreateConsumer);
    }
    db.dirtied(&key)?;
    let Some(stream) = db.typed::<Stream>(&key)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    Ok(Reply::Array(
        claimed
            .into_iter()
            .map(|id| match (justid, stream.get(id)) {
                (true, _) => id_reply(id),
                (false, Some(fields)) => entry_reply(id, fields),
                (false, None) => Reply::Nil,
            })
            .collect(),
    ))
}

pub fn xautoclaim(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (key, group_name, consumer) = (ctx.arg(1).clone(), ctx.arg(2).clone(), ctx.arg(3).clone());
    let now = ctx.now();
    let args = ctx.args;
    let min_idle = parse_option_int(&args[4], "min-idle-time", "XAUTOCLAIM")?.max(0);
    let start = interval_start(&args[5])?;
    let mut count: u64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < args.len() {
        let more = j + 1 < args.len();
        if args[j].eq_ignore_ascii_case(b"count") && more {
            // Redis bounds it so that ten attempts per entry cannot overflow.
            let max = (i64::MAX / 16) as u64;
            count = parse_i64(&args[j + 1])
                .and_then(|n| u64::try_from(n).ok())
                .filter(|n| (1..=max).contains(n))
                .ok_or_else(|| CmdError::other("ERR COUNT must be > 0"))?;
            // Redis sets aside room for COUNT ids up front, which fails for
            // a count this large (the bound where it fails depends on the
            // machine; 2^32 ids is 64 GiB).
            if count > 1 << 32 {
                return Err(CmdError::other(
                    "ERR Insufficient memory, failed allocating transient memory, COUNT too high.",
                ));
            }
            j += 1;
        } else if args[j].eq_ignore_ascii_case(b"justid") {
            justid = true;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let mut db = ctx.db();
    let Some(stream) = db.typed_for_write::<Stream>(&key)? else {
        return Err(no_group_for_key(&key, &group_name));
    };
    if !stream.groups.contains_key(&group_name) {
        return Err(no_group_for_key(&key, &group_name));
    }
    let candidates: Vec<(StreamId, bool)> = {
        let group = &stream.groups[&group_name];
        group
            .pending
            .range(start..)
            .map(|(id, _)| (*id, stream.get(*id).is_some()))
            .collect()
    };
    let Some(group) = stream.groups.get_mut(&group_name) else {
        return Err(no_group_for_key(&key, &group_name));
    };
    let mut claimer = Claimer {
        consumer: &consumer,
        now,
        made: false,
        created: false,
    };
    let mut attempts = count.saturating_mul(10);
    let (mut claimed, mut deleted) = (Vec::new(), Vec::new());
    let mut examined = 0;
    for &(id, exists) in &candidates {
        if attempts == 0 || count == 0 {
            break;
        }
        attempts -= 1;
        examined += 1;
        if !exists {
            group.acknowledge(id);
            deleted.push(id);
            count -= 1;
            continue;
        }
        let Some(delivered) = group.pending.get(&id).map(|p| p.delivery_time) else {
            continue;
        };
        if min_idle > 0 && idle(now, delivered) < min_idle {
            continue;
        }
        let previous = group.pending.get(&id).map_or(0, |p| p.delivery_count);
        let times = if justid {
            previous
        } else {
            previous.saturating_add(1)
        };
        claimer.claim(group, id, now, Some(times));
        claimed.push(id);
        count -= 1;
    }
    let cursor = candidates
        .get(examined)
        .map_or(StreamId::ZERO, |(id, _)| *id);
    if claimer.created {
        db.notify(&key, Event::XgroupCreateConsumer);
    }
    db.dirtied(&key)?;
    let Some(stream) = db.typed::<Stream>(&key)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let claimed = claimed
        .into_iter()
        .map(|id| match (justid, stream.get(id)) {
            (false, Some(fields)) => entry_reply(id, fields),
            _ => id_reply(id),
        })
        .collect();
    Ok(Reply::Array(vec![
        id_reply(cursor),
        Reply::Array(claimed),
        Reply::Array(deleted.into_iter().map(id_reply).collect()),
    ]))
}

fn subcommand_syntax(args: &[Bytes]) -> CmdError {
    other(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        text(&args[1]),
        text(&args[0]).to_uppercase()
    ))
}

/// XGROUP CREATE / SETID's options after the id.
fn parse_group_options(args: &[Bytes], create: bool) -> CmdResult<(bool, i64)> {
    let (mut mkstream, mut entries_read) = (false, ENTRIES_READ_UNKNOWN);
    let mut i = 5;
    while i < args.len() {
        if create && args[i].eq_ignore_ascii_case(b"mkstream") {
            mkstream = true;
            i += 1;
        } else if args[i].eq_ignore_ascii_case(b"entriesread") && i + 1 < args.len() {
            entries_read = parse_count(&args[i + 1])?;
            if entries_read < 0 && entries_read != ENTRIES_READ_UNKNOWN {
                return Err(CmdError::other(
                    "ERR value for ENTRIESREAD must be positive or -1",
                ));
            }
            i += 2;
        } else {
            return Err(subcommand_syntax(args));
        }
    }
    Ok((mkstream, entries_read))
}

/// The stream an XGROUP subcommand works on; it must exist (unless
/// `mkstream`), and so must the group when `needs_group`.
fn xgroup_target<'d>(
    db: &'d mut Db,
    args: &[Bytes],
    mkstream: bool,
    needs_group: bool,
) -> CmdResult<Option<&'d mut Stream>> {
    let (key, group) = (&args[2], &args[3]);
    let Some(stream) = db.typed_for_write::<Stream>(key)? else {
        if mkstream {
            return Ok(None);
        }
        return Err(CmdError::other(
            "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.",
        ));
    };
    if needs_group && !stream.groups.contains_key(group) {
        return Err(other(format!(
            "NOGROUP No such consumer group '{}' for key name '{}'",
            text(group),
            text(key)
        )));
    }
    Ok(Some(stream))
}

pub fn xgroup_create(ctx: &mut Ctx) -> CmdResult<Reply> {
    let args = ctx.args;
    let (mkstream, entries_read) = parse_group_options(args, true)?;
    if args.len() > 8 {
        return Err(subcommand_syntax(args));
    }
    let (key, name) = (args[2].clone(), args[3].clone());
    let mut db = ctx.db();
    let stream = xgroup_target(&mut db, args, mkstream, false)?;
    let id = match &args[4][..] {
        b"$" => stream.as_ref().map_or(StreamId::ZERO, |s| s.last_id),
        id => parse_id(id)?,
    };
    let made = stream.is_none();
    if made {
        db.insert(&key, Value::Stream(Box::default()), Ttl::Clear)?;
    }
    let Some(stream) = db.typed_for_write::<Stream>(&key)? else {
        return Err(CmdError::WrongType);
    };
    if stream.groups.contains_key(&name) {
        return Err(CmdError::other(
            "BUSYGROUP Consumer Group name already exists",
        ));
    }
    stream.groups.insert(name, Group::new(id, entries_read));
    // Only a stream made here is a change WATCHers see.
    if made {
        db.modified(&key, Event::XgroupCreate)?;
    } else {
        db.dirtied(&key)?;
        db.notify(&key, Event::XgroupCreate);
    }
    Ok(Reply::OK)
}

pub fn xgroup_setid(ctx: &mut Ctx) -> CmdResult<Reply> {
    let args = ctx.args;
    let (_, entries_read) = parse_group_options(args, false)?;
    if args.len() != 5 && args.len() != 7 {
        return Err(subcommand_syntax(args));
    }
    let key = args[2].clone();
    let mut db = ctx.db();
    let Some(stream) = xgroup_target(&mut db, args, false, true)? else {
        return Err(CmdError::WrongType);
    };
    let id = match &args[4][..] {
        b"$" => stream.last_id,
        id => parse_id_with(id, 0, true)?,
    };
    if let Some(group) = stream.groups.get_mut(&args[3]) {
        group.last_id = id;
        group.entries_read = entries_read;
    }
    db.dirtied(&key)?;
    db.notify(&key, Event::XgroupSetid);
    Ok(Reply::OK)
}

pub fn xgroup_destroy(ctx: &mut Ctx) -> CmdResult<Reply> {
    let args = ctx.args;
    let key = args[2].clone();
    let mut db = ctx.db();
    let Some(stream) = xgroup_target(&mut db, args, false, false)? else {
        return Err(CmdError::WrongType);
    };
    if stream.groups.remove(&args[3]).is_none() {
        return Ok(Reply::Int(0));
    }
    db.dirtied(&key)?;
    db.notify(&key, Event::XgroupDestroy);
    // Readers blocked on the group learn it is gone.
    db.signal_ready(&key)?;
    Ok(Reply::Int(1))
}

pub fn xgroup_createconsumer(ctx: &mut Ctx) -> CmdResult<Reply> {
    let args = ctx.args;
    let key = args[2].clone();
    let now = ctx.now();
    let mut db = ctx.db();
    let Some(stream) = xgroup_target(&mut db, args, false, true)? else {
        return Err(CmdError::WrongType);
    };
    let Some(group) = stream.groups.get_mut(&args[3]) else {
        return Ok(Reply::Int(0));
    };
    let (_, created) = group.consumer(&args[4], now);
    if created {
        db.dirtied(&key)?;
        db.notify(&key, Event::XgroupCreateConsumer);
    }
    Ok(Reply::Int(created as i64))
}

pub fn xgroup_delconsumer(ctx: &mut Ctx) -> CmdResult<Reply> {
    let args = ctx.args;
    let key = args[2].clone();
    let mut db = ctx.db();
    let Some(stream) = xgroup_target(&mut db, args, false, true)? else {
        return Err(CmdError::WrongType);
    };
    let Some(group) = stream.groups.get_mut(&args[3]) else {
        return Ok(Reply::Int(0));
    };
    let Some(consumer) = group.consumers.remove(&args[4]) else {
        return Ok(Reply::Int(0));
    };
    for id in &consumer.pending {
        group.pending.remove(id);
    }
    db.dirtied(&key)?;
    db.notify(&key, Event::XgroupDelConsumer);
    Ok(Reply::Int(consumer.pending.len() as i64))
}

pub fn xgroup_help(_ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(help_reply(
        "XGROUP",
        &[
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
        ],
    ))
}

pub fn xinfo_help(_ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(help_reply(
        "XINFO",
        &[
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
        ],
    ))
}

fn field(name: &str, value: Reply) -> (Reply, Reply) {
    (Reply::bulk_str(name), value)
}

fn opt_int(value: Option<i64>) -> Reply {
    value.map_or(Reply::Nil, Reply::Int)
}

/// The stream XINFO reports on: ERR no such key if missing.
fn info_stream<'d>(db: &'d mut Db, key: &[u8]) -> CmdResult<&'d mut Stream> {
    db.typed::<Stream>(key)?.ok_or(CmdError::NoSuchKey)
}

fn entries_read_reply(group: &Group) -> Reply {
    opt_int((group.entries_read != ENTRIES_READ_UNKNOWN).then_some(group.entries_read))
}

pub fn xinfo_consumers(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (key, name) = (ctx.arg(2).clone(), ctx.arg(3).clone());
    let now = ctx.now();
    let mut db = ctx.db();
    let stream = info_stream(&mut db, &key)?;
    let group = stream.groups.get(&name).ok_or_else(|| {
        other(format!(
            "NOGROUP No such consumer group '{}' for key name '{}'",
            text(&name),
            text(&key)
        ))
    })?;
    Ok(Reply::Array(
        group
            .consumers
            .iter()
            .map(|(name, c)| {
                Reply::Map(vec![
                    field("name", Reply::Bulk(name.clone())),
                    field("pending", Reply::Int(c.pending.len() as i64)),
                    field("idle", Reply::Int(idle(now, c.seen_time).max(0))),
                ])
            })
            .collect(),
    ))
}

pub fn xinfo_groups(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(2).clone();
    let mut db = ctx.db();
    let stream = info_stream(&mut db, &key)?;
    Ok(Reply::Array(
        stream
            .groups
            .iter()
            .map(|(name, g)| {
                Reply::Map(vec![
                    field("name", Reply::Bulk(name.clone())),
                    field("consumers", Reply::Int(g.consumers.len() as i64)),
                    field("pending", Reply::Int(g.pending.len() as i64)),
                    field("last-delivered-id", id_reply(g.last_id)),
                    field("entries-read", entries_read_reply(g)),
                    field("lag", opt_int(stream.lag(g))),
                ])
            })
            .collect(),
    ))
}

/// XINFO STREAM's `radix-tree-nodes`: Redis's count of radix tree nodes,
/// which rlockd does not build; one per key plus the root is what small
/// streams show.
fn radix_nodes(stream: &Stream) -> i64 {
    stream.node_count() as i64 + 1
}

fn stream_summary(stream: &Stream) -> Vec<(Reply, Reply)> {
    vec![
        field("length", Reply::Int(stream.len() as i64)),
        field("radix-tree-keys", Reply::Int(stream.node_count() as i64)),
        field("radix-tree-nodes", Reply::Int(radix_nodes(stream))),
        field("last-generated-id", id_reply(stream.last_id)),
        field("max-deleted-entry-id", id_reply(stream.max_deleted)),
        field("entries-added", Reply::Int(stream.entries_added as i64)),
        field("recorded-first-entry-id", id_reply(stream.first_id())),
    ]
}

fn group_full(stream: &Stream, name: &Bytes, group: &Group, limit: usize) -> Reply {
    let pending = group
        .pending
        .iter()
        .take(limit)
        .map(|(id, p)| {
            Reply::Array(vec![
                id_reply(*id),
                Reply::Bulk(p.consumer.clone()),
                Reply::Int(p.delivery_time as i64),
                Reply::Int(p.delivery_count as i64),
            ])
        })
        .collect();
    let consumers = group
        .consumers
        .iter()
        .map(|(cname, c)| {
            let own = c
                .pending
                .iter()
                .take(limit)
                .filter_map(|id| group.pending.get(id).map(|p| (id, p)))
                .map(|(id, p)| {
                    Reply::Array(vec![
                        id_reply(*id),
                        Reply::Int(p.delivery_time as i64),
                        Reply::Int(p.delivery_count as i64),
                    ])
                })
                .collect();
            Reply::Map(vec![
                field("name", Reply::Bulk(cname.clone())),
                field("seen-time", Reply::Int(c.seen_time as i64)),
                field("pel-count", Reply::Int(c.pending.len() as i64)),
                field("pending", Reply::Array(own)),
            ])
        })
        .collect();
    Reply::Map(vec![
        field("name", Reply::Bulk(name.clone())),
        field("last-delivered-id", id_reply(group.last_id)),
        field("entries-read", entries_read_reply(group)),
        field("lag", opt_int(stream.lag(group))),
        field("pel-count", Reply::Int(group.pending.len() as i64)),
        field("pending", Reply::Array(pending)),
        field("consumers", Reply::Array(consumers)),
    ])
}

pub fn xinfo_stream(ctx: &mut Ctx) -> CmdResult<Reply> {
    let args = ctx.args;
    let key = args[2].clone();
    let mut db = ctx.db();
    let stream = info_stream(&mut db, &key)?;
    let mut full_count = None;
    if args.len() > 3 {
        let full = args[3].eq_ignore_ascii_case(b"full");
        let count_ok =
            args.len() == 4 || (args.len() == 6 && args[4].eq_ignore_ascii_case(b"count"));
        if !full || !count_ok {
            return Err(subcommand_syntax(args));
        }
        let count = match args.get(5) {
            Some(n) => parse_count(n)?,
            None => 10,
        };
        full_count = Some(if count < 0 { 10 } else { count });
    }
    let mut fields = stream_summary(stream);
    let Some(count) = full_count else {
        let edge =
            |e: Option<(StreamId, &[Bytes])>| e.map_or(Reply::Nil, |(id, f)| entry_reply(id, f));
        fields.push(field("groups", Reply::Int(stream.groups.len() as i64)));
        fields.push(field("first-entry", edge(stream.first())));
        fields.push(field("last-entry", edge(stream.last())));
        return Ok(Reply::Map(fields));
    };
    let limit = if count == 0 {
        usize::MAX
    } else {
        usize::try_from(count).unwrap_or(usize::MAX)
    };
    let entries = stream
        .range(StreamId::ZERO, StreamId::MAX, false)
        .take(limit)
        .map(|(id, f)| entry_reply(id, f))
        .collect();
    fields.push(field("entries", Reply::Array(entries)));
    let groups = stream
        .groups
        .iter()
        .map(|(name, g)| group_full(stream, name, g, limit))
        .collect();
    fields.push(field("groups", Reply::Array(groups)));
    Ok(Reply::Map(fields))
}

/// An XGROUP subcommand on the key in argument 2.
const fn xgroup_sub(
    name: &'static str,
    arity: i32,
    handler: super::spec::Handler,
    keys: &'static [KeySpec],
) -> CommandSpec {
    CommandSpec::new(name, arity, spec::Group::Stream, handler)
        .flags(WRITE)
        .acl(STREAM)
        .keys(keys)
}

const XGROUP_INSERT: &[KeySpec] = &[KeySpec::range(2, 0, 1, &["RW", "insert"])];

const XINFO_KEY: &[KeySpec] = &[KeySpec::range(2, 0, 1, RO_ACCESS)];

static XGROUP_SUBS: &[CommandSpec] = &[
    xgroup_sub("create", -5, xgroup_create, XGROUP_INSERT)
        .flags(WRITE | DENYOOM)
        .syntax("key group (id | $) [MKSTREAM] [ENTRIESREAD entries-read]")
        .doc("5.0.0", "Creates a consumer group on a stream."),
    xgroup_sub(
        "setid",
        -5,
        xgroup_setid,
        &[KeySpec::range(2, 0, 1, RW_UPDATE)],
    )
    .syntax("key group (id | $) [ENTRIESREAD entries-read]")
    .doc("5.0.0", "Moves a consumer group's last delivered id."),
    xgroup_sub(
        "destroy",
        4,
        xgroup_destroy,
        &[KeySpec::range(2, 0, 1, RW_DELETE)],
    )
    .syntax("key group")
    .doc("5.0.0", "Deletes a consumer group."),
    xgroup_sub("createconsumer", 5, xgroup_createconsumer, XGROUP_INSERT)
        .flags(WRITE | DENYOOM)
        .syntax("key group consumer")
        .doc("6.2.0", "Adds a consumer to a consumer group."),
    xgroup_sub(
        "delconsumer",
        5,
        xgroup_delconsumer,
        &[KeySpec::range(2, 0, 1, RW_DELETE)],
    )
    .syntax("key group consumer")
    .doc(
        "5.0.0",
        "Removes a consumer from a consumer group; returns how many entries it had pending.",
    ),
    CommandSpec::new("help", 2, spec::Group::Stream, xgroup_help)
        .flags(LOADING | STALE)
        .acl(STREAM)
        .doc("5.0.0", "Lists the XGROUP subcommands."),
];

static XINFO_SUBS: &[CommandSpec] = &[
    CommandSpec::new("stream", -3, spec::Group::Stream, xinfo_stream)
        .flags(READONLY)
        .acl(STREAM)
        .keys(XINFO_KEY)
        .syntax("key [FULL [COUNT count]]")
        .doc(
            "5.0.0",
            "Describes a stream, or (FULL) its entries, groups and consumers too.",
        ),
    CommandSpec::new("groups", 3, spec::Group::Stream, xinfo_groups)
        .flags(READONLY)
        .acl(STREAM)
        .keys(XINFO_KEY)
        .syntax("key")
        .doc("5.0.0", "Describes the consumer groups of a stream."),
    CommandSpec::new("consumers", 4, spec::Group::Stream, xinfo_consumers)
        .flags(READONLY)
        .acl(STREAM)
        .tips(NONDET)
        .keys(XINFO_KEY)
        .syntax("key group")
        .doc("5.0.0", "Describes the consumers of a consumer group."),
    CommandSpec::new("help", 2, spec::Group::Stream, xinfo_help)
        .flags(LOADING | STALE)
        .acl(STREAM)
        .doc("5.0.0", "Lists the XINFO subcommands."),
];

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("xadd", -5, spec::Group::Stream, xadd).flags(WRITE_FAST).acl(STREAM).tips(NONDET)
        .keys(&[KeySpec::range(1, 0, 1, RW_UPDATE).with_notes("UPDATE instead of INSERT because of the optional trimming feature")])
        .syntax("key [NOMKSTREAM] [(MAXLEN | MINID) [= | ~] threshold [LIMIT count]] (* | id) (field value)...")
        .doc("5.0.0", "Appends an entry to a stream, making the stream if needed; returns its id."),
    CommandSpec::new("xlen", 2, spec::Group::Stream, xlen).flags(READ_FAST).acl(STREAM).keys(&key1(RO))
        .syntax("key")
        .doc("5.0.0", "Returns the number of entries in a stream."),
    CommandSpec::new("xrange", -4, spec::Group::Stream, xrange).flags(READONLY).acl(STREAM).keys(&key1(RO_ACCESS))
        .syntax("key start end [COUNT count]")
        .doc("5.0.0", "Returns the entries of a stream between two ids, oldest first."),
    CommandSpec::new("xrevrange", -4, spec::Group::Stream, xrevrange).flags(READONLY).acl(STREAM).keys(&key1(RO_ACCESS))
        .syntax("key end start [COUNT count]")
        .doc("5.0.0", "Returns the entries of a stream between two ids, newest first."),
    CommandSpec::new("xdel", -3, spec::Group::Stream, xdel).flags(WRITE | FAST).acl(STREAM).keys(&key1(RW_DELETE))
        .syntax("key id...")
        .doc("5.0.0", "Deletes entries of a stream by id; returns how many existed."),
    CommandSpec::new("xtrim", -4, spec::Group::Stream, xtrim).flags(WRITE).acl(STREAM).tips(NONDET).keys(&key1(RW_DELETE))
        .syntax("key (MAXLEN | MINID) [= | ~] threshold [LIMIT count]")
        .doc("5.0.0", "Removes a stream's oldest entries down to a length or up to an id."),
    CommandSpec::new("xsetid", -3, spec::Group::Stream, xsetid).flags(WRITE_FAST).acl(STREAM).keys(&key1(RW_UPDATE))
        .syntax("key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]")
        .doc("5.0.0", "Sets a stream's last generated id and counters."),
    CommandSpec::new("xread", -4, spec::Group::Stream, xread).flags(READONLY | BLOCKING).acl(STREAM)
        .keys(&[KeySpec::after_keyword("STREAMS", 1, RO_ACCESS)])
        .syntax("[COUNT count] [BLOCK milliseconds] STREAMS (key... id...)")
        .doc("5.0.0", "Returns entries past given ids from several streams, waiting for some up to a timeout."),
    CommandSpec::new("xreadgroup", -7, spec::Group::Stream, xreadgroup).flags(WRITE | BLOCKING).acl(STREAM)
        .keys(&[KeySpec::after_keyword("STREAMS", 4, RO_ACCESS)])
        .syntax("GROUP (group consumer) [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS (key... id...)")
        .doc("5.0.0", "Reads entries for a consumer of a group, new ones or its own pending ones, waiting up to a timeout."),
    CommandSpec::new("xack", -4, spec::Group::Stream, xack).flags(WRITE | FAST).acl(STREAM).keys(&key1(RW_UPDATE))
        .syntax("key group id...")
        .doc("5.0.0", "Acknowledges entries pending in a consumer group; returns how many were pending."),
    CommandSpec::new("xpending", -3, spec::Group::Stream, xpending).flags(READONLY).acl(STREAM).tips(NONDET).keys(&key1(RO_ACCESS))
        .syntax("key group [[IDLE min-idle-time] start end count [consumer]]")
        .doc("5.0.0", "Describes the entries pending in a consumer group."),
    CommandSpec::new("xclaim", -6, spec::Group::Stream, xclaim).flags(WRITE | FAST).acl(STREAM).tips(NONDET).keys(&key1(RW_UPDATE))
        .syntax("key group consumer min-idle-time id... [IDLE ms] [TIME unix-time-milliseconds] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]")
        .doc("5.0.0", "Gives pending entries idle long enough to another consumer."),
    CommandSpec::new("xautoclaim", -6, spec::Group::Stream, xautoclaim).flags(WRITE | FAST).acl(STREAM).tips(NONDET).keys(&key1(RW_DELETE))
        .syntax("key group consumer min-idle-time start [COUNT count] [JUSTID]")
        .doc("6.2.0", "Gives pending entries idle long enough to another consumer, scanning from an id."),
    CommandSpec::container("xgroup", spec::Group::Stream, XGROUP_SUBS).doc("5.0.0", "Manages consumer groups."),
    CommandSpec::container("xinfo", spec::Group::Stream, XINFO_SUBS).doc("5.0.0", "Describes streams, consumer groups and consumers."),
];
