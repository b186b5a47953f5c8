//! DUMP and RESTORE payloads, and each value's body in RDB files: Redis
//! 7.0's RDB encoding of one value (`write_value`, `read_value`), which
//! `persist` also uses for whole files. A payload is the value's type byte
//! and body, then the RDB version (2 bytes, little-endian) and a CRC-64
//! (8 bytes, little-endian) of everything before it, exactly as Redis
//! 7.0.15 writes and reads it.
//!
//! Written, a value takes the encoding Redis would give it (its OBJECT
//! ENCODING): strings as integers, raw or LZF; lists as a quicklist of
//! listpacks; small hashes and sorted sets as listpacks; small integer
//! sets as intsets; streams as their listpack nodes with groups, PEL and
//! consumers. Read, every encoding 7.0 loads is taken, the older ones
//! (zipmap, ziplist, quicklist of ziplists, plain lists and text scores)
//! included, and the value takes the form Redis would give it under the
//! server's limits. Every length and count is checked, so no payload makes
//! the reader panic or allocate beyond its own size.

use std::collections::VecDeque;
use std::ops::Range;

use bytes::Bytes;

use super::limits::LIST_NODE_BYTES;
use super::stream::{Consumer, Group, Pending, Stream, StreamId};
use super::{EncodingLimits, HashValue, SetValue, SortedSet, Value};
use crate::persist::rdb::{
    self, Decoder, Encoder, RdbError, intset, kind, listpack, ziplist, zipmap,
};
use crate::util::{format_double, parse_f64, printed_integer};

/// A quicklist node's container (`RDB_TYPE_LIST_QUICKLIST_2`): one
/// element as it is, or a listpack of several.
const CONTAINER_PLAIN: u64 = 1;
const CONTAINER_PACKED: u64 = 2;

/// Redis's estimate of an element's listpack overhead when it decides
/// whether a quicklist node takes one more (`SIZE_ESTIMATE_OVERHEAD`).
const NODE_ELEMENT_OVERHEAD: usize = 8;

/// A stream entry's flags in its node's listpack.
const ENTRY_DELETED: i64 = 1;
const ENTRY_SAME_FIELDS: i64 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpError {
    /// A version above 10, or a checksum that disagrees.
    VersionOrChecksum,
    /// Intact, but not a value this server can hold.
    BadFormat,
}

thread_local! {
    /// One encoder per thread for DUMP: its LZF table (512 KB, made on
    /// the first long string) is then made once, not once per payload.
    static ENCODER: std::cell::RefCell<Encoder> = std::cell::RefCell::new(Encoder::new(true));
}

/// `value` in RDB form (type byte and body) from this thread's encoder.
fn encoded(value: &Value) -> Vec<u8> {
    ENCODER.with_borrow_mut(|enc| {
        enc.out.clear();
        write_value(enc, value);
        std::mem::take(&mut enc.out)
    })
}

/// The DUMP payload of `value`.
pub fn dump(value: &Value) -> Vec<u8> {
    rdb::seal_payload(encoded(value))
}

/// The value in a DUMP payload, in the form Redis would load it under
/// `limits`.
pub fn restore(payload: &[u8], limits: &EncodingLimits) -> Result<Value, DumpError> {
    let body = rdb::open_payload(payload).ok_or(DumpError::VersionOrChecksum)?;
    let mut dec = Decoder::new(body);
    let value = dec
        .byte()
        .and_then(|kind| read_value(kind, &mut dec, limits))
        .map_err(|_| DumpError::BadFormat)?;
    // Bytes after the value would be lost: refused rather than ignored.
    match dec.is_empty() {
        true => Ok(value),
        false => Err(DumpError::BadFormat),
    }
}

/// Appends the value's RDB type byte and body, in the encoding Redis 7.0
/// gives such a value.
pub fn write_value(enc: &mut Encoder, value: &Value) {
    enc.byte(value_kind(value));
    write_body(enc, value);
}

/// The RDB type byte of the encoding Redis 7.0 gives such a value.
pub fn value_kind(value: &Value) -> u8 {
    match value {
        Value::Str(..) => kind::STRING,
        Value::List(_) => kind::LIST_QUICKLIST_2,
        Value::Set(set) => match &**set {
            SetValue::Ints { .. } => kind::SET_INTSET,
            SetValue::Table(_) => kind::SET,
        },
        Value::ZSet(zset) if zset.is_compact() => kind::ZSET_LISTPACK,
        Value::ZSet(_) => kind::ZSET_2,
        Value::Hash(hash) if hash.is_listpack() => kind::HASH_LISTPACK,
        Value::Hash(_) => kind::HASH,
        Value::Stream(_) => kind::STREAM_LISTPACKS_2,
    }
}

