//! DEBUG: the harmless subcommands that test suites use. The ones whose
//! purpose is to crash or corrupt the server (SEGFAULT, PANIC, ASSERT,
//! OOM, LEAK, CRASH-AND-RECOVER, RESTART) are refused: a lock server that
//! dies on request would take every lease it holds down with it.
//!
//! Redis 7.0 refuses DEBUG unless `enable-debug-command` allows it; so
//! does rlockd, with the same setting and error.

use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;

use super::Ctx;
use super::reply::help_reply;
use super::spec::flag::{ADMIN, LOADING, NOSCRIPT, STALE, WHOLE_KEYSPACE};
use super::spec::{CommandSpec, Group};
use super::values::encoding_name;
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{
    Entry, LockPlan, Ttl, Value,
    dump::{self, dump},
};
use crate::protocol::Reply;
use crate::util::{glob_match, parse_i64};

/// The error Redis answers for a subcommand it does not know, or one given
/// the wrong number of arguments.
fn unknown(ctx: &Ctx) -> CmdError {
    CmdError::other(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
        String::from_utf8_lossy(ctx.arg(1))
    ))
}

const NOT_ALLOWED: &str = "ERR DEBUG command not allowed. If the enable-debug-command option is \
                           set to \"local\", you can run it from a local connection, otherwise \
                           you need to set this option in the configuration file, and then \
                           restart the server.";

/// Subcommands that exist to crash the server; refused, never run.
const CRASHERS: &[&str] = &[
    "segfault",
    "panic",
    "assert",
    "oom",
    "leak",
    "crash-and-recover",
    "restart",
];

pub fn debug(ctx: &mut Ctx) -> CmdResult<Reply> {
    let setting = ctx.shared.config.read().enable_debug_command;
    if !ctx.permits(setting) {
        return Err(CmdError::other(NOT_ALLOWED));
    }
    let sub = String::from_utf8_lossy(ctx.arg(1)).to_ascii_lowercase();
    let argc = ctx.args.len();
    match (sub.as_str(), argc) {
        ("help", 2) => Ok(help()),
        ("sleep", 3) => sleep(ctx),
        // Accepted for the suites that toggle them; rlockd's expiry wheel,
        // replication ids and reply buffers have nothing to switch.
        ("change-repl-id", 2)
        | ("set-active-expire" | "pause-cron" | "set-skip-checksum-validation", 3) => Ok(Reply::OK),
        ("replybuffer", 4) => replybuffer(ctx),
        ("quicklist-packed-threshold", 3) => packed_threshold(ctx),
        ("set-disable-deny-scripts", 3) => {
            let lifted = parse_i64(ctx.arg(2)).is_some_and(|n| n != 0);
            ctx.shared
                .scripts
                .deny_lifted
                .store(lifted, Ordering::Relaxed);
            Ok(Reply::OK)
        }
        ("reload", _) => reload(ctx),
        ("log", 3) => {
            tracing::warn!("DEBUG LOG: {}", String::from_utf8_lossy(ctx.arg(2)));
            Ok(Reply::OK)
        }
        ("populate", 3..=5) => populate(ctx),
        ("object", 3) => object(ctx),
        ("listpack", 3) => layout(ctx, "listpack", "Listpack"),
        ("quicklist", 3 | 4) => layout(ctx, "quicklist", "Quicklist"),
        ("digest", 2) => Ok(digest(ctx)),
        ("digest-value", _) => Ok(digest_values(ctx)),
        ("protocol", 3) => protocol(ctx),
        ("stringmatch-test", 2) => Ok(stringmatch_test()),
        (name, _) if CRASHERS.contains(&name) => Err(CmdError::other(format!(
            "ERR DEBUG {} is not supported: rlockd does not crash on request",
            name.to_ascii_uppercase()
        ))),
        _ => Err(unknown(ctx)),
    }
}

