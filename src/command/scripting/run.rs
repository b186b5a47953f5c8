//! Running a script for EVAL and its kin.
//!
//! A script runs on a Lua state taken from the engine's pool, so scripts on
//! unrelated keys run in parallel. It holds the shards of its declared keys
//! for its whole run, which makes it atomic. A key it did not declare is
//! taken when the script reaches it if that cannot deadlock; otherwise, if
//! the script has not written yet, it starts over holding that shard too.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::native::{self, NativeRun};
use crate::cluster::common_slot;
use crate::command::permissions::{self, Context};
use crate::command::registry::{execute, lock_plan, registry};
use crate::command::{CommandSpec, Ctx, flag};
use crate::context::{Client, Shared, guard};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::LockPlan;
use crate::protocol::{Protocol, Reply};
use crate::pubsub::HeldMessages;
use crate::scripting::functions::Library;
use crate::scripting::shebang::ScriptFlags;
use crate::scripting::{Attempt, BusyMarks, Host, RunLimits, RunState, Runner, Target};

/// What runs: an EVAL script or a library's function.
pub(crate) enum Code<'c> {
    Script {
        sha: &'c str,
        body: &'c [u8],
    },
    Function {
        library: Arc<Library>,
        name: &'c str,
    },
}

/// How a run may behave, from the command and the script's flags.
#[derive(Clone, Copy)]
pub(crate) struct Mode {
    /// EVAL_RO, FCALL_RO, or a `no-writes` script.
    pub readonly: bool,
    /// `allow-cross-slot-keys`: calls in cluster mode may mix slots.
    pub cross_slot: bool,
    /// `allow-oom`: calls are not refused over `maxmemory`.
    pub allow_oom: bool,
}

impl Mode {
    /// The mode for a run by a `_RO` command (`ro`) of code declaring
    /// `flags` (`None`: an EVAL script without a shebang).
    pub fn new(ctx: &Ctx, ro: bool, flags: Option<ScriptFlags>) -> CmdResult<Mode> {
        let Some(flags) = flags else {
            return Ok(Mode {
                readonly: ro,
                cross_slot: false,
                allow_oom: false,
            });
        };
        if ro && !flags.has(ScriptFlags::NO_WRITES) {
            return Err(CmdError::other(
                "ERR Can not execute a script with write flag using *_ro command.",
            ));
        }
        if ctx.shared.cluster.is_some() && flags.has(ScriptFlags::NO_CLUSTER) {
            return Err(CmdError::other(
                "ERR Can not run script on cluster, 'no-cluster' flag is set.",
            ));
        }
        Ok(Mode {
            readonly: flags.has(ScriptFlags::NO_WRITES),
            cross_slot: flags.has(ScriptFlags::ALLOW_CROSS_SLOT),
            allow_oom: flags.has(ScriptFlags::ALLOW_OOM),
        })
    }
}

