//! What a command's spec says about it. Each family declares its commands'
//! specs; dispatch, transactions, scripts and the COMMAND replies read them.

use bytes::Bytes;

use super::ctx::Ctx;
use crate::error::CmdResult;
use crate::keyspace::Touch;
use crate::protocol::Reply;

pub type Handler = fn(&mut Ctx<'_, '_>) -> CmdResult<Reply>;

/// Finds a key argument the key specs cannot (see `find_more_keys`).
pub type KeyFinder = fn(&[Bytes]) -> Option<usize>;

/// The access flags of a key whose spec says `variable_flags`, read from
/// the line (SET with or without GET).
pub type KeyFlagsReader = fn(&[Bytes]) -> &'static [&'static str];

/// Names what part of its key (the first argument) a command may change,
/// so that a script's undo journal keeps only that (`keyspace::Touch`).
pub type Toucher = fn(&[Bytes]) -> Option<Touch<'_>>;

/// The members listed after the key (HDEL, SADD, SREM, ZREM).
pub fn touches_listed(args: &[Bytes]) -> Option<Touch<'_>> {
    Some(Touch::each(args.get(2..)?))
}

/// The one field after the key (HSETNX, HINCRBY, HINCRBYFLOAT).
pub fn touches_first(args: &[Bytes]) -> Option<Touch<'_>> {
    Some(Touch::each(args.get(2..3)?))
}

/// Command flags, in the order Redis lists them in COMMAND INFO.
pub mod flag {
    pub const WRITE: u32 = 1 << 0;
    pub const READONLY: u32 = 1 << 1;
    pub const DENYOOM: u32 = 1 << 2;
    pub const ADMIN: u32 = 1 << 3;
    pub const PUBSUB: u32 = 1 << 4;
    pub const NOSCRIPT: u32 = 1 << 5;
    pub const BLOCKING: u32 = 1 << 6;
    pub const LOADING: u32 = 1 << 7;
    pub const STALE: u32 = 1 << 8;
    pub const SKIP_SLOWLOG: u32 = 1 << 9;
    pub const FAST: u32 = 1 << 10;
    pub const NO_AUTH: u32 = 1 << 11;
    /// Not reported by Redis 7.0's COMMAND INFO, but held back by
    /// `CLIENT PAUSE WRITE` like a write (EVAL, PUBLISH).
    pub const MAY_REPLICATE: u32 = 1 << 12;
    pub const NO_MANDATORY_KEYS: u32 = 1 << 13;
    pub const NO_MULTI: u32 = 1 << 14;
    pub const ALLOW_BUSY: u32 = 1 << 15;
    pub const SKIP_MONITOR: u32 = 1 << 16;
    /// Derived for COMMAND INFO from keynum key specs; never declared.
    pub const MOVABLE_KEYS: u32 = 1 << 17;
    pub const ASKING: u32 = 1 << 18;
    /// Refused while a replica loads asynchronously (reported only).
    pub const NO_ASYNC_LOADING: u32 = 1 << 19;

    // The flags below are rlockd's: COMMAND INFO never reports them, and
    // they let dispatch know special commands without naming them.

    /// Runs at once inside MULTI instead of being queued (MULTI, WATCH,
    /// and the `ENDS_MULTI` commands).
    pub const RUNS_IN_MULTI: u32 = 1 << 20;
    /// Ends a transaction (EXEC, DISCARD, QUIT, RESET): over `maxmemory`
    /// it is not refused as anything else sent inside MULTI is.
    pub const ENDS_MULTI: u32 = 1 << 21;
    /// Runs the queued transaction (EXEC): refusing it discards the
    /// transaction, and the flags of what it queued are its own.
    pub const EXEC: u32 = 1 << 22;
    /// Taken from a RESP2 client in subscribed mode.
    pub const WHILE_SUBSCRIBED: u32 = 1 << 23;
    /// Leaves a `CLIENT CACHING` opt-in for the command after it (the
    /// CLIENT subcommands).
    pub const KEEPS_CACHING: u32 = 1 << 24;
    /// Ours, not reported: exists only on a server started with
    /// `enable-clock-control`; elsewhere it is an unknown command.
    pub const CLOCK_CONTROL: u32 = 1 << 28;
    /// Ours, not reported: a script, which may touch keys it did not
    /// declare, so inside EXEC the whole keyspace is held.
    pub const SCRIPT: u32 = 1 << 30;
    /// Ours, not reported: the command reads or writes the whole keyspace,
    /// so it runs with every shard held.
    pub const WHOLE_KEYSPACE: u32 = 1 << 31;

