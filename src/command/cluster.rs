//! CLUSTER, READONLY and READWRITE. In cluster mode rlockd is one master
//! owning every slot, reachable where the client reached it; outside it
//! they answer as a Redis without cluster support does.

use bytes::Bytes;

use super::Ctx;
use super::connection::help_reply;
use crate::cluster::{ClusterNode, Endpoint};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{HASH_SLOTS, key_slot};
use crate::protocol::Reply;
use crate::util::parse_i64;

fn node<'c>(ctx: &Ctx<'c, '_>) -> CmdResult<&'c ClusterNode> {
    ctx.shared.cluster.as_ref().ok_or(CmdError::ClusterDisabled)
}

/// The address this client connected to: what it can reach again (an
/// IPv4 client of a dual-stack listener sees its IPv4 address).
fn endpoint(ctx: &Ctx) -> Endpoint {
    let laddr = ctx.client.handle.laddr;
    Endpoint {
        ip: laddr.ip().to_canonical().to_string(),
        port: laddr.port(),
    }
}

/// A hash slot: a number in 0..16384.
pub fn slot_in_range(n: i64) -> Option<u16> {
    u16::try_from(n).ok().filter(|slot| *slot < HASH_SLOTS)
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
    let count = ctx.locked.in_slot(db, slot, |keys| keys.count())?;
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
    })?;
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
