//! `cjson`: JSON with the output of the Lua cjson module Redis ships
//! (numbers as `%.14g`, `/` escaped, empty tables as objects, sparse
//! arrays refused). Decoding parses with serde_json.
//!
//! The configuration functions (`encode_max_depth`, `encode_number_precision`…)
//! change settings kept in the Lua state; `reset` puts them back before each
//! run, so one script's settings never reach the next (Redis keeps them in its
//! one Lua state until SCRIPT FLUSH).

use mlua::{LightUserData, Lua, MultiValue, Table, Value};

use crate::util::format_g;

/// What `encode_invalid_numbers` chose for NaN and the infinities.
#[derive(Clone, Copy, PartialEq)]
enum InvalidNumbers {
    Refuse,
    /// `nan`, `inf`, `-inf`, as Redis's cjson prints them.
    Allow,
    AsNull,
}

#[derive(Clone, Copy)]
struct Settings {
    encode_max_depth: i64,
    decode_max_depth: i64,
    precision: i64,
    invalid_numbers: InvalidNumbers,
    /// Accepted and reported; the decoder reads standard JSON numbers only.
    decode_invalid_numbers: bool,
    /// Accepted and reported: no buffer outlives a call here.
    keep_buffer: bool,
    /// An excessively sparse array: encoded as an object (`true`) or refused.
    sparse_convert: bool,
    /// An array is sparse when its largest index exceeds its items times
    /// this (0: never)…
    sparse_ratio: i64,
    /// …and this.
    sparse_safe: i64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            precision: 14,
            invalid_numbers: InvalidNumbers::Refuse,
            decode_invalid_numbers: true,
            keep_buffer: true,
            sparse_convert: false,
            sparse_ratio: 2,
            sparse_safe: 10,
        }
    }
}

fn settings(lua: &Lua) -> Settings {
    lua.app_data_ref::<Settings>()
        .map(|s| *s)
        .unwrap_or_default()
}

/// Back to the defaults, before a run.
pub fn reset(lua: &Lua) {
    lua.set_app_data(Settings::default());
}

fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

fn fail(message: impl Into<String>) -> mlua::Error {
    mlua::Error::runtime(message.into())
}

