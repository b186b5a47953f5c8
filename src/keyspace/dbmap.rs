//! One database's keys within one shard, and their deadlines. A key can
//! also be found by its hash, so the expiry wheel names keys by hash
//! rather than holding a copy of each: a lease costs no second key, and a
//! released lock's key is freed at once. Each map has its own wheel, so a
//! wheel entry needs no database number, and SWAPDB moves deadlines with
//! their keys. The table shrinks as keys go, so memory taken by a burst of
//! locks is given back after they are released.
//!
//! A key holding a small packed hash (a Redisson lock) rests packed: its
//! deadline, key and the hash's items in their resting form (`compact`)
//! in one allocation. Handed out for change it is unpacked into a whole
//! `Entry`, and packed again when another key of its map is handed out or
//! stored: at most one key per map is whole but packable, and a lock taken
//! and released before its map sees another change is never packed at all.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::borrow::Cow;
use std::hash::BuildHasher;
use std::ptr::NonNull;

use hashbrown::HashTable;
use hashbrown::hash_table::Entry as Slot;

use super::access::AccessClock;
use super::value::deadline_passed;
use super::{Entry, HashValue, Value, compact};
use crate::expiry::wheel::TimerWheel;

/// Tables smaller than this are not worth shrinking.
const SHRINK_FLOOR: usize = 64;

/// Stale wheel entries a map tolerates beyond two per key.
const WHEEL_SLACK: usize = 1024;

/// Where a whole node's key length, access clock and key bytes start.
const KEY_LEN_AT: usize = std::mem::size_of::<Entry>();
const CLOCK_AT: usize = KEY_LEN_AT + std::mem::size_of::<u32>();
const KEY_AT: usize = CLOCK_AT + std::mem::size_of::<u32>();

/// A packed node: `[deadline, 6 bytes, 0 for none][key length u8][hash
/// length u8][access clock, 3 bytes][key][hash items at rest]`. A
/// Redisson lock's key, lease and hash take 31 bytes and the key's length
/// this way: 48 (an allocator's size class) for a key of up to 17 bytes,
/// where a whole node and the hash's own allocation took 64 and 48. Six
/// bytes of milliseconds reach the year 10889; a key with a later deadline
/// stays whole.
const DEADLINE_BYTES: usize = 6;
const PACKED_KEY_LEN_AT: usize = DEADLINE_BYTES;
const PACKED_HASH_LEN_AT: usize = PACKED_KEY_LEN_AT + 1;
const PACKED_CLOCK_AT: usize = PACKED_HASH_LEN_AT + 1;
const CLOCK_BYTES: usize = 3;
const PACKED_KEY_AT: usize = PACKED_CLOCK_AT + CLOCK_BYTES;

/// The pointer bit that marks a packed node: both forms are aligned as
/// an `Entry` is, so the lowest bit of their address is free.
const PACKED: usize = 1;

/// A key and its entry in one allocation, named by one thin pointer,
/// whole (`[entry][key length u32][key]`) or packed (see
/// `PACKED_KEY_AT`). The table's slots are the bulk of a small lock's
/// memory: at a million keys the table is half empty, so every byte of a
/// slot costs two per key. A slot holding the key and entry themselves
/// took 64 bytes; a pointer takes 8.
pub struct Node(NonNull<u8>);

// SAFETY: a node owns its entry and key as a `Box` would, reachable only
// through the node (`&self` reads, `&mut self` changes), so it may cross
// threads as its contents may: `Entry` is plain owned data, both.
unsafe impl Send for Node {}
// SAFETY: as for `Send`; nothing behind `&Node` is mutated but through
// atomics (a hash's lookup hint, `TableHash::noted`).
unsafe impl Sync for Node {}

impl Node {
    fn layout(key_len: usize) -> Layout {
        Layout::from_size_align(KEY_AT + key_len, std::mem::align_of::<Entry>())
            .expect("a key fits in memory")
    }

    fn packed_layout(key_len: usize, hash_len: usize) -> Layout {
        Layout::from_size_align(
            PACKED_KEY_AT + key_len + hash_len,
            std::mem::align_of::<Entry>(),
        )
        .expect("at most 520 bytes")
    }

