//! Server commands: INFO, CONFIG, COMMAND, DBSIZE, FLUSHDB, FLUSHALL, TIME,
//! LASTSAVE.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::presets::{ALL_SHARDS_OK, ALL_SHARDS_SPECIAL, CONN, NONDET, NONDET_ORDER, READ_FAST};
use super::registry::{offered, registry};
use super::reply::help_reply;
use super::spec::acl::{self, CONNECTION, DANGEROUS, KEYSPACE};
use super::spec::flag::{
    ADMIN, ALLOW_BUSY, FAST, LOADING, NO_ASYNC_LOADING, NO_MULTI, NOSCRIPT, STALE, WHOLE_KEYSPACE,
    WRITE,
};
use super::spec::{CommandSpec, Group, KeySpec, flag};
use super::{Ctx, docs};
use crate::config::{Change, Hook, Param, find_param, get_matching};
use crate::context::Shared;
use crate::context::snapshot::{self, ShutdownSave};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{ShardStats, flush_all};
use crate::protocol::REDIS_VERSION;
use crate::protocol::Reply;
use crate::pubsub::Kind;
use crate::util::alloc::{MemoryNow, memory_now};

pub fn dbsize(ctx: &mut Ctx) -> CmdResult<Reply> {
    let db = ctx.client.db;
    let n: usize = ctx.locked.shards().map(|s| s.db_len(db)).sum();
    Ok(Reply::Int(n as i64))
}

/// FLUSHDB and FLUSHALL take an optional ASYNC or SYNC; both are immediate here.
fn flush_mode_ok(args: &[Bytes]) -> CmdResult<()> {
    match args {
        [_] => Ok(()),
        [_, mode] if mode.eq_ignore_ascii_case(b"async") || mode.eq_ignore_ascii_case(b"sync") => {
            Ok(())
        }
        _ => Err(CmdError::Syntax),
    }
}

pub fn flushdb(ctx: &mut Ctx) -> CmdResult<Reply> {
    flush_mode_ok(ctx.args)?;
    ctx.db().flush();
    Ok(Reply::OK)
}

/// FLUSHALL; a snapshot under way is given up, and with `save` points
/// set the file is emptied too, as Redis kills its RDB child and saves
/// after the flush.
pub fn flushall(ctx: &mut Ctx) -> CmdResult<Reply> {
    flush_mode_ok(ctx.args)?;
    flush_all(ctx.locked, Some(ctx.client.db));
    ctx.shared.snapshots.cancel();
    if !ctx.shared.config.read().save.is_empty() {
        let dirty = ctx.locked.shards().map(|s| s.stats.dirty).sum();
        // Redis answers OK even when this save fails; it logs why.
        if let Err(e) = snapshot::save_flushed(ctx.shared, dirty) {
            tracing::warn!("Failed saving the DB: {e}");
        }
    }
    Ok(Reply::OK)
}

pub fn time(ctx: &mut Ctx) -> CmdResult<Reply> {
    let us = ctx.shared.keyspace.clock().now_us();
    Ok(Reply::Array(vec![
        Reply::bulk_str(&(us / 1_000_000).to_string()),
        Reply::bulk_str(&(us % 1_000_000).to_string()),
    ]))
}

pub fn lastsave(ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(Reply::Int(ctx.shared.snapshots.last_save()))
}

fn save_in_progress() -> CmdError {
    CmdError::other("ERR Background save already in progress")
}

/// SAVE: the snapshot written before the reply (clients other than the
/// caller go on meanwhile; see `Keyspace::begin_capture`).
pub fn save(ctx: &mut Ctx) -> CmdResult<Reply> {
    let saved = snapshot::save(ctx.shared);
    if !matches!(saved, Err(snapshot::SaveError::InProgress)) {
        ctx.shared.snapshots.count_save();
    }
    match saved {
        Ok(()) => Ok(Reply::OK),
        Err(snapshot::SaveError::InProgress) => Err(save_in_progress()),
        Err(snapshot::SaveError::Io(_)) => Err(CmdError::other("ERR")),
    }
}

/// BGSAVE [SCHEDULE]: behind an AOF rewrite (or inside EXEC) only
/// scheduled, as Redis does while another child runs.
pub fn bgsave(ctx: &mut Ctx) -> CmdResult<Reply> {
    let schedule = match ctx.args {
        [_] => false,
        [_, arg] if arg.eq_ignore_ascii_case(b"schedule") => true,
        _ => return Err(CmdError::Syntax),
    };
    let shared = ctx.shared;
    if shared.snapshots.in_progress() {
        return Err(save_in_progress());
    }
    if shared.persistence.rewrite_in_progress() || ctx.client.in_exec {
        if schedule || ctx.client.in_exec {
            shared.snapshots.schedule();
            return Ok(Reply::status("Background saving scheduled"));
        }
        return Err(CmdError::other(
            "ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.",
        ));
    }
    match snapshot::background_save(shared) {
        Ok(()) => Ok(Reply::status("Background saving started")),
        Err(snapshot::SaveError::InProgress) => Err(save_in_progress()),
        Err(snapshot::SaveError::Io(_)) => Err(CmdError::other("ERR")),
    }
}

