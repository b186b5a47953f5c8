//! Cluster mode (`--cluster-enabled yes`): rlockd answers as a Redis
//! Cluster of one master node that owns every hash slot, so cluster
//! clients work against it unchanged. There is no cluster bus: the node
//! never meets another, and its topology never changes.

use crate::error::CmdError;
use crate::keyspace::{HASH_SLOTS, key_slot};
use crate::util::random_hex;

/// Redis puts the cluster bus this far above the client port.
const BUS_PORT_OFFSET: u32 = 10_000;

/// This server as a cluster node.
#[derive(Debug, Clone)]
pub struct ClusterNode {
    /// 40 hex digits, fixed for the life of the server.
    pub id: String,
}

/// Where a client reaches the node: the address it connected to, as a
/// node that announced its address would report it.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub ip: String,
    pub port: u16,
}

impl Default for ClusterNode {
    fn default() -> Self {
        Self::new()
    }
}

impl ClusterNode {
    pub fn new() -> Self {
        ClusterNode { id: random_hex(40) }
    }

    /// The node's CLUSTER NODES line. A port 0 server may be given a port
    /// near the top of the range; its bus port is printed past 65535
    /// rather than wrapped, as nothing listens there anyway.
    pub fn nodes_line(&self, at: &Endpoint) -> String {
        format!(
            "{} {}:{}@{} myself,master - 0 0 0 connected 0-{}\n",
            self.id,
            at.ip,
            at.port,
            u32::from(at.port) + BUS_PORT_OFFSET,
            HASH_SLOTS - 1
        )
    }

    /// CLUSTER INFO: a healthy one-node cluster at epoch 0.
    pub fn info(&self) -> String {
        let slots = HASH_SLOTS.to_string();
        [
            ("cluster_state", "ok"),
            ("cluster_slots_assigned", slots.as_str()),
            ("cluster_slots_ok", slots.as_str()),
            ("cluster_slots_pfail", "0"),
            ("cluster_slots_fail", "0"),
            ("cluster_known_nodes", "1"),
            ("cluster_size", "1"),
            ("cluster_current_epoch", "0"),
            ("cluster_my_epoch", "0"),
            ("cluster_stats_messages_sent", "0"),
            ("cluster_stats_messages_received", "0"),
            ("total_cluster_links_buffer_limit_exceeded", "0"),
        ]
        .iter()
        .map(|(name, value)| format!("{name}:{value}\r\n"))
        .collect()
    }
}

/// How HELLO and INFO name the server's mode.
pub fn mode_name(node: Option<&ClusterNode>) -> &'static str {
    if node.is_some() {
        "cluster"
    } else {
        "standalone"
    }
}

/// The one hash slot all of `keys` are in (`None` without keys), or
/// CROSSSLOT: a cluster client must split such a request by slot.
pub fn common_slot<'k>(keys: impl IntoIterator<Item = &'k [u8]>) -> Result<Option<u16>, CmdError> {
    let mut slot = None;
    for key in keys {
        let this = key_slot(key);
        match slot {
            None => slot = Some(this),
            Some(s) if s != this => return Err(CmdError::CrossSlot),
            Some(_) => {}
        }
    }
    Ok(slot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_in_one_slot_or_crossslot() {
        assert_eq!(common_slot([]), Ok(None));
        assert_eq!(common_slot([&b"foo"[..]]), Ok(Some(12182)));
        assert_eq!(common_slot([&b"{a}1"[..], b"{a}2", b"a"]), Ok(Some(15495)));
        assert_eq!(common_slot([&b"a"[..], b"b"]), Err(CmdError::CrossSlot));
    }

    #[test]
    fn node_line_names_every_slot() {
        let node = ClusterNode::new();
        assert_eq!(node.id.len(), 40);
        let at = Endpoint {
            ip: "127.0.0.1".into(),
            port: 7000,
        };
        assert_eq!(
            node.nodes_line(&at),
            format!(
                "{} 127.0.0.1:7000@17000 myself,master - 0 0 0 connected 0-16383\n",
                node.id
            )
        );
    }
}
