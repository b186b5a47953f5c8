//! FUNCTION (libraries of named Lua functions) and FCALL / FCALL_RO.

use bytes::Bytes;

use super::run::{self, Code, Mode};
use super::{flush_mode, split_keys};
use std::sync::Arc;

use crate::command::Ctx;
use crate::command::reply::help_reply;
use crate::context::Shared;
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;
use crate::scripting::Runner;
use crate::scripting::functions::{Collision, Library, RestorePolicy, dump, undump};
use crate::scripting::shebang::ScriptFlags;
use crate::util::glob_match;

/// The library holding function `wanted`, and the function's own name
/// and flags.
fn find_function(shared: &Shared, wanted: &str) -> Option<(Arc<Library>, String, ScriptFlags)> {
    let library = shared.scripts.libraries.read().find(wanted)?;
    let function = library
        .functions
        .iter()
        .find(|f| f.name.eq_ignore_ascii_case(wanted))?;
    let (name, flags) = (function.name.clone(), function.flags);
    Some((library, name, flags))
}

/// The flags function `name` was registered with, if it exists.
pub(super) fn function_flags(shared: &Shared, name: &str) -> Option<ScriptFlags> {
    find_function(shared, name).map(|(_, _, flags)| flags)
}

fn fcall_generic(ctx: &mut Ctx, readonly: bool) -> CmdResult<Reply> {
    let args = ctx.args;
    let (keys, argv) = split_keys(args, CmdError::other("ERR Bad number of keys provided"))?;
    let wanted = String::from_utf8_lossy(&args[1]);
    let (library, name, flags) =
        find_function(ctx.shared, &wanted).ok_or(CmdError::FunctionNotFound)?;
    let mode = Mode::new(ctx, readonly, Some(flags))?;
    run::run(
        ctx,
        Code::Function {
            library,
            name: &name,
        },
        keys,
        argv,
        mode,
    )
}

pub fn fcall(ctx: &mut Ctx) -> CmdResult<Reply> {
    fcall_generic(ctx, false)
}

pub fn fcall_ro(ctx: &mut Ctx) -> CmdResult<Reply> {
    fcall_generic(ctx, true)
}

/// FUNCTION LOAD quotes a library's name; RESTORE does not.
fn collision(taken: Collision, quote: &str) -> CmdError {
    CmdError::Other(match taken {
        Collision::Library(name) => format!("ERR Library {quote}{name}{quote} already exists"),
        Collision::Function(name) => format!("ERR Function {name} already exists"),
    })
}

fn heap_limit(ctx: &Ctx) -> usize {
    ctx.shared.config.read().lua_heap_limit as usize
}

pub fn function_load(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (replace, code) = match ctx.args.len() {
        3 => (false, &ctx.args[2]),
        4 if ctx.args[2].eq_ignore_ascii_case(b"replace") => (true, &ctx.args[3]),
        4 => {
            return Err(CmdError::Other(format!(
                "ERR Unknown option given: {}",
                String::from_utf8_lossy(&ctx.args[2])
            )));
        }
        _ => {
            return Err(CmdError::other(
                "ERR Unknown option given: too many arguments",
            ));
        }
    };
    let engine = &ctx.shared.scripts;
    let library = engine.prepare_library(code.clone(), heap_limit(ctx))?;
    let name = library.name.clone();
    engine
        .libraries
        .write()
        .add(vec![library], replace)
        .map_err(|c| collision(c, "'"))?;
    propagate(ctx);
    Ok(Reply::bulk(name))
}

/// A change to the libraries goes to replicas as it came, as Redis sends
/// it (the calls' writes go as their effects).
fn propagate(ctx: &Ctx) {
    let args: Vec<&[u8]> = ctx.args.iter().map(|a| &a[..]).collect();
    ctx.shared
        .replica
        .backlog
        .command(Some(ctx.client.db), &args);
}

pub fn function_delete(ctx: &mut Ctx) -> CmdResult<Reply> {
    let name = String::from_utf8_lossy(&ctx.args[2]);
    ctx.shared.scripts.libraries.write().delete(&name)?;
    propagate(ctx);
    Ok(Reply::OK)
}

/// What Redis answers a FUNCTION subcommand given too many arguments.
fn function_sub_arity(ctx: &Ctx) -> CmdError {
    CmdError::Other(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.",
        String::from_utf8_lossy(&ctx.args[1])
    ))
}

pub fn function_flush(ctx: &mut Ctx) -> CmdResult<Reply> {
    if ctx.args.len() > 3 {
        return Err(function_sub_arity(ctx));
    }
    flush_mode(
        ctx.args.get(2),
        "ERR FUNCTION FLUSH only supports SYNC|ASYNC option",
    )?;
    ctx.shared.scripts.libraries.write().clear();
    propagate(ctx);
    Ok(Reply::OK)
}

