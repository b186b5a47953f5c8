//! Lua scripting with Redis 7.0's semantics.
//!
//! A script runs on a Lua state taken from a pool, so scripts on unrelated
//! keys run in parallel. It holds the shards of its declared keys for its
//! whole run, which makes it atomic. A key it did not declare is taken
//! when the script reaches it if that cannot deadlock; otherwise, if the
//! script has not written yet, it starts over holding that shard too.

mod brackets;
mod call;
mod convert;
mod libs;
mod native;

use std::any::Any;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use bytes::Bytes;
use dashmap::DashMap;
use mlua::{Function, Lua, LuaOptions, MultiValue, StdLib, Table, Value};
use parking_lot::Mutex;

use crate::client::Client;
use crate::cluster::common_slot;
use crate::command::{CommandSpec, Ctx, REGISTRY, execute, flag, lock_plan};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{LockPlan, key_shard};
use crate::protocol::{Protocol, Reply};
use crate::pubsub::HeldMessages;
use convert::lua_to_reply;

const PRELUDE: &str = include_str!("prelude.lua");
/// Instructions between checks of a script's running time and of SCRIPT
/// KILL: often enough that a loop around slow library calls still stops
/// promptly, rarely enough that the check costs about 1% of a run.
const HOOK_EVERY: i32 = 1000;
/// A run still going after this long is a long one: its worker thread hands
/// its other tasks off.
const LONG_RUN: std::time::Duration = std::time::Duration::from_millis(10);
/// How long that hand-off holds the thread out of the runtime. The worker
/// that replaces it must have started and taken the thread's queue first:
/// if the thread took its queue back at once, clients queued there (and,
/// measured, every new client) waited until the script ended. 2 ms lost
/// that race about one time in three on a loaded 2-core machine; 50 ms
/// did not lose it in 15 tries. Only runs already past `LONG_RUN` pay it.
const HAND_OFF: std::time::Duration = std::time::Duration::from_millis(50);

pub fn sha1_hex(body: &[u8]) -> String {
    sha1_smol::Sha1::from(body).digest().to_string()
}

/// What SCRIPT KILL and the busy check need to know about a running script.
pub struct RunState {
    started: Instant,
    busy: AtomicBool,
    killed: AtomicBool,
    wrote: AtomicBool,
    /// Line the script was at when killed.
    kill_line: AtomicU64,
    /// The runtime worker running the script has handed its other work off.
    released: AtomicBool,
}

/// The run a Lua state is executing, where its hook and SCRIPT KILL find it.
#[derive(Default)]
struct RunSlot(Mutex<Option<ActiveRun>>);

struct ActiveRun {
    state: Arc<RunState>,
    /// `busy-reply-threshold` in milliseconds.
    threshold: u64,
    /// The keyspace's busy flags and the shards this run holds.
    flags: Arc<[AtomicBool]>,
    held: Vec<usize>,
    counters: Arc<ScriptCounters>,
}

impl RunSlot {
    /// The instruction-count hook: notices a script running past the busy
    /// threshold, and answers whether it has been asked to stop.
    fn check(&self) -> bool {
        let release = {
            let guard = self.0.lock();
            let Some(run) = guard.as_ref() else {
                return false;
            };
            let state = &run.state;
            if state.killed.load(Ordering::Acquire) {
                return true;
            }
            let elapsed = state.started.elapsed();
            if !state.busy.load(Ordering::Relaxed) && elapsed.as_millis() as u64 >= run.threshold {
                state.busy.store(true, Ordering::Release);
                run.counters.busy.fetch_add(1, Ordering::Relaxed);
                for &idx in &run.held {
                    run.flags[idx].store(true, Ordering::Release);
                }
            }
            elapsed >= LONG_RUN && !state.released.swap(true, Ordering::Relaxed)
        };
        if release {
            release_worker();
        }
        false
    }
}

/// A script still running after `LONG_RUN` is a long one: the async
/// worker thread it occupies hands its queued tasks to another thread, so
/// nothing waits behind it (tokio's non-stealable LIFO slot included).
fn release_worker() {
    use tokio::runtime::{Handle, RuntimeFlavor};
    if Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread) {
        // The replacement worker takes the queue while this closure runs.
        tokio::task::block_in_place(|| std::thread::sleep(HAND_OFF));
    }
}