/// BGREWRITEAOF: the rewrite runs in the background (see
/// `context::persistence::rewrite`); behind a BGSAVE it is only scheduled,
/// as Redis waits for its child (the rewrite waits for the save).
pub fn bgrewriteaof(ctx: &mut Ctx) -> CmdResult<Reply> {
    let behind_save = ctx.shared.snapshots.in_progress();
    if !ctx.shared.persistence.request_rewrite() {
        return Err(CmdError::other(
            "ERR Background append only file rewriting already in progress",
        ));
    }
    Ok(Reply::status(if behind_save {
        "Background append only file rewriting scheduled"
    } else {
        "Background append only file rewriting started"
    }))
}

// ---- CONFIG

pub fn config_get(ctx: &mut Ctx) -> CmdResult<Reply> {
    let patterns: Vec<&[u8]> = ctx.args[2..].iter().map(|a| &a[..]).collect();
    let config = ctx.shared.config.read();
    Ok(Reply::Map(
        get_matching(&config, &patterns)
            .into_iter()
            .map(|(name, value)| (Reply::bulk_str(name), Reply::bulk_str(&value)))
            .collect(),
    ))
}

pub fn config_set(ctx: &mut Ctx) -> CmdResult<Reply> {
    let pairs = &ctx.args[2..];
    if !pairs.len().is_multiple_of(2) {
        return Err(CmdError::WrongArity("config|set".into()));
    }
    let failed = |name: &str, why: &str| {
        CmdError::other(format!(
            "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
        ))
    };
    // Redis's order: every name is checked (known, changeable, given
    // once) before any value is.
    let mut named: Vec<(String, &'static Param, String)> = Vec::new();
    for pair in pairs.chunks(2) {
        let name = String::from_utf8_lossy(&pair[0]).into_owned();
        let Some(param) = find_param(&name) else {
            return Err(CmdError::other(format!(
                "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
            )));
        };
        // Protection first: `dbfilename` is one Redis may change, and
        // only reports being fixed here once it is open.
        let open = ctx.shared.config.read().enable_protected_configs;
        if param.protected() && !ctx.permits(open) {
            return Err(failed(&name, "can't set protected config"));
        }
        if param.change == Change::Never {
            return Err(failed(&name, "can't set immutable config"));
        }
        if named.iter().any(|(n, _, _)| n.eq_ignore_ascii_case(&name)) {
            return Err(failed(&name, "duplicate parameter"));
        }
        named.push((name, param, String::from_utf8_lossy(&pair[1]).into_owned()));
    }
    // All or nothing: changes apply to a copy that replaces the original
    // only once every value is accepted.
    let _one_at_a_time = ctx.shared.config_set.lock();
    let old = ctx.shared.config.read().clone();
    let mut updated = old.clone();
    // Each hook once, named after the first setting that calls for it.
    let mut hooks: Vec<(Hook, &str)> = Vec::new();
    for (name, param, value) in &named {
        let result = match param.change {
            Change::Runtime => param.apply(&mut updated, value),
            // Redis's checks first, so a bad value gets Redis's error.
            Change::Startup => {
                let mut probe = updated.clone();
                param.apply(&mut probe, value).and_then(|()| {
                    ((param.get)(&probe) == (param.get)(&updated))
                        .then_some(())
                        .ok_or_else(|| "can't set immutable config".into())
                })
            }
            Change::Never => Err("can't set immutable config".into()),
        };
        result.map_err(|why| failed(name, &why))?;
        for hook in param.reacts {
            if !hooks.iter().any(|(h, _)| h == hook) {
                hooks.push((*hook, name));
            }
        }
    }
    // TLS files that do not load are the likeliest refusal: tried first.
    hooks.sort_by_key(|(hook, _)| *hook != Hook::Tls);
    for (done, (hook, name)) in hooks.iter().enumerate() {
        if let Err(why) = ctx.shared.reconfigure(*hook, &old, &updated) {
            tracing::warn!(
                "Failed applying new configuration. Possibly related to new {name} setting. Restoring previous settings."
            );
            // As Redis restores its previous settings: what was told of
            // the change hears of its undoing.
            for (undo, _) in &hooks[..done] {
                let _ = ctx.shared.reconfigure(*undo, &updated, &old);
            }
            return Err(failed(name, why));
        }
    }
    *ctx.shared.config.write() = updated;
    ctx.shared.config_changes.send_modify(|n| *n += 1);
    Ok(Reply::OK)
}

pub fn config_resetstat(ctx: &mut Ctx) -> CmdResult<Reply> {
    ctx.shared.stats.reset();
    Ok(Reply::OK)
}

pub fn config_rewrite(ctx: &mut Ctx) -> CmdResult<Reply> {
    let config = ctx.shared.config.read().clone();
    match crate::config::rewrite_file(&config) {
        Ok(()) => {
            tracing::warn!("CONFIG REWRITE executed with success.");
            Ok(Reply::OK)
        }
        Err(e) => {
            if let crate::config::RewriteError::Io(_) = e {
                tracing::warn!("CONFIG REWRITE failed: {e}");
            }
            Err(CmdError::other(format!("ERR {e}")))
        }
    }
}

pub fn config_help(_ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(help_reply(
        "CONFIG",
        &[
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>",
            "    Set the configuration <directive> to <value>.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "REWRITE",
            "    Rewrite the configuration file.",
        ],
    ))
}

// ---- COMMAND

fn names_set(bits: u32, names: &[(u32, &'static str)]) -> Reply {
    Reply::Set(
        names
            .iter()
            .filter(|(bit, _)| bits & bit != 0)
            .map(|(_, name)| Reply::Status((*name).into()))
            .collect(),
    )
}

fn kv(key: &str, value: Reply) -> (Reply, Reply) {
    (Reply::bulk_str(key), value)
}

fn find_keys(k: &KeySpec) -> Reply {
    let (kind, spec) = if k.unknown {
        ("unknown", Vec::new())
    } else if k.keynum {
        (
            "keynum",
            vec![
                kv("keynumidx", Reply::Int(0)),
                kv("firstkey", Reply::Int(1)),
                kv("keystep", Reply::Int(k.step as i64)),
            ],
        )
    } else {
        (
            "range",
            vec![
                kv("lastkey", Reply::Int(k.last as i64)),
                kv("keystep", Reply::Int(k.step as i64)),
                kv(
                    "limit",
                    Reply::Int(if k.keyword.is_some() && k.last < 0 {
                        k.limit as i64
                    } else {
                        0
                    }),
                ),
            ],
        )
    };
    Reply::Map(vec![
        kv("type", Reply::bulk_str(kind)),
        kv("spec", Reply::Map(spec)),
    ])
}

fn begin_search(k: &KeySpec) -> Reply {
    let (kind, spec) = if k.unknown {
        ("unknown", Vec::new())
    } else if let Some(word) = k.keyword {
        (
            "keyword",
            vec![
                kv("keyword", Reply::bulk_str(word)),
                kv("startfrom", Reply::Int(k.begin as i64)),
            ],
        )
    } else {
        ("index", vec![kv("index", Reply::Int(k.begin as i64))])
    };
    Reply::Map(vec![
        kv("type", Reply::bulk_str(kind)),
        kv("spec", Reply::Map(spec)),
    ])
}

/// One COMMAND INFO entry, in Redis 7.0's ten-field layout.
fn command_entry(spec: &CommandSpec, full_name: &str) -> Reply {
    let (first, last, step) = spec.legacy_key_range();
    let key_specs = spec
        .keys
        .iter()
        .map(|k| {
            let notes = (!k.notes.is_empty()).then(|| kv("notes", Reply::bulk_str(k.notes)));
            let flags = kv(
                "flags",
                Reply::Set(k.flags.iter().map(|f| Reply::Status((*f).into())).collect()),
            );
            let fields = notes.into_iter().chain([
                flags,
                kv("begin_search", begin_search(k)),
                kv("find_keys", find_keys(k)),
            ]);
            Reply::Map(fields.collect())
        })
        .collect();
    let subs = spec
        .subcommands
        .iter()
        .map(|sub| command_entry(sub, &format!("{full_name}|{}", sub.name)))
        .collect();
    Reply::Array(vec![
        Reply::bulk_str(full_name),
        Reply::Int(spec.arity as i64),
        names_set(
            spec.flags
                | if spec.movable_keys() {
                    flag::MOVABLE_KEYS
                } else {
                    0
                },
            flag::NAMES,
        ),
        Reply::Int(first as i64),
        Reply::Int(last as i64),
        Reply::Int(step as i64),
        names_set(spec.acl_categories(), acl::NAMES),
        Reply::Set(spec.tips.iter().map(|t| Reply::bulk_str(t)).collect()),
        Reply::Set(key_specs),
        Reply::Set(subs),
    ])
}

/// The commands this server offers (a disabled RLOCKD.CLOCK is unknown).
fn top_level(shared: &Shared) -> impl Iterator<Item = &'static CommandSpec> {
    registry()
        .commands
        .iter()
        .copied()
        .filter(|s| offered(shared, s))
}

/// A command this server offers by name, `parent|sub` included.
fn find_command(shared: &Shared, name: &[u8]) -> Option<(&'static CommandSpec, String)> {
    let lower = String::from_utf8_lossy(name).to_ascii_lowercase();
    let id = registry().lookup_full(&lower)?;
    let spec = registry().specs[id];
    offered(shared, spec).then_some((spec, lower))
}

pub fn command_all(ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(Reply::Array(
        top_level(ctx.shared)
            .map(|s| command_entry(s, s.name))
            .collect(),
    ))
}

pub fn command_count(ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(Reply::Int(top_level(ctx.shared).count() as i64))
}

pub fn command_info(ctx: &mut Ctx) -> CmdResult<Reply> {
    if ctx.args.len() == 2 {
        return command_all(ctx);
    }
    Ok(Reply::Array(
        ctx.args[2..]
            .iter()
            .map(|name| match find_command(ctx.shared, name) {
                Some((spec, full)) => command_entry(spec, &full),
                None => Reply::Nil,
            })
            .collect(),
    ))
}

pub fn command_docs(ctx: &mut Ctx) -> CmdResult<Reply> {
    let entries: Vec<(Reply, Reply)> = if ctx.args.len() == 2 {
        top_level(ctx.shared)
            .map(|s| (Reply::bulk_str(s.name), docs::command_doc(s)))
            .collect()
    } else {
        ctx.args[2..]
            .iter()
            .filter_map(|name| find_command(ctx.shared, name))
            .map(|(spec, full)| (Reply::bulk_str(&full), docs::command_doc(spec)))
            .collect()
    };
    Ok(Reply::Map(entries))
}

pub fn command_getkeys(ctx: &mut Ctx) -> CmdResult<Reply> {
    let line = &ctx.args[2..];
    let (_, positions) = keys_of_line(ctx.shared, line)?;
    Ok(Reply::Array(
        positions
            .into_iter()
            .map(|(i, _)| Reply::bulk_from(&line[i]))
            .collect(),
    ))
}

/// Each key with its spec's access flags (`RW`, `access`, ...), as an
/// ACL-aware client needs to know what a line would touch.
pub fn command_getkeysandflags(ctx: &mut Ctx) -> CmdResult<Reply> {
    let line = &ctx.args[2..];
    let (spec, positions) = keys_of_line(ctx.shared, line)?;
    Ok(Reply::Array(
        positions
            .into_iter()
            .map(|(i, k)| {
                let flags = spec.key_flags(k, line);
                Reply::Array(vec![
                    Reply::bulk_from(&line[i]),
                    Reply::Set(flags.iter().map(|f| Reply::status(f)).collect()),
                ])
            })
            .collect(),
    ))
}

/// The key positions of a full command line, with the spec of each; the
/// errors of COMMAND GETKEYS when the line names no keys.
fn keys_of_line<'a>(
    shared: &Shared,
    line: &'a [Bytes],
) -> CmdResult<(&'static CommandSpec, Vec<(usize, &'a KeySpec)>)> {
    let id = registry()
        .resolve(shared, line)
        .map_err(|_| CmdError::other("ERR Invalid command specified"))?;
    let spec = registry().specs[id];
    // Redis's order: a command that never takes keys, then the arity,
    // then the keys of this line.
    // (shard channels' specs name no keys.)
    if spec.keys.iter().all(|k| k.is_not_key()) {
        return Err(CmdError::other("ERR The command has no key arguments"));
    }
    if !spec.arity_ok(line.len()) {
        return Err(CmdError::other(
            "ERR Invalid number of arguments specified for command",
        ));
    }
    let keys: Vec<_> = spec
        .key_positions(line)
        .filter(|(_, k)| !k.is_not_key())
        .collect();
    if keys.is_empty() && !spec.has(flag::NO_MANDATORY_KEYS) {
        return Err(CmdError::other(
            "ERR Invalid arguments specified for command",
        ));
    }
    Ok((spec, keys))
}