    fn new(key: &[u8], entry: Entry, clock: AccessClock) -> Node {
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
            ptr.add(CLOCK_AT)
                .cast::<u32>()
                .write_unaligned(clock.bits());
            std::ptr::copy_nonoverlapping(key.as_ptr(), ptr.add(KEY_AT).as_ptr(), key.len());
            Node(ptr)
        }
    }

    /// The packed form of `key` and `entry`, if the entry is a packed hash,
    /// both are short enough for one-byte lengths and the deadline fits.
    fn packed(key: &[u8], entry: &Entry, clock: AccessClock) -> Option<Node> {
        let Value::Hash(HashValue::Packed(pairs)) = &entry.value else {
            return None;
        };
        let deadline = entry.expire_at().unwrap_or(0).to_le_bytes();
        let (deadline, beyond) = deadline.split_at(DEADLINE_BYTES);
        if beyond.iter().any(|&b| b != 0) {
            return None;
        }
        // At rest the items are no longer than they are now, so a hash of
        // up to 255 bytes fits the length byte, and a longer one is not
        // walked at every settle.
        let key_len = u8::try_from(key.len()).ok()?;
        if pairs.len() > u8::MAX.into() {
            return None;
        }
        let hash_len = compact::compact_len(pairs)? as u8;
        let layout = Self::packed_layout(key.len(), hash_len.into());
        // SAFETY: the layout is non-zero sized; the deadline is written at
        // offset 0, the lengths, key and items after it, inside the
        // allocation (the items through a slice of
        // the `hash_len` bytes left for them, whose bytes `alloc` leaves
        // uninitialised: zeroed first). The tag bit is free (the address
        // is aligned to 8) and the tagged pointer stays inside the
        // allocation, which is at least `PACKED_KEY_AT` bytes long.
        unsafe {
            let Some(ptr) = NonNull::new(alloc(layout)) else {
                handle_alloc_error(layout)
            };
            std::ptr::copy_nonoverlapping(deadline.as_ptr(), ptr.as_ptr(), DEADLINE_BYTES);
            ptr.add(PACKED_KEY_LEN_AT).write(key_len);
            ptr.add(PACKED_HASH_LEN_AT).write(hash_len);
            let clock = clock.bits().to_le_bytes();
            std::ptr::copy_nonoverlapping(
                clock.as_ptr(),
                ptr.add(PACKED_CLOCK_AT).as_ptr(),
                CLOCK_BYTES,
            );
            let key_at = ptr.add(PACKED_KEY_AT);
            std::ptr::copy_nonoverlapping(key.as_ptr(), key_at.as_ptr(), key.len());
            let items_at = key_at.add(key.len());
            items_at.write_bytes(0, hash_len.into());
            let items = std::slice::from_raw_parts_mut(items_at.as_ptr(), hash_len.into());
            compact::compact(pairs, items);
            Some(Node(ptr.byte_add(PACKED)))
        }
    }

    fn is_packed(&self) -> bool {
        self.0.addr().get() & PACKED != 0
    }

    /// Where the allocation starts, the tag bit taken off.
    fn base(&self) -> NonNull<u8> {
        // SAFETY: a packed node's pointer is its allocation's start plus
        // one (see `packed`); a whole node's is the start itself.
        unsafe { self.0.byte_sub(self.0.addr().get() & PACKED) }
    }

    /// A packed node's key and hash lengths.
    fn packed_lens(&self) -> (usize, usize) {
        let base = self.base();
        // SAFETY: `packed` wrote both lengths.
        unsafe {
            (
                base.add(PACKED_KEY_LEN_AT).read() as usize,
                base.add(PACKED_HASH_LEN_AT).read() as usize,
            )
        }
    }

    pub fn key(&self) -> &[u8] {
        let base = self.base();
        // SAFETY: `new` or `packed` wrote the length and that many key
        // bytes where each form keeps them.
        unsafe {
            if self.is_packed() {
                let (key_len, _) = self.packed_lens();
                std::slice::from_raw_parts(base.add(PACKED_KEY_AT).as_ptr(), key_len)
            } else {
                let len = base.add(KEY_LEN_AT).cast::<u32>().read_unaligned() as usize;
                std::slice::from_raw_parts(base.add(KEY_AT).as_ptr(), len)
            }
        }
    }

    /// The key's access clock.
    pub fn clock(&self) -> AccessClock {
        let base = self.base();
        // SAFETY: `new` wrote four clock bytes at `CLOCK_AT` of a whole
        // node, `packed` three at `PACKED_CLOCK_AT` of a packed one.
        let bits = unsafe {
            if self.is_packed() {
                let mut bytes = [0; 4];
                std::ptr::copy_nonoverlapping(
                    base.add(PACKED_CLOCK_AT).as_ptr(),
                    bytes.as_mut_ptr(),
                    CLOCK_BYTES,
                );
                u32::from_le_bytes(bytes)
            } else {
                base.add(CLOCK_AT).cast::<u32>().read_unaligned()
            }
        };
        AccessClock::from_bits(bits)
    }

    /// Sets the access clock, in place in either form.
    fn set_clock(&mut self, clock: AccessClock) {
        let base = self.base();
        // SAFETY: as in `clock`, the same bytes; `&mut self` makes the
        // write unique.
        unsafe {
            if self.is_packed() {
                let bytes = clock.bits().to_le_bytes();
                std::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    base.add(PACKED_CLOCK_AT).as_ptr(),
                    CLOCK_BYTES,
                );
            } else {
                base.add(CLOCK_AT)
                    .cast::<u32>()
                    .write_unaligned(clock.bits());
            }
        }
    }

    /// A packed node's hash items, at rest.
    fn packed_items(&self) -> &[u8] {
        let (key_len, hash_len) = self.packed_lens();
        // SAFETY: `packed` wrote `hash_len` bytes after the key.
        unsafe {
            std::slice::from_raw_parts(self.base().add(PACKED_KEY_AT + key_len).as_ptr(), hash_len)
        }
    }

    /// A whole node's entry; `None` for a packed one.
    fn whole(&self) -> Option<&Entry> {
        // SAFETY: `new` wrote an entry at offset 0; it lives until drop.
        (!self.is_packed()).then(|| unsafe { self.0.cast::<Entry>().as_ref() })
    }

    pub fn expire_at(&self) -> Option<u64> {
        match self.whole() {
            Some(entry) => entry.expire_at(),
            None => {
                let mut deadline = [0; 8];
                // SAFETY: `packed` wrote the deadline's low bytes at
                // offset 0.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        self.base().as_ptr(),
                        deadline.as_mut_ptr(),
                        DEADLINE_BYTES,
                    );
                }
                Some(u64::from_le_bytes(deadline)).filter(|&at| at != 0)
            }
        }
    }

    pub fn is_expired(&self, now: u64) -> bool {
        self.expire_at().is_some_and(|at| deadline_passed(at, now))
    }

    /// What TYPE answers, without unpacking.
    pub fn type_name(&self) -> &'static str {
        self.whole().map_or("hash", |e| e.value.type_name())
    }

    /// The entry; a packed node's is made for the occasion.
    pub fn entry(&self) -> Cow<'_, Entry> {
        match self.whole() {
            Some(entry) => Cow::Borrowed(entry),
            None => Cow::Owned(Entry::new(
                Value::Hash(HashValue::Packed(compact::expand(self.packed_items()))),
                self.expire_at(),
            )),
        }
    }

    /// The entry for change, unpacking the node first.
    fn entry_mut(&mut self) -> &mut Entry {
        if self.is_packed() {
            *self = Node::new(self.key(), self.entry().into_owned(), self.clock());
        }
        // SAFETY: whole now, so `new` wrote an entry at offset 0; `&mut
        // self` makes the borrow unique.
        unsafe { self.0.cast::<Entry>().as_mut() }
    }

    /// Packs a whole node whose entry allows it.
    fn pack(&mut self) {
        if let Some(packed) = self
            .whole()
            .and_then(|e| Node::packed(self.key(), e, self.clock()))
        {
            *self = packed;
        }
    }

    /// A copy, packed if it allows.
    fn duplicate(&self) -> Node {
        let mut copy = Node::new(self.key(), self.entry().into_owned(), self.clock());
        copy.pack();
        copy
    }

    fn into_entry(self) -> Entry {
        if self.is_packed() {
            return self.entry().into_owned();
        }
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: the entry is moved out exactly once and the memory
        // freed without dropping it again (`this` never drops).
        unsafe {
            let entry = this.0.cast::<Entry>().read();
            dealloc(this.0.as_ptr(), Self::layout(this.key().len()));
            entry
        }
    }

    fn replace_entry(&mut self, entry: Entry, clock: AccessClock) {
        if self.is_packed() {
            *self = Node::new(self.key(), entry, clock);
        } else {
            *self.entry_mut() = entry;
            self.set_clock(clock);
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if self.is_packed() {
            let (key_len, hash_len) = self.packed_lens();
            // SAFETY: a packed node holds plain bytes, allocated with
            // this layout.
            unsafe { dealloc(self.base().as_ptr(), Self::packed_layout(key_len, hash_len)) };
            return;
        }
        let layout = Self::layout(self.key().len());
        // SAFETY: the entry is live (see `into_entry`) and the memory was
        // allocated with this layout.
        unsafe {
            std::ptr::drop_in_place(self.0.cast::<Entry>().as_ptr());
            dealloc(self.0.as_ptr(), layout);
        }
    }
}