    pub const NAMES: &[(u32, &str)] = &[
        (WRITE, "write"),
        (READONLY, "readonly"),
        (DENYOOM, "denyoom"),
        (ADMIN, "admin"),
        (PUBSUB, "pubsub"),
        (NOSCRIPT, "noscript"),
        (BLOCKING, "blocking"),
        (LOADING, "loading"),
        (STALE, "stale"),
        (SKIP_MONITOR, "skip_monitor"),
        (SKIP_SLOWLOG, "skip_slowlog"),
        (ASKING, "asking"),
        (FAST, "fast"),
        (NO_AUTH, "no_auth"),
        (NO_MANDATORY_KEYS, "no_mandatory_keys"),
        (NO_ASYNC_LOADING, "no_async_loading"),
        (NO_MULTI, "no_multi"),
        (MOVABLE_KEYS, "movablekeys"),
        (ALLOW_BUSY, "allow_busy"),
    ];
}

/// ACL categories, in Redis's order. Commands declare the topical ones;
/// read/write/fast/slow/admin/pubsub/blocking follow from the flags.
pub mod acl {
    pub const KEYSPACE: u32 = 1 << 0;
    pub const READ: u32 = 1 << 1;
    pub const WRITE: u32 = 1 << 2;
    pub const SET: u32 = 1 << 3;
    pub const SORTEDSET: u32 = 1 << 4;
    pub const LIST: u32 = 1 << 5;
    pub const HASH: u32 = 1 << 6;
    pub const STRING: u32 = 1 << 7;
    /// No rlockd command is in these four; ACL CAT lists them as Redis does.
    pub const BITMAP: u32 = 1 << 8;
    pub const HYPERLOGLOG: u32 = 1 << 9;
    pub const GEO: u32 = 1 << 10;
    pub const STREAM: u32 = 1 << 11;
    pub const PUBSUB: u32 = 1 << 12;
    pub const ADMIN: u32 = 1 << 13;
    pub const FAST: u32 = 1 << 14;
    pub const SLOW: u32 = 1 << 15;
    pub const BLOCKING: u32 = 1 << 16;
    pub const DANGEROUS: u32 = 1 << 17;
    pub const CONNECTION: u32 = 1 << 18;
    pub const TRANSACTION: u32 = 1 << 19;
    pub const SCRIPTING: u32 = 1 << 20;

    pub const NAMES: &[(u32, &str)] = &[
        (KEYSPACE, "@keyspace"),
        (READ, "@read"),
        (WRITE, "@write"),
        (SET, "@set"),
        (SORTEDSET, "@sortedset"),
        (LIST, "@list"),
        (HASH, "@hash"),
        (STRING, "@string"),
        (BITMAP, "@bitmap"),
        (HYPERLOGLOG, "@hyperloglog"),
        (GEO, "@geo"),
        (STREAM, "@stream"),
        (PUBSUB, "@pubsub"),
        (ADMIN, "@admin"),
        (FAST, "@fast"),
        (SLOW, "@slow"),
        (BLOCKING, "@blocking"),
        (DANGEROUS, "@dangerous"),
        (CONNECTION, "@connection"),
        (TRANSACTION, "@transaction"),
        (SCRIPTING, "@scripting"),
    ];
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Connection,
    Server,
    Cluster,
    Generic,
    String,
    Bitmap,
    Hyperloglog,
    Hash,
    List,
    Set,
    SortedSet,
    Stream,
    Transactions,
    Scripting,
    Pubsub,
    Geo,
}

