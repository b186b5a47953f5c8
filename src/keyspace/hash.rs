//! A hash's fields. A small hash (the lock workload's are one field) is one
//! packed allocation in insertion order, as Redis keeps it in a listpack;
//! a large one is a table. Both keep field order the way Redis's encodings
//! do, so HGETALL and HSCAN answer in Redis's order.

use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use indexmap::IndexMap;
use indexmap::map::raw_entry_v1::{RawEntryApiV1, RawEntryMut};

use super::EncodingLimits;

/// Up to this many fields a hash keeps field order on delete, like Redis's
/// listpack; larger hashes are unordered there too.
pub const HASH_ORDERED_MAX: usize = 128;
/// Longest field or value a packed hash holds (Redis's
/// `hash-max-listpack-value`); its lengths fit one byte.
pub(super) const PACKED_ITEM_MAX: usize = 64;

type Table = IndexMap<Bytes, Bytes, foldhash::fast::RandomState>;

/// A hash held as a table, and whether Redis would still hold it in a
/// listpack (its limits can be above what packing here holds).
#[derive(Debug)]
pub struct TableHash {
    map: Table,
    listpack: bool,
    /// Where the field last looked up by `get_noted` lies: a script's undo
    /// journal reads a field just before the command writes it, and the
    /// write finds it here rather than hashing and probing again. Only a
    /// hint, checked against the field's bytes before use, so one gone
    /// stale (the field moved or removed) costs that check alone. Atomic,
    /// as a snapshot may read the hash from another thread meanwhile;
    /// relaxed, as nothing else is ordered by it.
    noted: AtomicUsize,
}

impl Clone for TableHash {
    fn clone(&self) -> Self {
        TableHash {
            map: self.map.clone(),
            listpack: self.listpack,
            noted: AtomicUsize::default(),
        }
    }
}

impl PartialEq for TableHash {
    fn eq(&self, other: &Self) -> bool {
        self.map == other.map && self.listpack == other.listpack
    }
}

impl std::ops::Deref for TableHash {
    type Target = Table;

    fn deref(&self) -> &Table {
        &self.map
    }
}

impl std::ops::DerefMut for TableHash {
    fn deref_mut(&mut self) -> &mut Table {
        &mut self.map
    }
}

/// Packed, a hash is always a listpack to Redis: the limits that make
/// Redis give one up convert it to a table first.
#[derive(Debug, Clone, PartialEq)]
pub enum HashValue {
    /// Each pair as `[field len][field][value len][value]`, one byte per
    /// length, with no spare capacity.
    Packed(Box<[u8]>),
    Table(Box<TableHash>),
}

impl Default for HashValue {
    fn default() -> Self {
        HashValue::Packed(Box::default())
    }
}

/// Where a packed pair lies: its field and value ranges, and where the
/// next pair starts.
struct PackedPair {
    start: usize,
    field: std::ops::Range<usize>,
    value: std::ops::Range<usize>,
}

fn packed_pairs(buf: &[u8]) -> impl Iterator<Item = PackedPair> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= buf.len() {
            return None;
        }
        let start = at;
        let field = start + 1..start + 1 + buf[start] as usize;
        let value_at = field.end;
        let value = value_at + 1..value_at + 1 + buf[value_at] as usize;
        at = value.end;
        Some(PackedPair {
            start,
            field,
            value,
        })
    })
}

fn find_packed(buf: &[u8], field: &[u8]) -> Option<PackedPair> {
    packed_pairs(buf).find(|p| &buf[p.field.clone()] == field)
}

fn push_pair(out: &mut Vec<u8>, field: &[u8], value: &[u8]) {
    out.push(field.len() as u8);
    out.extend_from_slice(field);
    out.push(value.len() as u8);
    out.extend_from_slice(value);
}

fn insert_packed(
    buf: &mut Box<[u8]>,
    found: Option<PackedPair>,
    field: &[u8],
    value: &[u8],
) -> bool {
    match found {
        // A value of the same length (a lock's count going 1 -> 2) is
        // rewritten where it lies.
        Some(p) if p.value.len() == value.len() => {
            buf[p.value].copy_from_slice(value);
            false
        }
        Some(p) => {
            let mut out = Vec::with_capacity(buf.len() + value.len() - p.value.len());
            out.extend_from_slice(&buf[..p.start]);
            push_pair(&mut out, field, value);
            out.extend_from_slice(&buf[p.value.end..]);
            *buf = out.into_boxed_slice();
            false
        }
        None => {
            let mut out = Vec::with_capacity(buf.len() + field.len() + value.len() + 2);
            out.extend_from_slice(buf);
            push_pair(&mut out, field, value);
            *buf = out.into_boxed_slice();
            true
        }
    }
}

