//! Scripting commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT; and
//! FUNCTION, FCALL, FCALL_RO (in `functions`).

mod functions;
mod native;
mod run;

pub use functions::*;

use std::borrow::Cow;

use bytes::Bytes;

use super::Ctx;
use super::presets::{NONDET_ORDER, RO_ACCESS, RW_ACCESS_UPDATE};
use super::reply::help_reply;
use super::spec::acl::SCRIPTING;
use super::spec::flag::{
    ALLOW_BUSY, DENYOOM, LOADING, MAY_REPLICATE, NO_MANDATORY_KEYS, NOSCRIPT, READONLY, SCRIPT,
    SKIP_MONITOR, STALE, WRITE,
};
use super::spec::{CommandSpec, Group, KeySpec, ScriptTarget};
use crate::context::Shared;
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;
use crate::scripting::Runner;
use crate::scripting::shebang::{self, Declared, ScriptFlags};
use crate::util::parse_i64;
use run::{Code, Mode};

/// Where the script comes from: its text, or the SHA1 of a cached one.
#[derive(Clone, Copy)]
enum Source {
    Body,
    Sha,
}

/// The flags a script or function call declares (its shebang, or the
/// function's registration), as Redis reads them before running a command:
/// they replace the command's own write flags. `None`: nothing declared,
/// or not a script call.
pub fn declared_flags(shared: &Shared, spec: &CommandSpec, args: &[Bytes]) -> Option<ScriptFlags> {
    let target = args.get(1)?;
    let body = match spec.script_target? {
        ScriptTarget::Body => target.clone(),
        ScriptTarget::Sha => shared
            .scripts
            .body(&String::from_utf8_lossy(target).to_ascii_lowercase())?,
        ScriptTarget::Function => {
            return function_flags(shared, &String::from_utf8_lossy(target));
        }
    };
    match shebang::script_flags(&body) {
        Ok(Declared::Flags(flags)) => Some(flags),
        _ => None,
    }
}

fn noscript() -> CmdError {
    CmdError::other("NOSCRIPT No matching script. Please use EVAL.")
}

