//! `unpack`, `table.insert` and `table.remove` with Lua 5.1's results and
//! error texts, without its unchecked ranges: 5.1 computes `unpack`'s count
//! in `int` (an overflow crashed the process, CVE-2025-46817), and
//! `insert`/`remove` shift every index of a range the script chooses, one
//! at a time, in C where SCRIPT KILL cannot reach (`table.insert(t, -2^31,
//! v)` ran 2^31 steps).
//!
//! These are C functions: an argument error must name the function the way
//! Lua's own does, and Lua raises errors with `longjmp`, so nothing here
//! owns memory while it calls into Lua (the scratch space is a userdata).

use std::os::raw::c_int;

use mlua::{Lua, Table, ffi};

/// A shift over more indices than this skips the absent ones instead of
/// visiting every index.
const DENSE_SHIFT: i64 = 4096;

pub fn install(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    // SAFETY: the functions below follow the Lua C function protocol.
    unsafe {
        globals.raw_set("unpack", lua.create_c_function(unpack)?)?;
        let table: Table = globals.get("table")?;
        table.raw_set("insert", lua.create_c_function(insert)?)?;
        table.raw_set("remove", lua.create_c_function(remove)?)?;
    }
    Ok(())
}

/// `luaL_checkint`: the integer argument narrowed to `int` as 5.1 does.
unsafe fn check_int(l: *mut ffi::lua_State, arg: c_int) -> i64 {
    // SAFETY: called from the C functions below with their state; a bad
    // argument is raised as their error, over frames that own nothing.
    unsafe { ffi::luaL_checkinteger(l, arg) as c_int as i64 }
}

/// The length operator on the table at index 1, as `luaL_getn` gives it.
unsafe fn length(l: *mut ffi::lua_State) -> i64 {
    // SAFETY: every caller has checked that argument 1 is a table; 5.1's
    // length of a table runs no metamethod.
    unsafe { ffi::lua_objlen(l, 1) as c_int as i64 }
}

/// `unpack(t [, i [, j]])`: the count is computed in 64 bits and checked
/// against the stack before anything is pushed.
unsafe extern "C-unwind" fn unpack(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: argument 1 is checked to be a table before it is read. Room
    // for all `count` values is made before the first push (`count` is
    // checked to fit `c_int` first), and raw reads run no metamethod.
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        let first = ffi::luaL_optinteger(l, 2, 1) as c_int as i64;
        let last = if ffi::lua_isnoneornil(l, 3) != 0 {
            length(l)
        } else {
            check_int(l, 3)
        };
        if first > last {
            return 0;
        }
        let count = last - first + 1;
        if count >= c_int::MAX as i64 || ffi::lua_checkstack(l, count as c_int) == 0 {
            return ffi::luaL_error(l, c"too many results to unpack".as_ptr());
        }
        for i in first..=last {
            ffi::lua_rawgeti_(l, 1, i as c_int);
        }
        count as c_int
    }
}

/// `table.insert(t, [pos,] v)`.
unsafe extern "C-unwind" fn insert(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: argument 1 is checked to be a table. The value is on top
    // with two or three arguments, `shift` leaves the stack as it found
    // it, and `lua_rawseti` pops the value into the table.
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        let mut end = length(l) + 1;
        let pos = match ffi::lua_gettop(l) {
            2 => end,
            3 => {
                let pos = check_int(l, 2);
                end = end.max(pos);
                shift(l, pos, end, Direction::Up);
                pos
            }
            _ => return ffi::luaL_error(l, c"wrong number of arguments to 'insert'".as_ptr()),
        };
        ffi::lua_rawseti_(l, 1, pos as c_int);
        0
    }
}

