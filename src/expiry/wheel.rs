//! A hierarchical timing wheel with millisecond resolution.
//!
//! Level `l` has 64 slots of `64^l` ms each, so six levels span about two
//! years; later deadlines park in the last level and are re-filed when
//! their slot comes round. Inserting and firing are O(1) amortised and no
//! step ever scans the whole keyspace.
//!
//! The wheel holds no authority: an entry firing only means "look at this
//! key now". The key's own deadline decides, so entries left behind by a
//! changed or removed TTL are harmless. Nor does an entry hold its
//! deadline: where one must be re-filed, the wheel asks its owner for the
//! item's deadline now, so an entry is the item alone (32 bits of a key's
//! hash, 4 bytes, for a million leases).

const LEVELS: usize = 6;
const SLOT_BITS: u32 = 6;
const SLOTS: usize = 1 << SLOT_BITS;

pub struct TimerWheel<T> {
    /// Every deadline at or before `now` has been handed out.
    now: u64,
    /// Allocated on the first insert: most of the 128 shards' wheels of an
    /// idle server never hold a deadline.
    levels: Vec<Vec<Vec<T>>>,
    /// Items per level, to skip empty levels without looking at their slots.
    counts: [usize; LEVELS],
    len: usize,
}

impl<T: Copy + Ord> TimerWheel<T> {
    pub fn new(now: u64) -> Self {
        TimerWheel {
            now,
            levels: Vec::new(),
            counts: [0; LEVELS],
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn insert(&mut self, deadline: u64, item: T) {
        let deadline = deadline.max(self.now + 1);
        if self.levels.is_empty() {
            self.levels = (0..LEVELS)
                .map(|_| (0..SLOTS).map(|_| Vec::new()).collect())
                .collect();
        }
        let (level, slot) = self.position(deadline);
        self.levels[level][slot].push(item);
        self.counts[level] += 1;
        self.len += 1;
    }

    /// Which level and slot a deadline after `now` belongs in: the lowest
    /// level whose span, counted from `now`, still covers it.
    fn position(&self, deadline: u64) -> (usize, usize) {
        let distance = deadline - self.now;
        for level in 0..LEVELS {
            let shift = SLOT_BITS * level as u32;
            if distance < (SLOTS as u64) << shift {
                return (level, ((deadline >> shift) as usize) & (SLOTS - 1));
            }
        }
        let shift = SLOT_BITS * (LEVELS - 1) as u32;
        // Beyond the horizon: park in the slot just before `now`'s, which is
        // the last one this level reaches; it is re-filed when it comes due.
        let slot = ((self.now >> shift) as usize + SLOTS - 1) & (SLOTS - 1);
        (LEVELS - 1, slot)
    }

    /// When the time a slot covers ends: it is the next of that level's
    /// spans with the slot's number to start after `now`. `None` for the
    /// last level, where deadlines beyond the horizon park.
    fn slot_end(&self, level: usize, slot: usize) -> Option<u64> {
        if level == LEVELS - 1 {
            return None;
        }
        let shift = SLOT_BITS * level as u32;
        let current = self.now >> shift;
        let ahead = (slot as u64).wrapping_sub(current + 1) % SLOTS as u64 + 1;
        Some((current + ahead + 1) << shift)
    }

    /// A time after `now` at or before every deadline filed: where the
    /// earliest occupied slot of any level starts (on level 0, that is the
    /// deadline itself). The owner need not advance the wheel before then.
    pub fn earliest_bound(&self) -> Option<u64> {
        let mut earliest: Option<u64> = None;
        for level in (0..self.levels.len()).filter(|&l| self.counts[l] > 0) {
            let shift = SLOT_BITS * level as u32;
            let current = self.now >> shift;
            // A level's slots start no sooner than its next boundary, and
            // coarser levels' boundaries come no sooner than a finer one's.
            if earliest.is_some_and(|e| e <= (current + 1) << shift) {
                break;
            }
            let ahead = (1..=SLOTS as u64)
                .find(|k| !self.levels[level][((current + k) as usize) & (SLOTS - 1)].is_empty());
            if let Some(k) = ahead {
                let start = (current + k) << shift;
                earliest = Some(earliest.map_or(start, |e| e.min(start)));
            }
        }
        earliest
    }

    /// Drops the items that could no longer be the entry a deadline is
    /// due by: those `deadline_of` gives none, or one after their slot's
    /// time (a later deadline has an entry of its own), and the repeats
    /// of an item within a slot.
    pub fn retain(&mut self, mut deadline_of: impl FnMut(T) -> Option<u64>) {
        for level in 0..self.levels.len() {
            for slot in 0..SLOTS {
                let end = self.slot_end(level, slot);
                let items = &mut self.levels[level][slot];
                let before = items.len();
                items.sort_unstable();
                items.dedup();
                items.retain(|&item| {
                    deadline_of(item).is_some_and(|at| end.is_none_or(|end| at < end))
                });
                items.shrink_to_fit();
                self.counts[level] -= before - items.len();
                self.len -= before - items.len();
            }
        }
        if self.len == 0 {
            self.levels = Vec::new();
        }
    }

    /// Moves time forward to `now` and hands every item that may be due by
    /// then to `fire`. `deadline_of` tells where an item of a coarser slot
    /// that comes due goes now: `None` drops it.
    pub fn advance(
        &mut self,
        now: u64,
        mut deadline_of: impl FnMut(T) -> Option<u64>,
        mut fire: impl FnMut(T),
    ) {
        while self.now < now {
            if self.is_empty() {
                self.now = now;
                return;
            }
            // With the finer levels empty nothing happens before the next
            // boundary of the lowest occupied level: jump there.
            let lowest = self.counts.iter().position(|&c| c > 0).unwrap_or(0);
            if lowest > 0 {
                let span = 1u64 << (SLOT_BITS * lowest as u32);
                let boundary = (self.now / span + 1) * span;
                if boundary > now {
                    self.now = now;
                    return;
                }
                self.now = boundary - 1;
            } else {
                // On level 0, nothing happens before its next occupied slot
                // or the next level-1 boundary: skip the empty milliseconds.
                let boundary = (self.now / SLOTS as u64 + 1) * SLOTS as u64;
                let occupied = (1..SLOTS as u64)
                    .map(|k| self.now + k)
                    .find(|&t| !self.levels[0][(t as usize) & (SLOTS - 1)].is_empty())
                    .unwrap_or(boundary);
                self.now = occupied.min(boundary).min(now) - 1;
            }
            self.now += 1;
            let t = self.now;
            // At a level boundary, the coarser slot that now starts is spread
            // down into the finer levels before the level-0 slot fires. Its
            // items are for deadlines in its span; one whose key's deadline
            // is later now has a later entry too.
            for level in (1..LEVELS).rev() {
                let shift = SLOT_BITS * level as u32;
                if t & ((1u64 << shift) - 1) == 0 {
                    let slot = ((t >> shift) as usize) & (SLOTS - 1);
                    let parked = level == LEVELS - 1;
                    let end = t + (1u64 << shift);
                    let items = std::mem::take(&mut self.levels[level][slot]);
                    self.counts[level] -= items.len();
                    self.len -= items.len();
                    for item in items {
                        match deadline_of(item) {
                            Some(at) if at <= t => fire(item),
                            Some(at) if parked || at < end => self.insert(at, item),
                            _ => {}
                        }
                    }
                }
            }
            // A level-0 slot holds the deadlines of this very millisecond.
            let slot = (t as usize) & (SLOTS - 1);
            let items = std::mem::take(&mut self.levels[0][slot]);
            self.counts[0] -= items.len();
            self.len -= items.len();
            items.into_iter().for_each(&mut fire);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fires_at_deadline_not_before() {
        let deadline = |x: &str| Some(if x == "a" { 1005 } else { 71_000 });
        let mut w = TimerWheel::new(1000);
        w.insert(1005, "a");
        w.insert(71_000, "b");
        let mut fired = Vec::new();
        w.advance(1004, deadline, |x| fired.push(x));
        assert!(fired.is_empty());
        assert_eq!(
            w.earliest_bound(),
            Some(1005),
            "level 0: the deadline itself"
        );
        w.advance(1005, deadline, |x| fired.push(x));
        assert_eq!(fired, vec!["a"]);
        assert_eq!(
            w.earliest_bound(),
            Some(69_632),
            "where b's level-2 slot starts"
        );
        w.advance(70_999, deadline, |x| fired.push(x));
        assert_eq!(fired, vec!["a"]);
        w.advance(71_000, deadline, |x| fired.push(x));
        assert_eq!(fired, vec!["a", "b"]);
        assert!(w.is_empty());
        assert_eq!(w.earliest_bound(), None);
    }

    #[test]
    fn retain_drops_and_keeps_counts() {
        let mut w = TimerWheel::new(0);
        for i in 1..=1000u64 {
            w.insert(i * 37, i);
            w.insert(i * 37, i);
        }
        let deadline = |i: u64| i.is_multiple_of(2).then_some(i * 37);
        w.retain(deadline);
        assert_eq!(w.len(), 500, "odd items dropped, repeats merged");
        let mut fired = Vec::new();
        w.advance(1_000_000, deadline, |i| fired.push(i));
        fired.sort();
        assert_eq!(fired, (1..=500).map(|i| i * 2).collect::<Vec<_>>());
        assert!(w.is_empty());
    }

    /// An item's deadline may move after it was filed, and its owner
    /// files the new one: an entry for a deadline since put off goes, one
    /// for a deadline since brought forward fires (again) at its slot's
    /// start at the latest.
    #[test]
    fn follows_deadlines_that_moved() {
        let mut w = TimerWheel::new(0);
        let mut deadlines = [10_000u64, 20_000, 30_000];
        for (i, &at) in deadlines.iter().enumerate() {
            w.insert(at, i);
        }
        deadlines[0] = 500_000;
        w.insert(500_000, 0);
        deadlines[1] = 7_000;
        w.insert(7_000, 1);
        assert_eq!(w.slot_end(2, (30_000 >> 12) & 63), Some(32_768));
        w.retain(|i| Some(deadlines[i]));
        assert_eq!(w.len(), 4, "item 0's first entry is gone");
        let mut fired = Vec::new();
        for t in (1000..=1_000_000).step_by(1000) {
            w.advance(t, |i| Some(deadlines[i]), |i| fired.push((i, t)));
        }
        let expected = [(1, 7_000), (1, 17_000), (2, 30_000), (0, 500_000)];
        assert_eq!(fired, expected);
        assert!(w.is_empty());
    }

    #[test]
    fn far_future_is_kept() {
        let mut w = TimerWheel::new(0);
        let far = 3 * 365 * 24 * 3600 * 1000u64;
        let deadline = |_| Some(far);
        w.insert(far, 1);
        let mut fired = Vec::new();
        // Stepping a millisecond at a time this would never finish.
        w.advance(far - 1, deadline, |x| fired.push(x));
        assert!(fired.is_empty());
        assert!(w.earliest_bound().is_some_and(|b| b <= far));
        assert_eq!(w.len(), 1);
        w.retain(deadline);
        assert_eq!(w.len(), 1);
        w.advance(far, deadline, |x| fired.push(x));
        assert_eq!(fired, vec![1]);
    }

    /// Files `items` (deadlines past `start`), advances by `steps`, and
    /// checks after each step that exactly the passed deadlines fired and
    /// that `earliest_bound` lies between now and the earliest pending one.
    fn check_against_model(start: u64, items: &[u64], steps: &[u64]) -> Result<(), TestCaseError> {
        let mut w = TimerWheel::new(start);
        for (i, d) in items.iter().enumerate() {
            w.insert(start + 1 + d, i);
        }
        let deadline = |i: usize| Some(start + 1 + items[i]);
        let mut now = start;
        let mut fired = vec![false; items.len()];
        for (n, s) in steps.iter().enumerate() {
            now += s;
            if n % 3 == 0 {
                w.retain(deadline);
            }
            w.advance(now, deadline, |i| {
                assert!(!fired[i]);
                fired[i] = true;
            });
            for (i, d) in items.iter().enumerate() {
                prop_assert_eq!(
                    fired[i],
                    start + 1 + d <= now,
                    "item {} deadline {} now {}",
                    i,
                    start + 1 + d,
                    now
                );
            }
            let pending = items
                .iter()
                .zip(&fired)
                .filter(|(_, f)| !**f)
                .map(|(d, _)| start + 1 + d)
                .min();
            let bound = w.earliest_bound();
            prop_assert_eq!(bound.is_some(), pending.is_some());
            if let (Some(b), Some(p)) = (bound, pending) {
                prop_assert!(now < b && b <= p, "bound {} now {} earliest {}", b, now, p);
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn matches_model(start in 0u64..1_000_000,
                         items in proptest::collection::vec(0u64..300_000, 1..40),
                         steps in proptest::collection::vec(1u64..50_000, 1..30)) {
            check_against_model(start, &items, &steps)?;
        }

        /// Deadlines a few ms apart, time moving a few ms at a time: the
        /// finest levels, where advancing skips empty milliseconds.
        #[test]
        fn matches_model_up_close(start in 0u64..1_000_000,
                                  items in proptest::collection::vec(0u64..3_000, 1..60),
                                  steps in proptest::collection::vec(1u64..100, 1..80)) {
            check_against_model(start, &items, &steps)?;
        }
    }
}
