//! `cmsgpack`: MessagePack with the choices of the lua-cmsgpack module
//! Redis ships: integral numbers as the smallest integer, other numbers as
//! float32 when exact else float64, tables as arrays when their keys are
//! 1..n, nesting capped at 16 (deeper values encode as nil).

use mlua::{Lua, LuaString, MultiValue, Table, Value};

const MAX_NESTING: usize = 16;

/// Lua 5.1's `LUAI_MAXCSTACK`.
const LUA_C_STACK: usize = 8000;

fn fail(message: impl std::fmt::Display) -> mlua::Error {
    mlua::Error::runtime(message.to_string())
}

fn encode_number(out: &mut Vec<u8>, n: f64) -> mlua::Result<()> {
    let as_int = n as i64;
    let write = if n.is_finite() && as_int as f64 == n {
        if as_int >= 0 {
            rmp::encode::write_uint(out, as_int as u64).map(|_| ())
        } else {
            rmp::encode::write_sint(out, as_int).map(|_| ())
        }
    } else if (n as f32) as f64 == n || n.is_nan() {
        rmp::encode::write_f32(out, n as f32)
    } else {
        rmp::encode::write_f64(out, n)
    };
    write.map_err(fail)
}

/// `Some(n)` when the keys are exactly 1..n.
fn array_len(t: &Table) -> mlua::Result<Option<usize>> {
    Ok(super::array_keys(t)?.and_then(|(max, count)| (max as usize == count).then_some(count)))
}

fn encode(out: &mut Vec<u8>, v: &Value, depth: usize) -> mlua::Result<()> {
    match v {
        Value::Boolean(b) => rmp::encode::write_bool(out, *b).map_err(fail),
        Value::Integer(i) => encode_number(out, *i as f64),
        Value::Number(n) => encode_number(out, *n),
        Value::String(s) => {
            let bytes = s.as_bytes();
            rmp::encode::write_str_len(out, bytes.len() as u32).map_err(fail)?;
            out.extend_from_slice(&bytes);
            Ok(())
        }
        Value::Table(t) if depth < MAX_NESTING => match array_len(t)? {
            Some(len) => {
                rmp::encode::write_array_len(out, len as u32).map_err(fail)?;
                for i in 1..=len {
                    encode(out, &t.raw_get::<Value>(i)?, depth + 1)?;
                }
                Ok(())
            }
            None => {
                // Counted, then encoded pair by pair: holding every key and
                // value at once would take a Lua reference each, and a large
                // map runs out of them.
                let mut len = 0u32;
                for pair in t.clone().pairs::<Value, Value>() {
                    pair?;
                    len += 1;
                }
                rmp::encode::write_map_len(out, len).map_err(fail)?;
                for pair in t.clone().pairs::<Value, Value>() {
                    let (k, v) = pair?;
                    encode(out, &k, depth + 1)?;
                    encode(out, &v, depth + 1)?;
                }
                Ok(())
            }
        },
        _ => rmp::encode::write_nil(out).map_err(fail),
    }
}

/// Nesting decoded, in rmpv's steps (two per level, a few for the innermost
/// value): 1000 levels. Redis goes on until its Lua stack runs out, at
/// 4000 levels, but decoding that deep here would exhaust the native
/// stack of the thread running the script; deeper input gets Redis's
/// error for running out.
const MAX_DECODE_DEPTH: usize = 2004;

fn to_lua(lua: &Lua, v: rmpv::Value) -> mlua::Result<Value> {
    use rmpv::Value as M;
    Ok(match v {
        M::Nil => Value::Nil,
        M::Boolean(b) => Value::Boolean(b),
        M::Integer(i) => Value::Number(
            i.as_i64()
                .map_or_else(|| i.as_u64().unwrap_or(0) as f64, |n| n as f64),
        ),
        M::F32(f) => Value::Number(f as f64),
        M::F64(f) => Value::Number(f),
        M::String(s) => Value::String(lua.create_string(s.as_bytes())?),
        M::Binary(b) => Value::String(lua.create_string(&b)?),
        M::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.into_iter().enumerate() {
                t.raw_set(i + 1, to_lua(lua, item)?)?;
            }
            Value::Table(t)
        }
        M::Map(pairs) => {
            let t = lua.create_table()?;
            for (k, v) in pairs {
                t.raw_set(to_lua(lua, k)?, to_lua(lua, v)?)?;
            }
            Value::Table(t)
        }
        M::Ext(_, data) => Value::String(lua.create_string(&data)?),
    })
}

/// Decodes up to `limit` values (0: all) starting at byte `offset`;
/// returns them after the offset where decoding stopped.
fn decode(
    lua: &Lua,
    data: &[u8],
    offset: usize,
    limit: usize,
) -> mlua::Result<(usize, Vec<Value>)> {
    let mut cursor = std::io::Cursor::new(data);
    cursor.set_position(offset as u64);
    let mut values = Vec::new();
    while (cursor.position() as usize) < data.len() && (limit == 0 || values.len() < limit) {
        let v = rmpv::decode::read_value_with_max_depth(&mut cursor, MAX_DECODE_DEPTH).map_err(
            |e| match e {
                rmpv::decode::Error::DepthLimitExceeded => {
                    fail("stack overflow (in function mp_decode_to_lua_array)")
                }
                _ => fail("Missing bytes in input."),
            },
        )?;
        values.push(to_lua(lua, v)?);
    }
    Ok((cursor.position() as usize, values))
}

pub fn install(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    let t = lua.create_table()?;
    t.set(
        "pack",
        lua.create_function(|lua, args: MultiValue| {
            if args.is_empty() {
                return Err(fail("MessagePack pack needs input."));
            }
            // Redis's module asks Lua's C stack (8000 slots, the arguments
            // already on it) for room for as many again.
            if args.len() * 2 > LUA_C_STACK {
                return Err(fail(
                    "bad argument #0 to 'pack' (Too many arguments for MessagePack pack.)",
                ));
            }
            let mut out = Vec::new();
            for v in args.iter() {
                encode(&mut out, v, 0)?;
            }
            lua.create_string(&out)
        })?,
    )?;
    t.set(
        "unpack",
        lua.create_function(|lua, s: LuaString| {
            let (_, values) = decode(lua, &s.as_bytes(), 0, 0)?;
            Ok(MultiValue::from_vec(values))
        })?,
    )?;
    let limited = |single: bool| {
        move |lua: &Lua, (s, limit, offset): (LuaString, Option<i64>, Option<i64>)| {
            let limit = if single {
                1
            } else {
                limit.unwrap_or(0).max(0) as usize
            };
            let offset = offset.unwrap_or(0).max(0) as usize;
            let data = s.as_bytes();
            let (end, values) = decode(lua, &data, offset, limit)?;
            let next = if end >= data.len() { -1.0 } else { end as f64 };
            let mut out = vec![Value::Number(next)];
            out.extend(values);
            Ok(MultiValue::from_vec(out))
        }
    };
    t.set("unpack_limit", lua.create_function(limited(false))?)?;
    t.set(
        "unpack_one",
        lua.create_function(move |lua, (s, offset): (LuaString, Option<i64>)| {
            limited(true)(lua, (s, None, offset))
        })?,
    )?;
    globals.set("cmsgpack", t)
}