/// A key's place in a map's table, as `find_hashed` gives it: good until a
/// key is inserted or removed.
#[derive(Clone, Copy)]
pub struct Place(usize);

pub struct DbMap {
    table: HashTable<Node>,
    hasher: KeyHasher,
    /// Deadlines, each naming its key by its hash's 32 bits.
    wheel: TimerWheel<u32>,
    /// The hash of the key last handed out for change or stored whole,
    /// packed when another key is (see `unsettle`).
    unsettled: Option<u64>,
    /// How many keys have a deadline (RESIZEDB's and INFO's `expires`).
    expiring: usize,
    /// A capture's hold on the map, while it saves the map (see `Frozen`).
    frozen: Option<Box<Frozen>>,
}

/// A capture's hold on one map (see `keyspace::snapshot`). The saver
/// walks the table's buckets in order, a few at a time, and a key about
/// to change in a bucket it has not reached yet is first set aside as it
/// was. While a map is frozen its table is never rehashed or shrunk
/// (a growth that would rehash it sets the rest aside first), so a key
/// stays in its bucket and "not reached yet" keeps its meaning.
struct Frozen {
    /// The database the map was at the capture: SWAPDB moves maps.
    db: usize,
    /// Buckets below this one are saved; `usize::MAX` once every key
    /// left is set aside.
    cursor: usize,
    /// Whether the file keeps access clocks, so a read that sets one
    /// changes what is saved.
    clocks: bool,
    /// Keys changed since the capture and not saved yet.
    aside: HashTable<Aside>,
}

/// A key changed since the capture, in a bucket the saver had not reached.
enum Aside {
    /// Created since: the saver passes it by.
    Absent(Box<[u8]>),
    /// As it was at the capture: saved from here, not from the table.
    Was(Node),
}

impl Aside {
    fn key(&self) -> &[u8] {
        match self {
            Aside::Absent(key) => key,
            Aside::Was(node) => node.key(),
        }
    }
}

impl Frozen {
    fn holds(&self, hasher: &KeyHasher, key: &[u8]) -> bool {
        !self.aside.is_empty()
            && self
                .aside
                .find(hasher.hash(key), |a| a.key() == key)
                .is_some()
    }

    /// Sets `key` aside as `was` makes it, unless it is aside already.
    /// `leaving`: the key is about to go, so a mark that it was created
    /// since is dropped (a lock taken and released during a save leaves
    /// nothing behind).
    fn keep(&mut self, hasher: &KeyHasher, key: &[u8], leaving: bool, was: impl FnOnce() -> Aside) {
        let hash = hasher.hash(key);
        match self.aside.find_entry(hash, |a| a.key() == key) {
            Ok(slot) => {
                if leaving && matches!(slot.get(), Aside::Absent(_)) {
                    slot.remove();
                }
            }
            Err(absent) => {
                absent
                    .into_table()
                    .insert_unique(hash, was(), |a| hasher.hash(a.key()));
            }
        }
    }
}

/// Where a capture's walk of a map stands after `DbMap::save_step`.
pub enum SaveStep {
    More,
    /// The walk is through; these keys, set aside by changes, are left to
    /// save, and the map is free of the capture.
    Done(Vec<Node>),
}

impl DbMap {
    /// A wheel starts at the present: one started far behind it would
    /// re-file its entries level by level on the way up.
    pub fn new(now: u64) -> Self {
        DbMap {
            table: HashTable::new(),
            hasher: Default::default(),
            wheel: TimerWheel::new(now),
            unsettled: None,
            expiring: 0,
            frozen: None,
        }
    }
    /// The hash the table finds `key` by.
    pub fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash(key)
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Keys with a deadline.
    pub fn expiring(&self) -> usize {
        self.expiring
    }

