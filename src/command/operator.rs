//! The operator's tools: MONITOR, SLOWLOG, LATENCY, DEBUG, LOLWUT.

use super::Ctx;
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;

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
