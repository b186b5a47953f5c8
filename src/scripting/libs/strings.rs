//! Guards around Lua 5.1's string library, keeping its results and error
//! texts for everything it handles safely:
//!
//! - `string.rep` builds its result with one allocation checked against
//!   the heap limit, instead of one append per repetition in C (2^31
//!   appends of an empty string could not be killed).
//! - `find`, `match`, `gmatch` and `gsub` refuse a pattern that could
//!   nest the C matcher deeper than Lua 5.2+ allows ("pattern too
//!   complex"): 5.1 recurses once per quantified item or capture, and a
//!   pattern of a million `a?` overflowed the C stack.
//!
//! These are C functions, so argument errors name the function as Lua's
//! own do, and nothing here owns memory while Lua may raise.

use std::os::raw::c_int;

use mlua::{Lua, Table, ffi};

/// Lua 5.2's limit on the matcher's nesting (its `MAXCCALLS`).
const MAX_PATTERN_DEPTH: usize = 200;

pub fn install(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    let string: Table = globals.get("string")?;
    // SAFETY: the functions below follow the Lua C function protocol.
    unsafe {
        string.raw_set("rep", lua.create_c_function(rep)?)?;
    }
    let guards: [(&str, ffi::lua_CFunction); 4] = [
        ("find", guarded_find),
        ("match", guarded_find),
        ("gmatch", guarded_gmatch),
        ("gsub", guarded_gsub),
    ];
    for (name, guard) in guards {
        let original: mlua::Function = string.get(name)?;
        // SAFETY: the guard is a C closure holding the library's own C
        // function as its upvalue, which it runs once the pattern passes.
        let wrapped: mlua::Function =
            unsafe { lua.exec_raw(original, |state| ffi::lua_pushcclosure(state, guard, 1))? };
        string.raw_set(name, wrapped)?;
    }
    Ok(())
}

/// `luaL_checkint`: the integer argument narrowed to `int` as 5.1 does.
unsafe fn check_int(l: *mut ffi::lua_State, arg: c_int) -> i64 {
    unsafe { ffi::luaL_checkinteger(l, arg) as c_int as i64 }
}

/// `string.rep(s, n)`.
unsafe extern "C-unwind" fn rep(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        let mut len = 0usize;
        let s = ffi::luaL_checklstring(l, 1, &mut len).cast::<u8>();
        let n = check_int(l, 2);
        if n <= 0 || len == 0 {
            ffi::lua_pushlstring_(l, c"".as_ptr(), 0);
            return 1;
        }
        let Some(total) = len.checked_mul(n as usize) else {
            return ffi::luaL_error(l, c"resulting string too large".as_ptr());
        };
        // Lua-owned scratch memory: a result past the heap limit fails
        // here, with Lua's out-of-memory error, before any copying.
        let buf = ffi::lua_newuserdata(l, total).cast::<u8>();
        std::ptr::copy_nonoverlapping(s, buf, len);
        let mut filled = len;
        while filled < total {
            let chunk = filled.min(total - filled);
            std::ptr::copy_nonoverlapping(buf, buf.add(filled), chunk);
            filled += chunk;
        }
        ffi::lua_pushlstring_(l, buf.cast(), total);
        1
    }
}

/// `string.find` and `string.match`: `(s, pattern [, init [, plain]])`.
unsafe extern "C-unwind" fn guarded_find(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
        let pattern = pattern_arg(l);
        ffi::luaL_optinteger(l, 3, 1);
        // A plain find runs no matcher.
        if ffi::lua_toboolean(l, 4) == 0 {
            check_depth(l, pattern);
        }
        call_original(l)
    }
}

/// `string.gmatch(s, pattern)`: the iterator it returns matches with the
/// pattern checked here.
unsafe extern "C-unwind" fn guarded_gmatch(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
        let pattern = pattern_arg(l);
        check_depth(l, pattern);
        call_original(l)
    }
}