fn help() -> Reply {
    help_reply(
        "DEBUG",
        &[
            "CHANGE-REPL-ID",
            "    Accepted; rlockd has no replication ids.",
            "DIGEST",
            "    A hex signature of every database's content.",
            "DIGEST-VALUE <key> [<key> ...]",
            "    A hex signature of each key's value.",
            "LISTPACK <key>",
            "    Whether <key>'s value would be held as a listpack in Redis 7.0.",
            "LOG <message>",
            "    Writes <message> to the server log.",
            "OBJECT <key>",
            "    Describes <key>'s value: encoding, serialized length.",
            "PAUSE-CRON <0|1>",
            "    Accepted; nothing to pause.",
            "POPULATE <count> [<prefix>] [<size>]",
            "    Creates <count> string keys named <prefix>:<num> (default prefix: key).",
            "PROTOCOL <type>",
            "    Replies with a sample of a RESP type: string, integer, double, bignum,",
            "    null, array, set, map, attrib, push, verbatim, true, false.",
            "QUICKLIST <key> [<0|1>]",
            "    Whether <key>'s value would be held as a quicklist in Redis 7.0.",
            "QUICKLIST-PACKED-THRESHOLD <size>",
            "    Accepted (checked); rlockd's lists have no packed nodes.",
            "RELOAD [MERGE] [NOFLUSH] [NOSAVE]",
            "    Saves the snapshot, empties the keyspace and loads the file back.",
            "REPLYBUFFER PEAK-RESET-TIME <NEVER|RESET|time> | RESIZING <0|1>",
            "    Accepted; rlockd sizes its reply buffers by itself.",
            "SET-DISABLE-DENY-SCRIPTS <0|1>",
            "    Lets scripts call the commands they may not (DEBUG among them).",
            "SET-ACTIVE-EXPIRE <0|1>",
            "    Accepted; rlockd's keys expire at their deadline.",
            "SLEEP <seconds>",
            "    Stops every command on the keyspace for <seconds>. Decimals allowed.",
            "STRINGMATCH-TEST",
            "    Runs random patterns through the glob matcher.",
        ],
    )
}

/// Holds the whole keyspace (the table entry asks for it) while it waits,
/// as Redis stops its one thread.
fn sleep(ctx: &mut Ctx) -> CmdResult<Reply> {
    // Redis reads the seconds leniently: what is not a number is 0.
    let secs = std::str::from_utf8(ctx.arg(2))
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(0.0);
    let pause = Duration::from_secs_f64(secs.min(u32::MAX as f64));
    use tokio::runtime::{Handle, RuntimeFlavor};
    if Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread) {
        // Another worker takes this one's queued connections meanwhile.
        tokio::task::block_in_place(|| std::thread::sleep(pause));
    } else {
        std::thread::sleep(pause);
    }
    Ok(Reply::OK)
}

fn replybuffer(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (what, value) = (ctx.arg(2), ctx.arg(3));
    if what.eq_ignore_ascii_case(b"peak-reset-time") {
        if value.eq_ignore_ascii_case(b"never")
            || value.eq_ignore_ascii_case(b"reset")
            || parse_i64(value).is_some()
        {
            return Ok(Reply::OK);
        }
        return Err(CmdError::NotInteger);
    }
    if what.eq_ignore_ascii_case(b"resizing") {
        return Ok(Reply::OK);
    }
    Err(unknown(ctx))
}

fn packed_threshold(ctx: &mut Ctx) -> CmdResult<Reply> {
    const MAX: u64 = 1 << 32;
    match crate::config::parse_memory(&String::from_utf8_lossy(ctx.arg(2))) {
        Ok(n) if n < MAX => Ok(Reply::OK),
        _ => Err(CmdError::other(
            "ERR argument must be a memory value bigger than 1 and smaller than 4gb",
        )),
    }
}

/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: saves the snapshot, empties
/// the keyspace and loads the file back, as Redis does.
fn reload(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (mut merge, mut flush, mut save) = (false, true, true);
    for arg in &ctx.args[2..] {
        match arg.to_ascii_lowercase().as_slice() {
            b"merge" => merge = true,
            b"noflush" => flush = false,
            b"nosave" => save = false,
            _ => {
                return Err(CmdError::other(
                    "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
                ));
            }
        }
    }
    // DEBUG holds every shard; the save and the load take them themselves.
    ctx.locked.relock(&LockPlan::Nothing)?;
    crate::context::snapshot::reload(ctx.shared, save, flush, merge)
        .map_err(|e| CmdError::other(format!("ERR {e}")))?;
    Ok(Reply::OK)
}

