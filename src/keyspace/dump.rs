//! DUMP payloads: rlockd's own serialisation of one value, which RESTORE
//! reads back. Not Redis's RDB encoding; like it, the payload ends with a
//! format version and a checksum, so a payload from elsewhere (or a damaged
//! one) is refused before anything is decoded.
//!
//! Layout: a type tag (1 byte), the body, the format version (2 bytes,
//! little-endian), and a CRC-64 (8 bytes, little-endian) of everything
//! before it. Lengths and counts are LEB128 varints; a score is its IEEE
//! 754 bits, little-endian. Decoding checks every length against the bytes
//! left, so no input can make it panic or allocate beyond its own size.

use std::collections::VecDeque;

use bytes::Bytes;

use super::stream::{Consumer, Group, Pending, Stream, StreamId};
use super::{EncodingLimits, HashValue, SetValue, SortedSet, Value};

/// Far from Redis's RDB versions (single digits and tens), so a Redis
/// payload is refused as a wrong version rather than misread.
const VERSION: u16 = 0x8001;
const TRAILER: usize = 2 + 8;

/// Each type's tag. A new type takes the next number, one arm in `dump`
/// and one in `decode_value`.
mod tag {
    pub const STRING: u8 = 0;
    pub const LIST: u8 = 1;
    pub const SET: u8 = 2;
    pub const ZSET: u8 = 3;
    pub const HASH: u8 = 4;
    pub const STREAM: u8 = 5;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpError {
    /// Not a payload of this format version, or damaged.
    VersionOrChecksum,
    /// Intact, but not a value this server can hold.
    BadFormat,
}

pub fn dump(value: &Value) -> Vec<u8> {
    let mut out = Writer(Vec::new());
    match value {
        Value::Str(s, _) => {
            out.byte(tag::STRING);
            out.bytes(s);
        }
        Value::List(items) => {
            out.byte(tag::LIST);
            out.all(items.iter().map(|item| item.as_ref()));
        }
        Value::Set(set) => {
            out.byte(tag::SET);
            out.all(set.members().iter().map(|m| m.as_ref()));
        }
        Value::ZSet(zset) => {
            out.byte(tag::ZSET);
            out.len(zset.len());
            for (member, score) in zset.iter() {
                out.bytes(member);
                out.0.extend_from_slice(&score.to_bits().to_le_bytes());
            }
        }
        Value::Hash(hash) => {
            out.byte(tag::HASH);
            out.len(hash.len());
            for (field, value) in hash.iter() {
                out.bytes(field);
                out.bytes(value);
            }
        }
        Value::Stream(stream) => {
            out.byte(tag::STREAM);
            dump_stream(&mut out, stream);
        }
    }
    let mut payload = out.0;
    payload.extend_from_slice(&VERSION.to_le_bytes());
    let sum = crc64(&payload);
    payload.extend_from_slice(&sum.to_le_bytes());
    payload
}

/// The value in a payload `dump` made, in the form Redis would load it
/// under `limits`.
pub fn restore(payload: &[u8], limits: &EncodingLimits) -> Result<Value, DumpError> {
    let body_len = payload
        .len()
        .checked_sub(TRAILER)
        .ok_or(DumpError::VersionOrChecksum)?;
    let (signed, sum) = payload.split_at(body_len + 2);
    let version = u16::from_le_bytes([signed[body_len], signed[body_len + 1]]);
    let sum = u64::from_le_bytes(sum.try_into().map_err(|_| DumpError::VersionOrChecksum)?);
    if version != VERSION || crc64(signed) != sum {
        return Err(DumpError::VersionOrChecksum);
    }
    let mut body = Reader(&signed[..body_len]);
    let value = decode_value(&mut body, limits).ok_or(DumpError::BadFormat)?;
    match body.0.is_empty() {
        true => Ok(value),
        false => Err(DumpError::BadFormat),
    }
}

/// `None` for anything malformed, and for empty collections, which no key
/// holds.
fn decode_value(r: &mut Reader, limits: &EncodingLimits) -> Option<Value> {
    let value = match r.byte()? {
        tag::STRING => Value::string(Bytes::copy_from_slice(r.bytes()?)),
        tag::LIST => {
            let n = r.count(1)?;
            let items = (0..n)
                .map(|_| r.bytes().map(Bytes::copy_from_slice))
                .collect::<Option<VecDeque<_>>>()?;
            Value::List(items)
        }
        tag::SET => {
            let n = r.count(1)?;
            let members = (0..n).map(|_| r.bytes()).collect::<Option<Vec<_>>>()?;
            Value::Set(Box::new(SetValue::collect(members, limits)))
        }
        tag::ZSET => {
            let n = r.count(9)?;
            let mut zset: Option<SortedSet> = None;
            for _ in 0..n {
                let member = r.bytes()?;
                let score = f64::from_bits(u64::from_le_bytes(r.take(8)?.try_into().ok()?));
                if score.is_nan() {
                    return None;
                }
                zset.get_or_insert_with(|| SortedSet::for_first_member(member, limits))
                    .insert(Bytes::copy_from_slice(member), score, limits);
            }
            Value::ZSet(Box::new(zset?))
        }
        tag::HASH => {
            let n = r.count(2)?;
            let mut hash = HashValue::default();
            for _ in 0..n {
                let field = r.bytes()?;
                hash.insert(field, r.bytes()?, limits);
            }
            Value::Hash(hash)
        }
        tag::STREAM => Value::Stream(Box::new(decode_stream(r)?)),
        _ => return None,
    };
    Some(value)
}

/// A stream: its entries, its counters, and each group with its pending
/// entries and consumers. Restored, its entries fill fresh nodes, as after
/// a Redis RESTORE.
fn dump_stream(out: &mut Writer, stream: &Stream) {
    out.len(stream.len());
    for (id, fields) in stream.range(StreamId::ZERO, StreamId::MAX, false) {
        out.id(id);
        out.all(fields.iter().map(|f| f.as_ref()));
    }
    out.id(stream.last_id);
    out.id(stream.max_deleted);
    out.u64(stream.entries_added);
    out.len(stream.groups.len());
    for (name, group) in &stream.groups {
        out.bytes(name);
        out.id(group.last_id);
        out.u64(group.entries_read as u64);
        out.len(group.pending.len());
        for (id, p) in &group.pending {
            out.id(*id);
            out.bytes(&p.consumer);
            out.u64(p.delivery_time);
            out.u64(p.delivery_count);
        }
        out.len(group.consumers.len());
        for (name, consumer) in &group.consumers {
            out.bytes(name);
            out.u64(consumer.seen_time);
        }
    }
}

fn decode_stream(r: &mut Reader) -> Option<Stream> {
    let mut stream = Stream::default();
    let n = r.count_any(17)?;
    let mut previous = None;
    for _ in 0..n {
        let id = r.id()?;
        if previous.is_some_and(|p| p >= id) {
            return None;
        }
        previous = Some(id);
        let fields = r.count(1)?;
        if fields == 0 || fields % 2 != 0 {
            return None;
        }
        let fields = (0..fields)
            .map(|_| r.bytes().map(Bytes::copy_from_slice))
            .collect::<Option<Vec<_>>>()?;
        // The payload keeps no node boundaries: Redis's default sizes.
        stream.append(id, fields, &EncodingLimits::DEFAULT);
    }
    stream.last_id = r.id()?;
    if previous.is_some_and(|p| p > stream.last_id) {
        return None;
    }
    stream.max_deleted = r.id()?;
    stream.entries_added = r.u64()?;
    for _ in 0..r.count_any(1)? {
        let name = Bytes::copy_from_slice(r.bytes()?);
        let mut group = Group::new(r.id()?, r.u64()? as i64);
        for _ in 0..r.count_any(1)? {
            let id = r.id()?;
            let pending = Pending {
                consumer: Bytes::copy_from_slice(r.bytes()?),
                delivery_time: r.u64()?,
                delivery_count: r.u64()?,
            };
            group.pending.insert(id, pending);
        }
        for _ in 0..r.count_any(1)? {
            let name = Bytes::copy_from_slice(r.bytes()?);
            let consumer = Consumer {
                seen_time: r.u64()?,
                pending: Default::default(),
            };
            group.consumers.insert(name, consumer);
        }
        // Each pending entry belongs to a consumer of its group.
        for (id, p) in &group.pending {
            group.consumers.get_mut(&p.consumer)?.pending.insert(*id);
        }
        stream.groups.insert(name, group);
    }
    Some(stream)
}

struct Writer(Vec<u8>);

impl Writer {
    fn byte(&mut self, b: u8) {
        self.0.push(b);
    }

