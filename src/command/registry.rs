//! The registry: every command and subcommand the families declare,
//! numbered, and the running of one of them. It sits below the families
//! so that those that run or describe other commands (EXEC, scripts,
//! COMMAND, ACL, CLIENT LIST's `cmd=`) reach it without naming the
//! command layer's root, which names every family.
//!
//! Only the root can list the families, so it builds the table and
//! installs it here (`install`) the first time anything reads
//! `command::REGISTRY`. Nothing can run a command before that: a server's
//! `Shared` is sized by `command::REGISTRY`, and every reader here is
//! given a `Shared`.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Instant;

use bytes::Bytes;

use super::ctx::Ctx;
use super::spec::{CommandSpec, flag};
use crate::context::renames::Called;
use crate::context::slowlog::Caller;
use crate::context::{Client, Shared};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{HASH_SLOTS, LockPlan, Locked};
use crate::protocol::Reply;
use crate::pubsub::Origin;
use crate::pubsub::tracking::{note_script_read, take_script_read};

/// Every command and subcommand, numbered for per-command statistics.
pub struct Registry {
    pub specs: Vec<&'static CommandSpec>,
    /// The top-level commands, in the order COMMAND lists them.
    pub commands: Vec<&'static CommandSpec>,
    /// `get`, `client|setname`.
    pub full_names: Vec<String>,
    /// Looked up for every command a client or a script sends. A fast
    /// hash is safe: the map is fixed at startup, so no input can build
    /// collision chains in it.
    by_name: HashMap<&'static [u8], usize, foldhash::fast::FixedState>,
    by_full_name: HashMap<String, usize>,
}

static TABLE: OnceLock<Registry> = OnceLock::new();

