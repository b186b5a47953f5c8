//! REPLICAOF (SLAVEOF) and ROLE: whom this server follows, as the link in
//! `crate::replication` then carries out.

use super::Ctx;
use super::spec::acl::{self, DANGEROUS};
use super::spec::flag::{ADMIN, FAST, LOADING, NO_ASYNC_LOADING, NOSCRIPT, STALE};
use super::spec::{CommandSpec, Group};
use crate::config::parse_primary;
use crate::context::Shared;
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
    follow(ctx.shared, primary);
    Ok(Reply::OK)
}

/// Makes this server follow `primary` (or none): the config shows it,
/// the guard refuses writes as `replica-read-only` says, the link follows.
pub fn follow(shared: &Shared, primary: Option<Primary>) {
    let mut config = shared.config.write();
    config.replicaof = primary
        .as_ref()
        .map_or_else(String::new, |p| format!("{} {}", p.host, p.port));
    shared.guard.set_replica(primary.is_some(), &config);
    drop(config);
    shared.replica.follow(primary);
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

/// INFO's replication section.
pub fn info(shared: &Shared, line: &mut dyn FnMut(&str, &dyn std::fmt::Display)) {
    let state = &shared.replica;
    let history = state.history();
    let offset = state.offset();
    let synced = state.resume_point().is_some();
    let now_s = (shared.now_ms() / 1000) as i64;
    let secs_since = |ms: u64| {
        if ms == 0 {
            -1
        } else {
            now_s - (ms / 1000) as i64
        }
    };
    if let Some(primary) = state.primary() {
        let link = state.link();
        let up = link == LinkState::Connected;
        let config = shared.config.read();
        line("role", &"slave");
        line("master_host", &primary.host);
        line("master_port", &primary.port);
        line("master_link_status", &if up { "up" } else { "down" });
        let last_io = if up {
            secs_since(state.last_io_ms())
        } else {
            -1
        };
        line("master_last_io_seconds_ago", &last_io);
        line(
            "master_sync_in_progress",
            &i32::from(link == LinkState::Sync),
        );
        let applied = if synced { offset } else { 1 };
        line("slave_read_repl_offset", &applied);
        line("slave_repl_offset", &applied);
        if !up {
            line(
                "master_link_down_since_seconds",
                &secs_since(state.down_since_ms()),
            );
        }
        line("slave_priority", &config.replica_priority);
        line("slave_read_only", &i32::from(config.replica_read_only));
        line("replica_announced", &1);
    } else {
        line("role", &"master");
    }
    line("connected_slaves", &0);
    line("master_failover_state", &"no-failover");
    line("master_replid", &history.replid);
    line("master_replid2", &history.replid2);
    line("master_repl_offset", &offset);
    line("second_repl_offset", &history.second_offset);
    line("repl_backlog_active", &i32::from(synced));
    line("repl_backlog_size", &shared.config.read().repl_backlog_size);
    let (first, histlen) = if synced {
        (history.backlog_first, offset - history.backlog_first + 1)
    } else {
        (0, 0)
    };
    line("repl_backlog_first_byte_offset", &first);
    line("repl_backlog_histlen", &histlen);
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
