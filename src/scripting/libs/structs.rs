//! `struct`: binary packing with the format language of the Lua struct
//! library Redis ships (`>`/`<` byte order, `!n` alignment, `bBhHlLT`,
//! `iN`/`IN`, `f`, `d`, `s`, `cN`, `x`).

use mlua::{Lua, LuaString, MultiValue, Table, Value};

const MAX_INT_SIZE: usize = 32;

fn fail(message: impl Into<String>) -> mlua::Error {
    mlua::Error::runtime(message.into())
}

struct Format<'a> {
    fmt: &'a [u8],
    pos: usize,
    little: bool,
    align: usize,
}

enum Item {
    Int { size: usize, signed: bool },
    Float,
    Double,
    Zstring,
    Chars(usize),
    Pad,
}

impl<'a> Format<'a> {
    fn new(fmt: &'a [u8]) -> Self {
        Format {
            fmt,
            pos: 0,
            little: cfg!(target_endian = "little"),
            align: 1,
        }
    }

    /// A count in the format, or `default` where there is none. Counts
    /// past `int` are refused as the C library refuses them.
    fn number(&mut self, default: usize) -> mlua::Result<usize> {
        let start = self.pos;
        let mut n: usize = 0;
        while let Some(d) = self.fmt.get(self.pos).filter(|c| c.is_ascii_digit()) {
            n = n * 10 + (d - b'0') as usize;
            if n > i32::MAX as usize {
                return Err(fail("integral size overflow"));
            }
            self.pos += 1;
        }
        Ok(if self.pos == start { default } else { n })
    }

    /// The next item, after any byte-order and alignment directives.
    fn next(&mut self) -> mlua::Result<Option<Item>> {
        while let Some(&c) = self.fmt.get(self.pos) {
            self.pos += 1;
            let item = match c {
                b' ' => continue,
                b'>' => {
                    self.little = false;
                    continue;
                }
                b'<' => {
                    self.little = true;
                    continue;
                }
                b'!' => {
                    self.align = self.number(8)?;
                    continue;
                }
                b'x' => Item::Pad,
                b'b' | b'B' => Item::Int {
                    size: 1,
                    signed: c == b'b',
                },
                b'h' | b'H' => Item::Int {
                    size: 2,
                    signed: c == b'h',
                },
                b'l' | b'L' | b'T' => Item::Int {
                    size: 8,
                    signed: c == b'l',
                },
                b'i' | b'I' => {
                    let size = self.number(4)?;
                    if size > MAX_INT_SIZE {
                        return Err(fail(format!(
                            "integral size {size} is larger than limit of {MAX_INT_SIZE}"
                        )));
                    }
                    Item::Int {
                        size,
                        signed: c == b'i',
                    }
                }
                b'f' => Item::Float,
                b'd' => Item::Double,
                b's' => Item::Zstring,
                b'c' => Item::Chars(self.number(1)?),
                other => return Err(fail(format!("invalid format option '{}'", other as char))),
            };
            return Ok(Some(item));
        }
        Ok(None)
    }

    fn padding(&self, len: usize, size: usize) -> usize {
        let size = size.min(self.align);
        if size <= 1 {
            return 0;
        }
        (size - (len & (size - 1))) & (size - 1)
    }
}

fn number_arg(args: &mut impl Iterator<Item = Value>, i: usize) -> mlua::Result<f64> {
    match args.next() {
        Some(Value::Integer(n)) => Ok(n as f64),
        Some(Value::Number(n)) => Ok(n),
        Some(Value::String(s)) => String::from_utf8_lossy(&s.as_bytes())
            .trim()
            .parse()
            .map_err(|_| {
                fail(format!(
                    "bad argument #{i} to 'pack' (number expected, got string)"
                ))
            }),
        _ => Err(fail(format!(
            "bad argument #{i} to 'pack' (number expected)"
        ))),
    }
}

