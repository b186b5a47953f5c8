//! `redis.call` and `redis.pcall` as C functions, as in Redis. A C callee
//! keeps its caller's frame even in `return redis.call(...)` (Lua only
//! eliminates tail calls into Lua functions), so a failed call can report
//! the line of the script that made it. Working on the Lua stack directly
//! also keeps a call cheap: the arguments are read off the stack and the
//! reply is built on it, with no Lua value made for either on the way.
//!
//! Lua raises errors (running out of memory included) with `longjmp`,
//! which must not skip a Rust destructor. So whatever owns memory (the
//! arguments, the reply) lives in the run's `CallScope`, and the frames
//! that call into Lua hold only borrows and plain values.

use std::os::raw::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;

use bytes::{Bytes, BytesMut};

use super::convert::{push_error_table, push_reply, render_errors};
use super::stack::{Activation, Kind, Stack, State};
use super::{CallScope, with_active};
use crate::error::CmdError;
use crate::protocol::Reply;
use crate::util::push_double;

/// # Safety
/// Called by Lua only, as `redis.call`.
pub unsafe extern "C-unwind" fn redis_call(state: *mut State) -> c_int {
    // SAFETY: Lua called this with `state`; this frame owns nothing, nor
    // do the functions it calls while Lua may raise.
    let stack = unsafe { Stack::new(state) };
    if call_onto_stack(stack) {
        return 1;
    }
    raise_at_caller(stack)
}

/// Raises the error table on top of the stack with the script's position.
/// Each push goes above the error table, so -2 names it, and takes one of
/// the slots Lua gives a C function; the table is fresh, with no
/// metatable, so setting a field runs no Lua code.
fn raise_at_caller(stack: Stack) -> ! {
    if let Some((source, line)) = stack.caller_position() {
        stack.push_c_str(source);
        stack.set_field(-2, c"source");
        stack.push_integer(line as i64);
        stack.set_field(-2, c"line");
    }
    stack.raise()
}

/// # Safety
/// Called by Lua only, as `redis.acl_check_cmd`: whether the script's user
/// may run the command line given, which is not run.
pub unsafe extern "C-unwind" fn acl_check_cmd(state: *mut State) -> c_int {
    // SAFETY: Lua called this with `state`. The closure gives the line back
    // to the scope, and `verdict` holds only static bytes, so nothing this
    // frame owns is skipped when `raise_at_caller` raises. With the stack
    // emptied, the boolean or the error table fits in the slots Lua gives
    // a C function.
    let stack = unsafe { Stack::new(state) };
    let nargs = stack.top();
    let verdict: Result<bool, &'static [u8]> = with_active(|scope| {
        let Some(scope) = scope else {
            return Err(b"ERR redis.acl_check_cmd outside of a script run".as_slice());
        };
        let mut line = std::mem::take(&mut scope.line);
        let args_ok = line.read(stack, nargs);
        let argv = &line.argv;
        let verdict = if !args_ok {
            Err(b"ERR Lua redis lib command arguments must be strings or integers".as_slice())
        } else if argv.is_empty() {
            Err(b"ERR Please specify at least one argument for this redis lib call".as_slice())
        } else {
            scope
                .host
                .acl_permits(argv)
                .ok_or(b"ERR Invalid command passed to redis.acl_check_cmd()".as_slice())
        };
        scope.line = line;
        verdict
    });
    stack.set_top(0);
    match verdict {
        Ok(permitted) => {
            stack.push_bool(permitted);
            1
        }
        Err(message) => {
            push_error_table(stack, message);
            raise_at_caller(stack)
        }
    }
}

/// # Safety
/// Called by Lua only, as `redis.pcall`: a failure is returned as the
/// error table, not raised.
pub unsafe extern "C-unwind" fn redis_pcall(state: *mut State) -> c_int {
    // SAFETY: as for `redis_call`; success or not, `call_onto_stack`
    // leaves the one value returned on top.
    call_onto_stack(unsafe { Stack::new(state) });
    1
}

