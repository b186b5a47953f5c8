//! The ACL check dispatch, EXEC and scripts run before a command when
//! the client's user is restricted; below the families, so that those
//! that run other commands reach it without the ACL family.

use bytes::Bytes;

use super::auth;
use super::registry::registry;
use super::reply::client_line;
use super::spec::{CommandSpec, flag};
use crate::context::acl::{LogEntry, Selector, User};
use crate::context::{Client, Shared};
use crate::error::CmdError;

/// What a restricted user was refused, with the argument that was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Denied {
    Command,
    Key(usize),
    Channel(usize),
}

/// Where a refused command came from, as ACL LOG names it.
#[derive(Debug, Clone, Copy)]
pub enum Context {
    TopLevel,
    Multi,
    Lua,
}

impl Denied {
    fn reason(self) -> &'static str {
        match self {
            Denied::Command => "command",
            Denied::Key(_) => "key",
            Denied::Channel(_) => "channel",
        }
    }

    /// The command's name, or the refused key or channel.
    fn object(self, id: usize, args: &[Bytes]) -> String {
        match self {
            Denied::Command => registry().full_names[id].clone(),
            Denied::Key(i) | Denied::Channel(i) => String::from_utf8_lossy(&args[i]).into_owned(),
        }
    }

    /// Dispatch's reply.
    pub fn error(self, id: usize) -> CmdError {
        CmdError::other(match self {
            Denied::Command => format!(
                "NOPERM this user has no permissions to run the '{}' command",
                registry().full_names[id]
            ),
            Denied::Key(_) => {
                "NOPERM this user has no permissions to access one of the keys used as arguments"
                    .into()
            }
            Denied::Channel(_) => {
                "NOPERM this user has no permissions to access one of the channels used as arguments"
                    .into()
            }
        })
    }

    /// EXEC's reply for a queued command the rules no longer allow.
    pub fn exec_error(self) -> CmdError {
        let reason = match self {
            Denied::Command => "no permission to execute the command or subcommand",
            Denied::Key(_) => "no permission to touch the specified keys",
            Denied::Channel(_) => "no permission to access one of the channels used as arguments",
        };
        CmdError::other(format!(
            "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {reason}"
        ))
    }

    /// `redis.call`'s error.
    pub fn script_error(self) -> CmdError {
        CmdError::other(match self {
            Denied::Command => {
                "ERR The user executing the script can't run this command or subcommand"
            }
            Denied::Key(_) => {
                "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments"
            }
            Denied::Channel(_) => {
                "ERR The user executing the script can't publish to the channel mentioned in the command"
            }
        })
    }
}

/// Whether the client's user may run a command line, asked without
/// running it (`redis.acl_check_cmd`): nothing is logged.
pub fn permits(client: &Client, id: usize, args: &[Bytes]) -> bool {
    client.user.unrestricted() || allowed(&client.user.rules(), id, args).is_ok()
}

/// Checks a command against the client's user, logging a refusal.
pub fn check(
    shared: &Shared,
    client: &Client,
    id: usize,
    args: &[Bytes],
    context: Context,
) -> Result<(), Denied> {
    let denied = allowed(&client.user.rules(), id, args).err();
    let Some(denied) = denied else {
        return Ok(());
    };
    let context = match context {
        Context::TopLevel if client.multi.is_some() => "multi",
        Context::TopLevel => "toplevel",
        Context::Multi => "multi",
        Context::Lua => "lua",
    };
    shared.acl.log(
        LogEntry {
            count: 1,
            reason: denied.reason(),
            context,
            object: denied.object(id, args),
            username: client.user.name.clone(),
            created_ms: shared.now_ms(),
            client_info: client_line(shared, &client.handle, client.query_bytes),
        },
        auth::log_max_len(shared),
    );
    Err(denied)
}

/// The first selector that allows the command passes it; otherwise the
/// most telling refusal (channels over keys over commands, later
/// arguments over earlier) is the answer, as Redis picks it.
pub(super) fn allowed(user: &User, id: usize, args: &[Bytes]) -> Result<(), Denied> {
    let spec = registry().specs[id];
    let mut worst = Denied::Command;
    for selector in user.all_selectors() {
        match selector_allows(selector, spec, id, args) {
            Ok(()) => return Ok(()),
            Err(denied) => worst = worst.max(denied),
        }
    }
    Err(worst)
}

fn selector_allows(
    selector: &Selector,
    spec: &CommandSpec,
    id: usize,
    args: &[Bytes],
) -> Result<(), Denied> {
    if !spec.has(flag::NO_AUTH) && !selector.allows_command(id, args.get(1).map(|a| &a[..])) {
        return Err(Denied::Command);
    }
    if !selector.all_keys {
        for (i, key) in spec.key_positions(args).filter(|(_, k)| !k.is_not_key()) {
            let flags = spec.key_flags(key, args);
            let read = flags.contains(&"access");
            let write = flags
                .iter()
                .any(|f| matches!(*f, "insert" | "delete" | "update"));
            if !selector.allows_key(&args[i], read, write) {
                return Err(Denied::Key(i));
            }
        }
    }
    if !selector.all_channels
        && let Some(channels) = spec.channels
    {
        let (span, pattern) = channels.span(args.len());
        if let Some(i) = span
            .into_iter()
            .find(|&i| !selector.allows_channel(&args[i], pattern))
        {
            return Err(Denied::Channel(i));
        }
    }
    Ok(())
}
