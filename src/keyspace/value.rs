//! Stored values. The type set is open: lists, sets and sorted sets join
//! it with the lock-family commands.

use std::num::NonZeroU64;

use bytes::Bytes;

use crate::util::parse_i64;

pub use super::hash::HashValue;

/// How Redis would hold a string, which OBJECT ENCODING shows. Kept in
/// the padding after the value's tag: it costs no memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrForm {
    /// Stored whole (SET and kin): `int`, `embstr` or `raw` by its bytes.
    ByBytes,
    /// Written in place (APPEND to a key, SETRANGE, SETBIT, BITFIELD,
    /// BITOP, PFADD…): Redis's unshared `raw` copy.
    Raw,
    /// A number made into text (INCRBYFLOAT): `embstr` or `raw` by its
    /// length, never `int`.
    Text,
}

/// Longest string Redis embeds in its object header.
const EMBSTR_MAX: usize = 44;

/// Redis's three string encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrEncoding {
    Int,
    Embstr,
    Raw,
}

impl StrEncoding {
    pub fn name(self) -> &'static str {
        match self {
            StrEncoding::Int => "int",
            StrEncoding::Embstr => "embstr",
            StrEncoding::Raw => "raw",
        }
    }
}

impl StrForm {
    /// The encoding Redis would give `s` written this way.
    pub fn encoding(self, s: &[u8]) -> StrEncoding {
        match self {
            StrForm::ByBytes if s.len() <= 20 && parse_i64(s).is_some() => StrEncoding::Int,
            StrForm::ByBytes | StrForm::Text if s.len() <= EMBSTR_MAX => StrEncoding::Embstr,
            _ => StrEncoding::Raw,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(Bytes, StrForm),
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
            Value::Str(_, _) => "string",
            Value::Hash(_) => "hash",
            Value::List(_) => "list",
            Value::ZSet(_) => "zset",
            Value::Set(_) => "set",
            Value::Stream(_) => "stream",
        }
    }

    /// A string as SET stores it.
    pub fn string(bytes: Bytes) -> Value {
        Value::Str(bytes, StrForm::ByBytes)
    }

    pub fn new_hash() -> Value {
        Value::Hash(HashValue::default())
    }
}

/// What one family of commands keeps in a value (a string's bytes, a
/// list, a hash…), so that one lookup (`Db::typed`) serves them all with
/// Redis's WRONGTYPE for a key holding another kind.
pub trait ValueKind {
    fn of(value: &mut Value) -> Option<&mut Self>;
}

macro_rules! value_kinds {
    ($($kind:ty: $held:pat => $x:ident),* $(,)?) => {$(
        impl ValueKind for $kind {
            fn of(value: &mut Value) -> Option<&mut Self> {
                match value {
                    $held => Some($x),
                    _ => None,
                }
            }
        }
    )*};
}

value_kinds! {
    Bytes: Value::Str(x, _) => x,
    HashValue: Value::Hash(x) => x,
    std::collections::VecDeque<Bytes>: Value::List(x) => x,
    super::zset::SortedSet: Value::ZSet(x) => x,
    super::set::SetValue: Value::Set(x) => x,
    super::stream::Stream: Value::Stream(x) => x,
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
        self.expire_at().is_some_and(|at| deadline_passed(at, now))
    }
}

/// The first millisecond a key with deadline `at` is gone in: Redis 7.0
/// keeps a key through its deadline's own millisecond (PTTL answers 0
/// then) and drops it in the next.
pub fn gone_from(at: u64) -> u64 {
    at.saturating_add(1)
}

/// Whether a key with deadline `at` is gone at `now`.
pub fn deadline_passed(at: u64, now: u64) -> bool {
    gone_from(at) <= now
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key pays for a value: a string's form must fit in padding.
    #[test]
    fn a_value_stays_forty_bytes() {
        assert_eq!(std::mem::size_of::<Value>(), 40);
        assert_eq!(std::mem::size_of::<Entry>(), 48);
        assert_eq!(std::mem::size_of::<HashValue>(), 16);
    }
}
