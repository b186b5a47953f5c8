//! Cursor iteration for SCAN, SSCAN, HSCAN and ZSCAN, with cursors of
//! Redis's size.
//!
//! Redis walks a hash table's buckets in reverse-binary order and answers
//! with the next bucket's index, so a cursor is below the table's size.
//! Clients rely on that size: Redisson keeps a cursor in a key and reads it
//! back in Lua with `tonumber` (a double), and JavaScript clients make
//! Numbers of them, so a cursor past 2^53 loses its low bits and the scan
//! skips elements.
//!
//! Here each element has a fixed 64-bit hash, and its *position* is that
//! hash with its bits reversed; a collection of `n` elements is seen as a
//! table of 2^bits buckets (the power of two Redis would size it to), and
//! an element's bucket is its position's top `bits` bits. Buckets are
//! visited in order and a page always ends at a bucket's end; the cursor
//! is the next bucket's index with its bits reversed back, as in Redis.
//! Resuming reads a cursor as the position it stands for, so a cursor made
//! for a smaller or larger table still resumes at or before where it left
//! off: an element present for the whole scan is returned at least once,
//! however the collection grew or shrank meanwhile.

use std::hash::BuildHasher;

/// Fixed, so an element keeps its position for the life of the process.
const HASHER: foldhash::quality::FixedState = foldhash::quality::FixedState::with_seed(0x5ca1_ab1e);

/// Redis's smallest hash table has four buckets.
const MIN_BITS: u32 = 2;

pub fn hash_of(item: &[u8]) -> u64 {
    HASHER.hash_one(item)
}

/// A collection as the buckets of the hash table Redis would hold it in.
#[derive(Clone, Copy, Debug)]
pub struct Buckets {
    bits: u32,
}

impl Buckets {
    /// The table Redis grows to for `len` elements: the smallest power of
    /// two holding them, at least four buckets.
    pub fn for_len(len: usize) -> Buckets {
        Buckets {
            bits: len.next_power_of_two().trailing_zeros().max(MIN_BITS),
        }
    }

    fn bucket(self, hash: u64) -> u64 {
        hash.reverse_bits() >> (64 - self.bits)
    }

    /// The cursor of a bucket (0 past the last: the scan is done).
    fn cursor_of(self, bucket: u64) -> u64 {
        if bucket >> self.bits != 0 {
            return 0;
        }
        (bucket << (64 - self.bits)).reverse_bits()
    }

    /// The elements of whole buckets from `cursor` on, at least `count` of
    /// them unless the collection ends first, in bucket order; and the
    /// cursor to resume at (0 when the scan is done). `items` pairs each
    /// element with `hash_of` its name.
    pub fn page<T>(
        self,
        items: impl Iterator<Item = (u64, T)>,
        cursor: u64,
        count: usize,
    ) -> (Vec<T>, u64) {
        // A cursor stands for a position as a hash does: floored to this
        // table's buckets, it resumes at or before where it left off.
        let from = self.bucket(cursor);
        let mut candidates: Vec<(u64, T)> = items
            .map(|(hash, item)| (self.bucket(hash), item))
            .filter(|(bucket, _)| *bucket >= from)
            .collect();
        let count = count.max(1);
        let next = if candidates.len() <= count {
            0
        } else {
            // The count-th element's bucket is the page's last: every
            // element of it comes too, so none is split from its bucket.
            let (_, nth, _) = candidates.select_nth_unstable_by_key(count - 1, |(b, _)| *b);
            let last = nth.0;
            candidates.retain(|(bucket, _)| *bucket <= last);
            self.cursor_of(last + 1)
        };
        candidates.sort_unstable_by_key(|(bucket, _)| *bucket);
        (candidates.into_iter().map(|(_, item)| item).collect(), next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(range: std::ops::Range<usize>) -> Vec<Vec<u8>> {
        range.map(|i| format!("k{i}").into_bytes()).collect()
    }

    fn scan_all(items: &[Vec<u8>], count: usize) -> (Vec<Vec<u8>>, Vec<u64>) {
        let table = Buckets::for_len(items.len());
        let (mut seen, mut cursors, mut cursor) = (Vec::new(), Vec::new(), 0);
        loop {
            let (got, next) =
                table.page(items.iter().map(|k| (hash_of(k), k.clone())), cursor, count);
            seen.extend(got);
            if next == 0 {
                return (seen, cursors);
            }
            cursors.push(next);
            cursor = next;
        }
    }

    #[test]
    fn pages_cover_everything_once_with_cursors_below_the_table_size() {
        for len in [1, 5, 100, 256, 1000] {
            let items = names(0..len);
            let (mut seen, cursors) = scan_all(&items, 7);
            seen.sort();
            let mut want = items.clone();
            want.sort();
            assert_eq!(seen, want, "{len} elements");
            let size = len.next_power_of_two().max(4) as u64;
            assert!(cursors.iter().all(|&c| c < size), "{len}: {cursors:?}");
        }
    }

    #[test]
    fn a_scan_survives_growth_and_shrinking() {
        let first = names(0..300);
        let (got, cursor) = Buckets::for_len(first.len()).page(
            first.iter().map(|k| (hash_of(k), k.clone())),
            0,
            50,
        );
        assert_ne!(cursor, 0);
        // Grown to 5,000, then shrunk to the 300 again plus a few.
        for now in [names(0..5000), names(0..310), names(0..20)] {
            let mut seen = got.clone();
            let table = Buckets::for_len(now.len());
            let mut cursor = cursor;
            loop {
                let (more, next) =
                    table.page(now.iter().map(|k| (hash_of(k), k.clone())), cursor, 50);
                seen.extend(more);
                if next == 0 {
                    break;
                }
                cursor = next;
            }
            for kept in first.iter().filter(|k| now.contains(k)) {
                assert!(
                    seen.contains(kept),
                    "{:?} missed",
                    String::from_utf8_lossy(kept)
                );
            }
        }
    }
}
