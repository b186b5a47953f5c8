//! Stored values. The type set is open: lists and sorted sets join it with
//! the lock-family commands.

use bytes::Bytes;
use indexmap::IndexMap;

/// Small hashes keep insertion order, as Redis's listpack encoding does, so
/// HGETALL and HSCAN answer in the same order as Redis.
pub type HashValue = IndexMap<Bytes, Bytes, foldhash::fast::RandomState>;

/// Up to this many fields a hash keeps field order on delete, like Redis's
/// listpack; larger hashes are unordered there too.
pub const HASH_ORDERED_MAX: usize = 128;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(Bytes),
    Hash(HashValue),
    List(std::collections::VecDeque<Bytes>),
    ZSet(super::zset::SortedSet),
}

impl Value {
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Hash(_) => "hash",
            Value::List(_) => "list",
            Value::ZSet(_) => "zset",
        }
    }

    pub fn new_hash() -> Value {
        Value::Hash(HashValue::default())
    }
}

pub fn hash_remove(h: &mut HashValue, field: &[u8]) -> Option<Bytes> {
    if h.len() <= HASH_ORDERED_MAX {
        h.shift_remove(field)
    } else {
        h.swap_remove(field)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub value: Value,
    /// Absolute deadline in Unix milliseconds.
    pub expire_at: Option<u64>,
}

impl Entry {
    pub fn is_expired(&self, now: u64) -> bool {
        self.expire_at.is_some_and(|at| at <= now)
    }
}