impl Group {
    pub fn name(self) -> &'static str {
        match self {
            Group::Connection => "connection",
            Group::Server => "server",
            Group::Cluster => "cluster",
            Group::Generic => "generic",
            Group::String => "string",
            Group::Bitmap => "bitmap",
            Group::Hyperloglog => "hyperloglog",
            Group::Hash => "hash",
            Group::List => "list",
            Group::Set => "set",
            Group::SortedSet => "sorted-set",
            Group::Stream => "stream",
            Group::Transactions => "transactions",
            Group::Scripting => "scripting",
            Group::Pubsub => "pubsub",
            Group::Geo => "geo",
        }
    }
}

/// Where keys sit in the arguments: from `begin`, every `step`-th argument
/// up to `last` (0: only `begin`; negative: counted from the end). With
/// `keynum`, `begin` holds the number of keys, which follow it.
#[derive(Debug, Clone, Copy)]
pub struct KeySpec {
    pub flags: &'static [&'static str],
    pub begin: i32,
    pub last: i32,
    pub step: i32,
    pub keynum: bool,
    /// Keys the arguments cannot locate (SORT's BY/GET patterns, its STORE
    /// anywhere in the line): reported, but never read from a command line.
    pub unknown: bool,
    /// Keys start after this word, searched for from `begin`: the one
    /// argument after it when `last` is 0 (GEORADIUS's STORE), else the
    /// first half of what follows it (XREAD's `STREAMS key... id...`).
    pub keyword: Option<&'static str>,
    /// After a keyword with `last` negative: keys are the first 1/`limit`
    /// of what follows (2 for XREAD's `STREAMS key... id...`), or all of it
    /// with 0 (MIGRATE's `KEYS key...`).
    pub limit: i32,
    /// A remark COMMAND INFO shows with the spec.
    pub notes: &'static str,
}

impl KeySpec {
    pub const fn range(begin: i32, last: i32, step: i32, flags: &'static [&'static str]) -> Self {
        KeySpec {
            flags,
            begin,
            last,
            step,
            keynum: false,
            unknown: false,
            keyword: None,
            limit: 0,
            notes: "",
        }
    }

    /// Keys found only by running the command (see `unknown`).
    pub const fn unknown(flags: &'static [&'static str], notes: &'static str) -> Self {
        KeySpec {
            flags,
            begin: 0,
            last: 0,
            step: 1,
            keynum: false,
            unknown: true,
            keyword: None,
            limit: 0,
            notes,
        }
    }

    /// `... KEYWORD key... arg...`: the keys are the first half of what
    /// follows the keyword.
    pub const fn after_keyword(
        keyword: &'static str,
        startfrom: i32,
        flags: &'static [&'static str],
    ) -> Self {
        KeySpec {
            flags,
            begin: startfrom,
            last: -1,
            step: 1,
            keynum: false,
            unknown: false,
            keyword: Some(keyword),
            limit: 2,
            notes: "",
        }
    }

    /// `... KEYWORD key...`: every argument after the keyword is a key,
    /// the keyword searched for from `startfrom` (backwards from the end
    /// when negative: MIGRATE's `KEYS`).
    pub const fn all_after_keyword(
        keyword: &'static str,
        startfrom: i32,
        flags: &'static [&'static str],
    ) -> Self {
        let mut spec = Self::after_keyword(keyword, startfrom, flags);
        spec.limit = 0;
        spec
    }

    /// The one argument after `keyword`, searched for from `startfrom` on
    /// (GEORADIUS's STORE).
    pub const fn keyword(
        keyword: &'static str,
        startfrom: i32,
        flags: &'static [&'static str],
    ) -> Self {
        let mut spec = Self::after_keyword(keyword, startfrom, flags);
        spec.last = 0;
        spec
    }

    pub const fn with_notes(mut self, notes: &'static str) -> Self {
        self.notes = notes;
        self
    }

    /// Found at a fixed index, `last`/`step` from there.
    pub fn is_range(&self) -> bool {
        !self.keynum && !self.unknown && self.keyword.is_none()
    }

    /// A spec that marks arguments in key positions that are not keys
    /// (SPUBLISH's shard channel).
    pub fn is_not_key(&self) -> bool {
        self.flags.contains(&"not_key")
    }

    /// `numkeys key [key ...]`, the count at `begin` (EVAL's shape).
    pub const fn keynum(begin: i32, flags: &'static [&'static str]) -> Self {
        KeySpec {
            flags,
            begin,
            last: 0,
            step: 1,
            keynum: true,
            unknown: false,
            keyword: None,
            limit: 0,
            notes: "",
        }
    }

    /// The first and last key index in `args`; `None` if there are no keys
    /// (too few arguments, or a count that does not fit).
    fn span(&self, args: &[Bytes]) -> Option<(usize, usize)> {
        if self.unknown {
            return None;
        }
        let argc = args.len();
        if self.keynum {
            let begin = self.begin as usize;
            let count = crate::util::parse_i64(args.get(begin)?)?;
            let count = usize::try_from(count)
                .ok()
                .filter(|n| *n > 0 && begin + n < argc)?;
            return Some((begin + 1, begin + count));
        }
        if let Some(word) = self.keyword {
            let is_word = |i: &usize| args[*i].eq_ignore_ascii_case(word.as_bytes());
            let at = if self.begin >= 0 {
                (self.begin as usize..argc.saturating_sub(1)).find(is_word)?
            } else {
                let from = usize::try_from(argc as i64 + self.begin as i64).ok()?;
                (1..=from.min(argc.saturating_sub(1))).rev().find(is_word)?
            };
            if self.last == 0 {
                return Some((at + 1, at + 1));
            }
            let keys = match self.limit {
                0 => argc - at - 1,
                parts => (argc - at - 1) / parts as usize,
            };
            return (keys > 0).then_some((at + 1, at + keys));
        }
        let begin = self.begin as usize;
        let last = if self.last >= 0 {
            begin + self.last as usize
        } else {
            usize::try_from(argc as i64 + self.last as i64).ok()?
        };
        let last = last.min(argc.checked_sub(1)?);
        (begin <= last).then_some((begin, last))
    }
}