struct Vm {
    lua: Lua,
    generation: u64,
    functions: HashMap<String, Function, foldhash::fast::RandomState>,
    ctx: Table,
    env: Table,
    run: Function,
    slot: Arc<RunSlot>,
}

impl Vm {
    fn new(generation: u64) -> mlua::Result<Vm> {
        let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG;
        // The debug library is loaded for the error handler only; the
        // prelude removes it from what scripts can reach.
        let lua = unsafe { Lua::unsafe_new_with(libs, LuaOptions::new()) };
        let globals = lua.globals();
        libs::bit::install(&lua, &globals)?;
        libs::cjson::install(&lua, &globals)?;
        libs::cmsgpack::install(&lua, &globals)?;
        libs::structs::install(&lua, &globals)?;
        libs::tables::install(&lua, &globals)?;
        libs::strings::install(&lua, &globals)?;
        let redis = lua.create_table()?;
        redis.set(
            "sha1hex",
            lua.create_function(|_, s: mlua::LuaString| Ok(sha1_hex(&s.as_bytes())))?,
        )?;
        redis.set("log", lua.create_function(log)?)?;
        // SAFETY: these follow the Lua C function protocol.
        redis.set("call", unsafe { lua.create_c_function(call::redis_call)? })?;
        redis.set("pcall", unsafe {
            lua.create_c_function(call::redis_pcall)?
        })?;
        redis.set("REDIS_VERSION", crate::command::REDIS_VERSION)?;
        redis.set("REDIS_VERSION_NUM", 0x0007_000f)?;
        globals.set("redis", redis)?;
        let debug: Table = globals.get("debug")?;
        let getinfo: Function = debug.get("getinfo")?;
        let ctx = lua.create_table()?;
        // SAFETY: as above.
        ctx.raw_set("set_resp", unsafe {
            lua.create_c_function(call::set_resp)?
        })?;
        ctx.raw_set("set_args", unsafe {
            lua.create_c_function(call::set_args)?
        })?;
        ctx.raw_set("killed", unsafe { lua.create_c_function(call::killed)? })?;
        // For loadstring and load inside scripts (CVE-2025-46819).
        ctx.raw_set(
            "relevel",
            lua.create_function(|lua, s: mlua::LuaString| {
                match brackets::relevel(&s.as_bytes()) {
                    Some(fixed) => lua.create_string(fixed),
                    None => Ok(s),
                }
            })?,
        )?;
        // The chunk name is a live string while the prelude compiles
        // (CVE-2025-49844: 5.1's parser does not anchor the one it makes).
        let name = "=prelude";
        let _anchor = lua.create_string(name)?;
        let (env, run): (Table, Function) =
            lua.load(PRELUDE)
                .set_name(name)
                .call((globals, getinfo, ctx.clone()))?;
        let slot = Arc::new(RunSlot::default());
        Ok(Vm {
            lua,
            generation,
            functions: HashMap::default(),
            ctx,
            env,
            run,
            slot,
        })
    }

    /// The compiler's message, fetched again from Lua as bytes: it may
    /// quote bytes of the script that are not UTF-8.
    fn compile_error(&self, body: &[u8], e: mlua::Error) -> CmdError {
        let mut text = b"ERR Error compiling script (new function): ".to_vec();
        let raw = self
            .ctx
            .get::<Function>("compile_error")
            .and_then(|f| f.call::<mlua::LuaString>(self.lua.create_string(body)?));
        match raw {
            Ok(message) => text.extend_from_slice(&message.as_bytes()),
            Err(_) => text.extend_from_slice(e.to_string().as_bytes()),
        }
        CmdError::RawText(text.into())
    }

    fn function(&mut self, sha: &str, body: &[u8]) -> CmdResult<Function> {
        if let Some(f) = self.functions.get(sha) {
            return Ok(f.clone());
        }
        let relevelled = brackets::relevel(body);
        let f = self
            .lua
            .load(relevelled.as_deref().unwrap_or(body))
            // A live string: the prelude holds it (CVE-2025-49844).
            .set_name("@user_script")
            .set_environment(self.env.clone())
            .into_function()
            .map_err(|e| self.compile_error(body, e))?;
        self.functions.insert(sha.to_string(), f.clone());
        Ok(f)
    }
}

