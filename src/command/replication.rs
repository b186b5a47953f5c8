//! REPLICAOF (SLAVEOF) and ROLE: whom this server follows, as the link in
//! `crate::replication` then carries out.

use super::Ctx;
use super::spec::acl::{self, DANGEROUS};
use super::spec::flag::{ADMIN, FAST, LOADING, NO_ASYNC_LOADING, NOSCRIPT, STALE};
use super::spec::{CommandSpec, Group};
use crate::config::parse_primary;
use crate::context::replica::{LinkState, Primary};
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;

/// REPLICAOF host port | NO ONE.
pub fn replicaof(ctx: &mut Ctx) -> CmdResult<Reply> {
    if ctx.shared.cluster.is_some() {
        return Err(CmdError::other(
            "ERR REPLICAOF not allowed in cluster mode.",
        ));
    }
    let words = format!(
        "{} {}",
        String::from_utf8_lossy(ctx.arg(1)),
        String::from_utf8_lossy(ctx.arg(2))
    );
    let primary = parse_primary(&words)
        .map_err(|_| CmdError::other("ERR Invalid master port"))?
        .map(|(host, port)| Primary { host, port });
    if primary.is_some() && primary == ctx.shared.replica.primary() {
        return Ok(Reply::status("OK Already connected to specified master"));
    }
    match &primary {
        Some(p) => tracing::info!("REPLICAOF {}:{} enabled", p.host, p.port),
        None if ctx.shared.replica.is_replica() => {
            tracing::info!("MASTER MODE enabled");
        }
        None => {}
    }
    ctx.shared.follow(primary);
    Ok(Reply::OK)
}

/// ROLE: `master`, its offset and replicas (none), or `slave`, its
/// primary, the link's state and the offset applied.
pub fn role(ctx: &mut Ctx) -> CmdResult<Reply> {
    let state = &ctx.shared.replica;
    let Some(primary) = state.primary() else {
        return Ok(Reply::Array(vec![
            Reply::bulk_str("master"),
            Reply::Int(state.offset()),
            Reply::Array(Vec::new()),
        ]));
    };
    let link = state.link();
    let offset = if link == LinkState::Connected {
        state.offset()
    } else {
        -1
    };
    Ok(Reply::Array(vec![
        Reply::bulk_str("slave"),
        Reply::bulk_str(&primary.host),
        Reply::Int(primary.port.into()),
        Reply::bulk_str(link.name()),
        Reply::Int(offset),
    ]))
}

#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("replicaof", 3, Group::Server, replicaof)
        .flags(ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING)
        .acl(acl::ADMIN | DANGEROUS)
        .syntax("host port")
        .doc("5.0.0", "Configures a server as replica of another, or promotes it to a master."),
    CommandSpec::new("slaveof", 3, Group::Server, replicaof)
        .flags(ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING)
        .acl(acl::ADMIN | DANGEROUS)
        .syntax("host port")
        .doc("1.0.0", "Sets a Redis server as a replica of another, or promotes it to being a master."),
    CommandSpec::new("role", 1, Group::Server, role)
        .flags(NOSCRIPT | LOADING | STALE | FAST)
        .acl(acl::ADMIN | DANGEROUS)
        .doc("2.8.12", "Returns the replication role."),
];
