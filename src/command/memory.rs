//! MEMORY USAGE / PURGE / HELP.

use super::Ctx;
use super::connection::help_reply;
use crate::error::{CmdError, CmdResult};
use crate::keyspace::memory_usage;
use crate::protocol::Reply;
use crate::util::parse_i64;

pub fn usage(ctx: &mut Ctx) -> CmdResult<Reply> {
    let mut j = 3;
    while j < ctx.args.len() {
        // SAMPLES is checked and accepted: the estimate reads every element.
        match ctx.args.get(j + 1) {
            Some(n) if ctx.args[j].eq_ignore_ascii_case(b"samples") => {
                if parse_i64(n).ok_or(CmdError::NotInteger)? < 0 {
                    return Err(CmdError::Syntax);
                }
                j += 2;
            }
            _ => return Err(CmdError::Syntax),
        }
    }
    let key = ctx.arg(2).clone();
    let mut db = ctx.db();
    Ok(match db.get_mut(&key)? {
        Some(value) => Reply::Int(memory_usage(&key, value) as i64),
        None => Reply::Nil,
    })
}

/// Nothing to give back: the allocator returns freed pages by itself.
pub fn purge(_ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(Reply::OK)
}

pub fn help(_ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(help_reply(
        "MEMORY",
        &[
            "USAGE <key> [SAMPLES <count>]",
            "    The bytes <key> and its value would take in Redis 7.0.",
            "PURGE",
            "    Accepted; the allocator returns memory by itself.",
        ],
    ))
}
