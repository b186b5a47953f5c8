//! A whole RDB file's framing: the `REDIS0010` header, aux fields,
//! function libraries, each database's SELECTDB and RESIZEDB, the opcodes
//! that go before a key (its deadline, LRU idle time or LFU counter), and
//! the EOF byte with the CRC-64 that closes the file. What a key's value
//! looks like is the caller's business: the writer takes encoded bytes
//! and the reader stops before each value, for the caller to decode it
//! from `FileReader::decoder`.

use std::borrow::Cow;
use std::io::Write;

use super::{CRC64, Crc64, Decoder, Encoder, MAGIC, RdbError, VERSION, opcode};

/// What goes before a key's type byte.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyMeta {
    /// Absolute deadline, Unix milliseconds.
    pub expire_ms: Option<i64>,
    /// Seconds since last use (written under an LRU policy).
    pub idle: Option<u64>,
    /// LFU counter (written under an LFU policy).
    pub freq: Option<u8>,
}

/// Writes a file to a sink as it is built, in the order Redis writes
/// one, keeping the CRC-64 of every byte sent: no part of the file but
/// the piece at hand is held in memory, so a snapshot of any size costs
/// the same few buffers.
pub struct FileWriter<W: Write> {
    sink: W,
    /// Where each framing piece is encoded before it is sent.
    scratch: Encoder,
    crc: crc::Digest<'static, u64, crc::Table<16>>,
}

/// `CRC64` where a running digest can borrow it for as long as a file.
static FILE_CRC: Crc64 = CRC64;

impl<W: Write> FileWriter<W> {
    /// A file whose strings LZF-compresses when `compress`
    /// (`rdbcompression`), its header sent.
    pub fn new(sink: W, compress: bool) -> std::io::Result<FileWriter<W>> {
        let mut file = FileWriter {
            sink,
            scratch: Encoder::new(compress),
            crc: FILE_CRC.digest(),
        };
        file.scratch.out.extend_from_slice(MAGIC);
        file.scratch
            .out
            .extend_from_slice(format!("{VERSION:04}").as_bytes());
        file.send_scratch()?;
        Ok(file)
    }

    /// An aux field; a value that is an integer's text is stored as one,
    /// as Redis stores `redis-bits`, `ctime`, `used-mem`.
    pub fn aux(&mut self, name: &str, value: &[u8]) -> std::io::Result<()> {
        self.scratch.byte(opcode::AUX);
        self.scratch.string(name.as_bytes());
        self.scratch.string(value);
        self.send_scratch()
    }

    /// One function library, as its source code.
    pub fn function(&mut self, code: &[u8]) -> std::io::Result<()> {
        self.scratch.byte(opcode::FUNCTION_2);
        self.scratch.string(code);
        self.send_scratch()
    }

    /// Starts database `db`, with its sizes as hints for the reader.
    pub fn select_db(&mut self, db: u64, keys: u64, expires: u64) -> std::io::Result<()> {
        self.scratch.byte(opcode::SELECT_DB);
        self.scratch.len(db);
        self.scratch.byte(opcode::RESIZE_DB);
        self.scratch.len(keys);
        self.scratch.len(expires);
        self.send_scratch()
    }

    /// Bytes already framed as keys (see `key_prefix`).
    pub fn keys(&mut self, encoded: &[u8]) -> std::io::Result<()> {
        self.crc.update(encoded);
        self.sink.write_all(encoded)
    }

    /// Closes the file: EOF, then the CRC-64 of all before it, or zeros
    /// when `checksum` is off (`rdbchecksum no`), which readers skip.
    /// Gives the sink back, flushed.
    pub fn finish(mut self, checksum: bool) -> std::io::Result<W> {
        self.scratch.byte(opcode::EOF);
        self.send_scratch()?;
        let crc = if checksum { self.crc.finalize() } else { 0 };
        self.sink.write_all(&crc.to_le_bytes())?;
        self.sink.flush()?;
        Ok(self.sink)
    }

    fn send_scratch(&mut self) -> std::io::Result<()> {
        let FileWriter { sink, scratch, crc } = self;
        crc.update(&scratch.out);
        let sent = sink.write_all(&scratch.out);
        scratch.out.clear();
        sent
    }
}