    fn len(&mut self, mut n: usize) {
        while n >= 0x80 {
            self.0.push(n as u8 | 0x80);
            n >>= 7;
        }
        self.0.push(n as u8);
    }

    fn bytes(&mut self, b: &[u8]) {
        self.len(b.len());
        self.0.extend_from_slice(b);
    }

    fn u64(&mut self, n: u64) {
        self.0.extend_from_slice(&n.to_le_bytes());
    }

    fn id(&mut self, id: StreamId) {
        self.u64(id.ms);
        self.u64(id.seq);
    }

    fn all<'b>(&mut self, items: impl ExactSizeIterator<Item = &'b [u8]>) {
        self.len(items.len());
        items.for_each(|item| self.bytes(item));
    }
}

struct Reader<'p>(&'p [u8]);

impl<'p> Reader<'p> {
    fn byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn take(&mut self, n: usize) -> Option<&'p [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn id(&mut self) -> Option<StreamId> {
        Some(StreamId {
            ms: self.u64()?,
            seq: self.u64()?,
        })
    }

    fn varint(&mut self) -> Option<usize> {
        let mut n: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            n |= u64::from(b & 0x7f).checked_shl(shift)?;
            if b & 0x80 == 0 {
                return usize::try_from(n).ok();
            }
        }
        None
    }

    fn bytes(&mut self) -> Option<&'p [u8]> {
        let n = self.varint()?;
        self.take(n)
    }

    /// A non-zero element count, each element at least `min_size` bytes:
    /// a count the remaining bytes cannot hold is refused up front.
    fn count(&mut self, min_size: usize) -> Option<usize> {
        self.count_any(min_size).filter(|&n| n > 0)
    }

    /// A count that may be 0 (a stream may be empty, have no groups…).
    fn count_any(&mut self, min_size: usize) -> Option<usize> {
        let n = self.varint()?;
        (n <= self.0.len() / min_size).then_some(n)
    }
}

