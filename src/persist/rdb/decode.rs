//! Reading RDB's pieces from a slice.

use std::borrow::Cow;

use super::RdbError;
use super::lzf;

/// What a length position holds: a count, or the marker of a string
/// stored in a special form (an integer or LZF).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    Plain(u64),
    Encoded(u8),
}

/// Reads RDB from `data`, checking each length against the bytes left.
pub struct Decoder<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    pub fn new(data: &'a [u8]) -> Decoder<'a> {
        Decoder { data, pos: 0 }
    }

    /// How far into the data the next read starts (errors name it).
    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.pos == self.data.len()
    }

    /// The bytes read so far: what a checksum covers.
    pub fn consumed(&self) -> &'a [u8] {
        &self.data[..self.pos]
    }

    /// The next `n` bytes, or Truncated.
    pub fn take(&mut self, n: u64) -> Result<&'a [u8], RdbError> {
        let left = (self.data.len() - self.pos) as u64;
        if n > left {
            return Err(RdbError::Truncated {
                at: self.pos,
                wanted: n - left,
            });
        }
        let start = self.pos;
        self.pos += n as usize;
        Ok(&self.data[start..self.pos])
    }

    pub fn byte(&mut self) -> Result<u8, RdbError> {
        Ok(self.take(1)?[0])
    }

    pub fn u64_le(&mut self) -> Result<u64, RdbError> {
        let bytes = self.take(8)?;
        Ok(u64::from_le_bytes(bytes.try_into().expect("eight bytes")))
    }

    pub fn u32_le(&mut self) -> Result<u32, RdbError> {
        let bytes = self.take(4)?;
        Ok(u32::from_le_bytes(bytes.try_into().expect("four bytes")))
    }

    /// A point in time in Unix milliseconds.
    pub fn millis(&mut self) -> Result<i64, RdbError> {
        Ok(self.u64_le()? as i64)
    }

    pub fn binary_double(&mut self) -> Result<f64, RdbError> {
        Ok(f64::from_bits(self.u64_le()?))
    }

    /// A double as text, as sorted sets stored them before RDB 8: a length
    /// byte, with 253, 254 and 255 standing for NaN, +inf and -inf.
    pub fn text_double(&mut self) -> Result<f64, RdbError> {
        let at = self.pos;
        match self.byte()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            len => {
                let text = self.take(len.into())?;
                std::str::from_utf8(text)
                    .ok()
                    .and_then(|t| t.parse().ok())
                    .ok_or(RdbError::Corrupt {
                        at,
                        what: "a score that is not a number",
                    })
            }
        }
    }

    pub fn length_or_encoding(&mut self) -> Result<Length, RdbError> {
        let at = self.pos;
        let first = self.byte()?;
        Ok(match first >> 6 {
            0 => Length::Plain((first & 0x3f).into()),
            1 => Length::Plain(u64::from(first & 0x3f) << 8 | u64::from(self.byte()?)),
            3 => Length::Encoded(first & 0x3f),
            _ => match first {
                0x80 => {
                    let bytes = self.take(4)?;
                    Length::Plain(u32::from_be_bytes(bytes.try_into().expect("four")).into())
                }
                0x81 => {
                    let bytes = self.take(8)?;
                    Length::Plain(u64::from_be_bytes(bytes.try_into().expect("eight")))
                }
                byte => return Err(RdbError::BadLength { at, byte }),
            },
        })
    }

    /// A count or size: a length that may not be a special encoding.
    pub fn len(&mut self) -> Result<u64, RdbError> {
        let at = self.pos;
        match self.length_or_encoding()? {
            Length::Plain(n) => Ok(n),
            Length::Encoded(code) => Err(RdbError::BadLength {
                at,
                byte: 0xc0 | code,
            }),
        }
    }

    /// A count of items that each take at least `min_bytes`: checked
    /// against what is left, so a damaged count cannot make a reader
    /// reserve room for more items than the data could hold.
    pub fn count(&mut self, min_bytes: u64) -> Result<usize, RdbError> {
        let at = self.pos;
        let n = self.len()?;
        let left = (self.data.len() - self.pos) as u64;
        if n.saturating_mul(min_bytes.max(1)) > left {
            return Err(RdbError::Corrupt {
                at,
                what: "a count larger than the data that follows",
            });
        }
        Ok(n as usize)
    }

    /// A string in any of its forms: integers come back as their text,
    /// LZF blocks expanded, raw bytes borrowed.
    pub fn string(&mut self) -> Result<Cow<'a, [u8]>, RdbError> {
        let at = self.pos;
        match self.length_or_encoding()? {
            Length::Plain(n) => Ok(Cow::Borrowed(self.take(n)?)),
            Length::Encoded(code) => {
                let n: i64 = match code {
                    0 => (self.byte()? as i8).into(),
                    1 => i16::from_le_bytes(self.take(2)?.try_into().expect("two")).into(),
                    2 => i32::from_le_bytes(self.take(4)?.try_into().expect("four")).into(),
                    3 => return self.lzf(at).map(Cow::Owned),
                    _ => {
                        return Err(RdbError::BadLength {
                            at,
                            byte: 0xc0 | code,
                        });
                    }
                };
                Ok(Cow::Owned(
                    itoa::Buffer::new().format(n).as_bytes().to_vec(),
                ))
            }
        }
    }

    fn lzf(&mut self, at: usize) -> Result<Vec<u8>, RdbError> {
        let packed_len = self.len()?;
        let len = self.len()?;
        let packed = self.take(packed_len)?;
        if len > lzf::max_expansion(packed.len()) as u64 {
            return Err(RdbError::BadCompression { at });
        }
        lzf::decompress(packed, len as usize).ok_or(RdbError::BadCompression { at })
    }
}