pub fn command_list(ctx: &mut Ctx) -> CmdResult<Reply> {
    let args = ctx.args;
    let filter: Option<(Vec<u8>, Vec<u8>)> = match args.len() {
        2 => None,
        5 if args[2].eq_ignore_ascii_case(b"filterby") => {
            Some((args[3].to_ascii_lowercase(), args[4].to_vec()))
        }
        _ => return Err(CmdError::Syntax),
    };
    let mut names = Vec::new();
    for (id, spec) in registry().specs.iter().enumerate() {
        let full = &registry().full_names[id];
        if !offered(ctx.shared, spec) {
            continue;
        }
        let keep = match &filter {
            None => true,
            Some((kind, value)) => match &kind[..] {
                b"pattern" => crate::util::glob_match(value, full.as_bytes(), true),
                b"aclcat" => {
                    let cat = format!("@{}", String::from_utf8_lossy(value).to_ascii_lowercase());
                    acl::NAMES
                        .iter()
                        .any(|(bit, n)| *n == cat && spec.acl_categories() & bit != 0)
                }
                b"module" => false,
                _ => return Err(CmdError::Syntax),
            },
        };
        if keep {
            names.push(Reply::bulk_str(full));
        }
    }
    Ok(Reply::Array(names))
}

pub fn command_help(_ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(help_reply(
        "COMMAND",
        &[
            "(no subcommand)",
            "    Return details about all commands.",
            "COUNT",
            "    Return the total number of commands.",
            "INFO [<command-name> ...]",
            "    Return details about the given commands, or all of them.",
            "DOCS [<command-name> ...]",
            "    Return documentation for the given commands, or all of them.",
            "GETKEYS <full-command>",
            "    Return the keys of a full command line.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys of a full command line with their access flags.",
            "LIST [FILTERBY (MODULE <module-name>|ACLCAT <category>|PATTERN <pattern>)]",
            "    Return the command names, optionally filtered.",
        ],
    ))
}

