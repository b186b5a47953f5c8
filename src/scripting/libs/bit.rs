//! `bit`: 32-bit operations with LuaBitOp's semantics (results are signed
//! 32-bit numbers; shift counts use their low five bits).

use mlua::{Lua, Table, Value, Variadic};

/// Numbers wrap into 32 bits after rounding to nearest, as LuaBitOp does.
fn tobit(n: f64) -> i32 {
    let rounded = n.round_ties_even();
    if !rounded.is_finite() {
        return 0;
    }
    rounded.rem_euclid(4_294_967_296.0) as u64 as u32 as i32
}

/// A numeric argument, with Lua's wording when it is not one.
fn num(v: Option<&Value>, i: usize, name: &str) -> mlua::Result<f64> {
    let n = match v {
        Some(Value::Integer(n)) => Some(*n as f64),
        Some(Value::Number(n)) => Some(*n),
        Some(Value::String(s)) => String::from_utf8_lossy(&s.as_bytes()).trim().parse().ok(),
        _ => None,
    };
    n.ok_or_else(|| {
        let got = v.map_or("no value", |v| v.type_name());
        mlua::Error::runtime(format!(
            "bad argument #{i} to '{name}' (number expected, got {got})"
        ))
    })
}

fn fold(args: Variadic<Value>, name: &str, op: fn(i32, i32) -> i32) -> mlua::Result<f64> {
    let mut acc = tobit(num(args.first(), 1, name)?);
    for (i, v) in args.iter().enumerate().skip(1) {
        acc = op(acc, tobit(num(Some(v), i + 1, name)?));
    }
    Ok(acc as f64)
}

pub fn install(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    let bit = lua.create_table()?;
    let unary = |name: &'static str, f: fn(i32) -> i32| {
        move |_: &Lua, a: Variadic<Value>| Ok(f(tobit(num(a.first(), 1, name)?)) as f64)
    };
    bit.set("tobit", lua.create_function(unary("tobit", |x| x))?)?;
    bit.set("bnot", lua.create_function(unary("bnot", |x| !x))?)?;
    bit.set(
        "bswap",
        lua.create_function(unary("bswap", |x| x.swap_bytes()))?,
    )?;
    let folded = |name: &'static str, op: fn(i32, i32) -> i32| {
        move |_: &Lua, a: Variadic<Value>| fold(a, name, op)
    };
    bit.set("band", lua.create_function(folded("band", |x, y| x & y))?)?;
    bit.set("bor", lua.create_function(folded("bor", |x, y| x | y))?)?;
    bit.set("bxor", lua.create_function(folded("bxor", |x, y| x ^ y))?)?;
    let shift = |name: &'static str, f: fn(u32, u32) -> u32| {
        move |_: &Lua, a: Variadic<Value>| {
            let (x, n) = (num(a.first(), 1, name)?, num(a.get(1), 2, name)?);
            Ok(f(tobit(x) as u32, tobit(n) as u32 & 31) as i32 as f64)
        }
    };
    bit.set(
        "lshift",
        lua.create_function(shift("lshift", |x, n| x << n))?,
    )?;
    bit.set(
        "rshift",
        lua.create_function(shift("rshift", |x, n| x >> n))?,
    )?;
    bit.set(
        "arshift",
        lua.create_function(shift("arshift", |x, n| ((x as i32) >> n) as u32))?,
    )?;
    bit.set(
        "rol",
        lua.create_function(shift("rol", |x, n| x.rotate_left(n)))?,
    )?;
    bit.set(
        "ror",
        lua.create_function(shift("ror", |x, n| x.rotate_right(n)))?,
    )?;
    bit.set(
        "tohex",
        lua.create_function(|_, (x, n): (f64, Option<f64>)| {
            let n = n.map_or(8, tobit);
            let (digits, upper) = if n < 0 {
                (-(n as i64), true)
            } else {
                (n as i64, false)
            };
            let digits = digits.clamp(1, 8) as usize;
            let v = tobit(x) as u32 as u64 & ((1u64 << (4 * digits)) - 1);
            Ok(if upper {
                format!("{v:0digits$X}")
            } else {
                format!("{v:0digits$x}")
            })
        })?,
    )?;
    globals.set("bit", bit)
}

#[cfg(test)]
mod tests {
    use super::tobit;

    #[test]
    fn wraps_to_32_bits() {
        assert_eq!(tobit(4294967295.0), -1);
        assert_eq!(tobit(2147483648.0), i32::MIN);
        assert_eq!(tobit(-1.0), -1);
        assert_eq!(tobit(1.5), 2);
        assert_eq!(tobit(2.5), 2);
    }
}
