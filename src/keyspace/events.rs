//! Keyspace notifications: which events `notify-keyspace-events` enables,
//! the events the keyspace and the commands raise, and where they go.

/// The event classes and the two channel families, one bit each.
pub mod class {
    /// `K`: publish on `__keyspace@<db>__:<key>`.
    pub const KEYSPACE: u32 = 1 << 0;
    /// `E`: publish on `__keyevent@<db>__:<event>`.
    pub const KEYEVENT: u32 = 1 << 1;
    pub const GENERIC: u32 = 1 << 2;
    pub const STRING: u32 = 1 << 3;
    pub const LIST: u32 = 1 << 4;
    pub const SET: u32 = 1 << 5;
    pub const HASH: u32 = 1 << 6;
    pub const ZSET: u32 = 1 << 7;
    pub const EXPIRED: u32 = 1 << 8;
    pub const EVICTED: u32 = 1 << 9;
    pub const STREAM: u32 = 1 << 10;
    pub const KEY_MISS: u32 = 1 << 11;
    pub const MODULE: u32 = 1 << 12;
    pub const NEW: u32 = 1 << 13;
    /// What `A` stands for: every class but key misses and new keys.
    pub const ALL: u32 =
        GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;
}

/// Each flag letter and its bits.
const LETTERS: &[(char, u32)] = &[
    ('A', class::ALL),
    ('g', class::GENERIC),
    ('$', class::STRING),
    ('l', class::LIST),
    ('s', class::SET),
    ('h', class::HASH),
    ('z', class::ZSET),
    ('x', class::EXPIRED),
    ('e', class::EVICTED),
    ('K', class::KEYSPACE),
    ('E', class::KEYEVENT),
    ('t', class::STREAM),
    ('m', class::KEY_MISS),
    ('d', class::MODULE),
    ('n', class::NEW),
];

/// Parses a `notify-keyspace-events` value; `None` for an unknown letter.
pub fn parse_flags(text: &str) -> Option<u32> {
    text.chars().try_fold(0, |flags, c| {
        LETTERS
            .iter()
            .find(|(letter, _)| *letter == c)
            .map(|(_, bits)| flags | bits)
    })
}

/// The canonical spelling CONFIG GET reports: `A` when every class of it
/// is on (Redis then omits `n` as well), else the class letters in a
/// fixed order; then `K`, `E` and `m`.
pub fn render_flags(flags: u32) -> String {
    let mut out = String::new();
    if flags & class::ALL == class::ALL {
        out.push('A');
    } else {
        // The class letters, in LETTERS' order.
        for &(letter, bit) in LETTERS.iter().filter(|(c, _)| !"AKEm".contains(*c)) {
            if flags & bit != 0 {
                out.push(letter);
            }
        }
    }
    for (letter, bit) in [
        ('K', class::KEYSPACE),
        ('E', class::KEYEVENT),
        ('m', class::KEY_MISS),
    ] {
        if flags & bit != 0 {
            out.push(letter);
        }
    }
    out
}

/// The error CONFIG SET gives for a value with an unknown letter.
pub const INVALID_FLAGS: &str = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";

/// An event a command or the keyspace raises on a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Del,
    Expire,
    Expired,
    Persist,
    RenameFrom,
    RenameTo,
    New,
    KeyMiss,
    Set,
    Incrby,
    Append,
    Setrange,
    Incrbyfloat,
    Setbit,
    Pfadd,
    Hset,
    Hdel,
    Hincrby,
    Hincrbyfloat,
    Lpush,
    Rpush,
    Lpop,
    Rpop,
    Lrem,
    Lset,
    Linsert,
    Ltrim,
    Zadd,
    Zincr,
    Zrem,
    Zremrangebyscore,
    Zremrangebyrank,
    Zremrangebylex,
    Zpopmin,
    Zpopmax,
    Zunionstore,
    Zinterstore,
    Zdiffstore,
    Zrangestore,
    Sadd,
    Srem,
    Spop,
    Sinterstore,
    Sunionstore,
    Sdiffstore,
    CopyTo,
    MoveFrom,
    MoveTo,
    Restore,
    Sortstore,
    Xadd,
    Xtrim,
    Xdel,
    Xsetid,
    XgroupCreate,
    XgroupCreateConsumer,
    XgroupDelConsumer,
    XgroupDestroy,
    XgroupSetid,
    Georadiusstore,
    Geosearchstore,
}

