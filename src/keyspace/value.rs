//! Stored values. The type set is open: lists, sets and sorted sets join
//! it with the lock-family commands.

use bytes::Bytes;

pub use super::hash::{HASH_ORDERED_MAX, HashValue};

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(Bytes),
    Hash(HashValue),
    List(std::collections::VecDeque<Bytes>),
    /// Boxed: a sorted set is large, and every entry pays for the largest kind.
    ZSet(Box<super::zset::SortedSet>),
    /// Boxed for the same reason.
    Set(Box<super::set::SetValue>),
}

impl Value {
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Hash(_) => "hash",
            Value::List(_) => "list",
            Value::ZSet(_) => "zset",
            Value::Set(_) => "set",
        }
    }

    pub fn new_hash() -> Value {
        Value::Hash(HashValue::default())
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
