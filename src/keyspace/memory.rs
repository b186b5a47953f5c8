//! MEMORY USAGE: what a key would cost in Redis 7.0, computed from Redis's
//! layouts (object header, dict entry, sds strings, listpacks, quicklist
//! nodes) and jemalloc's size classes, so that clients sizing objects see
//! the numbers they would see on Redis. Small values (the lock family's
//! keys) and integer sets come out byte-exact; large hashes, sorted sets
//! and hash-table sets, whose Redis figure depends on sampling, rehashing
//! and random skiplist levels, are estimates.

use bytes::Bytes;

use super::limits::LIST_NODE_BYTES;
use super::{HashValue, SetValue, SortedSet, StrEncoding, StrForm, Value};
use crate::util::{format_double, parse_i64};

const ROBJ: u64 = 16;
const DICT_ENTRY: u64 = 24;
const DICT: u64 = 56;
const QUICKLIST: u64 = 40;
const QUICKLIST_NODE: u64 = 40;
/// A listpack's header and end marker.
const LISTPACK_OVERHEAD: u64 = 7;
const ZSET_SKIPLIST: u64 = 32;
const ZSET_HEADER_NODE: u64 = 24 + 32 * 16;
/// A skiplist node with its average of 1.33 levels.
const ZSET_NODE: u64 = 48;

/// The bytes jemalloc hands out for a request of `n`.
fn jemalloc(n: u64) -> u64 {
    if n <= 8 {
        return 8;
    }
    if n <= 128 {
        return n.div_ceil(16) * 16;
    }
    // Four classes for every doubling above 128.
    let base = 1u64 << (63 - (n - 1).leading_zeros());
    let step = base / 4;
    n.div_ceil(step) * step
}

/// An sds string of `len` bytes, header included.
fn sds(len: usize) -> u64 {
    let header = match len {
        0..32 => 1,
        32..256 => 3,
        256..65536 => 5,
        _ => 9,
    };
    jemalloc(header + len as u64 + 1)
}

/// A string value: a small integer in the object header, a short string
/// embedded with it, or a separate sds (whose spare room, after APPEND or
/// SETBIT grew it, is not counted).
fn string_value(s: &[u8], form: StrForm) -> u64 {
    match form.encoding(s) {
        StrEncoding::Int => ROBJ,
        StrEncoding::Embstr => jemalloc(ROBJ + 3 + s.len() as u64 + 1),
        StrEncoding::Raw => ROBJ + sds(s.len()),
    }
}

/// One listpack entry: its encoding, data and back-length.
fn listpack_entry(s: &[u8]) -> u64 {
    let body = match (s.len() <= 20).then(|| parse_i64(s)).flatten() {
        Some(v) if (0..128).contains(&v) => 1,
        Some(v) if (-4096..4096).contains(&v) => 2,
        Some(v) if i16::try_from(v).is_ok() => 3,
        Some(v) if (-(1 << 23)..(1 << 23)).contains(&v) => 4,
        Some(v) if i32::try_from(v).is_ok() => 5,
        Some(_) => 9,
        None => {
            let len = s.len() as u64;
            len + match len {
                0..64 => 1,
                64..4096 => 2,
                _ => 5,
            }
        }
    };
    let back = match body {
        0..128 => 1,
        128..16384 => 2,
        16384..2097152 => 3,
        2097152..268435456 => 4,
        _ => 5,
    };
    body + back
}

fn listpack<'a>(items: impl Iterator<Item = &'a [u8]>) -> u64 {
    jemalloc(LISTPACK_OVERHEAD + items.map(listpack_entry).sum::<u64>())
}

/// A hash table's header and bucket array for `n` entries.
fn dict(n: usize) -> u64 {
    DICT + 8 * (n.max(4).next_power_of_two() as u64)
}

fn hash_value(h: &HashValue) -> u64 {
    if h.is_listpack() {
        return ROBJ + listpack(h.iter().flat_map(|(f, v)| [f, v]));
    }
    let entries: u64 = h
        .iter()
        .map(|(f, v)| DICT_ENTRY + sds(f.len()) + sds(v.len()))
        .sum();
    ROBJ + dict(h.len()) + entries
}

fn list_value(list: &std::collections::VecDeque<Bytes>) -> u64 {
    let bytes: u64 = list.iter().map(|e| listpack_entry(e)).sum();
    let nodes = bytes.div_ceil(LIST_NODE_BYTES).max(1);
    let per_node = jemalloc(LISTPACK_OVERHEAD + bytes.div_ceil(nodes));
    ROBJ + QUICKLIST + nodes * (QUICKLIST_NODE + per_node)
}

fn zset_value(z: &SortedSet) -> u64 {
    let scores: Vec<(Bytes, String)> = z
        .iter()
        .map(|(m, s)| (m.clone(), format_double(s)))
        .collect();
    if z.is_compact() {
        return ROBJ + listpack(scores.iter().flat_map(|(m, s)| [&m[..], s.as_bytes()]));
    }
    let members: u64 = scores
        .iter()
        .map(|(m, _)| sds(m.len()) + DICT_ENTRY + ZSET_NODE)
        .sum();
    ROBJ + 16 + ZSET_SKIPLIST + dict(z.len()) + ZSET_HEADER_NODE + members
}

/// An intset is one allocation: an 8-byte header and the entries at its
/// width; exact. A hash table set is estimated like a large hash, each
/// member an sds key with no value (Redis's own figure samples members and
/// depends on where an incremental rehash stands).
fn set_value(s: &SetValue) -> u64 {
    if let Some(width) = s.intset_width() {
        return ROBJ + jemalloc(8 + s.len() as u64 * u64::from(width));
    }
    let members: u64 = s.members().iter().map(|m| DICT_ENTRY + sds(m.len())).sum();
    ROBJ + dict(s.len()) + members
}

/// The bytes `key` holding `value` would take in Redis 7.0.
pub fn usage(key: &[u8], value: &Value) -> u64 {
    let value = match value {
        Value::Str(s, form) => string_value(s, *form),
        Value::Hash(h) => hash_value(h),
        Value::List(l) => list_value(l),
        Value::ZSet(z) => zset_value(z),
        Value::Set(s) => set_value(s),
        Value::Stream(s) => ROBJ + s.approx_bytes(),
    };
    DICT_ENTRY + sds(key.len()) + value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jemalloc_classes() {
        let classes: Vec<u64> = [1, 8, 9, 21, 33, 129, 161, 1006, 1025]
            .into_iter()
            .map(jemalloc)
            .collect();
        assert_eq!(classes, [8, 8, 16, 32, 48, 160, 192, 1024, 1280]);
    }

    #[test]
    fn listpack_entries() {
        assert_eq!(listpack_entry(b"1"), 2);
        assert_eq!(listpack_entry(b"-1"), 3);
        assert_eq!(listpack_entry(b"a"), 3);
        assert_eq!(listpack_entry(b"01"), 4, "not canonical: a string");
        assert_eq!(listpack_entry(&[b'x'; 200]), 200 + 2 + 2);
    }
}