/// The keys and the arguments after `<script or function> <numkeys>`;
/// `not_a_number` is the error for a numkeys that is not an integer.
fn split_keys(args: &[Bytes], not_a_number: CmdError) -> CmdResult<(&[Bytes], &[Bytes])> {
    let numkeys = parse_i64(&args[2]).ok_or(not_a_number)?;
    if numkeys < 0 {
        return Err(CmdError::other("ERR Number of keys can't be negative"));
    }
    if numkeys as usize > args.len() - 3 {
        return Err(CmdError::other(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    Ok(args[3..].split_at(numkeys as usize))
}

fn eval_generic(ctx: &mut Ctx, source: Source, readonly: bool) -> CmdResult<Reply> {
    let args = ctx.args;
    let (keys, argv) = split_keys(args, CmdError::NotInteger)?;
    let engine = &ctx.shared.scripts;
    let (sha, body): (Cow<str>, Bytes) = match source {
        Source::Body => (Cow::Owned(engine.load(&args[1])), args[1].clone()),
        Source::Sha => {
            // Clients send the lowercase hex SCRIPT LOAD gave them.
            let sha = match std::str::from_utf8(&args[1]) {
                Ok(sha) if !sha.bytes().any(|b| b.is_ascii_uppercase()) => Cow::Borrowed(sha),
                _ => Cow::Owned(String::from_utf8_lossy(&args[1]).to_ascii_lowercase()),
            };
            let body = engine.body(&sha).ok_or_else(noscript)?;
            (sha, body)
        }
    };
    let flags = match shebang::script_flags(&body)? {
        Declared::Nothing => None,
        Declared::Flags(flags) => Some(flags),
    };
    let mode = Mode::new(ctx, readonly, flags)?;
    run::run(
        ctx,
        Code::Script {
            sha: &sha,
            body: &body,
        },
        keys,
        argv,
        mode,
    )
}

pub fn eval(ctx: &mut Ctx) -> CmdResult<Reply> {
    eval_generic(ctx, Source::Body, false)
}

pub fn evalsha(ctx: &mut Ctx) -> CmdResult<Reply> {
    eval_generic(ctx, Source::Sha, false)
}

pub fn eval_ro(ctx: &mut Ctx) -> CmdResult<Reply> {
    eval_generic(ctx, Source::Body, true)
}

pub fn evalsha_ro(ctx: &mut Ctx) -> CmdResult<Reply> {
    eval_generic(ctx, Source::Sha, true)
}

pub fn script_load(ctx: &mut Ctx) -> CmdResult<Reply> {
    let body = ctx.arg(2).clone();
    ctx.shared.scripts.check(&body)?;
    Ok(Reply::bulk(ctx.shared.scripts.load(&body)))
}

pub fn script_exists(ctx: &mut Ctx) -> CmdResult<Reply> {
    let engine = &ctx.shared.scripts;
    Ok(Reply::Array(
        ctx.args[2..]
            .iter()
            .map(|sha| {
                let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
                Reply::Int(engine.exists(&sha) as i64)
            })
            .collect(),
    ))
}

/// SCRIPT FLUSH's and FUNCTION FLUSH's optional mode; both flush at once
/// either way.
fn flush_mode(mode: Option<&Bytes>, error: &'static str) -> CmdResult<()> {
    match mode {
        None => Ok(()),
        Some(m) if m.eq_ignore_ascii_case(b"SYNC") || m.eq_ignore_ascii_case(b"ASYNC") => Ok(()),
        Some(_) => Err(CmdError::other(error)),
    }
}

pub fn script_flush(ctx: &mut Ctx) -> CmdResult<Reply> {
    flush_mode(
        ctx.args.get(2),
        "ERR SCRIPT FLUSH only support SYNC|ASYNC option",
    )?;
    ctx.shared.scripts.flush();
    Ok(Reply::OK)
}

pub fn script_kill(ctx: &mut Ctx) -> CmdResult<Reply> {
    let rollback_writes = ctx.shared.config.read().script_kill_rollback;
    ctx.shared.scripts.kill(rollback_writes, Runner::Script)?;
    Ok(Reply::OK)
}

pub fn script_help(_ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(help_reply(
        "SCRIPT",
        &[
            "EXISTS <sha1> [<sha1> ...]",
            "    Return information about the existence of the scripts in the script cache.",
            "FLUSH [ASYNC|SYNC]",
            "    Flush the Lua scripts cache.",
            "KILL",
            "    Kill the currently executing Lua script.",
            "LOAD <script>",
            "    Load a script into the scripts cache without executing it.",
        ],
    ))
}

const SCRIPT_KEYS_RW: &[KeySpec] = &[KeySpec::keynum(2, RW_ACCESS_UPDATE)];

const SCRIPT_KEYS_RO: &[KeySpec] = &[KeySpec::keynum(2, RO_ACCESS)];

const EVAL_FLAGS: u32 = NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | SCRIPT;

const ALL_SHARDS_ALL: &[&str] = &["request_policy:all_shards", "response_policy:all_succeeded"];

static FUNCTION_SUBS: &[CommandSpec] = &[
    CommandSpec::new("delete", 3, Group::Scripting, function_delete)
        .flags(WRITE | NOSCRIPT)
        .acl(SCRIPTING)
        .tips(ALL_SHARDS_ALL)
        .syntax("library-name")
        .doc("7.0.0", "Deletes a library and its functions."),
    CommandSpec::new("dump", 2, Group::Scripting, function_dump)
        .flags(NOSCRIPT)
        .acl(SCRIPTING)
        .doc(
            "7.0.0",
            "Returns every library as one payload for FUNCTION RESTORE.",
        ),
    CommandSpec::new("flush", -2, Group::Scripting, function_flush)
        .flags(WRITE | NOSCRIPT)
        .acl(SCRIPTING)
        .tips(ALL_SHARDS_ALL)
        .syntax("[ASYNC | SYNC]")
        .doc("7.0.0", "Deletes every library."),
    CommandSpec::new("help", 2, Group::Scripting, function_help)
        .flags(LOADING | STALE)
        .acl(SCRIPTING)
        .doc("7.0.0", "Lists the FUNCTION subcommands."),
    CommandSpec::new("kill", 2, Group::Scripting, function_kill)
        .flags(NOSCRIPT | ALLOW_BUSY)
        .acl(SCRIPTING)
        .tips(&["request_policy:all_shards", "response_policy:one_succeeded"])
        .doc(
            "7.0.0",
            "Stops a function running past the busy threshold, if it has not written.",
        ),
    CommandSpec::new("list", -2, Group::Scripting, function_list)
        .flags(NOSCRIPT)
        .acl(SCRIPTING)
        .tips(NONDET_ORDER)
        .syntax("[LIBRARYNAME library-name-pattern] [WITHCODE]")
        .doc(
            "7.0.0",
            "Lists the libraries, their functions and optionally their code.",
        ),
    CommandSpec::new("load", -3, Group::Scripting, function_load)
        .flags(WRITE | DENYOOM | NOSCRIPT)
        .acl(SCRIPTING)
        .tips(ALL_SHARDS_ALL)
        .syntax("[REPLACE] function-code")
        .doc("7.0.0", "Loads a library of functions; returns its name."),
    CommandSpec::new("restore", -3, Group::Scripting, function_restore)
        .flags(WRITE | DENYOOM | NOSCRIPT)
        .acl(SCRIPTING)
        .tips(ALL_SHARDS_ALL)
        .syntax("serialized-value [FLUSH | APPEND | REPLACE]")
        .doc("7.0.0", "Loads the libraries of a FUNCTION DUMP payload."),
    CommandSpec::new("stats", 2, Group::Scripting, function_stats)
        .flags(NOSCRIPT | ALLOW_BUSY)
        .acl(SCRIPTING)
        .tips(&[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ])
        .doc(
            "7.0.0",
            "Tells which function is running past the busy threshold, and how many are loaded.",
        ),
];

static SCRIPT_SUBS: &[CommandSpec] = &[
    CommandSpec::new("load", 3, Group::Scripting, script_load)
        .flags(NOSCRIPT | STALE)
        .acl(SCRIPTING)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .syntax("script")
        .doc(
            "2.6.0",
            "Caches a script without running it; returns its SHA1.",
        ),
    CommandSpec::new("exists", -3, Group::Scripting, script_exists)
        .flags(NOSCRIPT)
        .acl(SCRIPTING)
        .tips(&[
            "request_policy:all_shards",
            "response_policy:agg_logical_and",
        ])
        .syntax("sha1...")
        .doc("2.6.0", "Tells which of the given SHA1s are cached."),
    CommandSpec::new("flush", -2, Group::Scripting, script_flush)
        .flags(NOSCRIPT)
        .acl(SCRIPTING)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .syntax("[ASYNC | SYNC]")
        .doc("2.6.0", "Empties the script cache."),
    CommandSpec::new("kill", 2, Group::Scripting, script_kill)
        .flags(NOSCRIPT | ALLOW_BUSY)
        .acl(SCRIPTING)
        .tips(&["request_policy:all_shards", "response_policy:one_succeeded"])
        .doc(
            "2.6.0",
            "Stops a script running past the busy threshold, if it has not written.",
        ),
    CommandSpec::new("help", 2, Group::Scripting, script_help)
        .flags(LOADING | STALE)
        .acl(SCRIPTING)
        .doc("5.0.0", "Lists the SCRIPT subcommands."),
];

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("eval", -3, Group::Scripting, eval)
        .script_target(ScriptTarget::Body)
        .flags(EVAL_FLAGS | MAY_REPLICATE)
        .acl(SCRIPTING)
        .keys(SCRIPT_KEYS_RW)
        .syntax("script numkeys [key [key ...]] [arg [arg ...]]")
        .doc("2.6.0", "Runs a Lua script atomically on its keys."),
    CommandSpec::new("evalsha", -3, Group::Scripting, evalsha)
        .script_target(ScriptTarget::Sha)
        .flags(EVAL_FLAGS | MAY_REPLICATE)
        .acl(SCRIPTING)
        .keys(SCRIPT_KEYS_RW)
        .syntax("sha1 numkeys [key [key ...]] [arg [arg ...]]")
        .doc("2.6.0", "Runs a cached Lua script by its SHA1."),
    CommandSpec::new("eval_ro", -3, Group::Scripting, eval_ro)
        .script_target(ScriptTarget::Body)
        .flags(READONLY | EVAL_FLAGS)
        .acl(SCRIPTING)
        .keys(SCRIPT_KEYS_RO)
        .syntax("script numkeys [key [key ...]] [arg [arg ...]]")
        .doc("7.0.0", "Runs a Lua script that may only read."),
    CommandSpec::new("evalsha_ro", -3, Group::Scripting, evalsha_ro)
        .script_target(ScriptTarget::Sha)
        .flags(READONLY | EVAL_FLAGS)
        .acl(SCRIPTING)
        .keys(SCRIPT_KEYS_RO)
        .syntax("sha1 numkeys [key [key ...]] [arg [arg ...]]")
        .doc("7.0.0", "Runs a cached Lua script that may only read."),
    CommandSpec::new("fcall", -3, Group::Scripting, fcall)
        .script_target(ScriptTarget::Function)
        .flags(NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | SCRIPT)
        .acl(SCRIPTING)
        .keys(SCRIPT_KEYS_RW)
        .syntax("function numkeys [key...] [arg...]")
        .doc("7.0.0", "Runs a function of a loaded library."),
    CommandSpec::new("fcall_ro", -3, Group::Scripting, fcall_ro)
        .script_target(ScriptTarget::Function)
        .flags(READONLY | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | SCRIPT)
        .acl(SCRIPTING)
        .keys(SCRIPT_KEYS_RO)
        .syntax("function numkeys [key...] [arg...]")
        .doc("7.0.0", "Runs a function declared no-writes."),
    CommandSpec::container("function", Group::Scripting, FUNCTION_SUBS)
        .doc("7.0.0", "Manages function libraries."),
    CommandSpec::container("script", Group::Scripting, SCRIPT_SUBS)
        .doc("2.6.0", "Manages the script cache."),
];