    /// A key's deadline was set or cleared in place (`Entry::set_expire_at`).
    pub fn deadline_changed(&mut self, had: bool, has: bool) {
        self.expiring = (self.expiring + usize::from(has)).saturating_sub(usize::from(had));
    }

    pub fn clear(&mut self, now: u64) {
        let table = std::mem::take(&mut self.table);
        if let Some(frozen) = self.frozen.as_deref_mut() {
            // The keys a capture still needs move aside whole; those
            // created since go.
            let mut table = table;
            for index in frozen.cursor..table.num_buckets() {
                if let Ok(slot) = table.get_bucket_entry(index) {
                    let node = slot.remove().0;
                    let key: Box<[u8]> = node.key().into();
                    frozen.keep(&self.hasher, &key, true, || Aside::Was(node));
                }
            }
            frozen.cursor = usize::MAX;
        }
        self.expiring = 0;
        self.wheel = TimerWheel::new(now);
        self.unsettled = None;
    }

    /// Packs the key last handed out for change, as far as it allows.
    #[inline(never)]
    fn settle(&mut self) {
        if let Some(hash) = self.unsettled.take() {
            // Nodes whose hashes merely look alike are packed too; packing
            // is always allowed.
            self.table.iter_hash_mut(hash).for_each(Node::pack);
        }
    }

    /// Packs the key last handed out, unless it is the one with this hash,
    /// which is handed out next. No borrow of the last one can be alive:
    /// this takes the map mutably.
    /// Inlined: a command's every lookup passes here, and most find the
    /// key they looked up last.
    #[inline(always)]
    fn unsettle(&mut self, hash: u64) {
        if self.unsettled != Some(hash) {
            self.settle();
            self.unsettled = Some(hash);
        }
    }

    /// Files `key`'s deadline in the wheel.
    pub fn schedule(&mut self, key: &[u8], at: u64) {
        self.wheel.insert(at, short_hash(self.hash(key)));
    }

    /// The first millisecond `expire_due` may find a key gone in, if any
    /// deadline is filed.
    pub fn next_due(&self) -> Option<u64> {
        self.wheel.earliest_bound().map(super::value::gone_from)
    }

    /// Takes out every key whose deadline has passed by `now`.
    pub fn expire_due(&mut self, now: u64) -> Vec<Node> {
        self.sweep_wheel();
        let mut due = Vec::new();
        let (table, hasher) = (&self.table, &self.hasher);
        // The wheel fires a deadline in its own millisecond; the key lives
        // through that one.
        self.wheel.advance(
            now.saturating_sub(1),
            |short| deadline_of(table, hasher, short),
            |short| due.push(widen(short)),
        );
        due.into_iter()
            .flat_map(|hash| self.take_expired(hash, now))
            .collect()
    }

    /// Whether the next expiry pass would sweep the wheel (below).
    pub fn wheel_stale(&self) -> bool {
        self.wheel.len() > 2 * self.len() + WHEEL_SLACK
    }

    /// Drops the wheel's entries for deadlines no key has any more (keys
    /// deleted or given a new deadline), once they are most of it: a burst
    /// of released locks gives back the room of their leases before the
    /// leases would have run out. Amortised: a sweep leaves one entry per
    /// key (more only for a key whose deadline was brought forward), and
    /// the next needs as many again.
    fn sweep_wheel(&mut self) {
        if !self.wheel_stale() {
            return;
        }
        let (table, hasher) = (&self.table, &self.hasher);
        self.wheel.retain(|short| deadline_of(table, hasher, short));
    }

    pub fn get(&self, key: &[u8]) -> Option<&Node> {
        self.get_hashed(self.hash(key), key)
    }

    /// `get` with the key's `hash` already known.
    pub fn get_hashed(&self, hash: u64, key: &[u8]) -> Option<&Node> {
        self.table.find(hash, |n| n.key() == key)
    }

    /// Where `key` is in the table, found by its `hash`: a lookup that
    /// goes on to change the key reaches it again through `entry_at`
    /// without a second probe.
    pub fn find_hashed(&self, hash: u64, key: &[u8]) -> Option<Place> {
        self.table
            .find_bucket_index(hash, |n| n.key() == key)
            .map(Place)
    }

    pub fn node_at(&self, place: Place) -> Option<&Node> {
        self.table.get_bucket(place.0)
    }

    /// Sets the access clock of a key `find_hashed` found, with nothing
    /// inserted or removed since; a packed key stays packed.
    #[inline]
    pub fn set_clock_at(&mut self, place: Place, clock: AccessClock) {
        self.preserve_clock(place.0);
        if let Some(node) = self.table.get_bucket_mut(place.0) {
            node.set_clock(clock);
        }
    }

    /// Counts a use of a key `find_hashed` found in its LFU clock.
    pub fn count_use_at(&mut self, place: Place, now: u64) {
        self.preserve_clock(place.0);
        if let Some(node) = self.table.get_bucket_mut(place.0) {
            node.set_clock(node.clock().counted(now));
        }
    }

    /// Sets the access clock of `key`, if it is there.
    pub fn set_clock(&mut self, key: &[u8], clock: AccessClock) {
        let hash = self.hash(key);
        if let Some(index) = self.table.find_bucket_index(hash, |n| n.key() == key) {
            self.set_clock_at(Place(index), clock);
        }
    }

    /// `get_mut_hashed` for a key `find_hashed` found, with nothing
    /// inserted or removed since (packing moves no key).
    pub fn entry_at(&mut self, hash: u64, place: Place) -> Option<&mut Entry> {
        self.unsettle(hash);
        self.preserve(place.0, false);
        self.table.get_bucket_mut(place.0).map(Node::entry_mut)
    }

