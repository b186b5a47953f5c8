//! Cluster settings a real cluster needs: rlockd answers as a one-node
//! cluster that owns every slot, with no bus, peers or failover, so these
//! have no effect.

use super::*;

kept! {
    /// No effect: one node, nothing is ever down.
    "cluster-allow-pubsubshard-when-down" = "yes", Runtime, YES_NO;
    /// No effect: one node, nothing is ever down.
    "cluster-allow-reads-when-down" = "no", Runtime, YES_NO;
    /// No effect: no replicas to migrate.
    "cluster-allow-replica-migration" = "yes", Runtime, YES_NO;
    /// No effect: no cluster bus.
    "cluster-announce-bus-port" = "0", Runtime, Check::new(port);
    /// No effect: CLUSTER answers with the address the client used.
    "cluster-announce-hostname" = "", Runtime, Check::new(hostname);
    /// No effect: CLUSTER answers with the address the client used.
    "cluster-announce-ip" = "", Runtime, TEXT;
    /// No effect: CLUSTER answers with the port the client used.
    "cluster-announce-port" = "0", Runtime, Check::new(port);
    /// No effect: no TLS port.
    "cluster-announce-tls-port" = "0", Runtime, Check::new(port);
    /// No effect: the one-node topology is fixed, never saved.
    "cluster-config-file" = "nodes.conf", Never, TEXT;
    /// No effect: no cluster bus links.
    "cluster-link-sendbuf-limit" = "0", Runtime, Check::new(|v| memory_text(v, 0, u64::MAX));
    /// No effect: no replicas to migrate.
    "cluster-migration-barrier" = "1", Runtime, Check::new(|v| int_from(v, 0));
    /// No effect: no peers to time out.
    "cluster-node-timeout" = "15000", Runtime, Check::new(|v| int_text(v, 0, i64::MAX));
    /// No effect: no cluster bus.
    "cluster-port" = "0", Never, Check::new(port);
    /// No effect: CLUSTER answers with the address the client used.
    "cluster-preferred-endpoint-type" = "ip", Runtime,
        Check::new(|v| parse_enum(v, &["ip", "hostname", "unknown-endpoint"]));
    /// No effect: no failover.
    "cluster-replica-no-failover" | "cluster-slave-no-failover" = "no", Runtime, YES_NO;
    /// No effect: no failover.
    "cluster-replica-validity-factor" | "cluster-slave-validity-factor" = "10", Runtime,
        Check::new(|v| int_from(v, 0));
    /// No effect: the one node owns every slot.
    "cluster-require-full-coverage" = "yes", Runtime, YES_NO;
}

/// The longest hostname Redis announces, plus its terminator.
const HOSTNAME_MAX: usize = 256;

/// Redis's check of an announced hostname: short, and only letters,
/// digits, hyphens and dots.
fn hostname(v: &str) -> Result<String, String> {
    if v.len() >= HOSTNAME_MAX {
        return Err(format!(
            "Hostnames must be less than {HOSTNAME_MAX} characters"
        ));
    }
    if !v
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.')
    {
        return Err("Hostnames may only contain alphanumeric characters, hyphens or dots".into());
    }
    Ok(v.to_string())
}
