//! What a test asserts on: the locks held in the keyspace and who waits on
//! which channel. Read under every shard's lock, so one answer is one
//! consistent moment.

use std::time::Duration;

use bytes::Bytes;

use crate::keyspace::{Locked, Value};
use crate::pubsub::{Kind, PubSub};
use crate::util::{glob_match, parse_i64};

/// The field Redisson's read-write lock keeps its mode in, beside the owners.
const MODE_FIELD: &[u8] = b"mode";

/// Redisson's unlock latch: a string with a lease, like a lock, but it
/// records an unlock's outcome for the client's retry, so nobody holds it.
const REDISSON_UNLOCK_LATCH: &[u8] = b"redisson_unlock_latch:";

/// How a lock is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    /// A hash of owner field to hold count (Redisson's reentrant locks).
    Hash,
    /// A string with a deadline whose value names the owner (`SET key
    /// token NX PX`, as redis-py and Redlock clients lock).
    String,
}

impl LockKind {
    pub fn name(self) -> &'static str {
        match self {
            LockKind::Hash => "hash",
            LockKind::String => "string",
        }
    }
}

/// One owner of a lock and how many times it holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockOwner {
    /// The hash field (`<uuid>:<thread id>` for Redisson) or the string's value.
    pub owner: Bytes,
    pub holds: i64,
}

/// A lock found in the keyspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldLock {
    pub db: usize,
    pub key: Bytes,
    pub kind: LockKind,
    pub owners: Vec<LockOwner>,
    /// Time left before the lease runs out; `None` for a lock without one.
    pub ttl: Option<Duration>,
}

/// The subscribers of one channel, pattern or shard channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiters {
    pub kind: Kind,
    pub name: Bytes,
    /// Client ids (as CLIENT ID and CLIENT LIST report them), ascending.
    pub clients: Vec<u64>,
}

/// The owners of a hash that looks like a lock: every field but the mode
/// holds a positive count, and there is at least one.
fn hash_owners(value: &Value) -> Option<Vec<LockOwner>> {
    let Value::Hash(hash) = value else {
        return None;
    };
    let mut owners = Vec::new();
    for (field, count) in hash {
        if field == MODE_FIELD {
            continue;
        }
        let holds = parse_i64(count).filter(|n| *n > 0)?;
        owners.push(LockOwner {
            owner: Bytes::copy_from_slice(field),
            holds,
        });
    }
    (!owners.is_empty()).then_some(owners)
}

/// Every lock whose key matches `pattern` (a glob), ordered by database
/// and key. `locked` must hold every shard.
pub fn held_locks(
    locked: &mut Locked<'_>,
    databases: usize,
    pattern: Option<&[u8]>,
) -> Vec<HeldLock> {
    let now = locked.now();
    let mut found = Vec::new();
    for shard in locked.shards() {
        for db in 0..databases {
            for (key, entry) in shard.entries(db, now) {
                if pattern.is_some_and(|p| !glob_match(p, key, false)) {
                    continue;
                }
                let ttl = entry
                    .expire_at()
                    .map(|at| Duration::from_millis(at.saturating_sub(now)));
                let (kind, owners) = match &entry.entry().value {
                    Value::Str(..) if key.starts_with(REDISSON_UNLOCK_LATCH) => continue,
                    Value::Str(owner, _) if ttl.is_some() => (
                        LockKind::String,
                        vec![LockOwner {
                            owner: owner.clone(),
                            holds: 1,
                        }],
                    ),
                    value => match hash_owners(value) {
                        Some(owners) => (LockKind::Hash, owners),
                        None => continue,
                    },
                };
                found.push(HeldLock {
                    db,
                    key: Bytes::copy_from_slice(key),
                    kind,
                    owners,
                    ttl,
                });
            }
        }
    }
    found.sort_by(|a, b| (a.db, &a.key).cmp(&(b.db, &b.key)));
    found
}

/// Every channel, pattern and shard channel with subscribers whose name
/// matches `pattern`, ordered by kind and name.
pub fn waiters(pubsub: &PubSub, pattern: Option<&[u8]>) -> Vec<Waiters> {
    let mut found: Vec<Waiters> = pubsub
        .subscribers()
        .into_iter()
        .filter(|(_, name, _)| pattern.is_none_or(|p| glob_match(p, name, false)))
        .map(|(kind, name, mut clients)| {
            clients.sort_unstable();
            Waiters {
                kind,
                name,
                clients,
            }
        })
        .collect();
    found.sort_by(|a, b| (a.kind as u8, &a.name).cmp(&(b.kind as u8, &b.name)));
    found
}
