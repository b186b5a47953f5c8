//! Replication's settings: no effect until replication lands (rlockd is a
//! primary with no replicas).

use super::*;

kept! {
    /// No effect until replication lands: the primary's password.
    "masterauth" = "", Runtime, TEXT;
    /// No effect until replication lands: the primary's user.
    "masteruser" = "", Runtime, TEXT;
    /// No effect until replication lands: `HOST PORT` of a primary to
    /// replicate ("no one": none).
    "replicaof" | "slaveof" = "", Never, Check::words(replica_of);
    /// No effect until replication lands.
    "repl-backlog-ttl" = "3600", Runtime, Check::new(|v| int_text(v, 0, i64::MAX));
    /// No effect until replication lands.
    "repl-disable-tcp-nodelay" = "no", Runtime, YES_NO;
    /// No effect until replication lands.
    "repl-diskless-load" = "disabled", Runtime,
        Check::new(|v| parse_enum(v, &["disabled", "on-empty-db", "swapdb"]));
    /// No effect until replication lands.
    "repl-diskless-sync" = "yes", Runtime, YES_NO;
    /// No effect until replication lands.
    "repl-diskless-sync-delay" = "5", Runtime, Check::new(|v| int_from(v, 0));
    /// No effect until replication lands.
    "repl-diskless-sync-max-replicas" = "0", Runtime, Check::new(|v| int_from(v, 0));
    /// No effect until replication lands.
    "repl-ping-replica-period" | "repl-ping-slave-period" = "10", Runtime,
        Check::new(|v| int_from(v, 1));
    /// No effect until replication lands.
    "repl-timeout" = "60", Runtime, Check::new(|v| int_from(v, 1));
    /// No effect until replication lands.
    "replica-announce-ip" | "slave-announce-ip" = "", Runtime, TEXT;
    /// No effect until replication lands.
    "replica-announce-port" | "slave-announce-port" = "0", Runtime, Check::new(port);
    /// No effect until replication lands.
    "replica-announced" = "yes", Runtime, YES_NO;
    /// No effect until replication lands.
    "replica-ignore-disk-write-errors" = "no", Runtime, YES_NO;
    /// No effect until replication lands.
    "replica-ignore-maxmemory" | "slave-ignore-maxmemory" = "yes", Runtime, YES_NO;
    /// No effect until replication lands.
    "replica-lazy-flush" | "slave-lazy-flush" = "no", Runtime, YES_NO;
    /// No effect until replication lands.
    "replica-priority" | "slave-priority" = "100", Runtime, Check::new(|v| int_from(v, 0));
    /// No effect until replication lands: rlockd is never a replica.
    "replica-read-only" | "slave-read-only" = "yes", Runtime, YES_NO;
    /// No effect until replication lands.
    "replica-serve-stale-data" | "slave-serve-stale-data" = "yes", Runtime, YES_NO;
    /// No effect until replication lands: what a replica does when a
    /// command from its primary fails.
    "propagation-error-behavior" = "ignore", Runtime,
        Check::new(|v| parse_enum(v, &["ignore", "panic", "panic-on-replicas"]));
}

/// `replicaof HOST PORT`, or `no one` for none, as Redis reads it.
fn replica_of(v: &str) -> Result<String, String> {
    let words: Vec<&str> = v.split_whitespace().collect();
    let [host, port] = words[..] else {
        return Err("wrong number of arguments".into());
    };
    if host.eq_ignore_ascii_case("no") && port.eq_ignore_ascii_case("one") {
        return Ok(String::new());
    }
    port.parse::<u16>()
        .map_err(|_| "Invalid master port".to_string())?;
    Ok(format!("{host} {port}"))
}
