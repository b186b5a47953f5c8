//! Bitmap commands on string values: SETBIT, GETBIT, BITCOUNT, BITPOS,
//! BITOP, BITFIELD, BITFIELD_RO.

use bytes::Bytes;

use super::Ctx;
use super::presets::{OW_UPDATE, READ_FAST, RO_ACCESS, RW_ACCESS_UPDATE, key1};
use super::spec::acl::BITMAP;
use super::spec::flag::{DENYOOM, READONLY, WRITE};
use super::spec::{CommandSpec, Group, KeySpec};
use super::values::edit_string;
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{Db, StrForm, Ttl, Value};
use crate::protocol::Reply;
use crate::protocol::parse::MAX_BULK_LEN;
use crate::pubsub::Event;
use crate::util::bits::{self, Overflow};
use crate::util::parse_i64;

fn offset_error() -> CmdError {
    CmdError::other("ERR bit offset is not an integer or out of range")
}

/// A bit offset: a non-negative integer below 2^32 (proto-max-bulk-len's
/// bytes). BITFIELD's `#n` form counts in fields of `field_bits`.
fn bit_offset(raw: &[u8], field_bits: Option<u32>) -> CmdResult<u64> {
    let (digits, scale) = match (raw.split_first(), field_bits) {
        (Some((b'#', rest)), Some(bits)) => (rest, bits as i64),
        _ => (raw, 1),
    };
    let n = parse_i64(digits)
        .ok_or_else(offset_error)?
        .wrapping_mul(scale);
    if n < 0 || (n >> 3) >= MAX_BULK_LEN {
        return Err(offset_error());
    }
    Ok(n as u64)
}

/// Runs `edit` on the string at `key` grown to hold bit `max_bit`; also
/// says whether the key was created or grown (a change whatever `edit` does).
fn edit_bits<T>(
    db: &mut Db,
    key: &[u8],
    max_bit: u64,
    edit: impl FnOnce(&mut [u8]) -> T,
) -> CmdResult<(T, bool)> {
    let needed = (max_bit / 8 + 1) as usize;
    let before = db.typed_for_write::<Bytes>(key)?.map(|s| s.len());
    let out = edit_string(db, key, needed, |buf| edit(buf))?;
    Ok((out, before.is_none_or(|len| len < needed)))
}

pub fn setbit(ctx: &mut Ctx) -> CmdResult<Reply> {
    let offset = bit_offset(ctx.arg(2), None)?;
    let on = match &ctx.arg(3)[..] {
        b"0" => false,
        b"1" => true,
        _ => {
            return Err(CmdError::other("ERR bit is not an integer or out of range"));
        }
    };
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let (was, grown) = edit_bits(&mut db, &key, offset, |data| {
        let was = bits::get_bit(data, offset);
        bits::set_bit(data, offset, on);
        was
    })?;
    if grown || was != on {
        db.modified(&key, Event::Setbit)?;
    }
    Ok(Reply::Int(was as i64))
}

pub fn getbit(ctx: &mut Ctx) -> CmdResult<Reply> {
    let offset = bit_offset(ctx.arg(2), None)?;
    let key = ctx.arg(1).clone();
    let data = ctx.db().typed::<Bytes>(&key)?.cloned().unwrap_or_default();
    Ok(Reply::Int(bits::get_bit(&data, offset) as i64))
}

/// BITCOUNT/BITPOS's unit: true for BIT, false for BYTE.
fn in_bits(unit: Option<&Bytes>) -> CmdResult<bool> {
    match unit.map(|u| u.to_ascii_uppercase()).as_deref() {
        None | Some(b"BYTE") => Ok(false),
        Some(b"BIT") => Ok(true),
        Some(_) => Err(CmdError::Syntax),
    }
}

/// A BITCOUNT/BITPOS range in bits, inclusive, negative ends counted from
/// the end and clamped to the string; `None` when empty.
fn bit_range(len: usize, start: i64, end: i64, in_bits: bool) -> Option<(u64, u64)> {
    let total = if in_bits { len as i64 * 8 } else { len as i64 };
    let resolve = |i: i64| if i < 0 { (total + i).max(0) } else { i };
    let (start, end) = (resolve(start), resolve(end).min(total - 1));
    if start > end {
        return None;
    }
    Some(if in_bits {
        (start as u64, end as u64)
    } else {
        (start as u64 * 8, end as u64 * 8 + 7)
    })
}

fn int_arg(raw: &[u8]) -> CmdResult<i64> {
    parse_i64(raw).ok_or(CmdError::NotInteger)
}

