//! CLUSTER, READONLY and READWRITE. In cluster mode rlockd is one master
//! owning every slot, reachable where the client reached it; outside it
//! they answer as a Redis without cluster support does.

use bytes::Bytes;

use super::Ctx;
use super::presets::NONDET;
use super::registry::slot_in_range;
use super::reply::help_reply;
use super::spec::acl::CONNECTION;
use super::spec::flag::{ADMIN, FAST, LOADING, NO_ASYNC_LOADING, NOSCRIPT, STALE, WHOLE_KEYSPACE};
use super::spec::{CommandSpec, Group};
use crate::client_handle::ClientAddr;
use crate::cluster::{ClusterNode, Endpoint};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{HASH_SLOTS, key_slot};
use crate::protocol::Reply;
use crate::util::parse_i64;

fn node<'c>(ctx: &Ctx<'c, '_>) -> CmdResult<&'c ClusterNode> {
    ctx.shared.cluster.as_ref().ok_or(CmdError::ClusterDisabled)
}

/// The address this client connected to: what it can reach again (an
/// IPv4 client of a dual-stack listener sees its IPv4 address). A socket's
/// client gets no address and the TCP port, as from a Redis node that
/// never learnt its own address.
fn endpoint(ctx: &Ctx) -> Endpoint {
    match &ctx.client.handle.laddr {
        ClientAddr::Tcp(laddr) => Endpoint {
            ip: laddr.ip().to_canonical().to_string(),
            port: laddr.port(),
        },
        ClientAddr::Unix(_) => Endpoint {
            ip: String::new(),
            port: ctx.shared.config.read().port,
        },
    }
}

fn all_slots() -> [Reply; 2] {
    [Reply::Int(0), Reply::Int(i64::from(HASH_SLOTS) - 1)]
}

pub fn readonly(ctx: &mut Ctx) -> CmdResult<Reply> {
    set_readonly(ctx, true)
}

pub fn readwrite(ctx: &mut Ctx) -> CmdResult<Reply> {
    set_readonly(ctx, false)
}

/// Only shows in CLIENT LIST: the one node is a master, which serves reads
/// either way. A script's own READONLY is not its caller's.
fn set_readonly(ctx: &mut Ctx, on: bool) -> CmdResult<Reply> {
    node(ctx)?;
    if !ctx.client.for_script {
        ctx.client.handle.info.lock().readonly = on;
    }
    Ok(Reply::OK)
}

/// Sent before a command redirected by `ASK`, which a node that owns
/// every slot never sends.
pub fn asking(ctx: &mut Ctx) -> CmdResult<Reply> {
    node(ctx)?;
    Ok(Reply::OK)
}

/// Links to peer nodes: a lone node has none.
pub fn cluster_links(ctx: &mut Ctx) -> CmdResult<Reply> {
    node(ctx)?;
    Ok(Reply::Array(Vec::new()))
}

pub fn cluster_myid(ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(Reply::bulk(node(ctx)?.id.clone()))
}

pub fn cluster_nodes(ctx: &mut Ctx) -> CmdResult<Reply> {
    let line = node(ctx)?.nodes_line(&endpoint(ctx));
    Ok(Reply::Verbatim(Bytes::from(line)))
}

pub fn cluster_info(ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(Reply::Verbatim(Bytes::from(node(ctx)?.info())))
}

pub fn cluster_slots(ctx: &mut Ctx) -> CmdResult<Reply> {
    let id = node(ctx)?.id.clone();
    let at = endpoint(ctx);
    let master = Reply::Array(vec![
        Reply::bulk(at.ip),
        Reply::Int(at.port.into()),
        Reply::bulk(id),
        // Extra networking metadata: none (no hostname is announced).
        Reply::Map(Vec::new()),
    ]);
    let mut range = all_slots().to_vec();
    range.push(master);
    Ok(Reply::Array(vec![Reply::Array(range)]))
}

pub fn cluster_shards(ctx: &mut Ctx) -> CmdResult<Reply> {
    let id = node(ctx)?.id.clone();
    let at = endpoint(ctx);
    let field = |name: &'static str, value: Reply| (Reply::bulk_str(name), value);
    let me = Reply::Map(vec![
        field("id", Reply::bulk(id)),
        field("port", Reply::Int(at.port.into())),
        field("ip", Reply::bulk(at.ip.clone())),
        field("endpoint", Reply::bulk(at.ip)),
        field("role", Reply::bulk_str("master")),
        field("replication-offset", Reply::Int(0)),
        field("health", Reply::bulk_str("online")),
    ]);
    Ok(Reply::Array(vec![Reply::Map(vec![
        field("slots", Reply::Array(all_slots().to_vec())),
        field("nodes", Reply::Array(vec![me])),
    ])]))
}

pub fn cluster_keyslot(ctx: &mut Ctx) -> CmdResult<Reply> {
    node(ctx)?;
    Ok(Reply::Int(key_slot(ctx.arg(2)).into()))
}

