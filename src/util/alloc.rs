//! Counts the bytes allocated and not yet freed, so that INFO's
//! `used_memory` is what the server really uses rather than its RSS (which
//! includes pages the allocator keeps for later). The binary wraps its
//! allocator in [`Counting`]; a program that embeds the server without it
//! is reported its RSS.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use libmimalloc_sys as mi;

/// mimalloc, asked the way C's `malloc` is wherever that is enough. Asked
/// for an alignment (`mi_malloc_aligned`, what the `mimalloc` crate always
/// calls), mimalloc takes a block from the size class only while the class
/// has a free one at hand; otherwise it serves the request from a class
/// `align - 1` bytes larger, unless the class's blocks are a power of two.
/// A 48-byte key node aligned to 8 took a 64-byte block that way, and the
/// 48-byte class was never given a fresh page. Plain `mi_malloc` blocks
/// are aligned as C's `malloc` is, to 16 bytes (a smaller block to its
/// size), so an alignment up to that and to the size needs nothing more:
/// the rule std's `System` follows.
pub struct Mimalloc;

/// What a plain `mi_malloc` block is aligned to, at most.
const MALLOC_ALIGN: usize = 16;

fn plain(align: usize, size: usize) -> bool {
    align <= MALLOC_ALIGN && align <= size
}

type Plain = unsafe extern "C" fn(usize) -> *mut c_void;
type Aligned = unsafe extern "C" fn(usize, usize) -> *mut c_void;

/// A block for `layout` from `plain_fn` where a plain block will do, else
/// from `aligned_fn`.
///
/// # Safety
/// Both are mimalloc's allocating functions, of the same kind.
unsafe fn allocate(layout: Layout, plain_fn: Plain, aligned_fn: Aligned) -> *mut u8 {
    let (size, align) = (layout.size(), layout.align());
    // SAFETY: the functions take any size and a power-of-two alignment,
    // which a `Layout` has.
    unsafe {
        if plain(align, size) {
            plain_fn(size).cast()
        } else {
            aligned_fn(size, align).cast()
        }
    }
}

// SAFETY: each call is one of mimalloc's, which returns null or a block of
// at least `size` bytes; `plain` picks the unaligned ones only where their
// blocks are aligned enough. Every block is mimalloc's, freed by `mi_free`.
unsafe impl GlobalAlloc for Mimalloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: both allocate without zeroing.
        unsafe { allocate(layout, mi::mi_malloc, mi::mi_malloc_aligned) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: both allocate zeroed.
        unsafe { allocate(layout, mi::mi_zalloc, mi::mi_zalloc_aligned) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator, and is freed once.
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let ptr = ptr.cast::<c_void>();
        // SAFETY: `ptr` came from this allocator with `layout`; see the
        // impl.
        unsafe {
            if plain(layout.align(), new_size) {
                mi::mi_realloc(ptr, new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr, new_size, layout.align()).cast()
            }
        }
    }
}

/// Has mimalloc return the pages it keeps free (this thread's, and those
/// of memory no thread owns any more) to the system now. Where mimalloc is
/// not the allocator it holds nothing, and this does nothing.
pub(crate) fn give_back() {
    // SAFETY: takes no pointers; mimalloc allows it on any thread, any time.
    unsafe { mi::mi_collect(true) }
}

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
    &LIVE[super::stripe::index() % SLOTS].0
}

fn count(delta: i64) {
    slot().fetch_add(delta, Ordering::Relaxed);
}

