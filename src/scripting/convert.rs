//! Conversions between replies and Lua values, with Redis 7.0's rules.

use bytes::Bytes;
use mlua::{Lua, Table, Value};

use crate::error::CmdError;
use crate::protocol::Reply;
use crate::util::format_double;

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
        return Reply::Error(CmdError::Other(text(&e)));
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

/// A command's reply as a script sees it. `resp3` follows `redis.setresp`.
pub fn reply_to_lua(lua: &Lua, reply: Reply, resp3: bool) -> mlua::Result<Value> {
    Ok(match reply {
        Reply::Status(s) => {
            let t = lua.create_table()?;
            t.raw_set("ok", s.as_ref())?;
            Value::Table(t)
        }
        Reply::Error(e) => Value::Table(error_table(lua, &e.to_string())?),
        Reply::Int(n) => Value::Number(n as f64),
        Reply::Bulk(b) | Reply::Verbatim(b) if !resp3 => Value::String(lua.create_string(&b)?),
        Reply::Bulk(b) => Value::String(lua.create_string(&b)?),
        Reply::Nil | Reply::NilArray if resp3 => Value::Nil,
        Reply::Nil | Reply::NilArray => Value::Boolean(false),
        Reply::Array(items) | Reply::Push(items) => sequence(lua, items, resp3)?,
        Reply::Set(items) if !resp3 => sequence(lua, items, resp3)?,
        Reply::Set(items) => {
            let set = lua.create_table()?;
            for item in items {
                set.raw_set(reply_to_lua(lua, item, resp3)?, true)?;
            }
            wrap(lua, "set", Value::Table(set))?
        }
        Reply::Map(pairs) if !resp3 => sequence(
            lua,
            pairs.into_iter().flat_map(|(k, v)| [k, v]).collect(),
            resp3,
        )?,
        Reply::Map(pairs) => {
            let map = lua.create_table()?;
            for (k, v) in pairs {
                map.raw_set(reply_to_lua(lua, k, resp3)?, reply_to_lua(lua, v, resp3)?)?;
            }
            wrap(lua, "map", Value::Table(map))?
        }
        Reply::Double(d) if resp3 => wrap(lua, "double", Value::Number(d))?,
        Reply::Double(d) => Value::String(lua.create_string(format_double(d))?),
        Reply::Bool(b) if resp3 => Value::Boolean(b),
        Reply::Bool(b) => Value::Number(b as i64 as f64),
        Reply::Verbatim(b) => {
            let v = lua.create_table()?;
            v.raw_set("format", "txt")?;
            v.raw_set("string", lua.create_string(&b)?)?;
            wrap(lua, "verbatim_string", Value::Table(v))?
        }
    })
}

fn sequence(lua: &Lua, items: Vec<Reply>, resp3: bool) -> mlua::Result<Value> {
    let t = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, item) in items.into_iter().enumerate() {
        t.raw_set(i + 1, reply_to_lua(lua, item, resp3)?)?;
    }
    Ok(Value::Table(t))
}

fn wrap(lua: &Lua, field: &str, value: Value) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.raw_set(field, value)?;
    Ok(Value::Table(t))
}

/// `{err = "CODE message"}`, the shape of every Redis error inside Lua.
pub fn error_table(lua: &Lua, message: &str) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("err", message)?;
    Ok(t)
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
