//! Sets, held the two ways Redis 7.0 holds them: a sorted array of
//! integers (its intset) while every member is an integer and there are
//! few, else a hash table. The form shows through: intset members come
//! back in numeric order, and MEMORY USAGE differs.

use bytes::Bytes;
use indexmap::IndexSet;
use rand::{Rng, RngExt};

use super::EncodingLimits;
use crate::util::{i64_bytes, parse_i64};

#[derive(Debug, Clone, PartialEq)]
pub enum SetValue {
    /// Sorted ascending. `width` is the bytes per entry Redis would use
    /// (2, 4 or 8): it grows with the largest member and never shrinks.
    Ints { items: Vec<i64>, width: u8 },
    /// An indexed set, so that a random member is one lookup away.
    Table(Table),
}

/// The hash table form, hashed as the keys and hashes' fields are.
type Table = IndexSet<Bytes, foldhash::fast::RandomState>;

fn width_of(v: i64) -> u8 {
    if i16::try_from(v).is_ok() {
        2
    } else if i32::try_from(v).is_ok() {
        4
    } else {
        8
    }
}

impl SetValue {
    /// An empty set in the form Redis picks for its first member.
    pub fn for_first_member(member: &[u8]) -> SetValue {
        match parse_i64(member) {
            Some(_) => SetValue::empty_ints(),
            None => SetValue::Table(Table::default()),
        }
    }

