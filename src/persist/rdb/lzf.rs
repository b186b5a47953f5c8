//! LZF, the compression inside RDB strings.
//!
//! Decompressing uses the `lzf` crate. Compressing is our own: the crate
//! allocates and zeroes a 512 KB hash table on every call, which for a
//! snapshot of a million small values costs more than the values. Ours
//! keeps its table from one string to the next without clearing it, as a
//! stale entry is harmless: a candidate match is used only after its
//! bytes are compared with the input's.

const HASH_BITS: u32 = 14;
/// A back reference reaches at most 8 KiB back…
const MAX_OFFSET: usize = 1 << 13;
/// …and copies at most 264 bytes.
const MAX_MATCH: usize = (1 << 8) + (1 << 3);
/// A literal run holds at most 32 bytes.
const MAX_LITERALS: usize = 1 << 5;

pub struct Compressor {
    /// For each hash of three bytes, the last position they were seen at.
    table: Box<[u32]>,
    out: Vec<u8>,
}

impl Default for Compressor {
    fn default() -> Compressor {
        Compressor {
            table: vec![0; 1 << HASH_BITS].into_boxed_slice(),
            out: Vec::new(),
        }
    }
}

impl Compressor {
    /// Compresses `input` into at most `limit` bytes and returns their
    /// length (the bytes are `output()`), or None when it will not fit.
    pub fn compress(&mut self, input: &[u8], limit: usize) -> Option<usize> {
        self.out.clear();
        let mut literals = 0usize;
        // Where the current literal run's length byte goes.
        let mut run_start = 0usize;
        self.out.push(0);
        let mut pos = 0usize;
        while pos + 2 < input.len() {
            let slot = hash(&input[pos..pos + 3]);
            let candidate = self.table[slot] as usize;
            self.table[slot] = pos as u32;
            let offset = pos.wrapping_sub(candidate).wrapping_sub(1);
            if candidate < pos
                && offset < MAX_OFFSET
                && input[candidate..candidate + 3] == input[pos..pos + 3]
            {
                let longest = (input.len() - pos).min(MAX_MATCH);
                let mut len = 3;
                while len < longest && input[candidate + len] == input[pos + len] {
                    len += 1;
                }
                // Close the literal run (or take back its empty length byte).
                if literals > 0 {
                    self.out[run_start] = (literals - 1) as u8;
                } else {
                    self.out.pop();
                }
                let stored = len - 2;
                if stored < 7 {
                    self.out.push(((offset >> 8) as u8) | ((stored as u8) << 5));
                } else {
                    self.out.push(((offset >> 8) as u8) | (7 << 5));
                    self.out.push((stored - 7) as u8);
                }
                self.out.push(offset as u8);
                // Remember the positions the match covered, so later
                // repeats of them are found too.
                for covered in pos + 1..(pos + len).min(input.len().saturating_sub(2)) {
                    self.table[hash(&input[covered..covered + 3])] = covered as u32;
                }
                pos += len;
                run_start = self.out.len();
                self.out.push(0);
                literals = 0;
            } else {
                self.literal(input[pos], &mut literals, &mut run_start);
                pos += 1;
            }
            if self.out.len() > limit {
                return None;
            }
        }
        for &b in &input[pos..] {
            self.literal(b, &mut literals, &mut run_start);
        }
        if literals > 0 {
            self.out[run_start] = (literals - 1) as u8;
        } else {
            self.out.pop();
        }
        (self.out.len() <= limit).then_some(self.out.len())
    }

    pub fn output(&self) -> &[u8] {
        &self.out
    }

    fn literal(&mut self, b: u8, literals: &mut usize, run_start: &mut usize) {
        self.out.push(b);
        *literals += 1;
        if *literals == MAX_LITERALS {
            self.out[*run_start] = (MAX_LITERALS - 1) as u8;
            *run_start = self.out.len();
            self.out.push(0);
            *literals = 0;
        }
    }
}

fn hash(three: &[u8]) -> usize {
    let v = u32::from(three[0]) << 16 | u32::from(three[1]) << 8 | u32::from(three[2]);
    (v.wrapping_mul(2_654_435_761) >> (32 - HASH_BITS)) as usize
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
