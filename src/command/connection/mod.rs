//! Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET, CLIENT
//! (its client-side caching subcommands in `tracking`).

mod tracking;

use bytes::Bytes;

use super::Ctx;
use super::auth;
use super::presets::{ALL_SHARDS_OK, CONN, NONDET};
use super::reply::{client_line, help_reply, is_pubsub, subcommand_args_error};
use super::session::{discard_state, forget_subscriptions, in_subscribed_mode, subscribed_pong};
use super::spec::acl::CONNECTION;
use super::spec::flag::{
    ADMIN, ALLOW_BUSY, ENDS_MULTI, FAST, KEEPS_CACHING, LOADING, NO_AUTH, NOSCRIPT, STALE,
    WHILE_SUBSCRIBED,
};
use super::spec::{CommandSpec, Group};
use crate::client_handle::ClientHandle;
use crate::context::Client;
use crate::context::{PauseMode, ReplyMode, Shared};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::Outcome;
use crate::protocol::REDIS_VERSION;
use crate::protocol::{Protocol, Reply};
use crate::util::parse_i64;

pub fn ping(ctx: &mut Ctx) -> CmdResult<Reply> {
    if ctx.args.len() <= 2 && in_subscribed_mode(ctx.client) {
        return Ok(subscribed_pong(ctx.args.get(1)));
    }
    match ctx.args.len() {
        1 => Ok(Reply::status("PONG")),
        2 => Ok(Reply::Bulk(ctx.arg(1).clone())),
        _ => Err(CmdError::WrongArity("ping".into())),
    }
}

pub fn echo(ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(Reply::Bulk(ctx.arg(1).clone()))
}

pub fn auth(ctx: &mut Ctx) -> CmdResult<Reply> {
    let args = ctx.args;
    let (user, pass) = match args.len() {
        2 => (None, &args[1]),
        3 => (Some(&args[1][..]), &args[2]),
        _ => return Err(CmdError::Syntax),
    };
    auth::authenticate(ctx.shared, ctx.client, user, pass)?;
    Ok(Reply::OK)
}

/// Client names are one printable word, so CLIENT LIST stays parseable.
fn validate_name(name: &[u8]) -> CmdResult<()> {
    if name.iter().all(|&c| (b'!'..=b'~').contains(&c)) {
        Ok(())
    } else {
        Err(CmdError::other(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        ))
    }
}

fn set_name(client: &mut Client, name: &Bytes) {
    client.handle.info.lock().name = (!name.is_empty()).then(|| name.clone());
}

pub fn hello(ctx: &mut Ctx) -> CmdResult<Reply> {
    let args = ctx.args;
    let mut protocol = ctx.client.protocol;
    if let Some(ver) = args.get(1) {
        protocol = match parse_i64(ver) {
            Some(2) => Protocol::Resp2,
            Some(3) => Protocol::Resp3,
            Some(_) => return Err(CmdError::other("NOPROTO unsupported protocol version")),
            None => {
                return Err(CmdError::other(
                    "ERR Protocol version is not an integer or out of range",
                ));
            }
        };
    }
    let mut auth = None;
    let mut name = None;
    let mut i = 2;
    while i < args.len() {
        let opt = args[i].to_ascii_uppercase();
        let more = args.len() - i - 1;
        if opt == b"AUTH" && more >= 2 {
            auth = Some((&args[i + 1][..], &args[i + 2][..]));
            i += 3;
        } else if opt == b"SETNAME" && more >= 1 {
            validate_name(&args[i + 1])?;
            name = Some(&args[i + 1]);
            i += 2;
        } else {
            return Err(CmdError::other(format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(&args[i])
            )));
        }
    }
    if let Some((user, pass)) = auth {
        auth::authenticate(ctx.shared, ctx.client, Some(user), pass)?;
    }
    if !ctx.client.authenticated {
        return Err(CmdError::other(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time",
        ));
    }
    if let Some(name) = name {
        set_name(ctx.client, name);
    }
    ctx.client.protocol = protocol;
    // Invalidation messages for this client take the new protocol at once.
    ctx.client.handle.info.lock().protocol = protocol.version();
    Ok(Reply::Map(vec![
        (Reply::bulk_str("server"), Reply::bulk_str("redis")),
        (Reply::bulk_str("version"), Reply::bulk_str(REDIS_VERSION)),
        (Reply::bulk_str("proto"), Reply::Int(protocol.version())),
        (Reply::bulk_str("id"), Reply::Int(ctx.client.id as i64)),
        (
            Reply::bulk_str("mode"),
            Reply::bulk_str(crate::cluster::mode_name(ctx.shared.cluster.as_ref())),
        ),
        (
            Reply::bulk_str("role"),
            Reply::bulk_str(if ctx.shared.replica.is_replica() {
                "replica"
            } else {
                "master"
            }),
        ),
        (Reply::bulk_str("modules"), Reply::Array(Vec::new())),
    ]))
}

