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

use mlua::{Lua, Table};

use super::pattern::{CaptureLen, MatchError, Matcher, c_pattern};
use crate::scripting::kill_requested;
use crate::scripting::stack::{Buffer, CFunction, Kind, Stack, State};

/// Lua 5.2's limit on the matcher's nesting (its `MAXCCALLS`).
const MAX_PATTERN_DEPTH: usize = 200;

pub fn install(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    let string: Table = globals.get("string")?;
    let functions: [(&str, CFunction); 5] = [
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

/// `string.rep(s, n)`.
unsafe extern "C-unwind" fn rep(l: *mut State) -> c_int {
    // SAFETY: Lua called this with `l`. `s` borrows argument 1, which stays
    // in place; two pushes at most, and the errors raised (argument, size,
    // memory) skip frames that own nothing.
    let stack = unsafe { Stack::new(l) };
    let s = stack.check_bytes(1);
    let n = stack.check_int(2);
    if n <= 0 || s.is_empty() {
        stack.push_bytes(b"");
        return 1;
    }
    let Some(total) = s.len().checked_mul(n as usize) else {
        stack.error(c"resulting string too large");
    };
    // In Lua's memory, so that a result past the heap limit fails with
    // Lua's out-of-memory error before any copying.
    stack.push_repeated(s, total);
    1
}

/// Bytes a special character makes a pattern not plain.
const SPECIALS: &[u8] = b"^$*+?.([%-";

/// The string in upvalue `n`: `gmatch` stored strings in upvalues 1 and 2,
/// the only ones read so, and no script can change a C closure's upvalues
/// (the debug library is out of reach).
fn upvalue_bytes<'l>(stack: Stack<'l>, n: c_int) -> &'l [u8] {
    stack.to_bytes(Stack::upvalue(n)).unwrap_or_default()
}

/// Raises the matcher's error as 5.1 raises it (a kill as any error: the
/// sandbox reports it as the kill).
fn raise(stack: Stack, e: MatchError) -> ! {
    stack.error(match e {
        MatchError::Message(m) => m,
        MatchError::Killed => c"Script killed by user with SCRIPT KILL...",
    })
}

fn check_depth(stack: Stack, pattern: &[u8]) {
    if pattern_depth(pattern) > MAX_PATTERN_DEPTH {
        stack.error(c"pattern too complex");
    }
}

/// Pushes capture `i`, or the whole match `whole` when the pattern has no
/// captures. One push: `push_captures` made room for it, and gsub's other
/// callers use no more of the stack than 5.1's own gsub does.
fn push_capture(
    stack: Stack,
    m: &Matcher,
    i: usize,
    whole: Option<(usize, usize)>,
) -> Result<(), MatchError> {
    if i >= m.level {
        return match whole {
            Some((s, e)) if i == 0 => {
                stack.push_bytes(&m.src[s..e]);
                Ok(())
            }
            _ => Err(MatchError::Message(c"invalid capture index")),
        };
    }
    let capture = m.captures[i];
    match capture.len {
        CaptureLen::Unfinished => return Err(MatchError::Message(c"unfinished capture")),
        CaptureLen::Position => stack.push_integer((capture.start + 1) as i64),
        CaptureLen::Len(len) => stack.push_bytes(&m.src[capture.start..capture.start + len]),
    }
    Ok(())
}

/// Pushes every capture (or the whole match), with room made for them (at
/// most 32) first; answers how many.
fn push_captures(
    stack: Stack,
    m: &Matcher,
    whole: Option<(usize, usize)>,
) -> Result<c_int, MatchError> {
    let count = if m.level == 0 && whole.is_some() {
        1
    } else {
        m.level
    };
    stack.ensure(count as c_int, c"too many captures");
    for i in 0..count {
        push_capture(stack, m, i, whole)?;
    }
    Ok(count as c_int)
}

/// A relative string position as 5.1 resolves it (negative from the end).
fn relative(pos: i64, len: usize) -> i64 {
    let pos = if pos < 0 { pos + len as i64 + 1 } else { pos };
    pos.max(0)
}

unsafe extern "C-unwind" fn find(l: *mut State) -> c_int {
    // SAFETY: Lua called this with `l`; `find_aux` keeps the rules.
    find_aux(unsafe { Stack::new(l) }, true)
}