impl Event {
    pub fn name(self) -> &'static str {
        match self {
            Event::Del => "del",
            Event::Expire => "expire",
            Event::Expired => "expired",
            Event::Persist => "persist",
            Event::RenameFrom => "rename_from",
            Event::RenameTo => "rename_to",
            Event::New => "new",
            Event::KeyMiss => "keymiss",
            Event::Set => "set",
            Event::Incrby => "incrby",
            Event::Append => "append",
            Event::Setrange => "setrange",
            Event::Incrbyfloat => "incrbyfloat",
            Event::Setbit => "setbit",
            Event::Pfadd => "pfadd",
            Event::Hset => "hset",
            Event::Hdel => "hdel",
            Event::Hincrby => "hincrby",
            Event::Hincrbyfloat => "hincrbyfloat",
            Event::Lpush => "lpush",
            Event::Rpush => "rpush",
            Event::Lpop => "lpop",
            Event::Rpop => "rpop",
            Event::Lrem => "lrem",
            Event::Lset => "lset",
            Event::Linsert => "linsert",
            Event::Ltrim => "ltrim",
            Event::Zadd => "zadd",
            Event::Zincr => "zincr",
            Event::Zrem => "zrem",
            Event::Zremrangebyscore => "zremrangebyscore",
            Event::Zremrangebyrank => "zremrangebyrank",
            Event::Zremrangebylex => "zremrangebylex",
            Event::Zpopmin => "zpopmin",
            Event::Zpopmax => "zpopmax",
            Event::Zunionstore => "zunionstore",
            Event::Zinterstore => "zinterstore",
            Event::Zdiffstore => "zdiffstore",
            Event::Zrangestore => "zrangestore",
            Event::Sadd => "sadd",
            Event::Srem => "srem",
            Event::Spop => "spop",
            Event::Sinterstore => "sinterstore",
            Event::Sunionstore => "sunionstore",
            Event::Sdiffstore => "sdiffstore",
            Event::CopyTo => "copy_to",
            Event::MoveFrom => "move_from",
            Event::MoveTo => "move_to",
            Event::Restore => "restore",
            Event::Sortstore => "sortstore",
            Event::Xadd => "xadd",
            Event::Xtrim => "xtrim",
            Event::Xdel => "xdel",
            Event::Xsetid => "xsetid",
            Event::XgroupCreate => "xgroup-create",
            Event::XgroupCreateConsumer => "xgroup-createconsumer",
            Event::XgroupDelConsumer => "xgroup-delconsumer",
            Event::XgroupDestroy => "xgroup-destroy",
            Event::XgroupSetid => "xgroup-setid",
            Event::Georadiusstore => "georadiusstore",
            Event::Geosearchstore => "geosearchstore",
        }
    }

    pub fn class(self) -> u32 {
        match self {
            Event::Del
            | Event::Expire
            | Event::Persist
            | Event::RenameFrom
            | Event::RenameTo
            | Event::CopyTo
            | Event::MoveFrom
            | Event::MoveTo
            | Event::Restore => class::GENERIC,
            Event::Expired => class::EXPIRED,
            Event::New => class::NEW,
            Event::KeyMiss => class::KEY_MISS,
            Event::Set
            | Event::Incrby
            | Event::Append
            | Event::Setrange
            | Event::Incrbyfloat
            | Event::Setbit
            | Event::Pfadd => class::STRING,
            Event::Hset | Event::Hdel | Event::Hincrby | Event::Hincrbyfloat => class::HASH,
            Event::Lpush
            | Event::Rpush
            | Event::Lpop
            | Event::Rpop
            | Event::Lrem
            | Event::Lset
            | Event::Linsert
            | Event::Ltrim
            | Event::Sortstore => class::LIST,
            Event::Zadd
            | Event::Zincr
            | Event::Zrem
            | Event::Zremrangebyscore
            | Event::Zremrangebyrank
            | Event::Zremrangebylex
            | Event::Zpopmin
            | Event::Zpopmax
            | Event::Zunionstore
            | Event::Zinterstore
            | Event::Zdiffstore
            | Event::Zrangestore => class::ZSET,
            Event::Georadiusstore | Event::Geosearchstore => class::ZSET,
            Event::Sadd
            | Event::Srem
            | Event::Spop
            | Event::Sinterstore
            | Event::Sunionstore
            | Event::Sdiffstore => class::SET,
            Event::Xadd
            | Event::Xtrim
            | Event::Xdel
            | Event::Xsetid
            | Event::XgroupCreate
            | Event::XgroupCreateConsumer
            | Event::XgroupDelConsumer
            | Event::XgroupDestroy
            | Event::XgroupSetid => class::STREAM,
        }
    }
}

/// Where the keyspace sends the events it raises (keys expired, created,
/// missed, and those commands raise through it): pub/sub, which sits above
/// the keyspace, publishes them as keyspace notifications.
pub trait EventSink: Send + Sync {
    fn notify(&self, event: Event, db: usize, key: &[u8]);

    /// A key changed or went away, in any database (what client-side
    /// caching invalidates); `by_client` is false when expiry removed it.
    fn changed(&self, _key: &[u8], _by_client: bool) {}

    /// A database, or all of them, was emptied.
    fn flushed(&self) {}
}

/// A keyspace of its own (benches, unit tests) raises events to no one.
pub(super) struct NoEvents;

impl EventSink for NoEvents {
    fn notify(&self, _: Event, _: usize, _: &[u8]) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(text: &str) -> Option<String> {
        parse_flags(text).map(render_flags)
    }

    #[test]
    fn spellings_match_redis() {
        assert_eq!(canonical("").as_deref(), Some(""));
        assert_eq!(canonical("KEA").as_deref(), Some("AKE"));
        assert_eq!(canonical("Ex").as_deref(), Some("xE"));
        assert_eq!(canonical("mEK$").as_deref(), Some("$KEm"));
        assert_eq!(canonical("lshzxetd").as_deref(), Some("lshzxetd"));
        assert_eq!(canonical("g$lshzxetd").as_deref(), Some("A"));
        // `n` is not part of `A`, and Redis drops it when printing `A`.
        assert_eq!(canonical("Kg$lshzxetdnm").as_deref(), Some("AKm"));
        assert_eq!(canonical("AAK").as_deref(), Some("AK"));
        assert_eq!(canonical("gn").as_deref(), Some("gn"));
        assert_eq!(canonical("q"), None);
        assert_eq!(canonical("a"), None);
    }

    #[test]
    fn classes() {
        assert_eq!(Event::Hdel.class(), class::HASH);
        assert_eq!(Event::Del.name(), "del");
        assert_eq!(class::ALL & class::NEW, 0);
        assert_eq!(class::ALL & class::KEY_MISS, 0);
    }
}