/// Where a pub/sub command names its channels, which ACL channel rules
/// check.
#[derive(Debug, Clone, Copy)]
pub enum ChannelArgs {
    /// The channel in argument 1 (PUBLISH, SPUBLISH).
    First,
    /// Every argument from 1 on (SUBSCRIBE, SSUBSCRIBE).
    All,
    /// Every argument from 1 on, each a pattern (PSUBSCRIBE).
    AllPatterns,
}

impl ChannelArgs {
    /// The arguments that are channels on a line of `argc`, and whether
    /// they are patterns.
    pub fn span(self, argc: usize) -> (std::ops::Range<usize>, bool) {
        match self {
            ChannelArgs::First => (1..2.min(argc), false),
            ChannelArgs::All => (1..argc, false),
            ChannelArgs::AllPatterns => (1..argc, true),
        }
    }
}

/// What a script call's first argument names, where the flags its script
/// declares are found: they stand in for the command's write flags.
#[derive(Debug, Clone, Copy)]
pub enum ScriptTarget {
    /// The script's text (EVAL, EVAL_RO).
    Body,
    /// The SHA1 of a cached script (EVALSHA, EVALSHA_RO).
    Sha,
    /// A loaded function (FCALL, FCALL_RO).
    Function,
}

pub struct CommandSpec {
    pub name: &'static str,
    /// Redis's convention: n means exactly n arguments (name included),
    /// -n means at least n.
    pub arity: i32,
    pub flags: u32,
    pub acl: u32,
    pub tips: &'static [&'static str],
    pub keys: &'static [KeySpec],
    pub group: Group,
    pub since: &'static str,
    pub summary: &'static str,
    /// The arguments in a compact grammar (see `docs::parse_syntax`), from
    /// which COMMAND DOCS builds its `arguments` tree; "" when none.
    pub syntax: &'static str,
    pub handler: Option<Handler>,
    pub subcommands: &'static [CommandSpec],
    /// Keys the specs cannot locate, found by reading the line (SORT's
    /// STORE): an argument index.
    pub find_more_keys: Option<KeyFinder>,
    /// What a `variable_flags` key spec's flags are for a line.
    pub vary_key_flags: Option<KeyFlagsReader>,
    pub touches: Option<Toucher>,
    /// Whether its changes are recorded (AOF, replication stream) as the
    /// command itself rather than as the keys it left: a command that
    /// makes the same change wherever it is run again over the same
    /// data, and whose result may be far larger than its line (RENAME,
    /// SUNIONSTORE…), as Redis propagates it.
    pub records_itself: bool,
    pub channels: Option<ChannelArgs>,
    pub script_target: Option<ScriptTarget>,
}

