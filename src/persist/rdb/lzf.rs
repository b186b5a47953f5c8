//! LZF, the compression inside RDB strings.
//!
//! Decompressing uses the `lzf` crate. Compressing is our own, and makes
//! the bytes Redis's liblzf (as built into Redis: `VERY_FAST`, a 2^16
//! slot table) makes, so that a value's RDB form is Redis's byte for
//! byte: the same hash of three bytes, the same rule that a match may not
//! start at the input's first byte, the same two positions remembered
//! after a match, the same output bounds. Unlike the crate, which
//! allocates and zeroes its table on every call, the table is kept
//! from one string to the next: each entry carries the call it was
//! written in, so an older call's entry counts as empty, as in a fresh
//! table.

const HASH_BITS: u32 = 16;
/// A back reference reaches at most 8 KiB back…
const MAX_OFFSET: usize = 1 << 13;
/// …and copies at most 264 bytes.
const MAX_MATCH: usize = (1 << 8) + (1 << 3);
/// A literal run holds at most 32 bytes.
const MAX_LITERALS: usize = 1 << 5;

#[derive(Default)]
pub struct Compressor {
    /// For each hash of three bytes, `base + position` of the last place
    /// they were seen; made on the first string long enough to compress.
    /// Wide enough never to wrap.
    table: Vec<u64>,
    /// This call's zero: entries at or below it are from earlier calls
    /// (or this call's first byte, where no match may start either).
    base: u64,
    /// The previous call's input length.
    last_len: u64,
    out: Vec<u8>,
}

impl Compressor {
    /// Compresses `input` into at most `limit` bytes and returns their
    /// length (the bytes are `output()`), or None when liblzf would give
    /// up for want of room.
    pub fn compress(&mut self, input: &[u8], limit: usize) -> Option<usize> {
        if input.len() < 3 || limit == 0 {
            return None;
        }
        self.start_call(input.len());
        let base = self.base;
        let out = &mut self.out;
        out.clear();
        let end = input.len();
        let mut run = Run::start(out);
        let mut pos = 0usize;
        while pos < end - 2 {
            let slot = slot(&input[pos..pos + 3]);
            let seen = self.table[slot];
            self.table[slot] = base + pos as u64;
            // Empty, from an earlier call, or the first byte: no match.
            let candidate = (seen > base).then(|| (seen - base) as usize);
            let matched = candidate
                .filter(|&c| pos - c - 1 < MAX_OFFSET && input[c..c + 3] == input[pos..pos + 3]);
            let Some(from) = matched else {
                if out.len() >= limit {
                    return None;
                }
                run.push(out, input[pos]);
                pos += 1;
                continue;
            };
            let offset = pos - from - 1;
            let longest = (end - pos - 2).min(MAX_MATCH);
            if out.len() - usize::from(run.len == 0) + 4 >= limit {
                return None;
            }
            run.close(out);
            let len = match_len(&input[from..], &input[pos..], longest);
            let stored = len - 2;
            if stored < 7 {
                out.push((offset >> 8) as u8 + ((stored as u8) << 5));
            } else {
                out.push((offset >> 8) as u8 + (7 << 5));
                out.push((stored - 7) as u8);
            }
            out.push(offset as u8);
            run = Run::start(out);
            pos += len;
            if pos >= end - 2 {
                break;
            }
            // liblzf remembers the match's last two positions.
            for at in [pos - 2, pos - 1] {
                self.table[slot_at(input, at)] = base + at as u64;
            }
        }
        if out.len() + 3 > limit {
            return None;
        }
        for &b in &input[pos..] {
            run.push(out, b);
        }
        run.close(out);
        Some(out.len())
    }

    pub fn output(&self) -> &[u8] {
        &self.out
    }

    /// Moves `base` past every position an earlier call stored.
    fn start_call(&mut self, len: usize) {
        if self.table.is_empty() {
            self.table = vec![0; 1 << HASH_BITS];
        }
        self.base += self.last_len + 1;
        self.last_len = len as u64;
    }
}

/// The literal run being written: where its length byte is, and how many
/// bytes it holds so far.
struct Run {
    at: usize,
    len: usize,
}

impl Run {
    fn start(out: &mut Vec<u8>) -> Run {
        out.push(0);
        Run {
            at: out.len() - 1,
            len: 0,
        }
    }

    fn push(&mut self, out: &mut Vec<u8>, b: u8) {
        out.push(b);
        self.len += 1;
        if self.len == MAX_LITERALS {
            self.close(out);
            *self = Run::start(out);
        }
    }

    /// Writes the run's length, or takes back its length byte if it
    /// holds nothing.
    fn close(&self, out: &mut Vec<u8>) {
        match self.len {
            0 => {
                out.pop();
            }
            len => out[self.at] = (len - 1) as u8,
        }
    }
}