impl HashValue {
    pub fn len(&self) -> usize {
        match self {
            HashValue::Packed(buf) => packed_pairs(buf).count(),
            HashValue::Table(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        match self {
            HashValue::Packed(buf) => buf.is_empty(),
            HashValue::Table(t) => t.is_empty(),
        }
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match self {
            HashValue::Packed(buf) => find_packed(buf, field).map(|p| &buf[p.value]),
            HashValue::Table(t) => t.get(field).map(|v| &v[..]),
        }
    }

    /// `get`, noting where a table's field lies for the write that follows
    /// (see `TableHash::noted`).
    pub(super) fn get_noted(&self, field: &[u8]) -> Option<&[u8]> {
        match self {
            HashValue::Packed(_) => self.get(field),
            HashValue::Table(t) => {
                let (at, _, value) = t.get_full(field)?;
                t.noted.store(at, Ordering::Relaxed);
                Some(value)
            }
        }
    }

    pub fn contains_key(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Whether Redis would hold this hash in a listpack.
    pub fn is_listpack(&self) -> bool {
        match self {
            HashValue::Packed(_) => true,
            HashValue::Table(t) => t.listpack,
        }
    }

    /// An empty hash in the hashtable encoding, as a large one becomes
    /// once emptied (Redis never converts back).
    pub(super) fn empty_hashtable() -> HashValue {
        HashValue::Table(Box::new(TableHash {
            map: Table::default(),
            listpack: false,
            noted: AtomicUsize::default(),
        }))
    }

    /// Sets `field` to `value`; true if the field is new. Like Redis, a
    /// field or value too long for a listpack converts the hash before the
    /// write, and one pair too many after it.
    pub fn insert(&mut self, field: &[u8], value: &[u8], limits: &EncodingLimits) -> bool {
        let items_fit = limits.hash_item_fits(field.len()) && limits.hash_item_fits(value.len());
        if let HashValue::Packed(buf) = self {
            let found = find_packed(buf, field);
            let packs = field.len() <= PACKED_ITEM_MAX && value.len() <= PACKED_ITEM_MAX;
            let len = packed_pairs(buf).count() + usize::from(found.is_none());
            if items_fit && packs && len <= HASH_ORDERED_MAX && limits.hash_len_fits(len) {
                return insert_packed(buf, found, field, value);
            }
            self.unpack();
        }
        let HashValue::Table(t) = self else {
            unreachable!("unpacked above")
        };
        t.listpack &= items_fit;
        // A field already there keeps its name: only the value is copied.
        if let Some((name, stored)) = t.map.get_index_mut(t.noted.load(Ordering::Relaxed))
            && name[..] == *field
        {
            *stored = Bytes::copy_from_slice(value);
            return false;
        }
        // One probe, whether the field is there or not.
        match t.map.raw_entry_mut_v1().from_key(field) {
            RawEntryMut::Occupied(mut there) => {
                *there.get_mut() = Bytes::copy_from_slice(value);
                false
            }
            RawEntryMut::Vacant(room) => {
                room.insert(Bytes::copy_from_slice(field), Bytes::copy_from_slice(value));
                t.listpack &= limits.hash_len_fits(t.len());
                true
            }
        }
    }

    /// Removes `field`, keeping the others' order while the hash is small
    /// (as Redis's listpack does); true if it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self {
            HashValue::Packed(buf) => {
                let Some(p) = find_packed(buf, field) else {
                    return false;
                };
                let mut out = Vec::with_capacity(buf.len() - (p.value.end - p.start));
                out.extend_from_slice(&buf[..p.start]);
                out.extend_from_slice(&buf[p.value.end..]);
                *buf = out.into_boxed_slice();
                true
            }
            HashValue::Table(t) if t.listpack || t.len() <= HASH_ORDERED_MAX => {
                t.shift_remove(field).is_some()
            }
            HashValue::Table(t) => t.swap_remove(field).is_some(),
        }
    }

    pub fn iter(&self) -> HashIter<'_> {
        match self {
            HashValue::Packed(buf) => HashIter::Packed(buf, 0),
            HashValue::Table(t) => HashIter::Table(t.iter()),
        }
    }

    /// Moves the pairs into a table, in order: the hash outgrew packing.
    /// Still a listpack to Redis until `insert` finds otherwise.
    fn unpack(&mut self) {
        let map: Table = self
            .iter()
            .map(|(f, v)| (Bytes::copy_from_slice(f), Bytes::copy_from_slice(v)))
            .collect();
        *self = HashValue::Table(Box::new(TableHash {
            map,
            listpack: true,
            noted: AtomicUsize::default(),
        }));
    }
}

