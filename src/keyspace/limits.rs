//! Redis's encoding thresholds (`hash-max-listpack-entries` and kin): how
//! large a value Redis keeps in its compact form. Clients see the form in
//! OBJECT ENCODING, in reply order and in MEMORY USAGE, so rlockd makes
//! Redis's conversions at the same points, whatever it holds underneath.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodingLimits {
    pub hash_max_listpack_entries: u64,
    pub hash_max_listpack_value: u64,
    pub set_max_intset_entries: u64,
    pub zset_max_listpack_entries: u64,
    pub zset_max_listpack_value: u64,
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
    pub fn zset_fits(&self, len: usize, longest: usize) -> bool {
        within(len, self.zset_max_listpack_entries) && within(longest, self.zset_max_listpack_value)
    }
}

/// The keyspace's copy, which CONFIG SET replaces: atomics, so that a
/// write reads the limits without taking a lock.
#[derive(Debug)]
pub(super) struct SharedLimits([AtomicU64; 5]);

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
        ];
        for (slot, v) in self.0.iter().zip(values) {
            slot.store(v, Ordering::Relaxed);
        }
    }

    pub(super) fn load(&self) -> EncodingLimits {
        let [a, b, c, d, e] = &self.0;
        let get = |x: &AtomicU64| x.load(Ordering::Relaxed);
        EncodingLimits {
            hash_max_listpack_entries: get(a),
            hash_max_listpack_value: get(b),
            set_max_intset_entries: get(c),
            zset_max_listpack_entries: get(d),
            zset_max_listpack_value: get(e),
        }
    }
}
