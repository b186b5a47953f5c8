//! Keyspace commands: EXISTS, TOUCH, DEL, UNLINK, TYPE, KEYS, SCAN, RENAME,
//! RENAMENX, COPY, MOVE, SWAPDB, RANDOMKEY, DUMP, RESTORE, OBJECT.

use bytes::Bytes;
use rand::RngExt;

use super::Ctx;
use super::args::parse_scan;
use super::presets::{
    NONDET, OBJECT_KEY, OW_UPDATE, READ_FAST, RO, RO_ACCESS, RW_ACCESS_DELETE, RW_ACCESS_UPDATE,
    key1, keys_all,
};
use super::reply::help_reply;
use super::spec::acl::{DANGEROUS, KEYSPACE};
use super::spec::flag::{ASKING, DENYOOM, FAST, LOADING, READONLY, STALE, WHOLE_KEYSPACE, WRITE};
use super::spec::{CommandSpec, Group, KeySpec};
use super::values::encoding_name;
use crate::error::{CmdError, CmdResult};
use crate::keyspace::access::AccessClock;
use crate::keyspace::dump::{self, DumpError};
use crate::keyspace::{SHARDS, StrEncoding, Ttl, Value};
use crate::protocol::Reply;
use crate::pubsub::Event;
use crate::util::scan::{Buckets, hash_of};
use crate::util::{glob_match, parse_i64};

/// EXISTS looks keys up as a read does (it counts hits and misses) but
/// leaves their access clocks alone.
pub fn exists(ctx: &mut Ctx) -> CmdResult<Reply> {
    count_present(ctx, false)
}

/// TOUCH is EXISTS that uses each key, starting its idle time again.
pub fn touch(ctx: &mut Ctx) -> CmdResult<Reply> {
    count_present(ctx, true)
}

fn count_present(ctx: &mut Ctx, uses: bool) -> CmdResult<Reply> {
    let mut n = 0;
    for key in &ctx.args[1..] {
        let mut db = ctx.db();
        let found = if uses {
            db.get(key)?.is_some()
        } else {
            db.get_untouched(key)?.is_some()
        };
        n += found as i64;
    }
    Ok(Reply::Int(n))
}

pub fn del(ctx: &mut Ctx) -> CmdResult<Reply> {
    let mut n = 0;
    let mut db = ctx.locked.db(ctx.client.db);
    for key in &ctx.args[1..] {
        if db.remove(key)?.is_some() {
            db.modified(key, Event::Del)?;
            n += 1;
        }
    }
    Ok(Reply::Int(n))
}

pub fn type_(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let name = ctx
        .db()
        .entry_untouched(&key)?
        .map_or("none", |e| e.value.type_name());
    Ok(Reply::status(name))
}

pub fn keys(ctx: &mut Ctx) -> CmdResult<Reply> {
    let pattern = ctx.arg(1).clone();
    let all = &pattern[..] == b"*";
    let (db, now) = (ctx.client.db, ctx.now());
    let mut out = Vec::new();
    for shard in ctx.locked.shards() {
        for (key, _) in shard.entries(db, now) {
            if all || glob_match(&pattern, key, false) {
                out.push(Reply::Bulk(Bytes::copy_from_slice(key)));
            }
        }
    }
    Ok(Reply::Array(out))
}

