//! One database's keys within one shard, and their deadlines. A key can
//! also be found by its hash, so the expiry wheel names keys by hash
//! rather than holding a copy of each: a lease costs no second key, and a
//! released lock's key is freed at once. Each map has its own wheel, so a
//! wheel entry needs no database number, and SWAPDB moves deadlines with
//! their keys. The table shrinks as keys go, so memory taken by a burst of
//! locks is given back after they are released.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::hash::BuildHasher;
use std::ptr::NonNull;

use hashbrown::HashTable;
use hashbrown::hash_table::Entry as Slot;

use super::Entry;
use crate::expiry::wheel::TimerWheel;

/// Tables smaller than this are not worth shrinking.
const SHRINK_FLOOR: usize = 64;

/// Stale wheel entries a map tolerates beyond two per key.
const WHEEL_SLACK: usize = 1024;

/// Where a node's key length and key bytes start.
const KEY_LEN_AT: usize = std::mem::size_of::<Entry>();
const KEY_AT: usize = KEY_LEN_AT + std::mem::size_of::<u32>();

/// A key and its entry in one allocation (`[entry][key length][key]`),
/// named by one thin pointer. The table's slots are the bulk of a
/// small lock's memory: at a million keys the table is half empty, so
/// every byte of a slot costs two per key. A slot holding the key and
/// entry themselves took 64 bytes; a pointer takes 8.
pub struct Node(NonNull<u8>);

// A node owns its entry and key as a `Box` would.
unsafe impl Send for Node {}
unsafe impl Sync for Node {}

impl Node {
    fn layout(key_len: usize) -> Layout {
        Layout::from_size_align(KEY_AT + key_len, std::mem::align_of::<Entry>())
            .expect("a key fits in memory")
    }

    fn new(key: &[u8], entry: Entry) -> Node {
        // Keys arrive as request arguments, at most proto-max-bulk-len
        // (512 MB), or are built from them by scripts under the Lua heap
        // limit.
        let key_len = u32::try_from(key.len()).expect("keys are shorter than 4 GiB");
        let layout = Self::layout(key.len());
        // SAFETY: the layout is non-zero sized; the entry is written at
        // offset 0 (aligned as the layout is), the length and key after
        // it, inside the allocation.
        unsafe {
            let Some(ptr) = NonNull::new(alloc(layout)) else {
                handle_alloc_error(layout)
            };
            ptr.cast::<Entry>().write(entry);
            ptr.add(KEY_LEN_AT).cast::<u32>().write_unaligned(key_len);
            std::ptr::copy_nonoverlapping(key.as_ptr(), ptr.add(KEY_AT).as_ptr(), key.len());
            Node(ptr)
        }
    }

    pub fn key(&self) -> &[u8] {
        // SAFETY: `new` wrote the length and that many key bytes.
        unsafe {
            let len = self.0.add(KEY_LEN_AT).cast::<u32>().read_unaligned() as usize;
            std::slice::from_raw_parts(self.0.add(KEY_AT).as_ptr(), len)
        }
    }

    pub fn entry(&self) -> &Entry {
        // SAFETY: `new` wrote an entry at offset 0; it lives until drop.
        unsafe { self.0.cast::<Entry>().as_ref() }
    }

    fn entry_mut(&mut self) -> &mut Entry {
        // SAFETY: as `entry`, and `&mut self` makes the borrow unique.
        unsafe { self.0.cast::<Entry>().as_mut() }
    }

    fn into_entry(self) -> Entry {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: the entry is moved out exactly once and the memory
        // freed without dropping it again (`this` never drops).
        unsafe {
            let entry = this.0.cast::<Entry>().read();
            dealloc(this.0.as_ptr(), Self::layout(this.key().len()));
            entry
        }
    }

    fn replace_entry(&mut self, entry: Entry) {
        *self.entry_mut() = entry;
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let layout = Self::layout(self.key().len());
        // SAFETY: the entry is live (see `into_entry`) and the memory was
        // allocated with this layout.
        unsafe {
            std::ptr::drop_in_place(self.0.cast::<Entry>().as_ptr());
            dealloc(self.0.as_ptr(), layout);
        }
    }
}

pub struct DbMap {
    table: HashTable<Node>,
    hasher: foldhash::fast::RandomState,
    /// Deadlines, each naming its key by hash.
    wheel: TimerWheel<u64>,
}

impl DbMap {
    /// A wheel starts at the present: one started far behind it would
    /// re-file its entries level by level on the way up.
    pub fn new(now: u64) -> Self {
        DbMap {
            table: HashTable::new(),
            hasher: Default::default(),
            wheel: TimerWheel::new(now),
        }
    }
    /// The hash the wheel files a key's deadline under.
    pub fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn clear(&mut self, now: u64) {
        self.table = HashTable::new();
        self.wheel = TimerWheel::new(now);
    }

    /// Files `key`'s deadline in the wheel.
    pub fn schedule(&mut self, key: &[u8], at: u64) {
        self.wheel.insert(at, self.hash(key));
    }

    pub fn has_deadlines(&self) -> bool {
        !self.wheel.is_empty()
    }

    /// Takes out every key whose deadline is at or before `now`.
    pub fn expire_due(&mut self, now: u64) -> Vec<Node> {
        self.sweep_wheel();
        let mut due = Vec::new();
        self.wheel.advance(now, |hash| due.push(hash));
        due.into_iter()
            .flat_map(|hash| self.take_expired(hash, now))
            .collect()
    }

