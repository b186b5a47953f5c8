//! A hierarchical timing wheel with millisecond resolution.
//!
//! Level `l` has 64 slots of `64^l` ms each, so six levels span about two
//! years; later deadlines park in the last level and are re-filed when
//! their slot comes round. Inserting and firing are O(1) amortised and no
//! step ever scans the whole keyspace.
//!
//! The wheel holds no authority: an entry firing only means "look at this
//! key now". The key's own deadline decides, so entries left behind by a
//! changed or removed TTL are harmless.

const LEVELS: usize = 6;
const SLOT_BITS: u32 = 6;
const SLOTS: usize = 1 << SLOT_BITS;

pub struct TimerWheel<T> {
    /// Every deadline at or before `now` has been handed out.
    now: u64,
    /// Allocated on the first insert: most of the 128 shards' wheels of an
    /// idle server never hold a deadline.
    levels: Vec<Vec<Vec<(u64, T)>>>,
    /// Items per level, to skip empty levels without looking at their slots.
    counts: [usize; LEVELS],
    len: usize,
}

impl<T> TimerWheel<T> {
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
        self.levels[level][slot].push((deadline, item));
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

    /// Drops the items `keep` refuses, giving back the room they took.
    pub fn retain(&mut self, mut keep: impl FnMut(u64, &T) -> bool) {
        for (level, slots) in self.levels.iter_mut().enumerate() {
            for slot in slots.iter_mut() {
                let before = slot.len();
                slot.retain(|(deadline, item)| keep(*deadline, item));
                slot.shrink_to_fit();
                self.counts[level] -= before - slot.len();
                self.len -= before - slot.len();
            }
        }
        if self.len == 0 {
            self.levels = Vec::new();
        }
    }

    /// Moves time forward to `now` and hands every item due by then to `fire`.
    pub fn advance(&mut self, now: u64, mut fire: impl FnMut(T)) {
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
            }
            self.now += 1;
            let t = self.now;
            // At a level boundary, the coarser slot that now starts is spread
            // down into the finer levels before the level-0 slot fires.
            for level in (1..LEVELS).rev() {
                let shift = SLOT_BITS * level as u32;
                if t & ((1u64 << shift) - 1) == 0 {
                    let slot = ((t >> shift) as usize) & (SLOTS - 1);
                    let items = std::mem::take(&mut self.levels[level][slot]);
                    self.counts[level] -= items.len();
                    self.len -= items.len();
                    for (deadline, item) in items {
                        if deadline <= t {
                            fire(item);
                        } else {
                            self.insert(deadline, item);
                        }
                    }
                }
            }
            let slot = (t as usize) & (SLOTS - 1);
            let items = std::mem::take(&mut self.levels[0][slot]);
            self.counts[0] -= items.len();
            self.len -= items.len();
            for (deadline, item) in items {
                if deadline <= t {
                    fire(item);
                } else {
                    self.insert(deadline, item);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fires_at_deadline_not_before() {
        let mut w = TimerWheel::new(1000);
        w.insert(1005, "a");
        w.insert(1000 + 70_000, "b");
        let mut fired = Vec::new();
        w.advance(1004, |x| fired.push(x));
        assert!(fired.is_empty());
        w.advance(1005, |x| fired.push(x));
        assert_eq!(fired, vec!["a"]);
        w.advance(1000 + 69_999, |x| fired.push(x));
        assert_eq!(fired, vec!["a"]);
        w.advance(1000 + 70_000, |x| fired.push(x));
        assert_eq!(fired, vec!["a", "b"]);
        assert!(w.is_empty());
    }

    #[test]
    fn retain_drops_and_keeps_counts() {
        let mut w = TimerWheel::new(0);
        for i in 1..=1000u64 {
            w.insert(i * 37, i);
        }
        w.retain(|_, &i| i % 2 == 0);
        assert_eq!(w.len(), 500);
        let mut fired = Vec::new();
        w.advance(1_000_000, |i| fired.push(i));
        assert_eq!(fired, (1..=500).map(|i| i * 2).collect::<Vec<_>>());
        assert!(w.is_empty());
    }

    #[test]
    fn far_future_is_kept() {
        let mut w = TimerWheel::new(0);
        let far = 3 * 365 * 24 * 3600 * 1000u64;
        w.insert(far, 1);
        let mut fired = Vec::new();
        // Stepping a millisecond at a time this would never finish.
        w.advance(far - 1, |x| fired.push(x));
        assert!(fired.is_empty());
        assert_eq!(w.len(), 1);
        w.advance(far, |x| fired.push(x));
        assert_eq!(fired, vec![1]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn matches_model(start in 0u64..1_000_000,
                         items in proptest::collection::vec(0u64..300_000, 1..40),
                         steps in proptest::collection::vec(1u64..50_000, 1..30)) {
            let mut w = TimerWheel::new(start);
            for (i, d) in items.iter().enumerate() {
                w.insert(start + 1 + d, i);
            }
            let mut now = start;
            let mut fired = vec![false; items.len()];
            for s in steps {
                now += s;
                w.advance(now, |i| {
                    assert!(!fired[i]);
                    fired[i] = true;
                });
                for (i, d) in items.iter().enumerate() {
                    prop_assert_eq!(fired[i], start + 1 + d <= now, "item {} deadline {} now {}", i, start + 1 + d, now);
                }
            }
        }
    }
}