/// The prelude has checked the level and the argument count.
fn log(_: &Lua, args: MultiValue) -> mlua::Result<()> {
    let level = match args.front() {
        Some(Value::Integer(i)) => *i,
        Some(Value::Number(n)) => *n as i64,
        _ => 2,
    };
    let text: Vec<String> = args
        .iter()
        .skip(1)
        .map(|v| v.to_string().unwrap_or_default())
        .collect();
    let text = text.join(" ");
    match level {
        0 => tracing::debug!(target: "script", "{text}"),
        3 => tracing::warn!(target: "script", "{text}"),
        _ => tracing::info!(target: "script", "{text}"),
    }
    Ok(())
}

#[derive(Default)]
pub struct ScriptEngine {
    /// Found by SHA1 hex: a fast hash is safe, no input can choose keys
    /// that collide in it without breaking SHA1.
    bodies: DashMap<String, Bytes, foldhash::fast::RandomState>,
    pool: Mutex<Vec<Vm>>,
    generation: AtomicU64,
    /// Every Lua state's run slot, for SCRIPT KILL.
    slots: Mutex<Vec<std::sync::Weak<RunSlot>>>,
    pub counters: Arc<ScriptCounters>,
}

/// Script activity since startup, for the metrics endpoint.
#[derive(Debug, Default)]
pub struct ScriptCounters {
    /// Scripts run (EVAL, EVALSHA and their _RO forms), each once however
    /// often it had to start over.
    pub runs: AtomicU64,
    /// Runs that went past `busy-reply-threshold`.
    pub busy: AtomicU64,
}

/// How one attempt at running a script ended.
enum Attempt {
    Done(Reply),
    /// It reached a shard it could not take without risking deadlock, or a
    /// command that needs the whole keyspace: its changes are rolled back
    /// and it runs again holding these too.
    Retry(LockPlan),
    /// SCRIPT KILL or a shutdown stopped it: its changes are rolled back.
    Killed(CmdError),
}

/// What `redis.call` works with during one attempt.
struct CallScope<'s, 'c, 'a> {
    ctx: &'s mut Ctx<'c, 'a>,
    client: Client,
    readonly: bool,
    run: &'s RunState,
    /// Where the instruction hook finds the run.
    slot: &'s RunSlot,
    retry: Option<LockPlan>,
    /// Follows `redis.setresp`.
    resp3: bool,
    /// The script's KEYS and ARGV.
    keys: &'s [Bytes],
    args: &'s [Bytes],
    /// The command line of the call in progress, its buffer kept between
    /// calls.
    line: Vec<Bytes>,
    /// The reply of the call in progress, until it is on the Lua stack.
    reply: Reply,
    /// A command that panicked: resumed once the run is out of Lua.
    panic: Option<Box<dyn Any + Send>>,
}

thread_local! {
    /// The `CallScope` of the attempt running on this thread; null between
    /// runs. `redis.call` finds it here.
    static ACTIVE: Cell<*mut ()> = const { Cell::new(std::ptr::null_mut()) };
}

/// The scope of the attempt running on this thread, if any.
fn with_active<R>(f: impl FnOnce(Option<&mut CallScope>) -> R) -> R {
    let scope = ACTIVE.get().cast::<CallScope>();
    // SAFETY: `attempt` points this at its live `CallScope` for exactly
    // the duration of the script's run on this thread and does not touch
    // it meanwhile; Lua calls back synchronously, one call at a time.
    f(unsafe { scope.as_mut() })
}

/// Whether SCRIPT KILL (or a shutdown) has asked the script running on
/// this thread to stop. A library function that may run long in native
/// code asks this now and then and raises an error when it answers true:
/// the sandbox turns any error raised after a kill into the kill itself.
pub(crate) fn kill_requested() -> bool {
    // The same check as the instruction hook's, which also notices a run
    // going past the busy threshold: a script spending all its time in one
    // library call must become killable too.
    with_active(|scope| scope.is_some_and(|s| s.slot.check()))
}

impl ScriptEngine {
    pub fn load(&self, body: &Bytes) -> String {
        let sha = sha1_hex(body);
        self.bodies
            .entry(sha.clone())
            .or_insert_with(|| Bytes::copy_from_slice(body));
        sha
    }

    /// Compiles without running, so SCRIPT LOAD reports syntax errors.
    pub fn check(&self, body: &Bytes) -> CmdResult<()> {
        let mut vm = self.take_vm()?;
        let result = vm.function(&sha1_hex(body), body).map(|_| ());
        self.put_vm(vm);
        result
    }