    /// The entry for change, whole until the next `settle`.
    pub fn get_mut_hashed(&mut self, hash: u64, key: &[u8]) -> Option<&mut Entry> {
        if self.frozen.is_some() {
            let index = self.table.find_bucket_index(hash, |n| n.key() == key)?;
            return self.entry_at(hash, Place(index));
        }
        self.unsettle(hash);
        self.table
            .find_mut(hash, |n| n.key() == key)
            .map(Node::entry_mut)
    }

    /// Stores `entry` under `key`, replacing what was there, with the
    /// access clock `stamp` makes of the clock the key had, if any.
    pub fn insert(
        &mut self,
        key: &[u8],
        entry: Entry,
        stamp: impl FnOnce(Option<AccessClock>) -> AccessClock,
    ) {
        let hash = self.hash(key);
        self.unsettle(hash);
        if self.frozen.is_some() {
            self.freeze_insert(hash, key);
        }
        let has_deadline = entry.expire_at().is_some();
        let hasher = &self.hasher;
        let created = match self
            .table
            .entry(hash, |n| n.key() == key, |n| hasher.hash(n.key()))
        {
            Slot::Occupied(mut slot) => {
                let clock = stamp(Some(slot.get().clock()));
                let node = slot.get_mut();
                self.expiring = self
                    .expiring
                    .saturating_sub(usize::from(node.expire_at().is_some()));
                node.replace_entry(entry, clock);
                None
            }
            Slot::Vacant(slot) => Some(
                slot.insert(Node::new(key, entry, stamp(None)))
                    .bucket_index(),
            ),
        };
        self.expiring += usize::from(has_deadline);
        if let (Some(index), Some(frozen)) = (created, self.frozen.as_deref_mut())
            && index >= frozen.cursor
        {
            frozen.keep(&self.hasher, key, false, || Aside::Absent(key.into()));
        }
    }

    /// Before `key` (of `hash`) is stored in a frozen map: the table's
    /// growth would move keys, so the capture first sets aside every key
    /// it still needs (a cost paid once per doubling during a save); a
    /// key there is set aside as it is.
    #[cold]
    fn freeze_insert(&mut self, hash: u64, key: &[u8]) {
        if self.table.len() == self.table.capacity() {
            self.set_aside_rest();
        }
        if let Some(index) = self.table.find_bucket_index(hash, |n| n.key() == key) {
            self.preserve(index, false);
        }
    }

    /// Sets aside every key the capture has not reached, so the table may
    /// move them.
    fn set_aside_rest(&mut self) {
        let Some(frozen) = self.frozen.as_deref_mut() else {
            return;
        };
        for index in frozen.cursor..self.table.num_buckets() {
            if let Some(node) = self.table.get_bucket(index) {
                frozen.keep(&self.hasher, node.key(), false, || {
                    Aside::Was(node.duplicate())
                });
            }
        }
        frozen.cursor = usize::MAX;
    }

    /// Called before the key in bucket `index` changes (`leaving`: goes):
    /// a capture that has not saved it yet sets it aside as it is.
    #[inline]
    fn preserve(&mut self, index: usize, leaving: bool) {
        if let Some(frozen) = self.frozen.as_deref_mut()
            && index >= frozen.cursor
            && let Some(node) = self.table.get_bucket(index)
        {
            frozen.keep(&self.hasher, node.key(), leaving, || {
                Aside::Was(node.duplicate())
            });
        }
    }

    /// `preserve` before a key's access clock changes, which matters only
    /// to a file that keeps clocks.
    #[inline]
    fn preserve_clock(&mut self, index: usize) {
        if self.frozen.as_ref().is_some_and(|f| f.clocks) {
            self.preserve(index, false);
        }
    }

    /// Holds the map as it is now for a capture saving it as database
    /// `db` (`clocks`: with access clocks), until `save_step` is through.
    pub fn freeze(&mut self, db: usize, clocks: bool) {
        self.frozen = Some(Box::new(Frozen {
            db,
            cursor: 0,
            clocks,
            aside: HashTable::new(),
        }));
    }

    /// Lets go of a capture given up half way.
    pub fn thaw(&mut self) {
        self.frozen = None;
    }

    /// The database a capture froze this map as, while it saves it.
    pub fn frozen_as(&self) -> Option<usize> {
        self.frozen.as_ref().map(|f| f.db)
    }

    /// Saves on from where the last step stopped: hands `save` the keys,
    /// as they were at the capture, of the next buckets, up to `budget`
    /// keys (or sixteen times as many buckets), or until `save` answers
    /// false. A step is short, so a command waiting for the shard waits
    /// little.
    pub fn save_step(&mut self, budget: usize, mut save: impl FnMut(&Node) -> bool) -> SaveStep {
        let Some(frozen) = self.frozen.as_deref_mut() else {
            return SaveStep::Done(Vec::new());
        };
        let end = self.table.num_buckets();
        let last = end.min(frozen.cursor.saturating_add(budget * 16));
        let (mut index, mut saved, mut go_on) = (frozen.cursor, 0, true);
        while index < last && saved < budget && go_on {
            if let Some(node) = self.table.get_bucket(index)
                && !frozen.holds(&self.hasher, node.key())
            {
                go_on = save(node);
                saved += 1;
            }
            index += 1;
        }
        frozen.cursor = frozen.cursor.max(index);
        if frozen.cursor < end {
            return SaveStep::More;
        }
        let frozen = self.frozen.take().expect("frozen above");
        SaveStep::Done(
            frozen
                .aside
                .into_iter()
                .filter_map(|a| match a {
                    Aside::Was(node) => Some(node),
                    Aside::Absent(_) => None,
                })
                .collect(),
        )
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let hash = self.hash(key);
        let index = self.table.find_bucket_index(hash, |n| n.key() == key)?;
        self.preserve(index, true);
        let node = self.table.get_bucket_entry(index).ok()?.remove().0;
        self.expiring = self
            .expiring
            .saturating_sub(usize::from(node.expire_at().is_some()));
        // A lock released by the command that took it leaves nothing to
        // pack.
        if self.unsettled == Some(hash) {
            self.unsettled = None;
        }
        self.shrink_if_sparse();
        Some(node.into_entry())
    }