/// BITCOUNT: a missing key counts 0 before its arguments are read.
pub fn bitcount(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let Some(data) = ctx.db().typed::<Bytes>(&key)?.cloned() else {
        return Ok(Reply::Int(0));
    };
    let range = match ctx.args.len() {
        2 => (!data.is_empty()).then(|| (0, data.len() as u64 * 8 - 1)),
        4 | 5 => {
            let (start, end) = (int_arg(ctx.arg(2))?, int_arg(ctx.arg(3))?);
            // Clamping would turn such a range into the first byte; Redis
            // answers it before reading the unit.
            if start < 0 && end < 0 && start > end {
                None
            } else {
                bit_range(data.len(), start, end, in_bits(ctx.args.get(4))?)
            }
        }
        _ => return Err(CmdError::Syntax),
    };
    Ok(Reply::Int(range.map_or(0, |(first, last)| {
        bits::count_ones(&data, first, last) as i64
    })))
}

/// BITPOS: the first bit set (or clear) in a range. Past the end of the
/// string the bits read as zero, unless the range's end was given.
pub fn bitpos(ctx: &mut Ctx) -> CmdResult<Reply> {
    let want = match int_arg(ctx.arg(2))? {
        0 => false,
        1 => true,
        _ => return Err(CmdError::other("ERR The bit argument must be 1 or 0.")),
    };
    let key = ctx.arg(1).clone();
    let Some(data) = ctx.db().typed::<Bytes>(&key)?.cloned() else {
        return Ok(Reply::Int(if want { -1 } else { 0 }));
    };
    let len = data.len();
    let (range, end_given) = match ctx.args.len() {
        3 => ((len > 0).then(|| (0, len as u64 * 8 - 1)), false),
        4..=6 => {
            let start = int_arg(ctx.arg(3))?;
            let in_bits = in_bits(ctx.args.get(5))?;
            let end = match ctx.args.get(4) {
                Some(raw) => int_arg(raw)?,
                None => i64::MAX,
            };
            (bit_range(len, start, end, in_bits), ctx.args.len() > 4)
        }
        _ => return Err(CmdError::Syntax),
    };
    let Some((first, last)) = range else {
        return Ok(Reply::Int(-1));
    };
    Ok(Reply::Int(
        match bits::first_bit(&data, first, last, want) {
            Some(pos) => pos as i64,
            None if want || end_given => -1,
            None => last as i64 + 1,
        },
    ))
}

#[derive(Clone, Copy)]
enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

/// BITOP: combines the source strings (missing ones read as empty, shorter
/// ones zero-padded) into the destination, or deletes it when all are empty.
pub fn bitop(ctx: &mut Ctx) -> CmdResult<Reply> {
    let op = match &ctx.arg(1).to_ascii_uppercase()[..] {
        b"AND" => BitOp::And,
        b"OR" => BitOp::Or,
        b"XOR" => BitOp::Xor,
        b"NOT" => BitOp::Not,
        _ => return Err(CmdError::Syntax),
    };
    if matches!(op, BitOp::Not) && ctx.args.len() != 4 {
        return Err(CmdError::other(
            "ERR BITOP NOT must be called with a single source key.",
        ));
    }
    let dest = ctx.arg(2).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let mut sources = Vec::with_capacity(ctx.args.len() - 3);
    for key in &ctx.args[3..] {
        sources.push(db.typed::<Bytes>(key)?.cloned().unwrap_or_default());
    }
    let len = sources.iter().map(Bytes::len).max().unwrap_or(0);
    if len == 0 {
        if db.remove(&dest)?.is_some() {
            db.modified(&dest, Event::Del)?;
        }
        return Ok(Reply::Int(0));
    }
    let byte = |s: &Bytes, i: usize| s.get(i).copied().unwrap_or(0);
    let out: Vec<u8> = (0..len)
        .map(|i| {
            let rest = sources[1..].iter().map(|s| byte(s, i));
            let first = byte(&sources[0], i);
            match op {
                BitOp::And => rest.fold(first, |a, b| a & b),
                BitOp::Or => rest.fold(first, |a, b| a | b),
                BitOp::Xor => rest.fold(first, |a, b| a ^ b),
                BitOp::Not => !first,
            }
        })
        .collect();
    db.insert(&dest, Value::Str(out.into(), StrForm::Raw), Ttl::Clear)?;
    db.modified(&dest, Event::Set)?;
    Ok(Reply::Int(len as i64))
}

#[derive(Clone, Copy)]
struct FieldType {
    signed: bool,
    bits: u32,
}

