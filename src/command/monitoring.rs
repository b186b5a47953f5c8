//! Watching what the server runs: MONITOR, SLOWLOG and LATENCY; and LOLWUT.

use super::Ctx;
use super::presets::READ_FAST;
use super::registry::registry;
use super::reply::help_reply;
use super::spec::flag::{ADMIN, LOADING, NOSCRIPT, STALE};
use super::spec::{CommandSpec, Group};
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

// LATENCY: the events `command` and `fast-command`, recorded by dispatch
// when a command takes at least `latency-monitor-threshold` ms.

pub fn latency_doctor(ctx: &mut Ctx) -> CmdResult<Reply> {
    let report = if ctx.shared.config.read().latency_monitor_threshold == 0 {
        "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis \
         instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in \
         order to enable it. If we weren't in a deep space mission I'd suggest to take a look \
         at https://redis.io/topics/latency-monitor.\n"
            .to_string()
    } else {
        ctx.shared.latency.with_events(|events| {
            if events.is_empty() {
                return "Dave, no latency spike was observed during the lifetime of this Redis \
                        instance, not in the slightest bit. I honestly think you ought to sit \
                        down calmly, take a stress pill, and think things over.\n"
                    .to_string();
            }
            // rlockd's own report: one line per event.
            let mut out = String::from("Latency spikes observed:\n\n");
            for (n, (name, event)) in events.iter().enumerate() {
                let total: u64 = event.samples.iter().map(|s| s.millis).sum();
                let average = total / event.samples.len().max(1) as u64;
                out.push_str(&format!(
                    "{}. {name}: {} spikes, average {average}ms, worst {}ms.\n",
                    n + 1,
                    event.samples.len(),
                    event.max
                ));
            }
            out.push_str(
                "\nSLOWLOG GET shows which commands were slow; a script or a command over a \
                 large value holds its keys for that long.\n",
            );
            out
        })
    };
    Ok(Reply::Verbatim(report.into()))
}

/// Per event: its name, the time and latency of its last sample, its worst.
pub fn latency_latest(ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(ctx.shared.latency.with_events(|events| {
        Reply::Array(
            events
                .iter()
                .filter_map(|(name, event)| {
                    let last = event.samples.back()?;
                    Some(Reply::Array(vec![
                        Reply::bulk_str(name),
                        Reply::Int(last.unix_secs as i64),
                        Reply::Int(last.millis as i64),
                        Reply::Int(event.max as i64),
                    ]))
                })
                .collect(),
        )
    }))
}

pub fn latency_history(ctx: &mut Ctx) -> CmdResult<Reply> {
    let name = String::from_utf8_lossy(ctx.arg(2)).into_owned();
    Ok(ctx.shared.latency.with_events(|events| {
        Reply::Array(events.get(&name).map_or_else(Vec::new, |event| {
            event
                .samples
                .iter()
                .map(|s| {
                    Reply::Array(vec![
                        Reply::Int(s.unix_secs as i64),
                        Reply::Int(s.millis as i64),
                    ])
                })
                .collect()
        }))
    }))
}

