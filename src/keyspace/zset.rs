//! Sorted sets: a member → score map plus an index ordered by score, then
//! member bytes. Scores are never NaN.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};

use bytes::Bytes;

use super::EncodingLimits;

/// A score with a total order (NaN never enters a set; `-0` equals `0`).
#[derive(Debug, Clone, Copy)]
pub struct Score(pub f64);

impl PartialEq for Score {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.partial_cmp(&other.0).unwrap_or(Ordering::Equal)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct SortedSet {
    /// Hashed as the keys and hashes' fields are.
    scores: HashMap<Bytes, f64, foldhash::fast::RandomState>,
    order: BTreeSet<(Score, Bytes)>,
    /// Whether Redis would still hold this set compact. Only visible in one
    /// way: a compact set stores a `-0` score as `0`.
    compact: bool,
}

impl Default for SortedSet {
    fn default() -> Self {
        SortedSet {
            scores: HashMap::default(),
            order: BTreeSet::new(),
            compact: true,
        }
    }
}

impl SortedSet {
    /// A new set as ZADD creates it: compact unless its first member is
    /// too long for that (or the limits allow no listpack at all).
    pub fn for_first_member(member: &[u8], limits: &EncodingLimits) -> Self {
        SortedSet {
            compact: limits.zset_fits(1, member.len()),
            ..SortedSet::default()
        }
    }

    /// An empty set in the skiplist encoding, as a large one becomes once
    /// emptied (Redis never converts back).
    pub(super) fn empty_skiplist() -> Self {
        SortedSet {
            compact: false,
            ..SortedSet::default()
        }
    }

    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// Whether Redis would hold this set as a listpack.
    pub fn is_compact(&self) -> bool {
        self.compact
    }

    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).copied()
    }

    /// Sets a member's score; true if the member is new. While the set is
    /// compact a `-0` is stored as `0`, as Redis's listpack stores it. A
    /// new member the listpack cannot take converts the set for good.
    pub fn insert(&mut self, member: Bytes, score: f64, limits: &EncodingLimits) -> bool {
        if self.compact
            && !self.scores.contains_key(&member)
            && !limits.zset_fits(self.len() + 1, member.len())
        {
            self.compact = false;
        }
        let score = if self.compact && score == 0.0 {
            0.0
        } else {
            score
        };
        let old = self.scores.insert(member.clone(), score);
        if let Some(old) = old {
            self.order.remove(&(Score(old), member.clone()));
        }
        self.order.insert((Score(score), member));
        old.is_none()
    }

    pub fn remove(&mut self, member: &[u8]) -> bool {
        match self.scores.remove_entry(member) {
            Some((m, s)) => {
                self.order.remove(&(Score(s), m));
                true
            }
            None => false,
        }
    }

    /// Takes the lowest member (the highest with `max`).
    pub fn pop(&mut self, max: bool) -> Option<(Bytes, f64)> {
        let (score, member) = if max {
            self.order.pop_last()?
        } else {
            self.order.pop_first()?
        };
        self.scores.remove(&member);
        Some((member, score.0))
    }

    /// Members in order: lowest score first, ties by member bytes.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&Bytes, f64)> {
        self.order.iter().map(|(s, m)| (m, s.0))
    }

    /// Members with scores from `min` (inclusive) upwards, in order.
    pub fn scores_from(&self, min: f64) -> impl Iterator<Item = (&Bytes, f64)> {
        self.order
            .range((Score(min), Bytes::new())..)
            .map(|(s, m)| (m, s.0))
    }

    /// The 0-based position of a member in ascending order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let score = self.score(member)?;
        let key = (Score(score), Bytes::copy_from_slice(member));
        Some(self.order.range(..key).count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_score_then_member() {
        let mut z = SortedSet::default();
        assert!(z.insert(Bytes::from("b"), 1.0, &EncodingLimits::DEFAULT));
        assert!(z.insert(Bytes::from("a"), 1.0, &EncodingLimits::DEFAULT));
        assert!(z.insert(Bytes::from("c"), -0.0, &EncodingLimits::DEFAULT));
        assert!(!z.insert(Bytes::from("c"), 2.0, &EncodingLimits::DEFAULT));
        let order: Vec<_> = z.iter().map(|(m, _)| m.clone()).collect();
        assert_eq!(order, vec!["a", "b", "c"]);
        assert_eq!(z.rank(b"c"), Some(2));
        assert!(z.remove(b"a"));
        assert!(!z.remove(b"a"));
        assert_eq!(z.len(), 2);
    }
}
