//! The Lua engine, with Redis 7.0's sandbox and libraries: a pool of Lua
//! states, compiled scripts by SHA1, the instruction hook that notices long
//! runs and SCRIPT KILL, and the conversions between Lua values and replies.
//!
//! It knows nothing of commands: a script's `redis.call` goes to the
//! `Host` its caller (the EVAL family in the command layer) passes in.

mod call;
mod convert;
pub(crate) mod functions;
mod libs;
mod long_brackets;
mod script_cache;
pub(crate) mod shebang;
mod stack;

use std::any::Any;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use bytes::Bytes;
use mlua::{Function, Lua, LuaOptions, MultiValue, StdLib, Table, Value};
use parking_lot::Mutex;

use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;
use crate::util::stripe;
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
pub(crate) struct RunState {
    started: Instant,
    busy: AtomicBool,
    killed: AtomicBool,
    wrote: AtomicBool,
    /// Line the script was at when killed.
    kill_line: AtomicU64,
    /// The runtime worker running the script has handed its other work off.
    released: AtomicBool,
    /// A script (SCRIPT KILL stops it) or a function (FUNCTION KILL).
    runner: Runner,
    /// The function's name and the command that called it (FUNCTION
    /// STATS); empty for a script.
    name: String,
    command: Vec<Bytes>,
}

/// A function past the busy threshold, as FUNCTION STATS shows it.
pub(crate) struct BusyFunction {
    pub name: String,
    pub command: Vec<Bytes>,
    pub duration_ms: u64,
}

impl RunState {
    /// The script is about to write: SCRIPT KILL now answers UNKILLABLE
    /// (unless rollback is on).
    pub fn mark_wrote(&self) {
        self.wrote.store(true, Ordering::Release);
    }

    pub fn has_written(&self) -> bool {
        self.wrote.load(Ordering::Acquire)
    }
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

/// A Lua state, lent to one script run at a time.
pub(crate) struct Vm {
    lua: Lua,
    generation: u64,
    /// The thread that last ran it (`util::stripe::index`).
    home: usize,
    functions: HashMap<String, Function, foldhash::fast::RandomState>,
    ctx: Table,
    env: Table,
    run: Function,
    run_function: Function,
    /// Libraries loaded in this state: their load id and registered
    /// functions by name.
    libraries: HashMap<String, (u64, HashMap<String, Function>), foldhash::fast::RandomState>,
    slot: Arc<RunSlot>,
}

/// Which prelude runner a run goes through.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Runner {
    /// EVAL: KEYS and ARGV as globals, errors named by the script's SHA1.
    Script,
    /// FCALL: keys and arguments as parameters, errors named by the function.
    Function,
}

/// One function a library registered while loading.
pub(crate) struct Registered {
    pub name: String,
    pub flags: shebang::ScriptFlags,
    pub description: Option<String>,
}