fn field_type(raw: &[u8]) -> CmdResult<FieldType> {
    let bad = || {
        CmdError::other(
            "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.",
        )
    };
    // Redis reads the width as a C string: it ends at a NUL byte.
    let raw = &raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())];
    let (signed, width) = match raw.split_first() {
        Some((b'i', w)) => (true, w),
        Some((b'u', w)) => (false, w),
        _ => return Err(bad()),
    };
    let bits = parse_i64(width).ok_or_else(bad)?;
    let max = if signed { 64 } else { 63 };
    if !(1..=max).contains(&bits) {
        return Err(bad());
    }
    Ok(FieldType {
        signed,
        bits: bits as u32,
    })
}

enum FieldOp {
    Get,
    Set(i64),
    Incrby(i64),
}

struct FieldStep {
    op: FieldOp,
    ty: FieldType,
    offset: u64,
    overflow: Overflow,
}

/// Parses every BITFIELD operation before any runs, as Redis does.
fn parse_field_steps(args: &[Bytes]) -> CmdResult<Vec<FieldStep>> {
    let mut steps = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut i = 0;
    while i < args.len() {
        let left = args.len() - i - 1;
        let name = args[i].to_ascii_uppercase();
        let valued = match &name[..] {
            b"GET" if left >= 2 => false,
            b"SET" | b"INCRBY" if left >= 3 => true,
            b"OVERFLOW" if left >= 1 => {
                overflow = match &args[i + 1].to_ascii_uppercase()[..] {
                    b"WRAP" => Overflow::Wrap,
                    b"SAT" => Overflow::Sat,
                    b"FAIL" => Overflow::Fail,
                    _ => return Err(CmdError::other("ERR Invalid OVERFLOW type specified")),
                };
                i += 2;
                continue;
            }
            _ => return Err(CmdError::Syntax),
        };
        let ty = field_type(&args[i + 1])?;
        let offset = bit_offset(&args[i + 2], Some(ty.bits))?;
        let op = if !valued {
            FieldOp::Get
        } else {
            let n = int_arg(&args[i + 3])?;
            if &name[..] == b"SET" {
                FieldOp::Set(n)
            } else {
                FieldOp::Incrby(n)
            }
        };
        steps.push(FieldStep {
            op,
            ty,
            offset,
            overflow,
        });
        i += if valued { 4 } else { 3 };
    }
    Ok(steps)
}

/// One operation on a writable string: the reply (nil when FAIL refuses a
/// write) and, for a write not refused, whether the field's bits changed.
fn run_field(data: &mut [u8], step: &FieldStep) -> (Reply, Option<bool>) {
    let FieldStep {
        ty,
        offset,
        overflow,
        ..
    } = *step;
    let (value, incr, reply_old) = match step.op {
        FieldOp::Set(v) => (v, 0, true),
        FieldOp::Incrby(n) => (0, n, false),
        FieldOp::Get => return (read_field(data, step), None),
    };
    if ty.signed {
        let old = bits::get_signed(data, offset, ty.bits);
        let base = if reply_old { value } else { old };
        let Some(new) = bits::add_signed(base, incr, ty.bits, overflow) else {
            return (Reply::Nil, None);
        };
        bits::set_field(data, offset, ty.bits, new as u64);
        (
            Reply::Int(if reply_old { old } else { new }),
            Some(old != new),
        )
    } else {
        let old = bits::get_unsigned(data, offset, ty.bits);
        let base = if reply_old { value as u64 } else { old };
        let Some(new) = bits::add_unsigned(base, incr, ty.bits, overflow) else {
            return (Reply::Nil, None);
        };
        bits::set_field(data, offset, ty.bits, new);
        (
            Reply::Int(if reply_old { old } else { new } as i64),
            Some(old != new),
        )
    }
}

fn read_field(data: &[u8], step: &FieldStep) -> Reply {
    Reply::Int(if step.ty.signed {
        bits::get_signed(data, step.offset, step.ty.bits)
    } else {
        bits::get_unsigned(data, step.offset, step.ty.bits) as i64
    })
}

