//! One database's keys within one shard. A key can also be found by its
//! hash, so the expiry wheel names keys by hash rather than holding a copy
//! of each: a lease costs no second key, and a released lock's key is
//! freed at once. The table shrinks as keys go, so memory taken by a burst
//! of locks is given back after they are released.

use std::hash::BuildHasher;

use hashbrown::HashTable;
use hashbrown::hash_table::Entry as Slot;

use super::Entry;

/// Tables smaller than this are not worth shrinking.
const SHRINK_FLOOR: usize = 64;

/// A key as stored: two words, where `Bytes` takes four (most of a small
/// lock's table slot).
type StoredKey = Box<[u8]>;

#[derive(Default)]
pub struct DbMap {
    table: HashTable<(StoredKey, Entry)>,
    hasher: foldhash::fast::RandomState,
}

impl DbMap {
    /// The hash the wheel files a key's deadline under.
    pub fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn clear(&mut self) {
        self.table = HashTable::new();
    }

    pub fn get(&self, key: &[u8]) -> Option<&Entry> {
        self.table
            .find(self.hash(key), |(k, _)| k[..] == *key)
            .map(|(_, e)| e)
    }

    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let hash = self.hash(key);
        self.table
            .find_mut(hash, |(k, _)| k[..] == *key)
            .map(|(_, e)| e)
    }

    /// Stores `entry` under `key`, replacing what was there.
    pub fn insert(&mut self, key: &[u8], entry: Entry) {
        let hash = self.hash(key);
        let hasher = &self.hasher;
        match self.table.entry(
            hash,
            |(k, _)| k[..] == *key,
            |(k, _)| hasher.hash_one(&k[..]),
        ) {
            Slot::Occupied(mut slot) => slot.get_mut().1 = entry,
            Slot::Vacant(slot) => {
                slot.insert((key.into(), entry));
            }
        }
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let hash = self.hash(key);
        let (_, entry) = self
            .table
            .find_entry(hash, |(k, _)| k[..] == *key)
            .ok()?
            .remove()
            .0;
        self.shrink_if_sparse();
        Some(entry)
    }

    /// Takes out every key with this hash whose deadline is at or before
    /// `now` (the wheel fired for one of them; the others are due too).
    pub fn take_expired(&mut self, hash: u64, now: u64) -> Vec<(StoredKey, Entry)> {
        let mut taken = Vec::new();
        let hasher = &self.hasher;
        while let Ok(slot) = self.table.find_entry(hash, |(k, e)| {
            e.is_expired(now) && hasher.hash_one(&k[..]) == hash
        }) {
            taken.push(slot.remove().0);
        }
        if !taken.is_empty() {
            self.shrink_if_sparse();
        }
        taken
    }

    /// Whether a key with this hash is due by `at`: the wheel's entry for
    /// `at` may be the one that reclaims it (the wheel files a deadline
    /// already past at the next tick, so a key's own deadline may be
    /// earlier than its entry's).
    pub fn due_by(&self, hash: u64, at: u64) -> bool {
        self.table
            .find(hash, |(k, e)| {
                e.expire_at().is_some_and(|d| d <= at) && self.hasher.hash_one(&k[..]) == hash
            })
            .is_some()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &Entry)> {
        self.table.iter().map(|(k, e)| (&k[..], e))
    }

    pub fn values(&self) -> impl Iterator<Item = &Entry> {
        self.table.iter().map(|(_, e)| e)
    }

    /// Halves the table's room once three quarters of it is unused, so a
    /// table never shrinks and grows back over a few keys.
    fn shrink_if_sparse(&mut self) {
        let capacity = self.table.capacity();
        if capacity > SHRINK_FLOOR && self.table.len() * 4 < capacity {
            let hasher = &self.hasher;
            self.table
                .shrink_to(self.table.len() * 2, |(k, _)| hasher.hash_one(&k[..]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::Value;
    use bytes::Bytes;

    fn entry(at: Option<u64>) -> Entry {
        Entry::new(Value::string(Bytes::from_static(b"v")), at)
    }

    #[test]
    fn finds_expired_keys_by_hash_and_shrinks_when_emptied() {
        let mut map = DbMap::default();
        for i in 0..10_000u64 {
            map.insert(format!("k{i}").as_bytes(), entry(Some(i)));
        }
        let grown = map.table.capacity();
        assert_eq!(map.len(), 10_000);
        let hash = map.hash(b"k5");
        assert!(map.take_expired(hash, 4).is_empty(), "not due yet");
        let taken = map.take_expired(hash, 5);
        assert_eq!(taken.len(), 1);
        assert_eq!(&taken[0].0[..], b"k5");
        assert!(map.get(b"k5").is_none());
        for i in 0..10_000u64 {
            map.remove(format!("k{i}").as_bytes());
        }
        assert_eq!(map.len(), 0);
        assert!(map.table.capacity() <= SHRINK_FLOOR, "{grown} kept");
    }

    #[test]
    fn insert_replaces() {
        let mut map = DbMap::default();
        map.insert(b"k", entry(None));
        map.insert(b"k", entry(Some(7)));
        assert_eq!(map.len(), 1);
        assert_eq!(map.get(b"k").unwrap().expire_at(), Some(7));
    }
}
