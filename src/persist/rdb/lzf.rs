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
//! table. That is exact although Redis never clears its table (stack
//! memory, offsets into whatever it compressed before): an old entry
//! could only make a match at three bytes seen earlier in this string,
//! and the first place they were seen was hashed, so their slot holds
//! this call's entry.
//!
//! Most strings a snapshot offers are short and do not shrink (a lock's
//! listpack: 40 to 60 bytes around a UUID), so the loop over bytes that
//! find no match does nothing but hash: literals are not copied one by
//! one but as a stretch when a back reference or the end closes it, and
//! where liblzf checks its room before each literal, the number of
//! literals that leave room to end is worked out once per stretch.

const HASH_BITS: u32 = 16;
const SLOTS: usize = 1 << HASH_BITS;
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
        let end = input.len();
        if end < 3 || limit == 0 {
            return None;
        }
        self.start_call(end);
        // A table of known size: its slots need no bounds checks.
        let table: &mut [u64; SLOTS] = self.table.as_mut_slice().try_into().ok()?;
        let mut hash = Hashing {
            table,
            input,
            base: self.base,
            three: u32::from(input[0]) << 8 | u32::from(input[1]),
        };
        let out = &mut self.out;
        out.clear();
        // The literals not yet written are `input[stretch..pos]`.
        let (mut stretch, mut pos) = (0, 0);
        loop {
            // Past `room_end`, a literal leaves no room to end in.
            let room_end = stretch + literal_room(out.len(), limit);
            let stop = (end - 2).min(room_end + 1);
            let Some((at, from)) = hash.find_match(pos, stop) else {
                if stop > room_end {
                    return None;
                }
                pos = stop;
                break;
            };
            pos = at;
            let pending = pos - stretch;
            // liblzf's room check: what it has written, less the length
            // byte of a run still empty, and four bytes.
            let written =
                literals_end(out.len(), pending) - usize::from(pending % MAX_LITERALS == 0);
            if written + 4 >= limit {
                return None;
            }
            push_literals(out, &input[stretch..pos]);
            let longest = (end - pos - 2).min(MAX_MATCH);
            let len = match_len(&input[from..], &input[pos..], longest);
            push_reference(out, pos - from - 1, len);
            pos += len;
            stretch = pos;
            if pos >= end - 2 {
                break;
            }
            // liblzf remembers the match's last two positions.
            hash.remember(pos - 2);
            hash.remember(pos - 1);
        }
        if literals_end(out.len(), pos - stretch) + 3 > limit {
            return None;
        }
        push_literals(out, &input[stretch..]);
        Some(out.len())
    }

    pub fn output(&self) -> &[u8] {
        &self.out
    }

    /// Moves `base` past every position an earlier call stored.
    fn start_call(&mut self, len: usize) {
        if self.table.is_empty() {
            self.table = vec![0; SLOTS];
        }
        self.base += self.last_len + 1;
        self.last_len = len as u64;
    }
}

/// The table as one call sees it, and the three bytes last hashed.
struct Hashing<'a> {
    table: &'a mut [u64; SLOTS],
    input: &'a [u8],
    /// The call's zero (see `Compressor::base`).
    base: u64,
    /// The bytes at the position last hashed, the first highest (bits
    /// above the low 24 are older bytes, which `slot` ignores).
    three: u32,
}

impl Hashing<'_> {
    /// Hashes the positions from `pos` (the one after the last hashed)
    /// up to `stop` (at most the input's length less two), each stored
    /// as the last sighting of its three bytes, until one matches an
    /// earlier sighting: its position and the earlier one's. Kept apart
    /// from the rest so that this loop, where most bytes go, has the
    /// registers to itself.
    fn find_match(&mut self, pos: usize, stop: usize) -> Option<(usize, usize)> {
        let Hashing {
            ref mut table,
            input,
            base,
            mut three,
        } = *self;
        let entering = input.get(pos + 2..stop + 2).unwrap_or_default();
        let found = (pos..).zip(entering).find_map(|(at, &byte)| {
            three = three << 8 | u32::from(byte);
            let stamp = base + at as u64;
            let seen = std::mem::replace(&mut table[slot(three)], stamp);
            // Empty, from an earlier call, or the first byte: no match.
            if seen <= base || stamp - seen > MAX_OFFSET as u64 {
                return None;
            }
            let from = (seen - base) as usize;
            (input[from..from + 3] == input[at..at + 3]).then_some((at, from))
        });
        self.three = three;
        found
    }

    /// Stores `at` as the last sighting of its three bytes, which are
    /// then the last hashed.
    fn remember(&mut self, at: usize) {
        self.three = trigram(&self.input[at..]);
        self.table[slot(self.three)] = self.base + at as u64;
    }
}

/// Where liblzf's output pointer stands after `literals` literals that
/// follow `written` bytes: past their runs' length bytes, and past the
/// length byte of the run they open.
fn literals_end(written: usize, literals: usize) -> usize {
    written + 1 + literals + literals / MAX_LITERALS
}

/// How many literals can follow `written` bytes while the output can
/// still end within `limit`. liblzf wants three bytes to spare when it
/// reaches the end, and its pointer only grows (a back reference takes
/// back an empty run's length byte but writes at least two), so once a
/// literal leaves less it gives up sooner or later: giving up then,
/// before liblzf's own check, changes nothing but the work. Each 32
/// literals take 33 bytes.
fn literal_room(written: usize, limit: usize) -> usize {
    // The bytes those literals and their runs' length bytes may take.
    let bytes = limit.saturating_sub(written + 1 + 3);
    bytes - (bytes + 1) / (MAX_LITERALS + 1)
}