/// Builds the registry from the families' commands, in the order COMMAND
/// lists them; once: later calls return the first table.
pub(super) fn install(families: &[&'static [CommandSpec]]) -> &'static Registry {
    TABLE.get_or_init(|| {
        let mut reg = Registry {
            specs: Vec::new(),
            commands: Vec::new(),
            full_names: Vec::new(),
            by_name: HashMap::default(),
            by_full_name: HashMap::new(),
        };
        for spec in families.iter().copied().flatten() {
            reg.commands.push(spec);
            let id = reg.add(spec, spec.name.to_string());
            reg.by_name.insert(spec.name.as_bytes(), id);
            for sub in spec.subcommands {
                reg.add(sub, format!("{}|{}", spec.name, sub.name));
            }
        }
        reg
    })
}

/// The registry `install` built. Panics before it, which cannot happen
/// while a command runs (see the module's comment).
pub(crate) fn registry() -> &'static Registry {
    TABLE
        .get()
        .expect("command::REGISTRY installs the registry before any Shared exists")
}

impl Registry {
    fn add(&mut self, spec: &'static CommandSpec, full: String) -> usize {
        let id = self.specs.len();
        self.specs.push(spec);
        self.by_full_name.insert(full.clone(), id);
        self.full_names.push(full);
        id
    }

    pub fn lookup(&self, name: &[u8]) -> Option<usize> {
        let mut buf = [0u8; 32];
        let lower = buf.get_mut(..name.len())?;
        lower.copy_from_slice(name);
        lower.make_ascii_lowercase();
        self.by_name.get(&*lower).copied()
    }

    pub fn lookup_full(&self, full: &str) -> Option<usize> {
        self.by_full_name.get(full).copied()
    }

    /// Resolves a command line to the command or subcommand that runs it,
    /// among the commands this server offers.
    pub fn resolve(&self, shared: &Shared, args: &[Bytes]) -> CmdResult<usize> {
        let id = match shared.command_names.called(&args[0]) {
            Called::AsSent => self.lookup(&args[0]),
            Called::Command(original) => self.lookup(original.as_bytes()),
            Called::Removed => None,
        };
        let id = id
            .filter(|&id| offered(shared, self.specs[id]))
            .ok_or_else(|| unknown_command(args))?;
        let spec = self.specs[id];
        if spec.subcommands.is_empty() {
            return Ok(id);
        }
        let Some(sub) = args.get(1) else {
            return match spec.handler {
                Some(_) => Ok(id),
                None => Err(CmdError::WrongArity(spec.name.to_string())),
            };
        };
        let sub_name = String::from_utf8_lossy(sub).to_ascii_lowercase();
        self.lookup_full(&format!("{}|{}", spec.name, sub_name))
            .ok_or_else(|| CmdError::UnknownSubcommand {
                sub: String::from_utf8_lossy(sub).into_owned(),
                command: spec.name.to_string(),
            })
    }
}

/// Whether this server has the command at all (some of rlockd's own exist
/// only when enabled).
pub(crate) fn offered(shared: &Shared, spec: &CommandSpec) -> bool {
    !spec.has(flag::CLOCK_CONTROL) || shared.clock_control()
}

/// Redis echoes the command and the start of its arguments, each cut short,
/// so that a client sending a wrong command sees what arrived. It prints
/// them as C strings: lengths count bytes, and a NUL ends an argument.
pub fn unknown_command(args: &[Bytes]) -> CmdError {
    const ARGS_MAX: usize = 128;
    fn c_string(arg: &[u8], max: usize) -> &[u8] {
        let end = arg.iter().position(|&b| b == 0).unwrap_or(arg.len());
        &arg[..end.min(max)]
    }
    let mut rendered = Vec::new();
    for arg in &args[1..] {
        if rendered.len() >= ARGS_MAX {
            break;
        }
        let shown = c_string(arg, ARGS_MAX - rendered.len());
        rendered.push(b'\'');
        rendered.extend_from_slice(shown);
        rendered.extend_from_slice(b"' ");
    }
    CmdError::UnknownCommand {
        name: String::from_utf8_lossy(c_string(&args[0], ARGS_MAX)).into_owned(),
        args: String::from_utf8_lossy(&rendered).into_owned(),
    }
}

/// A hash slot: a number in 0..16384.
pub(super) fn slot_in_range(n: i64) -> Option<u16> {
    u16::try_from(n).ok().filter(|slot| *slot < HASH_SLOTS)
}

/// The shards a command line needs.
pub fn lock_plan(spec: &CommandSpec, args: &[Bytes]) -> LockPlan {
    if spec.has(flag::WHOLE_KEYSPACE) {
        LockPlan::All
    } else {
        LockPlan::for_keys(spec.key_args(args))
    }
}

/// Enters a command in the slow log if it took long enough: when it ran,
/// or for a blocking command when it was served (a timeout is not logged,
/// as in Redis 7.0).
pub fn log_if_slow(shared: &Shared, client: &Client, took: std::time::Duration, args: &[Bytes]) {
    if !shared.slowlog.is_slow(took) {
        return;
    }
    // Redis's script client has no address and no name.
    let caller = if client.for_script {
        Caller {
            addr: "?:0".into(),
            name: None,
        }
    } else {
        Caller {
            addr: client.handle.addr.to_string(),
            name: client.handle.info.lock().name.clone(),
        }
    };
    shared.slowlog.record(took, args, caller);
}

/// Runs a resolved command with its shards already held (directly, or as
/// part of EXEC).
pub fn execute(
    shared: &Shared,
    client: &mut Client,
    id: usize,
    args: &[Bytes],
    locked: &mut Locked<'_>,
) -> Reply {
    let spec = registry().specs[id];
    let Some(handler) = spec.handler else {
        return CmdError::WrongArity(spec.name.to_string()).into();
    };
    client.note_command(id);
    // A blocking command run again after a wakeup was shown the first time.
    let monitored = shared.pubsub.monitors.active() && client.retry_deadline.is_none();
    // A script's line comes before the lines of the commands it runs;
    // any other command's after it ran, with the database it left.
    if monitored && spec.has(flag::SCRIPT) {
        feed_monitors(shared, client, args);
    }
    // With the AOF on, a command that names the members it may change
    // has its changes recorded as theirs, not as its whole key.
    locked.declare_touch(client.db, args.get(1).map(|k| &k[..]), || {
        spec.touches.and_then(|touches| touches(args))
    });
    if spec.records_itself {
        locked.begin_command_record();
    }
    let started = Instant::now();
    let mut ctx = Ctx {
        args,
        shared,
        client,
        locked,
    };
    let result = handler(&mut ctx);
    ctx.locked.end_touch();
    if spec.records_itself && matches!(result, Ok(ref reply) if !matches!(reply, Reply::Error(_))) {
        record_as_command(&mut ctx, spec);
    }
    remember_reads(&ctx, spec);
    let took = started.elapsed();
    // A command that blocked is logged once served (see `log_if_slow`),
    // not by its first run, as in Redis 7.0.
    if !spec.has(flag::SKIP_SLOWLOG) && client.blocked.is_none() {
        log_if_slow(shared, client, took, args);
    }
    if monitored && !spec.has(flag::SKIP_MONITOR) && !spec.has(flag::ADMIN) {
        feed_monitors(shared, client, args);
    }
    let event = if spec.has(flag::FAST) {
        "fast-command"
    } else {
        "command"
    };
    shared.latency.observe(event, took);
    // A script's error reply counts as the script's failure too.
    let error = match &result {
        Err(e) | Ok(Reply::Error(e)) => Some(e),
        Ok(_) => None,
    };
    shared.stats.record_call(id, took, error.is_some());
    if let Some(e) = error
        && !matches!(e, CmdError::Counted(_))
    {
        shared.stats.record_error(e.code());
    }
    result.unwrap_or_else(Reply::Error)
}

/// Records a command that `records_itself` as its line, under its own
/// name (not one `rename-command` gave it, which replicas and the file's
/// readers do not know).
fn record_as_command(ctx: &mut Ctx, spec: &CommandSpec) {
    let name = spec.name.to_ascii_uppercase();
    let mut line: Vec<&[u8]> = Vec::with_capacity(ctx.args.len());
    line.push(name.as_bytes());
    line.extend(ctx.args[1..].iter().map(|a| &a[..]));
    ctx.locked.record_as_command(ctx.client.db, &line);
}

/// Remembers what a command read for a client tracking in default mode:
/// a command's own keys, or, once a script has read anything, the keys
/// the script declared (what Redis tracks for scripts).
fn remember_reads(ctx: &Ctx, spec: &CommandSpec) {
    let tracking = &ctx.shared.pubsub.tracking;
    if !tracking.active() {
        return;
    }
    let reads = spec.has(flag::READONLY) && !spec.has(flag::SCRIPT);
    let tracked = if ctx.client.for_script {
        if reads {
            note_script_read();
        }
        false
    } else if spec.has(flag::SCRIPT) {
        take_script_read()
    } else {
        reads && !spec.has(flag::PUBSUB)
    };
    if tracked {
        tracking.remember(ctx.client.id, spec.key_args(ctx.args));
    }
}

/// Administrative commands are never shown, as in Redis.
fn feed_monitors(shared: &Shared, client: &Client, args: &[Bytes]) {
    let origin = if client.for_script {
        Origin::Script
    } else {
        Origin::Client(&client.handle.addr)
    };
    shared.pubsub.monitors.feed(client.db, origin, args);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What sizes a server's `Shared` installs the table commands read.
    #[test]
    fn sizing_a_server_installs_the_table() {
        let sized: &Registry = *crate::command::REGISTRY;
        assert!(std::ptr::eq(sized, registry()));
    }
}
