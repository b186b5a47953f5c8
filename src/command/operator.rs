//! The operator's tools: MONITOR, SLOWLOG, LATENCY, DEBUG, LOLWUT.

use super::Ctx;
use super::connection::help_reply;
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;
use crate::util::parse_i64;

pub fn monitor(ctx: &mut Ctx) -> CmdResult<Reply> {
    // EXEC expects one reply per command, which MONITOR's stream is not.
    if ctx.client.in_exec {
        return Err(CmdError::other(
            "ERR MONITOR isn't allowed for DENY BLOCKING client",
        ));
    }
    ctx.client.pubsub.monitor(&ctx.shared.pubsub);
    ctx.client.note_subscriptions();
    Ok(Reply::OK)
}

pub fn slowlog_get(ctx: &mut Ctx) -> CmdResult<Reply> {
    if ctx.args.len() > 3 {
        return Err(CmdError::other(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try SLOWLOG HELP.",
            String::from_utf8_lossy(ctx.arg(1))
        )));
    }
    let count = match ctx.args.get(2) {
        None => Some(10),
        Some(arg) => match parse_i64(arg) {
            Some(-1) => None,
            Some(n) if n >= 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            _ => {
                return Err(CmdError::other(
                    "ERR count should be greater than or equal to -1",
                ));
            }
        },
    };
    Ok(ctx.shared.slowlog.newest(count))
}

pub fn slowlog_len(ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(Reply::Int(ctx.shared.slowlog.entries() as i64))
}

pub fn slowlog_reset(ctx: &mut Ctx) -> CmdResult<Reply> {
    ctx.shared.slowlog.reset();
    Ok(Reply::OK)
}

pub fn slowlog_help(_ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(help_reply(
        "SLOWLOG",
        &[
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "    Entries are made of:",
            "    id, timestamp, time in microseconds, arguments array, client IP and port,",
            "    client name",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
        ],
    ))
}