/// ADDSLOTS, MEET, RESET and the rest that move slots or nodes, or report
/// on failures and replicas: a one-node cluster has none to move or report.
pub fn cluster_topology(ctx: &mut Ctx) -> CmdResult<Reply> {
    node(ctx)?;
    let sub = String::from_utf8_lossy(ctx.arg(1)).to_uppercase();
    Err(CmdError::ClusterTopologyFixed(sub))
}

/// A number argument: not a number is one error, out of range another.
fn slot_number(arg: &[u8]) -> CmdResult<i64> {
    parse_i64(arg).ok_or(CmdError::NotInteger)
}

pub fn cluster_countkeysinslot(ctx: &mut Ctx) -> CmdResult<Reply> {
    node(ctx)?;
    let slot = slot_in_range(slot_number(ctx.arg(2))?).ok_or(CmdError::InvalidSlot)?;
    let db = ctx.client.db;
    let count = ctx.locked.in_slot(db, slot, |keys| keys.count());
    Ok(Reply::Int(count as i64))
}

pub fn cluster_getkeysinslot(ctx: &mut Ctx) -> CmdResult<Reply> {
    node(ctx)?;
    let slot = slot_number(ctx.arg(2))?;
    let count = slot_number(ctx.arg(3))?;
    let slot = slot_in_range(slot)
        .filter(|_| count >= 0)
        .ok_or(CmdError::InvalidSlotOrCount)?;
    let limit = usize::try_from(count).unwrap_or(usize::MAX);
    let db = ctx.client.db;
    let keys = ctx.locked.in_slot(db, slot, |keys| {
        keys.take(limit)
            .map(|key| Reply::Bulk(Bytes::copy_from_slice(key)))
            .collect()
    });
    Ok(Reply::Array(keys))
}

pub fn cluster_help(ctx: &mut Ctx) -> CmdResult<Reply> {
    node(ctx)?;
    Ok(help_reply(
        "CLUSTER",
        &[
            "COUNTKEYSINSLOT <slot>",
            "    Count the keys stored in <slot>.",
            "GETKEYSINSLOT <slot> <count>",
            "    List up to <count> key names stored in <slot>.",
            "INFO",
            "    Describe the state of the cluster.",
            "KEYSLOT <key>",
            "    Compute the hash slot of <key>.",
            "LINKS",
            "    List the links to peer nodes (a lone node has none).",
            "MYID",
            "    Return this node's id.",
            "NODES",
            "    Describe every node, one line each: <id> <ip:port@cport> <flags> <master>",
            "    <ping-sent> <pong-received> <epoch> <link-state> <slot> ...",
            "SHARDS",
            "    Describe each shard: its slot ranges and its nodes.",
            "SLOTS",
            "    Describe each slot range: start, end, then the master's ip, port and id.",
            "ADDSLOTS | DELSLOTS | MEET | FORGET | REPLICATE | FAILOVER | RESET | SETSLOT | ...",
            "    Refused: this one-node cluster's topology is fixed.",
        ],
    ))
}

/// What a subcommand that moves slots or nodes is flagged as in Redis.
const TOPOLOGY: u32 = ADMIN | STALE | NO_ASYNC_LOADING;