/// The value's RDB body, in the encoding `value_kind` names: a file
/// writes the key's name between the two.
pub fn write_body(enc: &mut Encoder, value: &Value) {
    match value {
        Value::Str(s, _) => enc.string(s),
        Value::List(items) => {
            let spans = quicklist_spans(items);
            enc.len(spans.len() as u64);
            for span in spans {
                enc.len(CONTAINER_PACKED);
                enc.listpack(|lp| items.range(span).for_each(|item| lp.push(item)));
            }
        }
        Value::Set(set) => match &**set {
            SetValue::Ints { items, width } => enc.intset(items, *width),
            SetValue::Table(members) => {
                enc.len(members.len() as u64);
                members.iter().for_each(|m| enc.string(m));
            }
        },
        Value::ZSet(zset) if zset.is_compact() => enc.listpack(|lp| {
            for (member, score) in zset.iter() {
                lp.push(member);
                // Redis's listpack holds a whole score as that integer.
                match printed_integer(score, 17) {
                    Some(n) => lp.push_int(n),
                    None => lp.push(format_double(score).as_bytes()),
                }
            }
        }),
        Value::ZSet(zset) => {
            enc.len(zset.len() as u64);
            // Highest first, as Redis walks its skiplist from the tail so
            // that a loader inserts each member at the head.
            for (member, score) in zset.iter().rev() {
                enc.string(member);
                enc.binary_double(score);
            }
        }
        Value::Hash(hash) if hash.is_listpack() => enc.listpack(|lp| {
            for (field, value) in hash.iter() {
                lp.push(field);
                lp.push(value);
            }
        }),
        Value::Hash(hash) => {
            enc.len(hash.len() as u64);
            for (field, value) in hash.iter() {
                enc.string(field);
                enc.string(value);
            }
        }
        Value::Stream(stream) => write_stream(enc, stream),
    }
}

/// DEBUG OBJECT's `serializedlength`: the bytes of the value's RDB body,
/// its type byte not counted, as Redis's `rdbSavedObjectLen`.
pub fn serialized_len(value: &Value) -> usize {
    encoded(value).len() - 1
}

/// The size of each listpack a list is cut into (DEBUG OBJECT's
/// `ql_nodes` and `ql_uncompressed_size`).
pub fn list_node_sizes(items: &VecDeque<Bytes>) -> Vec<usize> {
    quicklist_spans(items)
        .into_iter()
        .map(|span| {
            let body: usize = items.range(span).map(|i| listpack::element_size(i)).sum();
            listpack::EMPTY_SIZE + body
        })
        .collect()
}

/// Where a list is cut into listpacks, as Redis's default node size
/// (`list-max-listpack-size -2`, 8 KB) cuts a list pushed at its tail:
/// the ranges of items each node holds, known before any is built.
fn quicklist_spans(items: &VecDeque<Bytes>) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    let (mut start, mut size) = (0, listpack::EMPTY_SIZE);
    for (at, item) in items.iter().enumerate() {
        // Redis weighs the node's whole listpack, its end byte included.
        if at > start && size + item.len() + NODE_ELEMENT_OVERHEAD > LIST_NODE_BYTES as usize {
            spans.push(start..at);
            (start, size) = (at, listpack::EMPTY_SIZE);
        }
        size += listpack::element_size(item);
    }
    if items.len() > start {
        spans.push(start..items.len());
    }
    spans
}

/// A stream id as a radix tree key and a PEL entry hold it: 128 bits,
/// big-endian.
fn id_key(id: StreamId) -> [u8; 16] {
    let mut key = [0; 16];
    key[..8].copy_from_slice(&id.ms.to_be_bytes());
    key[8..].copy_from_slice(&id.seq.to_be_bytes());
    key
}

fn write_id(enc: &mut Encoder, id: StreamId) {
    enc.len(id.ms);
    enc.len(id.seq);
}

fn write_stream(enc: &mut Encoder, stream: &Stream) {
    let nodes: Vec<(StreamId, Vec<u8>)> = stream
        .node_spans()
        .filter_map(|(master, last)| {
            let entries: Vec<(StreamId, &[Bytes])> = stream.range(master, last, false).collect();
            (!entries.is_empty()).then(|| (master, stream_node(master, &entries)))
        })
        .collect();
    enc.len(nodes.len() as u64);
    for (master, node) in nodes {
        enc.string(&id_key(master));
        enc.string(&node);
    }
    enc.len(stream.len() as u64);
    write_id(enc, stream.last_id);
    write_id(enc, stream.first_id());
    write_id(enc, stream.max_deleted);
    enc.len(stream.entries_added);
    enc.len(stream.groups.len() as u64);
    for (name, group) in &stream.groups {
        enc.string(name);
        write_id(enc, group.last_id);
        // Redis stores its -1 ("unknown") as the 64-bit length it casts to.
        enc.len(group.entries_read as u64);
        enc.len(group.pending.len() as u64);
        for (id, pending) in &group.pending {
            enc.out.extend_from_slice(&id_key(*id));
            enc.millis(pending.delivery_time as i64);
            enc.len(pending.delivery_count);
        }
        enc.len(group.consumers.len() as u64);
        for (name, consumer) in &group.consumers {
            enc.string(name);
            enc.millis(consumer.seen_time as i64);
            enc.len(consumer.pending.len() as u64);
            for id in &consumer.pending {
                enc.out.extend_from_slice(&id_key(*id));
            }
        }
    }
}

