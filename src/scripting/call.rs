//! `redis.call` as a C function, as in Redis: a C callee keeps its
//! caller's frame even in `return redis.call(...)` (Lua only eliminates
//! tail calls into Lua functions), so a failed call can report the line of
//! the script that made it. The work is done by the host function in the
//! context table; this only turns its `(false, error table)` answer into a
//! raised Lua error carrying that line.

use std::os::raw::c_int;

use mlua::ffi;

/// Registry key of the prelude's context table.
pub const CTX_KEY: &str = "rlockd.ctx";

/// # Safety
/// Called by Lua only. Between the host call and `lua_error` no Rust value
/// with a destructor is alive, so the error's `longjmp` skips nothing.
pub unsafe extern "C-unwind" fn redis_call(state: *mut ffi::lua_State) -> c_int {
    unsafe {
        let nargs = ffi::lua_gettop(state);
        ffi::lua_getfield(state, ffi::LUA_REGISTRYINDEX, c"rlockd.ctx".as_ptr());
        ffi::lua_getfield(state, -1, c"call".as_ptr());
        ffi::lua_remove(state, -2);
        ffi::lua_insert(state, 1);
        ffi::lua_call(state, nargs, 2);
        if ffi::lua_toboolean(state, -2) != 0 {
            return 1;
        }
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
