//! Redis's listpack (listpack.c), the blob RDB stores small hashes, sorted
//! sets, list nodes and stream nodes in: a 4-byte total size and a 2-byte
//! count (both little-endian), then each element as its encoding, its
//! data and its own length written backwards, then 0xFF.
//!
//! Hand-written: no crate reads or writes Redis's listpack, and the format
//! is small (nine encodings).

use std::borrow::Cow;

use super::RdbError;

const HEADER: usize = 6;
const END: u8 = 0xff;
/// The count a listpack stores when it has this many elements or more:
/// "unknown, walk them".
const COUNT_UNKNOWN: u16 = u16::MAX;

/// One element: Redis keeps a string that is the canonical text of an
/// integer as that integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item<'a> {
    Int(i64),
    Str(&'a [u8]),
}

impl<'a> Item<'a> {
    /// The element as the string a client sees.
    pub fn bytes(self) -> Cow<'a, [u8]> {
        match self {
            Item::Int(n) => Cow::Owned(itoa::Buffer::new().format(n).as_bytes().to_vec()),
            Item::Str(s) => Cow::Borrowed(s),
        }
    }

    /// The element as an integer, as `lpGetInteger` reads one stored as
    /// text too.
    pub fn int(self) -> Option<i64> {
        match self {
            Item::Int(n) => Some(n),
            Item::Str(s) => crate::util::parse_i64(s),
        }
    }
}

/// Builds a listpack element by element, in a buffer that starts with
/// room for the header, so that `finish` gives that buffer back whole and
/// a caller building many can reuse one (`reusing`).
#[derive(Debug)]
pub struct Builder {
    body: Vec<u8>,
    count: usize,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::reusing(Vec::new())
    }
}

impl Builder {
    /// A listpack built in `buf`, whatever it held before.
    pub fn reusing(mut buf: Vec<u8>) -> Builder {
        buf.clear();
        buf.resize(HEADER, 0);
        Builder {
            body: buf,
            count: 0,
        }
    }

    /// A string, stored as an integer when it is one's canonical text.
    pub fn push(&mut self, s: &[u8]) {
        match crate::util::parse_i64(s) {
            Some(n) => self.push_int(n),
            None => self.push_str(s),
        }
    }

    pub fn push_int(&mut self, n: i64) {
        let start = self.body.len();
        match n {
            0..=127 => self.body.push(n as u8),
            -4096..=4095 => {
                let v = (n as u16) & 0x1fff;
                self.body
                    .extend_from_slice(&[0xc0 | (v >> 8) as u8, v as u8]);
            }
            _ => {
                let (tag, width) = if i16::try_from(n).is_ok() {
                    (0xf1, 2)
                } else if (-(1 << 23)..1 << 23).contains(&n) {
                    (0xf2, 3)
                } else if i32::try_from(n).is_ok() {
                    (0xf3, 4)
                } else {
                    (0xf4, 8)
                };
                self.body.push(tag);
                self.body.extend_from_slice(&n.to_le_bytes()[..width]);
            }
        }
        self.close_element(start);
    }

    fn push_str(&mut self, s: &[u8]) {
        let start = self.body.len();
        let len = s.len();
        if len < 64 {
            self.body.push(0x80 | len as u8);
        } else if len < 4096 {
            self.body
                .extend_from_slice(&[0xe0 | (len >> 8) as u8, len as u8]);
        } else {
            self.body.push(0xf0);
            self.body.extend_from_slice(&(len as u32).to_le_bytes());
        }
        self.body.extend_from_slice(s);
        self.close_element(start);
    }

    /// Appends the element's back-length: its encoded size, seven bits a
    /// byte, most significant first, every byte but the first flagged (a
    /// reader walking backwards stops at the unflagged one).
    fn close_element(&mut self, start: usize) {
        let len = self.body.len() - start;
        let n = back_len_size(len);
        for i in 0..n {
            let seven = (len >> (7 * (n - 1 - i))) as u8 & 0x7f;
            self.body.push(if i > 0 { seven | 0x80 } else { seven });
        }
        self.count += 1;
    }