/// One node's listpack: the master entry (live and deleted counts, the
/// first entry's field names, a 0), then each entry as its flags, its id
/// relative to the master id, its fields (just the values when they are
/// the master's fields) and its element count.
fn stream_node(master: StreamId, entries: &[(StreamId, &[Bytes])]) -> Vec<u8> {
    let names = |fields: &[Bytes]| fields.iter().step_by(2).cloned().collect::<Vec<Bytes>>();
    let master_fields = names(entries[0].1);
    let mut lp = listpack::Builder::default();
    lp.push_int(entries.len() as i64);
    lp.push_int(0);
    lp.push_int(master_fields.len() as i64);
    master_fields.iter().for_each(|f| lp.push(f));
    lp.push_int(0);
    for (id, fields) in entries {
        let same = names(fields) == master_fields;
        lp.push_int(if same { ENTRY_SAME_FIELDS } else { 0 });
        lp.push_int(id.ms.wrapping_sub(master.ms) as i64);
        lp.push_int(id.seq.wrapping_sub(master.seq) as i64);
        let pairs = fields.len() / 2;
        if same {
            fields.iter().skip(1).step_by(2).for_each(|v| lp.push(v));
            lp.push_int(pairs as i64 + 3);
        } else {
            lp.push_int(pairs as i64);
            fields.iter().for_each(|f| lp.push(f));
            lp.push_int(2 * pairs as i64 + 4);
        }
    }
    lp.finish()
}

/// Reads the body of a value whose type byte `kind` was just read (any
/// encoding Redis 7.0 loads), in the form Redis gives it under `limits`.
/// An empty collection is `RdbError::EmptyKey`: a file's loader skips it.
pub fn read_value(
    kind: u8,
    dec: &mut Decoder<'_>,
    limits: &EncodingLimits,
) -> Result<Value, RdbError> {
    let at = dec.pos();
    let value = match kind {
        kind::STRING => Value::string(owned(dec.string()?)),
        kind::LIST => {
            let n = dec.count(1)?;
            let items = (0..n)
                .map(|_| dec.string().map(owned))
                .collect::<Result<VecDeque<_>, _>>()?;
            Value::List(items)
        }
        kind::LIST_QUICKLIST | kind::LIST_QUICKLIST_2 => Value::List(read_quicklist(kind, dec)?),
        kind::LIST_ZIPLIST => {
            let (blob, at) = blob(dec)?;
            Value::List(
                ziplist::read(&blob, at)?
                    .into_iter()
                    .map(item_bytes)
                    .collect(),
            )
        }
        kind::SET => {
            let n = dec.count(1)?;
            let mut members = Vec::with_capacity(n);
            for _ in 0..n {
                members.push(dec.string()?);
            }
            set_of(members.iter().map(|m| &m[..]), limits, at)?
        }
        kind::SET_INTSET => {
            let (blob, at) = blob(dec)?;
            let (items, width) = intset::read(&blob, at)?;
            if limits.intset_len_fits(items.len()) {
                Value::Set(Box::new(SetValue::Ints { items, width }))
            } else {
                let members: Vec<Bytes> =
                    items.iter().map(|n| crate::util::i64_bytes(*n)).collect();
                set_of(members.iter().map(|m| &m[..]), limits, at)?
            }
        }
        kind::ZSET | kind::ZSET_2 => {
            let n = dec.count(if kind == kind::ZSET { 2 } else { 9 })?;
            let mut pairs = Vec::with_capacity(n);
            for _ in 0..n {
                let member = owned(dec.string()?);
                let score = match kind {
                    kind::ZSET => dec.text_double()?,
                    _ => dec.binary_double()?,
                };
                pairs.push((member, score));
            }
            zset_of(pairs, limits, at)?
        }
        kind::ZSET_ZIPLIST | kind::ZSET_LISTPACK => {
            let (blob, at) = blob(dec)?;
            let mut pairs = Vec::new();
            for (member, score) in packed_pairs(&blob, kind == kind::ZSET_ZIPLIST, at)? {
                let score = match score {
                    listpack::Item::Int(n) => n as f64,
                    listpack::Item::Str(text) => parse_f64(text).ok_or(RdbError::Corrupt {
                        at,
                        what: "a score that is not a number",
                    })?,
                };
                pairs.push((item_bytes(member), score));
            }
            // Redis converts a packed sorted set it loads by its length
            // alone: a member longer than the limit stays packed.
            let by_length = EncodingLimits {
                zset_max_listpack_value: u64::MAX,
                ..*limits
            };
            zset_of(pairs, &by_length, at)?
        }
        kind::HASH => {
            let n = dec.count(2)?;
            let mut pairs = Vec::with_capacity(n);
            for _ in 0..n {
                pairs.push((dec.string()?, dec.string()?));
            }
            hash_of(pairs.iter().map(|(f, v)| (&f[..], &v[..])), limits, at)?
        }
        kind::HASH_ZIPMAP => {
            let (blob, at) = blob(dec)?;
            hash_of(zipmap::read(&blob, at)?.into_iter(), limits, at)?
        }
        kind::HASH_ZIPLIST | kind::HASH_LISTPACK => {
            let (blob, at) = blob(dec)?;
            let pairs: Vec<(Bytes, Bytes)> = packed_pairs(&blob, kind == kind::HASH_ZIPLIST, at)?
                .into_iter()
                .map(|(f, v)| (item_bytes(f), item_bytes(v)))
                .collect();
            // By its length alone, as a packed sorted set.
            let by_length = EncodingLimits {
                hash_max_listpack_value: u64::MAX,
                ..*limits
            };
            hash_of(pairs.iter().map(|(f, v)| (&f[..], &v[..])), &by_length, at)?
        }
        kind::STREAM_LISTPACKS | kind::STREAM_LISTPACKS_2 => Value::Stream(Box::new(read_stream(
            kind == kind::STREAM_LISTPACKS_2,
            dec,
        )?)),
        _ => return Err(RdbError::UnknownType { at, kind }),
    };
    let empty = match &value {
        Value::Str(..) | Value::Stream(_) => false,
        Value::List(items) => items.is_empty(),
        Value::Set(set) => set.is_empty(),
        Value::ZSet(zset) => zset.is_empty(),
        Value::Hash(hash) => hash.is_empty(),
    };
    match empty {
        true => Err(RdbError::EmptyKey { at }),
        false => Ok(value),
    }
}

