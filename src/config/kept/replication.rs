//! Replication's finer settings, checked and reported without effect
//! (those rlockd acts on are in the table).

use super::*;

kept! {
    /// No effect: not yet built into rlockd's replication.
    "repl-disable-tcp-nodelay" = "no", Runtime, YES_NO;
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
