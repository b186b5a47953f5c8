//! The operator's tools: MONITOR, SLOWLOG, LATENCY, DEBUG, LOLWUT.

use bytes::Bytes;

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

// LATENCY: rlockd records no latency events (it has no fork, no AOF, no
// eviction cycles to time), so it answers as Redis does before any.

pub fn latency_doctor(ctx: &mut Ctx) -> CmdResult<Reply> {
    let report = if ctx.shared.config.read().latency_monitor_threshold == 0 {
        "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis \
         instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in \
         order to enable it. If we weren't in a deep space mission I'd suggest to take a look \
         at https://redis.io/topics/latency-monitor.\n"
    } else {
        "Dave, no latency spike was observed during the lifetime of this Redis instance, not \
         in the slightest bit. I honestly think you ought to sit down calmly, take a stress \
         pill, and think things over.\n"
    };
    Ok(Reply::Verbatim(Bytes::from_static(report.as_bytes())))
}

pub fn latency_samples(_ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(Reply::Array(Vec::new()))
}

pub fn latency_reset(_ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(Reply::Int(0))
}

pub fn latency_graph(ctx: &mut Ctx) -> CmdResult<Reply> {
    Err(CmdError::other(format!(
        "ERR No samples available for event '{}'",
        String::from_utf8_lossy(ctx.arg(2))
    )))
}

pub fn latency_help(_ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(help_reply(
        "LATENCY",
        &[
            "DOCTOR",
            "    Return a human readable latency analysis report.",
            "GRAPH <event>",
            "    Return an ASCII latency graph for the <event> class.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "    (default: reset all data for all event classes)",
            "HISTOGRAM [COMMAND ...]",
            "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
            "    If no commands are specified then all histograms are replied.",
        ],
    ))
}

/// LOLWUT [VERSION v]: like Redis 7.0, plain LOLWUT shows only the
/// version line. Redis draws its own art for versions 5 and 6; rlockd
/// draws a padlock instead, shut for 5 and open for 6.
pub fn lolwut(ctx: &mut Ctx) -> CmdResult<Reply> {
    let version = match ctx.args {
        [_, token, v, ..] if token.eq_ignore_ascii_case(b"version") => {
            parse_i64(v).ok_or(CmdError::NotInteger)?
        }
        _ => 7,
    };
    let mut text = match version {
        5 => padlock(false),
        6 => padlock(true),
        _ => String::new(),
    };
    text.push_str(&format!("Redis ver. {}\n", crate::protocol::REDIS_VERSION));
    Ok(Reply::Verbatim(text.into()))
}

/// A padlock in box-drawing characters; `open` lifts its shackle.
fn padlock(open: bool) -> String {
    let shackle: &[&str] = if open {
        &["   ╭────╮", "   │    │", "   │     ", "   │     "]
    } else {
        &["   ╭────╮", "   │    │", "   │    │", "   │    │"]
    };
    let body = [" ╭─┴────┴─╮", " │   ◯    │", " │   ┃    │", " ╰────────╯"];
    let mut out: String = shackle
        .iter()
        .chain(&body)
        .map(|l| format!("{l}\n"))
        .collect();
    out.push('\n');
    out
}