/// `string.gsub(s, pattern, repl [, n])`, its arguments checked in the
/// order 5.1 checks them.
unsafe extern "C-unwind" fn guarded_gsub(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
        let pattern = pattern_arg(l);
        let repl = ffi::lua_type(l, 3);
        ffi::luaL_optinteger(l, 4, 0);
        if !matches!(
            repl,
            ffi::LUA_TNUMBER | ffi::LUA_TSTRING | ffi::LUA_TTABLE | ffi::LUA_TFUNCTION
        ) {
            ffi::luaL_argerror(l, 3, c"string/function/table expected".as_ptr());
        }
        check_depth(l, pattern);
        call_original(l)
    }
}

/// The pattern argument's bytes, valid while it is on the stack.
unsafe fn pattern_arg<'a>(l: *mut ffi::lua_State) -> &'a [u8] {
    unsafe {
        let mut len = 0usize;
        let p = ffi::luaL_checklstring(l, 2, &mut len);
        std::slice::from_raw_parts(p.cast(), len)
    }
}

unsafe fn check_depth(l: *mut ffi::lua_State, pattern: &[u8]) {
    if pattern_depth(pattern) > MAX_PATTERN_DEPTH {
        unsafe {
            ffi::luaL_error(l, c"pattern too complex".as_ptr());
        }
    }
}

/// Runs the library function (upvalue 1) in this call's own frame, as if
/// the script had called it: its errors carry the script's line and name
/// the function the way they always did.
unsafe fn call_original(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        match ffi::lua_tocfunction(l, ffi::lua_upvalueindex(1)) {
            Some(original) => original(l),
            None => ffi::luaL_error(l, c"string library function missing".as_ptr()),
        }
    }
}

/// How deep 5.1's matcher can nest for `pattern`, at most: it recurses
/// once for each capture bracket and each single-character item followed
/// by `?`, `*`, `+` or `-`; other items loop without recursing. A
/// malformed pattern is counted as far as it goes; the matcher reports it.
fn pattern_depth(pattern: &[u8]) -> usize {
    let mut depth = 0;
    let mut i = 0;
    while i < pattern.len() {
        match pattern[i] {
            b'(' | b')' => {
                depth += 1;
                i += 1;
                continue;
            }
            b'%' => match pattern.get(i + 1) {
                // `%bxy`: a balanced match, no recursion.
                Some(b'b') => {
                    i += 4;
                    continue;
                }
                // `%f[set]`: a frontier, no recursion.
                Some(b'f') => {
                    i = set_end(pattern, i + 2);
                    continue;
                }
                Some(d) if d.is_ascii_digit() => {
                    i += 2;
                    continue;
                }
                _ => i += 2,
            },
            b'[' => i = set_end(pattern, i),
            _ => i += 1,
        }
        if matches!(pattern.get(i), Some(b'?' | b'*' | b'+' | b'-')) {
            depth += 1;
            i += 1;
        }
    }
    depth
}

/// The index just past the set `[...]` starting at `start`, read as 5.1
/// reads it: a `]` right after `[` or `[^` belongs to the set, `%`
/// escapes the next byte.
fn set_end(pattern: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    if pattern.get(i) == Some(&b'^') {
        i += 1;
    }
    loop {
        let Some(&c) = pattern.get(i) else {
            return pattern.len();
        };
        i += if c == b'%' { 2 } else { 1 };
        if i >= pattern.len() || pattern[i] == b']' {
            return i + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::pattern_depth;

    #[test]
    fn depth_counts_recursive_items_only() {
        assert_eq!(pattern_depth(b"abc"), 0);
        assert_eq!(pattern_depth(b"a?b*c+d-"), 4);
        assert_eq!(pattern_depth(b"(a)()"), 4);
        assert_eq!(pattern_depth(b"%bxy%f[%w]%1"), 0);
        assert_eq!(pattern_depth(b"[]]*[^%]]?%a+"), 3);
        assert_eq!(pattern_depth(&b"a?".repeat(1000)), 1000);
    }
}