    pub fn body(&self, sha: &str) -> Option<Bytes> {
        self.bodies.get(sha).map(|b| b.clone())
    }

    pub fn exists(&self, sha: &str) -> bool {
        self.bodies.contains_key(sha)
    }

    pub fn flush(&self) {
        self.bodies.clear();
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.pool.lock().clear();
    }

    /// The state of every run in progress.
    fn running(&self) -> Vec<Arc<RunState>> {
        let mut slots = self.slots.lock();
        slots.retain(|s| s.strong_count() > 0);
        slots
            .iter()
            .filter_map(|s| s.upgrade())
            .filter_map(|s| s.0.lock().as_ref().map(|run| run.state.clone()))
            .collect()
    }

    /// SCRIPT KILL: stops the scripts running past the busy threshold. One
    /// that has written is rolled back, unless `rollback_writes` is off:
    /// then, as in Redis, it cannot be killed.
    pub fn kill(&self, rollback_writes: bool) -> CmdResult<()> {
        let busy: Vec<Arc<RunState>> = self
            .running()
            .into_iter()
            .filter(|r| r.busy.load(Ordering::Acquire))
            .collect();
        if busy.is_empty() {
            return Err(CmdError::other(
                "NOTBUSY No scripts in execution right now.",
            ));
        }
        if !rollback_writes && busy.iter().any(|r| r.wrote.load(Ordering::Acquire)) {
            return Err(CmdError::other(
                "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.",
            ));
        }
        busy.iter()
            .for_each(|r| r.killed.store(true, Ordering::Release));
        Ok(())
    }

    /// Stops every script in progress, rolling back what it wrote: the
    /// server is shutting down.
    pub fn kill_all(&self) {
        self.running()
            .iter()
            .for_each(|r| r.killed.store(true, Ordering::Release));
    }

    /// (scripts cached, bytes of their bodies), for INFO memory.
    pub fn cached(&self) -> (usize, usize) {
        let bytes = self.bodies.iter().map(|b| b.key().len() + b.len()).sum();
        (self.bodies.len(), bytes)
    }

    /// Heap used by the idle Lua states, for INFO memory.
    pub fn lua_memory(&self) -> usize {
        self.pool.lock().iter().map(|vm| vm.lua.used_memory()).sum()
    }

    fn take_vm(&self) -> CmdResult<Vm> {
        let generation = self.generation.load(Ordering::Acquire);
        let mut pool = self.pool.lock();
        while let Some(vm) = pool.pop() {
            if vm.generation == generation {
                return Ok(vm);
            }
        }
        drop(pool);
        let vm = Vm::new(generation)
            .map_err(|e| CmdError::other(format!("ERR cannot start Lua: {e}")))?;
        self.slots.lock().push(Arc::downgrade(&vm.slot));
        Ok(vm)
    }

    fn put_vm(&self, vm: Vm) {
        if vm.generation == self.generation.load(Ordering::Acquire) {
            self.pool.lock().push(vm);
        }
    }

    /// Runs a script for EVAL/EVALSHA with the declared keys' shards held
    /// in `ctx.locked`.
    pub fn run(
        &self,
        ctx: &mut Ctx,
        sha: &str,
        body: &[u8],
        keys: &[Bytes],
        argv: &[Bytes],
        readonly: bool,
    ) -> CmdResult<Reply> {
        // A well-known lock script runs natively. Read-only runs refuse
        // its writes and cluster mode checks each call's slot: both are
        // Lua's to answer.
        if !readonly
            && ctx.shared.cluster.is_none()
            && let Some(native) = native::find(sha)
            && let Some(reply) = native(&mut native::NativeRun::new(ctx, keys, argv))
        {
            self.counters.runs.fetch_add(1, Ordering::Relaxed);
            return Ok(reply);
        }
        let mut vm = self.take_vm()?;
        let function = match vm.function(sha, body) {
            Ok(f) => f,
            Err(e) => {
                self.put_vm(vm);
                return Err(e);
            }
        };
        let limits = {
            let config = ctx.shared.config.read();
            RunLimits {
                readonly,
                heap: config.lua_heap_limit as usize,
                busy_ms: config.busy_reply_threshold,
            }
        };
        self.counters.runs.fetch_add(1, Ordering::Relaxed);
        let mut plan = LockPlan::for_keys(keys.iter().map(|k| &k[..]));
        // What the script publishes (keyspace events included) reaches
        // subscribers only once its writes are final.
        let held = HeldMessages::hold();
        let outcome = loop {
            ctx.locked.begin_journal();
            match self.attempt(&mut vm, &function, ctx, sha, keys, argv, limits) {
                Ok(Attempt::Done(reply)) => break Ok(reply),
                Ok(Attempt::Retry(more)) => {
                    plan = plan.union(more);
                    held.discard();
                    if let Err(e) = ctx.locked.rollback().and_then(|_| ctx.locked.relock(&plan)) {
                        break Err(e);
                    }
                }
                Ok(Attempt::Killed(e)) => {
                    held.discard();
                    break ctx.locked.rollback().and(Err(e));
                }
                Err(e) => break Err(e),
            }
        };
        ctx.locked.end_journal();
        held.release(&ctx.shared.pubsub);
        // A state left holding much of its heap (a script ran out of
        // memory) is collected, and dropped if that does not free it.
        let half = limits.heap / 2;
        if vm.lua.used_memory() > half {
            let _ = vm.lua.gc_collect();
        }
        if vm.lua.used_memory() <= half {
            self.put_vm(vm);
        }
        outcome
    }

