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

use bytes::Bytes;
use mlua::ffi;

use super::convert::{push_error_table, push_reply, render_errors};
use super::{CallScope, with_active};
use crate::error::CmdError;
use crate::protocol::Reply;
use crate::util::format_double;

/// # Safety
/// Called by Lua only, as `redis.call`.
pub unsafe extern "C-unwind" fn redis_call(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: `state` is the one Lua called this with. A failed call
    // leaves its error table on top, which `raise_at_caller` expects, and
    // this frame owns nothing for the raise to skip.
    unsafe {
        if call_onto_stack(state) {
            return 1;
        }
        raise_at_caller(state)
    }
}

/// Raises the error table on top of the stack with the script's position.
///
/// # Safety
/// Called from a C function Lua called; its frames own nothing.
unsafe fn raise_at_caller(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: a zeroed `lua_Debug` is valid (integers, pointers, bytes) and
    // is filled by `lua_getstack` for level 1, the Lua function that made
    // the call, or left alone when there is none. After "S", `source`
    // points at that function's chunk name, which it keeps alive. Each
    // push goes above the error table, so -2 names it, and takes one of
    // the slots Lua gives a C function; the table is fresh, with no
    // metatable, so setting a field runs no Lua code. The caller promises
    // that the frames `lua_error` skips own nothing.
    unsafe {
        let mut ar: ffi::lua_Debug = std::mem::zeroed();
        if ffi::lua_getstack(state, 1, &mut ar) != 0
            && ffi::lua_getinfo(state, c"Sl".as_ptr(), &mut ar) != 0
        {
            ffi::lua_pushstring(state, ar.source);
            ffi::lua_setfield(state, -2, c"source".as_ptr());
            ffi::lua_pushinteger(state, ar.currentline as ffi::lua_Integer);
            ffi::lua_setfield(state, -2, c"line".as_ptr());
        }
        ffi::lua_error(state)
    }
}

/// # Safety
/// Called by Lua only, as `redis.acl_check_cmd`: whether the script's user
/// may run the command line given, which is not run.
pub unsafe extern "C-unwind" fn acl_check_cmd(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: `state` is the one Lua called this with.
    let nargs = unsafe { ffi::lua_gettop(state) };
    let verdict: Result<bool, &'static [u8]> = with_active(|scope| {
        let Some(scope) = scope else {
            return Err(b"ERR redis.acl_check_cmd outside of a script run".as_slice());
        };
        let mut argv = std::mem::take(&mut scope.line);
        // SAFETY: `nargs` is the stack's height on entry.
        let verdict = if !unsafe { read_args(state, nargs, &mut argv) } {
            Err(b"ERR Lua redis lib command arguments must be strings or integers".as_slice())
        } else if argv.is_empty() {
            Err(b"ERR Please specify at least one argument for this redis lib call".as_slice())
        } else {
            scope
                .host
                .acl_permits(&argv)
                .ok_or(b"ERR Invalid command passed to redis.acl_check_cmd()".as_slice())
        };
        argv.clear();
        scope.line = argv;
        verdict
    });
    // SAFETY: the closure gave `argv` back to the scope, and `verdict`
    // holds only static bytes, so nothing this frame owns is skipped when
    // `raise_at_caller` raises. With the stack emptied, the boolean or the
    // error table fits in the slots Lua gives a C function.
    unsafe {
        ffi::lua_settop(state, 0);
        match verdict {
            Ok(permitted) => {
                ffi::lua_pushboolean(state, c_int::from(permitted));
                1
            }
            Err(message) => {
                push_error_table(state, message);
                raise_at_caller(state)
            }
        }
    }
}

/// # Safety
/// Called by Lua only, as `redis.pcall`: a failure is returned as the
/// error table, not raised.
pub unsafe extern "C-unwind" fn redis_pcall(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: `state` is the one Lua called this with; success or not,
    // `call_onto_stack` leaves the one value returned on top.
    unsafe {
        call_onto_stack(state);
    }
    1
}