    /// Where a computed set (SUNIONSTORE and kin) starts: as an intset.
    pub fn empty_ints() -> SetValue {
        SetValue::Ints {
            items: Vec::new(),
            width: 2,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            SetValue::Ints { items, .. } => items.len(),
            SetValue::Table(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_intset(&self) -> bool {
        matches!(self, SetValue::Ints { .. })
    }

    /// The bytes per intset entry; `None` for a hash table.
    pub fn intset_width(&self) -> Option<u8> {
        match self {
            SetValue::Ints { width, .. } => Some(*width),
            SetValue::Table(_) => None,
        }
    }

    pub fn contains(&self, member: &[u8]) -> bool {
        match self {
            SetValue::Ints { items, .. } => {
                parse_i64(member).is_some_and(|v| items.binary_search(&v).is_ok())
            }
            SetValue::Table(t) => t.contains(member),
        }
    }

    /// Adds a member; true if it is new. An intset becomes a table when a
    /// member is not an integer or it would outgrow its limit.
    pub fn insert(&mut self, member: &[u8], limits: &EncodingLimits) -> bool {
        if let SetValue::Ints { items, width } = self
            && let Some(v) = parse_i64(member)
        {
            let Err(at) = items.binary_search(&v) else {
                return false;
            };
            if limits.intset_len_fits(items.len() + 1) {
                items.insert(at, v);
                *width = (*width).max(width_of(v));
                return true;
            }
        }
        self.make_table();
        match self {
            // A member already there costs no copy.
            SetValue::Table(t) => !t.contains(member) && t.insert(Bytes::copy_from_slice(member)),
            SetValue::Ints { .. } => false,
        }
    }

    /// Converts an intset to a hash table, for good: Redis never converts back.
    fn make_table(&mut self) {
        if let SetValue::Ints { items, .. } = self {
            *self = SetValue::Table(items.iter().map(|v| i64_bytes(*v)).collect());
        }
    }

    pub fn remove(&mut self, member: &[u8]) -> bool {
        match self {
            SetValue::Ints { items, .. } => match parse_i64(member) {
                Some(v) => match items.binary_search(&v) {
                    Ok(at) => {
                        items.remove(at);
                        true
                    }
                    Err(_) => false,
                },
                None => false,
            },
            SetValue::Table(t) => t.swap_remove(member),
        }
    }

    /// The member at position `i` (below `len`) in iteration order.
    fn at(&self, i: usize) -> Option<Bytes> {
        match self {
            SetValue::Ints { items, .. } => items.get(i).map(|v| i64_bytes(*v)),
            SetValue::Table(t) => t.get_index(i).cloned(),
        }
    }

    /// One member picked at random.
    pub fn random(&self, rng: &mut impl Rng) -> Option<Bytes> {
        if self.is_empty() {
            return None;
        }
        self.at(rng.random_range(0..self.len()))
    }

    /// Removes and returns a member picked at random.
    pub fn pop_random(&mut self, rng: &mut impl Rng) -> Option<Bytes> {
        if self.is_empty() {
            return None;
        }
        let i = rng.random_range(0..self.len());
        match self {
            SetValue::Ints { items, .. } => Some(i64_bytes(items.remove(i))),
            SetValue::Table(t) => t.swap_remove_index(i),
        }
    }

    /// `count` distinct members (fewer than `len`) picked at random.
    pub fn sample(&self, count: usize, rng: &mut impl Rng) -> Vec<Bytes> {
        rand::seq::index::sample(rng, self.len(), count.min(self.len()))
            .into_iter()
            .filter_map(|i| self.at(i))
            .collect()
    }

    /// Every member: in numeric order for an intset.
    pub fn members(&self) -> Vec<Bytes> {
        match self {
            SetValue::Ints { items, .. } => items.iter().map(|v| i64_bytes(*v)).collect(),
            SetValue::Table(t) => t.iter().cloned().collect(),
        }
    }

    /// A set of these members, built as Redis builds a computed set.
    pub fn collect<'m>(
        members: impl IntoIterator<Item = &'m [u8]>,
        limits: &EncodingLimits,
    ) -> SetValue {
        let mut set = SetValue::empty_ints();
        for m in members {
            set.insert(m, limits);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: EncodingLimits = EncodingLimits::DEFAULT;

    #[test]
    fn intset_until_a_string_or_too_many() {
        let mut s = SetValue::for_first_member(b"3");
        assert!(s.insert(b"3", &LIMITS));
        assert!(s.insert(b"-1", &LIMITS));
        assert!(!s.insert(b"3", &LIMITS));
        assert_eq!(s.members(), vec!["-1", "3"]);
        assert_eq!(s.intset_width(), Some(2));
        s.insert(b"100000", &LIMITS);
        assert_eq!(s.intset_width(), Some(4));
        s.remove(b"100000");
        assert_eq!(s.intset_width(), Some(4), "an intset never narrows");
        assert!(!s.contains(b"03"));
        s.insert(b"x", &LIMITS);
        assert!(!s.is_intset());
        assert!(s.contains(b"3") && s.contains(b"x"));
        let max = LIMITS.set_max_intset_entries as i64;
        let numbers: Vec<Bytes> = (0..max).map(i64_bytes).collect();
        let mut big = SetValue::collect(numbers.iter().map(|n| &n[..]), &LIMITS);
        assert!(big.is_intset());
        big.insert(b"-1", &LIMITS);
        assert!(!big.is_intset());
        assert_eq!(big.len() as i64, max + 1);
    }

    #[test]
    fn random_picks_are_members_and_distinct() {
        let mut rng = rand::rng();
        let mut s = SetValue::collect(["a", "b", "c", "d"].map(str::as_bytes), &LIMITS);
        for _ in 0..100 {
            let mut picked = s.sample(3, &mut rng);
            picked.sort();
            picked.dedup();
            assert_eq!(picked.len(), 3);
            assert!(picked.iter().all(|m| s.contains(m)));
        }
        let mut popped: Vec<Bytes> = std::iter::from_fn(|| s.pop_random(&mut rng)).collect();
        popped.sort();
        assert_eq!(popped, vec!["a", "b", "c", "d"]);
        assert!(s.is_empty());
    }

    #[test]
    fn random_member_is_roughly_uniform() {
        let mut rng = rand::rng();
        let s = SetValue::collect(["a", "b", "1", "2"].map(str::as_bytes), &LIMITS);
        let mut counts = std::collections::HashMap::new();
        for _ in 0..40_000 {
            *counts.entry(s.random(&mut rng)).or_insert(0) += 1;
        }
        assert_eq!(counts.len(), 4);
        assert!(
            counts.values().all(|&n| (8_000..12_000).contains(&n)),
            "{counts:?}"
        );
    }
}