// ---- INFO

/// `INFO ALL`, in Redis's order (clients such as Redisson read it whole).
const ALL_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "commandstats",
    "errorstats",
    "latencystats",
    "cluster",
    "keyspace",
];

/// What INFO with no argument reports: everything but the per-command
/// sections.
fn default_sections() -> impl Iterator<Item = String> {
    ALL_SECTIONS
        .iter()
        .filter(|s| !matches!(**s, "commandstats" | "latencystats"))
        .map(|s| s.to_string())
}

pub fn info(ctx: &mut Ctx) -> CmdResult<Reply> {
    let mut wanted: Vec<String> = Vec::new();
    for arg in &ctx.args[1..] {
        let name = String::from_utf8_lossy(arg).to_ascii_lowercase();
        match name.as_str() {
            "default" => wanted.extend(default_sections()),
            "all" | "everything" => wanted.extend(ALL_SECTIONS.iter().map(|s| s.to_string())),
            _ => wanted.push(name),
        }
    }
    if wanted.is_empty() {
        wanted.extend(default_sections());
    }
    let facts = KeyspaceFacts::gather(ctx);
    let mut out = String::new();
    let mut seen = Vec::new();
    for name in wanted {
        if seen.contains(&name) {
            continue;
        }
        if let Some(text) = section(ctx.shared, &facts, &name) {
            if !out.is_empty() {
                out.push_str("\r\n");
            }
            out.push_str(&text);
        }
        seen.push(name);
    }
    Ok(Reply::Verbatim(Bytes::from(out)))
}

