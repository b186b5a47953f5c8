//! Replies and errors many families give alike: subcommand help, a
//! subcommand's wrong arguments, and the client line CLIENT LIST and
//! ACL LOG show.

use std::sync::atomic::Ordering;

use super::registry::registry;
use crate::client_handle::{ClientAddr, ClientHandle, ClientInfo};
use crate::context::Shared;
use crate::error::CmdError;
use crate::protocol::Reply;

/// A subcommand called with more arguments than it takes.
pub(super) fn subcommand_args_error(command: &str, sub: &[u8]) -> CmdError {
    CmdError::other(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {command} HELP.",
        String::from_utf8_lossy(sub)
    ))
}

pub(super) fn help_reply(command: &str, lines: &[&str]) -> Reply {
    let mut out = vec![Reply::Status(
        format!("{command} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:").into(),
    )];
    out.extend(lines.iter().map(|l| Reply::Status(l.to_string().into())));
    out.push(Reply::status("HELP"));
    out.push(Reply::status("    Prints this help."));
    Reply::Array(out)
}

/// One CLIENT LIST line, with Redis's field names and order; `qbuf` is
/// the client's unread input (only the running client has any).
pub(super) fn client_line(shared: &Shared, handle: &ClientHandle, qbuf: usize) -> String {
    let now = shared.now_ms();
    let info = handle.info.lock().clone();
    let cmd = info
        .last_cmd
        .map_or("NULL", |id| registry().full_names[id].as_str());
    let name = info
        .name
        .as_ref()
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .unwrap_or_default();
    let mut flags = String::new();
    if info.monitor {
        flags.push('O');
    }
    if info.replica {
        flags.push('S');
    }
    if info.primary {
        flags.push('M');
    }
    if is_pubsub(&info) {
        flags.push('P');
    }
    if info.multi >= 0 {
        flags.push('x');
    }
    if info.blocked {
        flags.push('b');
    }
    let tracking = shared.pubsub.tracking.info(handle.id);
    if let Some(t) = &tracking {
        flags.push('t');
        if t.broken {
            flags.push('R');
        }
        if t.mode.bcast {
            flags.push('B');
        }
    }
    if matches!(handle.addr, ClientAddr::Unix(_)) {
        flags.push('U');
    }
    if info.readonly {
        flags.push('r');
    }
    if info.no_evict {
        flags.push('e');
    }
    if flags.is_empty() {
        flags.push('N');
    }
    format!(
        "id={} addr={} laddr={} fd=0 name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem={} tot-mem=0 events=r cmd={} user={} redir={} resp={} lib-name={} lib-ver={}",
        handle.id,
        handle.addr,
        handle.laddr,
        name,
        now.saturating_sub(handle.created_ms) / 1000,
        now.saturating_sub(handle.last_interaction_ms.load(Ordering::Relaxed)) / 1000,
        flags,
        info.db,
        info.sub,
        info.psub,
        info.ssub,
        info.multi,
        qbuf,
        handle.backlog.load(std::sync::atomic::Ordering::Relaxed),
        cmd,
        info.user,
        tracking.map_or(-1, |t| t.redirect as i64),
        info.protocol,
        info.lib_name.unwrap_or_default(),
        info.lib_ver.unwrap_or_default(),
    )
}

/// Subscribed to anything: CLIENT LIST's `P` flag and `TYPE pubsub`.
pub(super) fn is_pubsub(info: &ClientInfo) -> bool {
    info.sub + info.psub + info.ssub > 0
}
