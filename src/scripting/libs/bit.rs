//! `bit`: 32-bit operations with LuaBitOp's semantics (results are signed
//! 32-bit numbers; shift counts use their low five bits).

use mlua::{Lua, Table, Variadic};

/// Numbers wrap into 32 bits after rounding to nearest, as LuaBitOp does.
fn tobit(n: f64) -> i32 {
    let rounded = n.round_ties_even();
    if !rounded.is_finite() {
        return 0;
    }
    rounded.rem_euclid(4_294_967_296.0) as u64 as u32 as i32
}

fn fold(args: Variadic<f64>, op: fn(i32, i32) -> i32) -> mlua::Result<f64> {
    let mut it = args.into_iter();
    let first = it
        .next()
        .ok_or_else(|| mlua::Error::runtime("bad argument #1 (number expected, got no value)"))?;
    Ok(it.fold(tobit(first), |acc, x| op(acc, tobit(x))) as f64)
}

pub fn install(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    let bit = lua.create_table()?;
    bit.set(
        "tobit",
        lua.create_function(|_, x: f64| Ok(tobit(x) as f64))?,
    )?;
    bit.set(
        "bnot",
        lua.create_function(|_, x: f64| Ok(!tobit(x) as f64))?,
    )?;
    bit.set(
        "band",
        lua.create_function(|_, a: Variadic<f64>| fold(a, |x, y| x & y))?,
    )?;
    bit.set(
        "bor",
        lua.create_function(|_, a: Variadic<f64>| fold(a, |x, y| x | y))?,
    )?;
    bit.set(
        "bxor",
        lua.create_function(|_, a: Variadic<f64>| fold(a, |x, y| x ^ y))?,
    )?;
    let shift = |f: fn(u32, u32) -> u32| {
        move |_: &Lua, (x, n): (f64, f64)| Ok(f(tobit(x) as u32, tobit(n) as u32 & 31) as i32 as f64)
    };
    bit.set("lshift", lua.create_function(shift(|x, n| x << n))?)?;
    bit.set("rshift", lua.create_function(shift(|x, n| x >> n))?)?;
    bit.set(
        "arshift",
        lua.create_function(shift(|x, n| ((x as i32) >> n) as u32))?,
    )?;
    bit.set("rol", lua.create_function(shift(|x, n| x.rotate_left(n)))?)?;
    bit.set("ror", lua.create_function(shift(|x, n| x.rotate_right(n)))?)?;
    bit.set(
        "bswap",
        lua.create_function(|_, x: f64| Ok((tobit(x) as u32).swap_bytes() as i32 as f64))?,
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
