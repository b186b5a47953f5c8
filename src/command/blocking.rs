//! Moving and blocking list commands: LMOVE, RPOPLPUSH, BLPOP, BRPOP,
//! BLMOVE, BRPOPLPUSH; and WAIT / WAITAOF, which block on time alone.
//! (XREAD and XREADGROUP block through `block` too.) A blocking command that finds nothing queues a
//! waiter on its keys (under their shard locks, so no push can slip in
//! between) and leaves it on the client; the connection then waits for the
//! keyspace to serve it (see `keyspace::blocked`), for its timeout, or for
//! the client to go away.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::Ctx;
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{End, Outcome, Value, Waiter, Wanted};
use crate::protocol::Reply;
use crate::util::{parse_f64, parse_i64};

/// A client waiting on list keys, until `deadline` (`None`: for ever).
pub struct Blocked {
    pub waiter: Arc<Waiter>,
    pub deadline: Option<Instant>,
    /// What a timeout answers: BLPOP's nil array, BLMOVE's nil.
    pub timeout_reply: Reply,
}

impl Blocked {
    /// The reply for how the wait ended; `None` when the command must run
    /// again (its element could not be handed over where it waited).
    pub fn reply(&self, outcome: Outcome) -> Option<Reply> {
        match outcome {
            Outcome::Served { key, element } => Some(match self.waiter.wanted {
                Wanted::Pop(_) => Reply::Array(vec![Reply::Bulk(key), Reply::Bulk(element)]),
                Wanted::Move { .. } => Reply::Bulk(element),
                Wanted::Time | Wanted::Stream(_) => self.timeout_reply.clone(),
            }),
            Outcome::Streamed { key, entries } => {
                let resp3 = matches!(&self.waiter.wanted, Wanted::Stream(w) if w.resp3);
                Some(super::streams::read_reply(
                    vec![(key, super::streams::entries_reply(entries))],
                    resp3,
                ))
            }
            Outcome::Failed(e) => Some(Reply::Error(e)),
            Outcome::Cancelled => Some(self.timeout_reply.clone()),
            Outcome::Retry | Outcome::Waiting | Outcome::Serving => None,
        }
    }
}

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
pub(super) fn timeout_ms_arg(arg: &[u8]) -> CmdResult<Option<Duration>> {
    let ms = parse_i64(arg)
        .ok_or_else(|| CmdError::other("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(CmdError::other("ERR timeout is negative"));
    }
    Ok(deadline_after(ms as u64))
}

/// Parses a timeout in seconds (fractions allowed) as Redis 7.0 does;
/// `None` for 0 (wait for ever).
fn timeout_arg(arg: &[u8]) -> CmdResult<Option<Duration>> {
    let secs = parse_f64(arg)
        .ok_or_else(|| CmdError::other("ERR timeout is not a float or out of range"))?;
    // Redis rounds up to whole milliseconds (so -0.0001 s is 0: for ever),
    // and a count past the 64-bit range turns negative in its conversion.
    let ms = (secs * 1000.0).ceil();
    if ms < 0.0 || ms >= i64::MAX as f64 {
        return Err(CmdError::other("ERR timeout is negative"));
    }
    Ok(deadline_after(ms as u64))
}

fn end_arg(arg: &[u8]) -> CmdResult<End> {
    if arg.eq_ignore_ascii_case(b"left") {
        Ok(End::Left)
    } else if arg.eq_ignore_ascii_case(b"right") {
        Ok(End::Right)
    } else {
        Err(CmdError::Syntax)
    }
}

/// LMOVE's work: `None` if the source has nothing to give.
fn move_element(
    ctx: &mut Ctx,
    source: &Bytes,
    dest: &Bytes,
    from: End,
    to: End,
) -> CmdResult<Option<Bytes>> {
    let mut db = ctx.db();
    db.check_list(source)?;
    if !matches!(db.get(source)?, Some(Value::List(_))) {
        return Ok(None);
    }
    db.check_list(dest)?;
    let Some(element) = db.pop_list(source, from)? else {
        return Ok(None);
    };
    db.push_list(dest, to, element.clone())?;
    Ok(Some(element))
}

pub fn lmove(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (from, to) = (end_arg(ctx.arg(3))?, end_arg(ctx.arg(4))?);
    let (source, dest) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    Ok(Reply::opt_bulk(move_element(
        ctx, &source, &dest, from, to,
    )?))
}

pub fn rpoplpush(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (source, dest) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    Ok(Reply::opt_bulk(move_element(
        ctx,
        &source,
        &dest,
        End::Right,
        End::Left,
    )?))
}

/// Whether this client may wait: not inside EXEC or a script, where a
/// blocking command answers at once as if it had timed out.
pub(super) fn may_block(ctx: &Ctx) -> bool {
    !ctx.client.for_script && !ctx.client.in_exec
}

/// Queues a waiter on `keys` and leaves it on the client for the
/// connection to wait on. The reply returned is never sent.
pub(super) fn block(
    ctx: &mut Ctx,
    keys: Vec<Bytes>,
    wanted: Wanted,
    timeout: Option<Duration>,
    timeout_reply: Reply,
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
    });
    Ok(timeout_reply)
}