/// `/proc/self/stat` user and system CPU seconds; zero where unavailable.
fn cpu_seconds() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 100.0
    };
    (ticks(11), ticks(12))
}

fn human_bytes(n: u64) -> String {
    let units = [("G", 1u64 << 30), ("M", 1 << 20), ("K", 1 << 10)];
    for (unit, size) in units {
        if n >= size {
            return format!("{:.2}{unit}", n as f64 / size as f64);
        }
    }
    format!("{n}B")
}

/// Keyspace figures for INFO, read through the shards INFO holds (all of
/// them), never by locking again: INFO may run inside EXEC.
struct KeyspaceFacts {
    totals: ShardStats,
    /// (keys, keys with a deadline) per database.
    dbs: Vec<(usize, usize)>,
}

impl KeyspaceFacts {
    fn gather(ctx: &mut Ctx) -> Self {
        let databases = ctx.shared.keyspace.databases();
        let mut facts = KeyspaceFacts {
            totals: ShardStats::default(),
            dbs: vec![(0, 0); databases],
        };
        for shard in ctx.locked.shards() {
            facts.totals.hits += shard.stats.hits;
            facts.totals.misses += shard.stats.misses;
            facts.totals.expired += shard.stats.expired;
            facts.totals.dirty += shard.stats.dirty;
            for (db, counts) in facts.dbs.iter_mut().enumerate() {
                counts.0 += shard.db_len(db);
                counts.1 += shard.expires_len(db);
            }
        }
        facts
    }
}