/// Literals as runs of at most 32, each after its length less one.
fn push_literals(out: &mut Vec<u8>, literals: &[u8]) {
    for run in literals.chunks(MAX_LITERALS) {
        out.push((run.len() - 1) as u8);
        out.extend_from_slice(run);
    }
}

/// A back reference: `len` bytes (three or more) from `offset + 1` back.
fn push_reference(out: &mut Vec<u8>, offset: usize, len: usize) {
    let stored = len - 2;
    if stored < 7 {
        out.push((offset >> 8) as u8 + ((stored as u8) << 5));
    } else {
        out.push((offset >> 8) as u8 + (7 << 5));
        out.push((stored - 7) as u8);
    }
    out.push(offset as u8);
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

/// Three bytes as liblzf's hash reads them, the first highest.
fn trigram(bytes: &[u8]) -> u32 {
    u32::from(bytes[0]) << 16 | u32::from(bytes[1]) << 8 | u32::from(bytes[2])
}

/// liblzf's table slot for three bytes (its `IDX` under `VERY_FAST`); bits
/// above the low 24 do not reach it.
fn slot(three: u32) -> usize {
    ((three >> (24 - HASH_BITS)).wrapping_sub(three.wrapping_mul(5)) & (SLOTS as u32 - 1)) as usize
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

    /// liblzf's loop as it reads: one literal at a time into a buffer of
    /// `limit` bytes, its room checked before each, and a fresh table for
    /// every call. The oracle for the compressor's shortcuts.
    fn liblzf(input: &[u8], limit: usize) -> Option<Vec<u8>> {
        let end = input.len();
        if end < 3 || limit == 0 {
            return None;
        }
        // Position + 1 of each slot's last sighting; 0: none.
        let mut table = vec![0usize; SLOTS];
        let mut out = vec![0u8; limit];
        let (mut op, mut lit, mut ip) = (1, 0, 0);
        let literal = |out: &mut Vec<u8>, op: &mut usize, lit: &mut usize, b: u8| {
            out[*op] = b;
            *op += 1;
            *lit += 1;
            if *lit == MAX_LITERALS {
                out[*op - *lit - 1] = (*lit - 1) as u8;
                *lit = 0;
                *op += 1;
            }
        };
        while ip + 2 < end {
            let seen = std::mem::replace(&mut table[slot(trigram(&input[ip..]))], ip + 1);
            let matched = seen.checked_sub(1).filter(|&r| {
                r > 0 && ip - r - 1 < MAX_OFFSET && input[r..r + 3] == input[ip..ip + 3]
            });
            let Some(r) = matched else {
                if op >= limit {
                    return None;
                }
                literal(&mut out, &mut op, &mut lit, input[ip]);
                ip += 1;
                continue;
            };
            if op - usize::from(lit == 0) + 4 >= limit {
                return None;
            }
            if lit == 0 {
                op -= 1;
            } else {
                out[op - lit - 1] = (lit - 1) as u8;
            }
            let len = match_len(&input[r..], &input[ip..], (end - ip - 2).min(MAX_MATCH));
            let (offset, stored) = (ip - r - 1, len - 2);
            out[op] = (offset >> 8) as u8 + ((stored.min(7) as u8) << 5);
            op += 1;
            if stored >= 7 {
                out[op] = (stored - 7) as u8;
                op += 1;
            }
            out[op] = offset as u8;
            op += 2;
            lit = 0;
            ip += len;
            if ip + 2 >= end {
                break;
            }
            for at in [ip - 2, ip - 1] {
                table[slot(trigram(&input[at..]))] = at + 1;
            }
        }
        if op + 3 > limit {
            return None;
        }
        for &b in &input[ip..] {
            literal(&mut out, &mut op, &mut lit, b);
        }
        if lit == 0 {
            op -= 1;
        } else {
            out[op - lit - 1] = (lit - 1) as u8;
        }
        out.truncate(op);
        Some(out)
    }

    /// The compressor's stretches of literals, its room worked out once a
    /// stretch and its table kept between calls give liblzf's bytes and
    /// refusals: on inputs from many matches to none, of every length
    /// around the run and offset bounds, each under Redis's limit and
    /// under limits that cut it anywhere.
    #[test]
    fn the_same_bytes_and_refusals_as_liblzf_s_loop() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |bound: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % bound as u64) as usize
        };
        let lock =
            b"\x31\x00\x00\x00\x02\x00\xa6b983c153-7421-469a-addb-44fb92259a1b:1\x27\x01\x01\xff";
        let mut inputs: Vec<Vec<u8>> = vec![lock.to_vec(), lock.repeat(3), b"abcd".repeat(300)];
        for len in (3..120).chain([255, 256, 300, 1000, 8300, 20_000]) {
            for alphabet in [1, 2, 4, 16, 256] {
                inputs.push((0..len).map(|_| next(alphabet) as u8).collect());
            }
            // Long stretches of literals, then one long back reference.
            let noise: Vec<u8> = (0..len).map(|_| next(256) as u8).collect();
            inputs.push([&noise[..], &noise[..len.min(300)]].concat());
        }
        let mut c = Compressor::default();
        let mut compressed = 0;
        for input in &inputs {
            let len = input.len();
            // Room to spare, Redis's limit, none, and just enough (where
            // giving up one literal early would show).
            let fit = liblzf(input, len + 64).map_or(len, |out| out.len());
            let limits = [len + 64, len - len.min(4), 1, next(len + 8)];
            for limit in limits.into_iter().chain(fit.saturating_sub(1)..fit + 4) {
                let expected = liblzf(input, limit);
                let got = c.compress(input, limit).map(|n| c.output()[..n].to_vec());
                assert_eq!(got, expected, "{input:?} in {limit} bytes");
                compressed += usize::from(got.is_some());
            }
        }
        assert!(compressed > inputs.len(), "only {compressed} compressed");
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