/// # Safety
/// Called by Lua only, as the context's `set_resp` (`redis.setresp` has
/// checked the version).
pub unsafe extern "C-unwind" fn set_resp(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: index 1 is within the slots Lua gives a C function, so it
    // may be read even if absent (0 then); nothing is converted in place.
    let version = unsafe { ffi::lua_tonumber(state, 1) };
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
pub unsafe extern "C-unwind" fn set_args(state: *mut ffi::lua_State) -> c_int {
    // Setting the hook again restarts its instruction count, so a run is
    // only taken for a long one by its own running time. Coroutines the
    // script creates inherit the hook.
    // SAFETY: `hook` has the signature Lua calls a hook with, and a state
    // may set its hook while it runs.
    unsafe {
        ffi::lua_sethook(state, Some(hook), ffi::LUA_MASKCOUNT, super::HOOK_EVERY);
    }
    with_active(|scope| {
        if let Some(scope) = scope {
            // SAFETY: each table is pushed, then popped into the globals.
            // Those have no `__newindex` (the prelude gives them only
            // `__index`), so no Lua code runs here that could reach
            // `with_active` while `scope` is borrowed; an out-of-memory
            // raise skips frames that only borrow.
            unsafe {
                push_strings(state, scope.keys);
                ffi::lua_setfield(state, ffi::LUA_GLOBALSINDEX, c"KEYS".as_ptr());
                push_strings(state, scope.args);
                ffi::lua_setfield(state, ffi::LUA_GLOBALSINDEX, c"ARGV".as_ptr());
            }
        }
    });
    0
}

/// The instruction-count hook: stops a script that SCRIPT KILL or a
/// shutdown asked to stop. The error it raises can be caught by the
/// script's pcall, but the sandbox's pcall, xpcall and coroutine.resume
/// raise it again once the run is killed, and this hook keeps firing.
unsafe extern "C-unwind" fn hook(state: *mut ffi::lua_State, ar: *mut ffi::lua_Debug) {
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
        // SAFETY: Lua hands the hook an `ar` for the running function, which
        // "Sl" fills without allocating or running Lua code; `source` is
        // then that function's NUL-terminated chunk name, which it keeps
        // alive.
        unsafe {
            if ffi::lua_getinfo(state, c"Sl".as_ptr(), ar) != 0
                && matches!(
                    std::ffi::CStr::from_ptr((*ar).source).to_bytes(),
                    b"@user_script" | b"@user_function"
                )
            {
                scope
                    .run
                    .kill_line
                    .store((*ar).currentline as u64, Ordering::Release);
            }
        }
        true
    });
    if !killed {
        return;
    }
    // SAFETY: the closure has returned and `message` is static, so this
    // frame owns nothing for `lua_error` to skip. Lua 5.1 lets a count hook
    // raise, and gives a hook the same free slots as a C function.
    unsafe {
        ffi::lua_pushstring(state, message.as_ptr());
        ffi::lua_error(state);
    }
}

/// # Safety
/// Called by Lua only, as the context's `killed`: whether the run has
/// been asked to stop.
pub unsafe extern "C-unwind" fn killed(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: one push, into the slots Lua gives a C function.
    unsafe { ffi::lua_pushboolean(state, super::kill_requested() as c_int) };
    1
}

unsafe fn push_strings(state: *mut ffi::lua_State, items: &[Bytes]) {
    // SAFETY: the table and one string at a time (popped by `lua_rawseti`)
    // take two slots, within the slots of the C function calling this;
    // Lua copies each string, and `items` is only borrowed, so a raise
    // part-way leaks nothing.
    unsafe {
        ffi::lua_createtable(state, items.len() as c_int, 0);
        for (i, item) in items.iter().enumerate() {
            ffi::lua_pushlstring(state, item.as_ptr().cast(), item.len());
            ffi::lua_rawseti(state, -2, (i + 1) as ffi::lua_Integer);
        }
    }
}