impl Vm {
    fn new(generation: u64) -> mlua::Result<Vm> {
        let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG;
        // SAFETY: debug is the one library here that mlua counts unsafe (it
        // reaches the registry and any value's metatable, mlua's own
        // included). It is loaded for the error handler only: the prelude
        // keeps `debug.getinfo`, which only reads, and removes `debug` from
        // what scripts can reach. With no package library, no C module can
        // be loaded either.
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
        // SAFETY: these follow the Lua C function protocol, whatever
        // arguments a script passes: they read only the arguments they
        // were given, push within the stack space Lua gives a C function
        // or make room first, and own nothing in the frames an error's
        // `longjmp` skips.
        unsafe {
            redis.set("call", lua.create_c_function(call::redis_call)?)?;
            redis.set("pcall", lua.create_c_function(call::redis_pcall)?)?;
            redis.set("acl_check_cmd", lua.create_c_function(call::acl_check_cmd)?)?;
        }
        redis.set("REDIS_VERSION", crate::protocol::REDIS_VERSION)?;
        redis.set("REDIS_VERSION_NUM", 0x0007_000f)?;
        globals.set("redis", redis)?;
        let debug: Table = globals.get("debug")?;
        let getinfo: Function = debug.get("getinfo")?;
        let ctx = lua.create_table()?;
        let known_flags = lua.create_table()?;
        for (_, name) in shebang::ScriptFlags::NAMED {
            known_flags.raw_set(name, true)?;
        }
        ctx.raw_set("known_flags", known_flags)?;
        ctx.raw_set(
            "valid_name",
            lua.create_function(|_, name: mlua::LuaString| {
                Ok(std::str::from_utf8(&name.as_bytes()).is_ok_and(shebang::valid_name))
            })?,
        )?;
        ctx.raw_set("name_rule", shebang::NAME_RULE.trim_start_matches("ERR "))?;
        // SAFETY: as above; only the prelude can reach these.
        unsafe {
            ctx.raw_set("set_resp", lua.create_c_function(call::set_resp)?)?;
            ctx.raw_set("set_args", lua.create_c_function(call::set_args)?)?;
            ctx.raw_set("killed", lua.create_c_function(call::killed)?)?;
        }
        // For loadstring and load inside scripts (CVE-2025-46819).
        ctx.raw_set(
            "relevel",
            lua.create_function(|lua, s: mlua::LuaString| {
                match long_brackets::relevel(&s.as_bytes()) {
                    Some(fixed) => lua.create_string(fixed),
                    None => Ok(s),
                }
            })?,
        )?;
        // The chunk name is a live string while the prelude compiles
        // (CVE-2025-49844: 5.1's parser does not anchor the one it makes).
        let name = "=prelude";
        let _anchor = lua.create_string(name)?;
        let (env, run, run_function): (Table, Function, Function) = lua
            .load(PRELUDE)
            .set_name(name)
            .call((globals, getinfo, ctx.clone()))?;
        let slot = Arc::new(RunSlot::default());
        Ok(Vm {
            lua,
            generation,
            home: stripe::index(),
            functions: HashMap::default(),
            ctx,
            env,
            run,
            run_function,
            libraries: HashMap::default(),
            slot,
        })
    }

    /// The compiler's message, fetched again from Lua as bytes: it may
    /// quote bytes of the script that are not UTF-8.
    fn compile_error(&self, body: &[u8], e: mlua::Error, prefix: &str, chunk: &str) -> CmdError {
        let mut text = prefix.as_bytes().to_vec();
        let raw = self
            .ctx
            .get::<Function>("compile_error")
            .and_then(|f| f.call::<mlua::LuaString>((self.lua.create_string(body)?, chunk)));
        match raw {
            Ok(message) => text.extend_from_slice(&message.as_bytes()),
            Err(_) => text.extend_from_slice(e.to_string().as_bytes()),
        }
        CmdError::RawText(text.into())
    }

    pub fn function(&mut self, sha: &str, body: &[u8]) -> CmdResult<Function> {
        if let Some(f) = self.functions.get(sha) {
            return Ok(f.clone());
        }
        let f = self.compile(
            shebang::without_shebang(body),
            "@user_script",
            self.env.clone(),
            "ERR Error compiling script (new function): ",
        )?;
        self.functions.insert(sha.to_string(), f.clone());
        Ok(f)
    }

    fn compile(
        &self,
        body: &[u8],
        chunk: &str,
        env: Table,
        error_prefix: &str,
    ) -> CmdResult<Function> {
        let relevelled = long_brackets::relevel(body);
        self.lua
            .load(relevelled.as_deref().unwrap_or(body))
            // A live string: the prelude holds it (CVE-2025-49844).
            .set_name(chunk)
            .set_environment(env)
            .into_function()
            .map_err(|e| self.compile_error(body, e, error_prefix, chunk))
    }

