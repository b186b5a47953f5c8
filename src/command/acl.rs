//! ACL: the ACL command and its subcommands. The check a restricted
//! user's commands pass is in `permissions`.

use std::sync::LazyLock;

use bytes::Bytes;

use super::permissions::{Denied, allowed};
use super::registry::registry;
use super::reply::{help_reply, subcommand_args_error};
use super::spec::Group;
use super::spec::flag::{ADMIN, LOADING, NOSCRIPT, STALE};
use super::{CommandSpec, Ctx, spec};
use crate::context::acl::{Catalog, Selector, User};
use crate::context::{Client, Shared};
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;

/// The command table as ACL rules see it.
pub static CATALOG: LazyLock<Catalog> = LazyLock::new(|| {
    static CATEGORIES: LazyLock<Vec<(u32, &'static str)>> = LazyLock::new(|| {
        spec::acl::NAMES
            .iter()
            .map(|(bit, name)| (*bit, &name[1..]))
            .collect()
    });
    let reg = registry();
    let mut subs = vec![Vec::new(); reg.specs.len()];
    let mut top = Vec::new();
    for (id, full) in reg.full_names.iter().enumerate() {
        match full.split_once('|') {
            Some((parent, _)) => {
                if let Some(parent) = reg.lookup_full(parent) {
                    subs[parent].push(id);
                }
            }
            None => top.push(id),
        }
    }
    Catalog {
        names: reg.full_names.clone(),
        categories: reg.specs.iter().map(|s| s.acl_categories()).collect(),
        subs,
        top,
        category_names: CATEGORIES.as_slice(),
        by_name: reg
            .full_names
            .iter()
            .enumerate()
            .map(|(id, n)| (n.clone(), id))
            .collect(),
    }
});

fn username(arg: &Bytes) -> String {
    String::from_utf8_lossy(arg).into_owned()
}

/// SETUSER's arguments with each `( … )` selector joined into one.
fn merge_selectors(args: &[Bytes]) -> CmdResult<Vec<String>> {
    let mut ops = Vec::new();
    let mut open: Option<String> = None;
    for arg in args {
        let arg = String::from_utf8_lossy(arg).into_owned();
        match open.as_mut() {
            Some(selector) => {
                selector.push(' ');
                selector.push_str(&arg);
            }
            None if arg.starts_with('(') => open = Some(arg.clone()),
            None => ops.push(arg.clone()),
        }
        if open.as_ref().is_some_and(|s| s.ends_with(')')) {
            ops.extend(open.take());
        }
    }
    match open {
        Some(selector) => Err(CmdError::other(format!(
            "ERR Unmatched parenthesis in acl selector starting at '{}'.",
            selector.split(' ').next().unwrap_or_default()
        ))),
        None => Ok(ops),
    }
}

pub fn setuser(ctx: &mut Ctx) -> CmdResult<Reply> {
    let name = username(ctx.arg(2));
    if name.contains([' ', '\0']) {
        return Err(CmdError::other(
            "ERR Usernames can't contain spaces or null characters",
        ));
    }
    let ops = merge_selectors(&ctx.args[3..])?;
    ctx.shared
        .acl
        .set_user(&CATALOG, &name, &ops)
        .map_err(|(i, e)| {
            CmdError::other(format!(
                "ERR Error in ACL SETUSER modifier '{}': {}",
                ops[i],
                e.text()
            ))
        })?;
    disconnect_revoked_subscribers(ctx.shared, &name);
    Ok(Reply::OK)
}

/// A user's clients subscribed to a channel or pattern its rules no longer
/// allow are disconnected, as Redis 7.0 does.
fn disconnect_revoked_subscribers(shared: &Shared, name: &str) {
    let Some(slot) = shared.acl.user(name) else {
        return;
    };
    let revoked: Vec<u64> = {
        let user = slot.rules();
        if user.all_selectors().any(|s| s.all_channels) {
            return;
        }
        shared
            .pubsub
            .subscribers()
            .into_iter()
            .filter(|(kind, channel, _)| {
                let pattern = *kind == crate::pubsub::Kind::Pattern;
                !user
                    .all_selectors()
                    .any(|s| s.allows_channel(channel, pattern))
            })
            .flat_map(|(_, _, ids)| ids)
            .collect()
    };
    for id in revoked {
        if let Some(handle) = shared.clients.get(&id)
            && handle.info.lock().user == name
        {
            handle.kill();
        }
    }
}

