//! The key a script's `redis.call` names, found once for the whole call.
//!
//! One call reaches its key from several places: the dispatch takes the
//! key's shard, the undo journal reads the key's prior state, the command
//! looks it up, and its change is counted and noted. Each used to work out
//! the key's hash slot (a CRC16 over the key) and its hash in the map, and
//! the journal and the command each probed the map. `Locked::resolve`
//! remembers, for the call in progress, the slot's shard and, once a lookup
//! made them, the map hash and the key's place, and the lookups that follow
//! take them from here.

use super::dbmap::{DbMap, Place};
use super::slot::key_shard;

/// The key of the call in progress and what finding it cost: its shard,
/// and its hash and place in one database's map once a lookup made them.
///
/// The key is known by where its bytes lie, not by a copy: every lookup
/// of one call is handed the same slice of the call's line (the command's
/// first argument), and the line lives, unchanged, for the whole call, so
/// a slice at the same address and of the same length is the same key.
/// Comparing two numbers costs less than hashing the key again, where a
/// copy compared byte by byte cost about as much as the CRC16 it saved.
/// A key at another address (a copy the command made) is worked out anew,
/// as without this. `Locked::forget_resolved` ends it with the call.
#[derive(Default)]
pub(super) struct ResolvedKey {
    /// The key's address and length; `None` between calls.
    key: Option<(usize, usize)>,
    shard: usize,
    found: Option<MapSpot>,
}

/// Where a key is in one database's map: each database of a shard is a
/// map of its own, with a hasher of its own.
#[derive(Clone, Copy)]
struct MapSpot {
    db: usize,
    hash: u64,
    /// Where it was when last found there (`None`: not looked for yet, or
    /// absent then). Checked before use, so a key moved or removed since
    /// is looked up again.
    place: Option<Place>,
}

impl ResolvedKey {
    /// Resolves `key`, answering its shard.
    #[inline(always)]
    pub(super) fn set(&mut self, key: &[u8]) -> usize {
        self.key = Some(address(key));
        self.shard = key_shard(key);
        self.found = None;
        self.shard
    }

    pub(super) fn clear(&mut self) {
        self.key = None;
        self.found = None;
    }

    #[inline(always)]
    fn is(&self, key: &[u8]) -> bool {
        self.key == Some(address(key))
    }

    /// The shard of `key`: remembered if it is the resolved key.
    #[inline(always)]
    pub(super) fn shard_of(&self, key: &[u8]) -> usize {
        if self.is(key) {
            self.shard
        } else {
            key_shard(key)
        }
    }

    /// The hash of `key` in `map` (database `db`), and its place there if
    /// a lookup of this call found it and it has not moved since.
    #[inline(always)]
    pub(super) fn spot(&self, db: usize, key: &[u8], map: &DbMap) -> (u64, Option<Place>) {
        match self.found {
            Some(spot) if spot.db == db && self.is(key) => {
                let place = spot
                    .place
                    .filter(|&p| map.node_at(p).is_some_and(|n| n.key() == key));
                (spot.hash, place)
            }
            _ => (map.hash(key), None),
        }
    }

    /// Remembers where a lookup found `key` (or that it hashed it).
    #[inline(always)]
    pub(super) fn found(&mut self, db: usize, key: &[u8], hash: u64, place: Option<Place>) {
        if self.is(key) {
            self.found = Some(MapSpot { db, hash, place });
        }
    }
}

/// Where `key`'s bytes lie and how many there are.
#[inline(always)]
fn address(key: &[u8]) -> (usize, usize) {
    (key.as_ptr() as usize, key.len())
}
