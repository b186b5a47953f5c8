//! Redis's encoding thresholds (`hash-max-listpack-entries` and kin): how
//! large a value Redis keeps in its compact form. Clients see the form in
//! OBJECT ENCODING, in reply order and in MEMORY USAGE, so rlockd makes
//! Redis's conversions at the same points, whatever it holds underneath.

use std::sync::atomic::{AtomicU64, Ordering};

/// Redis's default `list-max-listpack-size -2`: 8 KB per quicklist node
/// (rlockd keeps the directive without acting on it).
pub(super) const LIST_NODE_BYTES: u64 = 8 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodingLimits {
    pub hash_max_listpack_entries: u64,
    pub hash_max_listpack_value: u64,
    pub set_max_intset_entries: u64,
    pub zset_max_listpack_entries: u64,
    pub zset_max_listpack_value: u64,
    /// A stream node's size in entries and bytes (`stream-node-max-*`;
    /// 0: no limit), which approximate trimming works in.
    pub stream_node_max_entries: u64,
    pub stream_node_max_bytes: u64,
}

impl Default for EncodingLimits {
    fn default() -> Self {
        EncodingLimits::DEFAULT
    }
}

fn within(n: usize, max: u64) -> bool {
    n as u64 <= max
}

impl EncodingLimits {
    /// Redis's defaults.
    pub const DEFAULT: EncodingLimits = EncodingLimits {
        hash_max_listpack_entries: 512,
        hash_max_listpack_value: 64,
        set_max_intset_entries: 512,
        zset_max_listpack_entries: 128,
        zset_max_listpack_value: 64,
        stream_node_max_entries: 100,
        stream_node_max_bytes: 4096,
    };

    /// Whether a hash of `len` pairs may stay a listpack.
    pub fn hash_len_fits(&self, len: usize) -> bool {
        within(len, self.hash_max_listpack_entries)
    }

    /// Whether a field or value this long may live in a hash's listpack.
    pub fn hash_item_fits(&self, len: usize) -> bool {
        within(len, self.hash_max_listpack_value)
    }

    pub fn intset_len_fits(&self, len: usize) -> bool {
        within(len, self.set_max_intset_entries)
    }

    /// Whether a sorted set of `len` members, the longest `longest` bytes,
    /// may be a listpack.
    /// Whether a stream node holding `entries` entries in `bytes` bytes
    /// takes one more of `more` bytes.
    pub fn stream_node_takes(&self, entries: u64, bytes: u64, more: u64) -> bool {
        let max_entries = self.stream_node_max_entries;
        let max_bytes = self.stream_node_max_bytes;
        (max_entries == 0 || entries < max_entries) && (max_bytes == 0 || bytes + more < max_bytes)
    }

    pub fn zset_fits(&self, len: usize, longest: usize) -> bool {
        within(len, self.zset_max_listpack_entries) && within(longest, self.zset_max_listpack_value)
    }
}

/// The keyspace's copy, which CONFIG SET replaces: atomics, so that a
/// write reads the limits without taking a lock.
#[derive(Debug)]
pub(super) struct SharedLimits([AtomicU64; 7]);

impl SharedLimits {
    pub(super) fn new(limits: EncodingLimits) -> Self {
        let shared = SharedLimits(Default::default());
        shared.store(limits);
        shared
    }

    pub(super) fn store(&self, l: EncodingLimits) {
        let values = [
            l.hash_max_listpack_entries,
            l.hash_max_listpack_value,
            l.set_max_intset_entries,
            l.zset_max_listpack_entries,
            l.zset_max_listpack_value,
            l.stream_node_max_entries,
            l.stream_node_max_bytes,
        ];
        for (slot, v) in self.0.iter().zip(values) {
            slot.store(v, Ordering::Relaxed);
        }
    }

    pub(super) fn load(&self) -> EncodingLimits {
        let [a, b, c, d, e, f, g] = &self.0;
        let get = |x: &AtomicU64| x.load(Ordering::Relaxed);
        EncodingLimits {
            hash_max_listpack_entries: get(a),
            hash_max_listpack_value: get(b),
            set_max_intset_entries: get(c),
            zset_max_listpack_entries: get(d),
            zset_max_listpack_value: get(e),
            stream_node_max_entries: get(f),
            stream_node_max_bytes: get(g),
        }
    }
}