fn selector_map(selector: &Selector) -> Vec<(Reply, Reply)> {
    vec![
        (
            Reply::bulk_str("commands"),
            Reply::bulk_str(&selector.describe_commands(&CATALOG)),
        ),
        (
            Reply::bulk_str("keys"),
            Reply::bulk_str(&selector.describe_keys()),
        ),
        (
            Reply::bulk_str("channels"),
            Reply::bulk_str(&selector.describe_channels()),
        ),
    ]
}

pub fn getuser(ctx: &mut Ctx) -> CmdResult<Reply> {
    let Some(slot) = ctx.shared.acl.user(&username(ctx.arg(2))) else {
        return Ok(Reply::Nil);
    };
    let user = slot.rules();
    let mut map = vec![
        (
            Reply::bulk_str("flags"),
            Reply::Set(user.flags().into_iter().map(Reply::bulk_str).collect()),
        ),
        (
            Reply::bulk_str("passwords"),
            Reply::Array(user.passwords.iter().map(|h| Reply::bulk_str(h)).collect()),
        ),
    ];
    map.extend(selector_map(&user.root));
    let selectors = user
        .selectors
        .iter()
        .map(|s| Reply::Map(selector_map(s)))
        .collect();
    map.push((Reply::bulk_str("selectors"), Reply::Array(selectors)));
    Ok(Reply::Map(map))
}

pub fn deluser(ctx: &mut Ctx) -> CmdResult<Reply> {
    let names: Vec<String> = ctx.args[2..].iter().map(username).collect();
    if names.iter().any(|n| n == "default") {
        return Err(CmdError::other("ERR The 'default' user cannot be removed"));
    }
    let mut deleted = 0;
    for name in &names {
        if ctx.shared.acl.delete(name) {
            deleted += 1;
            disconnect_users_of(ctx.shared, name, Some(ctx.client));
        }
    }
    Ok(Reply::Int(deleted))
}

/// A deleted user's clients are disconnected, as Redis frees them; the
/// client that deleted its own user gets its reply first.
fn disconnect_users_of(shared: &Shared, name: &str, mut current: Option<&mut Client>) {
    for entry in shared.clients.iter() {
        let handle = entry.value();
        if handle.info.lock().user != name {
            continue;
        }
        match current.as_deref_mut() {
            Some(client) if client.id == handle.id => client.close_after_reply = true,
            _ => handle.kill(),
        }
    }
}

fn list_lines(shared: &Shared) -> Vec<String> {
    shared
        .acl
        .all()
        .iter()
        .map(|slot| format!("user {} {}", slot.name, slot.rules().describe(&CATALOG)))
        .collect()
}

pub fn list(ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(Reply::array_of_bulks(
        list_lines(ctx.shared).into_iter().map(Bytes::from),
    ))
}

pub fn users(ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(Reply::array_of_bulks(
        ctx.shared.acl.names().into_iter().map(Bytes::from),
    ))
}

pub fn whoami(ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(Reply::bulk_str(&ctx.client.user.name))
}

/// CAT and LOG take one optional argument.
fn at_most_one_argument(ctx: &Ctx) -> CmdResult<()> {
    if ctx.args.len() > 3 {
        return Err(subcommand_args_error("ACL", ctx.arg(1)));
    }
    Ok(())
}

pub fn cat(ctx: &mut Ctx) -> CmdResult<Reply> {
    at_most_one_argument(ctx)?;
    let Some(name) = ctx.args.get(2) else {
        return Ok(Reply::array_of_bulks(
            CATALOG.category_names.iter().map(|(_, n)| Bytes::from(*n)),
        ));
    };
    let name = String::from_utf8_lossy(name);
    let bit = CATALOG
        .category(&name)
        .ok_or_else(|| CmdError::other(format!("ERR Unknown category '{name}'")))?;
    let commands = CATALOG
        .names
        .iter()
        .zip(&CATALOG.categories)
        .filter(|(_, cats)| *cats & bit != 0)
        .map(|(n, _)| Bytes::from(n.clone()));
    Ok(Reply::array_of_bulks(commands))
}

pub fn genpass(ctx: &mut Ctx) -> CmdResult<Reply> {
    let bits = match ctx.args.get(2) {
        Some(arg) => crate::util::parse_i64(arg).ok_or(CmdError::NotInteger)?,
        None => 256,
    };
    if !(1..=4096).contains(&bits) {
        return Err(CmdError::other(
            "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096",
        ));
    }
    let chars = (bits as usize).div_ceil(4);
    let mut hex = crate::util::random_hex(chars);
    hex.truncate(chars);
    Ok(Reply::bulk_str(&hex))
}