    /// Takes out every key with this hash whose deadline has passed by
    /// `now` (the wheel fired for one of them; the others are due too).
    fn take_expired(&mut self, hash: u64, now: u64) -> Vec<Node> {
        let mut taken = Vec::new();
        while let Some(index) = self.table.find_bucket_index(hash, |n| {
            n.is_expired(now) && self.hasher.hash(n.key()) == hash
        }) {
            self.preserve(index, true);
            let Ok(slot) = self.table.get_bucket_entry(index) else {
                break;
            };
            taken.push(slot.remove().0);
        }
        self.expiring = self.expiring.saturating_sub(taken.len());
        if !taken.is_empty() {
            self.shrink_if_sparse();
        }
        taken
    }

    pub fn iter(&self) -> impl Iterator<Item = &Node> {
        self.table.iter()
    }

    /// Halves the table's room once three quarters of it is unused, so a
    /// table never shrinks and grows back over a few keys.
    fn shrink_if_sparse(&mut self) {
        let capacity = self.table.capacity();
        // A frozen table keeps its buckets (see `Frozen`).
        if capacity > SHRINK_FLOOR && self.frozen.is_none() && self.table.len() * 4 < capacity {
            let hasher = &self.hasher;
            self.table
                .shrink_to(self.table.len() * 2, |n| hasher.hash(n.key()));
        }
    }
}

/// Keys' hashes: 32 bits of a seeded hash, in both halves of the 64 the
/// table takes (it places a key by the low bits and tags its slot with the
/// top ones), so that a wheel entry is the 32 bits alone, 4 bytes per
/// lease, and gives the whole hash back. Keys whose 32 bits collide share
/// their entries (see `deadline_of`); at a million keys in one map about a
/// hundred pairs do.
#[derive(Default)]
struct KeyHasher(foldhash::fast::RandomState);

impl KeyHasher {
    fn hash(&self, key: &[u8]) -> u64 {
        widen(self.0.hash_one(key) as u32)
    }
}

/// What the wheel names a key by.
fn short_hash(hash: u64) -> u32 {
    hash as u32
}

/// The hash a wheel entry stands for.
fn widen(short: u32) -> u64 {
    (u64::from(short) << 32) | u64::from(short)
}