/// # Safety
/// Called by Lua only, as the context's `set_resp` (`redis.setresp` has
/// checked the version).
pub unsafe extern "C-unwind" fn set_resp(state: *mut State) -> c_int {
    // SAFETY: Lua called this with `state`; nothing here raises.
    let version = unsafe { Stack::new(state) }.to_number(1);
    with_active(|scope| {
        if let Some(scope) = scope {
            scope.resp3 = version == 3.0;
        }
    });
    0
}

/// # Safety
/// Called by Lua only, as the context's `set_args`, when a run starts:
/// sets the KEYS and ARGV globals.
pub unsafe extern "C-unwind" fn set_args(state: *mut State) -> c_int {
    // SAFETY: Lua called this with `state`. Each table is pushed, then
    // popped into the globals. Those have no `__newindex` (the prelude
    // gives them only `__index`), so no Lua code runs here that could
    // reach `with_active` while `scope` is borrowed; an out-of-memory raise
    // skips frames that only borrow.
    let stack = unsafe { Stack::new(state) };
    // Setting the hook again restarts its instruction count, so a run is
    // only taken for a long one by its own running time. Coroutines the
    // script creates inherit the hook.
    // SAFETY: `hook` keeps the stack's rules.
    unsafe { stack.set_count_hook(hook, super::HOOK_EVERY) };
    with_active(|scope| {
        if let Some(scope) = scope {
            push_strings(stack, scope.keys);
            stack.set_global(c"KEYS");
            push_strings(stack, scope.args);
            stack.set_global(c"ARGV");
        }
    });
    0
}

/// The instruction-count hook: stops a script that SCRIPT KILL or a
/// shutdown asked to stop. The error it raises can be caught by the
/// script's pcall, but the sandbox's pcall, xpcall and coroutine.resume
/// raise it again once the run is killed, and this hook keeps firing.
unsafe extern "C-unwind" fn hook(state: *mut State, ar: *mut Activation) {
    // SAFETY: Lua called this hook with `state`. The closure has returned
    // before the raise and `message` is static, so this frame owns nothing
    // for it to skip. Lua 5.1 lets a count hook raise, and gives a hook
    // the same free slots as a C function.
    let stack = unsafe { Stack::new(state) };
    let mut message = c"Script killed by user with SCRIPT KILL...";
    let killed = with_active(|scope| {
        let Some(scope) = scope else {
            // A library loading, not a run.
            message = c"FUNCTION LOAD timeout";
            return super::kill_requested();
        };
        if !scope.slot.check() {
            return false;
        }
        // The line reported is the script's own, not a sandbox helper's.
        // SAFETY: `ar` is the record Lua passed this hook.
        if let Some((source, line)) = unsafe { stack.interrupted_position(ar) }
            && matches!(source.to_bytes(), b"@user_script" | b"@user_function")
        {
            scope.run.kill_line.store(line as u64, Ordering::Release);
        }
        true
    });
    if !killed {
        return;
    }
    stack.push_c_str(message);
    stack.raise()
}

/// # Safety
/// Called by Lua only, as the context's `killed`: whether the run has
/// been asked to stop.
pub unsafe extern "C-unwind" fn killed(state: *mut State) -> c_int {
    // SAFETY: Lua called this with `state`; one push, into the slots Lua
    // gives a C function.
    unsafe { Stack::new(state) }.push_bool(super::kill_requested());
    1
}

/// The table and one string at a time (popped by `raw_set_at`) take two
/// slots, within the slots of the C function calling this; Lua copies each
/// string, and `items` is only borrowed, so a raise part-way leaks nothing.
fn push_strings(stack: Stack, items: &[Bytes]) {
    stack.new_table(items.len() as c_int, 0);
    for (i, item) in items.iter().enumerate() {
        stack.push_bytes(item);
        stack.raw_set_at(-2, (i + 1) as c_int);
    }
}

