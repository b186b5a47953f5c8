//! Which shard holds a key, and Redis Cluster's hash slots: CRC16 (XMODEM)
//! of the key, or of its hash tag, modulo 16384.
//!
//! Every command works out its keys' shards, so a shard is chosen by the
//! cheapest hash that spreads keys evenly (foldhash, a few multiplies for
//! a short key, where the table-driven CRC16 takes a lookup per byte); a
//! slot is needed only in cluster mode (cross-slot checks, CLUSTER
//! KEYSLOT and the slot's keys). The shard hashes the same part of the key
//! the slot does, so keys that share a hash tag (a Redisson lock and its
//! channel) share a shard, and a command on them takes one lock.

use std::hash::BuildHasher;

use foldhash::fast::FixedState;

/// More shards than cores by a wide margin, so independent keys rarely
/// share a lock.
pub const SHARDS: usize = 128;

pub const HASH_SLOTS: u16 = 16384;

const CRC16_TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, &b| {
        (crc << 8) ^ CRC16_TABLE[((crc >> 8) as u8 ^ b) as usize]
    })
}

/// The part of `key` that is hashed: the text between the first `{` and
/// the first `}` after it, if that is not empty; else the whole key.
#[inline]
fn hashed_part(key: &[u8]) -> &[u8] {
    let Some(open) = memchr::memchr(b'{', key) else {
        return key;
    };
    let rest = &key[open + 1..];
    match memchr::memchr(b'}', rest) {
        Some(close) if close > 0 => &rest[..close],
        _ => key,
    }
}

pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hashed_part(key)) % HASH_SLOTS
}

/// The shard hash's seed: any constant, so that a key's shard is the same
/// in every run (benches and tests pick keys by shard).
const SHARD_SEED: u64 = 0x05ee_d0f5_ba4d;

pub fn key_shard(key: &[u8]) -> usize {
    (FixedState::with_seed(SHARD_SEED).hash_one(hashed_part(key)) % SHARDS as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn shards_spread_keys_evenly() {
        let mut per_shard = [0usize; SHARDS];
        for i in 0..SHARDS * 100 {
            per_shard[key_shard(format!("lock:{i}").as_bytes())] += 1;
        }
        // 100 a shard on average; a binomial draw stays well within this.
        assert!(
            per_shard.iter().all(|&n| (50..=150).contains(&n)),
            "{per_shard:?}"
        );
    }

    #[test]
    fn hash_tags_share_a_shard() {
        assert_eq!(
            key_shard(b"lock"),
            key_shard(b"redisson_lock__channel:{lock}")
        );
        assert_eq!(key_slot(b"foo"), 12182);
    }

    #[test]
    fn known_slots() {
        // Values CLUSTER KEYSLOT gives on Redis.
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"123456789"), 0x31c3 % HASH_SLOTS);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"));
        assert_ne!(key_slot(b"foo{}{bar}"), key_slot(b"bar"));
        assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
        assert_eq!(key_slot(b"foo{bar}{zap}"), key_slot(b"bar"));
    }

    proptest! {
        #[test]
        fn agrees_with_the_protocol_crate(key in proptest::collection::vec(
            prop_oneof![Just(b'{'), Just(b'}'), any::<u8>()], 0..40)) {
            prop_assert_eq!(key_slot(&key), redis_protocol::redis_keyslot(&key));
        }
    }
}