unsafe extern "C-unwind" fn str_match(l: *mut State) -> c_int {
    // SAFETY: as for `find`.
    find_aux(unsafe { Stack::new(l) }, false)
}

/// `string.find(s, pattern [, init [, plain]])` and `string.match(s,
/// pattern [, init])`. `src` and `full` borrow arguments 1 and 2, which
/// nothing here replaces. At most two integers are pushed before
/// `push_captures` makes its own room. The matcher holds borrows and plain
/// values only, so the errors raised from here skip no destructor.
fn find_aux(stack: Stack, find: bool) -> c_int {
    let src = stack.check_bytes(1);
    let full = stack.check_bytes(2);
    let init =
        (relative(stack.opt_integer(3, 1), src.len()) - 1).clamp(0, src.len() as i64) as usize;
    let pat = c_pattern(full);
    if find && (stack.to_boolean(4) || !pat.iter().any(|c| SPECIALS.contains(c))) {
        let found = if full.is_empty() {
            Some(0)
        } else {
            src[init..].windows(full.len()).position(|w| w == full)
        };
        if let Some(at) = found {
            stack.push_integer((init + at + 1) as i64);
            stack.push_integer((init + at + full.len()) as i64);
            return 2;
        }
    } else {
        check_depth(stack, pat);
        let anchored = pat.first() == Some(&b'^');
        let p = anchored as usize;
        let mut m = Matcher::new(src, pat, kill_requested);
        let mut start = init;
        loop {
            match m.try_at(start, p) {
                Err(e) => raise(stack, e),
                Ok(Some(end)) => {
                    let pushed = if find {
                        stack.push_integer((start + 1) as i64);
                        stack.push_integer(end as i64);
                        push_captures(stack, &m, None).map(|n| n + 2)
                    } else {
                        push_captures(stack, &m, Some((start, end)))
                    };
                    return pushed.unwrap_or_else(|e| raise(stack, e));
                }
                Ok(None) => {}
            }
            start += 1;
            if anchored || start > src.len() {
                break;
            }
        }
    }
    stack.push_nil();
    1
}

/// `string.gmatch(s, pattern)`: an iterator over the matches (no anchor:
/// a leading `^` is an ordinary character here, as in 5.1).
unsafe extern "C-unwind" fn gmatch(l: *mut State) -> c_int {
    // SAFETY: Lua called this with `l`. `check_bytes` leaves arguments 1
    // and 2 strings, and `pat` is not used past `set_top`, which keeps
    // exactly those two.
    let stack = unsafe { Stack::new(l) };
    stack.check_bytes(1);
    let pat = c_pattern(stack.check_bytes(2));
    check_depth(stack, pat);
    stack.set_top(2);
    stack.push_integer(0);
    // SAFETY: `gmatch_step` keeps the rules; with the position, the two
    // strings are the three upvalues it reads.
    unsafe { stack.push_closure(gmatch_step, 3) };
    1
}

/// One step of a `gmatch` iterator: upvalues subject, pattern, position.
unsafe extern "C-unwind" fn gmatch_step(l: *mut State) -> c_int {
    // SAFETY: Lua called this with `l`. `replace` sets only upvalue 3, so
    // `src` and `pat` stay valid. The integer takes one of the slots Lua
    // gives a C function, and `push_captures` makes its own room.
    let stack = unsafe { Stack::new(l) };
    let src = upvalue_bytes(stack, 1);
    let pat = c_pattern(upvalue_bytes(stack, 2));
    let from = stack.to_integer(Stack::upvalue(3)).max(0) as usize;
    let mut m = Matcher::new(src, pat, kill_requested);
    for start in from..=src.len() {
        match m.try_at(start, 0) {
            Err(e) => raise(stack, e),
            Ok(Some(end)) => {
                let next = if end == start { end + 1 } else { end };
                stack.push_integer(next as i64);
                stack.replace(Stack::upvalue(3));
                return push_captures(stack, &m, Some((start, end)))
                    .unwrap_or_else(|e| raise(stack, e));
            }
            Ok(None) => {}
        }
    }
    0
}