pub fn log(ctx: &mut Ctx) -> CmdResult<Reply> {
    at_most_one_argument(ctx)?;
    let count = match ctx.args.get(2) {
        Some(arg) if arg.eq_ignore_ascii_case(b"reset") => {
            ctx.shared.acl.reset_log();
            return Ok(Reply::OK);
        }
        Some(arg) => {
            let n = crate::util::parse_i64(arg).ok_or(CmdError::NotInteger)?;
            // A negative count lists nothing, as in Redis.
            usize::try_from(n).unwrap_or(0)
        }
        None => 10,
    };
    let now = ctx.shared.now_ms();
    let entries = ctx.shared.acl.log_entries(count).into_iter().map(|e| {
        Reply::Map(vec![
            (Reply::bulk_str("count"), Reply::Int(e.count as i64)),
            (Reply::bulk_str("reason"), Reply::bulk_str(e.reason)),
            (Reply::bulk_str("context"), Reply::bulk_str(e.context)),
            (Reply::bulk_str("object"), Reply::bulk_str(&e.object)),
            (Reply::bulk_str("username"), Reply::bulk_str(&e.username)),
            (
                Reply::bulk_str("age-seconds"),
                Reply::Double(now.saturating_sub(e.created_ms) as f64 / 1000.0),
            ),
            (
                Reply::bulk_str("client-info"),
                Reply::bulk_str(&e.client_info),
            ),
        ])
    });
    Ok(Reply::Array(entries.collect()))
}

pub fn dryrun(ctx: &mut Ctx) -> CmdResult<Reply> {
    let name = username(ctx.arg(2));
    let slot = ctx
        .shared
        .acl
        .user(&name)
        .ok_or_else(|| CmdError::other(format!("ERR User '{name}' not found")))?;
    let args = &ctx.args[3..];
    let not_found = || {
        CmdError::other(format!(
            "ERR Command '{}' not found",
            String::from_utf8_lossy(&args[0])
        ))
    };
    let id = registry()
        .resolve(ctx.shared, args)
        .map_err(|_| not_found())?;
    if !registry().specs[id].arity_ok(args.len()) {
        return Err(CmdError::WrongArity(registry().full_names[id].clone()));
    }
    let text = match allowed(&slot.rules(), id, args) {
        Ok(()) => return Ok(Reply::OK),
        Err(Denied::Command) => format!(
            "This user has no permissions to run the '{}' command",
            registry().full_names[id]
        ),
        Err(Denied::Key(i)) => format!(
            "This user has no permissions to access the '{}' key",
            String::from_utf8_lossy(&args[i])
        ),
        Err(Denied::Channel(i)) => format!(
            "This user has no permissions to access the '{}' channel",
            String::from_utf8_lossy(&args[i])
        ),
    };
    Ok(Reply::bulk_str(&text))
}

fn no_acl_file() -> CmdError {
    CmdError::other(
        "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.",
    )
}

fn acl_file(shared: &Shared) -> CmdResult<String> {
    let path = shared.config.read().aclfile.clone();
    if path.is_empty() {
        return Err(no_acl_file());
    }
    Ok(path)
}

/// Reads every user from the ACL file; nothing changes unless every line
/// is valid. Clients of users the file drops are disconnected.
pub fn load_file(shared: &Shared, mut current: Option<&mut Client>) -> CmdResult<()> {
    let path = acl_file(shared)?;
    let text = std::fs::read_to_string(&path).map_err(|e| {
        CmdError::other(format!(
            "ERR Error loading ACLs, opening file '{path}': {}",
            crate::util::os_reason(&e)
        ))
    })?;
    let mut users: Vec<(String, User)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some((&first, rest)) = words.split_first() else {
            continue;
        };
        let fail = |why: &str| CmdError::other(format!("ERR {path}:{}: {why}. ", n + 1));
        let (Some(&name), true) = (rest.first(), first == "user") else {
            return Err(fail("should start with user keyword"));
        };
        if users.iter().any(|(u, _)| u == name) {
            return Err(fail(
                "Duplicate user found. A user can only be defined once in config files",
            ));
        }
        let args: Vec<Bytes> = rest[1..]
            .iter()
            .map(|w| Bytes::from(w.to_string()))
            .collect();
        let mut user = shared.acl.blank_user();
        for op in merge_selectors(&args)? {
            user.apply(&CATALOG, &op)
                .map_err(|e| fail(&format!("Error in applying operation '{op}': {}", e.text())))?;
        }
        users.push((name.to_string(), user));
    }
    for name in shared.acl.replace_all(users) {
        disconnect_users_of(shared, &name, current.as_deref_mut());
    }
    Ok(())
}

pub fn load(ctx: &mut Ctx) -> CmdResult<Reply> {
    load_file(ctx.shared, Some(ctx.client))?;
    Ok(Reply::OK)
}