fn section(shared: &Shared, facts: &KeyspaceFacts, name: &str) -> Option<String> {
    let now_ms = shared.now_ms();
    let uptime = now_ms.saturating_sub(shared.started_ms) / 1000;
    let config = shared.config.read().clone();
    let stats = &shared.stats;
    let ks = &shared.keyspace;
    let mut s = String::new();
    let mut line = |k: &str, v: &dyn std::fmt::Display| {
        let _ = write!(s, "{k}:{v}\r\n");
    };
    let title = match name {
        "server" => {
            line("redis_version", &REDIS_VERSION);
            line("redis_git_sha1", &"00000000");
            line("redis_git_dirty", &0);
            line("redis_build_id", &"0");
            line(
                "redis_mode",
                &crate::cluster::mode_name(shared.cluster.as_ref()),
            );
            line("os", &std::env::consts::OS);
            line("arch_bits", &64);
            line("multiplexing_api", &"tokio");
            line("process_id", &std::process::id());
            line("process_supervised", &"no");
            line("run_id", &shared.run_id);
            // The TLS port when there is no plain one, as Redis shows it.
            let port = match config.port {
                0 => config.tls_port.unwrap_or(0),
                port => port,
            };
            line("tcp_port", &port);
            line("server_time_usec", &ks.clock().now_us());
            line("uptime_in_seconds", &uptime);
            line("uptime_in_days", &(uptime / 86400));
            line("hz", &config.hz);
            line("configured_hz", &config.hz);
            line("executable", &"rlockd");
            let file = config.config_file.as_deref().map(std::path::Path::display);
            line(
                "config_file",
                &file.map_or(String::new(), |f| f.to_string()),
            );
            line("io_threads_active", &0);
            line("rlockd_version", &env!("CARGO_PKG_VERSION"));
            "Server"
        }
        "clients" => {
            line("connected_clients", &shared.clients.len());
            line("cluster_connections", &0);
            line("maxclients", &config.maxclients);
            line("client_recent_max_input_buffer", &0);
            line("client_recent_max_output_buffer", &0);
            let blocked = shared
                .clients
                .iter()
                .filter(|c| c.info.lock().counts_as_blocked())
                .count();
            line("blocked_clients", &blocked);
            line("tracking_clients", &shared.pubsub.tracking.counts().0);
            line("clients_in_timeout_table", &0);
            "Clients"
        }
        "memory" => {
            let MemoryNow { used, peak, rss } = memory_now();
            line("used_memory", &used);
            line("used_memory_human", &human_bytes(used));
            line("used_memory_rss", &rss);
            line("used_memory_rss_human", &human_bytes(rss));
            line("used_memory_peak", &peak);
            let lua = shared.scripts.lua_memory();
            line("used_memory_lua", &lua);
            line("used_memory_lua_human", &human_bytes(lua as u64));
            let (scripts, script_bytes) = shared.scripts.cached();
            line("number_of_cached_scripts", &scripts);
            line("used_memory_scripts", &script_bytes);
            line("maxmemory", &config.maxmemory);
            line("maxmemory_human", &human_bytes(config.maxmemory));
            line("maxmemory_policy", &config.maxmemory_policy);
            line(
                "mem_fragmentation_ratio",
                &format!("{:.2}", rss as f64 / used.max(1) as f64),
            );
            line("mem_fragmentation_bytes", &0);
            line("mem_not_counted_for_evict", &0);
            line("mem_clients_normal", &0);
            line("mem_allocator", &"libc");
            line("active_defrag_running", &0);
            line("lazyfree_pending_objects", &0);
            "Memory"
        }
        "persistence" => {
            let aof = shared.keyspace.log();
            let state = &shared.persistence;
            // A server refusing writes through its restart grace period
            // says it is loading, as its LOADING replies do.
            let loading = shared.snapshots.loading() || state.in_grace(|| shared.now_ms());
            line("loading", &u8::from(loading));
            line("async_loading", &u8::from(shared.snapshots.async_loading()));
            let snapshots = &shared.snapshots;
            // A capture's keys set aside stand for a fork's copied pages;
            // the figure only grows during a save, so its peak is itself.
            let progress = snapshots.progress();
            line("current_cow_peak", &progress.aside_bytes);
            line("current_cow_size", &progress.aside_bytes);
            line("current_cow_size_age", &0);
            let perc = match progress.keys_total {
                0 => 0.0,
                total => progress.keys_saved as f64 * 100.0 / total as f64,
            };
            line("current_fork_perc", &format!("{perc:.2}"));
            line("current_save_keys_processed", &progress.keys_saved);
            line("current_save_keys_total", &progress.keys_total);
            line(
                "rdb_changes_since_last_save",
                &snapshots.changes_since(facts.totals.dirty),
            );
            line("rdb_bgsave_in_progress", &u8::from(snapshots.in_progress()));
            line("rdb_last_save_time", &snapshots.last_save());
            let ok = |b: bool| if b { "ok" } else { "err" };
            let saves = snapshots.saves();
            line("rdb_last_bgsave_status", &ok(saves.last_ok()));
            line("rdb_last_bgsave_time_sec", &saves.last_secs());
            line("rdb_current_bgsave_time_sec", &saves.current_secs());
            line("rdb_saves", &snapshots.saves_started());
            let (rdb_aside, aof_aside) = snapshots.last_aside();
            line("rdb_last_cow_size", &rdb_aside);
            let (loaded, expired) = snapshots.last_load();
            line("rdb_last_load_keys_expired", &expired);
            line("rdb_last_load_keys_loaded", &loaded);
            line("aof_enabled", &u8::from(aof.is_some()));
            // A rewrite waiting for a BGSAVE to end is scheduled, as
            // Redis's waits for its child.
            let scheduled = snapshots.rewrite_waits();
            line(
                "aof_rewrite_in_progress",
                &u8::from(state.rewrite_in_progress() && !scheduled),
            );
            line("aof_rewrite_scheduled", &u8::from(scheduled));
            let rewrites = state.rewrites();
            line("aof_last_rewrite_time_sec", &rewrites.last_secs());
            line("aof_current_rewrite_time_sec", &rewrites.current_secs());
            line("aof_last_bgrewrite_status", &ok(rewrites.last_ok()));
            line("aof_rewrites", &rewrites.started_count());
            line(
                "aof_rewrites_consecutive_failures",
                &rewrites.failures_in_a_row(),
            );
            line(
                "aof_last_write_status",
                &ok(aof.as_ref().is_none_or(|a| a.last_write_ok())),
            );
            line("aof_last_cow_size", &aof_aside);
            line("module_fork_in_progress", &0);
            line("module_fork_last_cow_size", &0);
            if let Some(aof) = &aof {
                let (current, base) = aof.sizes();
                line("aof_current_size", &current);
                line("aof_base_size", &base);
                line("aof_pending_rewrite", &u8::from(scheduled));
                line("aof_buffer_length", &0);
                line("aof_pending_bio_fsync", &0);
                line("aof_delayed_fsync", &0);
            }
            "Persistence"
        }
        "stats" => {
            line(
                "total_connections_received",
                &stats.connections_received.load(Ordering::Relaxed),
            );
            line("total_commands_processed", &stats.commands_processed());
            line("instantaneous_ops_per_sec", &0);
            line("total_net_input_bytes", &stats.net_input_bytes());
            line("total_net_output_bytes", &stats.net_output_bytes());
            line(
                "rejected_connections",
                &stats.rejected_connections.load(Ordering::Relaxed),
            );
            let syncs = &shared.replicas;
            line("sync_full", &syncs.sync_full.load(Ordering::Relaxed));
            line(
                "sync_partial_ok",
                &syncs.sync_partial_ok.load(Ordering::Relaxed),
            );
            line(
                "sync_partial_err",
                &syncs.sync_partial_err.load(Ordering::Relaxed),
            );
            line("expired_keys", &facts.totals.expired);
            // Expiry never scans for stale keys (the wheel files each one).
            line("expired_stale_perc", &"0.00");
            line("expired_time_cap_reached_count", &0);
            line("evicted_keys", &0);
            line("evicted_clients", &0);
            line("latest_fork_usec", &0);
            line("total_forks", &0);
            line("migrate_cached_sockets", &0);
            line("slave_expires_tracked_keys", &0);
            line("active_defrag_hits", &0);
            line("active_defrag_misses", &0);
            line("active_defrag_key_hits", &0);
            line("active_defrag_key_misses", &0);
            line("keyspace_hits", &facts.totals.hits);
            line("keyspace_misses", &facts.totals.misses);
            line("total_error_replies", &stats.errors().values().sum::<u64>());
            let pubsub = &shared.pubsub;
            line("pubsub_channels", &pubsub.channel_count(Kind::Channel));
            line("pubsub_patterns", &pubsub.numpat());
            line("pubsubshard_channels", &pubsub.channel_count(Kind::Shard));
            let (_, keys, items, prefixes) = pubsub.tracking.counts();
            line("tracking_total_keys", &keys);
            line("tracking_total_items", &items);
            line("tracking_total_prefixes", &prefixes);
            "Stats"
        }
        "replication" => {
            crate::context::replica::info(shared, &mut line);
            "Replication"
        }
        "cpu" => {
            let (user, sys) = cpu_seconds();
            line("used_cpu_sys", &format!("{sys:.6}"));
            line("used_cpu_user", &format!("{user:.6}"));
            line("used_cpu_sys_children", &"0.000000");
            line("used_cpu_user_children", &"0.000000");
            "CPU"
        }
        "modules" => "Modules",
        // Per-command latency percentiles are not tracked.
        "latencystats" => "Latencystats",
        "errorstats" => {
            for (code, count) in stats.errors() {
                line(&format!("errorstat_{code}"), &format!("count={count}"));
            }
            "Errorstats"
        }
        "cluster" => {
            line("cluster_enabled", &u8::from(shared.cluster.is_some()));
            "Cluster"
        }
        "keyspace" => {
            for (db, &(keys, expires)) in facts.dbs.iter().enumerate() {
                if keys > 0 {
                    line(
                        &format!("db{db}"),
                        &format!("keys={keys},expires={expires},avg_ttl=0"),
                    );
                }
            }
            "Keyspace"
        }
        "commandstats" => {
            for (id, stat) in stats.commands() {
                let (calls, rejected, usec) = (stat.calls, stat.rejected, stat.usec);
                if calls == 0 && rejected == 0 {
                    continue;
                }
                let per_call = if calls == 0 {
                    0.0
                } else {
                    usec as f64 / calls as f64
                };
                line(
                    &format!("cmdstat_{}", registry().full_names[id]),
                    &format!(
                        "calls={calls},usec={usec},usec_per_call={per_call:.2},rejected_calls={rejected},failed_calls={}",
                        stat.failed
                    ),
                );
            }
            "Commandstats"
        }
        _ => return None,
    };
    Some(format!("# {title}\r\n{s}"))
}

/// SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]: saves (SAVE, or
/// `save` points without NOSAVE) and stops the server gracefully, as
/// SIGTERM does; the caller gets no reply, only the close. A failed save
/// keeps the server up, unless FORCE.
pub fn shutdown(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (mut save, mut nosave, mut abort, mut other) = (false, false, false, false);
    let mut force = false;
    for arg in &ctx.args[1..] {
        match arg.to_ascii_lowercase().as_slice() {
            b"save" => save = true,
            b"nosave" => nosave = true,
            b"abort" => abort = true,
            b"force" => (force, other) = (true, true),
            b"now" => other = true,
            _ => return Err(CmdError::Syntax),
        }
    }
    if (abort && (save || nosave || other)) || (save && nosave) {
        return Err(CmdError::Syntax);
    }
    if abort {
        // A shutdown here never waits on anything, so none is in progress.
        return Err(CmdError::other("ERR No shutdown in progress."));
    }
    tracing::warn!("SHUTDOWN requested by client {}", ctx.client.id);
    let mode = if save {
        ShutdownSave::Save
    } else if nosave {
        ShutdownSave::NoSave
    } else {
        ShutdownSave::Configured
    };
    if !snapshot::save_on_shutdown(ctx.shared, Some(mode)) && !force {
        ctx.shared.snapshots.set_shutdown(ShutdownSave::Configured);
        return Err(CmdError::other(
            "ERR Errors trying to SHUTDOWN. Check logs.",
        ));
    }
    ctx.shared.stop();
    ctx.client.close_silently = true;
    Ok(Reply::OK)
}

static CONFIG_SUBS: &[CommandSpec] = &[
    CommandSpec::new("get", -3, Group::Server, config_get)
        .flags(ADMIN | CONN)
        .syntax("(parameter)...")
        .doc(
            "2.0.0",
            "Returns the values of settings matching the given patterns.",
        ),
    CommandSpec::new("set", -4, Group::Server, config_set)
        .flags(ADMIN | CONN)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .syntax("(parameter value)...")
        .doc("2.0.0", "Changes settings at run time."),
    CommandSpec::new("resetstat", 2, Group::Server, config_resetstat)
        .flags(ADMIN | CONN)
        .doc("2.0.0", "Zeroes the statistics INFO reports."),
    CommandSpec::new("rewrite", 2, Group::Server, config_rewrite)
        .flags(ADMIN | CONN)
        .doc(
            "2.8.0",
            "Would rewrite the config file; rlockd has none to rewrite.",
        ),
    CommandSpec::new("help", 2, Group::Server, config_help)
        .flags(LOADING | STALE)
        .doc("5.0.0", "Lists the CONFIG subcommands."),
];