/// CRC-64 with the ECMA-182 polynomial, bit-reflected (as in XZ).
fn crc64(data: &[u8]) -> u64 {
    const POLY: u64 = 0xC96C_5795_D787_0F42;
    const TABLE: [u64; 256] = {
        let mut table = [0u64; 256];
        let mut i = 0;
        while i < 256 {
            let mut crc = i as u64;
            let mut bit = 0;
            while bit < 8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ POLY
                } else {
                    crc >> 1
                };
                bit += 1;
            }
            table[i] = crc;
            i += 1;
        }
        table
    };
    !data.iter().fold(!0u64, |crc, &b| {
        TABLE[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const LIMITS: EncodingLimits = EncodingLimits::DEFAULT;

    fn samples() -> Vec<Value> {
        let mut hash = HashValue::default();
        hash.insert(b"f", b"v", &LIMITS);
        hash.insert(b"", b"\x00\xff", &LIMITS);
        let mut big_hash = HashValue::default();
        for i in 0..300 {
            big_hash.insert(format!("field{i}").as_bytes(), &[b'x'; 100], &LIMITS);
        }
        let mut zset = SortedSet::default();
        zset.insert(Bytes::from("a"), 1.5, &LIMITS);
        zset.insert(Bytes::from("b"), f64::NEG_INFINITY, &LIMITS);
        zset.insert(Bytes::from("c"), -0.0, &LIMITS);
        let long_member = vec![b'm'; 100];
        let mut long_zset = SortedSet::for_first_member(&long_member, &LIMITS);
        long_zset.insert(Bytes::from(long_member), -0.0, &LIMITS);
        vec![
            Value::string(Bytes::from("hello")),
            Value::string(Bytes::new()),
            Value::string(Bytes::from(vec![0u8; 70_000])),
            Value::List(["a", "", "c"].map(Bytes::from).into()),
            Value::Set(Box::new(SetValue::collect(
                [&b"1"[..], b"2", b"300"],
                &LIMITS,
            ))),
            Value::Set(Box::new(SetValue::collect([&b"x"[..], b"1"], &LIMITS))),
            Value::ZSet(Box::new(zset)),
            Value::ZSet(Box::new(long_zset)),
            Value::Hash(hash),
            Value::Hash(big_hash),
        ]
    }

    #[test]
    fn every_type_round_trips() {
        for value in samples() {
            let payload = dump(&value);
            assert_eq!(restore(&payload, &LIMITS), Ok(value));
        }
    }

    #[test]
    fn damaged_payloads_are_refused() {
        let payload = dump(&Value::string(Bytes::from("hello")));
        for i in 0..payload.len() {
            let mut bad = payload.clone();
            bad[i] ^= 0x01;
            assert_eq!(
                restore(&bad, &LIMITS),
                Err(DumpError::VersionOrChecksum),
                "byte {i}"
            );
        }
        assert_eq!(
            restore(&payload[..payload.len() - 1], &LIMITS),
            Err(DumpError::VersionOrChecksum)
        );
        assert_eq!(restore(b"", &LIMITS), Err(DumpError::VersionOrChecksum));
    }

    /// A payload whose trailer is right but whose body is not.
    fn signed(body: &[u8]) -> Vec<u8> {
        let mut p = body.to_vec();
        p.extend_from_slice(&VERSION.to_le_bytes());
        let sum = crc64(&p);
        p.extend_from_slice(&sum.to_le_bytes());
        p
    }

    #[test]
    fn intact_nonsense_is_a_bad_format() {
        for body in [
            &b""[..],
            b"\x09",
            b"\x00\x05ab",
            b"\x00\x01ab",
            b"\x01\x00",
            b"\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
            b"\x03\x01\x01a\x00\x00\x00\x00\x00\x00\xf8\x7f",
            b"\x04\x01\x01f",
        ] {
            assert_eq!(
                restore(&signed(body), &LIMITS),
                Err(DumpError::BadFormat),
                "{body:?}"
            );
        }
    }

    #[test]
    fn checksum_is_crc64_xz() {
        // The XZ variant's published check value.
        assert_eq!(crc64(b"123456789"), 0x995D_C9BB_DF19_39FA);
    }

    proptest! {
        #[test]
        fn any_bytes_decode_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = restore(&bytes, &LIMITS);
            let _ = restore(&signed(&bytes), &LIMITS);
        }
    }
}
