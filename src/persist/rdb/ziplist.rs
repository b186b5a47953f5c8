//! Redis's ziplist (ziplist.c), which RDB files before version 10 hold
//! small lists, hashes and sorted sets in; Redis 7.0 still loads them.
//! Only read here: 7.0 writes listpacks. Layout: a 4-byte total size, the
//! last entry's offset (4 bytes), a 2-byte count, then each entry as the
//! previous entry's size, its encoding and its data, then 0xFF.

use super::RdbError;
use super::listpack::Item;

const HEADER: usize = 10;
const END: u8 = 0xff;
const COUNT_UNKNOWN: u16 = u16::MAX;

/// Every entry of `blob`, checked as Redis's deep check does: sizes,
/// each entry's encoding, the previous-size chain and the tail offset.
pub fn read(blob: &[u8], at: usize) -> Result<Vec<Item<'_>>, RdbError> {
    let corrupt = |offset: usize, what| RdbError::Corrupt {
        at: at + offset,
        what,
    };
    if blob.len() < HEADER + 1 {
        return Err(corrupt(0, "a ziplist shorter than its header"));
    }
    let word = |i: usize| u32::from_le_bytes(blob[i..i + 4].try_into().expect("four")) as usize;
    let (total, tail) = (word(0), word(4));
    let count = u16::from_le_bytes([blob[8], blob[9]]);
    if total != blob.len() || blob[total - 1] != END {
        return Err(corrupt(0, "a ziplist whose size is not its length"));
    }
    let body_end = total - 1;
    let mut items = Vec::new();
    let (mut pos, mut prev_size, mut last) = (HEADER, 0, HEADER);
    while pos < body_end {
        let (item, size) = entry(&blob[pos..body_end], prev_size)
            .ok_or(corrupt(pos, "a damaged ziplist entry"))?;
        items.push(item);
        last = pos;
        prev_size = size;
        pos += size;
    }
    if tail != last {
        return Err(corrupt(4, "a ziplist tail offset that disagrees"));
    }
    if count != COUNT_UNKNOWN && usize::from(count) != items.len() {
        return Err(corrupt(8, "a ziplist count that disagrees"));
    }
    Ok(items)
}

/// The entry at the start of `data` and its whole size, if its previous
/// size is `prev_size` and it fits.
fn entry(data: &[u8], prev_size: usize) -> Option<(Item<'_>, usize)> {
    let (prev, mut pos) = match *data.first()? {
        254 => (
            u32::from_le_bytes(data.get(1..5)?.try_into().ok()?) as usize,
            5,
        ),
        255 => return None,
        n => (usize::from(n), 1),
    };
    if prev != prev_size {
        return None;
    }
    let encoding = *data.get(pos)?;
    pos += 1;
    let string = |len: usize, pos: usize| -> Option<(Item<'_>, usize)> {
        let end = pos.checked_add(len)?;
        Some((Item::Str(data.get(pos..end)?), end))
    };
    let int = |width: usize, pos: usize| -> Option<(Item<'_>, usize)> {
        let bytes = data.get(pos..pos + width)?;
        let mut buf = [0u8; 8];
        buf[..width].copy_from_slice(bytes);
        let shift = 64 - 8 * width as u32;
        Some((
            Item::Int((i64::from_le_bytes(buf) << shift) >> shift),
            pos + width,
        ))
    };
    match encoding {
        0x00..=0x3f => string(usize::from(encoding), pos),
        0x40..=0x7f => {
            let len = usize::from(encoding & 0x3f) << 8 | usize::from(*data.get(pos)?);
            string(len, pos + 1)
        }
        0x80..=0xbf => {
            let len = u32::from_be_bytes(data.get(pos..pos + 4)?.try_into().ok()?);
            string(len as usize, pos + 4)
        }
        0xc0 => int(2, pos),
        0xd0 => int(4, pos),
        0xe0 => int(8, pos),
        0xf0 => int(3, pos),
        0xfe => int(1, pos),
        0xf1..=0xfd => Some((Item::Int(i64::from(encoding & 0x0f) - 1), pos)),
        _ => None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A ziplist of `items`, written from the format (tests only: nothing
    /// in rlockd writes ziplists).
    pub fn build(items: &[&[u8]]) -> Vec<u8> {
        let mut body = Vec::new();
        let (mut prev, mut last) = (0usize, HEADER);
        for item in items {
            let start = body.len();
            last = HEADER + start;
            if prev < 254 {
                body.push(prev as u8);
            } else {
                body.push(254);
                body.extend_from_slice(&(prev as u32).to_le_bytes());
            }
            match crate::util::parse_i64(item) {
                Some(n @ 0..=12) => body.push(0xf1 + n as u8),
                Some(n) if i8::try_from(n).is_ok() => body.extend_from_slice(&[0xfe, n as u8]),
                Some(n) if i16::try_from(n).is_ok() => {
                    body.push(0xc0);
                    body.extend_from_slice(&(n as i16).to_le_bytes());
                }
                Some(n) if (-(1 << 23)..1 << 23).contains(&n) => {
                    body.push(0xf0);
                    body.extend_from_slice(&n.to_le_bytes()[..3]);
                }
                Some(n) if i32::try_from(n).is_ok() => {
                    body.push(0xd0);
                    body.extend_from_slice(&(n as i32).to_le_bytes());
                }
                Some(n) => {
                    body.push(0xe0);
                    body.extend_from_slice(&n.to_le_bytes());
                }
                None if item.len() < 64 => {
                    body.push(item.len() as u8);
                    body.extend_from_slice(item);
                }
                None if item.len() < 16384 => {
                    body.extend_from_slice(&[0x40 | (item.len() >> 8) as u8, item.len() as u8]);
                    body.extend_from_slice(item);
                }
                None => {
                    body.push(0x80);
                    body.extend_from_slice(&(item.len() as u32).to_be_bytes());
                    body.extend_from_slice(item);
                }
            }
            prev = body.len() - start;
        }
        let total = HEADER + body.len() + 1;
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&(total as u32).to_le_bytes());
        out.extend_from_slice(&(last as u32).to_le_bytes());
        out.extend_from_slice(&(items.len().min(COUNT_UNKNOWN.into()) as u16).to_le_bytes());
        out.extend_from_slice(&body);
        out.push(END);
        out
    }

    #[test]
    fn reads_every_encoding() {
        let long = vec![b'l'; 300];
        let huge = vec![b'h'; 17000];
        let items: Vec<&[u8]> = vec![
            b"a",
            b"0",
            b"12",
            b"13",
            b"-128",
            b"300",
            b"-70000",
            b"8388608",
            b"5000000000",
            b"x",
            &long,
            &huge,
            b"",
        ];
        let blob = build(&items);
        let read_back: Vec<Vec<u8>> = read(&blob, 0)
            .unwrap()
            .into_iter()
            .map(|i| i.bytes().into_owned())
            .collect();
        assert_eq!(read_back, items);
    }

    #[test]
    fn damage_is_refused() {
        let blob = build(&[b"one", b"2", b"three"]);
        for cut in 0..blob.len() {
            assert!(read(&blob[..cut], 0).is_err());
        }
        let mut bad_tail = blob.clone();
        bad_tail[4] += 1;
        assert!(read(&bad_tail, 0).is_err());
        let mut bad_prev = blob.clone();
        bad_prev[HEADER + 5] = 9;
        assert!(read(&bad_prev, 0).is_err());
    }
}
