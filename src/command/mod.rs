//! The command layer: the registry, built from the commands each family
//! declares beside its handlers; lookup, argument checks, and execution of
//! one command against the shards its keys live in.

pub(crate) mod acl;
mod args;
mod auth;
mod bitmaps;
mod blocking;
mod cluster;
mod connection;
mod ctx;
mod debug;
mod docs;
mod expire;
mod hashes;
mod hyperloglog;
mod keys;
mod lists;
mod memory;
mod migrate;
mod monitoring;
mod multi;
mod presets;
pub mod pubsub;
mod reply;
mod rlockd;
mod scripting;
mod server;
mod session;
mod sets;
mod sort;
pub mod spec;
mod streams;
mod strings;
mod values;
mod waiting;
mod zsets;

use std::collections::HashMap;
use std::sync::LazyLock;
use std::time::Instant;

use bytes::Bytes;

use crate::context::Client;
use crate::context::Shared;
use crate::context::slowlog::Caller;
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{LockPlan, Locked, slot_shard};
use crate::protocol::Reply;
use crate::pubsub::Origin;
use crate::pubsub::tracking::{note_script_read, take_script_read};
use crate::scripting::shebang::ScriptFlags;
pub use ctx::Ctx;
pub use spec::{CommandSpec, flag};

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

pub static REGISTRY: LazyLock<Registry> = LazyLock::new(|| {
    let mut reg = Registry {
        specs: Vec::new(),
        commands: Vec::new(),
        full_names: Vec::new(),
        by_name: HashMap::default(),
        by_full_name: HashMap::new(),
    };
    let families = [
        connection::COMMANDS,
        cluster::COMMANDS,
        server::COMMANDS,
        monitoring::COMMANDS,
        debug::COMMANDS,
        acl::COMMANDS,
        memory::COMMANDS,
        blocking::COMMANDS,
        keys::COMMANDS,
        sort::COMMANDS,
        migrate::COMMANDS,
        expire::COMMANDS,
        strings::COMMANDS,
        bitmaps::COMMANDS,
        hyperloglog::COMMANDS,
        hashes::COMMANDS,
        lists::COMMANDS,
        scripting::COMMANDS,
        zsets::COMMANDS,
        zsets::geo::COMMANDS,
        sets::COMMANDS,
        streams::COMMANDS,
        streams::read::COMMANDS,
        streams::groups::COMMANDS,
        streams::info::COMMANDS,
        multi::COMMANDS,
        pubsub::COMMANDS,
        rlockd::COMMANDS,
    ];
    for spec in families.into_iter().flatten() {
        reg.commands.push(spec);
        let id = reg.add(spec, spec.name.to_string());
        reg.by_name.insert(spec.name.as_bytes(), id);
        for sub in spec.subcommands {
            reg.add(sub, format!("{}|{}", spec.name, sub.name));
        }
    }
    reg
});

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
        let id = self
            .lookup(&args[0])
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

/// The shards a command line needs.
pub fn lock_plan(spec: &CommandSpec, args: &[Bytes]) -> LockPlan {
    if spec.has(flag::WHOLE_KEYSPACE) {
        LockPlan::All
    } else if spec.has(flag::SLOT_ARG) {
        let slot = args
            .get(2)
            .and_then(|arg| crate::util::parse_i64(arg))
            .and_then(cluster::slot_in_range);
        slot.map_or(LockPlan::Nothing, |slot| {
            LockPlan::Shards(vec![slot_shard(slot)])
        })
    } else {
        LockPlan::for_keys(spec.key_args(args))
    }
}

