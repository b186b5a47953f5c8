//! XINFO: a stream, its consumer groups, and their consumers.

use bytes::Bytes;

use super::{
    CmdError, StreamId, entry_reply, id_reply, idle, other, parse_count, subcommand_syntax, text,
};
use crate::command::Ctx;
use crate::command::presets::{NONDET, RO_ACCESS};
use crate::command::reply::help_reply;
use crate::command::spec::acl::STREAM;
use crate::command::spec::flag::{LOADING, READONLY, STALE};
use crate::command::spec::{self, CommandSpec, KeySpec};
use crate::error::CmdResult;
use crate::keyspace::{Db, ENTRIES_READ_UNKNOWN, Group, Stream};
use crate::protocol::Reply;

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

const XINFO_KEY: &[KeySpec] = &[KeySpec::range(2, 0, 1, RO_ACCESS)];

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

pub(in crate::command) static COMMANDS: &[CommandSpec] =
    &[
        CommandSpec::container("xinfo", spec::Group::Stream, XINFO_SUBS)
            .doc("5.0.0", "Describes streams, consumer groups and consumers."),
    ];