pub fn select(ctx: &mut Ctx) -> CmdResult<Reply> {
    let index = parse_i64(ctx.arg(1)).ok_or(CmdError::InvalidDbIndex)?;
    // A cluster has database 0 only.
    if ctx.shared.cluster.is_some() && index != 0 {
        return Err(CmdError::SelectInClusterMode);
    }
    if index < 0 || index as usize >= ctx.shared.keyspace.databases() {
        return Err(CmdError::DbIndexOutOfRange);
    }
    ctx.client.db = index as usize;
    Ok(Reply::OK)
}

pub fn quit(ctx: &mut Ctx) -> CmdResult<Reply> {
    ctx.client.close_after_reply = true;
    Ok(Reply::OK)
}

pub fn reset(ctx: &mut Ctx) -> CmdResult<Reply> {
    discard_state(ctx.shared, ctx.client);
    forget_subscriptions(ctx.shared, ctx.client);
    ctx.client.db = 0;
    ctx.client.protocol = Protocol::Resp2;
    ctx.shared.pubsub.tracking.disable(ctx.client.id);
    ctx.client.replies = ReplyMode::On;
    let default = ctx.shared.acl.default_user();
    ctx.client.authenticated = auth::starts_authenticated(&default);
    ctx.client.handle.info.lock().user = default.name.clone();
    ctx.client.user = default;
    let mut info = ctx.client.handle.info.lock();
    info.name = None;
    info.no_evict = false;
    info.readonly = false;
    Ok(Reply::status("RESET"))
}

pub fn client_id(ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(Reply::Int(ctx.client.id as i64))
}

pub fn client_setname(ctx: &mut Ctx) -> CmdResult<Reply> {
    validate_name(ctx.arg(2))?;
    let name = ctx.arg(2).clone();
    set_name(ctx.client, &name);
    Ok(Reply::OK)
}

pub fn client_getname(ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(Reply::opt_bulk(ctx.client.handle.info.lock().name.clone()))
}

pub fn client_setinfo(ctx: &mut Ctx) -> CmdResult<Reply> {
    let attr = ctx.arg(2).to_ascii_lowercase();
    let value = String::from_utf8_lossy(ctx.arg(3)).into_owned();
    if value.bytes().any(|c| !(b'!'..=b'~').contains(&c)) {
        return Err(CmdError::other(format!(
            "ERR {} cannot contain spaces, newlines or special characters.",
            String::from_utf8_lossy(&attr)
        )));
    }
    let mut info = ctx.client.handle.info.lock();
    match &attr[..] {
        b"lib-name" => info.lib_name = Some(value),
        b"lib-ver" => info.lib_ver = Some(value),
        _ => {
            return Err(CmdError::other(format!(
                "ERR Unrecognized option '{}'",
                String::from_utf8_lossy(ctx.arg(2))
            )));
        }
    }
    Ok(Reply::OK)
}

/// CLIENT REPLY: OFF and SKIP are not answered themselves.
pub fn client_reply(ctx: &mut Ctx) -> CmdResult<Reply> {
    let choice = ctx.arg(2).to_ascii_lowercase();
    let replies = &mut ctx.client.replies;
    match &choice[..] {
        b"on" => *replies = ReplyMode::On,
        b"off" => *replies = ReplyMode::Off,
        b"skip" if *replies != ReplyMode::Off => *replies = ReplyMode::SkipNext,
        b"skip" => {}
        _ => return Err(CmdError::Syntax),
    }
    Ok(Reply::OK)
}

pub fn client_no_evict(ctx: &mut Ctx) -> CmdResult<Reply> {
    let on = match &ctx.arg(2).to_ascii_lowercase()[..] {
        b"on" => true,
        b"off" => false,
        _ => return Err(CmdError::Syntax),
    };
    ctx.client.handle.info.lock().no_evict = on;
    Ok(Reply::OK)
}