fn owned(bytes: std::borrow::Cow<'_, [u8]>) -> Bytes {
    Bytes::from(bytes.into_owned())
}

fn item_bytes(item: listpack::Item<'_>) -> Bytes {
    owned(item.bytes())
}

/// A string holding a blob (listpack, ziplist, intset, zipmap), and where
/// it started.
fn blob<'a>(dec: &mut Decoder<'a>) -> Result<(std::borrow::Cow<'a, [u8]>, usize), RdbError> {
    let at = dec.pos();
    Ok((dec.string()?, at))
}

/// The elements of a listpack (or ziplist) holding pairs.
fn packed_pairs(
    blob: &[u8],
    ziplist: bool,
    at: usize,
) -> Result<Vec<(listpack::Item<'_>, listpack::Item<'_>)>, RdbError> {
    let items = match ziplist {
        true => ziplist::read(blob, at)?,
        false => listpack::read(blob, at)?,
    };
    if items.len() % 2 != 0 {
        return Err(RdbError::Corrupt {
            at,
            what: "pairs with an odd number of elements",
        });
    }
    Ok(items.chunks_exact(2).map(|p| (p[0], p[1])).collect())
}

fn duplicate(at: usize) -> RdbError {
    RdbError::Corrupt {
        at,
        what: "a member given twice",
    }
}

/// A set as Redis loads one: an intset while every member is an integer
/// and they are few, else a table (from the start when they are many, so
/// the members keep the payload's order).
fn set_of<'m>(
    members: impl ExactSizeIterator<Item = &'m [u8]>,
    limits: &EncodingLimits,
    at: usize,
) -> Result<Value, RdbError> {
    let mut set = match limits.intset_len_fits(members.len()) {
        true => SetValue::empty_ints(),
        false => SetValue::Table(Default::default()),
    };
    for member in members {
        if !set.insert(member, limits) {
            return Err(duplicate(at));
        }
    }
    Ok(Value::Set(Box::new(set)))
}

fn zset_of(
    pairs: Vec<(Bytes, f64)>,
    limits: &EncodingLimits,
    at: usize,
) -> Result<Value, RdbError> {
    let Some((first, _)) = pairs.first() else {
        return Ok(Value::ZSet(Box::default()));
    };
    let mut zset = SortedSet::for_first_member(first, limits);
    for (member, score) in pairs {
        if score.is_nan() {
            return Err(RdbError::Corrupt {
                at,
                what: "a score that is not a number",
            });
        }
        if !zset.insert(member, score, limits) {
            return Err(duplicate(at));
        }
    }
    Ok(Value::ZSet(Box::new(zset)))
}

fn hash_of<'p>(
    pairs: impl Iterator<Item = (&'p [u8], &'p [u8])>,
    limits: &EncodingLimits,
    at: usize,
) -> Result<Value, RdbError> {
    let mut hash = HashValue::default();
    for (field, value) in pairs {
        if !hash.insert(field, value, limits) {
            return Err(duplicate(at));
        }
    }
    Ok(Value::Hash(hash))
}

fn read_quicklist(kind: u8, dec: &mut Decoder<'_>) -> Result<VecDeque<Bytes>, RdbError> {
    let nodes = dec.count(2)?;
    let mut items = VecDeque::new();
    for _ in 0..nodes {
        let container = match kind {
            kind::LIST_QUICKLIST_2 => dec.len()?,
            _ => CONTAINER_PACKED,
        };
        let (blob, at) = blob(dec)?;
        let corrupt = |what| RdbError::Corrupt { at, what };
        if blob.is_empty() {
            return Err(corrupt("an empty quicklist node"));
        }
        match container {
            CONTAINER_PLAIN => items.push_back(owned(blob)),
            CONTAINER_PACKED => {
                let elements = match kind {
                    kind::LIST_QUICKLIST_2 => listpack::read(&blob, at)?,
                    _ => ziplist::read(&blob, at)?,
                };
                items.extend(elements.into_iter().map(item_bytes));
            }
            _ => return Err(corrupt("an unknown quicklist container")),
        }
    }
    Ok(items)
}

fn read_id(dec: &mut Decoder<'_>) -> Result<StreamId, RdbError> {
    Ok(StreamId::new(dec.len()?, dec.len()?))
}

/// A stream id from its 128-bit big-endian form (`id_key`'s).
fn id_from_key(key: &[u8]) -> Option<StreamId> {
    let (ms, seq) = <&[u8; 16]>::try_from(key).ok()?.split_at(8);
    Some(StreamId::new(
        u64::from_be_bytes(ms.try_into().ok()?),
        u64::from_be_bytes(seq.try_into().ok()?),
    ))
}

fn read_raw_id(dec: &mut Decoder<'_>) -> Result<StreamId, RdbError> {
    Ok(id_from_key(dec.take(16)?).expect("sixteen bytes"))
}