/// Runs the command given as the arguments on the stack and leaves its
/// reply on top, or its error table. Answers whether it succeeded.
///
/// `run_command` is done with the arguments, and with anything it owned,
/// before `set_top` drops them. The reply is pushed from a borrow of the
/// scope, which owns it, so an out-of-memory raise while pushing skips
/// frames that own nothing. Pushing may run the collector but no Lua code
/// (scripts cannot give a value a `__gc`: `newproxy` is removed), so
/// nothing replaces `scope.reply` while it is read.
fn call_onto_stack(stack: Stack) -> bool {
    let nargs = stack.top();
    with_active(|scope| {
        let Some(scope) = scope else {
            stack.set_top(0);
            push_error_table(stack, b"ERR redis.call outside of a script run");
            return false;
        };
        run_command(stack, nargs, scope);
        stack.set_top(0);
        let ok = !matches!(scope.reply, Reply::Error(_));
        push_reply(stack, &scope.reply, scope.resp3);
        scope.reply = Reply::Nil;
        ok
    })
}

/// Runs the command to completion, leaving its reply in the scope, before
/// Lua is touched again. A panic is kept for the run to resume once it is
/// out of Lua, which cannot unwind.
fn run_command(stack: Stack, nargs: c_int, scope: &mut CallScope) {
    let ran = catch_unwind(AssertUnwindSafe(|| {
        let CallScope {
            host,
            run,
            resp3,
            line,
            reply: done,
            ..
        } = &mut *scope;
        let args_ok = line.read(stack, nargs);
        let argv = &line.argv;
        let mut reply = if !args_ok {
            Reply::Error(CmdError::other(
                "ERR Lua redis lib command arguments must be strings or integers",
            ))
        } else if argv.is_empty() {
            Reply::Error(CmdError::other(
                "ERR Please specify at least one argument for this redis lib call",
            ))
        } else {
            host.call(argv, *resp3, run)
        };
        render_errors(&mut reply);
        *done = reply;
    }));
    if let Err(panic) = ran {
        scope.reply = Reply::Error(CmdError::other("ERR the command panicked"));
        scope.panic = Some(panic);
    }
}

/// The command line of the call in progress, its buffers kept between
/// calls of one run.
#[derive(Default)]
pub(super) struct CallLine {
    argv: Vec<Bytes>,
    /// Where each argument ends in the line's bytes.
    ends: Vec<usize>,
    /// A number argument as it is printed.
    number: Vec<u8>,
    /// The buffer the lines are written into and split off, the next line
    /// going after the last, or at its start again once the lines before
    /// are dropped. A command that keeps an argument (a stream its fields)
    /// keeps the buffer with it, so a line in a buffer over twice its size
    /// is moved to one of its own size: what a kept argument holds stays
    /// within twice its line.
    buf: BytesMut,
}

impl CallLine {
    /// Reads the call's arguments (`nargs`, the stack's height on entry)
    /// into one buffer, each argument a piece of it: a line costs no
    /// allocation once its buffer is reused, where a buffer per argument
    /// cost one each, and a command that keeps an argument takes a
    /// reference rather than a copy. Each string is copied once, from Lua
    /// into the buffer. Answers false if one is neither a string nor a
    /// number. Nothing here may raise, as the line is owned by a frame
    /// that a `longjmp` would skip: a string is read as it is (no
    /// conversion), and a number read as a number.
    fn read(&mut self, stack: Stack, nargs: c_int) -> bool {
        // The last line's pieces go first, so that its room can be reused.
        self.argv.clear();
        self.ends.clear();
        self.buf.clear();
        for idx in 1..=nargs {
            match stack.kind(idx) {
                Kind::String => self
                    .buf
                    .extend_from_slice(stack.to_bytes(idx).unwrap_or_default()),
                // Lua 5.1 numbers are doubles; Redis prints them with %.17g.
                Kind::Number => {
                    self.number.clear();
                    push_double(stack.to_number(idx), &mut self.number);
                    self.buf.extend_from_slice(&self.number);
                }
                _ => return false,
            }
            self.ends.push(self.buf.len());
        }
        let len = self.buf.len();
        if self.buf.capacity() > 2 * len.max(SMALL_LINE) {
            let mut own = BytesMut::with_capacity(len);
            own.extend_from_slice(&self.buf);
            self.buf = own;
        }
        let line = self.buf.split().freeze();
        let mut start = 0;
        for &end in &self.ends {
            self.argv.push(line.slice(start..end));
            start = end;
        }
        true
    }
}

/// Lines up to this long count as this long when `CallLine` asks whether
/// a buffer is too big for one.
const SMALL_LINE: usize = 32;