/// CLIENT LIST / KILL `TYPE`: normal, pubsub, (on a replica) its
/// primary's link, or a replica served.
fn has_type(handle: &ClientHandle, kind: &[u8]) -> bool {
    let info = handle.info.lock();
    let pubsub = is_pubsub(&info);
    match kind {
        b"normal" => !pubsub && !info.primary && !info.replica,
        b"pubsub" => pubsub,
        b"master" => info.primary,
        b"replica" | b"slave" => info.replica,
        _ => false,
    }
}

/// The clients still open: Redis frees a killed client at once, ours stays
/// registered until its task notices, and must not be listed or killed
/// (and counted) a second time meanwhile.
fn sorted_clients(shared: &Shared) -> Vec<std::sync::Arc<ClientHandle>> {
    let mut all: Vec<_> = shared
        .clients
        .iter()
        .filter(|c| !c.is_killed())
        .map(|c| c.value().clone())
        .collect();
    all.sort_by_key(|c| c.id);
    all
}

pub fn client_list(ctx: &mut Ctx) -> CmdResult<Reply> {
    let args = ctx.args;
    let mut ids: Option<Vec<u64>> = None;
    let mut client_type: Option<Vec<u8>> = None;
    let mut i = 2;
    while i < args.len() {
        match &args[i].to_ascii_lowercase()[..] {
            b"type" if i + 1 < args.len() => {
                let kind = args[i + 1].to_ascii_lowercase();
                match &kind[..] {
                    b"normal" | b"pubsub" | b"master" | b"replica" | b"slave" => {}
                    _ => {
                        return Err(CmdError::other(format!(
                            "ERR Unknown client type '{}'",
                            String::from_utf8_lossy(&args[i + 1])
                        )));
                    }
                }
                client_type = Some(kind);
                i += 2;
            }
            b"id" if i + 1 < args.len() => {
                let mut list = Vec::new();
                for arg in &args[i + 1..] {
                    match crate::util::parse_i64(arg) {
                        Some(n) if n > 0 => list.push(n as u64),
                        _ => return Err(CmdError::other("ERR Invalid client ID")),
                    }
                }
                ids = Some(list);
                i = args.len();
            }
            _ => return Err(CmdError::Syntax),
        }
    }
    let mut out = String::new();
    for handle in sorted_clients(ctx.shared) {
        if ids.as_ref().is_none_or(|l| l.contains(&handle.id))
            && client_type.as_ref().is_none_or(|t| has_type(&handle, t))
        {
            let qbuf = if handle.id == ctx.client.id {
                ctx.client.query_bytes
            } else {
                0
            };
            out.push_str(&client_line(ctx.shared, &handle, qbuf));
            out.push('\n');
        }
    }
    Ok(Reply::Verbatim(Bytes::from(out)))
}

pub fn client_info(ctx: &mut Ctx) -> CmdResult<Reply> {
    let mut line = client_line(ctx.shared, &ctx.client.handle, ctx.client.query_bytes);
    line.push('\n');
    Ok(Reply::Verbatim(Bytes::from(line)))
}

