//! REPLICAOF (SLAVEOF) and ROLE: whom this server follows, as the link in
//! `crate::replication` then carries out; REPLCONF, SYNC and PSYNC: a
//! replica's handshake, after which `crate::replication` serves the
//! connection as a replica's.

use super::Ctx;
use super::spec::acl::{self, DANGEROUS};
use super::spec::flag::{
    ADMIN, ALLOW_BUSY, FAST, LOADING, NO_ASYNC_LOADING, NO_MULTI, NOSCRIPT, STALE,
};
use super::spec::{CommandSpec, Group};
use crate::config::parse_primary;
use crate::context::ReplyMode;
use crate::context::client::SyncAsk;
use crate::context::failover::{FailoverAsk, FailoverState};
use crate::context::replica::{LinkState, Primary};
use crate::context::replicas::SyncState;
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;
use crate::util::parse_i64;

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

/// ROLE: `master`, its offset and its online replicas (address, port,
/// offset acknowledged), or `slave`, its primary, the link's state and
/// the offset applied.
pub fn role(ctx: &mut Ctx) -> CmdResult<Reply> {
    let state = &ctx.shared.replica;
    let Some(primary) = state.primary() else {
        let replicas = ctx
            .shared
            .replicas
            .all()
            .iter()
            .filter(|r| r.state() == SyncState::Online)
            .map(|r| {
                Reply::Array(vec![
                    Reply::bulk_str(&r.ip),
                    Reply::bulk_str(&r.port.to_string()),
                    Reply::bulk_str(&r.ack_offset().to_string()),
                ])
            })
            .collect();
        return Ok(Reply::Array(vec![
            Reply::bulk_str("master"),
            Reply::Int(state.offset()),
            Reply::Array(replicas),
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

/// REPLCONF option value ...: what a replica tells before it syncs.
/// ACK and GETACK outside a replica's link are answered with nothing,
/// as in Redis (the link reads them itself).
pub fn replconf(ctx: &mut Ctx) -> CmdResult<Reply> {
    if ctx.args.len().is_multiple_of(2) {
        return Err(CmdError::Syntax);
    }
    for pair in ctx.args[1..].chunks(2) {
        let (option, value) = (&pair[0], &pair[1]);
        let hello = &mut ctx.client.replica_hello;
        match option.to_ascii_lowercase().as_slice() {
            b"listening-port" => {
                let port = parse_i64(value).ok_or(CmdError::NotInteger)?;
                // Redis keeps what fits its int, as it reads it.
                hello.port = port as u16;
            }
            b"ip-address" => {
                hello.ip = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"capa" => {
                if value.eq_ignore_ascii_case(b"eof") {
                    hello.capa_eof = true;
                } else if value.eq_ignore_ascii_case(b"psync2") {
                    hello.capa_psync2 = true;
                }
            }
            b"ack" | b"getack" => {
                if ctx.client.replies == ReplyMode::On {
                    ctx.client.replies = ReplyMode::Skip;
                }
                return Ok(Reply::OK);
            }
            // Options of later versions and of rdb-only syncs, which a
            // 7.0 primary takes and ignores.
            b"rdb-only" | b"rdb-filter-only" => {}
            _ => {
                return Err(CmdError::Other(format!(
                    "ERR Unrecognized REPLCONF option: {}",
                    String::from_utf8_lossy(option)
                )));
            }
        }
    }
    Ok(Reply::OK)
}

/// SYNC and PSYNC replid offset: the connection turns into a replica's
/// once this command is done (see `crate::replication`).
pub fn sync(ctx: &mut Ctx) -> CmdResult<Reply> {
    let replica = &ctx.shared.replica;
    // The primary's FAILOVER: this replica takes over before it answers.
    if ctx.args.len() > 3 && ctx.arg(3).eq_ignore_ascii_case(b"failover") {
        if ctx.arg(1)[..] != *replica.history().replid.as_bytes() {
            return Err(CmdError::other(
                "ERR PSYNC FAILOVER replid must match my replid.",
            ));
        }
        tracing::info!(
            "MASTER MODE enabled (failover request from {})",
            ctx.client.handle.addr
        );
        ctx.shared.follow(None);
    }
    if replica.is_replica() && replica.link() != LinkState::Connected {
        return Err(CmdError::other(
            "NOMASTERLINK Can't SYNC while not connected with my master",
        ));
    }
    let ask = if ctx.args.len() >= 3 {
        SyncAsk::Psync {
            replid: String::from_utf8_lossy(ctx.arg(1)).into_owned(),
            // Not a number: a full sync, as Redis falls back to one.
            offset: parse_i64(ctx.arg(2)).unwrap_or(-1),
        }
    } else {
        SyncAsk::Sync
    };
    ctx.client.sync_asked = Some(ask);
    Ok(Reply::OK)
}

/// FAILOVER [TO host port [FORCE]] [TIMEOUT ms] | ABORT, checked in
/// Redis's order; the switch itself runs in `context::failover`.
pub fn failover(ctx: &mut Ctx) -> CmdResult<Reply> {
    if ctx.shared.cluster.is_some() {
        return Err(CmdError::other("ERR FAILOVER not allowed in cluster mode."));
    }
    let failover = &ctx.shared.failover;
    if ctx.args.len() == 2 && ctx.arg(1).eq_ignore_ascii_case(b"abort") {
        if !failover.abort() {
            return Err(CmdError::other("ERR No failover in progress."));
        }
        return Ok(Reply::OK);
    }
    let mut ask = FailoverAsk {
        target: None,
        timeout: None,
        force: false,
    };
    let mut i = 1;
    while i < ctx.args.len() {
        let word = ctx.arg(i).to_ascii_lowercase();
        match &word[..] {
            b"timeout" if i + 1 < ctx.args.len() && ask.timeout.is_none() => {
                let ms = parse_i64(ctx.arg(i + 1)).ok_or(CmdError::NotInteger)?;
                if ms <= 0 {
                    return Err(CmdError::other(
                        "ERR FAILOVER timeout must be greater than 0",
                    ));
                }
                ask.timeout = Some(std::time::Duration::from_millis(ms as u64));
                i += 2;
            }
            b"to" if i + 2 < ctx.args.len() && ask.target.is_none() => {
                let port = parse_i64(ctx.arg(i + 2)).ok_or(CmdError::NotInteger)?;
                ask.target = Some(Primary {
                    host: String::from_utf8_lossy(ctx.arg(i + 1)).into_owned(),
                    port: port as u16,
                });
                i += 3;
            }
            b"force" if !ask.force => {
                ask.force = true;
                i += 1;
            }
            _ => return Err(CmdError::Syntax),
        }
    }
    if failover.state() != FailoverState::None {
        return Err(CmdError::other("ERR FAILOVER already in progress."));
    }
    if ctx.shared.replica.is_replica() {
        return Err(CmdError::other(
            "ERR FAILOVER is not valid when server is a replica.",
        ));
    }
    let replicas = ctx.shared.replicas.all();
    if replicas.is_empty() {
        return Err(CmdError::other("ERR FAILOVER requires connected replicas."));
    }
    if ask.force && (ask.timeout.is_none() || ask.target.is_none()) {
        return Err(CmdError::other(
            "ERR FAILOVER with force option requires both a timeout and target HOST and IP.",
        ));
    }
    if let Some(target) = &ask.target {
        let Some(replica) = replicas
            .iter()
            .find(|r| r.ip == target.host && r.port == target.port)
        else {
            return Err(CmdError::other(
                "ERR FAILOVER target HOST and PORT is not a replica.",
            ));
        };
        if replica.state() != SyncState::Online {
            return Err(CmdError::other(
                "ERR FAILOVER target replica is not online.",
            ));
        }
        tracing::info!("FAILOVER requested to {}:{}.", target.host, target.port);
    } else {
        tracing::info!("FAILOVER requested to any replica.");
    }
    failover.start(ctx.shared, ask);
    Ok(Reply::OK)
}

/// SYNC's and PSYNC's flags, as Redis 7.0 gives them.
const SYNC_FLAGS: u32 = ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI;

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
    CommandSpec::new("replconf", -1, Group::Server, replconf)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE | ALLOW_BUSY)
        .acl(acl::ADMIN | DANGEROUS)
        .doc("3.0.0", "An internal command for configuring the replication stream"),
    CommandSpec::new("psync", -3, Group::Server, sync)
        .flags(SYNC_FLAGS)
        .acl(acl::ADMIN | DANGEROUS)
        .syntax("replicationid offset")
        .doc("2.8.0", "Internal command used for replication"),
    CommandSpec::new("sync", 1, Group::Server, sync)
        .flags(SYNC_FLAGS).acl(acl::ADMIN | DANGEROUS)
        .doc("1.0.0", "Internal command used for replication"),
    CommandSpec::new("failover", -1, Group::Server, failover)
        .flags(ADMIN | NOSCRIPT | STALE)
        .acl(acl::ADMIN | DANGEROUS)
        .syntax("[TO host port [FORCE]] [ABORT] [TIMEOUT milliseconds]")
        .doc("6.2.0", "Starts a coordinated failover from a server to one of its replicas."),
];