pub fn save(ctx: &mut Ctx) -> CmdResult<Reply> {
    let path = acl_file(ctx.shared)?;
    let mut text = list_lines(ctx.shared).join("\n");
    text.push('\n');
    let tmp = format!("{path}.tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| CmdError::other(format!("ERR There was an error trying to save the ACLs. Please check the server logs for more information ({e})")))?;
    Ok(Reply::OK)
}

pub fn help(_ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(help_reply(
        "ACL",
        &[
            "CAT [<category>]",
            "    List all commands that belong to <category>, or all command categories",
            "    when no category is specified.",
            "DELUSER <username> [<username> ...]",
            "    Delete a list of users.",
            "DRYRUN <username> <command> [<arg> ...]",
            "    Returns whether the user can execute the given command without executing the command.",
            "GETUSER <username>",
            "    Get the user's details.",
            "GENPASS [<bits>]",
            "    Generate a secure 256-bit user password. The optional `bits` argument can",
            "    be used to specify a different size.",
            "LIST",
            "    Show users details in config file format.",
            "LOAD",
            "    Reload users from the ACL file.",
            "LOG [<count> | RESET]",
            "    Show the ACL log entries.",
            "SAVE",
            "    Save the current config to the ACL file.",
            "SETUSER <username> <attribute> [<attribute> ...]",
            "    Create or modify a user with the specified attributes.",
            "USERS",
            "    List all the registered usernames.",
            "WHOAMI",
            "    Return the current connection username.",
        ],
    ))
}

/// ACL's subcommands: all but HELP refuse scripts, and those that reveal or
/// change users are administrative.
const ACL_ADMIN: u32 = ADMIN | NOSCRIPT | LOADING | STALE;

const ACL_OPEN: u32 = NOSCRIPT | LOADING | STALE;

static ACL_SUBS: &[CommandSpec] = &[
    CommandSpec::new("cat", -2, Group::Server, cat)
        .flags(ACL_OPEN)
        .syntax("[categoryname]")
        .doc("6.0.0", "Lists the ACL categories, or the commands in one."),
    CommandSpec::new("deluser", -3, Group::Server, deluser)
        .flags(ACL_ADMIN)
        .syntax("username...")
        .doc("6.0.0", "Deletes users and disconnects their clients."),
    CommandSpec::new("dryrun", -4, Group::Server, dryrun)
        .flags(ACL_ADMIN)
        .syntax("username command [arg...]")
        .doc(
            "7.0.0",
            "Says whether a user could run a command, without running it.",
        ),
    CommandSpec::new("genpass", -2, Group::Server, genpass)
        .flags(ACL_OPEN)
        .syntax("[bits]")
        .doc("6.0.0", "Returns a random password (256 bits unless told)."),
    CommandSpec::new("getuser", 3, Group::Server, getuser)
        .flags(ACL_ADMIN)
        .syntax("username")
        .doc(
            "6.0.0",
            "Describes a user's flags, passwords and permissions.",
        ),
    CommandSpec::new("help", 2, Group::Server, help)
        .flags(LOADING | STALE)
        .doc("6.0.0", "Describes the ACL subcommands."),
    CommandSpec::new("list", 2, Group::Server, list)
        .flags(ACL_ADMIN)
        .doc("6.0.0", "Lists every user's rules in ACL file form."),
    CommandSpec::new("load", 2, Group::Server, load)
        .flags(ACL_ADMIN)
        .doc("6.0.0", "Replaces the users with those of the ACL file."),
    CommandSpec::new("log", -2, Group::Server, log)
        .flags(ACL_ADMIN)
        .syntax("[count | RESET]")
        .doc(
            "6.0.0",
            "Lists refused commands and logins, newest first, or clears the list.",
        ),
    CommandSpec::new("save", 2, Group::Server, save)
        .flags(ACL_ADMIN)
        .doc("6.0.0", "Writes the users to the ACL file."),
    CommandSpec::new("setuser", -3, Group::Server, setuser)
        .flags(ACL_ADMIN)
        .syntax("username [rule...]")
        .doc("6.0.0", "Creates a user or changes its rules."),
    CommandSpec::new("users", 2, Group::Server, users)
        .flags(ACL_ADMIN)
        .doc("6.0.0", "Lists the user names."),
    CommandSpec::new("whoami", 2, Group::Server, whoami)
        .flags(ACL_OPEN)
        .doc("6.0.0", "Returns the user this connection runs as."),
];

pub(super) static COMMANDS: &[CommandSpec] =
    &[CommandSpec::container("acl", Group::Server, ACL_SUBS)
        .doc("6.0.0", "Commands about ACL users and permissions.")];