/// `table.remove(t [, pos])`.
unsafe extern "C-unwind" fn remove(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: argument 1 is checked to be a table; the removed value takes
    // one of the slots Lua gives a C function, and `shift` leaves the
    // stack as it found it, so that value is what is returned.
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        let end = length(l);
        let pos = ffi::luaL_optinteger(l, 2, end as ffi::lua_Integer) as c_int as i64;
        if !(1..=end).contains(&pos) {
            return 0;
        }
        ffi::lua_rawgeti_(l, 1, pos as c_int);
        shift(l, pos, end, Direction::Down);
        1
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Direction {
    /// `t[i] = t[i-1]` for i from `hi` down to `lo + 1` (insert).
    Up,
    /// `t[i] = t[i+1]` for i from `lo` to `hi - 1`, then `t[hi] = nil`
    /// (remove).
    Down,
}

/// Shifts the table at index 1 over `lo..=hi` as 5.1's loops do. Leaves
/// the stack as it found it.
unsafe fn shift(l: *mut ffi::lua_State, lo: i64, hi: i64, dir: Direction) {
    // SAFETY: the callers checked that index 1 is a table. Each move
    // pushes one value and pops it, the nil is popped by its set, and
    // `sparse_shift` cleans up after itself.
    unsafe {
        if hi - lo <= DENSE_SHIFT {
            match dir {
                Direction::Up => {
                    for i in (lo + 1..=hi).rev() {
                        move_entry(l, i - 1, i);
                    }
                }
                Direction::Down => {
                    for i in lo..hi {
                        move_entry(l, i + 1, i);
                    }
                    ffi::lua_pushnil(l);
                    ffi::lua_rawseti_(l, 1, hi as c_int);
                }
            }
        } else {
            sparse_shift(l, lo, hi, dir);
        }
    }
}

/// `t[to] = t[from]`.
unsafe fn move_entry(l: *mut ffi::lua_State, from: i64, to: i64) {
    // SAFETY: index 1 is a table (checked by the C function above); the
    // value read is on top for the raw set to pop, one slot in use at a
    // time, and raw access runs no metamethod.
    unsafe {
        ffi::lua_rawgeti_(l, 1, from as c_int);
        ffi::lua_rawseti_(l, 1, to as c_int);
    }
}

/// The same result as the index-by-index loop, visiting only the integer
/// keys present in the range: an index whose neighbour (the one it takes
/// its value from) is absent becomes nil; every other index takes its
/// neighbour's value. Present keys are handled away from the direction
/// values travel, so each is read before it is overwritten.
unsafe fn sparse_shift(l: *mut ffi::lua_State, lo: i64, hi: i64, dir: Direction) {
    // SAFETY: `keys` lives in the userdata `present_keys` leaves on top,
    // which the stack anchors until the `lua_pop` after its last use; the
    // moves and sets in between are balanced, so that pop takes it.
    unsafe {
        let keys = present_keys(l, lo, hi);
        let present = |k: i64| keys.binary_search(&k).is_ok();
        let step = |k: i64| match dir {
            Direction::Up => {
                if k < hi {
                    move_entry(l, k, k + 1);
                }
                if k > lo && !present(k - 1) {
                    ffi::lua_pushnil(l);
                    ffi::lua_rawseti_(l, 1, k as c_int);
                }
            }
            Direction::Down => {
                if k > lo {
                    move_entry(l, k, k - 1);
                }
                if k == hi || !present(k + 1) {
                    ffi::lua_pushnil(l);
                    ffi::lua_rawseti_(l, 1, k as c_int);
                }
            }
        };
        match dir {
            Direction::Up => keys.iter().rev().for_each(|&k| step(k)),
            Direction::Down => keys.iter().for_each(|&k| step(k)),
        }
        ffi::lua_pop(l, 1);
    }
}

/// The integer keys of the table at index 1 within `lo..=hi`, sorted, in
/// a userdata left on top of the stack (memory Lua owns, so an error
/// raised meanwhile leaks nothing).
unsafe fn present_keys<'a>(l: *mut ffi::lua_State, lo: i64, hi: i64) -> &'a [i64] {
    // SAFETY: `lua_next` walks the table at index 1, each key it leaves
    // kept as it was (`lua_tonumber` converts nothing), and the walks
    // change nothing. The userdata has room for `count` keys (for one at
    // least, so a real block), aligned for `i64` as Lua aligns every
    // userdata, and stays on the stack, anchored, after this returns. The
    // second walk may find fewer keys than the first counted: the
    // collector `lua_newuserdata` may run clears a weak table's entries
    // whose values are dead. So it writes at most `count` keys, and the
    // slice covers only the ones written.
    unsafe {
        let wanted = |l: *mut ffi::lua_State| -> Option<i64> {
            if ffi::lua_type(l, -2) != ffi::LUA_TNUMBER {
                return None;
            }
            let k = ffi::lua_tonumber(l, -2);
            (k.fract() == 0.0 && k >= lo as f64 && k <= hi as f64).then_some(k as i64)
        };
        let mut count = 0usize;
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, 1) != 0 {
            count += wanted(l).is_some() as usize;
            ffi::lua_pop(l, 1);
        }
        let data = ffi::lua_newuserdata(l, count.max(1) * size_of::<i64>()).cast::<i64>();
        let mut filled = 0;
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, 1) != 0 {
            if let Some(k) = wanted(l)
                && filled < count
            {
                data.add(filled).write(k);
                filled += 1;
            }
            ffi::lua_pop(l, 1);
        }
        let keys = std::slice::from_raw_parts_mut(data, filled);
        keys.sort_unstable();
        keys
    }
}
