//! XREAD and XREADGROUP: a read serves what is there, or queues a waiter
//! like BLPOP does (see `command::blocking`); the keyspace serves it when
//! an XADD (or a deleted key or group) makes one of its streams ready.

use std::time::Duration;

use bytes::Bytes;

use super::{
    CmdError, StreamId, begin_record, entry_reply, id_reply, other, parse_count, parse_id, record,
    text,
};
use crate::command::Ctx;
use crate::command::presets::RO_ACCESS;
use crate::command::spec::acl::STREAM;
use crate::command::spec::flag::{BLOCKING, READONLY, WRITE};
use crate::command::spec::{self, CommandSpec, KeySpec};
use crate::command::waiting::{block, may_block, timeout_ms_arg};
use crate::context::client::ServedReply;
use crate::error::CmdResult;
use crate::keyspace::{
    Db, GroupRead, ReadEntry, Stream, StreamWait, Taken, Wanted, create_consumer_form,
};
use crate::protocol::{Protocol, Reply};
use crate::pubsub::Event;

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
/// it seen now; true if it made it.
fn touch_consumer(db: &mut Db, key: &[u8], read: &GroupRead, now: u64) -> CmdResult<bool> {
    let Some(group) = db
        .typed_for_write::<Stream>(key)?
        .and_then(|s| s.groups.get_mut(&read.group))
    else {
        return Ok(false);
    };
    let (consumer, created) = group.consumer(&read.consumer, now);
    consumer.seen_time = now;
    if created {
        db.notify(key, Event::XgroupCreateConsumer);
    }
    Ok(created)
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
    if group.is_some() {
        begin_record(ctx);
    }
    let mut db = ctx.db();
    let from = resolve_ids(&mut db, &read)?;
    let mut served = Vec::new();
    let mut dirty = false;
    // What a group read changed, in Redis's forms.
    let mut lines = Vec::new();
    for (key, from) in read.keys.iter().zip(&from) {
        let created = match &group {
            Some(g) => touch_consumer(&mut db, key, g, now)?,
            None => false,
        };
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
                let history = matches!(from, ReadFrom::After(_));
                let entries = match from {
                    ReadFrom::After(after) => {
                        Some(stream.deliver_history(g, after, read.count, now))
                    }
                    ReadFrom::New => {
                        let last = stream.groups.get(&g.group).map(|x| x.last_id);
                        (top > last).then(|| stream.deliver_new(g, read.count, now))
                    }
                };
                let Some(entries) = entries else {
                    // A consumer made by a read that found nothing: Redis
                    // leaves it to the replica's own reads; sent so the
                    // replica's group is the primary's.
                    if created {
                        lines.push(create_consumer_form(key, &g.group, &g.consumer));
                        db.dirtied(key)?;
                    }
                    continue;
                };
                lines.extend(stream.group_read_lines(key, g, &entries, created, history));
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
    if group.is_some() {
        record(ctx, lines);
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
        Taken::List(_) | Taken::ZSet(_) | Taken::Count(_) => Vec::new(),
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

pub(in crate::command) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("xread", -4, spec::Group::Stream, xread).flags(READONLY | BLOCKING).acl(STREAM)
        .keys(&[KeySpec::after_keyword("STREAMS", 1, RO_ACCESS)])
        .syntax("[COUNT count] [BLOCK milliseconds] STREAMS (key... id...)")
        .doc("5.0.0", "Returns entries past given ids from several streams, waiting for some up to a timeout."),
    CommandSpec::new("xreadgroup", -7, spec::Group::Stream, xreadgroup).flags(WRITE | BLOCKING).acl(STREAM)
        .keys(&[KeySpec::after_keyword("STREAMS", 4, RO_ACCESS)])
        .syntax("GROUP (group consumer) [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS (key... id...)")
        .doc("5.0.0", "Reads entries for a consumer of a group, new ones or its own pending ones, waiting up to a timeout."),
];
