//! Redis Cluster hash slots: CRC16 (XMODEM) of the key, or of its hash tag,
//! modulo 16384. Every command computes this for its keys, so it is
//! table-driven: one lookup per byte. A slot's keys all live in one shard.

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
fn hashed_part(key: &[u8]) -> &[u8] {
    let Some(open) = key.iter().position(|&b| b == b'{') else {
        return key;
    };
    let rest = &key[open + 1..];
    match rest.iter().position(|&b| b == b'}') {
        Some(close) if close > 0 => &rest[..close],
        _ => key,
    }
}

pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hashed_part(key)) % HASH_SLOTS
}

pub fn key_shard(key: &[u8]) -> usize {
    slot_shard(key_slot(key))
}

pub fn slot_shard(slot: u16) -> usize {
    slot as usize % SHARDS
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
