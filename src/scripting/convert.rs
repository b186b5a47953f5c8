//! Conversions between replies and Lua values, with Redis 7.0's rules.

use std::ffi::CStr;
use std::os::raw::c_int;

use bytes::Bytes;
use mlua::{Table, Value};

use super::stack::Stack;

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
/// `redis.setresp`. Lua may raise (out of memory) from here, so the
/// caller's frames own nothing with a destructor (the stack's rule 1).
///
/// Each level makes room for the most it holds at once (a RESP3 set or
/// map: two tables, a key and a value; nested replies make their own room)
/// before pushing. Every table is fresh, with no metatable, so setting its
/// fields runs no Lua code; `reply` is only borrowed, and the one `String`
/// made here is dropped before Lua allocates.
pub fn push_reply(stack: Stack, reply: &Reply, resp3: bool) {
    stack.ensure(4, c"reply nested too deeply");
    match reply {
        Reply::Status(s) => wrap_str(stack, c"ok", s.as_bytes()),
        Reply::Error(CmdError::Other(text)) => push_command_error(stack, text.as_bytes()),
        // `render_errors` has made every error `Other`.
        Reply::Error(e) => push_command_error(stack, e.code().as_bytes()),
        Reply::Int(n) => stack.push_number(*n as f64),
        Reply::Bulk(b) => stack.push_bytes(b),
        Reply::Verbatim(b) if !resp3 => stack.push_bytes(b),
        Reply::BigNumber(digits) if !resp3 => stack.push_bytes(digits),
        Reply::BigNumber(digits) => wrap_str(stack, c"big_number", digits),
        // A script sees the reply: attributes and pushes are for clients.
        Reply::Attributed(_, reply) | Reply::AfterPush(_, reply) => push_reply(stack, reply, resp3),
        Reply::Nil | Reply::NilArray if resp3 => stack.push_nil(),
        Reply::Nil | Reply::NilArray => stack.push_bool(false),
        Reply::Array(items) | Reply::Push(items) => push_sequence(stack, items, resp3),
        Reply::Set(items) if !resp3 => push_sequence(stack, items, resp3),
        Reply::Set(items) => {
            stack.new_table(0, 1);
            stack.new_table(0, items.len() as c_int);
            for item in items {
                push_reply(stack, item, resp3);
                stack.push_bool(true);
                stack.raw_set(-3);
            }
            stack.set_field(-2, c"set");
        }
        Reply::Map(pairs) if !resp3 => {
            stack.new_table((pairs.len() * 2) as c_int, 0);
            for (i, (k, v)) in pairs.iter().enumerate() {
                push_reply(stack, k, resp3);
                stack.raw_set_at(-2, (2 * i + 1) as c_int);
                push_reply(stack, v, resp3);
                stack.raw_set_at(-2, (2 * i + 2) as c_int);
            }
        }
        Reply::Map(pairs) => {
            stack.new_table(0, 1);
            stack.new_table(0, pairs.len() as c_int);
            for (k, v) in pairs {
                push_reply(stack, k, resp3);
                push_reply(stack, v, resp3);
                stack.raw_set(-3);
            }
            stack.set_field(-2, c"map");
        }
        Reply::Double(d) | Reply::Coord(d) if resp3 => {
            stack.new_table(0, 1);
            stack.push_number(*d);
            stack.set_field(-2, c"double");
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
            stack.push_bytes(&text[..len]);
        }
        Reply::Bool(b) if resp3 => stack.push_bool(*b),
        Reply::Bool(b) => stack.push_number(*b as i64 as f64),
        Reply::Verbatim(b) => {
            stack.new_table(0, 1);
            stack.new_table(0, 2);
            stack.push_bytes(b"txt");
            stack.set_field(-2, c"format");
            stack.push_bytes(b);
            stack.set_field(-2, c"string");
            stack.set_field(-2, c"verbatim_string");
        }
    }
}

/// A fresh table of the items, each popped into it as pushed.
fn push_sequence(stack: Stack, items: &[Reply], resp3: bool) {
    stack.new_table(items.len() as c_int, 0);
    for (i, item) in items.iter().enumerate() {
        push_reply(stack, item, resp3);
        stack.raw_set_at(-2, (i + 1) as c_int);
    }
}

/// `{field = text}`: two slots, which the callers have (made by
/// `push_reply`, or an emptied C function's stack).
fn wrap_str(stack: Stack, field: &CStr, text: &[u8]) {
    stack.new_table(0, 1);
    stack.push_bytes(text);
    stack.set_field(-2, field);
}

/// Pushes `{err = "CODE message"}`, the shape of every Redis error inside
/// Lua. As for `push_reply`, the caller's frames own nothing.
pub fn push_error_table(stack: Stack, message: &[u8]) {
    wrap_str(stack, c"err", message)
}

/// The field Redis sets in a command's error table: the error stats have
/// it already, so a script that returns or raises it is not counted again.
const COUNTED_FIELD: &CStr = c"ignore_error_stats_update";

/// A command's error as a script sees it, marked as counted. `push_reply`
/// made room for the table and the boolean above it.
fn push_command_error(stack: Stack, message: &[u8]) {
    push_error_table(stack, message);
    stack.push_bool(true);
    stack.set_field(-2, COUNTED_FIELD);
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