/// How long the match of `pos` against the earlier `from` is (at least
/// three bytes, which the caller compared), measured as liblzf measures
/// it: sixteen bytes checked unbounded when more than sixteen may follow,
/// then byte by byte up to `longest`.
fn match_len(from: &[u8], pos: &[u8], longest: usize) -> usize {
    let mut len = 2;
    if longest > 16 {
        for _ in 0..16 {
            len += 1;
            if from[len] != pos[len] {
                return len;
            }
        }
    }
    loop {
        len += 1;
        if !(len < longest && from[len] == pos[len]) {
            return len;
        }
    }
}

/// liblzf's table slot for three bytes (its `IDX` under `VERY_FAST`).
fn slot(three: &[u8]) -> usize {
    let h = u32::from(three[0]) << 16 | u32::from(three[1]) << 8 | u32::from(three[2]);
    ((h >> (24 - HASH_BITS)).wrapping_sub(h.wrapping_mul(5)) & ((1 << HASH_BITS) - 1)) as usize
}

fn slot_at(input: &[u8], at: usize) -> usize {
    slot(&input[at..at + 3])
}

/// Expands an LZF block that must give exactly `len` bytes. The caller
/// bounds `len` (a block cannot expand more than LZF's longest reference
/// allows), so a damaged length cannot make this allocate without limit.
pub fn decompress(packed: &[u8], len: usize) -> Option<Vec<u8>> {
    let out = lzf::decompress(packed, len).ok()?;
    (out.len() == len).then_some(out)
}

/// The most bytes `packed` bytes of LZF can expand to: a back reference of
/// three bytes copies at most 264.
pub fn max_expansion(packed: usize) -> usize {
    packed.saturating_mul(MAX_MATCH.div_ceil(3) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(input: &[u8], compressor: &mut Compressor) -> Option<usize> {
        let n = compressor.compress(input, input.len())?;
        assert_eq!(decompress(compressor.output(), input.len()).unwrap(), input);
        Some(n)
    }

    #[test]
    fn compressed_blocks_expand_to_their_input() {
        let mut c = Compressor::default();
        let repeated = b"lock:{order}:1 lock:{order}:2 lock:{order}:3 ".repeat(40);
        assert!(round_trip(&repeated, &mut c).unwrap() < repeated.len() / 4);
        let runs: Vec<u8> = (0..5000).map(|i| (i / 300) as u8).collect();
        assert!(round_trip(&runs, &mut c).is_some());
        // A table left by earlier inputs misleads nothing.
        let mut seed = 7u32;
        for size in [3usize, 21, 100, 1000, 9000] {
            let noise: Vec<u8> = (0..size)
                .map(|i| {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    if i % 5 == 0 { b'a' } else { (seed >> 24) as u8 }
                })
                .collect();
            if let Some(n) = c.compress(&noise, noise.len() + 64) {
                assert_eq!(decompress(&c.output()[..n], noise.len()).unwrap(), noise);
            }
        }
    }

    /// What redis-server 7.0.15 stores for these strings (from DUMP): the
    /// same back references, and the same refusal where liblzf finds too
    /// little room.
    #[test]
    fn the_bytes_are_liblzf_s() {
        let mut c = Compressor::default();
        let repeated = b"abcd".repeat(300);
        let n = c.compress(&repeated, repeated.len() - 4).unwrap();
        assert_eq!(
            &c.output()[..n],
            b"\x04abcda\xe0\xff\x03\xe1\xff\x07\xe1\xff\x07\xe1\xff\x07\xe1\x80\x07\x01cd"
        );
        let same = [b'e'; 44];
        let n = c.compress(&same, same.len() - 4).unwrap();
        assert_eq!(&c.output()[..n], b"\x01ee\xe0\x1f\x00\x01ee");
        // An intset Redis leaves uncompressed although LZF could save a
        // few bytes: liblzf's room checks are conservative.
        let intset = b"\x08\x00\x00\x00\x03\x00\x00\x00\x90\xee\xfe\xff\xff\xff\xff\xff\x01\x00\x00\x00\x00\x00\x00\x00\x00\xf2\x05*\x01\x00\x00\x00";
        assert_eq!(c.compress(intset, intset.len() - 4), None);
    }

    #[test]
    fn what_does_not_shrink_is_left_alone() {
        let mut c = Compressor::default();
        let distinct: Vec<u8> = (0..=255).collect();
        assert_eq!(c.compress(&distinct, distinct.len() - 4), None);
    }

    #[test]
    fn a_damaged_block_is_refused() {
        assert_eq!(decompress(&[0x20, 0x00], 10), None);
        assert_eq!(decompress(&[0x05, b'a'], 6), None);
        assert_eq!(decompress(b"\x02abc", 4), None);
    }
}