    #[allow(clippy::too_many_arguments)]
    fn attempt(
        &self,
        vm: &mut Vm,
        function: &Function,
        ctx: &mut Ctx,
        sha: &str,
        keys: &[Bytes],
        argv: &[Bytes],
        limits: RunLimits,
    ) -> CmdResult<Attempt> {
        let lua_err = |e: mlua::Error| CmdError::other(format!("ERR Error running script: {e}"));
        let lua = &vm.lua;
        let _ = lua.set_memory_limit(limits.heap);

        let run = Arc::new(RunState {
            started: Instant::now(),
            busy: AtomicBool::new(false),
            killed: AtomicBool::new(false),
            wrote: AtomicBool::new(false),
            kill_line: AtomicU64::new(0),
            released: AtomicBool::new(false),
        });
        *vm.slot.0.lock() = Some(ActiveRun {
            state: run.clone(),
            threshold: limits.busy_ms,
            flags: ctx.shared.keyspace.busy_flags(),
            held: ctx.locked.held(),
            counters: self.counters.clone(),
        });

        let client = Client::for_script(ctx.client);
        let mut scope_state = CallScope {
            ctx,
            client,
            readonly: limits.readonly,
            run: &run,
            slot: &vm.slot,
            retry: None,
            resp3: false,
            keys,
            args: argv,
            line: Vec::new(),
            reply: Reply::Nil,
            panic: None,
        };
        // `redis.call` reaches `scope_state` through this pointer while the
        // script runs, and only then: it is cleared before `scope_state`
        // is used again here.
        let outer = ACTIVE.replace((&mut scope_state as *mut CallScope).cast());
        let result: mlua::Result<Reply> =
            vm.run
                .call::<(bool, Value)>(function.clone())
                .map(|(ok, value)| {
                    if ok {
                        lua_to_reply(&value)
                    } else {
                        Reply::Error(script_error(&value, sha))
                    }
                });
        ACTIVE.set(outer);
        if let Some(active) = vm.slot.0.lock().take()
            && run.busy.load(Ordering::Acquire)
        {
            for idx in active.held {
                active.flags[idx].store(false, Ordering::Release);
            }
        }
        if let Some(panic) = scope_state.panic.take() {
            std::panic::resume_unwind(panic);
        }
        if let Some(plan) = scope_state.retry.take() {
            return Ok(Attempt::Retry(plan));
        }
        if run.killed.load(Ordering::Acquire) {
            return Ok(Attempt::Killed(CmdError::other(format!(
                "ERR Script killed by user with SCRIPT KILL... script: {sha}, on @user_script:{}.",
                run.kill_line.load(Ordering::Acquire)
            ))));
        }
        match result {
            Ok(reply) => Ok(Attempt::Done(reply)),
            Err(mlua::Error::MemoryError(_)) => Err(CmdError::other(format!(
                "ERR Error running script: the Lua heap limit (lua-heap-limit) was reached script: {sha}"
            ))),
            Err(e) => Err(lua_err(e)),
        }
    }
}

/// What one script run is allowed, read from the config once per run.
#[derive(Clone, Copy)]
struct RunLimits {
    readonly: bool,
    heap: usize,
    /// `busy-reply-threshold` in milliseconds.
    busy_ms: u64,
}

