//! Stored values. The type set is open: lists, sets and sorted sets join
//! it with the lock-family commands.

use std::num::NonZeroU64;

use bytes::Bytes;

pub use super::hash::HashValue;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(Bytes),
    Hash(HashValue),
    List(std::collections::VecDeque<Bytes>),
    /// Boxed: a sorted set is large, and every entry pays for the largest kind.
    ZSet(Box<super::zset::SortedSet>),
    /// Boxed for the same reason.
    Set(Box<super::set::SetValue>),
    /// Boxed for the same reason.
    Stream(Box<super::stream::Stream>),
}

impl Value {
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Hash(_) => "hash",
            Value::List(_) => "list",
            Value::ZSet(_) => "zset",
            Value::Set(_) => "set",
            Value::Stream(_) => "stream",
        }
    }

    pub fn new_hash() -> Value {
        Value::Hash(HashValue::default())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub value: Value,
    /// Absolute deadline in Unix milliseconds. Never zero, so the option
    /// takes eight bytes, not sixteen: every key pays for it.
    deadline: Option<NonZeroU64>,
}

impl Entry {
    pub fn new(value: Value, expire_at: Option<u64>) -> Entry {
        let mut entry = Entry {
            value,
            deadline: None,
        };
        entry.set_expire_at(expire_at);
        entry
    }

    /// The deadline in Unix milliseconds, if the key has one.
    pub fn expire_at(&self) -> Option<u64> {
        self.deadline.map(NonZeroU64::get)
    }

    /// A deadline of 0 (long past) is kept as 1 ms, which is just as past.
    pub fn set_expire_at(&mut self, at: Option<u64>) -> Option<u64> {
        let previous = self.expire_at();
        self.deadline = at.map(|at| NonZeroU64::MIN.saturating_add(at.saturating_sub(1)));
        previous
    }

    pub fn is_expired(&self, now: u64) -> bool {
        self.expire_at().is_some_and(|at| at <= now)
    }
}
