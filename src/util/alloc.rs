//! Counts the bytes allocated and not yet freed, so that INFO's
//! `used_memory` is what the server really uses rather than its RSS (which
//! includes pages the allocator keeps for later). The binary wraps its
//! allocator in [`Counting`]; a program that embeds the server without it
//! is reported its RSS.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicI64, Ordering};

/// Wraps a global allocator, counting live bytes.
pub struct Counting<A>(pub A);

/// Counters spread over cache lines of their own, so threads allocating at
/// once do not fight over one line. A block may be freed by a thread other
/// than the one that allocated it: only the sum means anything.
const SLOTS: usize = 64;

#[repr(align(128))]
struct Slot(AtomicI64);

static LIVE: [Slot; SLOTS] = [const { Slot(AtomicI64::new(0)) }; SLOTS];

fn slot() -> &'static AtomicI64 {
    thread_local! {
        static MARK: u8 = const { 0 };
    }
    // Each thread's locals sit at an address of its own.
    let addr = MARK.with(|m| m as *const u8 as usize);
    &LIVE[(addr >> 12) % SLOTS].0
}

fn count(delta: i64) {
    slot().fetch_add(delta, Ordering::Relaxed);
}

// SAFETY: every call is passed on unchanged to the wrapped allocator.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { self.0.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as i64);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { self.0.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as i64);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { self.0.dealloc(ptr, layout) };
        count(-(layout.size() as i64));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { self.0.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as i64 - layout.size() as i64);
        }
        p
    }
}

/// What the server uses: the bytes allocated when counted, else its RSS.
pub fn used_memory() -> u64 {
    allocated().unwrap_or_else(rss_bytes)
}

/// The process's resident set, from `/proc` (0 where there is none).
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4096)
}

/// Bytes allocated and not freed, if the process counts them.
pub fn allocated() -> Option<u64> {
    let live: i64 = LIVE.iter().map(|s| s.0.load(Ordering::Relaxed)).sum();
    (live > 0).then_some(live as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_what_is_live() {
        let a = Counting(std::alloc::System);
        let layout = Layout::from_size_align(1000, 8).unwrap();
        let before = allocated().unwrap_or(0);
        unsafe {
            let p = a.alloc(layout);
            assert_eq!(allocated(), Some(before + 1000));
            let p = a.realloc(p, layout, 3000);
            assert_eq!(allocated(), Some(before + 3000));
            a.dealloc(p, Layout::from_size_align(3000, 8).unwrap());
        }
        assert_eq!(allocated().unwrap_or(0), before);
    }
}