fn read_stream(v2: bool, dec: &mut Decoder<'_>) -> Result<Stream, RdbError> {
    let mut stream = Stream::default();
    let nodes = dec.count(2)?;
    let mut previous: Option<StreamId> = None;
    for _ in 0..nodes {
        let (key, at) = blob(dec)?;
        // A node starts past every entry before it: two nodes under one
        // key, or overlapping, would not be one stream.
        let master = id_from_key(&key)
            .filter(|master| previous.is_none_or(|p| p < *master))
            .ok_or(RdbError::Corrupt {
                at,
                what: "a stream node key that is not a new id",
            })?;
        let (node, at) = blob(dec)?;
        let (entries, deleted) = read_stream_node(master, &node, at)?;
        for (id, _) in &entries {
            if previous.is_some_and(|p| p >= *id) || *id < master {
                return Err(RdbError::Corrupt {
                    at,
                    what: "stream entries out of order",
                });
            }
            previous = Some(*id);
        }
        stream.load_node(master, entries, deleted);
    }
    let at = dec.pos();
    let corrupt = |what| RdbError::Corrupt { at, what };
    if dec.len()? != stream.len() as u64 {
        return Err(corrupt("a stream length that disagrees with its entries"));
    }
    stream.last_id = read_id(dec)?;
    if previous.is_some_and(|p| p > stream.last_id) {
        return Err(corrupt("a stream's last id before its last entry"));
    }
    if v2 {
        // The first id is the first entry's, which the nodes gave.
        read_id(dec)?;
        stream.max_deleted = read_id(dec)?;
        stream.entries_added = dec.len()?;
    } else {
        stream.entries_added = stream.len() as u64;
    }
    for _ in 0..dec.count(3)? {
        let at = dec.pos();
        let name = owned(dec.string()?);
        let last_id = read_id(dec)?;
        let entries_read = match v2 {
            true => dec.len()? as i64,
            false => stream.entries_read_at(last_id),
        };
        let group = read_group(dec, Group::new(last_id, entries_read))?;
        if stream.groups.insert(name, group).is_some() {
            return Err(RdbError::Corrupt {
                at,
                what: "a consumer group given twice",
            });
        }
    }
    Ok(stream)
}

/// A group's PEL and consumers; every pending entry must belong to exactly
/// one of its consumers.
fn read_group(dec: &mut Decoder<'_>, mut group: Group) -> Result<Group, RdbError> {
    let at = dec.pos();
    let corrupt = |what| RdbError::Corrupt { at, what };
    let mut unowned = std::collections::BTreeMap::new();
    for _ in 0..dec.count(25)? {
        let id = read_raw_id(dec)?;
        let delivery_time = dec.millis()? as u64;
        let delivery_count = dec.len()?;
        if unowned
            .insert(id, (delivery_time, delivery_count))
            .is_some()
        {
            return Err(corrupt("a pending entry given twice"));
        }
    }
    for _ in 0..dec.count(10)? {
        let name = owned(dec.string()?);
        let mut consumer = Consumer {
            seen_time: dec.millis()? as u64,
            pending: Default::default(),
        };
        for _ in 0..dec.count(16)? {
            let id = read_raw_id(dec)?;
            let (delivery_time, delivery_count) = unowned
                .remove(&id)
                .ok_or(corrupt("a consumer's entry not pending in its group"))?;
            consumer.pending.insert(id);
            group.pending.insert(
                id,
                Pending {
                    consumer: name.clone(),
                    delivery_time,
                    delivery_count,
                },
            );
        }
        if group.consumers.insert(name, consumer).is_some() {
            return Err(corrupt("a consumer given twice"));
        }
    }
    match unowned.is_empty() {
        true => Ok(group),
        false => Err(corrupt("a pending entry with no consumer")),
    }
}

/// A stream node's listpack elements, read in order.
struct NodeItems<'a> {
    items: std::vec::IntoIter<listpack::Item<'a>>,
    at: usize,
    /// No count in a node can exceed its elements.
    most: usize,
}

impl<'a> NodeItems<'a> {
    fn corrupt(&self) -> RdbError {
        RdbError::Corrupt {
            at: self.at,
            what: "a damaged stream node",
        }
    }

    fn next(&mut self) -> Result<listpack::Item<'a>, RdbError> {
        self.items.next().ok_or_else(|| self.corrupt())
    }

    fn int(&mut self) -> Result<i64, RdbError> {
        self.next()?.int().ok_or_else(|| self.corrupt())
    }

    fn count(&mut self) -> Result<usize, RdbError> {
        let n = self.int()?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.most)
            .ok_or_else(|| self.corrupt())
    }
}

/// A stream node's live entries, and how many deleted ones it holds.
type NodeEntries = (Vec<(StreamId, Vec<Bytes>)>, u32);