/// The pairs of a hash in order.
pub enum HashIter<'a> {
    Packed(&'a [u8], usize),
    Table(indexmap::map::Iter<'a, Bytes, Bytes>),
}

impl<'a> Iterator for HashIter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            HashIter::Packed(buf, at) => {
                let p = packed_pairs(&buf[*at..]).next()?;
                let base = *at;
                *at += p.value.end;
                Some((
                    &buf[base + p.field.start..base + p.field.end],
                    &buf[base + p.value.start..base + p.value.end],
                ))
            }
            HashIter::Table(it) => it.next().map(|(f, v)| (&f[..], &v[..])),
        }
    }
}

impl<'a> IntoIterator for &'a HashValue {
    type Item = (&'a [u8], &'a [u8]);
    type IntoIter = HashIter<'a>;

    fn into_iter(self) -> HashIter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What a hash must behave like: an ordered map whose deletes keep
    /// order while it is small.
    #[derive(Default)]
    struct Model(Vec<(Vec<u8>, Vec<u8>)>);

    proptest! {
        #[test]
        fn behaves_like_an_ordered_map(ops in proptest::collection::vec(
            (0u8..3, 0u8..40, proptest::collection::vec(any::<u8>(), 0..80)), 0..400)) {
            let mut hash = HashValue::default();
            let mut model = Model::default();
            for (op, field, value) in ops {
                // Long fields now and then push the hash out of packing.
                let field = if field == 39 { vec![b'f'; 70] } else { vec![field] };
                match op {
                    0 | 1 => {
                        let new = hash.insert(&field, &value, &EncodingLimits::default());
                        match model.0.iter_mut().find(|(f, _)| *f == field) {
                            Some(pair) => { prop_assert!(!new); pair.1 = value; }
                            None => { prop_assert!(new); model.0.push((field, value)); }
                        }
                    }
                    _ => {
                        let removed = hash.remove(&field);
                        let at = model.0.iter().position(|(f, _)| *f == field);
                        prop_assert_eq!(removed, at.is_some());
                        if let Some(at) = at { model.0.remove(at); }
                    }
                }
                prop_assert_eq!(hash.len(), model.0.len());
                let pairs: Vec<(Vec<u8>, Vec<u8>)> =
                    hash.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
                prop_assert_eq!(&pairs, &model.0);
            }
        }
    }

    #[test]
    fn a_lock_hash_is_one_small_allocation() {
        let mut hash = HashValue::default();
        let limits = EncodingLimits::default();
        assert!(hash.insert(b"8743c9c0-0795-4907-87fd-6c719a6b4586:1", b"1", &limits));
        assert!(!hash.insert(b"8743c9c0-0795-4907-87fd-6c719a6b4586:1", b"2", &limits));
        let HashValue::Packed(buf) = &hash else {
            panic!("packed")
        };
        assert_eq!(buf.len(), 1 + 38 + 1 + 1);
        assert_eq!(
            hash.get(b"8743c9c0-0795-4907-87fd-6c719a6b4586:1"),
            Some(&b"2"[..])
        );
    }

    #[test]
    fn grows_into_a_table_past_the_packing_limits() {
        let limits = EncodingLimits::default();
        let mut hash = HashValue::default();
        for i in 0..=HASH_ORDERED_MAX {
            hash.insert(i.to_string().as_bytes(), b"v", &limits);
        }
        assert!(matches!(hash, HashValue::Table(_)));
        assert!(hash.is_listpack(), "Redis's limit is 512 pairs");
        let mut long = HashValue::default();
        long.insert(b"f", &[b'x'; 65], &limits);
        assert!(matches!(long, HashValue::Table(_)));
        assert!(!long.is_listpack());
        assert_eq!(long.get(b"f").map(<[u8]>::len), Some(65));
    }

    #[test]
    fn leaves_listpack_for_good_past_redis_limits() {
        let limits = EncodingLimits {
            hash_max_listpack_entries: 2,
            hash_max_listpack_value: 4,
            ..EncodingLimits::default()
        };
        let mut hash = HashValue::default();
        hash.insert(b"a", b"1", &limits);
        hash.insert(b"b", b"2", &limits);
        assert!(matches!(hash, HashValue::Packed(_)));
        hash.insert(b"c", b"3", &limits);
        assert!(!hash.is_listpack());
        hash.remove(b"c");
        hash.remove(b"b");
        assert!(!hash.is_listpack(), "conversion is one-way");
        let mut long = HashValue::default();
        long.insert(b"a", b"12345", &limits);
        assert!(!long.is_listpack());
    }
}