fn encode_number(n: f64, cfg: &Settings, out: &mut String) -> mlua::Result<()> {
    if !n.is_finite() {
        match cfg.invalid_numbers {
            InvalidNumbers::Refuse => {
                return Err(fail("Cannot serialise number: must not be NaN or Inf"));
            }
            InvalidNumbers::AsNull => out.push_str("null"),
            InvalidNumbers::Allow if n.is_nan() => out.push_str("nan"),
            InvalidNumbers::Allow => out.push_str(if n > 0.0 { "inf" } else { "-inf" }),
        }
        return Ok(());
    }
    out.push_str(&format_g(n, cfg.precision as i32));
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
fn array_length(t: &Table, cfg: &Settings) -> mlua::Result<Option<usize>> {
    let Some((max, items)) = super::array_keys(t)? else {
        return Ok(None);
    };
    if cfg.sparse_ratio > 0
        && max > (items as f64) * cfg.sparse_ratio as f64
        && max > cfg.sparse_safe as f64
    {
        if cfg.sparse_convert {
            return Ok(None);
        }
        return Err(fail("Cannot serialise table: excessively sparse array"));
    }
    Ok((items > 0).then_some(max as usize))
}

fn encode_value(v: &Value, cfg: &Settings, depth: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(i) => {
            let mut s = String::new();
            encode_number(*i as f64, cfg, &mut s)?;
            out.extend_from_slice(s.as_bytes());
        }
        Value::Number(n) => {
            let mut s = String::new();
            encode_number(*n, cfg, &mut s)?;
            out.extend_from_slice(s.as_bytes());
        }
        Value::String(s) => encode_string(&s.as_bytes(), out),
        Value::Table(t) => {
            if depth as i64 >= cfg.encode_max_depth {
                return Err(fail(format!(
                    "Cannot serialise, excessive nesting ({})",
                    depth + 1
                )));
            }
            match array_length(t, cfg)? {
                Some(len) => {
                    out.push(b'[');
                    for i in 1..=len {
                        if i > 1 {
                            out.push(b',');
                        }
                        encode_value(&t.raw_get::<Value>(i)?, cfg, depth + 1, out)?;
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
                                encode_value(&k, cfg, depth + 1, &mut n)?;
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
                        encode_value(&v, cfg, depth + 1, out)?;
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

/// Where (1-based) the text first opens more than `max` arrays or objects
/// at once, as Redis's cjson reports it; brackets inside strings do not
/// count.
fn too_deep(text: &[u8], max: usize) -> Option<usize> {
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
                if depth > max {
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

/// `bad argument #n to 'name' (why)`, as Lua's argument checks word it.
fn bad_argument(n: usize, name: &str, why: impl std::fmt::Display) -> mlua::Error {
    fail(format!("bad argument #{n} to '{name}' ({why})"))
}

/// The arguments of a configuration function, at most `most` of them.
fn config_args(name: &str, args: MultiValue, most: usize) -> mlua::Result<Vec<Value>> {
    if args.len() > most {
        return Err(bad_argument(most + 1, name, "found too many arguments"));
    }
    Ok(args.into_iter().collect())
}

/// An integer setting: nil keeps it; a number (or numeric string) in
/// `min..=max` sets it. cjson names argument 1 whichever it is.
fn integer_option(
    name: &str,
    arg: Option<&Value>,
    min: i64,
    max: i64,
    slot: &mut i64,
) -> mlua::Result<()> {
    let n = match arg {
        None | Some(Value::Nil) => return Ok(()),
        Some(Value::Integer(i)) => *i as f64,
        Some(Value::Number(n)) => *n,
        Some(Value::String(s)) => s
            .to_str()
            .ok()
            .and_then(|t| t.trim().parse::<f64>().ok())
            .ok_or_else(|| bad_argument(1, name, "number expected, got string"))?,
        Some(other) => {
            return Err(bad_argument(
                1,
                name,
                format!("number expected, got {}", other.type_name()),
            ));
        }
    };
    let n = n as i64;
    if !(min..=max).contains(&n) {
        return Err(bad_argument(
            1,
            name,
            format!("expected integer between {min} and {max}"),
        ));
    }
    *slot = n;
    Ok(())
}

/// An option named by a boolean or one of `names` (`true` is the second):
/// its index, or `None` for nil.
fn enum_option(name: &str, arg: Option<&Value>, names: &[&str]) -> mlua::Result<Option<usize>> {
    // Lua reads a number as its text here, as `tostring` would.
    let text = match arg {
        None | Some(Value::Nil) => return Ok(None),
        Some(Value::Boolean(b)) => return Ok(Some(usize::from(*b))),
        Some(Value::String(s)) => s.to_string_lossy(),
        Some(Value::Integer(i)) => i.to_string(),
        Some(Value::Number(n)) => format_g(*n, 14),
        Some(other) => {
            return Err(bad_argument(
                1,
                name,
                format!("string expected, got {}", other.type_name()),
            ));
        }
    };
    names
        .iter()
        .position(|n| *n == text)
        .map(Some)
        .ok_or_else(|| bad_argument(1, name, format!("invalid option '{text}'")))
}

const OFF_ON: &[&str] = &["off", "on"];

/// Registers a configuration function: `edit` changes the settings from
/// the arguments (at most `most` of them) and answers with what they are now.
fn config_function<R, F>(
    lua: &Lua,
    cjson: &Table,
    name: &'static str,
    most: usize,
    edit: F,
) -> mlua::Result<()>
where
    R: mlua::IntoLuaMulti,
    F: Fn(&Lua, &mut Settings, &[Value]) -> mlua::Result<R> + Send + 'static,
{
    cjson.set(
        name,
        lua.create_function(move |lua, args: MultiValue| {
            let args = config_args(name, args, most)?;
            let mut cfg = settings(lua);
            let answer = edit(lua, &mut cfg, &args)?;
            lua.set_app_data(cfg);
            Ok(answer)
        })?,
    )
}

/// A setting that is on or off: a boolean, or "on"/"off".
fn switch_function(
    lua: &Lua,
    cjson: &Table,
    name: &'static str,
    field: fn(&mut Settings) -> &mut bool,
) -> mlua::Result<()> {
    config_function(lua, cjson, name, 1, move |_, cfg, args| {
        if let Some(i) = enum_option(name, args.first(), OFF_ON)? {
            *field(cfg) = i == 1;
        }
        Ok(*field(cfg))
    })
}

/// A setting that is an integer in `1..=max`.
fn integer_function(
    lua: &Lua,
    cjson: &Table,
    name: &'static str,
    max: i64,
    field: fn(&mut Settings) -> &mut i64,
) -> mlua::Result<()> {
    config_function(lua, cjson, name, 1, move |_, cfg, args| {
        integer_option(name, args.first(), 1, max, field(cfg))?;
        Ok(*field(cfg))
    })
}

fn install_config(lua: &Lua, cjson: &Table) -> mlua::Result<()> {
    const MAX: i64 = i32::MAX as i64;
    integer_function(lua, cjson, "encode_max_depth", MAX, |c| {
        &mut c.encode_max_depth
    })?;
    integer_function(lua, cjson, "decode_max_depth", MAX, |c| {
        &mut c.decode_max_depth
    })?;
    integer_function(lua, cjson, "encode_number_precision", 14, |c| {
        &mut c.precision
    })?;
    switch_function(lua, cjson, "encode_keep_buffer", |c| &mut c.keep_buffer)?;
    switch_function(lua, cjson, "decode_invalid_numbers", |c| {
        &mut c.decode_invalid_numbers
    })?;
    config_function(lua, cjson, "encode_invalid_numbers", 1, |lua, cfg, args| {
        let modes = [
            InvalidNumbers::Refuse,
            InvalidNumbers::Allow,
            InvalidNumbers::AsNull,
        ];
        let names = ["off", "on", "null"];
        if let Some(i) = enum_option("encode_invalid_numbers", args.first(), &names)? {
            cfg.invalid_numbers = modes[i];
        }
        Ok(match cfg.invalid_numbers {
            InvalidNumbers::AsNull => Value::String(lua.create_string("null")?),
            mode => Value::Boolean(mode == InvalidNumbers::Allow),
        })
    })?;
    config_function(lua, cjson, "encode_sparse_array", 3, |_, cfg, args| {
        if let Some(i) = enum_option("encode_sparse_array", args.first(), OFF_ON)? {
            cfg.sparse_convert = i == 1;
        }
        let name = "encode_sparse_array";
        integer_option(name, args.get(1), 0, MAX, &mut cfg.sparse_ratio)?;
        integer_option(name, args.get(2), 0, MAX, &mut cfg.sparse_safe)?;
        Ok((cfg.sparse_convert, cfg.sparse_ratio, cfg.sparse_safe))
    })
}

pub fn install(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    reset(lua);
    let cjson = lua.create_table()?;
    cjson.set(
        "encode",
        lua.create_function(|lua, v: Value| {
            let mut out = Vec::new();
            encode_value(&v, &settings(lua), 0, &mut out)?;
            lua.create_string(&out)
        })?,
    )?;
    install_config(lua, &cjson)?;
    cjson.set(
        "decode",
        lua.create_function(|lua, s: mlua::LuaString| {
            let bytes = s.as_bytes();
            let max = settings(lua).decode_max_depth as usize;
            if let Some(at) = too_deep(&bytes, max) {
                return Err(fail(format!(
                    "Found too many nested data structures ({}) at character {at}",
                    max + 1
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