    pub fn finish(self) -> Vec<u8> {
        let mut out = self.body;
        out.push(END);
        let total = out.len() as u32;
        let count = u16::try_from(self.count).unwrap_or(COUNT_UNKNOWN);
        out[..4].copy_from_slice(&total.to_le_bytes());
        out[4..HEADER].copy_from_slice(&count.to_le_bytes());
        out
    }
}

/// The bytes `Builder::push` adds for `s`: its encoding, its data and
/// its back-length. A list's node sizes are known from these before any
/// node is built.
pub fn element_size(s: &[u8]) -> usize {
    let size = match crate::util::parse_i64(s) {
        Some(0..=127) => 1,
        Some(-4096..=4095) => 2,
        Some(n) if i16::try_from(n).is_ok() => 3,
        Some(n) if (-(1 << 23)..1 << 23).contains(&n) => 4,
        Some(n) if i32::try_from(n).is_ok() => 5,
        Some(_) => 9,
        None if s.len() < 64 => 1 + s.len(),
        None if s.len() < 4096 => 2 + s.len(),
        None => 5 + s.len(),
    };
    size + back_len_size(size)
}

/// An empty listpack's size, its header and end byte.
pub const EMPTY_SIZE: usize = HEADER + 1;

/// Every element of `blob`, checked as Redis's deep integrity check does:
/// the declared size and count, each element's encoding and back-length,
/// and the end byte. `at` is where the blob starts in the RDB stream, for
/// errors.
pub fn read(blob: &[u8], at: usize) -> Result<Vec<Item<'_>>, RdbError> {
    let corrupt = |offset: usize, what| RdbError::Corrupt {
        at: at + offset,
        what,
    };
    if blob.len() < HEADER + 1 {
        return Err(corrupt(0, "a listpack shorter than its header"));
    }
    let total = u32::from_le_bytes(blob[..4].try_into().expect("four")) as usize;
    if total != blob.len() || blob[total - 1] != END {
        return Err(corrupt(0, "a listpack whose size is not its length"));
    }
    let count = u16::from_le_bytes([blob[4], blob[5]]);
    let mut items = Vec::new();
    let mut pos = HEADER;
    let body_end = total - 1;
    while pos < body_end {
        let (item, size) =
            element(&blob[pos..body_end]).ok_or(corrupt(pos, "a damaged listpack element"))?;
        let back_at = pos + size;
        let back_len = back_len_size(size);
        let back = blob
            .get(back_at..back_at + back_len)
            .filter(|_| back_at + back_len <= body_end)
            .ok_or(corrupt(back_at, "a listpack element cut short"))?;
        if decode_back_len(back) != Some(size) {
            return Err(corrupt(back_at, "a listpack back-length that disagrees"));
        }
        items.push(item);
        pos = back_at + back_len;
    }
    if count != COUNT_UNKNOWN && usize::from(count) != items.len() {
        return Err(corrupt(4, "a listpack count that disagrees"));
    }
    Ok(items)
}

/// The element at the start of `data` and its encoded size (without its
/// back-length); `None` if it runs past `data` or is no encoding.
fn element(data: &[u8]) -> Option<(Item<'_>, usize)> {
    let first = *data.first()?;
    let int = |width: usize| -> Option<(Item<'_>, usize)> {
        let bytes = data.get(1..1 + width)?;
        let mut buf = [0u8; 8];
        buf[..width].copy_from_slice(bytes);
        let shift = 64 - 8 * width as u32;
        // Sign-extends from the stored width.
        let n = (i64::from_le_bytes(buf) << shift) >> shift;
        Some((Item::Int(n), 1 + width))
    };
    let string = |header: usize, len: usize| -> Option<(Item<'_>, usize)> {
        let s = data.get(header..header.checked_add(len)?)?;
        Some((Item::Str(s), header + len))
    };
    match first {
        0x00..=0x7f => Some((Item::Int(first.into()), 1)),
        0x80..=0xbf => string(1, (first & 0x3f).into()),
        0xc0..=0xdf => {
            let v = u16::from(first & 0x1f) << 8 | u16::from(*data.get(1)?);
            // Thirteen bits, two's complement.
            Some((Item::Int(i64::from((v << 3) as i16 >> 3)), 2))
        }
        0xe0..=0xef => string(
            2,
            usize::from(first & 0x0f) << 8 | usize::from(*data.get(1)?),
        ),
        0xf0 => {
            let len = u32::from_le_bytes(data.get(1..5)?.try_into().ok()?);
            string(5, len as usize)
        }
        0xf1 => int(2),
        0xf2 => int(3),
        0xf3 => int(4),
        0xf4 => int(8),
        _ => None,
    }
}

