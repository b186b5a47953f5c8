//! Which shards a command needs, worked out from its keys before it runs.

use super::slot::key_shard;

/// Which shards a command needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockPlan {
    /// No keys: nothing is locked.
    Nothing,
    /// These shards, ascending and without repeats.
    Shards(Vec<usize>),
    /// Every shard: whole-keyspace commands and anything that must see a
    /// frozen keyspace.
    All,
}

impl LockPlan {
    pub fn for_keys<'k>(keys: impl IntoIterator<Item = &'k [u8]>) -> LockPlan {
        let mut shards: Vec<usize> = keys.into_iter().map(key_shard).collect();
        if shards.is_empty() {
            return LockPlan::Nothing;
        }
        shards.sort_unstable();
        shards.dedup();
        LockPlan::Shards(shards)
    }

    pub fn union(self, other: LockPlan) -> LockPlan {
        match (self, other) {
            (LockPlan::All, _) | (_, LockPlan::All) => LockPlan::All,
            (LockPlan::Nothing, p) | (p, LockPlan::Nothing) => p,
            (LockPlan::Shards(mut a), LockPlan::Shards(b)) => {
                a.extend(b);
                a.sort_unstable();
                a.dedup();
                LockPlan::Shards(a)
            }
        }
    }
}