/// `string.gsub(s, pattern, repl [, n])`, its arguments checked in 5.1's
/// order.
unsafe extern "C-unwind" fn gsub(l: *mut State) -> c_int {
    // SAFETY: Lua called this with `l`. `src` and `pat` borrow arguments 1
    // and 2, which stay in place: the buffer and the replacements use the
    // stack above them. The matcher holds borrows and plain values only, so
    // a raise, the replacement function's included, skips no destructor.
    let stack = unsafe { Stack::new(l) };
    let src = stack.check_bytes(1);
    let pat = c_pattern(stack.check_bytes(2));
    let repl = stack.kind(3);
    let max = stack.opt_int(4, src.len() as i64 + 1);
    if !matches!(
        repl,
        Kind::Number | Kind::String | Kind::Table | Kind::Function
    ) {
        stack.arg_error(3, c"string/function/table expected");
    }
    check_depth(stack, pat);
    let anchored = pat.first() == Some(&b'^');
    let p = anchored as usize;
    let mut m = Matcher::new(src, pat, kill_requested);
    let built = stack.build_string(|b| {
        let mut pos = 0;
        let mut count: i64 = 0;
        while count < max {
            let end = m.try_at(pos, p)?;
            if let Some(end) = end {
                count += 1;
                add_value(stack, b, &m, pos, end)?;
            }
            match end {
                Some(end) if end > pos => pos = end,
                _ if pos < src.len() => {
                    b.add_byte(src[pos]);
                    pos += 1;
                }
                _ => break,
            }
            if anchored {
                break;
            }
        }
        b.add_bytes(&src[pos..]);
        Ok(count)
    });
    match built {
        Ok(count) => stack.push_integer(count),
        Err(e) => raise(stack, e),
    }
    2
}

/// Adds one match's replacement to `b`, as 5.1's gsub does for a string,
/// table or function `repl` (argument 3, of a type `gsub` checked). A
/// function is called with the captures and leaves one result, a table
/// lookup leaves one value: either way the value `add_value` takes is on
/// top, over the stack as the buffer left it. The Lua code this may run
/// can raise or do anything a script can, but cannot reach this C
/// function's arguments, which `m` borrows.
fn add_value(
    stack: Stack,
    b: &mut Buffer,
    m: &Matcher,
    s: usize,
    e: usize,
) -> Result<(), MatchError> {
    match stack.kind(3) {
        Kind::Function => {
            stack.push_value(3);
            let n = push_captures(stack, m, Some((s, e)))?;
            stack.call(n, 1);
        }
        Kind::Table => {
            push_capture(stack, m, 0, Some((s, e)))?;
            stack.get_table(3);
        }
        _ => return add_string_repl(stack, b, m, (s, e)),
    }
    if !stack.to_boolean(-1) {
        stack.pop(1);
        stack.push_bytes(&m.src[s..e]);
    } else if !stack.is_string(-1) {
        stack.error_around(c"invalid replacement value (a ", stack.type_name(-1), c")");
    }
    b.add_value();
    Ok(())
}

/// A string `repl`: `%0` the whole match, `%1`..`%9` captures, `%` before
/// anything else that thing itself (a trailing `%` adds a NUL byte, as 5.1
/// reads past it into the string's terminator). Argument 3 is a string or
/// a number (`gsub` checked), which `to_bytes` turns into a string in
/// place, so `news` stays valid while argument 3 does, through the loop. A
/// capture is pushed and at once taken into the buffer.
fn add_string_repl(
    stack: Stack,
    b: &mut Buffer,
    m: &Matcher,
    (s, e): (usize, usize),
) -> Result<(), MatchError> {
    let news = stack.to_bytes(3).unwrap_or_default();
    let mut i = 0;
    while i < news.len() {
        let c = news[i];
        i += 1;
        if c != b'%' {
            b.add_byte(c);
            continue;
        }
        let c = news.get(i).copied().unwrap_or(0);
        i += 1;
        match c {
            b'0' => b.add_bytes(&m.src[s..e]),
            b'1'..=b'9' => {
                push_capture(stack, m, (c - b'1') as usize, Some((s, e)))?;
                b.add_value();
            }
            _ => b.add_byte(c),
        }
    }
    Ok(())
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