/// The deadline the wheel's entry for this hash stands for: the earliest
/// of the keys with this hash (one key, bar a collision).
fn deadline_of(table: &HashTable<Node>, hasher: &KeyHasher, short: u32) -> Option<u64> {
    let hash = widen(short);
    table
        .iter_hash(hash)
        .filter(|n| hasher.hash(n.key()) == hash)
        .filter_map(Node::expire_at)
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::keyspace::EncodingLimits;
    use bytes::Bytes;

    impl DbMap {
        /// Stores a key as new, with a fresh clock.
        fn put(&mut self, key: &[u8], entry: Entry) {
            self.insert(key, entry, |_| AccessClock::fresh(0, false));
        }
    }

    fn entry(at: Option<u64>) -> Entry {
        Entry::new(Value::string(Bytes::from_static(b"v")), at)
    }

    fn text(s: &str) -> Entry {
        Entry::new(Value::string(Bytes::copy_from_slice(s.as_bytes())), None)
    }

    /// Runs a capture's walk to its end: every key it saves, in order.
    fn walk_out(map: &mut DbMap, steps: &mut impl FnMut(&mut DbMap)) -> Vec<(Vec<u8>, Entry)> {
        let mut saved = Vec::new();
        loop {
            let step = map.save_step(8, |n| {
                saved.push((n.key().to_vec(), n.entry().into_owned()));
                true
            });
            match step {
                SaveStep::More => steps(map),
                SaveStep::Done(aside) => {
                    saved.extend(
                        aside
                            .iter()
                            .map(|n| (n.key().to_vec(), n.entry().into_owned())),
                    );
                    return saved;
                }
            }
        }
    }

    fn as_frozen(keys: usize) -> (DbMap, Vec<(Vec<u8>, Entry)>) {
        let mut map = DbMap::new(0);
        let mut was: Vec<_> = (0..keys)
            .map(|i| (format!("k{i}").into_bytes(), text(&format!("v{i}"))))
            .collect();
        for (k, e) in &was {
            map.put(k, e.clone());
        }
        map.freeze(0, false);
        was.sort_by(|a, b| a.0.cmp(&b.0));
        (map, was)
    }

    fn sorted(mut saved: Vec<(Vec<u8>, Entry)>) -> Vec<(Vec<u8>, Entry)> {
        saved.sort_by(|a, b| a.0.cmp(&b.0));
        saved
    }

    #[test]
    fn a_frozen_map_saves_every_key_once_as_it_was_whatever_changes_meanwhile() {
        let (mut map, was) = as_frozen(300);
        let mut round = 0;
        let saved = walk_out(&mut map, &mut |map| {
            round += 1;
            // Changes, deletions and new keys, in buckets saved and not;
            // the new keys make the table grow, which moves keys.
            for i in (round % 7..300).step_by(7) {
                let key = format!("k{i}");
                let hash = map.hash(key.as_bytes());
                if let Some(e) = map.get_mut_hashed(hash, key.as_bytes()) {
                    *e = text("changed");
                }
                map.remove(format!("k{}", (i + 3) % 300).as_bytes());
                map.put(format!("new{round}:{i}").as_bytes(), text("new"));
                map.put(format!("k{}", (i + 5) % 300).as_bytes(), text("replaced"));
            }
        });
        assert!(round > 3, "the walk took steps");
        assert_eq!(sorted(saved), was);
        assert!(map.frozen.is_none(), "free once through");
    }

    #[test]
    fn a_flush_during_a_walk_keeps_what_the_walk_needs() {
        let (mut map, was) = as_frozen(100);
        let mut flushed = false;
        let saved = walk_out(&mut map, &mut |map| {
            if !flushed {
                map.put(b"created", text("since"));
                map.clear(0);
                map.put(b"after", text("flush"));
                flushed = true;
            }
        });
        assert_eq!(sorted(saved), was);
        assert_eq!(map.len(), 1);
    }

    #[test]
    fn counts_the_keys_with_a_deadline() {
        let mut map = DbMap::new(0);
        let put = |map: &mut DbMap, key: &[u8], at: Option<u64>| {
            map.put(key, entry(at));
            if let Some(at) = at {
                map.schedule(key, at);
            }
        };
        for i in 0..10u64 {
            put(
                &mut map,
                format!("k{i}").as_bytes(),
                (i % 2 == 0).then_some(100 + i),
            );
        }
        assert_eq!(map.expiring(), 5);
        put(&mut map, b"k0", None);
        put(&mut map, b"k1", Some(7));
        map.remove(b"k2");
        let hash = map.hash(b"k3");
        let had = map
            .get_mut_hashed(hash, b"k3")
            .unwrap()
            .set_expire_at(Some(9));
        map.deadline_changed(had.is_some(), true);
        map.schedule(b"k3", 9);
        assert_eq!(map.expiring(), 5, "k1, k3, k4, k6, k8");
        assert_eq!(map.expire_due(1_000).len(), 5);
        assert_eq!(map.expiring(), 0);
        put(&mut map, b"k0", Some(5_000));
        assert_eq!(map.expiring(), 1);
        map.clear(0);
        assert_eq!(map.expiring(), 0);
    }

    #[test]
    fn finds_expired_keys_by_hash_and_shrinks_when_emptied() {
        let mut map = DbMap::new(0);
        for i in 0..10_000u64 {
            map.put(format!("k{i}").as_bytes(), entry(Some(i)));
        }
        let grown = map.table.capacity();
        assert_eq!(map.len(), 10_000);
        let hash = map.hash(b"k5");
        assert!(map.take_expired(hash, 5).is_empty(), "not due yet");
        let taken = map.take_expired(hash, 6);
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
            map.put(key, Entry::new(value.clone(), None));
            assert_eq!(map.get(key).map(|n| n.entry().value.clone()), Some(value));
        }
        assert_eq!(map.iter().map(|n| n.key().len()).sum::<usize>(), 1001);
        let entry = map.remove(&long).expect("present");
        assert_eq!(entry.value, Value::string(Bytes::from(long.repeat(2))));
        map.get_mut_hashed(map.hash(b""), b"")
            .expect("present")
            .set_expire_at(Some(3));
        map.deadline_changed(false, true);
        assert_eq!(map.take_expired(map.hash(b""), 4).len(), 1);
        assert_eq!(map.len(), 1);
    }

    /// Two keys whose 32 bits collide, found the birthday way (about
    /// 80,000 keys hashed on average).
    fn colliding_keys(map: &DbMap) -> (Vec<u8>, Vec<u8>) {
        let mut seen = std::collections::HashMap::new();
        (0u64..)
            .find_map(|i| {
                let key = format!("k{i}").into_bytes();
                let earlier = seen.insert(short_hash(map.hash(&key)), key.clone())?;
                Some((earlier, key))
            })
            .expect("a collision")
    }

    #[test]
    fn keys_sharing_a_wheel_entry_expire_each_at_its_own_deadline() {
        let mut map = DbMap::new(0);
        let (early, late) = colliding_keys(&map);
        assert_eq!(map.hash(&early), map.hash(&late));
        for (key, at) in [(&early, 10), (&late, 20)] {
            map.put(key, entry(Some(at)));
            map.schedule(key, at);
        }
        map.wheel
            .retain(|short| deadline_of(&map.table, &map.hasher, short));
        assert_eq!(map.wheel.len(), 2, "one entry per deadline");
        let keys = |nodes: Vec<Node>| nodes.iter().map(|n| n.key().to_vec()).collect::<Vec<_>>();
        assert!(map.expire_due(10).is_empty());
        assert_eq!(keys(map.expire_due(11)), [early]);
        assert!(map.expire_due(20).is_empty());
        assert_eq!(keys(map.expire_due(21)), [late]);
        assert_eq!(map.len(), 0);
    }

    #[test]
    fn insert_replaces() {
        let mut map = DbMap::new(0);
        map.put(b"k", entry(None));
        map.put(b"k", entry(Some(7)));
        assert_eq!(map.len(), 1);
        assert_eq!(map.get(b"k").unwrap().expire_at(), Some(7));
    }

    fn hash_of(pairs: &[(&[u8], &[u8])]) -> Value {
        let mut hash = HashValue::default();
        for (field, value) in pairs {
            hash.insert(field, value, &EncodingLimits::default());
        }
        Value::Hash(hash)
    }

    fn is_packed(map: &DbMap, key: &[u8]) -> bool {
        map.get(key).expect("present").is_packed()
    }

    const OWNER: &[u8] = b"8743c9c0-0795-4907-87fd-6c719a6b4586:1";

    #[test]
    fn a_small_hash_rests_packed_and_unpacks_for_change() {
        let mut map = DbMap::new(0);
        map.put(b"lock", Entry::new(hash_of(&[(OWNER, b"1")]), Some(30_000)));
        assert!(!is_packed(&map, b"lock"), "whole until settled");
        map.settle();
        assert!(is_packed(&map, b"lock"));
        let node = map.get(b"lock").expect("present");
        assert_eq!(node.key(), b"lock");
        assert_eq!(node.expire_at(), Some(30_000));
        assert_eq!(node.type_name(), "hash");
        assert!(!node.is_expired(30_000) && node.is_expired(30_001));
        assert_eq!(node.entry().value, hash_of(&[(OWNER, b"1")]));

        let hash = map.hash(b"lock");
        let held = map.get_mut_hashed(hash, b"lock").expect("present");
        let Value::Hash(h) = &mut held.value else {
            panic!("a hash")
        };
        h.insert(OWNER, b"2", &EncodingLimits::default());
        held.set_expire_at(None);
        assert!(!is_packed(&map, b"lock"));
        map.settle();
        assert!(is_packed(&map, b"lock"));
        let node = map.get(b"lock").expect("present");
        assert_eq!(node.expire_at(), None);
        assert_eq!(node.entry().value, hash_of(&[(OWNER, b"2")]));

        map.put(b"lock", entry(Some(5)));
        map.settle();
        assert!(!is_packed(&map, b"lock"), "strings stay whole");
        assert_eq!(map.get(b"lock").expect("present").type_name(), "string");
    }

    #[test]
    fn a_redisson_lock_with_a_17_byte_name_rests_in_48_bytes() {
        let mut map = DbMap::new(0);
        let key = b"redisson:lock:123";
        map.put(key, Entry::new(hash_of(&[(OWNER, b"1")]), Some(30_000)));
        map.settle();
        let node = map.get(key).expect("present");
        let (key_len, hash_len) = node.packed_lens();
        assert_eq!(Node::packed_layout(key_len, hash_len).size(), 48);
        assert_eq!(node.entry().value, hash_of(&[(OWNER, b"1")]));
    }

    #[test]
    fn changing_another_key_settles_the_last_one() {
        let mut map = DbMap::new(0);
        map.put(b"a", Entry::new(hash_of(&[(b"f", b"v")]), None));
        map.put(b"b", Entry::new(hash_of(&[(b"f", b"v")]), None));
        assert!(is_packed(&map, b"a") && !is_packed(&map, b"b"));
        map.get_mut_hashed(map.hash(b"a"), b"a");
        assert!(!is_packed(&map, b"a") && is_packed(&map, b"b"));
        map.get_mut_hashed(map.hash(b"missing"), b"missing");
        assert!(is_packed(&map, b"a") && is_packed(&map, b"b"));
        map.get_mut_hashed(map.hash(b"a"), b"a");
        map.remove(b"a");
        assert_eq!(map.unsettled, None, "nothing left to pack");
    }

    #[test]
    fn packs_only_what_one_byte_lengths_and_six_deadline_bytes_hold() {
        let limits = EncodingLimits::default();
        // 1 + 60 + 1 + 64 + 1 + 64 + 1 + 63 = 255 bytes packed.
        let mut at_limit = HashValue::default();
        at_limit.insert(&[b'a'; 60], &[b'v'; 64], &limits);
        at_limit.insert(&[b'b'; 64], &[b'v'; 63], &limits);
        let mut over = at_limit.clone();
        over.insert(b"c", b"", &limits);
        let mut map = DbMap::new(0);
        let long_key = [b'k'; 256];
        let latest = (1 << 48) - 1;
        let cases = [
            (&long_key[..255], at_limit.clone(), latest, true),
            (&long_key[..], at_limit.clone(), latest, false),
            (&long_key[..1], over, latest, false),
            (&long_key[..2], HashValue::default(), latest + 1, false),
            (&[][..], HashValue::default(), latest, true),
        ];
        for (key, hash, at, packs) in cases {
            let value = Value::Hash(hash);
            map.put(key, Entry::new(value.clone(), Some(at)));
            map.settle();
            assert_eq!(is_packed(&map, key), packs, "key of {}", key.len());
            let node = map.get(key).expect("present");
            assert_eq!(node.key(), key);
            assert_eq!(node.expire_at(), Some(at));
            assert_eq!(node.entry().value, value);
        }
    }

    #[test]
    fn packed_nodes_expire_and_give_back_their_entries() {
        let mut map = DbMap::new(0);
        for i in 0..1000u64 {
            let key = format!("lock:{i}");
            map.put(
                key.as_bytes(),
                Entry::new(hash_of(&[(OWNER, b"1")]), Some(i + 1)),
            );
            map.schedule(key.as_bytes(), i + 1);
        }
        map.settle();
        assert!(map.iter().all(Node::is_packed));
        let expired = map.expire_due(501);
        assert_eq!(expired.len(), 500);
        assert!(expired.iter().all(|n| n.is_packed() && n.is_expired(501)));
        let entry = map.remove(b"lock:700").expect("present");
        assert_eq!(entry.expire_at(), Some(701));
        assert_eq!(entry.value, hash_of(&[(OWNER, b"1")]));
        let taken = expired.into_iter().next().expect("one").into_entry();
        assert_eq!(taken.value, hash_of(&[(OWNER, b"1")]));
        assert_eq!(map.len(), 499);
        map.put(b"lock:800", entry.clone());
        assert_eq!(
            map.get(b"lock:800").expect("present").expire_at(),
            Some(701)
        );
        map.clear(0);
        assert_eq!(map.len(), 0);
    }
}
