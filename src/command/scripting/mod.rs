//! Scripting commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT.

mod native;
mod run;

use std::borrow::Cow;

use bytes::Bytes;

use super::Ctx;
use super::connection::help_reply;
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;
use crate::util::parse_i64;

/// Where the script comes from: its text, or the SHA1 of a cached one.
#[derive(Clone, Copy)]
enum Source {
    Body,
    Sha,
}

fn noscript() -> CmdError {
    CmdError::other("NOSCRIPT No matching script. Please use EVAL.")
}

fn eval_generic(ctx: &mut Ctx, source: Source, readonly: bool) -> CmdResult<Reply> {
    let args = ctx.args;
    let numkeys = parse_i64(&args[2]).ok_or(CmdError::NotInteger)?;
    if numkeys < 0 {
        return Err(CmdError::other("ERR Number of keys can't be negative"));
    }
    if numkeys as usize > args.len() - 3 {
        return Err(CmdError::other(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
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
    let split = 3 + numkeys as usize;
    let (keys, argv) = (&args[3..split], &args[split..]);
    run::run(ctx, &sha, &body, keys, argv, readonly)
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

pub fn script_flush(ctx: &mut Ctx) -> CmdResult<Reply> {
    match ctx.args.get(2).map(|m| m.to_ascii_uppercase()) {
        None => {}
        Some(mode) if &mode[..] == b"SYNC" || &mode[..] == b"ASYNC" => {}
        Some(_) => {
            return Err(CmdError::other(
                "ERR SCRIPT FLUSH only support SYNC|ASYNC option",
            ));
        }
    }
    ctx.shared.scripts.flush();
    Ok(Reply::OK)
}

pub fn script_kill(ctx: &mut Ctx) -> CmdResult<Reply> {
    let rollback_writes = ctx.shared.config.read().script_kill_rollback;
    ctx.shared.scripts.kill(rollback_writes)?;
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
