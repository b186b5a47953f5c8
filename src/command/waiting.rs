//! How a command waits: its timeout argument, and the waiter it leaves
//! on the client for the connection to wait on (the blocking list and
//! sorted set pops, XREAD BLOCK, WAIT).

use std::time::{Duration, Instant};

use bytes::Bytes;

use super::ctx::Ctx;
use crate::context::client::{Blocked, ServedReply};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{Waiter, Wanted};
use crate::protocol::Reply;
use crate::util::{parse_f64, parse_i64};

/// A timeout of `ms` milliseconds; `None` for 0 (wait for ever). Redis
/// 7.0 adds it to the current Unix time unchecked, and a sum past the
/// 64-bit range never times out there either.
fn deadline_after(ms: u64) -> Option<Duration> {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    (ms > 0 && ms <= i64::MAX as u64 - now_ms).then(|| Duration::from_millis(ms))
}

/// Parses a timeout in whole milliseconds (WAIT, WAITAOF).
pub fn timeout_ms_arg(arg: &[u8]) -> CmdResult<Option<Duration>> {
    let ms = parse_i64(arg).ok_or(CmdError::TimeoutNotNumber)?;
    if ms < 0 {
        return Err(CmdError::TimeoutNegative);
    }
    Ok(deadline_after(ms as u64))
}

/// Parses a timeout in seconds (fractions allowed) as Redis 7.0 does;
/// `None` for 0 (wait for ever).
pub fn timeout_arg(arg: &[u8]) -> CmdResult<Option<Duration>> {
    let secs = parse_f64(arg)
        .ok_or_else(|| CmdError::other("ERR timeout is not a float or out of range"))?;
    // Redis rounds up to whole milliseconds (so -0.0001 s is 0: for ever),
    // and a count past the 64-bit range turns negative in its conversion.
    let ms = (secs * 1000.0).ceil();
    if ms < 0.0 || ms >= i64::MAX as f64 {
        return Err(CmdError::TimeoutNegative);
    }
    Ok(deadline_after(ms as u64))
}

/// Whether this client may wait: not inside EXEC or a script, where a
/// blocking command answers at once as if it had timed out.
pub fn may_block(ctx: &Ctx) -> bool {
    !ctx.client.for_script && !ctx.client.in_exec
}

/// Queues a waiter on `keys` and leaves it on the client for the
/// connection to wait on. The reply returned is never sent.
pub fn block(
    ctx: &mut Ctx,
    keys: Vec<Bytes>,
    wanted: Wanted,
    timeout: Option<Duration>,
    (timeout_reply, served_reply): (Reply, ServedReply),
) -> CmdResult<Reply> {
    let waiter = Waiter::new(ctx.client.db, keys, wanted);
    let mut db = ctx.db();
    for key in &waiter.keys {
        if let Err(e) = db.block(key, &waiter) {
            // Queued on some keys already: it must not be served there.
            waiter.cancel();
            return Err(e);
        }
    }
    // A command run again after a failed hand-over keeps its first deadline.
    let deadline = ctx
        .client
        .retry_deadline
        .take()
        .unwrap_or_else(|| timeout.and_then(|t| Instant::now().checked_add(t)));
    ctx.client.blocked = Some(Blocked {
        waiter,
        deadline,
        timeout_reply: timeout_reply.clone(),
        served_reply,
    });
    Ok(timeout_reply)
}
