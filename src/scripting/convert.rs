//! Conversions between replies and Lua values, with Redis 7.0's rules.

use std::ffi::CStr;
use std::os::raw::c_int;

use bytes::Bytes;
use mlua::{Table, Value, ffi};

use crate::error::CmdError;
use crate::protocol::Reply;
use crate::util::{format_double, format_fixed17};

/// Nesting deeper than this is refused rather than recursed into (a
/// table can contain itself).
const MAX_DEPTH: usize = 1000;

/// A Lua number as Redis turns it into an integer reply: truncated toward
/// zero; out of range or NaN gives what x86's conversion gives.
pub fn lua_number_to_i64(n: f64) -> i64 {
    const LIMIT: f64 = 9.223_372_036_854_776e18;
    if !(-LIMIT..LIMIT).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

/// A script's return value (or a table it raised) as a reply.
pub fn lua_to_reply(value: &Value) -> Reply {
    to_reply(value, 0)
}

fn text(s: &mlua::LuaString) -> String {
    String::from_utf8_lossy(&s.as_bytes()).into_owned()
}

fn to_reply(value: &Value, depth: usize) -> Reply {
    if depth > MAX_DEPTH {
        return Reply::Error(CmdError::other("ERR reached lua stack limit"));
    }
    match value {
        Value::String(s) => Reply::Bulk(Bytes::copy_from_slice(&s.as_bytes())),
        Value::Boolean(true) => Reply::Int(1),
        Value::Boolean(false) => Reply::Nil,
        Value::Integer(i) => Reply::Int(*i),
        Value::Number(n) => Reply::Int(lua_number_to_i64(*n)),
        Value::Table(t) => table_to_reply(t, depth),
        _ => Reply::Nil,
    }
}

fn table_to_reply(t: &Table, depth: usize) -> Reply {
    if let Ok(Value::String(e)) = t.raw_get::<Value>("err") {
        return Reply::Error(error_of_table(t, text(&e)));
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("ok") {
        return Reply::Status(text(&s).replace(['\r', '\n'], " ").into());
    }
    match t.raw_get::<Value>("double") {
        Ok(Value::Number(n)) => return Reply::Double(n),
        Ok(Value::Integer(i)) => return Reply::Double(i as f64),
        _ => {}
    }
    if let Ok(Value::Table(map)) = t.raw_get::<Value>("map") {
        let pairs = map
            .pairs::<Value, Value>()
            .filter_map(Result::ok)
            .map(|(k, v)| (to_reply(&k, depth + 1), to_reply(&v, depth + 1)))
            .collect();
        return Reply::Map(pairs);
    }
    if let Ok(Value::Table(set)) = t.raw_get::<Value>("set") {
        let members = set
            .pairs::<Value, Value>()
            .filter_map(Result::ok)
            .map(|(k, _)| to_reply(&k, depth + 1))
            .collect();
        return Reply::Set(members);
    }
    let mut items = Vec::new();
    for i in 1.. {
        match t.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(to_reply(&v, depth + 1)),
        }
    }
    Reply::Array(items)
}

/// Renders every error in the reply to its text ahead of `push_reply`,
/// which must not allocate on the Rust side.
pub fn render_errors(reply: &mut Reply) {
    match reply {
        Reply::Error(e) if !matches!(e, CmdError::Other(_)) => *e = CmdError::Other(e.to_string()),
        Reply::Array(items) | Reply::Push(items) | Reply::Set(items) => {
            items.iter_mut().for_each(render_errors)
        }
        Reply::Map(pairs) => pairs.iter_mut().for_each(|(k, v)| {
            render_errors(k);
            render_errors(v);
        }),
        _ => {}
    }
}

/// Pushes a command's reply as a script sees it. `resp3` follows
/// `redis.setresp`.
///
/// # Safety
/// Lua may raise (out of memory) from here: the caller's frames must own
/// nothing with a destructor.
pub unsafe fn push_reply(state: *mut ffi::lua_State, reply: &Reply, resp3: bool) {
    // SAFETY: each level makes room for the most it holds at once (a RESP3
    // set or map: two tables, a key and a value; nested replies make their
    // own room) before pushing. Every table is fresh, with no metatable,
    // so setting its fields runs no Lua code; `reply` is only borrowed, and
    // the one `String` made here is dropped before Lua allocates, so a
    // raise skips nothing owned here and the caller promises the rest.
    unsafe {
        ffi::luaL_checkstack(state, 4, c"reply nested too deeply".as_ptr());
        match reply {
            Reply::Status(s) => wrap_str(state, c"ok", s.as_bytes()),
            Reply::Error(CmdError::Other(text)) => push_command_error(state, text.as_bytes()),
            // `render_errors` has made every error `Other`.
            Reply::Error(e) => push_command_error(state, e.code().as_bytes()),
            Reply::Int(n) => ffi::lua_pushnumber(state, *n as f64),
            Reply::Bulk(b) => push_bytes(state, b),
            Reply::Verbatim(b) if !resp3 => push_bytes(state, b),
            Reply::BigNumber(digits) if !resp3 => push_bytes(state, digits),
            Reply::BigNumber(digits) => {
                ffi::lua_createtable(state, 0, 1);
                push_bytes(state, digits);
                ffi::lua_setfield(state, -2, c"big_number".as_ptr());
            }
            // A script sees the reply: attributes and pushes are for clients.
            Reply::Attributed(_, reply) | Reply::AfterPush(_, reply) => {
                push_reply(state, reply, resp3)
            }
            Reply::Nil | Reply::NilArray if resp3 => ffi::lua_pushnil(state),
            Reply::Nil | Reply::NilArray => ffi::lua_pushboolean(state, 0),
            Reply::Array(items) | Reply::Push(items) => push_sequence(state, items, resp3),
            Reply::Set(items) if !resp3 => push_sequence(state, items, resp3),
            Reply::Set(items) => {
                ffi::lua_createtable(state, 0, 1);
                ffi::lua_createtable(state, 0, items.len() as c_int);
                for item in items {
                    push_reply(state, item, resp3);
                    ffi::lua_pushboolean(state, 1);
                    ffi::lua_rawset(state, -3);
                }
                ffi::lua_setfield(state, -2, c"set".as_ptr());
            }
            Reply::Map(pairs) if !resp3 => {
                ffi::lua_createtable(state, (pairs.len() * 2) as c_int, 0);
                for (i, (k, v)) in pairs.iter().enumerate() {
                    push_reply(state, k, resp3);
                    ffi::lua_rawseti(state, -2, (2 * i + 1) as ffi::lua_Integer);
                    push_reply(state, v, resp3);
                    ffi::lua_rawseti(state, -2, (2 * i + 2) as ffi::lua_Integer);
                }
            }
            Reply::Map(pairs) => {
                ffi::lua_createtable(state, 0, 1);
                ffi::lua_createtable(state, 0, pairs.len() as c_int);
                for (k, v) in pairs {
                    push_reply(state, k, resp3);
                    push_reply(state, v, resp3);
                    ffi::lua_rawset(state, -3);
                }
                ffi::lua_setfield(state, -2, c"map".as_ptr());
            }
            Reply::Double(d) | Reply::Coord(d) if resp3 => {
                ffi::lua_createtable(state, 0, 1);
                ffi::lua_pushnumber(state, *d);
                ffi::lua_setfield(state, -2, c"double".as_ptr());
            }
            Reply::Double(d) | Reply::Coord(d) => {
                // Copied out of the `String` so that nothing owned is alive
                // while Lua allocates.
                let mut text = [0u8; 64];
                let len = {
                    let formatted = match reply {
                        Reply::Coord(_) => format_fixed17(*d),
                        _ => format_double(*d),
                    };
                    let len = formatted.len().min(text.len());
                    text[..len].copy_from_slice(&formatted.as_bytes()[..len]);
                    len
                };
                push_bytes(state, &text[..len]);
            }
            Reply::Bool(b) if resp3 => ffi::lua_pushboolean(state, *b as c_int),
            Reply::Bool(b) => ffi::lua_pushnumber(state, *b as i64 as f64),
            Reply::Verbatim(b) => {
                ffi::lua_createtable(state, 0, 1);
                ffi::lua_createtable(state, 0, 2);
                push_bytes(state, b"txt");
                ffi::lua_setfield(state, -2, c"format".as_ptr());
                push_bytes(state, b);
                ffi::lua_setfield(state, -2, c"string".as_ptr());
                ffi::lua_setfield(state, -2, c"verbatim_string".as_ptr());
            }
        }
    }
}

unsafe fn push_sequence(state: *mut ffi::lua_State, items: &[Reply], resp3: bool) {
    // SAFETY: called from `push_reply`, which made room; each item leaves
    // one value, which `lua_rawseti` pops into the fresh table.
    unsafe {
        ffi::lua_createtable(state, items.len() as c_int, 0);
        for (i, item) in items.iter().enumerate() {
            push_reply(state, item, resp3);
            ffi::lua_rawseti(state, -2, (i + 1) as ffi::lua_Integer);
        }
    }
}

unsafe fn push_bytes(state: *mut ffi::lua_State, bytes: &[u8]) {
    // SAFETY: Lua copies the slice's bytes into a string of its own; the
    // callers have made room for it.
    unsafe {
        ffi::lua_pushlstring(state, bytes.as_ptr().cast(), bytes.len());
    }
}

/// `{field = text}`.
unsafe fn wrap_str(state: *mut ffi::lua_State, field: &CStr, text: &[u8]) {
    // SAFETY: two slots, which the callers have (checked by `push_reply`,
    // or an emptied C function's stack); the table is fresh, with no
    // metatable, so `lua_setfield` runs no Lua code.
    unsafe {
        ffi::lua_createtable(state, 0, 1);
        push_bytes(state, text);
        ffi::lua_setfield(state, -2, field.as_ptr());
    }
}

/// Pushes `{err = "CODE message"}`, the shape of every Redis error inside
/// Lua.
///
/// # Safety
/// As for `push_reply`.
pub unsafe fn push_error_table(state: *mut ffi::lua_State, message: &[u8]) {
    // SAFETY: the caller's promise is what `wrap_str` needs.
    unsafe { wrap_str(state, c"err", message) }
}

/// The field Redis sets in a command's error table: the error stats have
/// it already, so a script that returns or raises it is not counted again.
const COUNTED_FIELD: &str = "ignore_error_stats_update";

/// A command's error as a script sees it, marked as counted.
///
/// # Safety
/// As for `push_reply`.
unsafe fn push_command_error(state: *mut ffi::lua_State, message: &[u8]) {
    // SAFETY: `push_reply` made room for the table and the boolean above
    // it, so -2 is the table, fresh, with no metatable to run.
    unsafe {
        push_error_table(state, message);
        ffi::lua_pushboolean(state, 1);
        ffi::lua_setfield(state, -2, c"ignore_error_stats_update".as_ptr());
    }
}

/// The error an error table stands for, `Counted` when a command's.
pub fn error_of_table(t: &Table, message: String) -> CmdError {
    if matches!(t.raw_get::<Value>(COUNTED_FIELD), Ok(Value::Boolean(true))) {
        CmdError::Counted(message)
    } else {
        CmdError::Other(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_truncation_matches_redis() {
        assert_eq!(lua_number_to_i64(3.99), 3);
        assert_eq!(lua_number_to_i64(-0.5), 0);
        assert_eq!(lua_number_to_i64(1e20), i64::MIN);
        assert_eq!(lua_number_to_i64(f64::NAN), i64::MIN);
    }
}
