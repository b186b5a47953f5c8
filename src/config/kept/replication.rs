//! Replication's settings for serving replicas, and a replica's finer
//! ones: no effect until rlockd serves replicas (a replica's own settings
//! are in the table).

use super::*;

kept! {
    /// No effect: not yet built into rlockd's replication.
    "repl-backlog-ttl" = "3600", Runtime, Check::new(|v| int_text(v, 0, i64::MAX));
    /// No effect: not yet built into rlockd's replication.
    "repl-disable-tcp-nodelay" = "no", Runtime, YES_NO;
    /// No effect: not yet built into rlockd's replication.
    "repl-diskless-sync" = "yes", Runtime, YES_NO;
    /// No effect: not yet built into rlockd's replication.
    "repl-diskless-sync-delay" = "5", Runtime, Check::new(|v| int_from(v, 0));
    /// No effect: not yet built into rlockd's replication.
    "repl-diskless-sync-max-replicas" = "0", Runtime, Check::new(|v| int_from(v, 0));
    /// No effect: not yet built into rlockd's replication.
    "repl-ping-replica-period" | "repl-ping-slave-period" = "10", Runtime,
        Check::new(|v| int_from(v, 1));
    /// No effect: not yet built into rlockd's replication.
    "replica-ignore-disk-write-errors" = "no", Runtime, YES_NO;
    /// No effect: not yet built into rlockd's replication.
    "replica-ignore-maxmemory" | "slave-ignore-maxmemory" = "yes", Runtime, YES_NO;
    /// No effect: not yet built into rlockd's replication.
    "replica-lazy-flush" | "slave-lazy-flush" = "no", Runtime, YES_NO;
    /// No effect, not yet built into rlockd's replication: what a replica does when a
    /// command from its primary fails.
    "propagation-error-behavior" = "ignore", Runtime,
        Check::new(|v| parse_enum(v, &["ignore", "panic", "panic-on-replicas"]));
}
