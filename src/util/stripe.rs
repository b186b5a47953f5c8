//! A small number per thread, for counters every command bumps: split into
//! stripes that each thread picks by this number, they are not one cache
//! line that every core fights over. Numbers are handed out in the order
//! threads first ask, so a server's worker threads get distinct ones.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// This thread's number (the same for its whole life).
pub fn index() -> usize {
    thread_local! {
        // `const` and without a destructor: safe to read inside the global
        // allocator, which must not allocate to answer.
        static MINE: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    MINE.with(|mine| {
        if mine.get() == usize::MAX {
            mine.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        mine.get()
    })
}

/// Threads beyond this many share stripes.
pub const STRIPES: usize = 16;

/// This thread's stripe of `STRIPES`.
pub fn mine() -> usize {
    index() % STRIPES
}

#[repr(align(128))]
#[derive(Default)]
struct Line(AtomicU64);

/// A count that many threads add to at once and few read.
#[derive(Default)]
pub struct Counter([Line; STRIPES]);

impl Counter {
    pub fn add(&self, n: u64) {
        self.0[mine()].0.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.iter().map(|l| l.0.load(Ordering::Relaxed)).sum()
    }

    pub fn reset(&self) {
        self.0.iter().for_each(|l| l.0.store(0, Ordering::Relaxed));
    }
}

impl std::fmt::Debug for Counter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Counter").field(&self.get()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::{Counter, index};

    #[test]
    fn a_thread_keeps_its_number_and_threads_differ() {
        let here = index();
        assert_eq!(index(), here);
        let there = std::thread::spawn(index).join().unwrap();
        let elsewhere = std::thread::spawn(index).join().unwrap();
        assert!(here != there && there != elsewhere && here != elsewhere);
    }

    #[test]
    fn a_counter_adds_every_thread_s_share() {
        let count = Counter::default();
        std::thread::scope(|s| {
            for n in 1..=20 {
                let count = &count;
                s.spawn(move || count.add(n));
            }
        });
        assert_eq!(count.get(), 210);
        count.reset();
        assert_eq!(count.get(), 0);
    }
}
