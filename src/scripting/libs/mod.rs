//! The libraries Redis loads into its Lua state besides the standard ones.

pub mod bit;
pub mod cjson;
pub mod cmsgpack;
mod pattern;
pub mod strings;
pub mod structs;
pub mod tables;

use mlua::{Table, Value};

/// The largest key and the number of keys when every key of `t` is a
/// positive integer (the table may be an array); `None` otherwise.
pub fn array_keys(t: &Table) -> mlua::Result<Option<(f64, usize)>> {
    let (mut max, mut count) = (0f64, 0usize);
    for pair in t.clone().pairs::<Value, Value>() {
        let k = match pair?.0 {
            Value::Integer(i) => i as f64,
            Value::Number(n) => n,
            _ => return Ok(None),
        };
        if k < 1.0 || k.fract() != 0.0 {
            return Ok(None);
        }
        max = max.max(k);
        count += 1;
    }
    Ok(Some((max, count)))
}