/// CLUSTER's subcommands: those a one-node cluster answers, and those that
/// would change or ask about its topology, which it refuses (it is fixed).
static CLUSTER_SUBS: &[CommandSpec] = &[
    CommandSpec::new("addslots", -3, Group::Cluster, cluster_topology)
        .flags(TOPOLOGY)
        .syntax("slot [slot ...]")
        .doc("3.0.0", "Assigns hash slots to this node."),
    CommandSpec::new("addslotsrange", -4, Group::Cluster, cluster_topology)
        .flags(TOPOLOGY)
        .syntax("start-slot end-slot [start-slot end-slot ...]")
        .doc("7.0.0", "Assigns ranges of hash slots to this node."),
    CommandSpec::new("bumpepoch", 2, Group::Cluster, cluster_topology)
        .flags(TOPOLOGY)
        .tips(NONDET)
        .doc("3.0.0", "Advances this node's config epoch."),
    CommandSpec::new("count-failure-reports", 3, Group::Cluster, cluster_topology)
        .flags(ADMIN | STALE)
        .tips(NONDET)
        .syntax("node-id")
        .doc("3.0.0", "Counts the failure reports about a node."),
    CommandSpec::new(
        "countkeysinslot",
        3,
        Group::Cluster,
        cluster_countkeysinslot,
    )
    .flags(STALE | WHOLE_KEYSPACE)
    .syntax("slot")
    .doc("3.0.0", "Counts the keys in a hash slot."),
    CommandSpec::new("delslots", -3, Group::Cluster, cluster_topology)
        .flags(TOPOLOGY)
        .syntax("slot [slot ...]")
        .doc("3.0.0", "Takes hash slots away from this node."),
    CommandSpec::new("delslotsrange", -4, Group::Cluster, cluster_topology)
        .flags(TOPOLOGY)
        .syntax("start-slot end-slot [start-slot end-slot ...]")
        .doc("7.0.0", "Takes ranges of hash slots away from this node."),
    CommandSpec::new("failover", -2, Group::Cluster, cluster_topology)
        .flags(TOPOLOGY)
        .syntax("[FORCE | TAKEOVER]")
        .doc("3.0.0", "Makes a replica take over from its master."),
    CommandSpec::new("flushslots", 2, Group::Cluster, cluster_topology)
        .flags(TOPOLOGY)
        .doc("3.0.0", "Takes every hash slot away from this node."),
    CommandSpec::new("forget", 3, Group::Cluster, cluster_topology)
        .flags(TOPOLOGY)
        .syntax("node-id")
        .doc(
            "3.0.0",
            "Drops a node from this node's view of the cluster.",
        ),
    CommandSpec::new("getkeysinslot", 4, Group::Cluster, cluster_getkeysinslot)
        .flags(STALE | WHOLE_KEYSPACE)
        .tips(NONDET)
        .syntax("slot count")
        .doc("3.0.0", "Returns up to count key names in a hash slot."),
    CommandSpec::new("help", 2, Group::Cluster, cluster_help)
        .flags(LOADING | STALE)
        .doc("5.0.0", "Lists the CLUSTER subcommands."),
    CommandSpec::new("info", 2, Group::Cluster, cluster_info)
        .flags(STALE)
        .tips(NONDET)
        .doc("3.0.0", "Describes the state of the cluster."),
    CommandSpec::new("keyslot", 3, Group::Cluster, cluster_keyslot)
        .flags(STALE)
        .syntax("key")
        .doc("3.0.0", "Returns the hash slot of a key."),
    CommandSpec::new("links", 2, Group::Cluster, cluster_links)
        .flags(STALE)
        .tips(NONDET)
        .doc("7.0.0", "Lists the links to peer nodes."),
    CommandSpec::new("meet", -4, Group::Cluster, cluster_topology)
        .flags(TOPOLOGY)
        .syntax("ip port [cluster-bus-port]")
        .doc("3.0.0", "Joins another node to the cluster."),
    CommandSpec::new("myid", 2, Group::Cluster, cluster_myid)
        .flags(STALE)
        .doc("3.0.0", "Returns this node's id."),
    CommandSpec::new("nodes", 2, Group::Cluster, cluster_nodes)
        .flags(STALE)
        .tips(NONDET)
        .doc(
            "3.0.0",
            "Describes every node of the cluster, one line each.",
        ),
    CommandSpec::new("replicas", 3, Group::Cluster, cluster_topology)
        .flags(ADMIN | STALE)
        .tips(NONDET)
        .syntax("node-id")
        .doc("5.0.0", "Lists the replicas of a master."),
    CommandSpec::new("replicate", 3, Group::Cluster, cluster_topology)
        .flags(TOPOLOGY)
        .syntax("node-id")
        .doc("3.0.0", "Makes this node a replica of a master."),
    CommandSpec::new("reset", -2, Group::Cluster, cluster_topology)
        .flags(ADMIN | NOSCRIPT | STALE)
        .syntax("[HARD | SOFT]")
        .doc("3.0.0", "Makes this node forget the cluster."),
    CommandSpec::new("saveconfig", 2, Group::Cluster, cluster_topology)
        .flags(TOPOLOGY)
        .doc("3.0.0", "Writes the cluster configuration to disk."),
    CommandSpec::new("set-config-epoch", 3, Group::Cluster, cluster_topology)
        .flags(TOPOLOGY)
        .syntax("config-epoch")
        .doc("3.0.0", "Sets this new node's config epoch."),
    CommandSpec::new("setslot", -4, Group::Cluster, cluster_topology)
        .flags(TOPOLOGY)
        .syntax("slot IMPORTING node-id | MIGRATING node-id | NODE node-id | STABLE")
        .doc("3.0.0", "Moves a hash slot between nodes."),
    CommandSpec::new("shards", 2, Group::Cluster, cluster_shards)
        .flags(STALE)
        .tips(NONDET)
        .doc("7.0.0", "Describes each shard: its slot ranges and nodes."),
    CommandSpec::new("slaves", 3, Group::Cluster, cluster_topology)
        .flags(ADMIN | STALE)
        .tips(NONDET)
        .syntax("node-id")
        .doc(
            "3.0.0",
            "Lists the replicas of a master (the old name of REPLICAS).",
        ),
    CommandSpec::new("slots", 2, Group::Cluster, cluster_slots)
        .flags(STALE)
        .tips(NONDET)
        .doc("3.0.0", "Maps each slot range to the node serving it."),
];

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::container("cluster", Group::Cluster, CLUSTER_SUBS).doc("3.0.0", "Commands about Redis Cluster."),
    CommandSpec::new("asking", 1, Group::Cluster, asking).flags(FAST).acl(CONNECTION)
        .doc("3.0.0", "Marks the next command as following an ASK redirect (accepted; this node owns every slot)."),
    CommandSpec::new("readonly", 1, Group::Cluster, readonly).flags(LOADING | STALE | FAST).acl(CONNECTION)
        .doc("3.0.0", "Lets this connection read from a replica in cluster mode (accepted; the node is a master)."),
    CommandSpec::new("readwrite", 1, Group::Cluster, readwrite).flags(LOADING | STALE | FAST).acl(CONNECTION)
        .doc("3.0.0", "Ends READONLY for this connection."),
];