    /// Drops the wheel's entries for deadlines no key has any more (keys
    /// deleted or given a new deadline), once they are most of it: a burst
    /// of released locks gives back the room of their leases before the
    /// leases would have run out. Amortised: a sweep leaves at most one
    /// entry per key, and the next needs as many again.
    fn sweep_wheel(&mut self) {
        if self.wheel.len() <= 2 * self.len() + WHEEL_SLACK {
            return;
        }
        let (table, hasher) = (&self.table, &self.hasher);
        self.wheel
            .retain(|at, &hash| due_by(table, hasher, hash, at));
    }

    pub fn get(&self, key: &[u8]) -> Option<&Entry> {
        self.get_hashed(self.hash(key), key)
    }

    /// `get` with the key's `hash` already known.
    pub fn get_hashed(&self, hash: u64, key: &[u8]) -> Option<&Entry> {
        self.table.find(hash, |n| n.key() == key).map(Node::entry)
    }

    pub fn get_mut_hashed(&mut self, hash: u64, key: &[u8]) -> Option<&mut Entry> {
        self.table
            .find_mut(hash, |n| n.key() == key)
            .map(Node::entry_mut)
    }

    /// Stores `entry` under `key`, replacing what was there.
    pub fn insert(&mut self, key: &[u8], entry: Entry) {
        let hash = self.hash(key);
        let hasher = &self.hasher;
        match self
            .table
            .entry(hash, |n| n.key() == key, |n| hasher.hash_one(n.key()))
        {
            Slot::Occupied(mut slot) => slot.get_mut().replace_entry(entry),
            Slot::Vacant(slot) => {
                slot.insert(Node::new(key, entry));
            }
        }
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let hash = self.hash(key);
        let node = self
            .table
            .find_entry(hash, |n| n.key() == key)
            .ok()?
            .remove()
            .0;
        self.shrink_if_sparse();
        Some(node.into_entry())
    }

    /// Takes out every key with this hash whose deadline is at or before
    /// `now` (the wheel fired for one of them; the others are due too).
    fn take_expired(&mut self, hash: u64, now: u64) -> Vec<Node> {
        let mut taken = Vec::new();
        let hasher = &self.hasher;
        while let Ok(slot) = self.table.find_entry(hash, |n| {
            n.entry().is_expired(now) && hasher.hash_one(n.key()) == hash
        }) {
            taken.push(slot.remove().0);
        }
        if !taken.is_empty() {
            self.shrink_if_sparse();
        }
        taken
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &Entry)> {
        self.table.iter().map(|n| (n.key(), n.entry()))
    }

    pub fn values(&self) -> impl Iterator<Item = &Entry> {
        self.table.iter().map(Node::entry)
    }

    /// Halves the table's room once three quarters of it is unused, so a
    /// table never shrinks and grows back over a few keys.
    fn shrink_if_sparse(&mut self) {
        let capacity = self.table.capacity();
        if capacity > SHRINK_FLOOR && self.table.len() * 4 < capacity {
            let hasher = &self.hasher;
            self.table
                .shrink_to(self.table.len() * 2, |n| hasher.hash_one(n.key()));
        }
    }
}

/// Whether a key with this hash is due by `at`: the wheel's entry for `at`
/// may be the one that reclaims it (the wheel files a deadline already past
/// at the next tick, so a key's own deadline may be earlier than its
/// entry's).
fn due_by(
    table: &HashTable<Node>,
    hasher: &foldhash::fast::RandomState,
    hash: u64,
    at: u64,
) -> bool {
    table
        .find(hash, |n| {
            n.entry().expire_at().is_some_and(|d| d <= at) && hasher.hash_one(n.key()) == hash
        })
        .is_some()
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
        let mut map = DbMap::new(0);
        for i in 0..10_000u64 {
            map.insert(format!("k{i}").as_bytes(), entry(Some(i)));
        }
        let grown = map.table.capacity();
        assert_eq!(map.len(), 10_000);
        let hash = map.hash(b"k5");
        assert!(map.take_expired(hash, 4).is_empty(), "not due yet");
        let taken = map.take_expired(hash, 5);
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].key(), b"k5");
        assert!(map.get(b"k5").is_none());
        for i in 0..10_000u64 {
            map.remove(format!("k{i}").as_bytes());
        }
        assert_eq!(map.len(), 0);
        assert!(map.table.capacity() <= SHRINK_FLOOR, "{grown} kept");
    }

    #[test]
    fn nodes_hold_any_key_and_give_back_their_entries() {
        let mut map = DbMap::new(0);
        let long = vec![b'x'; 1000];
        for key in [&b""[..], b"k", &long] {
            let value = Value::string(Bytes::from(key.repeat(2)));
            map.insert(key, Entry::new(value.clone(), None));
            assert_eq!(map.get(key).map(|e| &e.value), Some(&value));
        }
        assert_eq!(map.iter().map(|(k, _)| k.len()).sum::<usize>(), 1001);
        let entry = map.remove(&long).expect("present");
        assert_eq!(entry.value, Value::string(Bytes::from(long.repeat(2))));
        map.get_mut_hashed(map.hash(b""), b"")
            .expect("present")
            .set_expire_at(Some(3));
        assert_eq!(map.take_expired(map.hash(b""), 3).len(), 1);
        assert_eq!(map.len(), 1);
    }

    #[test]
    fn insert_replaces() {
        let mut map = DbMap::new(0);
        map.insert(b"k", entry(None));
        map.insert(b"k", entry(Some(7)));
        assert_eq!(map.len(), 1);
        assert_eq!(map.get(b"k").unwrap().expire_at(), Some(7));
    }
}