/// `key:0`..`key:<count-1>` set to `value:<n>` (zero-padded or cut to
/// `size` bytes when given); keys that exist are left alone.
fn populate(ctx: &mut Ctx) -> CmdResult<Reply> {
    let out_of_range = || CmdError::NotPositive;
    let count = parse_i64(ctx.arg(2))
        .filter(|n| *n >= 0)
        .ok_or_else(out_of_range)?;
    let prefix = ctx
        .args
        .get(3)
        .cloned()
        .unwrap_or(Bytes::from_static(b"key"));
    let size = match ctx.args.get(4) {
        Some(arg) => Some(
            parse_i64(arg)
                .filter(|n| *n >= 0)
                .ok_or_else(out_of_range)? as usize,
        ),
        None => None,
    };
    let mut db = ctx.db();
    for n in 0..count {
        let mut key = prefix.to_vec();
        key.extend_from_slice(format!(":{n}").as_bytes());
        if db.exists(&key)? {
            continue;
        }
        let mut value = format!("value:{n}").into_bytes();
        if let Some(size) = size.filter(|s| *s > 0) {
            value.resize(size, 0);
        }
        db.insert(&key, Value::string(value.into()), Ttl::Clear)?;
    }
    Ok(Reply::OK)
}

fn no_such_key() -> CmdError {
    CmdError::other("ERR no such key")
}

/// Redis prints an address and a reference count too; rlockd has neither,
/// so the address is a stand-in. `serializedlength` is the length of
/// rlockd's DUMP payload. The key is looked at without being used, and its
/// access clock read as Redis reads it, whatever the policy.
fn object(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (key, now) = (ctx.arg(2).clone(), ctx.now());
    let mut db = ctx.db();
    let clock = db.access(&key)?.ok_or_else(no_such_key)?;
    let value = db.get_untouched(&key)?.ok_or_else(no_such_key)?;
    // A stand-in address made from the key: a real one would tell a
    // client where the heap lies.
    let [a, b, c, d, e, f, ..] = sha1(&[&key]);
    let address = u64::from_be_bytes([0, 0, a, b, c, d, e, f]);
    let mut line = format!(
        "Value at:0x{address:x} refcount:1 encoding:{} serializedlength:{} lru:{} lru_seconds_idle:{}",
        encoding_name(value),
        dump::serialized_len(value),
        clock.bits(),
        clock.idle_secs(now),
    );
    if let Value::List(items) = value {
        let nodes = dump::list_node_sizes(items);
        line.push_str(&format!(
            " ql_nodes:{} ql_avg_node:{:.2} ql_listpack_max:-2 ql_compressed:0 ql_uncompressed_size:{}",
            nodes.len(),
            items.len() as f64 / nodes.len() as f64,
            nodes.iter().sum::<usize>(),
        ));
    }
    Ok(Reply::Status(line.into()))
}

/// LISTPACK and QUICKLIST: Redis prints the structure on its stdout.
fn layout(ctx: &mut Ctx, encoding: &str, title: &str) -> CmdResult<Reply> {
    let key = ctx.arg(2).clone();
    let mut db = ctx.db();
    let value = db.get(&key)?.ok_or_else(no_such_key)?;
    if encoding_name(value) == encoding {
        Ok(Reply::Status(
            format!("{title} structure printed on stdout").into(),
        ))
    } else {
        Err(CmdError::other(format!(
            "ERR Not a {encoding} encoded object."
        )))
    }
}

type Digest = [u8; 20];

fn sha1(parts: &[&[u8]]) -> Digest {
    let mut h = sha1_smol::Sha1::new();
    for p in parts {
        h.update(p);
    }
    h.digest().bytes()
}

/// Folds `d` into `acc` so that the order of folding does not matter
/// (members of a set, fields of a hash, keys of a database).
fn fold(acc: &mut Digest, d: Digest) {
    acc.iter_mut().zip(d).for_each(|(a, b)| *a ^= b);
}

/// rlockd's own signature of a value (not Redis's numbers): equal values
/// give equal digests whatever order their members are held in.
fn value_digest(entry: &Entry) -> Digest {
    let mut acc = match &entry.value {
        Value::Set(set) => {
            let mut acc = [0; 20];
            set.members()
                .iter()
                .for_each(|m| fold(&mut acc, sha1(&[m])));
            acc
        }
        Value::Hash(hash) => {
            let mut acc = [0; 20];
            for (f, v) in hash.iter() {
                let len = (f.len() as u64).to_le_bytes();
                fold(&mut acc, sha1(&[&len, f, v]));
            }
            acc
        }
        other => sha1(&[&dump(other)]),
    };
    if let Some(at) = entry.expire_at() {
        fold(&mut acc, sha1(&[b"expires", &at.to_le_bytes()]));
    }
    acc
}

