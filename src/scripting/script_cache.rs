//! The script cache (SCRIPT LOAD, EVAL) by SHA1. Lock clients look a
//! script up on every EVALSHA, on every worker thread: a shared map's read
//! lock and the body's shared reference count were cache lines all cores
//! wrote. Each thread keeps copies of the small bodies it has run, good
//! until a SCRIPT FLUSH.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use dashmap::DashMap;

type Hasher = foldhash::fast::RandomState;

/// Bodies larger than this are not copied into each thread.
const COPIED_BODY_MAX: usize = 4096;
/// A thread keeps copies of the last this many scripts it ran (looked up
/// one by one: lock clients run a handful).
const COPIES_MAX: usize = 16;

pub struct ScriptCache {
    /// Found by SHA1 hex: a fast hash is safe, no input can choose keys
    /// that collide in it without breaking SHA1.
    map: DashMap<String, Bytes, Hasher>,
    /// Which cache this is, among all of the process's servers.
    id: u64,
    /// Bumped by every flush: a thread's copies made before are stale.
    flushes: AtomicU64,
}

impl Default for ScriptCache {
    fn default() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        ScriptCache {
            map: DashMap::default(),
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            flushes: AtomicU64::new(0),
        }
    }
}

/// A thread's copies, of one cache as of one flush: SHA1s and bodies.
#[derive(Default)]
struct Copies {
    of: (u64, u64),
    bodies: Vec<(String, Bytes)>,
}

thread_local! {
    static COPIES: RefCell<Copies> = RefCell::default();
}

impl ScriptCache {
    /// Caches `body` (if new) under its SHA1. EVAL caches its script
    /// each time: looked up first, a known one takes no write lock.
    pub fn insert(&self, sha: String, body: &Bytes) {
        if self.get(&sha).is_none() {
            self.map
                .entry(sha)
                .or_insert_with(|| Bytes::copy_from_slice(body));
        }
    }

    pub fn get(&self, sha: &str) -> Option<Bytes> {
        let of = (self.id, self.generation());
        COPIES.with_borrow_mut(|copies| {
            if copies.of != of {
                copies.bodies.clear();
                copies.of = of;
            }
            if let Some((_, body)) = copies.bodies.iter().find(|(s, _)| s == sha) {
                return Some(body.clone());
            }
            let body = self.map.get(sha)?.clone();
            if body.len() > COPIED_BODY_MAX {
                return Some(body);
            }
            if copies.bodies.len() == COPIES_MAX {
                copies.bodies.remove(0);
            }
            let copy = Bytes::copy_from_slice(&body);
            copies.bodies.push((sha.to_owned(), copy.clone()));
            Some(copy)
        })
    }

    pub fn contains(&self, sha: &str) -> bool {
        self.map.contains_key(sha)
    }

    /// How many flushes there have been: what was made from the bodies
    /// before the last (a thread's copies, a Lua state's compiled
    /// scripts) is stale.
    pub fn generation(&self) -> u64 {
        self.flushes.load(Ordering::Acquire)
    }

    pub fn flush(&self) {
        self.map.clear();
        self.flushes.fetch_add(1, Ordering::AcqRel);
    }

    /// How many, and their bytes (SHA1s included).
    pub fn size(&self) -> (usize, usize) {
        let bytes = self.map.iter().map(|b| b.key().len() + b.len()).sum();
        (self.map.len(), bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flush_is_seen_by_a_thread_that_ran_the_script() {
        let bodies = ScriptCache::default();
        let body = Bytes::from_static(b"return 1");
        bodies.insert("a".into(), &body);
        assert_eq!(bodies.get("a"), Some(body.clone()));
        bodies.flush();
        assert_eq!(bodies.get("a"), None);
        // Another cache's copies are not this one's.
        let other = ScriptCache::default();
        assert_eq!(other.get("a"), None);
        bodies.insert("a".into(), &body);
        assert_eq!(bodies.get("a"), Some(body));
        assert_eq!(other.get("a"), None);
    }

    #[test]
    fn scripts_past_the_copies_kept_are_still_found() {
        let bodies = ScriptCache::default();
        let body = |n: usize| Bytes::from(format!("return {n}"));
        for n in 0..3 * COPIES_MAX {
            bodies.insert(n.to_string(), &body(n));
        }
        for round in 0..2 {
            for n in 0..3 * COPIES_MAX {
                assert_eq!(bodies.get(&n.to_string()), Some(body(n)), "round {round}");
            }
        }
        // Large bodies are served from the shared cache, uncopied.
        let large = Bytes::from(vec![b' '; COPIED_BODY_MAX + 1]);
        bodies.insert("large".into(), &large);
        assert_eq!(bodies.get("large"), Some(large));
    }
}
