//! Lua 5.1's string functions that were unsafe in C, with 5.1's results
//! and error texts for everything it handled safely:
//!
//! - `string.rep` builds its result with one allocation checked against
//!   the heap limit, instead of one append per repetition in C (2^31
//!   appends of an empty string could not be killed).
//! - `find`, `match`, `gmatch` and `gsub` match with the Rust matcher in
//!   `pattern`, which SCRIPT KILL can stop, and refuse a pattern that could
//!   nest deeper than Lua 5.2+ allows ("pattern too complex"): 5.1 recursed
//!   once per quantified item or capture, and a pattern of a million `a?`
//!   overflowed the C stack.
//!
//! These are C functions, so argument errors name the function as Lua's
//! own do, and nothing here owns memory while Lua may raise (the matcher
//! only borrows, and results are built in Lua's own buffer).

use std::os::raw::c_int;

use mlua::{Lua, Table, ffi};

use super::pattern::{CaptureLen, MatchError, Matcher, c_pattern};
use crate::scripting::kill_requested;

/// Lua 5.2's limit on the matcher's nesting (its `MAXCCALLS`).
const MAX_PATTERN_DEPTH: usize = 200;

pub fn install(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    let string: Table = globals.get("string")?;
    let functions: [(&str, ffi::lua_CFunction); 5] = [
        ("rep", rep),
        ("find", find),
        ("match", str_match),
        ("gmatch", gmatch),
        ("gsub", gsub),
    ];
    for (name, function) in functions {
        // SAFETY: these follow the Lua C function protocol.
        string.raw_set(name, unsafe { lua.create_c_function(function)? })?;
    }
    Ok(())
}

/// `luaL_checkint`: the integer argument narrowed to `int` as 5.1 does.
unsafe fn check_int(l: *mut ffi::lua_State, arg: c_int) -> i64 {
    // SAFETY: called from the C functions below with their state; a bad
    // argument is raised as their error, over frames that own nothing.
    unsafe { ffi::luaL_checkinteger(l, arg) as c_int as i64 }
}

