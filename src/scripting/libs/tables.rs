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

use mlua::{Lua, Table};

use crate::scripting::stack::{Kind, Stack, State};

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

/// The length operator on the table at index 1, as `luaL_getn` gives it
/// (every caller has checked that argument 1 is a table).
fn length(stack: Stack) -> i64 {
    stack.raw_len(1) as c_int as i64
}

/// `unpack(t [, i [, j]])`: the count is computed in 64 bits and checked
/// against the stack before anything is pushed.
unsafe extern "C-unwind" fn unpack(l: *mut State) -> c_int {
    // SAFETY: Lua called this with `l`. Room for all `count` values is
    // made before the first push (`count` is checked to fit `c_int`
    // first), and the frame owns nothing.
    let stack = unsafe { Stack::new(l) };
    stack.check_table(1);
    let first = stack.opt_int(2, 1);
    let last = if stack.is_none_or_nil(3) {
        length(stack)
    } else {
        stack.check_int(3)
    };
    if first > last {
        return 0;
    }
    let count = last - first + 1;
    if count >= c_int::MAX as i64 || !stack.check_stack(count as c_int) {
        stack.error(c"too many results to unpack");
    }
    for i in first..=last {
        stack.raw_get_at(1, i as c_int);
    }
    count as c_int
}

/// `table.insert(t, [pos,] v)`.
unsafe extern "C-unwind" fn insert(l: *mut State) -> c_int {
    // SAFETY: Lua called this with `l`. The value is on top with two or
    // three arguments, `shift` leaves the stack as it found it, and
    // `raw_set_at` pops the value into the table.
    let stack = unsafe { Stack::new(l) };
    stack.check_table(1);
    let mut end = length(stack) + 1;
    let pos = match stack.top() {
        2 => end,
        3 => {
            let pos = stack.check_int(2);
            end = end.max(pos);
            shift(stack, pos, end, Direction::Up);
            pos
        }
        _ => stack.error(c"wrong number of arguments to 'insert'"),
    };
    stack.raw_set_at(1, pos as c_int);
    0
}

/// `table.remove(t [, pos])`.
unsafe extern "C-unwind" fn remove(l: *mut State) -> c_int {
    // SAFETY: Lua called this with `l`. The removed value takes one of the
    // slots Lua gives a C function, and `shift` leaves the stack as it
    // found it, so that value is what is returned.
    let stack = unsafe { Stack::new(l) };
    stack.check_table(1);
    let end = length(stack);
    let pos = stack.opt_int(2, end);
    if !(1..=end).contains(&pos) {
        return 0;
    }
    stack.raw_get_at(1, pos as c_int);
    shift(stack, pos, end, Direction::Down);
    1
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
/// the stack as it found it: each move pushes one value and pops it, each
/// nil is popped by its set, and `sparse_shift` cleans up after itself.
fn shift(stack: Stack, lo: i64, hi: i64, dir: Direction) {
    if hi - lo <= DENSE_SHIFT {
        match dir {
            Direction::Up => {
                for i in (lo + 1..=hi).rev() {
                    move_entry(stack, i - 1, i);
                }
            }
            Direction::Down => {
                for i in lo..hi {
                    move_entry(stack, i + 1, i);
                }
                clear_entry(stack, hi);
            }
        }
    } else {
        sparse_shift(stack, lo, hi, dir);
    }
}

/// `t[to] = t[from]`, raw, one slot in use.
fn move_entry(stack: Stack, from: i64, to: i64) {
    stack.raw_get_at(1, from as c_int);
    stack.raw_set_at(1, to as c_int);
}

/// `t[at] = nil`, raw, one slot in use.
fn clear_entry(stack: Stack, at: i64) {
    stack.push_nil();
    stack.raw_set_at(1, at as c_int);
}

/// The same result as the index-by-index loop, visiting only the integer
/// keys present in the range: an index whose neighbour (the one it takes
/// its value from) is absent becomes nil; every other index takes its
/// neighbour's value. Present keys are handled away from the direction
/// values travel, so each is read before it is overwritten. `keys` lives
/// in the userdata `present_keys` leaves on top, which stays there until
/// the `pop` after its last use; the moves and sets in between are
/// balanced, so that pop takes it.
fn sparse_shift(stack: Stack, lo: i64, hi: i64, dir: Direction) {
    let keys = present_keys(stack, lo, hi);
    let present = |k: i64| keys.binary_search(&k).is_ok();
    let step = |k: i64| match dir {
        Direction::Up => {
            if k < hi {
                move_entry(stack, k, k + 1);
            }
            if k > lo && !present(k - 1) {
                clear_entry(stack, k);
            }
        }
        Direction::Down => {
            if k > lo {
                move_entry(stack, k, k - 1);
            }
            if k == hi || !present(k + 1) {
                clear_entry(stack, k);
            }
        }
    };
    match dir {
        Direction::Up => keys.iter().rev().for_each(|&k| step(k)),
        Direction::Down => keys.iter().for_each(|&k| step(k)),
    }
    stack.pop(1);
}

/// The integer keys of the table at index 1 within `lo..=hi`, sorted, in
/// scratch memory left on top of the stack (Lua's, so an error raised
/// meanwhile leaks nothing). The walks change nothing, and each key is
/// kept as it was (`to_number` converts nothing). The second walk may find
/// fewer keys than the first counted: the collector the allocation may run
/// clears a weak table's entries whose values are dead. So it writes at
/// most `count` keys, and the slice covers only the ones written.
fn present_keys<'l>(stack: Stack<'l>, lo: i64, hi: i64) -> &'l mut [i64] {
    let wanted = || -> Option<i64> {
        if stack.kind(-2) != Kind::Number {
            return None;
        }
        let k = stack.to_number(-2);
        (k.fract() == 0.0 && k >= lo as f64 && k <= hi as f64).then_some(k as i64)
    };
    let mut count = 0usize;
    stack.push_nil();
    while stack.next(1) {
        count += wanted().is_some() as usize;
        stack.pop(1);
    }
    let keys = stack.push_scratch(count);
    let mut filled = 0;
    stack.push_nil();
    while stack.next(1) {
        if let Some(k) = wanted()
            && filled < count
        {
            keys[filled] = k;
            filled += 1;
        }
        stack.pop(1);
    }
    let keys = &mut keys[..filled];
    keys.sort_unstable();
    keys
}
