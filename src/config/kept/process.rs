//! Settings of Redis's process and its persistence tuning that have no
//! meaning for rlockd's.

use super::*;

kept! {
    /// No effect: rlockd prints no logo.
    "always-show-logo" = "no", Never, YES_NO;
    /// No effect: rlockd keeps its process title.
    "set-proc-title" = "yes", Never, YES_NO;
    /// No effect: rlockd keeps its process title.
    "proc-title-template" = "{title} {listen-addr} {server-mode}", Runtime,
        Check::new(proc_title_template);
    /// No effect: threads are not pinned to CPUs.
    "server_cpulist" = "", Never, TEXT;
    /// No effect: threads are not pinned to CPUs.
    "bio_cpulist" = "", Never, TEXT;
    /// No effect: threads are not pinned to CPUs.
    "aof_rewrite_cpulist" = "", Never, TEXT;
    /// No effect: threads are not pinned to CPUs.
    "bgsave_cpulist" = "", Never, TEXT;
    /// No effect: a panic prints Rust's report.
    "crash-log-enabled" = "yes", Runtime, YES_NO;
    /// No effect: no memory test after a crash.
    "crash-memcheck-enabled" = "yes", Runtime, YES_NO;
    /// No effect: rlockd logs no start-up warnings to silence.
    "ignore-warnings" = "", Runtime, TEXT;
    /// No effect: every io thread reads and runs its clients' commands.
    "io-threads-do-reads" = "no", Never, YES_NO;
    /// No effect: SIGINT shuts down as Redis's `default` does (a snapshot
    /// when `save` has points; the append-only file written out).
    "shutdown-on-sigint" = "default", Runtime, Check::words(shutdown_on_signal);
    /// No effect: as shutdown-on-sigint, for SIGTERM.
    "shutdown-on-sigterm" = "default", Runtime, Check::words(shutdown_on_signal);
    /// No effect: shutdown does not wait for replicas to catch up.
    "shutdown-timeout" = "10", Runtime, Check::new(|v| int_from(v, 0));
    /// No effect: sockets are not marked.
    "socket-mark-id" = "0", Never, Check::new(|v| int_text(v, 0, u32::MAX.into()));
    /// No effect: a replica's link to its primary (and MIGRATE) leaves from
    /// the address the system picks.
    "bind-source-addr" = "", Runtime, TEXT;
    /// No effect: no per-command latency histograms.
    "latency-tracking" = "yes", Runtime, YES_NO;
    /// No effect: no per-command latency histograms.
    "latency-tracking-info-percentiles" = "50 99 99.9", Runtime, Check::words(percentiles);
    /// No effect: a rewrite's old files are always deleted once the new
    /// manifest is in place.
    "aof-disable-auto-gc" = "no", Runtime, YES_NO;
    /// No effect: a rewrite is written, then fsynced once.
    "aof-rewrite-incremental-fsync" = "yes", Runtime, YES_NO;
    /// No effect: the append-only file has no timestamp annotations.
    "aof-timestamp-enabled" = "no", Runtime, YES_NO;
    /// No effect: rewrites do not hold up appendfsync.
    "no-appendfsync-on-rewrite" = "no", Runtime, YES_NO;
    /// No effect: a snapshot is fsynced once, when written.
    "rdb-save-incremental-fsync" = "yes", Runtime, YES_NO;
    /// No effect: RESTORE's payloads are always checked in full.
    "sanitize-dump-payload" = "no", Runtime,
        Check::new(|v| parse_enum(v, &["no", "yes", "clients"]));
    /// No effect: hz is fixed.
    "dynamic-hz" = "yes", Runtime, YES_NO;
    /// New ACL users start with no channels, as Redis 7.0's default; rlockd
    /// refuses allchannels rather than ignore it.
    "acl-pubsub-default" = "resetchannels", Runtime, Check::new(acl_pubsub_default);
    /// Redis's testing setting (hidden): no effect, a panic aborts.
    "use-exit-on-panic" = "no", Runtime, YES_NO, hidden: true;
    /// Redis's testing setting (hidden): no effect, no watchdog.
    "watchdog-period" = "0", Runtime, Check::new(|v| int_from(v, 0)), hidden: true;
    /// Redis's setting (hidden): no effect, loading does not pause for
    /// events.
    "loading-process-events-interval-bytes" = "2097152", Runtime,
        Check::new(|v| int_text(v, 1024, i32::MAX.into())), hidden: true;
    /// No effect: rlockd has no MODULE command.
    "enable-module-command" = "no", Never, Check::new(|v| parse_enum(v, &["no", "yes", "local"]));
}