    /// Runs a library's code, which registers its functions; they are kept
    /// in this state under `library` (load id `id`). Runs past
    /// `LOAD_TIMEOUT` are stopped.
    pub fn load_library(
        &mut self,
        library: &str,
        id: u64,
        code: &[u8],
    ) -> CmdResult<Vec<Registered>> {
        let env: Table = self.ctx.get("lib_env").map_err(lua_error)?;
        let chunk = self.compile(
            shebang::without_shebang(code),
            "@user_function",
            env,
            "ERR Error compiling function: ",
        )?;
        let load: Function = self.ctx.get("load_library").map_err(lua_error)?;
        LOAD_DEADLINE.set(Some(Instant::now() + LOAD_TIMEOUT));
        let loaded = load.call::<(bool, Value)>(chunk);
        LOAD_DEADLINE.set(None);
        let (ok, result) = loaded.map_err(lua_error)?;
        let (true, Value::Table(list)) = (ok, &result) else {
            let text = match &result {
                Value::String(s) => s.to_string_lossy(),
                _ => "ERR the library failed to load".into(),
            };
            return Err(CmdError::Other(format!(
                "ERR Error registering functions: {text}"
            )));
        };
        let mut registered = Vec::new();
        let mut callbacks = HashMap::new();
        for entry in list.sequence_values::<Table>() {
            let entry = entry.map_err(lua_error)?;
            let name: String = entry.get("name").map_err(lua_error)?;
            let mut flags = shebang::ScriptFlags::default();
            for flag in entry
                .get::<Table>("flags")
                .map_err(lua_error)?
                .sequence_values::<String>()
            {
                if let Some(f) = shebang::ScriptFlags::named(&flag.map_err(lua_error)?) {
                    flags = flags.with(f);
                }
            }
            callbacks.insert(name.clone(), entry.get("callback").map_err(lua_error)?);
            registered.push(Registered {
                name,
                flags,
                description: entry.get("description").map_err(lua_error)?,
            });
        }
        if registered.is_empty() {
            return Err(CmdError::other("ERR No functions registered"));
        }
        self.libraries.insert(library.to_string(), (id, callbacks));
        Ok(registered)
    }

    /// Caps the state's heap for the run about to start.
    pub fn set_heap_limit(&self, heap: usize) -> mlua::Result<usize> {
        self.lua.set_memory_limit(heap)
    }

    /// A library's function, loading the library into this state first if
    /// it has not seen this version of it.
    pub fn library_function(
        &mut self,
        library: &functions::Library,
        name: &str,
    ) -> CmdResult<Function> {
        let current = self
            .libraries
            .get(&library.name)
            .is_some_and(|(id, _)| *id == library.id);
        if !current {
            self.load_library(&library.name, library.id, &library.code)?;
        }
        self.libraries
            .get(&library.name)
            .and_then(|(_, fns)| fns.get(name))
            .cloned()
            .ok_or(CmdError::FunctionNotFound)
    }
}

fn lua_error(e: mlua::Error) -> CmdError {
    CmdError::Other(format!("ERR {e}"))
}

/// How long a library's code may run while it loads, as in Redis.
const LOAD_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(500);

thread_local! {
    /// When the library loading on this thread must stop.
    static LOAD_DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Whether a library loading on this thread has run out of time.
fn load_expired() -> bool {
    LOAD_DEADLINE.get().is_some_and(|at| Instant::now() >= at)
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
pub(crate) struct ScriptEngine {
    cache: script_cache::ScriptCache,
    /// Lua states; one made before the last SCRIPT FLUSH (an older
    /// generation of the cache) is not lent again.
    pool: Mutex<Vec<Vm>>,
    /// Every Lua state's run slot, for SCRIPT KILL.
    slots: Mutex<Vec<std::sync::Weak<RunSlot>>>,
    pub counters: Arc<ScriptCounters>,
    /// FUNCTION LOAD's libraries.
    pub libraries: parking_lot::RwLock<functions::Libraries>,
    /// `DEBUG SET-DISABLE-DENY-SCRIPTS 1`: scripts may call the commands
    /// flagged `noscript` (Redis's suite lets a script call DEBUG so).
    pub deny_lifted: AtomicBool,
}

/// Script activity since startup, for the metrics endpoint.
#[derive(Debug, Default)]
pub(crate) struct ScriptCounters {
    /// Scripts run (EVAL, EVALSHA and their _RO forms), each once however
    /// often it had to start over.
    pub runs: crate::util::stripe::Counter,
    /// Runs that went past `busy-reply-threshold`.
    pub busy: AtomicU64,
}

/// How one attempt at running a script ended.
pub(crate) enum Attempt {
    Done(Reply),
    /// SCRIPT KILL or a shutdown stopped it: its changes must be rolled back.
    Killed(CmdError),
}

/// What one run executes.
#[derive(Clone, Copy)]
pub(crate) struct Target<'t> {
    pub function: &'t Function,
    pub runner: Runner,
    /// The script's SHA1 or the function's name, for error texts.
    pub name: &'t str,
    pub keys: &'t [Bytes],
    pub args: &'t [Bytes],
    /// The command line that started the run.
    pub command: &'t [Bytes],
}

/// Where a script's `redis.call` and `redis.pcall` go.
pub(crate) trait Host {
    /// Runs one command line for the script (at least one argument) and
    /// answers its reply, in RESP3 if the script asked for it. A command
    /// that writes marks `run` before it runs (SCRIPT KILL then refuses).
    fn call(&mut self, argv: &[Bytes], resp3: bool, run: &RunState) -> Reply;

    /// Whether the script's user may run the command line, or `None` if
    /// there is no such command (`redis.acl_check_cmd`).
    fn acl_permits(&mut self, argv: &[Bytes]) -> Option<bool>;
}

/// The keyspace's busy flags and the shards a run holds: raised once the
/// run goes past the busy threshold, so that others answer `-BUSY`.
pub(crate) struct BusyMarks {
    pub flags: Arc<[AtomicBool]>,
    pub held: Vec<usize>,
}

/// What `redis.call` works with during one attempt.
struct CallScope<'s> {
    host: &'s mut dyn Host,
    run: &'s RunState,
    /// Where the instruction hook finds the run.
    slot: &'s RunSlot,
    /// Follows `redis.setresp`.
    resp3: bool,
    /// The script's KEYS and ARGV.
    keys: &'s [Bytes],
    args: &'s [Bytes],
    line: call::CallLine,
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
    with_active(|scope| match scope {
        Some(s) => s.slot.check(),
        None => load_expired(),
    })
}

