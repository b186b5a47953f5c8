//! The command layer: the list of families, from which the registry of
//! commands (`registry`) is built, and the dispatch of a client's command
//! line: argument, permission and state checks, MULTI's queue, and its
//! run against the shards its keys live in.

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
mod permissions;
mod presets;
pub mod pubsub;
mod registry;
mod replication;
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

use std::sync::LazyLock;

use bytes::Bytes;

use crate::context::Client;
use crate::context::Shared;
use crate::context::guard::LOADING;
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;
use crate::scripting::shebang::ScriptFlags;
pub use ctx::Ctx;
use permissions::Context;
pub use registry::log_if_slow;
use registry::{Registry, execute, lock_plan};
pub use spec::{CommandSpec, flag};

/// The families, each a list of its commands, in the order COMMAND lists
/// them.
static FAMILIES: &[&[CommandSpec]] = &[
    connection::COMMANDS,
    cluster::COMMANDS,
    server::COMMANDS,
    replication::COMMANDS,
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

/// The registry, built and installed below on first use. A server's
/// `Shared` is sized by it, so it is in place before any command runs or
/// anything below reads it.
pub static REGISTRY: LazyLock<&'static Registry> = LazyLock::new(|| registry::install(FAMILIES));

/// Runs one command line from a client, queueing it instead inside MULTI.
pub fn dispatch(shared: &Shared, client: &mut Client, args: &[Bytes]) -> Reply {
    let reg: &Registry = *REGISTRY;
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
        && let Err(denied) = permissions::check(shared, client, id, args, Context::TopLevel)
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
    if shared.snapshots.loading() && !spec.has(flag::LOADING) {
        return reject(client, Some(id), CmdError::other(LOADING));
    }
    // After a restart without persistence (`lock-restart-grace-ms`) no
    // write is taken, scripts included, until every lease the previous
    // run could have granted is over; clients retry LOADING.
    if may_grant(spec) && shared.persistence.in_grace(|| shared.now_ms()) {
        return reject(client, Some(id), CmdError::other(LOADING));
    }
    if client.multi.is_some() && !spec.has(flag::RUNS_IN_MULTI | flag::ENDS_MULTI) {
        if spec.has(flag::NO_MULTI) {
            let e = CmdError::other("ERR Command not allowed inside a transaction");
            return reject(client, Some(id), e);
        }
        client.queue(id, args.to_vec());
        return Reply::status("QUEUED");
    }
    // After a promotion (`lock-promotion-grace-ms`), a write runs under
    // the journal and is undone if it made a new grant: created a key, or
    // lowered a counter (`Locked::made_a_grant`). A script
    // keeps its own journal and looks itself (`scripting/run.rs`). EXEC
    // takes shards of its own: a transaction that writes is refused whole.
    let journaled = !spec.has(flag::SCRIPT)
        && queued_or(client, spec, may_grant)
        && shared.promotion_grace.active(|| shared.now_ms());
    if journaled && spec.has(flag::EXEC) {
        return reject(client, Some(id), CmdError::other(LOADING));
    }
    let mut locked = match shared.keyspace.lock(&lock_plan(spec, args)) {
        Ok(locked) => locked,
        Err(e) => return reject(client, Some(id), e),
    };
    if client.from_primary {
        locked.find_past_deadlines();
    }
    if journaled {
        locked.begin_journal();
        locked.watch_counters();
        locked.journal_next(true);
    }
    let mut reply = execute(shared, client, id, args, &mut locked);
    if journaled {
        match locked.made_a_grant() {
            Ok(false) => locked.end_journal(),
            granted => {
                let e = locked.rollback().and(granted).err();
                reply = reject(client, Some(id), e.unwrap_or(CmdError::other(LOADING)));
            }
        }
    }
    // CLIENT CACHING covers the next command, or the whole transaction.
    if !spec.has(flag::KEEPS_CACHING) && client.multi.is_none() {
        shared.pubsub.tracking.command_done(client.id);
    }
    reply
}

/// Whether a command could grant a lock: any write, and any script that
/// may write.
fn may_grant(spec: &CommandSpec) -> bool {
    spec.has(flag::WRITE) || (spec.has(flag::SCRIPT) && !spec.has(flag::READONLY))
}

/// Whether `test` holds for the command, or for EXEC, for one it queued.
fn queued_or(client: &Client, spec: &CommandSpec, test: fn(&CommandSpec) -> bool) -> bool {
    if !spec.has(flag::EXEC) {
        return test(spec);
    }
    client
        .multi
        .iter()
        .flatten()
        .any(|(id, _)| test(REGISTRY.specs[*id]))
}

/// Redis's checks of the server's state before a command: over
/// `maxmemory`, one that may grow the data is refused, and so is anything
/// queued in MULTI (EXEC counts what it queued); after a failed
/// background save (MISCONF), without the replicas `min-replicas-to-write`
/// asks for, and on a read-only replica, a write is; and on a replica
/// not serving stale data whose link is down, anything not flagged
/// `stale`.
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
    let writes = flags & flag::WRITE != 0;
    if (writes || REGISTRY.full_names[id] == "ping")
        && shared.guard.disk_error(&shared.config.read())
    {
        return Err(CmdError::other(crate::context::guard::MISCONF));
    }
    if writes && shared.guard.replicas_missing() {
        return Err(CmdError::other(crate::context::guard::NOREPLICAS));
    }
    // In Redis's order: NOREPLICAS, READONLY, then MASTERDOWN.
    if writes && shared.guard.read_only() && !client.from_primary {
        return Err(CmdError::other(crate::context::guard::READONLY));
    }
    if flags & flag::STALE == 0
        && shared.guard.no_stale()
        && shared.replica.link() != crate::context::replica::LinkState::Connected
    {
        return Err(CmdError::other(crate::context::guard::MASTERDOWN));
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