fn blocking_pop(ctx: &mut Ctx, end: End) -> CmdResult<Reply> {
    let timeout = timeout_arg(ctx.arg(ctx.args.len() - 1))?;
    let keys = &ctx.args[1..ctx.args.len() - 1];
    let mut db = ctx.locked.db(ctx.client.db);
    for key in keys {
        match db.get(key)? {
            Some(Value::List(l)) if !l.is_empty() => {}
            Some(Value::List(_)) | None => continue,
            Some(_) => return Err(CmdError::WrongType),
        }
        let element = db.pop_list(key, end)?;
        return Ok(Reply::Array(vec![
            Reply::Bulk(key.clone()),
            Reply::opt_bulk(element),
        ]));
    }
    if !may_block(ctx) {
        return Ok(Reply::NilArray);
    }
    let keys = keys.to_vec();
    block(ctx, keys, Wanted::Pop(end), timeout, Reply::NilArray)
}

pub fn blpop(ctx: &mut Ctx) -> CmdResult<Reply> {
    blocking_pop(ctx, End::Left)
}

pub fn brpop(ctx: &mut Ctx) -> CmdResult<Reply> {
    blocking_pop(ctx, End::Right)
}

fn blocking_move(ctx: &mut Ctx, from: End, to: End, timeout_at: usize) -> CmdResult<Reply> {
    let timeout = timeout_arg(ctx.arg(timeout_at))?;
    let (source, dest) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.db();
    db.check_list(&source)?;
    if db.exists(&source)? {
        return Ok(Reply::opt_bulk(move_element(
            ctx, &source, &dest, from, to,
        )?));
    }
    if !may_block(ctx) {
        return Ok(Reply::Nil);
    }
    let wanted = Wanted::Move { from, dest, to };
    // Redis answers a timed-out BLMOVE with a nil array, like BLPOP.
    block(ctx, vec![source], wanted, timeout, Reply::NilArray)
}

pub fn blmove(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (from, to) = (end_arg(ctx.arg(3))?, end_arg(ctx.arg(4))?);
    blocking_move(ctx, from, to, 5)
}

pub fn brpoplpush(ctx: &mut Ctx) -> CmdResult<Reply> {
    blocking_move(ctx, End::Right, End::Left, 3)
}

/// WAIT numreplicas timeout: rlockd has no replicas, so 0 acknowledge; a
/// client asking for more waits out its timeout, as on a lone Redis.
pub fn wait(ctx: &mut Ctx) -> CmdResult<Reply> {
    let wanted = parse_i64(ctx.arg(1)).ok_or(CmdError::NotInteger)?;
    let timeout = timeout_ms_arg(ctx.arg(2))?;
    if wanted <= 0 || !may_block(ctx) {
        return Ok(Reply::Int(0));
    }
    block(ctx, Vec::new(), Wanted::Time, timeout, Reply::Int(0))
}

/// WAITAOF numlocal numreplicas timeout (Redis 7.2; Redisson probes it):
/// no append-only file and no replicas, so `[0, 0]`.
pub fn waitaof(ctx: &mut Ctx) -> CmdResult<Reply> {
    let local = parse_i64(ctx.arg(1)).ok_or(CmdError::NotInteger)?;
    if !(0..=1).contains(&local) {
        return Err(CmdError::other(
            "ERR value is out of range, value must between 0 and 1",
        ));
    }
    let replicas = parse_i64(ctx.arg(2)).ok_or(CmdError::NotInteger)?;
    if replicas < 0 {
        return Err(CmdError::other(
            "ERR value is out of range, must be positive",
        ));
    }
    let timeout = timeout_ms_arg(ctx.arg(3))?;
    if local > 0 {
        return Err(CmdError::other(
            "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.",
        ));
    }
    let none = Reply::Array(vec![Reply::Int(0), Reply::Int(0)]);
    if replicas == 0 || !may_block(ctx) {
        return Ok(none);
    }
    block(ctx, Vec::new(), Wanted::Time, timeout, none)
}