/// The final error text of a failed script: the error's own text, then
/// where it happened, as Redis 7.0 prints it.
fn script_error(value: &Value, sha: &str) -> CmdError {
    let Value::Table(t) = value else {
        // Only a failure inside the error handler itself lands here, and
        // that is running out of memory.
        let detail = match value {
            Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
            _ => "execution failure".into(),
        };
        return CmdError::other(format!(
            "ERR Error running script {sha}: {detail} (the Lua heap is capped by lua-heap-limit)"
        ));
    };
    let message = match t.raw_get::<Value>("err") {
        Ok(Value::String(s)) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
        _ => "ERR script raised an error without a message".to_string(),
    };
    let source = t.raw_get::<Option<String>>("source").ok().flatten();
    let line = t.raw_get::<Option<i64>>("line").ok().flatten();
    // An error from a library function written in Rust reads like one
    // raised by a C library in Redis: the script's position, one line.
    let message = match (message.strip_prefix("ERR runtime error: "), &source, line) {
        (Some(rest), Some(source), Some(line)) => {
            let first = rest.lines().next().unwrap_or(rest);
            format!("ERR {}:{line}: {first}", source.trim_start_matches('@'))
        }
        // Any other host error: its first line, without the traceback.
        _ => message.lines().next().unwrap_or_default().to_string(),
    };
    match (source, line) {
        (Some(source), Some(line)) => {
            CmdError::Other(format!("{message} script: {sha}, on {source}:{line}."))
        }
        _ => CmdError::Other(message),
    }
}

/// `redis.call` / `redis.pcall`: runs one command line for the script.
/// `args_ok` is false if an argument was neither a string nor a number.
fn call(scope: &mut CallScope, argv: &[Bytes], args_ok: bool) -> Reply {
    let fail = |text: &str| Reply::Error(CmdError::other(text));
    if scope.retry.is_some() {
        return fail("ERR the script is being restarted");
    }
    if !args_ok {
        return fail("ERR Lua redis lib command arguments must be strings or integers");
    }
    if argv.is_empty() {
        return fail("ERR Please specify at least one argument for this redis lib call");
    }
    let Ok(id) = REGISTRY.resolve(scope.ctx.shared, argv) else {
        return fail("ERR Unknown Redis command called from script");
    };
    let spec: &CommandSpec = REGISTRY.specs[id];
    if !spec.arity_ok(argv.len()) {
        return fail("ERR Wrong number of args calling Redis command from script");
    }
    if spec.has(flag::NOSCRIPT) {
        return fail("ERR This Redis command is not allowed from script");
    }
    // Redis counts commands that may replicate (PUBLISH, PFCOUNT) as writes here.
    if (spec.has(flag::WRITE) || spec.has(flag::MAY_REPLICATE)) && scope.readonly {
        return fail("ERR Write commands are not allowed from read-only scripts.");
    }
    if scope.ctx.shared.cluster.is_some() && common_slot(spec.routed_args(argv)).is_err() {
        return fail(&CmdError::ScriptCrossSlot.to_string());
    }
    // Everything the command touches is taken before it runs.
    let mut keys = spec.key_args(argv);
    let ensured = match (keys.next(), keys.next()) {
        // One key, the common case, needs no plan built.
        (Some(key), None) if !spec.has(flag::WHOLE_KEYSPACE) && !spec.has(flag::SLOT_ARG) => {
            scope.ctx.locked.ensure(&[key_shard(key)])
        }
        _ => match lock_plan(spec, argv) {
            LockPlan::All if !scope.ctx.locked.holds_all() => Err(CmdError::ShardBusy),
            LockPlan::Shards(shards) => scope.ctx.locked.ensure(&shards),
            _ => Ok(()),
        },
    };
    match ensured {
        Ok(()) => {}
        Err(CmdError::ShardBusy) => {
            scope.retry = Some(lock_plan(spec, argv));
            return fail("ERR the script is being restarted");
        }
        Err(e) => return fail(&e.to_string()),
    }
    if spec.has(flag::WRITE) {
        scope.run.wrote.store(true, Ordering::Release);
    }
    scope.client.protocol = if scope.resp3 {
        Protocol::Resp3
    } else {
        Protocol::Resp2
    };
    execute(
        scope.ctx.shared,
        &mut scope.client,
        id,
        argv,
        scope.ctx.locked,
    )
}
