//! Stream commands. This file holds the ids and entries every stream
//! command reads and writes, and the commands on a stream's entries:
//! XADD, XLEN, XRANGE, XREVRANGE, XDEL, XTRIM, XSETID. Reading (XREAD,
//! XREADGROUP, and their blocking) is in `read`, the consumer groups'
//! own commands in `groups`, XINFO in `info`.

pub(super) mod groups;
pub(super) mod info;
pub(super) mod read;

use bytes::Bytes;

use super::Ctx;
use super::presets::{NONDET, READ_FAST, RO, RO_ACCESS, RW_DELETE, RW_UPDATE, WRITE_FAST, key1};
use super::spec::acl::STREAM;
use super::spec::flag::{FAST, READONLY, WRITE};
use super::spec::{self, CommandSpec, KeySpec};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{Stream, StreamId, Trim, Ttl, Value};
use crate::protocol::Reply;
use crate::pubsub::Event;
use crate::util::parse_i64;

const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

fn text(arg: &[u8]) -> String {
    String::from_utf8_lossy(arg).into_owned()
}

fn other(message: String) -> CmdError {
    CmdError::Other(message)
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

fn parse_count(arg: &[u8]) -> CmdResult<i64> {
    parse_i64(arg).ok_or(CmdError::NotInteger)
}

/// Milliseconds from `since` to `now`, negative if `since` is ahead.
fn idle(now: u64, since: u64) -> i64 {
    (now as i64).wrapping_sub(since as i64)
}

fn subcommand_syntax(args: &[Bytes]) -> CmdError {
    other(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        text(&args[1]),
        text(&args[0]).to_uppercase()
    ))
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
    /// Where the `~` and the threshold are, which Redis's form of an
    /// approximate trim rewrites.
    approx_at: usize,
    threshold_at: usize,
}

/// Parses XADD's options (up to its id) or XTRIM's, with Redis's checks
/// in its order.
/// `node_entries` is `stream-node-max-entries`: an approximate trim's
/// default LIMIT is a hundred nodes' worth. `obeys`: the primary's link
/// or the AOF, whose trims are exact whatever LIMIT says (Redis sends
/// `MAXLEN = n LIMIT m` for an approximate trim).
fn parse_trim_args(
    args: &[Bytes],
    xadd: bool,
    node_entries: u64,
    obeys: bool,
) -> CmdResult<TrimArgs> {
    let mut out = TrimArgs {
        trim: None,
        approx: false,
        limit: 0,
        no_mkstream: false,
        id: AddId::Auto,
        next: args.len(),
        approx_at: 0,
        threshold_at: 0,
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
                out.approx_at = i + 1;
                i += 1;
            } else if more >= 2 && args[i + 1][..] == *b"=" {
                i += 1;
            }
            let threshold = &args[i + 1];
            out.threshold_at = i + 1;
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
        _ if obeys => 0,
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

/// Whether the client's trims are exact whatever their LIMIT (see
/// `parse_trim_args`): Redis's `mustObeyClient`.
fn obeys(ctx: &Ctx) -> bool {
    ctx.client.from_primary || ctx.shared.keyspace.is_loading()
}

/// Starts a stream write whose records are Redis's forms of it
/// (`record`), not the stream's new state.
fn begin_record(ctx: &mut Ctx) {
    ctx.locked.begin_command_record();
}

/// Records what the command changed since `begin_record` as `lines`,
/// the commands Redis sends for it.
fn record(ctx: &mut Ctx, lines: Vec<Vec<Bytes>>) {
    ctx.locked.record_as_commands(ctx.client.db, lines);
}

/// The command's own line (under its own name, not one `rename-command`
/// gave it), to rewrite as Redis does before it is sent.
fn own_line(ctx: &Ctx, name: &'static [u8]) -> Vec<Bytes> {
    let mut line = ctx.args.to_vec();
    line[0] = Bytes::from_static(name);
    line
}

/// Redis's form of an approximate trim: exact, to where it stopped
/// (the length for MAXLEN, the first id left for MINID).
fn exact_trim(line: &mut [Bytes], opts: &TrimArgs, stream: &Stream) {
    let Some(how) = opts.trim.filter(|_| opts.approx) else {
        return;
    };
    line[opts.approx_at] = Bytes::from_static(b"=");
    line[opts.threshold_at] = match how {
        Trim::MaxLen(_) => Bytes::from(stream.len().to_string()),
        // Redis names the largest id when nothing is left.
        Trim::MinId(_) => match stream.first() {
            Some((id, _)) => Bytes::from(id.to_string()),
            None => Bytes::from(StreamId::MAX.to_string()),
        },
    };
}

pub fn xadd(ctx: &mut Ctx) -> CmdResult<Reply> {
    let limits = ctx.db().limits();
    let opts = parse_trim_args(ctx.args, true, limits.stream_node_max_entries, obeys(ctx))?;
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
    let mut line = own_line(ctx, b"XADD");
    begin_record(ctx);
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
    exact_trim(&mut line, &opts, stream);
    if !matches!(opts.id, AddId::Exact(_)) {
        line[opts.next] = Bytes::from(id.to_string());
    }
    db.modified(&key, Event::Xadd)?;
    if trimmed > 0 {
        db.notify(&key, Event::Xtrim);
    }
    db.signal_ready(&key)?;
    record(ctx, vec![line]);
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
    begin_record(ctx);
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
    let line = own_line(ctx, b"XDEL");
    record(ctx, vec![line]);
    Ok(Reply::Int(deleted))
}

pub fn xtrim(ctx: &mut Ctx) -> CmdResult<Reply> {
    let limits = ctx.db().limits();
    let opts = parse_trim_args(ctx.args, false, limits.stream_node_max_entries, obeys(ctx))?;
    let key = ctx.arg(1).clone();
    let mut line = own_line(ctx, b"XTRIM");
    begin_record(ctx);
    let mut db = ctx.db();
    let Some(stream) = db.typed_for_write::<Stream>(&key)? else {
        return Ok(Reply::Int(0));
    };
    let trimmed = opts
        .trim
        .map_or(0, |how| stream.trim(how, opts.approx, opts.limit));
    exact_trim(&mut line, &opts, stream);
    if trimmed > 0 {
        db.modified(&key, Event::Xtrim)?;
    }
    record(ctx, vec![line]);
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
    begin_record(ctx);
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
    let line = own_line(ctx, b"XSETID");
    record(ctx, vec![line]);
    Ok(Reply::OK)
}

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
];