/// Writes the opcodes that go before a key's type byte.
pub fn key_prefix(enc: &mut Encoder, meta: &KeyMeta) {
    if let Some(at) = meta.expire_ms {
        enc.byte(opcode::EXPIRE_TIME_MS);
        enc.millis(at);
    }
    if let Some(idle) = meta.idle {
        enc.byte(opcode::IDLE);
        enc.len(idle);
    }
    if let Some(freq) = meta.freq {
        enc.byte(opcode::FREQ);
        enc.byte(freq);
    }
}

/// One step through a file.
#[derive(Debug, PartialEq)]
pub enum Item<'a> {
    Aux {
        name: Cow<'a, [u8]>,
        value: Cow<'a, [u8]>,
    },
    SelectDb(u64),
    ResizeDb {
        keys: u64,
        expires: u64,
    },
    /// A function library's code.
    Function(Cow<'a, [u8]>),
    /// A key; its value, of type `kind`, is next in `decoder()`, and must
    /// be read before `next` is called again.
    Key {
        kind: u8,
        key: Cow<'a, [u8]>,
        meta: KeyMeta,
    },
    /// The EOF opcode; `finish` checks what follows.
    End,
}

/// Reads a file from memory, item by item.
pub struct FileReader<'a> {
    dec: Decoder<'a>,
    version: u16,
}

/// The oldest format this reader takes: Redis 7.0 loads every version
/// from 1 up, and so does this.
const OLDEST: u16 = 1;
/// Versions from this one on end with a checksum.
const CHECKSUM_SINCE: u16 = 5;

impl<'a> FileReader<'a> {
    /// Checks the header: `REDIS` and a version up to Redis 7.0's.
    pub fn open(data: &'a [u8]) -> Result<FileReader<'a>, RdbError> {
        let mut dec = Decoder::new(data);
        let header = dec.take(9).map_err(|_| RdbError::BadHeader)?;
        if &header[..5] != MAGIC {
            return Err(RdbError::BadHeader);
        }
        let version = std::str::from_utf8(&header[5..])
            .ok()
            .and_then(|v| v.parse::<u16>().ok())
            .filter(|v| (OLDEST..=VERSION).contains(v))
            .ok_or(RdbError::BadHeader)?;
        Ok(FileReader { dec, version })
    }

    /// Where a key's value is read from.
    pub fn decoder(&mut self) -> &mut Decoder<'a> {
        &mut self.dec
    }