/// Runs a script or function with the declared keys' shards held in
/// `ctx.locked`.
pub(crate) fn run(
    ctx: &mut Ctx,
    code: Code,
    keys: &[Bytes],
    argv: &[Bytes],
    mode: Mode,
) -> CmdResult<Reply> {
    let shared = ctx.shared;
    let engine = &shared.scripts;
    // A well-known lock script runs natively. Read-only runs refuse its
    // writes, cluster mode checks each call's slot, and a restricted ACL
    // user's calls are each checked, and the promotion grace looks at what
    // the journal saw: all are Lua's to answer.
    if let Code::Script { sha, .. } = code
        && !mode.readonly
        && shared.cluster.is_none()
        && shared.guard.allows_native()
        && !shared.promotion_grace.active(|| shared.now_ms())
        && ctx.client.user.unrestricted()
        && let Some(native) = native::find(sha)
        && let Some(reply) = native(&mut NativeRun::new(ctx, keys, argv))
    {
        engine.counters.runs.add(1);
        return Ok(reply);
    }
    let limits = {
        let config = shared.config.read();
        RunLimits {
            heap: config.lua_heap_limit as usize,
            busy_ms: config.busy_reply_threshold,
        }
    };
    let mut vm = engine.take_vm()?;
    let _ = vm.set_heap_limit(limits.heap);
    let (compiled, runner, name) = match &code {
        Code::Script { sha, body } => (vm.function(sha, body), Runner::Script, *sha),
        Code::Function { library, name } => {
            (vm.library_function(library, name), Runner::Function, *name)
        }
    };
    let function = match compiled {
        Ok(f) => f,
        Err(e) => {
            engine.put_vm(vm, limits.heap);
            return Err(e);
        }
    };
    let target = Target {
        function: &function,
        runner,
        name,
        keys,
        args: argv,
        command: ctx.args,
    };
    engine.counters.runs.add(1);
    // The shards the run holds: worked out only once it must start over
    // holding more, which few runs do.
    let mut plan: Option<LockPlan> = None;
    // What the script publishes (keyspace events included) reaches
    // subscribers only once its writes are final.
    let held = HeldMessages::hold();
    let graced = shared.promotion_grace.active(|| shared.now_ms());
    let outcome = loop {
        ctx.locked.begin_journal();
        if graced {
            ctx.locked.watch_counters();
        }
        let busy = BusyMarks {
            flags: shared.keyspace.busy_flags(),
            held: ctx.locked.held(),
        };
        let client = Client::for_script(ctx.client);
        let mut calls = ScriptCalls {
            ctx: &mut *ctx,
            client,
            mode,
            retry: None,
            last: LastCommand::default(),
        };
        let attempt = engine.attempt(&mut vm, &target, &mut calls, limits, busy);
        // It reached a shard it could not take without risking deadlock,
        // or a command that needs the whole keyspace: its changes are
        // rolled back and it runs again holding these too.
        if let Some(more) = calls.retry.take() {
            let holding = plan
                .take()
                .unwrap_or_else(|| LockPlan::for_keys(keys.iter().map(|k| &k[..])));
            let plan = plan.insert(holding.union(more));
            held.discard();
            if let Err(e) = ctx.locked.rollback().and_then(|_| ctx.locked.relock(plan)) {
                break Err(e);
            }
            continue;
        }
        match attempt {
            Ok(Attempt::Done(reply)) => break Ok(reply),
            Ok(Attempt::Killed(e)) => {
                held.discard();
                break ctx.locked.rollback().and(Err(e));
            }
            Err(e) => break Err(e),
        }
    };
    // After a promotion, a run that made a new grant (created a key,
    // lowered a counter) is undone and refused (`lock-promotion-grace-ms`).
    let outcome = match outcome {
        Ok(reply) if graced => match ctx.locked.made_a_grant() {
            Ok(false) => Ok(reply),
            granted => {
                held.discard();
                let e = ctx.locked.rollback().and(granted).err();
                Err(e.unwrap_or(CmdError::other(guard::LOADING)))
            }
        },
        other => other,
    };
    ctx.locked.end_journal();
    held.release(&shared.pubsub);
    engine.put_vm(vm, limits.heap);
    outcome
}

/// The command side of one attempt: `redis.call` runs here, as a client
/// of its own that shares the caller's database.
struct ScriptCalls<'s, 'c, 'a> {
    ctx: &'s mut Ctx<'c, 'a>,
    client: Client,
    mode: Mode,
    /// Set once a call needs shards the run does not hold.
    retry: Option<LockPlan>,
    last: LastCommand,
}

/// The command the script called last, by the name it used: a script
/// calls the same command over and over, and the name matched as it is
/// skips lowering its case and looking it up. A command with subcommands
/// is not kept, as its second argument picks what runs.
#[derive(Default)]
struct LastCommand {
    name: [u8; 16],
    len: usize,
    id: Option<usize>,
}

impl LastCommand {
    fn resolve(&mut self, shared: &Shared, argv: &[Bytes]) -> Option<usize> {
        let name = &argv[0][..];
        if let Some(id) = self.id
            && self.name.get(..self.len) == Some(name)
        {
            return Some(id);
        }
        let registry = registry();
        let id = registry.resolve(shared, argv).ok()?;
        // A subcommand's id names no container: the name's own entry is asked.
        if registry.lookup(name) == Some(id)
            && registry.specs[id].subcommands.is_empty()
            && let Some(kept) = self.name.get_mut(..name.len())
        {
            kept.copy_from_slice(name);
            self.len = name.len();
            self.id = Some(id);
        }
        Some(id)
    }
}

impl ScriptCalls<'_, '_, '_> {
    /// Redis's checks of the server's state for one call: a write on a
    /// read-only replica, a write without the replicas `min-replicas-to-write` asks for, and until the script
    /// first writes, over `maxmemory`, a command that may grow the data
    /// (unless the script is `allow-oom`).
    fn state_refusal(&self, spec: &CommandSpec, run: &RunState) -> Option<CmdError> {
        let guard = &self.ctx.shared.guard;
        if !guard.armed() {
            return None;
        }
        if spec.has(flag::WRITE) && guard.read_only() && !self.ctx.client.from_primary {
            return Some(CmdError::other(guard::READONLY));
        }
        if spec.has(flag::WRITE) && guard.replicas_missing() {
            return Some(CmdError::other(guard::NOREPLICAS));
        }
        (spec.has(flag::DENYOOM)
            && !self.mode.allow_oom
            && !run.has_written()
            && guard.out_of_memory())
        .then(|| CmdError::other(guard::OOM))
    }
}

