//! Cursor iteration for SCAN and HSCAN.
//!
//! Elements are visited in the order of a stable hash, and the cursor is
//! the next hash to visit (with the shard in the top bits for SCAN). That
//! order never changes as elements come and go, so Redis's guarantee holds:
//! an element present for the whole iteration is returned at least once.

use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

/// Bits of the cursor that hold the position inside one collection.
pub const POSITION_BITS: u32 = 56;
const POSITION_MASK: u64 = (1 << POSITION_BITS) - 1;

pub fn position_of(item: &[u8]) -> u64 {
    BuildHasherDefault::<DefaultHasher>::default().hash_one(item) & POSITION_MASK
}

/// Picks up to `count` items at or after position `from`, in position
/// order. Ties at the last position are all included so that none is
/// skipped. Returns the items and the position to resume at, or `None`
/// when the collection is exhausted.
pub fn page<T>(
    items: impl Iterator<Item = (u64, T)>,
    from: u64,
    count: usize,
) -> (Vec<T>, Option<u64>) {
    let mut candidates: Vec<(u64, T)> = items.filter(|(pos, _)| *pos >= from).collect();
    candidates.sort_unstable_by_key(|(pos, _)| *pos);
    if candidates.len() <= count {
        return (candidates.into_iter().map(|(_, t)| t).collect(), None);
    }
    let last = candidates[count - 1].0;
    let mut taken = Vec::new();
    let mut next = None;
    for (pos, item) in candidates {
        if taken.len() >= count && pos != last {
            next = Some(pos);
            break;
        }
        taken.push(item);
    }
    (taken, next)
}

pub fn split_cursor(cursor: u64) -> (usize, u64) {
    ((cursor >> POSITION_BITS) as usize, cursor & POSITION_MASK)
}

pub fn join_cursor(part: usize, position: u64) -> u64 {
    ((part as u64) << POSITION_BITS) | position
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_cover_everything_once() {
        let items: Vec<Vec<u8>> = (0..100).map(|i| format!("k{i}").into_bytes()).collect();
        let mut seen = Vec::new();
        let mut from = 0;
        loop {
            let (got, next) = page(items.iter().map(|k| (position_of(k), k.clone())), from, 7);
            seen.extend(got);
            match next {
                Some(n) => from = n,
                None => break,
            }
        }
        seen.sort();
        let mut want = items.clone();
        want.sort();
        assert_eq!(seen, want);
    }
}