    pub fn next(&mut self) -> Result<Item<'a>, RdbError> {
        let mut meta = KeyMeta::default();
        loop {
            let at = self.dec.pos();
            match self.dec.byte()? {
                opcode::EXPIRE_TIME_MS => meta.expire_ms = Some(self.dec.millis()?),
                opcode::EXPIRE_TIME => {
                    meta.expire_ms = Some(i64::from(self.dec.u32_le()? as i32) * 1000)
                }
                opcode::IDLE => meta.idle = Some(self.dec.len()?),
                opcode::FREQ => meta.freq = Some(self.dec.byte()?),
                opcode::AUX => {
                    let name = self.dec.string()?;
                    let value = self.dec.string()?;
                    return Ok(Item::Aux { name, value });
                }
                opcode::SELECT_DB => return Ok(Item::SelectDb(self.dec.len()?)),
                opcode::RESIZE_DB => {
                    let keys = self.dec.len()?;
                    let expires = self.dec.len()?;
                    return Ok(Item::ResizeDb { keys, expires });
                }
                opcode::FUNCTION_2 => return Ok(Item::Function(self.dec.string()?)),
                opcode::FUNCTION_PRE_GA => {
                    return Err(RdbError::Corrupt {
                        at,
                        what: "Pre-release function format not supported",
                    });
                }
                opcode::MODULE_AUX => {
                    return Err(RdbError::UnknownType {
                        at,
                        kind: opcode::MODULE_AUX,
                    });
                }
                opcode::EOF => return Ok(Item::End),
                kind => {
                    let key = self.dec.string()?;
                    return Ok(Item::Key { kind, key, meta });
                }
            }
        }
    }

    /// After `Item::End`: where the file ends, past its checksum if it
    /// has one (an old AOF's commands may follow its RDB preamble).
    pub fn end_offset(&self) -> usize {
        let checksum = if self.version < CHECKSUM_SINCE { 0 } else { 8 };
        self.dec.pos() + checksum
    }

    /// After `Item::End`: checks the trailing CRC-64 when `verify`
    /// (`rdbchecksum`) and the file has one (zeros mean its writer had
    /// checksums off). Returns whether a checksum was checked.
    pub fn finish(mut self, verify: bool) -> Result<bool, RdbError> {
        if self.version < CHECKSUM_SINCE {
            return Ok(false);
        }
        let computed = CRC64.checksum(self.dec.consumed());
        let stored = self.dec.u64_le()?;
        if !verify || stored == 0 {
            return Ok(false);
        }
        if computed != stored {
            return Err(RdbError::Checksum { computed, stored });
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(checksum: bool) -> Vec<u8> {
        let mut file = FileWriter::new(Vec::new(), true).unwrap();
        file.aux("redis-ver", b"7.0.15").unwrap();
        file.aux("redis-bits", b"64").unwrap();
        file.function(b"#!lua name=lib\nredis.register_function('f', function() return 1 end)")
            .unwrap();
        file.select_db(1, 1, 1).unwrap();
        let mut enc = Encoder::new(false);
        key_prefix(
            &mut enc,
            &KeyMeta {
                expire_ms: Some(1_700_000_000_123),
                idle: Some(7),
                freq: None,
            },
        );
        enc.byte(super::super::kind::STRING);
        enc.string(b"k");
        enc.string(b"v");
        file.keys(&enc.out).unwrap();
        file.finish(checksum).unwrap()
    }

    #[test]
    fn a_file_reads_back_item_by_item() {
        let data = sample(true);
        assert!(data.starts_with(b"REDIS0010"));
        let mut reader = FileReader::open(&data).unwrap();
        assert!(matches!(reader.next().unwrap(), Item::Aux { name, value }
            if &*name == b"redis-ver" && &*value == b"7.0.15"));
        assert!(matches!(reader.next().unwrap(), Item::Aux { value, .. } if &*value == b"64"));
        assert!(
            matches!(reader.next().unwrap(), Item::Function(code) if code.starts_with(b"#!lua"))
        );
        assert_eq!(reader.next().unwrap(), Item::SelectDb(1));
        assert_eq!(
            reader.next().unwrap(),
            Item::ResizeDb {
                keys: 1,
                expires: 1
            }
        );
        let Item::Key { kind, key, meta } = reader.next().unwrap() else {
            panic!("a key");
        };
        assert_eq!((kind, &*key), (0, &b"k"[..]));
        assert_eq!(meta.expire_ms, Some(1_700_000_000_123));
        assert_eq!(meta.idle, Some(7));
        assert_eq!(&*reader.decoder().string().unwrap(), b"v");
        assert_eq!(reader.next().unwrap(), Item::End);
        assert_eq!(reader.finish(true), Ok(true));
    }

    #[test]
    fn a_damaged_file_fails_its_checksum_and_zeros_skip_it() {
        let mut data = sample(true);
        let flip = data.len() - 12;
        data[flip] ^= 1;
        let mut reader = FileReader::open(&data).unwrap();
        let result = loop {
            match reader.next() {
                Ok(Item::End) => break reader.finish(true),
                Ok(Item::Key { .. }) => {
                    reader.decoder().string().unwrap();
                }
                Ok(_) => {}
                Err(e) => break Err(e),
            }
        };
        assert!(
            matches!(result, Err(RdbError::Checksum { .. })),
            "{result:?}"
        );
        let data = sample(false);
        assert!(data.ends_with(&[opcode::EOF, 0, 0, 0, 0, 0, 0, 0, 0]));
        assert_eq!(
            FileReader::open(b"REDIS0011").err(),
            Some(RdbError::BadHeader)
        );
        assert_eq!(
            FileReader::open(b"REDIX0010").err(),
            Some(RdbError::BadHeader)
        );
        assert_eq!(FileReader::open(b"RED").err(), Some(RdbError::BadHeader));
    }
}