pub fn client_kill(ctx: &mut Ctx) -> CmdResult<Reply> {
    let args = ctx.args;
    let me = ctx.client.id;
    if args.len() == 3 {
        // The old form: CLIENT KILL addr:port.
        let addr = String::from_utf8_lossy(&args[2]);
        let target = sorted_clients(ctx.shared)
            .into_iter()
            .find(|c| c.addr.to_string() == addr)
            .ok_or_else(|| CmdError::other("ERR No such client"))?;
        kill(ctx, &target);
        return Ok(Reply::OK);
    }
    let mut id = None;
    let mut addr = None;
    let mut laddr = None;
    let mut user = None;
    let mut client_type: Option<Vec<u8>> = None;
    let mut skipme = true;
    let mut i = 2;
    while i + 1 < args.len() {
        let value = String::from_utf8_lossy(&args[i + 1]).into_owned();
        match &args[i].to_ascii_lowercase()[..] {
            b"id" => match parse_i64(&args[i + 1]) {
                Some(n) if n > 0 => id = Some(n as u64),
                _ => return Err(CmdError::other("ERR client-id should be greater than 0")),
            },
            b"addr" => addr = Some(value),
            b"laddr" => laddr = Some(value),
            b"skipme" => match value.to_ascii_lowercase().as_str() {
                "yes" => skipme = true,
                "no" => skipme = false,
                _ => return Err(CmdError::Syntax),
            },
            b"type" => {
                let kind = args[i + 1].to_ascii_lowercase();
                if !matches!(
                    &kind[..],
                    b"normal" | b"pubsub" | b"master" | b"replica" | b"slave"
                ) {
                    return Err(CmdError::other(format!(
                        "ERR Unknown client type '{value}'"
                    )));
                }
                client_type = Some(kind);
            }
            b"user" => {
                if ctx.shared.acl.user(&value).is_none() {
                    return Err(CmdError::other(format!("ERR No such user '{value}'")));
                }
                user = Some(value);
            }
            _ => return Err(CmdError::Syntax),
        }
        i += 2;
    }
    if i != args.len() {
        return Err(CmdError::Syntax);
    }
    let mut killed = 0;
    for target in sorted_clients(ctx.shared) {
        let matches = id.is_none_or(|v| v == target.id)
            && addr.as_ref().is_none_or(|a| *a == target.addr.to_string())
            && laddr
                .as_ref()
                .is_none_or(|a| *a == target.laddr.to_string())
            && client_type.as_ref().is_none_or(|t| has_type(&target, t))
            && user.as_ref().is_none_or(|u| *u == target.info.lock().user)
            && !(skipme && target.id == me);
        if matches {
            kill(ctx, &target);
            killed += 1;
        }
    }
    Ok(Reply::Int(killed))
}

/// Killing ourselves closes after this reply, as Redis does.
fn kill(ctx: &mut Ctx, target: &ClientHandle) {
    if target.id == ctx.client.id {
        ctx.client.close_after_reply = true;
    } else {
        target.kill();
    }
}

/// CLIENT PAUSE timeout [WRITE|ALL]: checks in Redis 7.0's order (the mode,
/// then the timeout), so a line with both wrong gets the same error.
pub fn client_pause(ctx: &mut Ctx) -> CmdResult<Reply> {
    let mode = match ctx.args {
        [_, _, _] => PauseMode::All,
        [_, _, _, mode] if mode.eq_ignore_ascii_case(b"write") => PauseMode::Write,
        [_, _, _, mode] if mode.eq_ignore_ascii_case(b"all") => PauseMode::All,
        [_, _, _, _] => {
            return Err(CmdError::other(
                "ERR CLIENT PAUSE mode must be WRITE or ALL",
            ));
        }
        _ => return Err(subcommand_args_error("CLIENT", ctx.arg(1))),
    };
    let ms = parse_i64(ctx.arg(2)).ok_or(CmdError::TimeoutNotNumber)?;
    let ms = u64::try_from(ms).map_err(|_| CmdError::TimeoutNegative)?;
    ctx.shared.pause(std::time::Duration::from_millis(ms), mode);
    Ok(Reply::OK)
}