/// SCAN walks the shards one after another, each as a table of its own;
/// the cursor is the shard's cursor times the number of shards, plus the
/// shard, so it stays of the size Redis's would be for the whole keyspace.
pub fn scan(ctx: &mut Ctx) -> CmdResult<Reply> {
    let opts = parse_scan(&ctx.args[1..], true)?;
    let (db, now) = (ctx.client.db, ctx.now());
    let mut shard_idx = (opts.cursor % SHARDS as u64) as usize;
    let mut from = opts.cursor / SHARDS as u64;
    // Keys are borrowed while a page is chosen and copied once chosen.
    let mut found: Vec<(&[u8], &'static str)> = Vec::new();
    let shards: Vec<_> = ctx.locked.shards().collect();
    let mut cursor = 0;
    while shard_idx < SHARDS && found.len() < opts.count {
        let shard = &shards[shard_idx];
        let want = opts.count - found.len();
        let entries = shard
            .entries(db, now)
            .map(|(k, e)| (hash_of(k), (k, e.type_name())));
        let (got, next) = Buckets::for_len(shard.db_len(db)).page(entries, from, want);
        found.extend(got);
        if next != 0 {
            cursor = next * SHARDS as u64 + shard_idx as u64;
            break;
        }
        shard_idx += 1;
        from = 0;
        cursor = shard_idx as u64 % SHARDS as u64;
    }
    let keys = found
        .into_iter()
        .filter(|(k, t)| {
            opts.pattern
                .as_ref()
                .is_none_or(|p| glob_match(p, k, false))
                && opts.type_name.as_ref().is_none_or(|want| want == t)
        })
        .map(|(k, _)| Reply::Bulk(Bytes::copy_from_slice(k)))
        .collect();
    Ok(Reply::Array(vec![
        Reply::bulk_str(&cursor.to_string()),
        Reply::Array(keys),
    ]))
}

pub fn rename(ctx: &mut Ctx) -> CmdResult<Reply> {
    rename_key(ctx, false)
}

pub fn renamenx(ctx: &mut Ctx) -> CmdResult<Reply> {
    rename_key(ctx, true)
}

/// RENAME, or with `nx` RENAMENX (which answers 0 instead of overwriting).
fn rename_key(ctx: &mut Ctx, nx: bool) -> CmdResult<Reply> {
    let done = |moved: bool| match (nx, moved) {
        (false, _) => Reply::OK,
        (true, moved) => Reply::Int(moved as i64),
    };
    let (src, dst) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.locked.db(ctx.client.db);
    let Some(entry) = db.entry(&src)? else {
        return Err(CmdError::NoSuchKey);
    };
    if src == dst {
        return Ok(done(false));
    }
    let ttl = entry.expire_at().map_or(Ttl::Clear, Ttl::At);
    if db.exists(&dst)? {
        if nx {
            return Ok(done(false));
        }
        // Redis deletes the old key first, so the new one raises `new`.
        db.remove(&dst)?;
    }
    // The value moves with its access clock, as Redis's object does.
    let clock = db.access(&src)?;
    let value = db.remove(&src)?.ok_or(CmdError::NoSuchKey)?;
    db.insert(&dst, value, ttl)?;
    if let Some(clock) = clock {
        db.set_access(&dst, clock)?;
    }
    db.modified(&src, Event::RenameFrom)?;
    db.modified(&dst, Event::RenameTo)?;
    Ok(done(true))
}

/// A database index given as an argument: one of ours, or an error.
fn db_index(ctx: &Ctx, n: i64) -> CmdResult<usize> {
    usize::try_from(n)
        .ok()
        .filter(|&n| n < ctx.shared.keyspace.databases())
        .ok_or(CmdError::DbIndexOutOfRange)
}

/// Redis reads these database indexes as a C `int`.
fn parse_int(arg: &[u8]) -> Option<i64> {
    parse_i64(arg).filter(|n| i32::try_from(*n).is_ok())
}

fn not_in_cluster(ctx: &Ctx, refusal: &str) -> CmdResult<()> {
    match ctx.shared.cluster {
        Some(_) => Err(CmdError::other(format!("ERR {refusal}"))),
        None => Ok(()),
    }
}

const SAME_OBJECT: &str = "ERR source and destination objects are the same";

pub fn copy(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (src, dst) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let src_db = ctx.client.db;
    let mut dst_db = src_db;
    let mut replace = false;
    let mut i = 3;
    while i < ctx.args.len() {
        match &ctx.args[i].to_ascii_lowercase()[..] {
            b"replace" => replace = true,
            b"db" if i + 1 < ctx.args.len() => {
                let n = parse_i64(&ctx.args[i + 1]).ok_or(CmdError::NotInteger)?;
                dst_db = db_index(ctx, n)?;
                i += 1;
            }
            _ => return Err(CmdError::Syntax),
        }
        i += 1;
    }
    if dst_db != 0 {
        not_in_cluster(
            ctx,
            "Copying to another database is not allowed in cluster mode",
        )?;
    }
    if src_db == dst_db && src == dst {
        return Err(CmdError::other(SAME_OBJECT));
    }
    let mut db = ctx.locked.db(src_db);
    let Some(value) = db.get(&src)?.cloned() else {
        return Ok(Reply::Int(0));
    };
    let ttl = db
        .entry(&src)?
        .and_then(|e| e.expire_at())
        .map_or(Ttl::Clear, Ttl::At);
    let mut db = ctx.locked.db(dst_db);
    if db.exists(&dst)? {
        if !replace {
            return Ok(Reply::Int(0));
        }
        db.remove(&dst)?;
    }
    db.insert(&dst, value, ttl)?;
    db.modified(&dst, Event::CopyTo)?;
    Ok(Reply::Int(1))
}

pub fn move_(ctx: &mut Ctx) -> CmdResult<Reply> {
    not_in_cluster(ctx, "MOVE is not allowed in cluster mode")?;
    let key = ctx.arg(1).clone();
    let n = parse_i64(ctx.arg(2)).ok_or(CmdError::NotInteger)?;
    if i32::try_from(n).is_err() {
        return Err(CmdError::other(
            "ERR value is out of range, value must between -2147483648 and 2147483647",
        ));
    }
    let (src_db, dst_db) = (ctx.client.db, db_index(ctx, n)?);
    if src_db == dst_db {
        return Err(CmdError::other(SAME_OBJECT));
    }
    let Some(ttl) = ctx
        .locked
        .db(src_db)
        .entry(&key)?
        .map(|e| e.expire_at().map_or(Ttl::Clear, Ttl::At))
    else {
        return Ok(Reply::Int(0));
    };
    if ctx.locked.db(dst_db).exists(&key)? {
        return Ok(Reply::Int(0));
    }
    let clock = ctx.locked.db(src_db).access(&key)?;
    let value = ctx
        .locked
        .db(src_db)
        .remove(&key)?
        .ok_or(CmdError::NoSuchKey)?;
    ctx.locked.db(dst_db).insert(&key, value, ttl)?;
    if let Some(clock) = clock {
        ctx.locked.db(dst_db).set_access(&key, clock)?;
    }
    ctx.locked.db(src_db).modified(&key, Event::MoveFrom)?;
    ctx.locked.db(dst_db).modified(&key, Event::MoveTo)?;
    Ok(Reply::Int(1))
}

pub fn swapdb(ctx: &mut Ctx) -> CmdResult<Reply> {
    not_in_cluster(ctx, "SWAPDB is not allowed in cluster mode")?;
    let first =
        parse_int(ctx.arg(1)).ok_or_else(|| CmdError::other("ERR invalid first DB index"))?;
    let second =
        parse_int(ctx.arg(2)).ok_or_else(|| CmdError::other("ERR invalid second DB index"))?;
    let (a, b) = (db_index(ctx, first)?, db_index(ctx, second)?);
    ctx.locked.swap_dbs(a, b)?;
    Ok(Reply::OK)
}

pub fn dump(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    Ok(Reply::opt_bulk(
        ctx.db().get(&key)?.map(|v| dump::dump(v).into()),
    ))
}

/// RESTORE's options.
struct RestoreOptions {
    replace: bool,
    absolute_ttl: bool,
    idle_secs: Option<u64>,
    freq: Option<u8>,
}

fn parse_restore_options(args: &[Bytes]) -> CmdResult<RestoreOptions> {
    let mut opts = RestoreOptions {
        replace: false,
        absolute_ttl: false,
        idle_secs: None,
        freq: None,
    };
    let mut i = 0;
    while i < args.len() {
        let more = i + 1 < args.len();
        match &args[i].to_ascii_lowercase()[..] {
            b"replace" => opts.replace = true,
            b"absttl" => opts.absolute_ttl = true,
            b"idletime" if more && opts.freq.is_none() => {
                let n = parse_i64(&args[i + 1]).ok_or(CmdError::NotInteger)?;
                let n = u64::try_from(n)
                    .map_err(|_| CmdError::other("ERR Invalid IDLETIME value, must be >= 0"))?;
                opts.idle_secs = Some(n);
                i += 1;
            }
            b"freq" if more && opts.idle_secs.is_none() => {
                let n = parse_i64(&args[i + 1]).ok_or(CmdError::NotInteger)?;
                let n = u8::try_from(n).map_err(|_| {
                    CmdError::other("ERR Invalid FREQ value, must be >= 0 and <= 255")
                })?;
                opts.freq = Some(n);
                i += 1;
            }
            _ => return Err(CmdError::Syntax),
        }
        i += 1;
    }
    Ok(opts)
}

pub fn restore(ctx: &mut Ctx) -> CmdResult<Reply> {
    let opts = parse_restore_options(&ctx.args[4..])?;
    let key = ctx.arg(1).clone();
    let now = ctx.now();
    // As Redis: FREQ counts under an LFU policy, IDLETIME under any other.
    let clock = if lfu_policy(ctx) {
        opts.freq.map(|f| AccessClock::freq(f, now))
    } else {
        opts.idle_secs.map(|s| AccessClock::idle(s, now))
    };
    // Sent as Redis sends it: as itself, a relative TTL made absolute.
    ctx.locked.begin_command_record();
    let mut db = ctx.db();
    if !opts.replace && db.exists(&key)? {
        return Err(CmdError::other("BUSYKEY Target key name already exists."));
    }
    let ttl = parse_i64(&ctx.args[2]).ok_or(CmdError::NotInteger)?;
    if ttl < 0 {
        return Err(CmdError::other("ERR Invalid TTL value, must be >= 0"));
    }
    let limits = ctx.shared.keyspace.limits();
    let value = dump::restore(&ctx.args[3], &limits).map_err(|e| {
        CmdError::other(match e {
            DumpError::VersionOrChecksum => "ERR DUMP payload version or checksum are wrong",
            DumpError::BadFormat => "ERR Bad data format",
        })
    })?;
    let mut db = ctx.db();
    let replaced = opts.replace && db.remove(&key)?.is_some();
    let deadline = match ttl {
        0 => None,
        t if opts.absolute_ttl => Some(t as u64),
        t => Some((t as u64).saturating_add(now)),
    };
    if deadline.is_some_and(|at| db.already_expired(at)) {
        // Already past: the key is only deleted, if it was there.
        if replaced {
            db.modified(&key, Event::Del)?;
        }
        return Ok(Reply::OK);
    }
    db.insert(&key, value, deadline.map_or(Ttl::Clear, Ttl::At))?;
    if let Some(clock) = clock {
        db.set_access(&key, clock)?;
    }
    db.modified(&key, Event::Restore)?;
    let absolute = deadline
        .filter(|_| !opts.absolute_ttl)
        .map(|at| at.to_string());
    let mut line: Vec<&[u8]> = ctx.args.iter().map(|a| &a[..]).collect();
    line[0] = b"RESTORE";
    if let Some(at) = &absolute {
        line[2] = at.as_bytes();
        line.push(b"ABSTTL");
    }
    ctx.locked.record_as_command(ctx.client.db, &line);
    Ok(Reply::OK)
}

pub fn randomkey(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (db, now) = (ctx.client.db, ctx.now());
    let keys: Vec<Bytes> = ctx
        .locked
        .shards()
        .flat_map(|s| {
            s.entries(db, now)
                .map(|(k, _)| Bytes::copy_from_slice(k))
                .collect::<Vec<_>>()
        })
        .collect();
    if keys.is_empty() {
        return Ok(Reply::Nil);
    }
    let pick = rand::rng().random_range(0..keys.len());
    Ok(Reply::Bulk(keys[pick].clone()))
}

/// Runs `answer` on the key's value and access clock, without using the
/// key (OBJECT leaves its clock alone); a missing key is nil.
fn object_lookup(
    ctx: &mut Ctx,
    answer: impl FnOnce(&Value, AccessClock) -> CmdResult<Reply>,
) -> CmdResult<Reply> {
    let key = ctx.arg(2).clone();
    let mut db = ctx.db();
    let Some(clock) = db.access(&key)? else {
        return Ok(Reply::Nil);
    };
    match db.get_untouched(&key)? {
        Some(value) => answer(value, clock),
        None => Ok(Reply::Nil),
    }
}

fn lfu_policy(ctx: &Ctx) -> bool {
    ctx.shared.config.read().maxmemory_policy.contains("lfu")
}

pub fn object_encoding(ctx: &mut Ctx) -> CmdResult<Reply> {
    object_lookup(ctx, |v, _| Ok(Reply::bulk(encoding_name(v))))
}

pub fn object_refcount(ctx: &mut Ctx) -> CmdResult<Reply> {
    // Redis shares the objects of the integers 0..9999 (refcount INT_MAX),
    // unless an LRU or LFU policy needs each key's own access clock.
    let shares = {
        let config = ctx.shared.config.read();
        config.maxmemory == 0 || !evicts_by_access(&config.maxmemory_policy)
    };
    object_lookup(ctx, |v, _| {
        let shared = matches!(v, Value::Str(s, form) if form.encoding(s) == StrEncoding::Int
            && parse_i64(s).is_some_and(|n| (0..10_000).contains(&n)));
        Ok(Reply::Int(if shared && shares {
            i64::from(i32::MAX)
        } else {
            1
        }))
    })
}

fn evicts_by_access(policy: &str) -> bool {
    policy.contains("lru") || policy.contains("lfu")
}

const POLICY_SWITCH_NOTE: &str = "Please note that when switching between policies at runtime \
                                  LRU and LFU data will take some time to adjust.";

pub fn object_idletime(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (lfu, now) = (lfu_policy(ctx), ctx.now());
    object_lookup(ctx, |_, clock| {
        if lfu {
            return Err(CmdError::other(format!(
                "ERR An LFU maxmemory policy is selected, idle time not tracked. {POLICY_SWITCH_NOTE}"
            )));
        }
        Ok(Reply::Int(clock.idle_secs(now) as i64))
    })
}

pub fn object_freq(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (lfu, now) = (lfu_policy(ctx), ctx.now());
    object_lookup(ctx, |_, clock| {
        if !lfu {
            return Err(CmdError::other(format!(
                "ERR An LFU maxmemory policy is not selected, access frequency not tracked. {POLICY_SWITCH_NOTE}"
            )));
        }
        Ok(Reply::Int(i64::from(clock.decayed_freq(now))))
    })
}

pub fn object_help(_ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(help_reply(
        "OBJECT",
        &[
            "ENCODING <key>",
            "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>",
            "    Return the access frequency index of the <key>. The returned integer is",
            "    proportional to the logarithm of the recent access frequency of the key.",
            "IDLETIME <key>",
            "    Return the idle time of the <key>, that is the approximated number of",
            "    seconds elapsed since the last access to the key.",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the specified",
            "    <key>.",
        ],
    ))
}

const RM_DELETE: &[&str] = &["RM", "delete"];

const MULTI_SHARD_SUM: &[&str] = &["request_policy:multi_shard", "response_policy:agg_sum"];

const RESTORE_SYNTAX: &str =
    "key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]";

/// An OBJECT subcommand that reads the key in argument 2.
const fn object_key_sub(name: &'static str, handler: super::spec::Handler) -> CommandSpec {
    CommandSpec::new(name, 3, Group::Generic, handler)
        .flags(READONLY)
        .acl(KEYSPACE)
        .tips(NONDET)
        .keys(OBJECT_KEY)
        .syntax("key")
}

static OBJECT_SUBS: &[CommandSpec] = &[
    object_key_sub("encoding", object_encoding).doc(
        "2.2.3",
        "Returns the internal encoding Redis would use for a key's value.",
    ),
    object_key_sub("freq", object_freq).doc(
        "4.0.0",
        "Returns a key's LFU access frequency (rlockd counts none: always 5).",
    ),
    object_key_sub("idletime", object_idletime).doc(
        "2.2.3",
        "Returns the seconds since a key was last used (rlockd tracks none: always 0).",
    ),
    CommandSpec::new("help", 2, Group::Generic, object_help)
        .flags(LOADING | STALE)
        .acl(KEYSPACE)
        .doc("6.2.0", "Lists the OBJECT subcommands."),
    object_key_sub("refcount", object_refcount).doc(
        "2.2.3",
        "Returns the reference count Redis would report for a key's value.",
    ),
];

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("exists", -2, Group::Generic, exists)
        .flags(READ_FAST)
        .acl(KEYSPACE)
        .tips(MULTI_SHARD_SUM)
        .keys(&keys_all(RO))
        .syntax("key...")
        .doc("1.0.0", "Counts how many of the given keys exist."),
    CommandSpec::new("del", -2, Group::Generic, del)
        .flags(WRITE)
        .acl(KEYSPACE)
        .tips(MULTI_SHARD_SUM)
        .keys(&keys_all(RM_DELETE))
        .syntax("key...")
        .doc("1.0.0", "Deletes keys; returns how many existed."),
    CommandSpec::new("unlink", -2, Group::Generic, del)
        .flags(WRITE | FAST)
        .acl(KEYSPACE)
        .tips(MULTI_SHARD_SUM)
        .keys(&keys_all(RM_DELETE))
        .syntax("key...")
        .doc("4.0.0", "Deletes keys like DEL."),
    CommandSpec::container("object", Group::Generic, OBJECT_SUBS)
        .doc("2.2.3", "Inspects how a key's value is held."),
    CommandSpec::new("type", 2, Group::Generic, type_)
        .flags(READ_FAST)
        .acl(KEYSPACE)
        .keys(&key1(RO))
        .syntax("key")
        .doc("1.0.0", "Returns the type of the value at a key."),
    CommandSpec::new("keys", 2, Group::Generic, keys)
        .flags(READONLY | WHOLE_KEYSPACE)
        .acl(KEYSPACE | DANGEROUS)
        .tips(&["request_policy:all_shards", "nondeterministic_output_order"])
        .syntax("pattern")
        .doc("1.0.0", "Returns every key matching a glob pattern."),
    CommandSpec::new("scan", -2, Group::Generic, scan)
        .flags(READONLY | WHOLE_KEYSPACE)
        .acl(KEYSPACE)
        .tips(&["nondeterministic_output", "request_policy:special"])
        .syntax("cursor [MATCH pattern] [COUNT count] [TYPE type]")
        .doc("2.8.0", "Iterates over the keys with a cursor."),
    CommandSpec::new("rename", 3, Group::Generic, rename)
        .records_itself()
        .flags(WRITE)
        .acl(KEYSPACE)
        .keys(&[
            KeySpec::range(1, 0, 1, &["RW", "access", "delete"]),
            KeySpec::range(2, 0, 1, OW_UPDATE),
        ])
        .syntax("key newkey")
        .doc("1.0.0", "Renames a key, replacing any key of the new name."),
    CommandSpec::new("renamenx", 3, Group::Generic, renamenx)
        .records_itself()
        .flags(WRITE | FAST)
        .acl(KEYSPACE)
        .keys(&[
            KeySpec::range(1, 0, 1, RW_ACCESS_DELETE),
            KeySpec::range(2, 0, 1, &["OW", "insert"]),
        ])
        .syntax("key newkey")
        .doc("1.0.0", "Renames a key only if no key has the new name."),
    CommandSpec::new("copy", -3, Group::Generic, copy)
        .records_itself()
        .flags(WRITE | DENYOOM)
        .acl(KEYSPACE)
        .keys(&[
            KeySpec::range(1, 0, 1, RO_ACCESS),
            KeySpec::range(2, 0, 1, OW_UPDATE),
        ])
        .syntax("source destination [DB destination-db] [REPLACE]")
        .doc(
            "6.2.0",
            "Copies a key's value and time to live to another key, possibly in another database.",
        ),
    CommandSpec::new("move", 3, Group::Generic, move_)
        .records_itself()
        .flags(WRITE | FAST)
        .acl(KEYSPACE)
        .keys(&key1(RW_ACCESS_UPDATE))
        .syntax("key db")
        .doc(
            "1.0.0",
            "Moves a key to another database, unless a key of that name is there.",
        ),
    CommandSpec::new("touch", -2, Group::Generic, touch)
        .flags(READ_FAST)
        .acl(KEYSPACE)
        .tips(MULTI_SHARD_SUM)
        .keys(&keys_all(RO))
        .syntax("key...")
        .doc(
            "3.2.1",
            "Counts how many of the given keys exist, as an access to each.",
        ),
    CommandSpec::new("swapdb", 3, Group::Server, swapdb)
        .flags(WRITE | FAST | WHOLE_KEYSPACE)
        .acl(KEYSPACE | DANGEROUS)
        .syntax("index1 index2")
        .doc("4.0.0", "Swaps the contents of two databases."),
    CommandSpec::new("dump", 2, Group::Generic, dump)
        .flags(READONLY)
        .acl(KEYSPACE)
        .tips(NONDET)
        .keys(&key1(RO_ACCESS))
        .syntax("key")
        .doc(
            "2.6.0",
            "Serialises a key's value in rlockd's own format, for RESTORE.",
        ),
    CommandSpec::new("restore", -4, Group::Generic, restore)
        .flags(WRITE | DENYOOM)
        .acl(KEYSPACE | DANGEROUS)
        .keys(&key1(OW_UPDATE))
        .syntax(RESTORE_SYNTAX)
        .doc(
            "2.6.0",
            "Creates a key from a DUMP payload, refusing damaged or foreign payloads.",
        ),
    CommandSpec::new("restore-asking", -4, Group::Server, restore)
        .flags(WRITE | DENYOOM | ASKING)
        .acl(KEYSPACE | DANGEROUS)
        .keys(&key1(OW_UPDATE))
        .syntax(RESTORE_SYNTAX)
        .doc("3.0.0", "RESTORE as a cluster migration sends it."),
    CommandSpec::new("randomkey", 1, Group::Generic, randomkey)
        .flags(READONLY | WHOLE_KEYSPACE)
        .acl(KEYSPACE)
        .tips(&["request_policy:all_shards", "nondeterministic_output"])
        .doc("1.0.0", "Returns a random key."),
];
