//! `cjson`: JSON with the output of the Lua cjson module Redis ships
//! (numbers as `%.14g`, `/` escaped, empty tables as objects, sparse
//! arrays refused). Decoding parses with serde_json.

use mlua::{LightUserData, Lua, Table, Value};

use crate::util::format_g;

const MAX_DEPTH: usize = 1000;

fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

fn fail(message: impl Into<String>) -> mlua::Error {
    mlua::Error::runtime(message.into())
}

fn encode_number(n: f64, out: &mut String) -> mlua::Result<()> {
    if !n.is_finite() {
        return Err(fail("Cannot serialise number: must not be NaN or Inf"));
    }
    out.push_str(&format_g(n, 14));
    Ok(())
}

fn encode_string(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            c if c < 0x20 || c == 0x7f => out.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
            c => out.push(c),
        }
    }
    out.push(b'"');
}

/// `Some(n)` if the table is an array of length n (positive integer keys,
/// not too sparse), `None` if it is an object.
fn array_length(t: &Table) -> mlua::Result<Option<usize>> {
    let Some((max, items)) = super::array_keys(t)? else {
        return Ok(None);
    };
    if max > (items * 2) as f64 && max > 10.0 {
        return Err(fail("Cannot serialise table: excessively sparse array"));
    }
    Ok((items > 0).then_some(max as usize))
}

fn encode_value(v: &Value, depth: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(i) => {
            let mut s = String::new();
            encode_number(*i as f64, &mut s)?;
            out.extend_from_slice(s.as_bytes());
        }
        Value::Number(n) => {
            let mut s = String::new();
            encode_number(*n, &mut s)?;
            out.extend_from_slice(s.as_bytes());
        }
        Value::String(s) => encode_string(&s.as_bytes(), out),
        Value::Table(t) => {
            if depth >= MAX_DEPTH {
                return Err(fail(format!(
                    "Cannot serialise, excessive nesting ({})",
                    depth + 1
                )));
            }
            match array_length(t)? {
                Some(len) => {
                    out.push(b'[');
                    for i in 1..=len {
                        if i > 1 {
                            out.push(b',');
                        }
                        encode_value(&t.raw_get::<Value>(i)?, depth + 1, out)?;
                    }
                    out.push(b']');
                }
                None => {
                    out.push(b'{');
                    let mut first = true;
                    for pair in t.clone().pairs::<Value, Value>() {
                        let (k, v) = pair?;
                        if !first {
                            out.push(b',');
                        }
                        first = false;
                        match &k {
                            Value::String(s) => encode_string(&s.as_bytes(), out),
                            Value::Integer(_) | Value::Number(_) => {
                                let mut n = Vec::new();
                                encode_value(&k, depth + 1, &mut n)?;
                                encode_string(&n, out);
                            }
                            other => {
                                return Err(fail(format!(
                                    "Cannot serialise {}: table key must be a number or string",
                                    other.type_name()
                                )));
                            }
                        }
                        out.push(b':');
                        encode_value(&v, depth + 1, out)?;
                    }
                    out.push(b'}');
                }
            }
        }
        other => {
            return Err(fail(format!(
                "Cannot serialise {}: type not supported",
                other.type_name()
            )));
        }
    }
    Ok(())
}

/// Where (1-based) the text first opens more than `MAX_DEPTH` arrays or
/// objects at once, as Redis's cjson reports it; brackets inside strings
/// do not count.
fn too_deep(text: &[u8]) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &c) in text.iter().enumerate() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(i + 1);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

fn decode_value(lua: &Lua, v: serde_json::Value) -> mlua::Result<Value> {
    Ok(match v {
        serde_json::Value::Null => null(),
        serde_json::Value::Bool(b) => Value::Boolean(b),
        serde_json::Value::Number(n) => Value::Number(n.as_f64().unwrap_or(0.0)),
        serde_json::Value::String(s) => Value::String(lua.create_string(s)?),
        serde_json::Value::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.into_iter().enumerate() {
                t.raw_set(i + 1, decode_value(lua, item)?)?;
            }
            Value::Table(t)
        }
        serde_json::Value::Object(map) => {
            let t = lua.create_table_with_capacity(0, map.len())?;
            for (k, v) in map {
                t.raw_set(k, decode_value(lua, v)?)?;
            }
            Value::Table(t)
        }
    })
}

pub fn install(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    let cjson = lua.create_table()?;
    cjson.set(
        "encode",
        lua.create_function(|lua, v: Value| {
            let mut out = Vec::new();
            encode_value(&v, 0, &mut out)?;
            lua.create_string(&out)
        })?,
    )?;
    cjson.set(
        "decode",
        lua.create_function(|lua, s: mlua::LuaString| {
            let bytes = s.as_bytes();
            if let Some(at) = too_deep(&bytes) {
                return Err(fail(format!(
                    "Found too many nested data structures ({}) at character {at}",
                    MAX_DEPTH + 1
                )));
            }
            // The scan above bounds the parser's recursion instead of
            // serde_json's own limit (128), which is lower than Redis's.
            let mut parser = serde_json::Deserializer::from_slice(&bytes);
            parser.disable_recursion_limit();
            let parsed = serde::Deserialize::deserialize(&mut parser)
                .and_then(|v| parser.end().map(|()| v))
                .map_err(|e| {
                    fail(format!(
                        "Expected value but found invalid token at character {}",
                        e.column()
                    ))
                })?;
            decode_value(lua, parsed)
        })?,
    )?;
    cjson.set("null", null())?;
    cjson.set("_NAME", "cjson")?;
    cjson.set("_VERSION", "2.1.0")?;
    globals.set("cjson", cjson)
}