fn pack(lua: &Lua, args: MultiValue) -> mlua::Result<LuaString> {
    let mut args = args.into_iter();
    let fmt = match args.next() {
        Some(Value::String(s)) => s.as_bytes().to_vec(),
        _ => return Err(fail("bad argument #1 to 'pack' (string expected)")),
    };
    let mut f = Format::new(&fmt);
    let mut out: Vec<u8> = Vec::new();
    let mut arg = 2;
    while let Some(item) = f.next()? {
        match item {
            Item::Pad => out.push(0),
            Item::Int { size, signed } => {
                out.resize(out.len() + f.padding(out.len(), size), 0);
                let n = number_arg(&mut args, arg)?;
                let bits: u64 = if signed { n as i64 as u64 } else { n as u64 };
                let mut bytes: Vec<u8> = (0..size)
                    .map(|i| {
                        if i < 8 {
                            (bits >> (8 * i)) as u8
                        } else if signed && (bits as i64) < 0 {
                            0xff
                        } else {
                            0
                        }
                    })
                    .collect();
                if !f.little {
                    bytes.reverse();
                }
                out.extend(bytes);
                arg += 1;
            }
            Item::Float | Item::Double => {
                let size = if matches!(item, Item::Float) { 4 } else { 8 };
                out.resize(out.len() + f.padding(out.len(), size), 0);
                let n = number_arg(&mut args, arg)?;
                let mut bytes = if size == 4 {
                    (n as f32).to_le_bytes().to_vec()
                } else {
                    n.to_le_bytes().to_vec()
                };
                if !f.little {
                    bytes.reverse();
                }
                out.extend(bytes);
                arg += 1;
            }
            Item::Zstring | Item::Chars(_) => {
                let s = match args.next() {
                    Some(Value::String(s)) => s.as_bytes().to_vec(),
                    Some(Value::Integer(n)) => n.to_string().into_bytes(),
                    Some(Value::Number(n)) => crate::util::format_g(n, 14).into_bytes(),
                    _ => {
                        return Err(fail(format!(
                            "bad argument #{arg} to 'pack' (string expected)"
                        )));
                    }
                };
                match item {
                    Item::Zstring => {
                        out.extend_from_slice(&s);
                        out.push(0);
                    }
                    Item::Chars(size) => {
                        let size = if size == 0 { s.len() } else { size };
                        if s.len() < size {
                            return Err(fail(format!(
                                "bad argument #{arg} to 'pack' (string too short)"
                            )));
                        }
                        out.extend_from_slice(&s[..size]);
                    }
                    _ => {}
                }
                arg += 1;
            }
        }
    }
    lua.create_string(&out)
}

fn unpack(
    lua: &Lua,
    (fmt, data, start): (LuaString, LuaString, Option<i64>),
) -> mlua::Result<MultiValue> {
    let fmt = fmt.as_bytes().to_vec();
    let data = data.as_bytes().to_vec();
    let mut pos = start.map_or(0, |s| (s.max(1) - 1) as usize);
    let mut f = Format::new(&fmt);
    let mut out = Vec::new();
    let need = |pos: usize, size: usize| {
        if pos + size > data.len() {
            Err(fail("bad argument #2 to 'unpack' (data string too short)"))
        } else {
            Ok(())
        }
    };
    while let Some(item) = f.next()? {
        match item {
            Item::Pad => pos += 1,
            Item::Int { size, signed } => {
                pos += f.padding(pos, size);
                need(pos, size)?;
                let mut bytes = data[pos..pos + size].to_vec();
                if !f.little {
                    bytes.reverse();
                }
                let mut v: u64 = 0;
                for (i, b) in bytes.iter().take(8).enumerate() {
                    v |= (*b as u64) << (8 * i);
                }
                let n = if signed && size < 8 {
                    let shift = 64 - 8 * size as u32;
                    ((v << shift) as i64 >> shift) as f64
                } else if signed {
                    v as i64 as f64
                } else {
                    v as f64
                };
                out.push(Value::Number(n));
                pos += size;
            }
            Item::Float | Item::Double => {
                let size = if matches!(item, Item::Float) { 4 } else { 8 };
                pos += f.padding(pos, size);
                need(pos, size)?;
                let mut bytes = data[pos..pos + size].to_vec();
                if !f.little {
                    bytes.reverse();
                }
                let n = if size == 4 {
                    f32::from_le_bytes(bytes.try_into().expect("4 bytes")) as f64
                } else {
                    f64::from_le_bytes(bytes.try_into().expect("8 bytes"))
                };
                out.push(Value::Number(n));
                pos += size;
            }
            Item::Zstring => {
                let end = data[pos.min(data.len())..]
                    .iter()
                    .position(|&b| b == 0)
                    .ok_or_else(|| fail("unfinished string in data"))?;
                out.push(Value::String(lua.create_string(&data[pos..pos + end])?));
                pos += end + 1;
            }
            Item::Chars(size) => {
                // `c0` takes its length from the value just read, which it
                // consumes.
                let size = if size == 0 {
                    match out.pop() {
                        Some(Value::Number(n)) => n as usize,
                        _ => return Err(fail("format 'c0' needs a previous size")),
                    }
                } else {
                    size
                };
                need(pos, size)?;
                out.push(Value::String(lua.create_string(&data[pos..pos + size])?));
                pos += size;
            }
        }
    }
    out.push(Value::Number((pos + 1) as f64));
    Ok(MultiValue::from_vec(out))
}

fn size(_: &Lua, fmt: LuaString) -> mlua::Result<f64> {
    let fmt = fmt.as_bytes().to_vec();
    let mut f = Format::new(&fmt);
    let mut total = 0usize;
    while let Some(item) = f.next()? {
        let size = match item {
            Item::Pad => 1,
            Item::Int { size, .. } => size,
            Item::Float => 4,
            Item::Double => 8,
            Item::Chars(n) if n > 0 => n,
            _ => return Err(fail("options 'c0' - 's' have undefined sizes")),
        };
        total += f.padding(total, size) + size;
    }
    Ok(total as f64)
}

pub fn install(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    let t = lua.create_table()?;
    t.set("pack", lua.create_function(pack)?)?;
    t.set("unpack", lua.create_function(unpack)?)?;
    t.set("size", lua.create_function(size)?)?;
    globals.set("struct", t)
}