pub fn function_list(ctx: &mut Ctx) -> CmdResult<Reply> {
    let mut with_code = false;
    let mut pattern: Option<&Bytes> = None;
    let mut rest = ctx.args[2..].iter();
    while let Some(arg) = rest.next() {
        if arg.eq_ignore_ascii_case(b"withcode") && !with_code {
            with_code = true;
        } else if arg.eq_ignore_ascii_case(b"libraryname") && pattern.is_none() {
            pattern = Some(
                rest.next()
                    .ok_or_else(|| CmdError::other("ERR library name argument was not given"))?,
            );
        } else {
            return Err(CmdError::Other(format!(
                "ERR Unknown argument {}",
                String::from_utf8_lossy(arg)
            )));
        }
    }
    let libraries = ctx.shared.scripts.libraries.read();
    let listed = libraries
        .libraries()
        .filter(|l| pattern.is_none_or(|p| glob_match(p, l.name.as_bytes(), true)))
        .map(|library| {
            let functions = library
                .functions
                .iter()
                .map(|f| {
                    Reply::Map(vec![
                        (Reply::bulk_str("name"), Reply::bulk(f.name.clone())),
                        (
                            Reply::bulk_str("description"),
                            f.description.clone().map_or(Reply::Nil, Reply::bulk),
                        ),
                        (
                            Reply::bulk_str("flags"),
                            Reply::Set(f.flags.names().map(Reply::status).collect()),
                        ),
                    ])
                })
                .collect();
            let mut fields = vec![
                (
                    Reply::bulk_str("library_name"),
                    Reply::bulk(library.name.clone()),
                ),
                (Reply::bulk_str("engine"), Reply::bulk_str("LUA")),
                (Reply::bulk_str("functions"), Reply::Array(functions)),
            ];
            if with_code {
                fields.push((
                    Reply::bulk_str("library_code"),
                    Reply::Bulk(library.code.clone()),
                ));
            }
            Reply::Map(fields)
        })
        .collect();
    Ok(Reply::Array(listed))
}

pub fn function_dump(ctx: &mut Ctx) -> CmdResult<Reply> {
    let libraries = ctx.shared.scripts.libraries.read();
    Ok(Reply::Bulk(dump(libraries.libraries()).into()))
}

pub fn function_restore(ctx: &mut Ctx) -> CmdResult<Reply> {
    // Too many arguments is reported before a bad policy, as in Redis.
    if ctx.args.len() > 4 {
        return Err(function_sub_arity(ctx));
    }
    let policy = match ctx.args.get(3).map(|p| p.to_ascii_uppercase()).as_deref() {
        None | Some(b"APPEND") => RestorePolicy::Append,
        Some(b"FLUSH") => RestorePolicy::Flush,
        Some(b"REPLACE") => RestorePolicy::Replace,
        Some(_) => {
            return Err(CmdError::other(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            ));
        }
    };
    let engine = &ctx.shared.scripts;
    let heap = heap_limit(ctx);
    let libraries = undump(&ctx.args[2])?
        .into_iter()
        .map(|code| engine.prepare_library(code, heap))
        .collect::<CmdResult<Vec<_>>>()?;
    let mut all = engine.libraries.write();
    if policy == RestorePolicy::Flush {
        all.clear();
    }
    all.add(libraries, policy == RestorePolicy::Replace)
        .map_err(|c| collision(c, ""))?;
    propagate(ctx);
    Ok(Reply::OK)
}

pub fn function_stats(ctx: &mut Ctx) -> CmdResult<Reply> {
    let engine = &ctx.shared.scripts;
    let running = engine.busy_function()?.map_or(Reply::Nil, |f| {
        Reply::Map(vec![
            (Reply::bulk_str("name"), Reply::bulk(f.name)),
            (
                Reply::bulk_str("command"),
                Reply::Array(f.command.into_iter().map(Reply::Bulk).collect()),
            ),
            (
                Reply::bulk_str("duration_ms"),
                Reply::Int(f.duration_ms as i64),
            ),
        ])
    });
    let (libraries, functions) = engine.libraries.read().counts();
    Ok(Reply::Map(vec![
        (Reply::bulk_str("running_script"), running),
        (
            Reply::bulk_str("engines"),
            Reply::Map(vec![(
                Reply::bulk_str("LUA"),
                Reply::Map(vec![
                    (
                        Reply::bulk_str("libraries_count"),
                        Reply::Int(libraries as i64),
                    ),
                    (
                        Reply::bulk_str("functions_count"),
                        Reply::Int(functions as i64),
                    ),
                ]),
            )]),
        ),
    ]))
}

pub fn function_kill(ctx: &mut Ctx) -> CmdResult<Reply> {
    let rollback_writes = ctx.shared.config.read().script_kill_rollback;
    ctx.shared.scripts.kill(rollback_writes, Runner::Function)?;
    Ok(Reply::OK)
}

pub fn function_help(_ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(help_reply(
        "FUNCTION",
        &[
            "LOAD [REPLACE] <FUNCTION CODE>",
            "    Create a new library with the given library name and code.",
            "DELETE <LIBRARY NAME>",
            "    Delete the given library.",
            "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
            "    Return general information on all the libraries:",
            "    * Library name",
            "    * The engine used to run the Library",
            "    * Library description",
            "    * Functions list",
            "    * Library code (if WITHCODE is given)",
            "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
            "STATS",
            "    Return information about the current function running:",
            "    * Function name",
            "    * Command used to run the function",
            "    * Duration in MS that the function is running",
            "    If no function is running, return nil",
            "    In addition, returns a list of available engines.",
            "KILL",
            "    Kill the current running function.",
            "FLUSH [ASYNC|SYNC]",
            "    Delete all the libraries.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the libraries.",
            "    * SYNC: Synchronously flush the libraries.",
            "DUMP",
            "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
            "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
            "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
            "    control how to handle existing libraries (default APPEND):",
            "    * FLUSH: delete all existing libraries.",
            "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
            "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
            "      libraries with the new libraries (notice that even on this option there is a chance of failure",
            "      in case of functions name collision with another library).",
        ],
    ))
}