impl CommandSpec {
    pub const fn new(name: &'static str, arity: i32, group: Group, handler: Handler) -> Self {
        CommandSpec {
            name,
            arity,
            flags: 0,
            acl: 0,
            tips: &[],
            keys: &[],
            group,
            since: "1.0.0",
            summary: "",
            syntax: "",
            handler: Some(handler),
            subcommands: &[],
            find_more_keys: None,
            vary_key_flags: None,
            touches: None,
            records_itself: false,
            channels: None,
            script_target: None,
        }
    }

    /// A command that only groups subcommands (CLIENT, CONFIG, COMMAND).
    pub const fn container(name: &'static str, group: Group, subs: &'static [CommandSpec]) -> Self {
        CommandSpec {
            name,
            arity: -2,
            flags: 0,
            acl: acl::SLOW,
            tips: &[],
            keys: &[],
            group,
            since: "1.0.0",
            summary: "",
            syntax: "",
            handler: None,
            subcommands: subs,
            find_more_keys: None,
            vary_key_flags: None,
            touches: None,
            records_itself: false,
            channels: None,
            script_target: None,
        }
    }

    /// A container that also runs with no subcommand (plain `COMMAND`).
    pub const fn runs_bare(mut self, handler: Handler) -> Self {
        self.handler = Some(handler);
        self.arity = -1;
        self
    }

    pub const fn vary_key_flags(mut self, read: KeyFlagsReader) -> Self {
        self.vary_key_flags = Some(read);
        self
    }

