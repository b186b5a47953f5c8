//! Keyspace commands: EXISTS, DEL, UNLINK, TYPE, KEYS, SCAN, RENAME, RANDOMKEY,
//! OBJECT.

use bytes::Bytes;
use rand::RngExt;

use super::Ctx;
use super::connection::help_reply;
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{HashValue, SHARDS, Ttl, Value};
use crate::protocol::Reply;
use crate::pubsub::Event;
use crate::util::scan::{join_cursor, page, position_of, split_cursor};
use crate::util::{glob_match, parse_cursor, parse_i64};

pub fn exists(ctx: &mut Ctx) -> CmdResult<Reply> {
    let mut n = 0;
    for key in &ctx.args[1..] {
        // A read lookup, as Redis's: it counts hits and misses.
        n += ctx.db().get(key)?.is_some() as i64;
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
    let name = ctx.db().get_mut(&key)?.map_or("none", |v| v.type_name());
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

/// The options SCAN and HSCAN share.
pub struct ScanOptions {
    pub cursor: u64,
    pub pattern: Option<Bytes>,
    pub count: usize,
    pub type_name: Option<String>,
}

pub fn parse_scan(args: &[Bytes], allow_type: bool) -> CmdResult<ScanOptions> {
    let cursor = parse_cursor(&args[0]).ok_or_else(|| CmdError::other("ERR invalid cursor"))?;
    let mut opts = ScanOptions {
        cursor,
        pattern: None,
        count: 10,
        type_name: None,
    };
    let mut i = 1;
    while i < args.len() {
        let opt = args[i].to_ascii_lowercase();
        let value = args.get(i + 1).ok_or(CmdError::Syntax)?;
        match &opt[..] {
            b"count" => {
                let n = parse_i64(value).ok_or(CmdError::NotInteger)?;
                if n < 1 {
                    return Err(CmdError::Syntax);
                }
                opts.count = n as usize;
            }
            // A lone `*` matches everything, the empty key included.
            b"match" => opts.pattern = (&value[..] != b"*").then(|| value.clone()),
            b"type" if allow_type => {
                opts.type_name = Some(String::from_utf8_lossy(value).to_ascii_lowercase())
            }
            _ => return Err(CmdError::Syntax),
        }
        i += 2;
    }
    Ok(opts)
}

pub fn scan(ctx: &mut Ctx) -> CmdResult<Reply> {
    let opts = parse_scan(&ctx.args[1..], true)?;
    let (db, now) = (ctx.client.db, ctx.now());
    let (mut shard_idx, mut from) = split_cursor(opts.cursor);
    let mut found: Vec<(Bytes, &'static str)> = Vec::new();
    let shards: Vec<_> = ctx.locked.shards().collect();
    while shard_idx < SHARDS && found.len() < opts.count {
        let shard = &shards[shard_idx];
        let want = opts.count - found.len();
        let entries = shard.entries(db, now).map(|(k, e)| {
            (
                position_of(k),
                (Bytes::copy_from_slice(k), e.value.type_name()),
            )
        });
        let (got, next) = page(entries, from, want);
        found.extend(got);
        match next {
            Some(pos) => {
                from = pos;
                break;
            }
            None => {
                shard_idx += 1;
                from = 0;
            }
        }
    }
    let cursor = if shard_idx >= SHARDS {
        0
    } else {
        join_cursor(shard_idx, from)
    };
    let keys = found
        .into_iter()
        .filter(|(k, t)| {
            opts.pattern
                .as_ref()
                .is_none_or(|p| glob_match(p, k, false))
                && opts.type_name.as_ref().is_none_or(|want| want == t)
        })
        .map(|(k, _)| Reply::Bulk(k))
        .collect();
    Ok(Reply::Array(vec![
        Reply::bulk_str(&cursor.to_string()),
        Reply::Array(keys),
    ]))
}

pub fn rename(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (src, dst) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.locked.db(ctx.client.db);
    let Some(entry) = db.entry(&src)? else {
        return Err(CmdError::NoSuchKey);
    };
    if src == dst {
        return Ok(Reply::OK);
    }
    let ttl = entry.expire_at().map_or(Ttl::Clear, Ttl::At);
    let value = db.remove(&src)?.ok_or(CmdError::NoSuchKey)?;
    db.insert(&dst, value, ttl)?;
    db.modified(&src, Event::RenameFrom)?;
    db.modified(&dst, Event::RenameTo)?;
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

/// Redis's name for how it would hold a value. A string's follows from its
/// bytes (Redis's rules for values that SET stores; one that APPEND or
/// SETRANGE grew would be `raw` there); hashes and sorted sets keep the
/// compact-or-not state Redis's conversions would have left.
fn encoding_name(value: &Value) -> &'static str {
    match value {
        Value::Str(s) if s.len() <= 20 && parse_i64(s).is_some() => "int",
        Value::Str(s) if s.len() <= 44 => "embstr",
        Value::Str(_) => "raw",
        Value::Hash(h) if hash_is_listpack(h) => "listpack",
        Value::Hash(_) => "hashtable",
        // Redis 7.0 holds every list in a quicklist.
        Value::List(_) => "quicklist",
        Value::ZSet(z) if z.is_compact() => "listpack",
        Value::ZSet(_) => "skiplist",
        Value::Set(s) if s.is_intset() => "intset",
        Value::Set(_) => "hashtable",
        Value::Stream(_) => "stream",
    }
}

/// Redis 7.0 keeps a hash in a listpack up to 512 fields
/// (`hash-max-listpack-entries`), each field and value at most 64 bytes;
/// rlockd's own packed form stops earlier, at 128 fields.
fn hash_is_listpack(hash: &HashValue) -> bool {
    const LISTPACK_ENTRIES: usize = 512;
    const LISTPACK_VALUE: usize = 64;
    match hash {
        HashValue::Packed(_) => true,
        HashValue::Table(_) => {
            hash.len() <= LISTPACK_ENTRIES
                && hash
                    .iter()
                    .all(|(f, v)| f.len() <= LISTPACK_VALUE && v.len() <= LISTPACK_VALUE)
        }
    }
}

/// Runs `answer` on the key's value; a missing key is nil.
fn object_lookup(
    ctx: &mut Ctx,
    answer: impl FnOnce(&Value) -> CmdResult<Reply>,
) -> CmdResult<Reply> {
    let key = ctx.arg(2).clone();
    match ctx.db().get(&key)? {
        Some(value) => answer(value),
        None => Ok(Reply::Nil),
    }
}

pub fn object_encoding(ctx: &mut Ctx) -> CmdResult<Reply> {
    object_lookup(ctx, |v| Ok(Reply::bulk(encoding_name(v))))
}

pub fn object_refcount(ctx: &mut Ctx) -> CmdResult<Reply> {
    // Redis shares the objects of the integers 0..9999 (refcount INT_MAX),
    // unless an LRU or LFU policy needs each key's own access clock.
    let shares = {
        let config = ctx.shared.config.read();
        config.maxmemory == 0 || !evicts_by_access(&config.maxmemory_policy)
    };
    object_lookup(ctx, |v| {
        let shared = matches!(v, Value::Str(s) if s.len() <= 20
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

/// rlockd keeps no access clock per key: a key reads as just used.
pub fn object_idletime(ctx: &mut Ctx) -> CmdResult<Reply> {
    let lfu = ctx.shared.config.read().maxmemory_policy.contains("lfu");
    object_lookup(ctx, |_| {
        if lfu {
            return Err(CmdError::other(format!(
                "ERR An LFU maxmemory policy is selected, idle time not tracked. {POLICY_SWITCH_NOTE}"
            )));
        }
        Ok(Reply::Int(0))
    })
}

/// rlockd counts no accesses: a key reads as new (Redis's initial
/// LFU counter, 5).
pub fn object_freq(ctx: &mut Ctx) -> CmdResult<Reply> {
    let lfu = ctx.shared.config.read().maxmemory_policy.contains("lfu");
    object_lookup(ctx, |_| {
        if !lfu {
            return Err(CmdError::other(format!(
                "ERR An LFU maxmemory policy is not selected, access frequency not tracked. {POLICY_SWITCH_NOTE}"
            )));
        }
        Ok(Reply::Int(5))
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
