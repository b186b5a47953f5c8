//! The consumer groups' own commands: XGROUP, XACK, XPENDING, XCLAIM,
//! XAUTOCLAIM. Reading for a group (XREADGROUP) is in `read`.

use bytes::Bytes;

use super::{
    CmdError, StreamId, begin_record, entry_reply, id_reply, idle, interval_end, interval_start,
    other, own_line, parse_count, parse_id, parse_id_with, record, subcommand_syntax, text,
};
use crate::command::Ctx;
use crate::command::presets::{NONDET, RO_ACCESS, RW_DELETE, RW_UPDATE, key1};
use crate::command::reply::help_reply;
use crate::command::spec::acl::STREAM;
use crate::command::spec::flag::{DENYOOM, FAST, LOADING, READONLY, STALE, WRITE};
use crate::command::spec::{self, CommandSpec, KeySpec};
use crate::error::CmdResult;
use crate::keyspace::{
    Db, ENTRIES_READ_UNKNOWN, Group, Stream, Ttl, Value, claim_form, set_id_form,
};
use crate::protocol::Reply;
use crate::pubsub::Event;
use crate::util::parse_i64;

fn no_group_for_key(key: &[u8], group: &[u8]) -> CmdError {
    other(format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        text(key),
        text(group)
    ))
}

pub fn xack(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (key, group) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let args = ctx.args;
    begin_record(ctx);
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
    let line = own_line(ctx, b"XACK");
    record(ctx, vec![line]);
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
    begin_record(ctx);
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
    let last_before = group.last_id;
    group.last_id = group.last_id.max(last_id);
    let mut claimer = Claimer {
        consumer: &consumer,
        now,
        made: false,
        created: false,
    };
    let mut claimed = Vec::new();
    // Redis's forms: an XCLAIM per entry claimed or dropped, each
    // carrying the group's last id, else that id alone if it moved.
    let mut lines = Vec::new();
    for (id, exists) in ids.into_iter().zip(exists) {
        if !exists {
            if let Some(pending) = group.pending.get(&id) {
                let line = claim_form(&key, &group_name, id, pending, group.last_id);
                lines.push(line);
            }
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
        if let Some(pending) = group.pending.get(&id) {
            lines.push(claim_form(&key, &group_name, id, pending, group.last_id));
        }
        claimed.push(id);
    }
    if lines.is_empty() && group.last_id > last_before {
        lines.push(set_id_form(&key, &group_name, group));
    }
    if claimer.created {
        db.notify(&key, Event::XgroupCreateConsumer);
    }
    db.dirtied(&key)?;
    let Some(stream) = db.typed::<Stream>(&key)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let reply = Reply::Array(
        claimed
            .into_iter()
            .map(|id| match (justid, stream.get(id)) {
                (true, _) => id_reply(id),
                (false, Some(fields)) => entry_reply(id, fields),
                (false, None) => Reply::Nil,
            })
            .collect(),
    );
    record(ctx, lines);
    Ok(reply)
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
                .ok_or(CmdError::CountNotPositive)?;
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
    begin_record(ctx);
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
    // Redis's forms: an XCLAIM per entry claimed or dropped.
    let mut lines = Vec::new();
    let mut examined = 0;
    for &(id, exists) in &candidates {
        if attempts == 0 || count == 0 {
            break;
        }
        attempts -= 1;
        examined += 1;
        if !exists {
            if let Some(pending) = group.pending.get(&id) {
                let line = claim_form(&key, &group_name, id, pending, group.last_id);
                lines.push(line);
            }
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
        if let Some(pending) = group.pending.get(&id) {
            lines.push(claim_form(&key, &group_name, id, pending, group.last_id));
        }
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
    record(ctx, lines);
    Ok(Reply::Array(vec![
        id_reply(cursor),
        Reply::Array(claimed),
        Reply::Array(deleted.into_iter().map(id_reply).collect()),
    ]))
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

fn group_create(ctx: &mut Ctx) -> CmdResult<Reply> {
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

fn group_setid(ctx: &mut Ctx) -> CmdResult<Reply> {
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

fn group_destroy(ctx: &mut Ctx) -> CmdResult<Reply> {
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

fn group_createconsumer(ctx: &mut Ctx) -> CmdResult<Reply> {
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

fn group_delconsumer(ctx: &mut Ctx) -> CmdResult<Reply> {
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

/// Runs an XGROUP subcommand that reaches replicas and the file as
/// itself, as Redis sends each.
fn as_itself(ctx: &mut Ctx, run: fn(&mut Ctx) -> CmdResult<Reply>) -> CmdResult<Reply> {
    begin_record(ctx);
    let reply = run(ctx)?;
    let line = own_line(ctx, b"XGROUP");
    record(ctx, vec![line]);
    Ok(reply)
}

pub fn xgroup_create(ctx: &mut Ctx) -> CmdResult<Reply> {
    as_itself(ctx, group_create)
}

pub fn xgroup_setid(ctx: &mut Ctx) -> CmdResult<Reply> {
    as_itself(ctx, group_setid)
}

pub fn xgroup_destroy(ctx: &mut Ctx) -> CmdResult<Reply> {
    as_itself(ctx, group_destroy)
}

pub fn xgroup_createconsumer(ctx: &mut Ctx) -> CmdResult<Reply> {
    as_itself(ctx, group_createconsumer)
}

pub fn xgroup_delconsumer(ctx: &mut Ctx) -> CmdResult<Reply> {
    as_itself(ctx, group_delconsumer)
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

pub(in crate::command) static COMMANDS: &[CommandSpec] = &[
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
];