fn hex(d: &Digest) -> Reply {
    let text: String = d.iter().map(|b| format!("{b:02x}")).collect();
    Reply::Status(text.into())
}

/// Every database's keys and values; all zeros when the server is empty.
fn digest(ctx: &mut Ctx) -> Reply {
    let now = ctx.now();
    let databases = ctx.shared.config.read().databases;
    let mut all = [0; 20];
    for db in 0..databases {
        let mut acc = [0; 20];
        for shard in ctx.locked.shards() {
            for (key, entry) in shard.entries(db, now) {
                fold(&mut acc, sha1(&[key, &value_digest(&entry.entry())]));
            }
        }
        if acc != [0; 20] {
            fold(&mut all, sha1(&[&(db as u32).to_le_bytes(), &acc]));
        }
    }
    hex(&all)
}

fn digest_values(ctx: &mut Ctx) -> Reply {
    let now = ctx.now();
    let db = ctx.client.db;
    let keys = ctx.args[2..].to_vec();
    let digests = keys
        .iter()
        .map(|key| {
            let found = ctx
                .locked
                .shards()
                .flat_map(|s| s.entries(db, now))
                .find(|(k, _)| *k == key.as_ref())
                .map_or([0; 20], |(_, e)| value_digest(&e.entry()));
            hex(&found)
        })
        .collect();
    Reply::Array(digests)
}

fn protocol(ctx: &mut Ctx) -> CmdResult<Reply> {
    let int = Reply::Int;
    let reply = match ctx.arg(2).to_ascii_lowercase().as_slice() {
        b"string" => Reply::bulk_str("Hello World"),
        b"integer" => int(12345),
        // Redis's sample value, not an approximation of pi.
        #[allow(clippy::approx_constant)]
        b"double" => Reply::Double(3.141),
        b"bignum" => Reply::BigNumber(Bytes::from_static(b"1234567999999999999999999999999999999")),
        b"null" => Reply::Nil,
        b"array" => Reply::Array((0..3).map(int).collect()),
        b"set" => Reply::Set((0..3).map(int).collect()),
        b"map" => Reply::Map((0..3).map(|i| (int(i), Reply::Bool(i == 1))).collect()),
        b"attrib" => Reply::Attributed(
            vec![(
                Reply::bulk_str("key-popularity"),
                Reply::Array(vec![Reply::bulk_str("key:123"), int(90)]),
            )],
            Box::new(Reply::bulk_str("Some real reply following the attribute")),
        ),
        b"push" if ctx.client.protocol == crate::protocol::Protocol::Resp2 => {
            return Err(CmdError::other(
                "ERR RESP2 is not supported by this command",
            ));
        }
        b"push" => Reply::AfterPush(
            vec![Reply::bulk_str("server-cpu-usage"), int(42)],
            Box::new(Reply::bulk_str("Some real reply following the push reply")),
        ),
        b"verbatim" => Reply::Verbatim(Bytes::from_static(b"This is a verbatim\nstring")),
        b"true" => Reply::Bool(true),
        b"false" => Reply::Bool(false),
        _ => {
            return Err(CmdError::other(
                "ERR Wrong protocol type name. Please use one of the following: \
                 string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
            ));
        }
    };
    Ok(reply)
}

/// Random patterns against random texts: the matcher must answer, whatever
/// the input (it backtracks on `*`, so a bad pattern must not loop).
fn stringmatch_test() -> Reply {
    use rand::RngExt;
    const ALPHABET: &[u8] = b"*?[]^-\\ab";
    let mut rng = rand::rng();
    for _ in 0..10_000 {
        let mut pick = |max: usize| -> Vec<u8> {
            let len = rng.random_range(0..max);
            (0..len)
                .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())])
                .collect()
        };
        let (pattern, text) = (pick(32), pick(32));
        glob_match(&pattern, &text, false);
    }
    Reply::status("Apparently Redis did not crash: test passed")
}

pub(super) static COMMANDS: &[CommandSpec] = &[
    // Holds the whole keyspace so that DEBUG SLEEP stops what Redis's would.
    CommandSpec::new("debug", -2, Group::Server, debug)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE | WHOLE_KEYSPACE)
        .syntax("subcommand [argument [argument ...]]")
        .doc(
            "1.0.0",
            "Subcommands for test suites: SLEEP, OBJECT, DIGEST, PROTOCOL, POPULATE…",
        ),
];