/// Runs one command line from a client, queueing it instead inside MULTI.
pub fn dispatch(shared: &Shared, client: &mut Client, args: &[Bytes]) -> Reply {
    let reg = &*REGISTRY;
    let reject = |client: &mut Client, id: Option<usize>, e: CmdError| {
        if let Some(id) = id {
            shared.stats.record_rejected(id);
        }
        // A refused EXEC ends the transaction, and says so.
        let e = match id {
            Some(id) if reg.specs[id].has(flag::EXEC) => {
                session::discard_state(shared, client);
                let text = e.to_string();
                CmdError::Other(format!(
                    "EXECABORT Transaction discarded because of: {}",
                    text.strip_prefix("ERR ").unwrap_or(&text)
                ))
            }
            _ => e,
        };
        shared.stats.record_error(e.code());
        client.reject(e)
    };
    let id = match reg.resolve(shared, args) {
        Ok(id) => id,
        Err(e) => return reject(client, None, e),
    };
    let spec = reg.specs[id];
    if !spec.arity_ok(args.len()) {
        let e = CmdError::WrongArity(reg.full_names[id].clone());
        return reject(client, Some(id), e);
    }
    if !client.authenticated && !spec.has(flag::NO_AUTH) {
        return reject(client, Some(id), CmdError::NoAuth);
    }
    // One flag keeps a user allowed everything (the default) off the check.
    if !client.user.unrestricted()
        && let Err(denied) = acl::check(shared, client, id, args, acl::Context::TopLevel)
    {
        return reject(client, Some(id), denied.error(id));
    }
    // Cluster mode: a command's keys must share a slot (EXEC checks those
    // of the commands it queued).
    if shared.cluster.is_some()
        && let Err(e) = crate::cluster::common_slot(spec.routed_args(args))
    {
        return reject(client, Some(id), e);
    }
    if shared.guard.armed()
        && let Err(e) = state_allows(shared, client, id, args)
    {
        return reject(client, Some(id), e);
    }
    if session::in_subscribed_mode(client) && !spec.has(flag::WHILE_SUBSCRIBED) {
        let e = session::subscribed_mode_error(&reg.full_names[id]);
        return reject(client, Some(id), e);
    }
    // After a restart without persistence (`lock-restart-grace-ms`) no
    // write is taken, scripts included, until every lease the previous
    // run could have granted is over; clients retry LOADING.
    if may_grant(spec) && shared.persistence.in_grace(|| shared.now_ms()) {
        let e = CmdError::other("LOADING Redis is loading the dataset in memory");
        return reject(client, Some(id), e);
    }
    if client.multi.is_some() && !spec.has(flag::RUNS_IN_MULTI | flag::ENDS_MULTI) {
        if spec.has(flag::NO_MULTI) {
            let e = CmdError::other("ERR Command not allowed inside a transaction");
            return reject(client, Some(id), e);
        }
        client.queue(id, args.to_vec());
        return Reply::status("QUEUED");
    }
    let mut locked = match shared.keyspace.lock(&lock_plan(spec, args)) {
        Ok(locked) => locked,
        Err(e) => return reject(client, Some(id), e),
    };
    let reply = execute(shared, client, id, args, &mut locked);
    // CLIENT CACHING covers the next command, or the whole transaction.
    if !spec.has(flag::KEEPS_CACHING) && client.multi.is_none() {
        shared.pubsub.tracking.command_done(client.id);
    }
    reply
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
    let spec = REGISTRY.specs[id];
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
    let started = Instant::now();
    let mut ctx = Ctx {
        args,
        shared,
        client,
        locked,
    };
    let result = handler(&mut ctx);
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

/// Whether a command could grant a lock: any write, and any script that
/// may write.
fn may_grant(spec: &CommandSpec) -> bool {
    spec.has(flag::WRITE) || (spec.has(flag::SCRIPT) && !spec.has(flag::READONLY))
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

/// Redis's checks of the server's state before a command: over
/// `maxmemory`, one that may grow the data is refused, and so is anything
/// queued in MULTI (EXEC counts what it queued); without the replicas
/// `min-replicas-to-write` asks for, a write is.
fn state_allows(shared: &Shared, client: &Client, id: usize, args: &[Bytes]) -> CmdResult<()> {
    let spec = REGISTRY.specs[id];
    let flags = if spec.has(flag::EXEC) {
        client
            .multi
            .iter()
            .flatten()
            .fold(0, |all, (id, queued)| all | run_flags(shared, *id, queued))
    } else {
        run_flags(shared, id, args)
    };
    let queueing = client.multi.is_some() && !spec.has(flag::ENDS_MULTI);
    if (queueing || flags & flag::DENYOOM != 0) && shared.guard.out_of_memory() {
        return Err(CmdError::other(crate::context::guard::OOM));
    }
    if flags & flag::WRITE != 0 && shared.guard.replicas_missing() {
        return Err(CmdError::other(crate::context::guard::NOREPLICAS));
    }
    Ok(())
}

/// A command's flags for this line: a script that declares flags writes
/// and grows the data as it declares (`no-writes`, `allow-oom`), as in
/// Redis; one without a shebang has its command's flags.
fn run_flags(shared: &Shared, id: usize, args: &[Bytes]) -> u32 {
    let spec = REGISTRY.specs[id];
    let Some(declared) = scripting::declared_flags(shared, spec, args) else {
        return spec.flags;
    };
    let mut flags = spec.flags & !(flag::WRITE | flag::DENYOOM);
    if !declared.has(ScriptFlags::NO_WRITES) {
        flags |= flag::WRITE;
        if !declared.has(ScriptFlags::ALLOW_OOM) {
            flags |= flag::DENYOOM;
        }
    }
    flags
}

/// Whether a command line writes or may publish: what `CLIENT PAUSE
/// WRITE` holds back (an EXEC counts if anything it would run does).
/// A script's declared flags stand in for its command's, as in Redis: a
/// `no-writes` EVAL or FCALL is not held back.
pub fn replicates(shared: &Shared, client: &Client, args: &[Bytes]) -> bool {
    let writes = |id: usize, args: &[Bytes]| {
        let spec = REGISTRY.specs[id];
        match scripting::declared_flags(shared, spec, args) {
            Some(flags) => !flags.has(ScriptFlags::NO_WRITES),
            None => spec.has(flag::WRITE) || spec.has(flag::MAY_REPLICATE),
        }
    };
    // What is refused before running (unknown, wrong arity) is refused
    // at once, paused or not, as in Redis.
    let Ok(id) = REGISTRY.resolve(shared, args) else {
        return false;
    };
    if !REGISTRY.specs[id].arity_ok(args.len()) {
        return false;
    }
    if REGISTRY.specs[id].has(flag::EXEC) {
        client
            .multi
            .iter()
            .flatten()
            .any(|(id, queued)| writes(*id, queued))
    } else {
        writes(id, args)
    }
}

/// Drops a disconnecting client's transaction and WATCHes.
pub fn forget_transaction(shared: &Shared, client: &mut Client) {
    session::discard_state(shared, client);
}