fn bitfield_generic(ctx: &mut Ctx, read_only: bool) -> CmdResult<Reply> {
    let steps = parse_field_steps(&ctx.args[2..])?;
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let highest = steps
        .iter()
        .filter(|s| !matches!(s.op, FieldOp::Get))
        .map(|s| s.offset + s.ty.bits as u64 - 1)
        .max();
    let Some(highest) = highest else {
        let data = db.typed::<Bytes>(&key)?.cloned().unwrap_or_default();
        return Ok(Reply::Array(
            steps.iter().map(|s| read_field(&data, s)).collect(),
        ));
    };
    if read_only {
        return Err(CmdError::other(
            "ERR BITFIELD_RO only supports the GET subcommand",
        ));
    }
    let ((replies, writes), grown) = edit_bits(&mut db, &key, highest, |data| {
        let mut writes = FieldWrites::default();
        let replies: Vec<Reply> = steps
            .iter()
            .map(|step| {
                let (reply, outcome) = run_field(data, step);
                writes.applied |= outcome.is_some();
                writes.differed |= outcome == Some(true);
                reply
            })
            .collect();
        (replies, writes)
    })?;
    // A write into a created or grown string counts even if it wrote zeros.
    if writes.differed || (grown && writes.applied) {
        db.modified(&key, Event::Setbit)?;
    }
    Ok(Reply::Array(replies))
}

#[derive(Default)]
struct FieldWrites {
    applied: bool,
    differed: bool,
}

/// BITFIELD writes only with a SET or INCRBY operation, read as Redis
/// walks the operations (a GET's own arguments are skipped).
pub fn bitfield_key_flags(args: &[Bytes]) -> &'static [&'static str] {
    let mut i = 2;
    while i < args.len() {
        let left = args.len() - i;
        let op = args[i].to_ascii_lowercase();
        match &op[..] {
            b"get" if left >= 3 => i += 2,
            b"set" | b"incrby" if left >= 4 => return &["RW", "access", "update"],
            b"overflow" if left >= 2 => i += 1,
            _ => {}
        }
        i += 1;
    }
    &["RO", "access"]
}

pub fn bitfield(ctx: &mut Ctx) -> CmdResult<Reply> {
    bitfield_generic(ctx, false)
}

pub fn bitfield_ro(ctx: &mut Ctx) -> CmdResult<Reply> {
    bitfield_generic(ctx, true)
}

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("setbit", 4, Group::Bitmap, setbit).records_itself().flags(WRITE | DENYOOM).acl(BITMAP).keys(&key1(RW_ACCESS_UPDATE))
        .syntax("key offset value")
        .doc("2.2.0", "Sets or clears the bit at an offset of a string; returns the bit's old value."),
    CommandSpec::new("getbit", 3, Group::Bitmap, getbit).flags(READ_FAST).acl(BITMAP).keys(&key1(RO_ACCESS))
        .syntax("key offset")
        .doc("2.2.0", "Returns the bit at an offset of a string."),
    CommandSpec::new("bitcount", -2, Group::Bitmap, bitcount).flags(READONLY).acl(BITMAP).keys(&key1(RO_ACCESS))
        .syntax("key [start end [BYTE | BIT]]")
        .doc("2.6.0", "Counts the set bits of a string, or of a range of it."),
    CommandSpec::new("bitpos", -3, Group::Bitmap, bitpos).flags(READONLY).acl(BITMAP).keys(&key1(RO_ACCESS))
        .syntax("key bit [start [end [BYTE | BIT]]]")
        .doc("2.8.7", "Returns the position of the first set or clear bit of a string, or of a range of it."),
    CommandSpec::new("bitop", -4, Group::Bitmap, bitop).records_itself().flags(WRITE | DENYOOM).acl(BITMAP)
        .keys(&[KeySpec::range(2, 0, 1, OW_UPDATE), KeySpec::range(3, -1, 1, RO_ACCESS)])
        .syntax("operation destkey key...")
        .doc("2.6.0", "Stores the AND, OR, XOR or NOT of strings at a key; returns its length."),
    CommandSpec::new("bitfield", -2, Group::Bitmap, bitfield).records_itself().flags(WRITE | DENYOOM).acl(BITMAP)
        .keys(&key1(&["RW", "access", "update", "variable_flags"])).vary_key_flags(bitfield_key_flags)
        .syntax("key [GET (encoding offset) | ([OVERFLOW (WRAP | SAT | FAIL)] (SET (encoding offset value) | INCRBY (encoding offset increment)))]...")
        .doc("3.2.0", "Reads, writes and adds to integer fields of any width at any bit offset of a string."),
    CommandSpec::new("bitfield_ro", -2, Group::Bitmap, bitfield_ro).flags(READ_FAST).acl(BITMAP).keys(&key1(RO_ACCESS))
        .syntax("key [GET (encoding offset)]...")
        .doc("6.0.0", "Reads integer fields of a string (BITFIELD's GET only)."),
];