/// Runs the command given as the arguments on the stack and leaves its
/// reply on top, or its error table. Answers whether it succeeded.
unsafe fn call_onto_stack(state: *mut ffi::lua_State) -> bool {
    // SAFETY: the caller is the C function Lua called with `state`.
    let nargs = unsafe { ffi::lua_gettop(state) };
    // SAFETY: `run_command` is done with the arguments, and with anything
    // it owned, before `lua_settop` drops them. The reply is pushed from a
    // borrow of the scope, which owns it, so an out-of-memory raise while
    // pushing skips frames that own nothing. Pushing may run the collector
    // but no Lua code (scripts cannot give a value a `__gc`: `newproxy`
    // is removed), so nothing replaces `scope.reply` while it is read.
    with_active(|scope| unsafe {
        let Some(scope) = scope else {
            ffi::lua_settop(state, 0);
            push_error_table(state, b"ERR redis.call outside of a script run");
            return false;
        };
        run_command(state, nargs, scope);
        ffi::lua_settop(state, 0);
        let ok = !matches!(scope.reply, Reply::Error(_));
        push_reply(state, &scope.reply, scope.resp3);
        scope.reply = Reply::Nil;
        ok
    })
}

/// Runs the command to completion, leaving its reply in the scope, before
/// Lua is touched again. A panic is kept for the run to resume once it is
/// out of Lua, which cannot unwind.
unsafe fn run_command(state: *mut ffi::lua_State, nargs: c_int, scope: &mut CallScope) {
    let ran = catch_unwind(AssertUnwindSafe(|| {
        let mut argv = std::mem::take(&mut scope.line);
        // SAFETY: `nargs` is the stack's height on entry.
        let args_ok = unsafe { read_args(state, nargs, &mut argv) };
        let mut reply = if !args_ok {
            Reply::Error(CmdError::other(
                "ERR Lua redis lib command arguments must be strings or integers",
            ))
        } else if argv.is_empty() {
            Reply::Error(CmdError::other(
                "ERR Please specify at least one argument for this redis lib call",
            ))
        } else {
            scope.host.call(&argv, scope.resp3, scope.run)
        };
        render_errors(&mut reply);
        scope.reply = reply;
        argv.clear();
        scope.line = argv;
    }));
    if let Err(panic) = ran {
        scope.reply = Reply::Error(CmdError::other("ERR the command panicked"));
        scope.panic = Some(panic);
    }
}

/// The call's arguments as a command line. Answers false if one is
/// neither a string nor a number.
unsafe fn read_args(state: *mut ffi::lua_State, nargs: c_int, argv: &mut Vec<Bytes>) -> bool {
    argv.clear();
    for idx in 1..=nargs {
        // SAFETY: `idx` is one of the call's arguments: `nargs` is the
        // stack's height on entry. Nothing below may raise, as `argv` is
        // owned by a frame that a `longjmp` would skip.
        let arg = match unsafe { ffi::lua_type(state, idx) } {
            ffi::LUA_TSTRING => {
                // SAFETY: a string value is returned as it is, not
                // converted, so nothing is allocated; its `len` bytes stay
                // alive while it is on the stack, past the copy.
                let bytes = unsafe {
                    let mut len = 0;
                    let ptr = ffi::lua_tolstring(state, idx, &mut len);
                    std::slice::from_raw_parts(ptr.cast(), len)
                };
                Bytes::copy_from_slice(bytes)
            }
            // Lua 5.1 numbers are doubles; Redis prints them with %.17g.
            ffi::LUA_TNUMBER => {
                // SAFETY: a number, read as it is.
                Bytes::from(format_double(unsafe { ffi::lua_tonumber(state, idx) }))
            }
            _ => return false,
        };
        argv.push(arg);
    }
    true
}