pub fn client_unpause(ctx: &mut Ctx) -> CmdResult<Reply> {
    ctx.shared.unpause();
    Ok(Reply::OK)
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: ends another client's blocking
/// command as if it timed out, or with an error. A client held by CLIENT
/// PAUSE waits on no keys and is not unblocked (Redis 7.0.15 crashes there).
pub fn client_unblock(ctx: &mut Ctx) -> CmdResult<Reply> {
    let id = parse_i64(ctx.arg(2)).ok_or(CmdError::NotInteger)?;
    let with_error = match ctx.args {
        [_, _, _] => false,
        [_, _, _, reason] if reason.eq_ignore_ascii_case(b"timeout") => false,
        [_, _, _, reason] if reason.eq_ignore_ascii_case(b"error") => true,
        [_, _, _, _] => {
            return Err(CmdError::other(
                "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ));
        }
        _ => return Err(subcommand_args_error("CLIENT", ctx.arg(1))),
    };
    let waiter = u64::try_from(id)
        .ok()
        .and_then(|id| ctx.shared.clients.get(&id))
        .and_then(|c| c.info.lock().waiter.clone());
    let end = if with_error {
        Outcome::Failed(CmdError::other(
            "UNBLOCKED client unblocked via CLIENT UNBLOCK",
        ))
    } else {
        Outcome::Cancelled
    };
    Ok(Reply::Int(waiter.is_some_and(|w| w.interrupt(end)) as i64))
}

pub fn client_help(_ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(help_reply(
        "CLIENT",
        &[
            "ID",
            "    Return the ID of the current connection.",
            "GETNAME",
            "    Return the name of the current connection.",
            "SETNAME <name>",
            "    Assign the name <name> to the current connection.",
            "SETINFO <LIB-NAME|LIB-VER> <value>",
            "    Record the client library's name or version.",
            "LIST [TYPE <type>] [ID <id> [<id> ...]]",
            "    Describe the open connections.",
            "INFO",
            "    Describe the current connection.",
            "KILL <ip:port> | <filter> <value> [...]",
            "    Close connections by address, ID, LADDR or SKIPME.",
            "REPLY (ON|OFF|SKIP)",
            "    Control the replies sent to the current connection.",
            "NO-EVICT (ON|OFF)",
            "    Accepted for compatibility; rlockd evicts no clients.",
            "PAUSE <timeout> [WRITE|ALL]",
            "    Hold back every client's commands, or only writes, for <timeout> ms.",
            "UNPAUSE",
            "    End a pause now.",
            "UNBLOCK <clientid> [TIMEOUT|ERROR]",
            "    Unblock the specified blocked client.",
            "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
            "         [OPTIN] [OPTOUT] [NOLOOP]",
            "    Control server assisted client side caching.",
            "CACHING (YES|NO)",
            "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
            "GETREDIR",
            "    Return the client ID we are redirecting to when tracking is enabled.",
            "TRACKINGINFO",
            "    Report tracking status for the current connection.",
        ],
    ))
}

const ANY_STATE: u32 = NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY;

static CLIENT_SUBS: &[CommandSpec] = &[
    CommandSpec::new("id", 2, Group::Connection, client_id)
        .flags(CONN | KEEPS_CACHING)
        .acl(CONNECTION)
        .doc("5.0.0", "Returns the unique id of this connection."),
    CommandSpec::new("setname", 3, Group::Connection, client_setname)
        .flags(CONN | KEEPS_CACHING)
        .acl(CONNECTION)
        .syntax("connection-name")
        .doc("2.6.9", "Names this connection."),
    CommandSpec::new("getname", 2, Group::Connection, client_getname)
        .flags(CONN | KEEPS_CACHING)
        .acl(CONNECTION)
        .doc("2.6.9", "Returns the name of this connection, or nil."),
    CommandSpec::new("setinfo", 4, Group::Connection, client_setinfo)
        .flags(CONN | KEEPS_CACHING)
        .acl(CONNECTION)
        .syntax("LIB-NAME libname | LIB-VER libver")
        .doc(
            "7.2.0",
            "Records the client library's name or version for this connection.",
        ),
    CommandSpec::new("list", -2, Group::Connection, client_list)
        .flags(ADMIN | CONN | KEEPS_CACHING)
        .acl(CONNECTION)
        .tips(NONDET)
        .syntax("[TYPE (NORMAL | MASTER | REPLICA | PUBSUB)] [ID (client-id...)]")
        .doc("2.4.0", "Describes every open connection, one line each."),
    CommandSpec::new("info", 2, Group::Connection, client_info)
        .flags(CONN | KEEPS_CACHING)
        .acl(CONNECTION)
        .tips(NONDET)
        .doc(
            "6.2.0",
            "Describes this connection in CLIENT LIST's format.",
        ),
    CommandSpec::new("kill", -3, Group::Connection, client_kill)
        .flags(ADMIN | CONN | KEEPS_CACHING)
        .acl(CONNECTION)
        .syntax("ip:port | ([ID client-id] | [TYPE (NORMAL | MASTER | SLAVE | REPLICA | PUBSUB)] | [USER username] | [ADDR ip:port] | [LADDR ip:port] | [SKIPME yes/no])...")
        .doc(
            "2.4.0",
            "Closes connections chosen by address, id or other filters.",
        ),
    CommandSpec::new("no-evict", 3, Group::Connection, client_no_evict)
        .flags(ADMIN | CONN | KEEPS_CACHING)
        .acl(CONNECTION)
        .syntax("ON | OFF")
        .doc(
            "7.0.0",
            "Exempts this connection from client eviction (accepted; nothing is evicted).",
        ),
    CommandSpec::new("reply", 3, Group::Connection, client_reply)
        .flags(NOSCRIPT | LOADING | STALE | KEEPS_CACHING)
        .acl(CONNECTION)
        .syntax("ON | OFF | SKIP")
        .doc("3.2.0", "Turns this connection's replies off, on, or off for the next command only."),
    CommandSpec::new("pause", -3, Group::Connection, client_pause)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE | KEEPS_CACHING)
        .acl(CONNECTION)
        .syntax("timeout [WRITE | ALL]")
        .doc("2.9.50", "Holds back every client's commands, or only writes, for some milliseconds."),
    CommandSpec::new("unpause", 2, Group::Connection, client_unpause)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE | KEEPS_CACHING)
        .acl(CONNECTION)
        .doc("6.2.0", "Ends a CLIENT PAUSE at once."),
    CommandSpec::new("unblock", -3, Group::Connection, client_unblock)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE | KEEPS_CACHING)
        .acl(CONNECTION)
        .syntax("client-id [TIMEOUT | ERROR]")
        .doc("5.0.0", "Ends another client's blocking command, as a timeout or an error."),
    CommandSpec::new("tracking", -3, Group::Connection, tracking::client_tracking)
        .flags(CONN | KEEPS_CACHING)
        .acl(CONNECTION)
        .syntax("ON | OFF [REDIRECT client-id] [PREFIX prefix [PREFIX prefix ...]] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]")
        .doc("6.0.0", "Turns client-side caching's invalidation messages on or off."),
    CommandSpec::new("caching", 3, Group::Connection, tracking::client_caching)
        .flags(CONN | KEEPS_CACHING)
        .acl(CONNECTION)
        .syntax("YES | NO")
        .doc(
            "6.0.0",
            "Opts the next command in (OPTIN) or out (OPTOUT) of key tracking.",
        ),
    CommandSpec::new("getredir", 2, Group::Connection, tracking::client_getredir)
        .flags(CONN | KEEPS_CACHING)
        .acl(CONNECTION)
        .doc(
            "6.0.0",
            "Returns the client id invalidation messages are redirected to.",
        ),
    CommandSpec::new("trackinginfo", 2, Group::Connection, tracking::client_trackinginfo)
        .flags(CONN | KEEPS_CACHING)
        .acl(CONNECTION)
        .doc("6.2.0", "Describes how this connection tracks keys."),
    CommandSpec::new("help", 2, Group::Connection, client_help)
        .flags(LOADING | STALE | KEEPS_CACHING)
        .acl(CONNECTION)
        .doc("5.0.0", "Lists the CLIENT subcommands."),
];

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("ping", -1, Group::Connection, ping).flags(FAST | WHILE_SUBSCRIBED).acl(CONNECTION).tips(ALL_SHARDS_OK)
        .syntax("[message]")
        .doc("1.0.0", "Answers PONG, or echoes its argument: a liveness check."),
    CommandSpec::new("echo", 2, Group::Connection, echo).flags(LOADING | STALE | FAST).acl(CONNECTION)
        .syntax("message")
        .doc("1.0.0", "Returns its argument."),
    CommandSpec::new("hello", -1, Group::Connection, hello).flags(ANY_STATE).acl(CONNECTION)
        .syntax("[protover [AUTH (username password)] [SETNAME clientname]]")
        .doc("6.0.0", "Chooses the protocol version, optionally authenticates and names the connection, and describes the server."),
    CommandSpec::new("auth", -2, Group::Connection, auth).flags(ANY_STATE).acl(CONNECTION)
        .syntax("[username] password")
        .doc("1.0.0", "Authenticates this connection."),
    CommandSpec::new("select", 2, Group::Connection, select).flags(LOADING | STALE | FAST).acl(CONNECTION)
        .syntax("index")
        .doc("1.0.0", "Switches this connection to another database."),
    CommandSpec::new("quit", -1, Group::Connection, quit).flags(ANY_STATE | ENDS_MULTI | WHILE_SUBSCRIBED).acl(CONNECTION)
        .doc("1.0.0", "Closes the connection after the reply."),
    CommandSpec::new("reset", 1, Group::Connection, reset).flags(ANY_STATE | ENDS_MULTI | WHILE_SUBSCRIBED).acl(CONNECTION)
        .doc("6.2.0", "Returns the connection to its initial state."),
    CommandSpec::container("client", Group::Connection, CLIENT_SUBS).doc("2.4.0", "Commands about client connections."),
];