/// The live entries of one node's listpack and how many deleted ones it
/// holds.
fn read_stream_node(master: StreamId, blob: &[u8], at: usize) -> Result<NodeEntries, RdbError> {
    let items = listpack::read(blob, at)?;
    let mut r = NodeItems {
        most: items.len(),
        items: items.into_iter(),
        at,
    };
    let live = r.count()?;
    let deleted = r.count()?;
    let master_fields = r.count()?;
    let names: Vec<Bytes> = (0..master_fields)
        .map(|_| r.next().map(item_bytes))
        .collect::<Result<_, _>>()?;
    if r.int()? != 0 {
        return Err(r.corrupt());
    }
    let mut entries = Vec::with_capacity(live);
    let mut gone = 0usize;
    for _ in 0..live + deleted {
        let flags = r.int()?;
        let id = StreamId::new(
            master.ms.wrapping_add(r.int()? as u64),
            master.seq.wrapping_add(r.int()? as u64),
        );
        let same_fields = flags & ENTRY_SAME_FIELDS != 0;
        let (fields, elements) = if same_fields {
            let mut fields = Vec::with_capacity(2 * names.len());
            for name in &names {
                fields.push(name.clone());
                fields.push(item_bytes(r.next()?));
            }
            let elements = names.len() + 3;
            (fields, elements)
        } else {
            let pairs = r.count()?;
            let fields = (0..2 * pairs)
                .map(|_| r.next().map(item_bytes))
                .collect::<Result<Vec<_>, _>>()?;
            (fields, 2 * pairs + 4)
        };
        if r.count()? != elements || fields.is_empty() {
            return Err(r.corrupt());
        }
        if flags & ENTRY_DELETED != 0 {
            gone += 1;
        } else {
            entries.push((id, fields));
        }
    }
    if r.items.next().is_some() || entries.len() != live || gone != deleted {
        return Err(r.corrupt());
    }
    Ok((entries, deleted as u32))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::rdb::{ziplist, zipmap};
    use proptest::prelude::*;

    const LIMITS: EncodingLimits = EncodingLimits::DEFAULT;

    fn stream(entries: &[(u64, u64, &[&str])]) -> Stream {
        let mut s = Stream::default();
        for (ms, seq, fields) in entries {
            let fields = fields
                .iter()
                .map(|f| Bytes::copy_from_slice(f.as_bytes()))
                .collect();
            s.append(StreamId::new(*ms, *seq), fields, &LIMITS);
        }
        s
    }

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
        zset.insert(Bytes::from("c"), 7.0, &LIMITS);
        let long_member = vec![b'm'; 100];
        let mut long_zset = SortedSet::for_first_member(&long_member, &LIMITS);
        long_zset.insert(Bytes::from(long_member), -0.0, &LIMITS);
        long_zset.insert(Bytes::from("x"), 1e300, &LIMITS);
        let long_list: VecDeque<Bytes> = (0..5000)
            .map(|i| Bytes::from(format!("item-{i}")))
            .collect();
        let mut grouped = stream(&[
            (1, 1, &["f", "v"]),
            (1, 2, &["f", "w", "g", "x"]),
            (5, 0, &["f", "1"]),
        ]);
        grouped.delete(StreamId::new(1, 2));
        grouped.max_deleted = StreamId::new(1, 2);
        let mut group = Group::new(StreamId::new(5, 0), 3);
        group.deliver(StreamId::new(1, 1), &Bytes::from("alice"), 1000, 2);
        group.consumer(&Bytes::from("bob"), 2000);
        grouped.groups.insert(Bytes::from("g1"), group);
        grouped
            .groups
            .insert(Bytes::from("g2"), Group::new(StreamId::ZERO, -1));
        vec![
            Value::string(Bytes::from("hello")),
            Value::string(Bytes::from("-123456")),
            Value::string(Bytes::from("12345678901234")),
            Value::string(Bytes::new()),
            Value::string(Bytes::from(vec![0u8; 70_000])),
            Value::List(["a", "", "c", "17"].map(Bytes::from).into()),
            Value::List(long_list),
            Value::Set(Box::new(SetValue::collect(
                [&b"1"[..], b"2", b"300"],
                &LIMITS,
            ))),
            Value::Set(Box::new(SetValue::collect(
                [&b"-70000"[..], b"5000000000"],
                &LIMITS,
            ))),
            Value::Set(Box::new(SetValue::collect([&b"x"[..], b"1"], &LIMITS))),
            Value::ZSet(Box::new(zset)),
            Value::ZSet(Box::new(long_zset)),
            Value::Hash(hash),
            Value::Hash(big_hash),
            Value::Stream(Box::new(grouped)),
            Value::Stream(Box::default()),
        ]
    }

    #[test]
    fn every_type_round_trips() {
        for value in samples() {
            let payload = dump(&value);
            let restored = restore(&payload, &LIMITS).expect("restores");
            match value {
                // A node's deleted entries are not written (their contents
                // are gone), so its sketch counts fewer: everything a
                // client sees, the payload, is the same.
                Value::Stream(_) => assert_eq!(dump(&restored), payload),
                value => assert_eq!(restored, value),
            }
        }
    }

    /// Payloads redis-server 7.0.15 gave for DUMP: rlockd writes the same
    /// bytes for the same values, and reads them back.
    #[test]
    fn redis_payloads_byte_for_byte() {
        let cases: [(&[u8], Value); 3] = [
            (
                b"\x00\x05hello\n\x00cr\xdfve4 \n",
                Value::string(Bytes::from("hello")),
            ),
            (
                b"\x12\x01\x02\x10\x10\x00\x00\x00\x03\x00\x81a\x02\x01\x01\xf1x\xec\x03\xff\n\x00\xbetw%\xa2q\x99\xb2",
                Value::List(["a", "1", "-5000"].map(Bytes::from).into()),
            ),
            (
                b"\x13\x01\x10\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x33\x33\x00\x00\x00\x13\x00\x02\x01\x00\x01\x01\x01\x81f\x02\x00\x01\x02\x01\x00\x01\x00\x01\x81v\x02\x04\x01\x00\x01\x00\x01\x01\x01\x02\x01\x81f\x02\x81w\x02\x81g\x02\x81x\x02\x08\x01\xff\x02\x01\x02\x01\x01\x00\x00\x02\x00\n\x00\x17\xff\x08\xeao\xae\x81\xa3",
                Value::Stream(Box::new(stream(&[(1, 1, &["f", "v"]), (1, 2, &["f", "w", "g", "x"])]))),
            ),
        ];
        for (payload, value) in cases {
            assert_eq!(dump(&value), payload);
            assert_eq!(restore(payload, &LIMITS), Ok(value));
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

    /// A payload whose trailer is right (at `version`) but whose body is
    /// whatever the test says.
    fn signed_at(body: &[u8], version: u16) -> Vec<u8> {
        let mut p = body.to_vec();
        p.extend_from_slice(&version.to_le_bytes());
        let sum = rdb::CRC64.checksum(&p);
        p.extend_from_slice(&sum.to_le_bytes());
        p
    }

    fn signed(body: &[u8]) -> Vec<u8> {
        signed_at(body, rdb::VERSION)
    }

    #[test]
    fn a_newer_version_is_refused_an_older_read() {
        let body = b"\x00\x02hi";
        assert_eq!(
            restore(&signed_at(body, 11), &LIMITS),
            Err(DumpError::VersionOrChecksum)
        );
        assert_eq!(
            restore(&signed_at(body, 6), &LIMITS),
            Ok(Value::string(Bytes::from("hi")))
        );
    }

    #[test]
    fn intact_nonsense_is_a_bad_format() {
        for body in [
            &b""[..],
            b"\x08",
            b"\x00\x05ab",
            b"\x00\x01ab",
            b"\x01\x00",
            b"\x02\x02\x01a\x01a",
            b"\x01\x81\xff\xff\xff\xff\xff\xff\xff\xff",
            b"\x05\x01\x01a\x00\x00\x00\x00\x00\x00\xf8\x7f",
            b"\x04\x01\x01f",
            b"\x12\x01\x03\x01a",
            b"\x0b\x0a\x02\x00\x00\x00\x02\x00\x00\x00\x01\x00",
        ] {
            assert_eq!(
                restore(&signed(body), &LIMITS),
                Err(DumpError::BadFormat),
                "{body:?}"
            );
        }
    }

    fn blob_body(kind: u8, blob: &[u8]) -> Vec<u8> {
        let mut enc = Encoder::new(false);
        enc.byte(kind);
        enc.string(blob);
        enc.out
    }

    /// The encodings of files from before Redis 7.0, built from their
    /// formats: each loads as the value it held.
    #[test]
    fn older_encodings_load() {
        let list: Vec<&[u8]> = vec![b"a", b"12", b"-70000", b"hello world"];
        let as_list = Value::List(list.iter().map(|i| Bytes::copy_from_slice(i)).collect());
        let zl = ziplist::tests::build(&list);
        assert_eq!(
            restore(&signed(&blob_body(kind::LIST_ZIPLIST, &zl)), &LIMITS),
            Ok(as_list.clone())
        );
        let mut quicklist_v1 = vec![kind::LIST_QUICKLIST, 2];
        let mut enc = Encoder::new(false);
        enc.string(&ziplist::tests::build(&list[..2]));
        enc.string(&ziplist::tests::build(&list[2..]));
        quicklist_v1.extend_from_slice(&enc.out);
        assert_eq!(
            restore(&signed(&quicklist_v1), &LIMITS),
            Ok(as_list.clone())
        );
        // Redis 7.0's plain node: one element as it is (what Redis does
        // with elements of a gigabyte), beside a listpack node.
        let mut plain_node = Encoder::new(false);
        plain_node.byte(kind::LIST_QUICKLIST_2);
        plain_node.len(2);
        plain_node.len(CONTAINER_PLAIN);
        plain_node.string(b"big");
        plain_node.len(CONTAINER_PACKED);
        let mut lp = listpack::Builder::default();
        lp.push(b"small");
        plain_node.string(&lp.finish());
        assert_eq!(
            restore(&signed(&plain_node.out), &LIMITS),
            Ok(Value::List(["big", "small"].map(Bytes::from).into()))
        );
        let mut plain_list = vec![kind::LIST, list.len() as u8];
        let mut enc = Encoder::new(false);
        list.iter().for_each(|i| enc.string(i));
        plain_list.extend_from_slice(&enc.out);
        assert_eq!(restore(&signed(&plain_list), &LIMITS), Ok(as_list));

        let pairs: Vec<(&[u8], &[u8])> = vec![(b"f1", b"v1"), (b"n", b"42")];
        let mut hash = HashValue::default();
        pairs.iter().for_each(|(f, v)| {
            hash.insert(f, v, &LIMITS);
        });
        let zm = zipmap::tests::build(&pairs);
        assert_eq!(
            restore(&signed(&blob_body(kind::HASH_ZIPMAP, &zm)), &LIMITS),
            Ok(Value::Hash(hash.clone()))
        );
        let flat: Vec<&[u8]> = pairs.iter().flat_map(|(f, v)| [*f, *v]).collect();
        assert_eq!(
            restore(
                &signed(&blob_body(
                    kind::HASH_ZIPLIST,
                    &ziplist::tests::build(&flat)
                )),
                &LIMITS
            ),
            Ok(Value::Hash(hash))
        );

        let mut zset = SortedSet::default();
        zset.insert(Bytes::from("a"), 1.0, &LIMITS);
        zset.insert(Bytes::from("b"), 2.5, &LIMITS);
        let scored: Vec<&[u8]> = vec![b"a", b"1", b"b", b"2.5"];
        assert_eq!(
            restore(
                &signed(&blob_body(
                    kind::ZSET_ZIPLIST,
                    &ziplist::tests::build(&scored)
                )),
                &LIMITS
            ),
            Ok(Value::ZSet(Box::new(zset.clone())))
        );
        let text_scores = b"\x03\x02\x01a\x011\x01b\x032.5";
        assert_eq!(
            restore(&signed(text_scores), &LIMITS),
            Ok(Value::ZSet(Box::new(zset)))
        );
    }

    /// A stream as Redis 6.2 wrote it (`STREAM_LISTPACKS`): no first id,
    /// tombstone or `entries-added`, no group read counters. Those are
    /// made up on load as Redis 7.0 makes them up.
    #[test]
    fn a_redis_6_stream_loads() {
        let fields = [Bytes::from("f"), Bytes::from("v")];
        let entries = [
            (StreamId::new(1, 1), &fields[..]),
            (StreamId::new(2, 0), &fields[..]),
        ];
        let mut enc = Encoder::new(false);
        enc.byte(kind::STREAM_LISTPACKS);
        enc.len(1);
        enc.string(&id_key(StreamId::new(1, 1)));
        enc.string(&stream_node(StreamId::new(1, 1), &entries));
        enc.len(2);
        write_id(&mut enc, StreamId::new(2, 0));
        enc.len(1);
        enc.string(b"g");
        write_id(&mut enc, StreamId::new(1, 1));
        enc.len(1);
        enc.out.extend_from_slice(&id_key(StreamId::new(1, 1)));
        enc.millis(500);
        enc.len(3);
        enc.len(1);
        enc.string(b"alice");
        enc.millis(400);
        enc.len(1);
        enc.out.extend_from_slice(&id_key(StreamId::new(1, 1)));
        let Ok(Value::Stream(stream)) = restore(&signed_at(&enc.out, 9), &LIMITS) else {
            panic!("a stream")
        };
        assert_eq!(stream.len(), 2);
        assert_eq!(stream.entries_added, 2);
        assert_eq!(stream.max_deleted, StreamId::ZERO);
        let group = &stream.groups[&Bytes::from("g")];
        assert_eq!(group.entries_read, 1);
        assert_eq!(group.pending[&StreamId::new(1, 1)].delivery_count, 3);
        assert_eq!(group.consumers[&Bytes::from("alice")].seen_time, 400);
    }

    /// Two nodes under one key would leave the stream's node sketch
    /// without the first: refused.
    #[test]
    fn stream_nodes_must_follow_each_other() {
        let fields = [Bytes::from("f"), Bytes::from("v")];
        let body = |second_master: StreamId, second: StreamId| {
            let mut enc = Encoder::new(false);
            enc.byte(kind::STREAM_LISTPACKS_2);
            enc.len(2);
            enc.string(&id_key(StreamId::new(1, 0)));
            let first = StreamId::new(1, 0);
            enc.string(&stream_node(first, &[(first, &fields[..])]));
            enc.string(&id_key(second_master));
            enc.string(&stream_node(second_master, &[(second, &fields[..])]));
            enc.len(2);
            write_id(&mut enc, second);
            write_id(&mut enc, StreamId::new(1, 0));
            write_id(&mut enc, StreamId::ZERO);
            enc.len(2);
            enc.len(0);
            signed(&enc.out)
        };
        let apart = body(StreamId::new(2, 0), StreamId::new(2, 0));
        assert!(matches!(restore(&apart, &LIMITS), Ok(Value::Stream(_))));
        let same_key = body(StreamId::new(1, 0), StreamId::new(2, 0));
        assert_eq!(restore(&same_key, &LIMITS), Err(DumpError::BadFormat));
    }

    #[test]
    fn values_take_the_form_the_limits_give() {
        let small = EncodingLimits {
            set_max_intset_entries: 2,
            hash_max_listpack_entries: 1,
            zset_max_listpack_entries: 1,
            ..LIMITS
        };
        let set = Value::Set(Box::new(SetValue::collect(
            [&b"1"[..], b"2", b"3"],
            &LIMITS,
        )));
        let Ok(Value::Set(restored)) = restore(&dump(&set), &small) else {
            panic!("a set")
        };
        assert!(!restored.is_intset());
        let mut hash = HashValue::default();
        hash.insert(b"a", b"1", &LIMITS);
        hash.insert(b"b", b"2", &LIMITS);
        let Ok(Value::Hash(restored)) = restore(&dump(&Value::Hash(hash)), &small) else {
            panic!("a hash")
        };
        assert!(!restored.is_listpack());
    }

    proptest! {
        #[test]
        fn any_bytes_decode_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = restore(&bytes, &LIMITS);
            let _ = restore(&signed(&bytes), &LIMITS);
        }

        #[test]
        fn damaged_bodies_never_panic(which in 0usize..16, at in any::<prop::sample::Index>(), bit in 0u8..8) {
            let value = &samples()[which];
            let mut enc = Encoder::new(true);
            write_value(&mut enc, value);
            let mut body = enc.out;
            let i = at.index(body.len());
            body[i] ^= 1 << bit;
            let _ = restore(&signed(&body), &LIMITS);
            let _ = restore(&signed(&body[..i]), &LIMITS);
        }
    }
}
