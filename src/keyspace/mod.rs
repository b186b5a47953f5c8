//! The keyspace: every database, split into shards by a hash of the key,
//! or of its `{hash tag}` as Redis Cluster's slots take it, so that all
//! keys sharing a tag (all keys of one lock) live in one shard. A command locks only the shards its keys map to; commands
//! over several shards lock them in ascending order, which rules out
//! deadlock between them.
//!
//! Where things live, from the whole keyspace down to one value:
//! - `store`: `Keyspace`, the shards behind their locks, and expiry passes.
//! - `plan`: `LockPlan`, which shards a command needs.
//! - `locked`: `Locked`, the shards one command holds; SWAPDB.
//! - `db`: `Db`, one database through those shards: lookups, writes,
//!   deadlines, WATCH, FLUSHDB and FLUSHALL.
//! - `shard`: `Shard`, one shard's databases, watchers and counters.
//! - `slot`: a key's hash slot and the shard it lives in.
//! - `dbmap`: one database's keys in one shard and their expiry wheel (the
//!   crate's model for unsafe code: every block says why it is sound), and
//!   a snapshot's hold on them: keys copied aside before they change.
//! - `journal`: what undoes a script's writes. `resolved`: the key of a
//!   script's call, found once for the call.
//! - `blocked`: how clients blocked on keys are served.
//! - `waiter`: what a blocked client waits for and how its wait ends.
//! - `events`: keyspace notifications and `EventSink`, where they go.
//! - `aof`: what a write records in the append-only file (the file itself,
//!   its rewrite and its replay are in `crate::persist`).
//! - `value`, `hash`, `set`, `zset`, `stream`, `compact`: stored values
//!   and their forms; `limits`: when a value changes form.
//! - `access`: each key's LRU/LFU access clock.
//! - `dump`: a value in Redis's RDB encoding, for DUMP and RESTORE
//!   payloads and RDB files; `memory`: MEMORY USAGE.
//! - `snapshot`: the keyspace at one point in time as RDB keys (BGSAVE),
//!   taken while clients go on, and RDB keys loaded back.

pub(crate) mod access;
mod aof;
mod blocked;
mod compact;
mod db;
mod dbmap;
pub(crate) mod dump;
pub(crate) mod events;
mod hash;
mod journal;
mod limits;
mod locked;
mod memory;
mod plan;
mod resolved;
mod set;
mod shard;
mod slot;
pub(crate) mod snapshot;
mod store;
mod stream;
mod value;
mod waiter;
mod zset;

pub(crate) use aof::ListOp;
pub use db::Ttl;
pub(crate) use db::{Db, flush_all};
pub(crate) use events::{Event, EventSink};
pub(crate) use journal::Touch;
pub(crate) use limits::EncodingLimits;
pub(crate) use locked::Locked;
pub(crate) use memory::usage as memory_usage;
pub use plan::LockPlan;
pub(crate) use set::SetValue;
pub(crate) use shard::{Shard, ShardStats, WatchFlag};
pub(crate) use slot::{HASH_SLOTS, SHARDS};
pub use slot::{key_shard, key_slot};
pub use store::Keyspace;
pub(crate) use stream::{
    ENTRIES_READ_UNKNOWN, Group, GroupRead, ReadEntry, Stream, StreamId, Trim, claim_form,
    create_consumer_form, set_id_form,
};
pub use value::Value;
pub(crate) use value::{Entry, HashValue, StrEncoding, StrForm};
pub(crate) use waiter::{End, Outcome, StreamWait, Taken, Waiter, Wanted, ZEnd};
pub(crate) use zset::SortedSet;
