//! Redis's RDB format (version 10, Redis 7.0) at the level of bytes: the
//! type and opcode numbers, lengths, strings (as integers, raw or LZF),
//! doubles, and the CRC-64 that closes a file or a DUMP payload. What a
//! value of each type looks like inside it is the keyspace's business
//! (`keyspace::dump`); walking databases into a file is the persistence
//! layer's. Nothing here knows a key or a value.
//!
//! - `encode`: `Encoder`, which appends to a buffer.
//! - `decode`: `Decoder`, which reads from a slice and checks every length
//!   against the bytes left, so no input makes it panic or allocate more
//!   than its own size allows.
//! - `lzf`: the compression RDB strings use.
//! - `listpack`, `intset`: the blobs 7.0 keeps small values in, read and
//!   built; `ziplist`, `zipmap`: the older blobs it still loads, read.
//! - `file`: a whole file's framing (header, aux fields, functions,
//!   databases, the opcodes before a key, EOF and checksum).

mod decode;
mod encode;
mod file;
pub mod intset;
pub mod listpack;
mod lzf;
pub mod ziplist;
pub mod zipmap;

pub use decode::Decoder;
pub use encode::Encoder;
pub use file::{FileReader, FileWriter, Item, KeyMeta, key_prefix};

/// The RDB version Redis 7.0 writes, and the newest it reads.
pub const VERSION: u16 = 10;

/// The file's first bytes, before its four-digit version.
pub const MAGIC: &[u8; 5] = b"REDIS";

/// A value's type byte, as the file and DUMP payloads give it.
pub mod kind {
    pub const STRING: u8 = 0;
    pub const LIST: u8 = 1;
    pub const SET: u8 = 2;
    pub const ZSET: u8 = 3;
    pub const HASH: u8 = 4;
    pub const ZSET_2: u8 = 5;
    pub const HASH_ZIPMAP: u8 = 9;
    pub const LIST_ZIPLIST: u8 = 10;
    pub const SET_INTSET: u8 = 11;
    pub const ZSET_ZIPLIST: u8 = 12;
    pub const HASH_ZIPLIST: u8 = 13;
    pub const LIST_QUICKLIST: u8 = 14;
    pub const STREAM_LISTPACKS: u8 = 15;
    pub const HASH_LISTPACK: u8 = 16;
    pub const ZSET_LISTPACK: u8 = 17;
    pub const LIST_QUICKLIST_2: u8 = 18;
    pub const STREAM_LISTPACKS_2: u8 = 19;
}

/// The bytes between keys that are not a value's type.
pub mod opcode {
    /// A function library's code (Redis 7.0's form).
    pub const FUNCTION_2: u8 = 245;
    /// The release candidates' function form (name, engine, description
    /// and code apart), which 7.0 still loads.
    pub const FUNCTION_PRE_GA: u8 = 246;
    pub const MODULE_AUX: u8 = 247;
    /// The next key's LRU idle time, in seconds.
    pub const IDLE: u8 = 248;
    /// The next key's LFU counter, one byte.
    pub const FREQ: u8 = 249;
    pub const AUX: u8 = 250;
    pub const RESIZE_DB: u8 = 251;
    pub const EXPIRE_TIME_MS: u8 = 252;
    /// Seconds, as files before RDB 3 wrote them.
    pub const EXPIRE_TIME: u8 = 253;
    pub const SELECT_DB: u8 = 254;
    pub const EOF: u8 = 255;
}

/// Redis's CRC-64 (Jones polynomial, reflected), over a whole file before
/// its last eight bytes, or over a DUMP payload before its checksum.
/// Sixteen bytes a step: byte at a time, the checksum cost a snapshot a
/// tenth of its instructions (Redis's own takes eight a step).
pub const CRC64: Crc64 = Crc64::new(&crc::CRC_64_REDIS);

pub type Crc64 = crc::Crc<u64, crc::Table<16>>;

/// The RDB version and checksum that close a DUMP payload.
const PAYLOAD_TRAILER: usize = 2 + 8;

/// Closes a DUMP (or FUNCTION DUMP) payload: the RDB version, 2 bytes
/// little-endian, then the CRC-64 of everything before, 8 bytes
/// little-endian.
pub fn seal_payload(mut body: Vec<u8>) -> Vec<u8> {
    body.extend_from_slice(&VERSION.to_le_bytes());
    let sum = CRC64.checksum(&body);
    body.extend_from_slice(&sum.to_le_bytes());
    body
}

/// The body of a payload `seal_payload` closed, if its version is one
/// this reader loads (10 or older) and its checksum agrees: Redis's
/// `verifyDumpPayload`.
pub fn open_payload(payload: &[u8]) -> Option<&[u8]> {
    let body_len = payload.len().checked_sub(PAYLOAD_TRAILER)?;
    let (signed, sum) = payload.split_at(body_len + 2);
    let version = u16::from_le_bytes([signed[body_len], signed[body_len + 1]]);
    let sum = u64::from_le_bytes(sum.try_into().ok()?);
    (version <= VERSION && CRC64.checksum(signed) == sum).then_some(&signed[..body_len])
}

/// What is wrong with an RDB stream, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RdbError {
    /// The stream ends inside something that needs `wanted` more bytes.
    Truncated { at: usize, wanted: u64 },
    /// A length or special-encoding byte no writer produces.
    BadLength { at: usize, byte: u8 },
    /// An LZF block that does not expand to the length it declares.
    BadCompression { at: usize },
    /// A structure inside a value that does not hold together.
    Corrupt { at: usize, what: &'static str },
    /// A type byte this reader does not know (modules' among them).
    UnknownType { at: usize, kind: u8 },
    /// A list, set, sorted set or hash with nothing in it: no key holds
    /// one, so a file's loader skips it and RESTORE refuses it.
    EmptyKey { at: usize },
    /// Not `REDIS` followed by a version this reader loads.
    BadHeader,
    /// The trailing checksum disagrees with the bytes.
    Checksum { computed: u64, stored: u64 },
}

impl std::fmt::Display for RdbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RdbError::Truncated { at, wanted } => {
                write!(
                    f,
                    "unexpected end of data at offset {at} ({wanted} bytes wanted)"
                )
            }
            RdbError::BadLength { at, byte } => {
                write!(f, "unknown length encoding {byte:#04x} at offset {at}")
            }
            RdbError::BadCompression { at } => {
                write!(f, "damaged LZF string at offset {at}")
            }
            RdbError::Corrupt { at, what } => write!(f, "{what} at offset {at}"),
            RdbError::UnknownType { at, kind } => {
                write!(f, "unknown object type {kind} at offset {at}")
            }
            RdbError::EmptyKey { at } => write!(f, "an empty collection at offset {at}"),
            RdbError::BadHeader => f.write_str("wrong signature or unsupported RDB version"),
            // Redis's words: "expected" is what the bytes add up to.
            RdbError::Checksum { computed, stored } => write!(
                f,
                "Wrong RDB checksum expected: ({computed:x}) got ({stored:x})"
            ),
        }
    }
}

impl std::error::Error for RdbError {}
