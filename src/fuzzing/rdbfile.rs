//! The `dump.rdb` loader on arbitrary bytes: the function start-up and
//! DEBUG RELOAD load a file with, into an emptied server. A damaged file
//! must be refused with an error, never a panic, an abort or an
//! allocation its own length does not pay for; a file that loads must
//! save and load back to the same keys.

use super::Harness;
use super::payload::TIGHT;
use crate::context::Shared;
use crate::context::snapshot::{empty_all, load_data, rdb_now};
use crate::keyspace::{EncodingLimits, LockPlan};

impl Harness {
    /// Loads `data` as `dump.rdb` twice, each time into an emptied
    /// server: checking its checksum under Redis's default encoding
    /// limits, then without the check (so that a damaged checksum does
    /// not hide the rest from the round trip) under limits small enough
    /// that every conversion on load is taken. Answers how many of the
    /// two loads took the file.
    pub fn load_rdb(&mut self, data: &[u8]) -> usize {
        let mut taken = 0;
        for (verify, limits) in [(true, EncodingLimits::DEFAULT), (false, TIGHT)] {
            self.reset();
            let shared = &self.shared;
            shared.keyspace.set_limits(limits);
            empty_all(shared);
            if load_data(shared, data, verify, false).is_err() {
                continue;
            }
            taken += 1;
            // Not the load's count: a file may name a key twice (the last
            // one stays; Redis stops on it).
            let held = key_count(shared);
            let (image, _) = rdb_now(shared, Vec::new(), false).expect("a save to memory");
            empty_all(shared);
            if let Err(e) = load_data(shared, &image, true, false) {
                panic!("{data:?} loaded, but its save did not: {e}");
            }
            // Keys whose deadline passed since are in the image, and
            // dropped as expired on its load.
            let (_, expired) = shared.snapshots.last_load();
            let again = key_count(shared);
            assert_eq!(again + expired, held, "{data:?}: keys lost in a save");
        }
        taken
    }
}

/// The keys the server holds, in every database.
fn key_count(shared: &Shared) -> u64 {
    let databases = shared.keyspace.databases();
    let mut locked = shared
        .keyspace
        .lock(&LockPlan::All)
        .expect("no script holds a shard");
    let held: usize = locked
        .shards()
        .map(|shard| (0..databases).map(|db| shard.db_len(db)).sum::<usize>())
        .sum();
    held as u64
}