pub fn latency_reset(ctx: &mut Ctx) -> CmdResult<Reply> {
    let names: Vec<String> = ctx.args[2..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    Ok(Reply::Int(ctx.shared.latency.reset(&names) as i64))
}

/// Rows of the graph: the tallest column is this high.
const GRAPH_ROWS: u64 = 4;

/// rlockd's own graph: one column per sample (oldest first), as tall as
/// its latency against the worst, under Redis's header line.
pub fn latency_graph(ctx: &mut Ctx) -> CmdResult<Reply> {
    let name = String::from_utf8_lossy(ctx.arg(2)).into_owned();
    ctx.shared.latency.with_events(|events| {
        let event = events
            .get(&name)
            .filter(|e| !e.samples.is_empty())
            .ok_or_else(|| {
                CmdError::other(format!("ERR No samples available for event '{name}'"))
            })?;
        let high = event.samples.iter().map(|s| s.millis).max().unwrap_or(0);
        let low = event.samples.iter().map(|s| s.millis).min().unwrap_or(0);
        let mut out = format!(
            "{name} - high {high} ms, low {low} ms (all time high {} ms)\n{}\n",
            event.max,
            "-".repeat(80)
        );
        for row in (1..=GRAPH_ROWS).rev() {
            let line: String = event
                .samples
                .iter()
                .map(|s| {
                    if s.millis * GRAPH_ROWS >= row * high.max(1) {
                        '#'
                    } else {
                        ' '
                    }
                })
                .collect();
            out.push_str(line.trim_end());
            out.push('\n');
        }
        Ok(Reply::Verbatim(out.into()))
    })
}

/// LATENCY HISTOGRAM [command ...]: calls and their cumulative distribution
/// in microseconds (power-of-two buckets) per command that ran; a
/// container names its subcommands; unknown names are skipped.
pub fn latency_histogram(ctx: &mut Ctx) -> CmdResult<Reply> {
    let registry = registry();
    let ids: Vec<usize> = if ctx.args.len() == 2 {
        (0..registry.specs.len()).collect()
    } else {
        ctx.args[2..]
            .iter()
            .filter_map(|arg| {
                let name = String::from_utf8_lossy(arg).to_ascii_lowercase();
                registry.lookup_full(&name)
            })
            .flat_map(|id| {
                let prefix = format!("{}|", registry.full_names[id]);
                let subs = registry
                    .full_names
                    .iter()
                    .enumerate()
                    .filter(move |(_, n)| n.starts_with(&prefix));
                std::iter::once(id).chain(subs.map(|(sub, _)| sub))
            })
            .collect()
    };
    let pairs = ids
        .into_iter()
        .filter_map(|id| {
            let stat = ctx.shared.stats.command(id);
            let calls = stat.calls;
            if calls == 0 {
                return None;
            }
            let mut cumulative = 0;
            let mut buckets = Vec::new();
            for (i, n) in stat.histogram.into_iter().enumerate() {
                if n > 0 {
                    cumulative += n;
                    buckets.push((Reply::Int(1 << i), Reply::Int(cumulative as i64)));
                }
            }
            Some((
                Reply::bulk_str(&registry.full_names[id]),
                Reply::Map(vec![
                    (Reply::bulk_str("calls"), Reply::Int(calls as i64)),
                    (Reply::bulk_str("histogram_usec"), Reply::Map(buckets)),
                ]),
            ))
        })
        .collect();
    Ok(Reply::Map(pairs))
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

/// A LATENCY subcommand that reports.
const fn latency_report(
    name: &'static str,
    arity: i32,
    handler: super::spec::Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, Group::Server, handler)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE)
        .tips(&[
            "nondeterministic_output",
            "request_policy:all_nodes",
            "response_policy:special",
        ])
}

static SLOWLOG_SUBS: &[CommandSpec] = &[
    CommandSpec::new("get", -2, Group::Server, slowlog_get)
        .flags(ADMIN | LOADING | STALE)
        .tips(&["request_policy:all_nodes", "nondeterministic_output"])
        .syntax("[count]")
        .doc("2.2.12", "Returns the slow log's newest entries."),
    CommandSpec::new("reset", 2, Group::Server, slowlog_reset)
        .flags(ADMIN | LOADING | STALE)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc("2.2.12", "Clears the slow log."),
    CommandSpec::new("len", 2, Group::Server, slowlog_len)
        .flags(ADMIN | LOADING | STALE)
        .tips(&[
            "request_policy:all_nodes",
            "response_policy:agg_sum",
            "nondeterministic_output",
        ])
        .doc("2.2.12", "Returns the number of entries in the slow log."),
    CommandSpec::new("help", 2, Group::Server, slowlog_help)
        .flags(LOADING | STALE)
        .doc("6.2.0", "Lists the SLOWLOG subcommands."),
];

static LATENCY_SUBS: &[CommandSpec] = &[
    latency_report("doctor", 2, latency_doctor).doc(
        "2.8.13",
        "Returns a human-readable latency analysis report.",
    ),
    latency_report("graph", 3, latency_graph)
        .syntax("event")
        .doc("2.8.13", "Returns a latency graph for an event."),
    latency_report("latest", 2, latency_latest).doc(
        "2.8.13",
        "Returns the latest latency samples for all events.",
    ),
    CommandSpec::new("help", 2, Group::Server, latency_help)
        .flags(LOADING | STALE)
        .doc("2.8.13", "Lists the LATENCY subcommands."),
    latency_report("history", 3, latency_history)
        .syntax("event")
        .doc("2.8.13", "Returns timestamp-latency samples for an event."),
    latency_report("histogram", -2, latency_histogram)
        .syntax("[command [command ...]]")
        .doc(
            "7.0.0",
            "Returns the distribution of each command's latency.",
        ),
    CommandSpec::new("reset", -2, Group::Server, latency_reset)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .syntax("[event...]")
        .doc(
            "2.8.13",
            "Resets the latency data of events; returns how many were reset.",
        ),
];

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("monitor", 1, Group::Server, monitor)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE)
        .doc(
            "1.0.0",
            "Streams every command the server runs, as it runs it.",
        ),
    CommandSpec::new("lolwut", -1, Group::Server, lolwut)
        .flags(READ_FAST)
        .syntax("[VERSION version]")
        .doc("5.0.0", "Draws a picture, then the server's version."),
    CommandSpec::container("slowlog", Group::Server, SLOWLOG_SUBS)
        .doc("2.2.12", "Reads and clears the log of slow commands."),
    CommandSpec::container("latency", Group::Server, LATENCY_SUBS)
        .doc("2.8.13", "Latency monitoring."),
];