#[cfg(test)]
mod tests {
    use super::super::Encoder;
    use super::*;

    #[test]
    fn lengths_round_trip_at_each_width() {
        for n in [
            0,
            63,
            64,
            16383,
            16384,
            u32::MAX as u64,
            u32::MAX as u64 + 1,
            u64::MAX,
        ] {
            let mut e = Encoder::new(false);
            e.len(n);
            let mut d = Decoder::new(&e.out);
            assert_eq!(d.len().unwrap(), n);
            assert!(d.is_empty());
        }
    }

    #[test]
    fn strings_come_back_whatever_their_form() {
        let long = b"abcabcabcabcabcabcabcabcabcabcabcabc".to_vec();
        let cases: Vec<&[u8]> = vec![
            b"",
            b"0",
            b"-1",
            b"127",
            b"-128",
            b"128",
            b"32767",
            b"-32769",
            b"2147483647",
            b"2147483648",
            b"007",
            b"+5",
            b"-0",
            b"hello",
            &long,
        ];
        for compress in [false, true] {
            let mut e = Encoder::new(compress);
            for s in &cases {
                e.string(s);
            }
            let mut d = Decoder::new(&e.out);
            for s in &cases {
                assert_eq!(&*d.string().unwrap(), *s);
            }
            assert!(d.is_empty());
        }
        let mut e = Encoder::new(true);
        e.string(&long);
        assert_eq!(e.out[0], 0xc3, "a repetitive long string is compressed");
        let mut e = Encoder::new(false);
        e.string(b"-32769");
        assert_eq!(e.out[0], 0xc2, "an integer is stored in its smallest form");
    }

    #[test]
    fn damaged_input_is_refused_not_trusted() {
        // A length past the end.
        assert!(matches!(
            Decoder::new(&[0x05, b'a']).string(),
            Err(RdbError::Truncated { at: 1, wanted: 4 })
        ));
        // An unknown special encoding, and an unknown length marker.
        assert!(matches!(
            Decoder::new(&[0xc4]).string(),
            Err(RdbError::BadLength { at: 0, byte: 0xc4 })
        ));
        assert!(matches!(
            Decoder::new(&[0x82]).len(),
            Err(RdbError::BadLength { at: 0, byte: 0x82 })
        ));
        // An LZF block claiming to expand to 4 GiB.
        assert!(matches!(
            Decoder::new(&[0xc3, 0x02, 0x80, 0xff, 0xff, 0xff, 0xff, 0x01, b'a']).string(),
            Err(RdbError::BadCompression { at: 0 })
        ));
        // A count of more items than bytes left.
        assert!(Decoder::new(&[0x80, 0, 0x10, 0, 0]).count(1).is_err());
    }
}