/// `string.rep(s, n)`.
unsafe extern "C-unwind" fn rep(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: `s` points at argument 1's `len` bytes, alive while it stays
    // on the stack, as it does throughout (Lua's collector never moves an
    // object, so the allocation below cannot either). The userdata has
    // `total` bytes: the first copy fills `len` of them, and each doubling
    // copies from the filled part to just past it, at most up to `total`,
    // never overlapping. Two pushes fit the slots Lua gives a C function,
    // and the errors raised (argument, size, memory) skip frames that own
    // nothing.
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

/// Bytes a special character makes a pattern not plain.
const SPECIALS: &[u8] = b"^$*+?.([%-";

/// A string argument's bytes, valid while it is on the stack.
unsafe fn check_bytes<'a>(l: *mut ffi::lua_State, arg: c_int) -> &'a [u8] {
    // SAFETY: `luaL_checklstring` raises unless the argument is a string
    // or a number, which it turns into a string in place, and gives that
    // string's bytes; the callers keep the argument on the stack for as
    // long as they use the slice.
    unsafe {
        let mut len = 0usize;
        let p = ffi::luaL_checklstring(l, arg, &mut len);
        std::slice::from_raw_parts(p.cast(), len)
    }
}

/// The string in upvalue `n`, valid while the closure lives.
unsafe fn upvalue_bytes<'a>(l: *mut ffi::lua_State, n: c_int) -> &'a [u8] {
    // SAFETY: `gmatch` stored strings in upvalues 1 and 2, the only ones
    // read here, so `lua_tolstring` converts nothing; no script can change
    // a C closure's upvalues (the debug library is out of reach), and the
    // running closure keeps them alive.
    unsafe {
        let mut len = 0usize;
        let p = ffi::lua_tolstring(l, ffi::lua_upvalueindex(n), &mut len);
        std::slice::from_raw_parts(p.cast(), len)
    }
}

/// Raises the matcher's error as 5.1 raises it (a kill as any error: the
/// sandbox reports it as the kill).
unsafe fn raise(l: *mut ffi::lua_State, e: MatchError) -> c_int {
    let message = match e {
        MatchError::Message(m) => m,
        MatchError::Killed => c"Script killed by user with SCRIPT KILL...",
    };
    // SAFETY: one C string for the one `%s`, static; the matcher the
    // callers hold owns nothing for the raise to skip.
    unsafe { ffi::luaL_error(l, c"%s".as_ptr(), message.as_ptr()) }
}

unsafe fn check_depth(l: *mut ffi::lua_State, pattern: &[u8]) {
    if pattern_depth(pattern) > MAX_PATTERN_DEPTH {
        // SAFETY: a static message without format directives; the
        // callers' frames only borrow.
        unsafe {
            ffi::luaL_error(l, c"pattern too complex".as_ptr());
        }
    }
}

/// Pushes capture `i`, or the whole match `whole` when the pattern has no
/// captures.
unsafe fn push_capture(
    l: *mut ffi::lua_State,
    m: &Matcher,
    i: usize,
    whole: Option<(usize, usize)>,
) -> Result<(), MatchError> {
    // SAFETY: the matcher's positions never pass the end of `src`, so the
    // whole match and every finished capture (`len` bytes from `start`)
    // lie inside it; `src` is an argument or upvalue, alive for the call.
    // One push: `push_captures` made room for it, and gsub's other callers
    // use no more of the stack than 5.1's own gsub does.
    unsafe {
        if i >= m.level {
            match whole {
                Some((s, e)) if i == 0 => {
                    ffi::lua_pushlstring_(l, m.src[s..e].as_ptr().cast(), e - s)
                }
                _ => return Err(MatchError::Message(c"invalid capture index")),
            }
            return Ok(());
        }
        let capture = m.captures[i];
        match capture.len {
            CaptureLen::Unfinished => return Err(MatchError::Message(c"unfinished capture")),
            CaptureLen::Position => {
                ffi::lua_pushinteger(l, (capture.start + 1) as ffi::lua_Integer)
            }
            CaptureLen::Len(len) => {
                ffi::lua_pushlstring_(l, m.src[capture.start..].as_ptr().cast(), len)
            }
        }
        Ok(())
    }
}

/// Pushes every capture (or the whole match); answers how many.
unsafe fn push_captures(
    l: *mut ffi::lua_State,
    m: &Matcher,
    whole: Option<(usize, usize)>,
) -> Result<c_int, MatchError> {
    // SAFETY: `luaL_checkstack` makes room for every capture (at most 32)
    // before they are pushed.
    unsafe {
        let count = if m.level == 0 && whole.is_some() {
            1
        } else {
            m.level
        };
        ffi::luaL_checkstack(l, count as c_int, c"too many captures".as_ptr());
        for i in 0..count {
            push_capture(l, m, i, whole)?;
        }
        Ok(count as c_int)
    }
}

/// A relative string position as 5.1 resolves it (negative from the end).
fn relative(pos: i64, len: usize) -> i64 {
    let pos = if pos < 0 { pos + len as i64 + 1 } else { pos };
    pos.max(0)
}

unsafe extern "C-unwind" fn find(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua called this with `l`, as `find_aux` needs.
    unsafe { find_aux(l, true) }
}

unsafe extern "C-unwind" fn str_match(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: as for `find`.
    unsafe { find_aux(l, false) }
}

/// `string.find(s, pattern [, init [, plain]])` and `string.match(s,
/// pattern [, init])`.
unsafe fn find_aux(l: *mut ffi::lua_State, find: bool) -> c_int {
    // SAFETY: `src` and `full` borrow arguments 1 and 2, which nothing here
    // replaces. At most two integers are pushed before `push_captures`
    // makes its own room. The matcher holds borrows and plain values
    // only, so the errors raised from here skip no destructor.
    unsafe {
        let src = check_bytes(l, 1);
        let full = check_bytes(l, 2);
        let init = (relative(ffi::luaL_optinteger(l, 3, 1), src.len()) - 1)
            .clamp(0, src.len() as i64) as usize;
        let pat = c_pattern(full);
        if find && (ffi::lua_toboolean(l, 4) != 0 || !pat.iter().any(|c| SPECIALS.contains(c))) {
            let found = if full.is_empty() {
                Some(0)
            } else {
                src[init..].windows(full.len()).position(|w| w == full)
            };
            if let Some(at) = found {
                ffi::lua_pushinteger(l, (init + at + 1) as ffi::lua_Integer);
                ffi::lua_pushinteger(l, (init + at + full.len()) as ffi::lua_Integer);
                return 2;
            }
        } else {
            check_depth(l, pat);
            let anchored = pat.first() == Some(&b'^');
            let p = anchored as usize;
            let mut m = Matcher::new(src, pat, kill_requested);
            let mut start = init;
            loop {
                match m.try_at(start, p) {
                    Err(e) => return raise(l, e),
                    Ok(Some(end)) => {
                        let pushed = if find {
                            ffi::lua_pushinteger(l, (start + 1) as ffi::lua_Integer);
                            ffi::lua_pushinteger(l, end as ffi::lua_Integer);
                            push_captures(l, &m, None).map(|n| n + 2)
                        } else {
                            push_captures(l, &m, Some((start, end)))
                        };
                        return pushed.unwrap_or_else(|e| raise(l, e));
                    }
                    Ok(None) => {}
                }
                start += 1;
                if anchored || start > src.len() {
                    break;
                }
            }
        }
        ffi::lua_pushnil(l);
        1
    }
}

/// `string.gmatch(s, pattern)`: an iterator over the matches (no anchor:
/// a leading `^` is an ordinary character here, as in 5.1).
unsafe extern "C-unwind" fn gmatch(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: `check_bytes` leaves arguments 1 and 2 strings, and `pat` is
    // not used past `lua_settop`, which keeps exactly those two; with the
    // position they become the three upvalues `gmatch_step` reads.
    unsafe {
        check_bytes(l, 1);
        let pat = c_pattern(check_bytes(l, 2));
        check_depth(l, pat);
        ffi::lua_settop(l, 2);
        ffi::lua_pushinteger(l, 0);
        ffi::lua_pushcclosure(l, gmatch_step, 3);
        1
    }
}

/// One step of a `gmatch` iterator: upvalues subject, pattern, position.
unsafe extern "C-unwind" fn gmatch_step(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: upvalues 1 and 2 are the subject and pattern strings that
    // `gmatch` stored, and 3 the position; `lua_replace` sets only 3, so
    // `src` and `pat` stay valid. The integer takes one of the slots Lua
    // gives a C function, and `push_captures` makes its own room.
    unsafe {
        let src = upvalue_bytes(l, 1);
        let pat = c_pattern(upvalue_bytes(l, 2));
        let from = ffi::lua_tointeger_(l, ffi::lua_upvalueindex(3)).max(0) as usize;
        let mut m = Matcher::new(src, pat, kill_requested);
        for start in from..=src.len() {
            match m.try_at(start, 0) {
                Err(e) => return raise(l, e),
                Ok(Some(end)) => {
                    let next = if end == start { end + 1 } else { end };
                    ffi::lua_pushinteger(l, next as ffi::lua_Integer);
                    ffi::lua_replace(l, ffi::lua_upvalueindex(3));
                    return push_captures(l, &m, Some((start, end)))
                        .unwrap_or_else(|e| raise(l, e));
                }
                Ok(None) => {}
            }
        }
        0
    }
}

/// `string.gsub(s, pattern, repl [, n])`, its arguments checked in 5.1's
/// order.
unsafe extern "C-unwind" fn gsub(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: `src` and `pat` borrow arguments 1 and 2, which stay in
    // place: the buffer and the replacements use the stack above them. The
    // zeroed buffer (pointers, an integer and bytes: zero is valid) is
    // only a place for `luaL_buffinit` to fill, and `b` stays in this
    // frame, unmoved, as 5.1's buffer points into itself. The matcher
    // holds borrows and plain values only, so a raise, the replacement
    // function's included, skips no destructor.
    unsafe {
        let src = check_bytes(l, 1);
        let pat = c_pattern(check_bytes(l, 2));
        let repl = ffi::lua_type(l, 3);
        let max = ffi::luaL_optinteger(l, 4, (src.len() + 1) as ffi::lua_Integer) as c_int as i64;
        if !matches!(
            repl,
            ffi::LUA_TNUMBER | ffi::LUA_TSTRING | ffi::LUA_TTABLE | ffi::LUA_TFUNCTION
        ) {
            ffi::luaL_argerror(l, 3, c"string/function/table expected".as_ptr());
        }
        check_depth(l, pat);
        let anchored = pat.first() == Some(&b'^');
        let p = anchored as usize;
        let mut b: ffi::luaL_Buffer = std::mem::zeroed();
        ffi::luaL_buffinit(l, &mut b);
        let mut m = Matcher::new(src, pat, kill_requested);
        let mut pos = 0;
        let mut count: i64 = 0;
        while count < max {
            let end = match m.try_at(pos, p) {
                Ok(end) => end,
                Err(e) => return raise(l, e),
            };
            if let Some(end) = end {
                count += 1;
                if let Err(e) = add_value(l, &mut b, &m, pos, end) {
                    return raise(l, e);
                }
            }
            match end {
                Some(end) if end > pos => pos = end,
                _ if pos < src.len() => {
                    ffi::luaL_addchar(&mut b, src[pos] as std::os::raw::c_char);
                    pos += 1;
                }
                _ => break,
            }
            if anchored {
                break;
            }
        }
        ffi::luaL_addlstring(&mut b, src[pos..].as_ptr().cast(), src.len() - pos);
        ffi::luaL_pushresult(&mut b);
        ffi::lua_pushinteger(l, count as ffi::lua_Integer);
        2
    }
}

/// Adds one match's replacement to `b`, as 5.1's gsub does for a string,
/// table or function `repl` (argument 3).
unsafe fn add_value(
    l: *mut ffi::lua_State,
    b: &mut ffi::luaL_Buffer,
    m: &Matcher,
    s: usize,
    e: usize,
) -> Result<(), MatchError> {
    // SAFETY: argument 3 is the replacement, of a type `gsub` checked. A
    // function is called with the captures and leaves one result, a table
    // lookup leaves one value: either way the value `luaL_addvalue` takes
    // is on top, over the stack as the buffer left it, as its protocol
    // wants. The Lua code this may run can raise or do anything a script
    // can, but cannot reach this C function's arguments, which `m` borrows.
    unsafe {
        match ffi::lua_type(l, 3) {
            ffi::LUA_TFUNCTION => {
                ffi::lua_pushvalue(l, 3);
                let n = push_captures(l, m, Some((s, e)))?;
                ffi::lua_call(l, n, 1);
            }
            ffi::LUA_TTABLE => {
                push_capture(l, m, 0, Some((s, e)))?;
                ffi::lua_gettable_(l, 3);
            }
            _ => return add_string_repl(l, b, m, (s, e)),
        }
        if ffi::lua_toboolean(l, -1) == 0 {
            ffi::lua_pop(l, 1);
            ffi::lua_pushlstring_(l, m.src[s..e].as_ptr().cast(), e - s);
        } else if ffi::lua_isstring(l, -1) == 0 {
            ffi::luaL_error(
                l,
                c"invalid replacement value (a %s)".as_ptr(),
                ffi::luaL_typename(l, -1),
            );
        }
        ffi::luaL_addvalue(b);
        Ok(())
    }
}

/// A string `repl`: `%0` the whole match, `%1`..`%9` captures, `%` before
/// anything else that thing itself (a trailing `%` adds a NUL byte, as 5.1
/// reads past it into the string's terminator).
unsafe fn add_string_repl(
    l: *mut ffi::lua_State,
    b: &mut ffi::luaL_Buffer,
    m: &Matcher,
    (s, e): (usize, usize),
) -> Result<(), MatchError> {
    // SAFETY: argument 3 is a string or a number (`gsub` checked), which
    // `lua_tolstring` turns into a string in place, so `news` stays valid
    // while argument 3 does, through the loop. A capture is pushed and at
    // once taken into the buffer, as its protocol wants.
    unsafe {
        let mut len = 0usize;
        let news = ffi::lua_tolstring(l, 3, &mut len);
        let news = std::slice::from_raw_parts(news.cast::<u8>(), len);
        let mut i = 0;
        while i < news.len() {
            let c = news[i];
            i += 1;
            if c != b'%' {
                ffi::luaL_addchar(b, c as std::os::raw::c_char);
                continue;
            }
            let c = news.get(i).copied().unwrap_or(0);
            i += 1;
            match c {
                b'0' => ffi::luaL_addlstring(b, m.src[s..e].as_ptr().cast(), e - s),
                b'1'..=b'9' => {
                    push_capture(l, m, (c - b'1') as usize, Some((s, e)))?;
                    ffi::luaL_addvalue(b);
                }
                _ => ffi::luaL_addchar(b, c as std::os::raw::c_char),
            }
        }
        Ok(())
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
    use mlua::Lua;

    /// Runs `probe` with globals S, P, I in both states; the results (or
    /// errors) written out as text.
    fn both(
        reference: &Lua,
        ours: &Lua,
        probe: &str,
        s: &[u8],
        p: &[u8],
        i: i64,
    ) -> (String, String) {
        let run = |lua: &Lua| -> String {
            let g = lua.globals();
            g.set("S", lua.create_string(s).unwrap()).unwrap();
            g.set("P", lua.create_string(p).unwrap()).unwrap();
            g.set("I", i).unwrap();
            lua.load(PROBE_HELPERS.to_string() + probe)
                .eval::<mlua::LuaString>()
                .map(|v| String::from_utf8_lossy(&v.as_bytes()).into_owned())
                .unwrap_or_else(|e| format!("host error {e}"))
        };
        (run(reference), run(ours))
    }

    const PROBE_HELPERS: &str = "local function ser(ok, ...) \
        local t = {tostring(ok)} \
        for i = 1, select('#', ...) do local v = select(i, ...) t[#t + 1] = type(v) .. ':' .. tostring(v) end \
        return table.concat(t, '|') end ";

    const PROBES: [&str; 8] = [
        "return ser(pcall(string.find, S, P, I))",
        "return ser(pcall(string.find, S, P, I, true))",
        "return ser(pcall(string.match, S, P, I))",
        "return ser(pcall(string.gsub, S, P, '<%0%1>', I))",
        "return ser(pcall(string.gsub, S, P, '[%%]%', I))",
        "return ser(pcall(string.gsub, S, P, function(a, b) if a == 'a' then return nil end return tostring(b) .. '!' end))",
        "return ser(pcall(string.gsub, S, P, {a = 'A', b = false, [''] = 'E'}))",
        "return ser(pcall(function() local r = {} for a, b in string.gmatch(S, P) do r[#r + 1] = tostring(a) .. ',' .. tostring(b) if #r > 50 then break end end return table.concat(r, ';') end))",
    ];

    /// The Rust matcher against 5.1's C one (reachable in a plain state)
    /// on random small patterns and subjects: same results, same errors.
    #[test]
    fn matcher_agrees_with_lua_5_1() {
        let reference = Lua::new();
        let ours = Lua::new();
        super::install(&ours, &ours.globals()).unwrap();
        let pattern_bytes = b"ab.%()[]^$*+-?%bfad1w0 ]\0";
        let subject_bytes = b"aab b()[]%-\0x1";
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for round in 0..40_000 {
            let p: Vec<u8> = (0..next(9))
                .map(|_| pattern_bytes[next(pattern_bytes.len())])
                .collect();
            let s: Vec<u8> = (0..next(12))
                .map(|_| subject_bytes[next(subject_bytes.len())])
                .collect();
            let init = next(16) as i64 - 6;
            let probe = PROBES[round % PROBES.len()];
            let (want, got) = both(&reference, &ours, probe, &s, &p, init);
            assert_eq!(
                want,
                got,
                "{probe} with S={:?} P={:?} I={init}",
                String::from_utf8_lossy(&s),
                String::from_utf8_lossy(&p)
            );
        }
    }

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