impl ScriptEngine {
    pub fn load(&self, body: &Bytes) -> String {
        let sha = sha1_hex(body);
        self.cache.insert(sha.clone(), body);
        sha
    }

    /// Compiles without running, so SCRIPT LOAD reports syntax errors.
    pub fn check(&self, body: &Bytes) -> CmdResult<()> {
        shebang::script_flags(body)?;
        let mut vm = self.take_vm()?;
        let result = vm.function(&sha1_hex(body), body).map(|_| ());
        // Compiling alone cannot fill the heap.
        self.put_vm(vm, usize::MAX);
        result
    }

    pub fn body(&self, sha: &str) -> Option<Bytes> {
        self.cache.get(sha)
    }

    pub fn exists(&self, sha: &str) -> bool {
        self.cache.contains(sha)
    }

    pub fn flush(&self) {
        self.cache.flush();
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

    /// SCRIPT KILL (`Runner::Script`) or FUNCTION KILL: stops the scripts
    /// or functions running past the busy threshold. One that has written
    /// is rolled back, unless `rollback_writes` is off: then, as in Redis,
    /// it cannot be killed.
    pub fn kill(&self, rollback_writes: bool, kind: Runner) -> CmdResult<()> {
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
        let (busy, others): (Vec<_>, Vec<_>) = busy.into_iter().partition(|r| r.runner == kind);
        if busy.is_empty() {
            let other = match others.first().map(|r| r.runner) {
                Some(Runner::Function) => "FUNCTION KILL",
                _ => "SCRIPT KILL",
            };
            return Err(CmdError::Other(format!(
                "BUSY Redis is busy running a script. You can only call {other} or SHUTDOWN NOSAVE."
            )));
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

    /// The function running past the busy threshold, for FUNCTION STATS;
    /// an error if a script (not a function) is.
    pub fn busy_function(&self) -> CmdResult<Option<BusyFunction>> {
        let busy: Vec<Arc<RunState>> = self
            .running()
            .into_iter()
            .filter(|r| r.busy.load(Ordering::Acquire))
            .collect();
        if busy.iter().any(|r| r.runner == Runner::Script) {
            return Err(CmdError::other(
                "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
            ));
        }
        Ok(busy.first().map(|r| BusyFunction {
            name: r.name.clone(),
            command: r.command.clone(),
            duration_ms: r.started.elapsed().as_millis() as u64,
        }))
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
        self.cache.size()
    }

    /// Loads a library's code in a Lua state (at most `heap` bytes of it)
    /// and answers the library with what it registered, not yet added.
    pub fn prepare_library(&self, code: Bytes, heap: usize) -> CmdResult<functions::Library> {
        let name = shebang::library_name(&code)?;
        let id = self.libraries.read().next_id();
        let mut vm = self.take_vm()?;
        let _ = vm.lua.set_memory_limit(heap);
        let loaded = vm.load_library(&name, id, &code);
        self.put_vm(vm, heap);
        let mut functions = loaded?;
        functions.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(functions::Library {
            name,
            code,
            id,
            functions,
        })
    }

    /// Heap used by the idle Lua states, for INFO memory.
    pub fn lua_memory(&self) -> usize {
        self.pool.lock().iter().map(|vm| vm.lua.used_memory()).sum()
    }

    /// A Lua state for one run, from the pool or new: the one this thread
    /// ran last where it is idle. A state's heap is tens of cache lines
    /// that a run reads and writes; one that moves to another core with
    /// each run (clients of one hot key served by every worker) spends
    /// more time fetching them than running the script.
    pub fn take_vm(&self) -> CmdResult<Vm> {
        let generation = self.cache.generation();
        let mut pool = self.pool.lock();
        pool.retain(|vm| vm.generation == generation);
        let home = stripe::index();
        let mine = pool.iter().rposition(|vm| vm.home == home);
        if let Some(at) = mine.or(pool.len().checked_sub(1)) {
            let vm = pool.swap_remove(at);
            drop(pool);
            // The last run's cjson settings stay with it.
            libs::cjson::reset(&vm.lua);
            return Ok(vm);
        }
        drop(pool);
        let vm = Vm::new(generation)
            .map_err(|e| CmdError::other(format!("ERR cannot start Lua: {e}")))?;
        self.slots.lock().push(Arc::downgrade(&vm.slot));
        Ok(vm)
    }

    /// Gives a state back after a run. One left holding much of its heap
    /// (a script ran out of memory) is collected, and dropped if that does
    /// not free it.
    pub fn put_vm(&self, mut vm: Vm, heap_limit: usize) {
        let half = heap_limit / 2;
        if vm.lua.used_memory() > half {
            let _ = vm.lua.gc_collect();
        }
        if vm.lua.used_memory() <= half && vm.generation == self.cache.generation() {
            vm.home = stripe::index();
            self.pool.lock().push(vm);
        }
    }

    /// Runs `function` once on `vm`, its `redis.call`s going to `host`.
    #[allow(clippy::too_many_arguments)]
    pub fn attempt(
        &self,
        vm: &mut Vm,
        target: &Target,
        host: &mut dyn Host,
        limits: RunLimits,
        busy: BusyMarks,
    ) -> CmdResult<Attempt> {
        let Target {
            function,
            runner,
            name: sha,
            keys,
            args: argv,
            ..
        } = *target;
        let lua_err = |e: mlua::Error| CmdError::other(format!("ERR Error running script: {e}"));

        let run = Arc::new(RunState {
            started: Instant::now(),
            busy: AtomicBool::new(false),
            killed: AtomicBool::new(false),
            wrote: AtomicBool::new(false),
            kill_line: AtomicU64::new(0),
            released: AtomicBool::new(false),
            runner,
            name: match runner {
                Runner::Function => sha.to_string(),
                Runner::Script => String::new(),
            },
            command: match runner {
                Runner::Function => target.command.to_vec(),
                Runner::Script => Vec::new(),
            },
        });
        *vm.slot.0.lock() = Some(ActiveRun {
            state: run.clone(),
            threshold: limits.busy_ms,
            flags: busy.flags,
            held: busy.held,
            counters: self.counters.clone(),
        });

        let mut scope_state = CallScope {
            host,
            run: &run,
            slot: &vm.slot,
            resp3: false,
            keys,
            args: argv,
            line: Default::default(),
            reply: Reply::Nil,
            panic: None,
        };
        // `redis.call` reaches `scope_state` through this pointer while the
        // script runs, and only then: it is cleared before `scope_state`
        // is used again here.
        let outer = ACTIVE.replace((&mut scope_state as *mut CallScope).cast());
        let run_with = match runner {
            Runner::Script => &vm.run,
            Runner::Function => &vm.run_function,
        };
        let result: mlua::Result<Reply> =
            run_with
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
pub(crate) struct RunLimits {
    pub heap: usize,
    /// `busy-reply-threshold` in milliseconds.
    pub busy_ms: u64,
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
    let message = match (source, line) {
        (Some(source), Some(line)) => format!("{message} script: {sha}, on {source}:{line}."),
        _ => message,
    };
    convert::error_of_table(t, message)
}