// SAFETY: every call is passed on unchanged to the wrapped allocator.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's promise (a non-zero size) holds for `A` as
        // it did for this call.
        let p = unsafe { self.0.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as i64);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { self.0.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as i64);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: every block this allocator hands out is `A`'s, so `ptr`,
        // which the caller got from here with `layout`, is one of `A`'s.
        unsafe { self.0.dealloc(ptr, layout) };
        count(-(layout.size() as i64));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` is `A`'s block, as for `dealloc`, and `new_size`
        // comes with the caller's promises, which hold for `A`.
        let p = unsafe { self.0.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as i64 - layout.size() as i64);
        }
        p
    }
}

/// What the server uses: the bytes allocated when counted, else its RSS.
pub(crate) fn used_memory() -> u64 {
    allocated().unwrap_or_else(rss_bytes)
}

/// The process's resident set, from `/proc` (0 where there is none).
pub(crate) fn rss_bytes() -> u64 {
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
pub(crate) fn allocated() -> Option<u64> {
    let live: i64 = LIVE.iter().map(|s| s.0.load(Ordering::Relaxed)).sum();
    (live > 0).then_some(live as u64)
}

/// The most `used_memory` INFO or MEMORY STATS has reported.
static USED_MEMORY_PEAK: AtomicU64 = AtomicU64::new(0);

/// The allocator's bytes now, the most seen, and the process's resident size.
pub(crate) struct MemoryNow {
    pub used: u64,
    pub peak: u64,
    pub rss: u64,
}

pub(crate) fn memory_now() -> MemoryNow {
    let rss = rss_bytes();
    let used = allocated().unwrap_or(rss);
    let peak = USED_MEMORY_PEAK
        .fetch_max(used, Ordering::Relaxed)
        .max(used);
    MemoryNow { used, peak, rss }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_what_is_live() {
        let a = Counting(std::alloc::System);
        let layout = Layout::from_size_align(1000, 8).unwrap();
        let before = allocated().unwrap_or(0);
        // SAFETY: the layouts are non-zero, and the one block goes back to
        // `a` once, with the layout it has at that point (the test takes
        // `System` to succeed at these sizes).
        unsafe {
            let p = a.alloc(layout);
            assert_eq!(allocated(), Some(before + 1000));
            let p = a.realloc(p, layout, 3000);
            assert_eq!(allocated(), Some(before + 3000));
            a.dealloc(p, Layout::from_size_align(3000, 8).unwrap());
        }
        assert_eq!(allocated().unwrap_or(0), before);
    }

    /// Blocks of a size class whose free blocks ran out come from that
    /// class, aligned as asked, whatever the alignment up to 16.
    #[test]
    fn mimalloc_serves_each_size_from_its_own_class() {
        for (size, align, class) in [(48, 8, 48), (42, 2, 48), (80, 16, 80), (8, 8, 8)] {
            let layout = Layout::from_size_align(size, align).unwrap();
            // More than one page's worth, so the class's free blocks run out.
            let blocks: Vec<*mut u8> = (0..5000)
                // SAFETY: a non-zero layout.
                .map(|_| unsafe { Mimalloc.alloc(layout) })
                .collect();
            for &p in &blocks {
                assert_eq!(p as usize % align, 0);
                // SAFETY: `p` is a live mimalloc block, freed only below.
                let usable = unsafe { mi::mi_usable_size(p.cast()) };
                assert_eq!(usable, class, "{size} bytes aligned to {align}");
            }
            // SAFETY: `blocks[0]` is live with `layout`, and not used again.
            let grown = unsafe { Mimalloc.realloc(blocks[0], layout, 3 * size) };
            assert_eq!(grown as usize % align, 0);
            // SAFETY: `grown` is live with the layout it was grown to.
            unsafe { Mimalloc.dealloc(grown, Layout::from_size_align(3 * size, align).unwrap()) };
            for p in &blocks[1..] {
                // SAFETY: each of the other blocks is live with `layout`,
                // and freed once.
                unsafe { Mimalloc.dealloc(*p, layout) };
            }
        }
        let wide = Layout::from_size_align(100, 64).unwrap();
        // SAFETY: a non-zero layout.
        let p = unsafe { Mimalloc.alloc_zeroed(wide) };
        assert_eq!(p as usize % 64, 0);
        assert!(
            // SAFETY: `p` is a live block of 100 bytes, all zeroed, so all
            // initialised.
            unsafe { std::slice::from_raw_parts(p, 100) }
                .iter()
                .all(|&b| b == 0)
        );
        // SAFETY: `p` is live with `wide`, and the slice read from it is gone.
        unsafe { Mimalloc.dealloc(p, wide) };
    }

    /// A plain block is aligned as asked for every size a plain one
    /// serves, sizes that are no multiple of the alignment included (a
    /// hash table's buckets and control bytes ask for 16).
    #[test]
    fn plain_blocks_are_aligned_as_asked() {
        for align in [2, 4, 8, 16] {
            for size in align..=2048 {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero layout.
                let blocks: Vec<*mut u8> =
                    (0..64).map(|_| unsafe { Mimalloc.alloc(layout) }).collect();
                for &p in &blocks {
                    assert_eq!(p as usize % align, 0, "{size} bytes aligned to {align}");
                    // SAFETY: each block is live with `layout`, and freed once.
                    unsafe { Mimalloc.dealloc(p, layout) };
                }
            }
        }
    }
}