/// The variables a process title may name.
const TITLE_VARIABLES: &[&str] = &[
    "title",
    "listen-addr",
    "server-mode",
    "config-file",
    "port",
    "tls-port",
    "unixsocket",
];

/// Those that may expand to nothing: a template of them alone (and
/// blanks) could make an empty title, which Redis refuses.
const MAYBE_EMPTY: &[&str] = &["title", "server-mode", "unixsocket"];

/// Redis's template check: `{name}` variables it knows, `{{` for a brace,
/// and something left once it is expanded.
fn proc_title_template(v: &str) -> Result<String, String> {
    let invalid = || "template format is invalid or contains unknown variables".to_string();
    let mut rest = v;
    let mut visible = false;
    while let Some(open) = rest.find('{') {
        visible |= !rest[..open].trim_matches(' ').is_empty();
        let after = &rest[open + 1..];
        if let Some(quoted) = after.strip_prefix('{') {
            visible = true;
            rest = quoted;
            continue;
        }
        let close = after.find('}').ok_or_else(invalid)?;
        let name = &after[..close];
        if !TITLE_VARIABLES.contains(&name) {
            return Err(invalid());
        }
        visible |= !MAYBE_EMPTY.contains(&name);
        rest = &after[close + 1..];
    }
    visible |= !rest.trim_matches(' ').is_empty();
    if !visible {
        return Err(invalid());
    }
    Ok(v.to_string())
}

const SIGNAL_CHOICES: &[&str] = &["default", "save", "nosave", "now", "force"];

/// Redis's shutdown flags for a signal: `default`, or any of `save`,
/// `nosave`, `now`, `force` (not both save and nosave), in Redis's order.
fn shutdown_on_signal(v: &str) -> Result<String, String> {
    const FLAGS: [&str; 4] = ["save", "nosave", "now", "force"];
    let mut given = [false; 4];
    let words: Vec<&str> = v.split_whitespace().collect();
    if words.is_empty() {
        return Err(not_one_of(SIGNAL_CHOICES));
    }
    for word in words {
        let word = parse_enum(word, SIGNAL_CHOICES)?;
        if let Some(i) = FLAGS.iter().position(|f| *f == word) {
            given[i] = true;
        }
    }
    if given[0] && given[1] {
        return Err("shutdown options SAVE and NOSAVE can't be used simultaneously".into());
    }
    let set: Vec<&str> = FLAGS
        .iter()
        .zip(given)
        .filter(|(_, g)| *g)
        .map(|(f, _)| *f)
        .collect();
    Ok(if set.is_empty() {
        "default".into()
    } else {
        set.join(" ")
    })
}

/// Percentiles from 0 to 100 that INFO's latency stats would show.
fn percentiles(v: &str) -> Result<String, String> {
    let shown = v
        .split_whitespace()
        .map(|w| {
            let p: f64 = w
                .parse()
                .ok()
                .filter(|p: &f64| p.is_finite())
                .ok_or("Invalid latency-tracking-info-percentiles parameters")?;
            if !(0.0..=100.0).contains(&p) {
                return Err(
                    "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]",
                );
            }
            Ok(p.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(shown.join(" "))
}

fn acl_pubsub_default(v: &str) -> Result<String, String> {
    match parse_enum(v, &["allchannels", "resetchannels"])?.as_str() {
        "allchannels" => Err("rlockd's new ACL users always start with resetchannels".into()),
        name => Ok(name.into()),
    }
}