impl Host for ScriptCalls<'_, '_, '_> {
    fn acl_permits(&mut self, argv: &[Bytes]) -> Option<bool> {
        let id = registry().resolve(self.ctx.shared, argv).ok()?;
        Some(permissions::permits(&self.client, id, argv))
    }

    fn call(&mut self, argv: &[Bytes], resp3: bool, run: &RunState) -> Reply {
        let reply = self.call_resolved(argv, resp3, run);
        self.ctx.locked.forget_resolved();
        reply
    }
}

impl ScriptCalls<'_, '_, '_> {
    /// `call`, which may resolve the command's key (see
    /// `Locked::resolve`) for the call's lookups.
    fn call_resolved(&mut self, argv: &[Bytes], resp3: bool, run: &RunState) -> Reply {
        let fail = |text: &str| Reply::Error(CmdError::other(text));
        if self.retry.is_some() {
            return fail("ERR the script is being restarted");
        }
        // A refused call is an error reply of its own in the error stats
        // (and a rejected call of a known command), as in Redis: the
        // script sees it as already counted.
        let stats = &self.ctx.shared.stats;
        let refuse = |id: Option<usize>, e: CmdError| {
            stats.record_error(e.code());
            if let Some(id) = id {
                stats.record_rejected(id);
            }
            Reply::Error(e)
        };
        let Some(id) = self.last.resolve(self.ctx.shared, argv) else {
            return refuse(
                None,
                CmdError::other("ERR Unknown Redis command called from script"),
            );
        };
        let spec: &CommandSpec = registry().specs[id];
        let refused = if !spec.arity_ok(argv.len()) {
            Some(CmdError::other(
                "ERR Wrong number of args calling Redis command from script",
            ))
        } else if spec.has(flag::NOSCRIPT)
            && !self.ctx.shared.scripts.deny_lifted.load(Ordering::Relaxed)
        {
            Some(CmdError::other(
                "ERR This Redis command is not allowed from script",
            ))
        } else if let Some(denied) = (!self.client.user.unrestricted())
            .then(|| {
                permissions::check(self.ctx.shared, &self.client, id, argv, Context::Lua).err()
            })
            .flatten()
        {
            Some(denied.script_error())
        // Redis counts commands that may replicate (PUBLISH, PFCOUNT) as writes here.
        } else if (spec.has(flag::WRITE) || spec.has(flag::MAY_REPLICATE)) && self.mode.readonly {
            Some(CmdError::other(
                "ERR Write commands are not allowed from read-only scripts.",
            ))
        } else if self.ctx.shared.cluster.is_some()
            && !self.mode.cross_slot
            && common_slot(spec.routed_args(argv)).is_err()
        {
            Some(CmdError::ScriptCrossSlot)
        } else {
            self.state_refusal(spec, run)
        };
        if let Some(e) = refused {
            return refuse(Some(id), e);
        }
        // Everything the command touches is taken before it runs.
        let ensured = match spec.only_key(argv) {
            // One key, the common case, needs no plan built.
            // Its slot and its place in the map are worked out once, for
            // this lock, the journal and the command's own lookups.
            Some(key) if !spec.has(flag::WHOLE_KEYSPACE) => {
                let shard = self.ctx.locked.resolve(key);
                self.ctx.locked.ensure(&[shard])
            }
            _ => match lock_plan(spec, argv) {
                LockPlan::All if !self.ctx.locked.holds_all() => Err(CmdError::ShardBusy),
                LockPlan::Shards(shards) => self.ctx.locked.ensure(&shards),
                _ => Ok(()),
            },
        };
        match ensured {
            Ok(()) => {}
            Err(CmdError::ShardBusy) => {
                self.retry = Some(lock_plan(spec, argv));
                return fail("ERR the script is being restarted");
            }
            Err(e) => return fail(&e.to_string()),
        }
        let writes = spec.has(flag::WRITE);
        if writes {
            run.mark_wrote();
        }
        // What the command may change is kept for undoing: nothing for a
        // read, the members a command names for itself, else a copy of
        // each key it looks up.
        match spec.touches.and_then(|touches| touches(argv)) {
            Some(touch) => {
                if let Err(e) = self
                    .ctx
                    .locked
                    .journal_touch(self.client.db, &argv[1], &touch)
                {
                    return fail(&e.to_string());
                }
            }
            None => self
                .ctx
                .locked
                .journal_next(writes || spec.has(flag::MAY_REPLICATE)),
        }
        self.client.protocol = if resp3 {
            Protocol::Resp3
        } else {
            Protocol::Resp2
        };
        execute(self.ctx.shared, &mut self.client, id, argv, self.ctx.locked)
    }
}