/// How many bytes Redis gives an element's back-length (its bounds are
/// one short of each width's capacity, and a reader must agree).
fn back_len_size(size: usize) -> usize {
    match size {
        0..=127 => 1,
        128..16383 => 2,
        16383..2_097_151 => 3,
        2_097_151..268_435_455 => 4,
        _ => 5,
    }
}

fn decode_back_len(bytes: &[u8]) -> Option<usize> {
    let (first, rest) = bytes.split_first()?;
    if first & 0x80 != 0 || rest.iter().any(|b| b & 0x80 == 0) {
        return None;
    }
    Some(
        bytes
            .iter()
            .fold(0usize, |n, b| n << 7 | usize::from(b & 0x7f)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_encoding_round_trips() {
        let long = vec![b'x'; 5000];
        let mid = vec![b'y'; 300];
        let texts: Vec<&[u8]> = vec![
            b"",
            b"a",
            b"0",
            b"127",
            b"128",
            b"-1",
            b"-4096",
            b"4095",
            b"4096",
            b"-32768",
            b"32768",
            b"8388607",
            b"-8388609",
            b"2147483647",
            b"2147483648",
            b"-9223372036854775808",
            b"9223372036854775807",
            b"007",
            b"-0",
            &mid,
            &long,
        ];
        let mut b = Builder::default();
        texts.iter().for_each(|t| b.push(t));
        let blob = b.finish();
        let items = read(&blob, 0).unwrap();
        let back: Vec<Cow<[u8]>> = items.iter().map(|i| i.bytes()).collect();
        assert_eq!(back, texts);
        assert_eq!(items[2], Item::Int(0));
        assert_eq!(items[17], Item::Str(b"007"));
    }

    #[test]
    fn matches_redis_bytes() {
        // What redis-server 7.0 stores for RPUSH k a 1 -5000: the count,
        // then each element with its back-length.
        let mut b = Builder::default();
        for t in [&b"a"[..], b"1", b"-5000"] {
            b.push(t);
        }
        assert_eq!(
            b.finish(),
            [
                16, 0, 0, 0, 3, 0, 0x81, b'a', 2, 1, 1, 0xf1, 0x78, 0xec, 3, 0xff
            ]
        );
    }

    #[test]
    fn long_back_lengths() {
        let s = vec![b'z'; 200];
        let mut b = Builder::default();
        b.push(&s);
        let blob = b.finish();
        // 2 header bytes + 200: back-length 202 in two bytes.
        assert_eq!(&blob[blob.len() - 3..blob.len() - 1], &[1, 0x80 | 74]);
        assert_eq!(read(&blob, 0).unwrap(), vec![Item::Str(&s)]);
    }

    #[test]
    fn damage_is_refused() {
        let mut b = Builder::default();
        b.push(b"hello");
        b.push(b"12");
        let blob = b.finish();
        for cut in 0..blob.len() {
            assert!(read(&blob[..cut], 0).is_err());
        }
        for i in 0..blob.len() {
            for bit in 0..8 {
                let mut bad = blob.clone();
                bad[i] ^= 1 << bit;
                // Any result but a panic; most flips are caught.
                let _ = read(&bad, 0);
            }
        }
        let mut wrong_count = blob.clone();
        wrong_count[4] = 3;
        assert!(read(&wrong_count, 0).is_err());
    }
}
