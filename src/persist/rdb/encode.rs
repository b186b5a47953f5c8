//! Appending RDB's pieces to a buffer.

use super::lzf::Compressor;
use super::{intset, listpack};

/// Strings shorter than this are stored as they are: Redis tries LZF only
/// above 20 bytes, and a reader gains nothing from a few saved bytes.
const COMPRESS_ABOVE: usize = 20;

/// Builds RDB bytes in `out`; whoever owns it decides when they go to a
/// file, a socket or a DUMP reply.
pub struct Encoder {
    pub out: Vec<u8>,
    /// `rdbcompression`: whether long strings are tried with LZF.
    compress: bool,
    lzf: Compressor,
    /// Where a blob (listpack, intset) is built before it is written as
    /// a string, kept from one to the next: a snapshot builds one for
    /// most keys, and allocating each cost a tenth of its time.
    spare: Vec<u8>,
}

impl Encoder {
    pub fn new(compress: bool) -> Encoder {
        Encoder {
            out: Vec::new(),
            compress,
            lzf: Compressor::default(),
            spare: Vec::new(),
        }
    }

    /// A listpack `fill` builds, written as a string.
    pub fn listpack(&mut self, fill: impl FnOnce(&mut listpack::Builder)) {
        let mut lp = listpack::Builder::reusing(std::mem::take(&mut self.spare));
        fill(&mut lp);
        let blob = lp.finish();
        self.string(&blob);
        self.spare = blob;
    }

    /// An intset of `members` (ascending, distinct), written as a string.
    pub fn intset(&mut self, members: &[i64], width: u8) {
        let mut blob = std::mem::take(&mut self.spare);
        intset::build_into(&mut blob, members, width);
        self.string(&blob);
        self.spare = blob;
    }

    pub fn byte(&mut self, b: u8) {
        self.out.push(b);
    }

    /// RDB's length: 6 bits in the first byte, 14 bits in two, or a marker
    /// byte and 32 or 64 bits big-endian.
    pub fn len(&mut self, n: u64) {
        if n < 1 << 6 {
            self.out.push(n as u8);
        } else if n < 1 << 14 {
            self.out
                .extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
        } else if let Ok(n) = u32::try_from(n) {
            self.out.push(0x80);
            self.out.extend_from_slice(&n.to_be_bytes());
        } else {
            self.out.push(0x81);
            self.out.extend_from_slice(&n.to_be_bytes());
        }
    }

    /// A string as Redis stores it: as a small integer when it is the
    /// canonical text of one, LZF-compressed when that saves bytes, else
    /// as it is.
    pub fn string(&mut self, s: &[u8]) {
        if s.len() <= 11 && self.small_integer(s) {
            return;
        }
        if self.compress && s.len() > COMPRESS_ABOVE && self.compressed(s) {
            return;
        }
        self.raw(s);
    }

    /// A string's bytes with their length, never encoded otherwise: what
    /// RDB wants where a reader takes the bytes as they are (a listpack's
    /// blob is still a string, and may be compressed: use `string`).
    pub fn raw(&mut self, s: &[u8]) {
        self.len(s.len() as u64);
        self.out.extend_from_slice(s);
    }

    /// A double's eight bytes, little-endian (sorted sets since RDB 8).
    pub fn binary_double(&mut self, d: f64) {
        self.out.extend_from_slice(&d.to_le_bytes());
    }

    /// A point in time in Unix milliseconds, eight bytes little-endian.
    pub fn millis(&mut self, ms: i64) {
        self.out.extend_from_slice(&ms.to_le_bytes());
    }

    fn small_integer(&mut self, s: &[u8]) -> bool {
        // `parse_i64` takes only canonical text, so "007" or "+1" stay
        // strings and every integer read back prints as it was.
        crate::util::parse_i64(s).is_some_and(|n| self.encode_integer(n))
    }

    fn encode_integer(&mut self, n: i64) -> bool {
        if let Ok(n) = i8::try_from(n) {
            self.out.extend_from_slice(&[0xc0, n as u8]);
        } else if let Ok(n) = i16::try_from(n) {
            self.out.push(0xc1);
            self.out.extend_from_slice(&n.to_le_bytes());
        } else if let Ok(n) = i32::try_from(n) {
            self.out.push(0xc2);
            self.out.extend_from_slice(&n.to_le_bytes());
        } else {
            return false;
        }
        true
    }

    /// Writes `s` compressed if liblzf fits it in four bytes less, the
    /// room Redis gives it (`rdbSaveLzfStringObject`); liblzf's checks
    /// are conservative, so some strings that would just fit stay raw.
    fn compressed(&mut self, s: &[u8]) -> bool {
        let Some(packed_len) = self.lzf.compress(s, s.len() - 4) else {
            return false;
        };
        self.out.push(0xc3);
        self.len(packed_len as u64);
        self.len(s.len() as u64);
        self.out.extend_from_slice(self.lzf.output());
        true
    }
}
