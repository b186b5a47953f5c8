//! The lock scripts the safety checkers drive (`tests/safety.rs` on one
//! server, `tests/safety_failover.rs` over a failover), and the names
//! Redisson gives a lock's other keys and channels.

/// Redisson's RLock, as rlockd runs it natively.
pub const LOCK: &str = include_str!("../../src/command/scripting/lock_scripts/redisson_lock.lua");
pub const UNLOCK: &str =
    include_str!("../../src/command/scripting/lock_scripts/redisson_unlock.lua");
/// Redisson's watchdog renewing a lease: only the holder's renews.
pub const RENEW: &str = "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then \
                         redis.call('pexpire', KEYS[1], ARGV[1]); return 1; end; return 0;";
/// The fenced lock: the reentrant lock plus a token counter.
pub const FENCED: &str = include_str!("../../conformance/scripts/lock_fenced_acquire.lua");
/// A `SET NX PX` lock's release: delete it if it is still the owner's.
pub const CAD: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";
pub const FAIR_ACQUIRE: &str = include_str!("../../conformance/scripts/fair_acquire.lua");
pub const FAIR_RELEASE: &str = include_str!("../../conformance/scripts/fair_release.lua");
pub const READ_ACQUIRE: &str = include_str!("../../conformance/scripts/rw_read_acquire.lua");
pub const READ_RELEASE: &str = include_str!("../../conformance/scripts/rw_read_release.lua");
pub const WRITE_ACQUIRE: &str = include_str!("../../conformance/scripts/rw_write_acquire.lua");
pub const WRITE_RELEASE: &str = include_str!("../../conformance/scripts/rw_write_release.lua");

/// The key's hash-tagged form: as it is when it has a tag, else wrapped in
/// one, as Redisson keeps a lock's keys in one cluster slot.
pub fn tagged(key: &str) -> String {
    if key.contains('{') {
        key.to_string()
    } else {
        format!("{{{key}}}")
    }
}

/// `prefix:` and the tagged key: a lock's channel or queue.
pub fn prefixed(prefix: &str, key: &str) -> String {
    format!("{prefix}:{}", tagged(key))
}

/// The channel a reentrant, fenced or fair lock's release publishes on
/// (the fair lock's adds `:owner`, the waiter it wakes).
pub fn lock_channel(key: &str) -> String {
    prefixed("redisson_lock__channel", key)
}

/// The read/write lock's channel.
pub fn rw_channel(key: &str) -> String {
    prefixed("redisson_rwlock", key)
}

/// A fair lock's hash, queue and deadlines.
pub fn fair_keys(key: &str) -> [String; 3] {
    [
        key.to_string(),
        prefixed("redisson_lock_queue", key),
        prefixed("redisson_lock_timeout", key),
    ]
}

/// The prefix of a reader's timeout keys, one per hold: `<prefix>:<n>`.
pub fn read_timeouts(key: &str, owner: &str) -> String {
    format!("{}:{owner}:rwlock_timeout", tagged(key))
}

/// The read/write lock's hash field of an owner's write holds.
pub fn writer(owner: &str) -> String {
    format!("{owner}:write")
}