static COMMAND_SUBS: &[CommandSpec] = &[
    CommandSpec::new("count", 2, Group::Server, command_count)
        .flags(LOADING | STALE)
        .acl(CONNECTION)
        .doc("2.8.13", "Returns how many commands the server knows."),
    CommandSpec::new("info", -2, Group::Server, command_info)
        .flags(LOADING | STALE)
        .acl(CONNECTION)
        .tips(NONDET_ORDER)
        .syntax("[command-name...]")
        .doc("2.8.13", "Describes the given commands, or all of them."),
    CommandSpec::new("docs", -2, Group::Server, command_docs)
        .flags(LOADING | STALE)
        .acl(CONNECTION)
        .tips(NONDET_ORDER)
        .syntax("[command-name...]")
        .doc("7.0.0", "Documents the given commands, or all of them."),
    CommandSpec::new("getkeys", -4, Group::Server, command_getkeys)
        .flags(LOADING | STALE)
        .acl(CONNECTION)
        .syntax("command arg...")
        .doc("2.8.13", "Extracts the key names from a full command line."),
    CommandSpec::new(
        "getkeysandflags",
        -4,
        Group::Server,
        command_getkeysandflags,
    )
    .flags(LOADING | STALE)
    .acl(CONNECTION)
    .syntax("command arg...")
    .doc(
        "7.0.0",
        "Extracts the key names and their access flags from a full command line.",
    ),
    CommandSpec::new("list", -2, Group::Server, command_list)
        .flags(LOADING | STALE)
        .acl(CONNECTION)
        .tips(NONDET_ORDER)
        .syntax("[FILTERBY (MODULE module-name | ACLCAT category | PATTERN pattern)]")
        .doc("7.0.0", "Lists command names."),
    CommandSpec::new("help", 2, Group::Server, command_help)
        .flags(LOADING | STALE)
        .acl(CONNECTION)
        .doc("5.0.0", "Lists the COMMAND subcommands."),
];

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::container("command", Group::Server, COMMAND_SUBS)
        .runs_bare(command_all)
        .flags(LOADING | STALE)
        .acl(CONNECTION)
        .tips(NONDET_ORDER)
        .doc("2.8.13", "Describes every command the server knows."),
    CommandSpec::new("info", -1, Group::Server, info)
        .flags(LOADING | STALE | WHOLE_KEYSPACE)
        .acl(DANGEROUS)
        .tips(ALL_SHARDS_SPECIAL)
        .syntax("[section...]")
        .doc(
            "1.0.0",
            "Reports the server's state and statistics, by section.",
        ),
    CommandSpec::container("config", Group::Server, CONFIG_SUBS)
        .doc("2.0.0", "Reads and changes settings."),
    CommandSpec::new("dbsize", 1, Group::Server, dbsize)
        .flags(READ_FAST | WHOLE_KEYSPACE)
        .acl(KEYSPACE)
        .tips(&["request_policy:all_shards", "response_policy:agg_sum"])
        .doc(
            "1.0.0",
            "Returns the number of keys in the selected database.",
        ),
    CommandSpec::new("flushdb", -1, Group::Server, flushdb)
        .flags(WRITE | WHOLE_KEYSPACE)
        .acl(KEYSPACE | DANGEROUS)
        .tips(ALL_SHARDS_OK)
        .syntax("[ASYNC | SYNC]")
        .doc("1.0.0", "Deletes every key of the selected database."),
    CommandSpec::new("flushall", -1, Group::Server, flushall)
        .flags(WRITE | WHOLE_KEYSPACE)
        .acl(KEYSPACE | DANGEROUS)
        .tips(ALL_SHARDS_OK)
        .syntax("[ASYNC | SYNC]")
        .doc("1.0.0", "Deletes every key of every database."),
    CommandSpec::new("time", 1, Group::Server, time)
        .flags(LOADING | STALE | FAST)
        .tips(NONDET)
        .doc(
            "2.6.0",
            "Returns the server time: seconds and microseconds.",
        ),
    CommandSpec::new("bgrewriteaof", 1, Group::Server, bgrewriteaof)
        .flags(ADMIN | NOSCRIPT | NO_ASYNC_LOADING)
        .acl(acl::ADMIN | DANGEROUS)
        .doc(
            "1.0.0",
            "Asynchronously rewrites the append-only file to disk.",
        ),
    CommandSpec::new("lastsave", 1, Group::Server, lastsave)
        .flags(LOADING | STALE | FAST)
        .acl(acl::ADMIN | DANGEROUS)
        .tips(NONDET)
        .doc(
            "1.0.0",
            "Returns the Unix timestamp of the last successful save to disk.",
        ),
    CommandSpec::new("save", 1, Group::Server, save)
        .flags(ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI)
        .acl(acl::ADMIN | DANGEROUS)
        .doc("1.0.0", "Synchronously saves the database(s) to disk."),
    CommandSpec::new("bgsave", -1, Group::Server, bgsave)
        .flags(ADMIN | NOSCRIPT | NO_ASYNC_LOADING)
        .acl(acl::ADMIN | DANGEROUS)
        .syntax("[SCHEDULE]")
        .doc("1.0.0", "Asynchronously saves the database(s) to disk."),
    CommandSpec::new("shutdown", -1, Group::Server, shutdown)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | ALLOW_BUSY)
        .syntax("[NOSAVE | SAVE] [NOW] [FORCE] [ABORT]")
        .doc(
            "1.0.0",
            "Synchronously saves the database(s) to disk and shuts down the Redis server.",
        ),
];