    /// A key's access flags on this line: its spec's, or for a
    /// `variable_flags` spec what the line makes them.
    pub fn key_flags(&self, key: &KeySpec, args: &[Bytes]) -> &'static [&'static str] {
        match self.vary_key_flags {
            Some(read) if key.flags.contains(&"variable_flags") => read(args),
            _ => key.flags,
        }
    }

    pub const fn find_more_keys(mut self, find: KeyFinder) -> Self {
        self.find_more_keys = Some(find);
        self
    }

    pub const fn touches(mut self, touches: Toucher) -> Self {
        self.touches = Some(touches);
        self
    }

    pub const fn records_itself(mut self) -> Self {
        self.records_itself = true;
        self
    }

    pub const fn channels(mut self, channels: ChannelArgs) -> Self {
        self.channels = Some(channels);
        self
    }

    pub const fn script_target(mut self, target: ScriptTarget) -> Self {
        self.script_target = Some(target);
        self
    }

    pub const fn flags(mut self, flags: u32) -> Self {
        self.flags = flags;
        self
    }

    pub const fn acl(mut self, acl: u32) -> Self {
        self.acl = acl;
        self
    }

    pub const fn tips(mut self, tips: &'static [&'static str]) -> Self {
        self.tips = tips;
        self
    }

    pub const fn keys(mut self, keys: &'static [KeySpec]) -> Self {
        self.keys = keys;
        self
    }

    pub const fn doc(mut self, since: &'static str, summary: &'static str) -> Self {
        self.since = since;
        self.summary = summary;
        self
    }

    /// The argument grammar COMMAND DOCS reports, e.g.
    /// `"key value [NX | XX] [EX seconds | PX milliseconds]"`.
    pub const fn syntax(mut self, syntax: &'static str) -> Self {
        self.syntax = syntax;
        self
    }

    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }

    pub fn arity_ok(&self, argc: usize) -> bool {
        let argc = argc as i32;
        if self.arity >= 0 {
            argc == self.arity
        } else {
            argc >= -self.arity
        }
    }

    /// Every ACL category, explicit and implied by the flags, as Redis derives them.
    pub fn acl_categories(&self) -> u32 {
        let mut cats = self.acl;
        if self.has(flag::WRITE) {
            cats |= acl::WRITE;
        }
        if self.has(flag::READONLY) && cats & acl::SCRIPTING == 0 {
            cats |= acl::READ;
        }
        if self.has(flag::ADMIN) {
            cats |= acl::ADMIN | acl::DANGEROUS;
        }
        if self.has(flag::PUBSUB) {
            cats |= acl::PUBSUB;
        }
        if self.has(flag::FAST) {
            cats |= acl::FAST;
        }
        if self.has(flag::BLOCKING) {
            cats |= acl::BLOCKING;
        }
        if cats & acl::FAST == 0 {
            cats |= acl::SLOW;
        }
        cats
    }

    pub fn movable_keys(&self) -> bool {
        self.keys.iter().any(|k| !k.is_range())
    }

    /// The legacy (first, last, step) triple of COMMAND INFO, from the
    /// specs that are plain ranges.
    pub fn legacy_key_range(&self) -> (i32, i32, i32) {
        let mut ranges = self.keys.iter().filter(|k| k.is_range());
        let Some(first) = ranges.next() else {
            return (0, 0, 0);
        };
        let mut last = first.begin + first.last.max(0);
        for spec in std::iter::once(first).chain(ranges) {
            if spec.last < 0 {
                return (first.begin, spec.last, first.step);
            }
            last = last.max(spec.begin + spec.last);
        }
        (first.begin, last, first.step)
    }

    /// The key arguments of a command line; `not_key` specs (shard
    /// channels) are left out, as COMMAND GETKEYS leaves them out.
    pub fn key_args<'a>(&'a self, args: &'a [Bytes]) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.args_where(args, |k| !k.is_not_key())
    }

    /// The command line's key if it has exactly one. Most commands name
    /// one key at a fixed place (GET, HSET, ZADD…): that one is read
    /// straight off the line, without walking the specs.
    pub fn only_key<'a>(&'a self, args: &'a [Bytes]) -> Option<&'a [u8]> {
        if let ([k], None) = (self.keys, self.find_more_keys)
            && k.last == 0
            && !k.keynum
            && !k.unknown
            && k.keyword.is_none()
            && !k.is_not_key()
        {
            return usize::try_from(k.begin)
                .ok()
                .and_then(|at| args.get(at))
                .map(|key| &key[..]);
        }
        let mut keys = self.key_args(args);
        keys.next().filter(|_| keys.next().is_none())
    }

    /// Every argument a cluster routes the command by: its keys, and the
    /// shard channels of sharded pub/sub.
    pub fn routed_args<'a>(&'a self, args: &'a [Bytes]) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.args_where(args, |_| true)
    }

    fn args_where<'a>(
        &'a self,
        args: &'a [Bytes],
        keep: fn(&KeySpec) -> bool,
    ) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.key_positions(args)
            .filter(move |(_, k)| keep(k))
            .map(move |(i, _)| &args[i][..])
    }

    /// Each key position in `args` with the spec that found it (ACL checks
    /// read its access flags). A key only running the command can find
    /// (SORT's STORE) goes with the last spec, which describes it.
    pub fn key_positions<'a>(
        &'a self,
        args: &'a [Bytes],
    ) -> impl Iterator<Item = (usize, &'a KeySpec)> + 'a {
        let more = self
            .find_more_keys
            .and_then(|find| find(args))
            .zip(self.keys.last());
        self.keys
            .iter()
            .flat_map(move |k| {
                k.span(args)
                    .into_iter()
                    .flat_map(move |(first, last)| (first..=last).step_by(k.step.max(1) as usize))
                    .map(move |i| (i, k))
            })
            .chain(more)
    }
}
