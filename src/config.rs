//! Server settings. Each directive is one entry of the `directives!` list
//! below: its name, field, default, parser (and so its range), help text,
//! whether CONFIG SET may change it and what must hear of the change. The
//! `Config` struct, its defaults, the table CONFIG GET/SET, the config file
//! and the binary's flags and `--help` read are all made from that list.

use crate::keyspace::EncodingLimits;
use crate::util::{glob_match, parse_i64};

/// `enable-debug-command`: nobody (Redis's default), everybody, or
/// clients on the loopback interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DebugCommand {
    #[default]
    No,
    Yes,
    Local,
}

impl DebugCommand {
    fn name(self) -> &'static str {
        match self {
            DebugCommand::No => "no",
            DebugCommand::Yes => "yes",
            DebugCommand::Local => "local",
        }
    }

    fn parse(v: &str) -> Result<Self, String> {
        [DebugCommand::No, DebugCommand::Yes, DebugCommand::Local]
            .into_iter()
            .find(|d| v.eq_ignore_ascii_case(d.name()))
            .ok_or_else(|| "argument(s) must be one of the following: no, yes, local".into())
    }
}

/// A file's permission bits (`unixsocketperm`), read and shown in octal
/// as Redis does; 0 leaves them as the umask made them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileMode(pub u32);

impl FileMode {
    /// The most a mode may be: the permission bits, without setuid and the
    /// like.
    const MAX: i64 = 0o777;

    /// Read as Redis's `strtoll(v, &end, 8)` reads it: leading blanks and
    /// a sign allowed, nothing at all read as 0.
    fn parse(v: &str) -> Result<Self, String> {
        let n = match v.trim_start_matches(|c: char| c.is_ascii_whitespace()) {
            _ if v.is_empty() => 0,
            digits => i64::from_str_radix(digits, 8)
                .map_err(|_| "argument couldn't be parsed as an octal number".to_string())?,
        };
        if !(0..=Self::MAX).contains(&n) {
            return Err(out_of_range(0, format!("{:o}", Self::MAX)));
        }
        Ok(FileMode(n as u32))
    }
}

/// How a directive's field reads back in CONFIG GET, and how its flag
/// looks on the command line.
trait Value {
    /// What `--name` given with no value stands for.
    const ALONE: &'static str = "";
    /// The value's placeholder in `--help`.
    const SHAPE: &'static str = "VALUE";
    fn show(&self) -> String;
}

impl Value for bool {
    const ALONE: &'static str = "yes";
    const SHAPE: &'static str = "yes|no";
    fn show(&self) -> String {
        if *self { "yes" } else { "no" }.into()
    }
}

macro_rules! numbers_are_values {
    ($($ty:ty),*) => {
        $(impl Value for $ty {
            const SHAPE: &'static str = "N";
            fn show(&self) -> String {
                self.to_string()
            }
        })*
    };
}
numbers_are_values!(u16, u32, u64, usize, i64);

impl Value for String {
    fn show(&self) -> String {
        self.clone()
    }
}

/// A password: none reads as empty.
impl Value for Option<String> {
    fn show(&self) -> String {
        self.clone().unwrap_or_default()
    }
}

/// A port that may be off: off reads as 0.
impl Value for Option<u16> {
    const SHAPE: &'static str = "N";
    fn show(&self) -> String {
        self.unwrap_or(0).to_string()
    }
}

impl Value for Vec<String> {
    const SHAPE: &'static str = "VALUE...";
    fn show(&self) -> String {
        self.join(" ")
    }
}

impl Value for FileMode {
    const SHAPE: &'static str = "OCTAL";
    fn show(&self) -> String {
        format!("{:o}", self.0)
    }
}

impl Value for DebugCommand {
    const SHAPE: &'static str = "no|yes|local";
    fn show(&self) -> String {
        self.name().into()
    }
}

type Getter = fn(&Config) -> String;
type Setter = fn(&mut Config, &str) -> Result<(), String>;

/// One directive, as the config file, the command line and CONFIG GET/SET
/// see it.
pub struct Param {
    pub name: &'static str,
    pub alias: Option<&'static str>,
    /// What `--help` says of it (the doc comment of its entry).
    pub help: &'static str,
    pub get: Getter,
    /// Reads a value into the config; `None` for the settings rlockd only
    /// reports, whose values in files are accepted and ignored.
    load: Option<Setter>,
    pub(crate) change: Change,
    /// What must be told when CONFIG SET changes it.
    pub(crate) reacts: &'static [Hook],
    /// CONFIG GET lists it for its exact name only, never for a pattern.
    hidden: bool,
    /// Its flag takes every word up to the next flag (`--save 900 1`);
    /// others take one, so that a config file may follow them.
    pub multiword: bool,
    /// What `--name` alone stands for.
    alone: &'static str,
    /// The value's placeholder in `--help`.
    pub shape: &'static str,
}

impl Param {
    /// Reads `value` (a config file's, a flag's or CONFIG SET's) into `config`.
    pub fn apply(&self, config: &mut Config, value: &str) -> Result<(), String> {
        self.load.map_or(Ok(()), |load| load(config, value))
    }
}

/// How CONFIG SET treats a setting.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Change {
    /// Fixed at startup, in Redis too: CONFIG SET refuses it.
    Never,
    /// Redis changes it at run time, rlockd keeps its startup value (its
    /// listeners, its own startup settings): CONFIG SET accepts that value
    /// unchanged, as Redis does, and refuses any other as immutable.
    Startup,
    /// CONFIG SET changes it as the config file does.
    Runtime,
}

/// The parts of the server that keep their own copy of some settings, so
/// CONFIG SET must tell them of a change (the context layer, above this
/// one, knows how).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Hook {
    /// Keyspace events, the pubsub output buffer limit, the tracking table.
    PubSub,
    SlowLog,
    /// When values leave their compact forms.
    Encodings,
    /// What keys' access clocks count: uses under an LFU policy, else time.
    AccessClocks,
    /// The append-only file.
    Persistence,
    Latency,
    /// OOM and NOREPLICAS refusals.
    Guard,
    /// The default user's password.
    Password,
}

/// The entry's own expression (its getter, parser…) where it gives one,
/// else the fallback.
macro_rules! given_or {
    ([] $fallback:expr) => {
        $fallback
    };
    ([$given:expr] $($fallback:expr)?) => {
        $given
    };
}

/// Makes `Config`, its `Default` and `PARAMS` from the list of directives.
/// A field entry names its field, type and default, how a value is read
/// (`parse`, into the field, or `set`, given the whole config) and, when
/// its type's reading is not the one wanted, `get`. An entry of the closing
/// `reported` block is a setting Redis has that rlockd only reports, so
/// that clients reading it work. The doc comment is the `--help` text.
macro_rules! directives {
    (
        $(
            $(#[doc = $doc:literal])*
            $name:literal $(| $alias:literal)? => $field:ident: $ty:ty {
                default: $default:expr,
                $(get: $get:expr,)?
                $(parse: $parse:expr,)?
                $(set: $set:expr,)?
                change: $change:ident,
                $(reacts: [$($hook:ident),*],)?
                $(hidden: $hidden:literal,)?
                $(multiword: $multiword:literal,)?
            }
        )*
        reported {
            $(
                $(#[doc = $rdoc:literal])*
                $rname:literal $(| $ralias:literal)? = $value:literal, $rchange:ident;
            )*
        }
    ) => {
        /// One server's settings: a field per directive.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Config {
            $($(#[doc = $doc])* pub $field: $ty,)*
        }

        impl Default for Config {
            fn default() -> Self {
                Config {
                    $($field: $default,)*
                }
            }
        }

        pub static PARAMS: &[Param] = &[
            $(Param {
                name: $name,
                alias: given_or!([$(Some($alias))?] None),
                help: concat!($($doc),*),
                get: given_or!([$($get)?] |c| Value::show(&c.$field)),
                load: Some(given_or!(
                    [$(|c, v| {
                        c.$field = ($parse)(v)?;
                        Ok(())
                    })?]
                    $($set)?
                )),
                change: Change::$change,
                reacts: &[$($(Hook::$hook),*)?],
                hidden: given_or!([$($hidden)?] false),
                multiword: given_or!([$($multiword)?] false),
                alone: <$ty as Value>::ALONE,
                shape: <$ty as Value>::SHAPE,
            },)*
            $(Param {
                name: $rname,
                alias: given_or!([$(Some($ralias))?] None),
                help: concat!($($rdoc),*),
                get: |_| $value.into(),
                load: None,
                change: Change::$rchange,
                reacts: &[],
                hidden: false,
                // Its value is ignored, however many words it has.
                multiword: true,
                alone: "",
                shape: "VALUE",
            },)*
        ];
    };
}

fn parse_yes_no(v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err("argument must be 'yes' or 'no'".into()),
    }
}

fn parse_num(v: &str) -> Result<u64, String> {
    v.parse::<u64>()
        .map_err(|_| "argument couldn't be parsed into an integer".into())
}

fn out_of_range(min: impl std::fmt::Display, max: impl std::fmt::Display) -> String {
    format!("argument must be between {min} and {max} inclusive")
}

/// A signed integer (Redis's strict form: no `+`, no leading zeros)
/// within the parameter's bounds.
fn parse_int_in(v: &str, min: i64, max: i64) -> Result<i64, String> {
    let n = parse_i64(v.as_bytes())
        .ok_or_else(|| "argument couldn't be parsed into an integer".to_string())?;
    if n < min || n > max {
        return Err(out_of_range(min, max));
    }
    Ok(n)
}

fn parse_bounded(v: &str, min: i64) -> Result<i64, String> {
    parse_int_in(v, min, i64::MAX)
}

/// An `int` setting of Redis's: within `min` and `i32::MAX`.
fn parse_int(v: &str, min: i64) -> Result<i64, String> {
    parse_int_in(v, min, i32::MAX.into())
}

/// A count Redis keeps in a `size_t` limited to `LONG_MAX`.
fn parse_count(v: &str) -> Result<u64, String> {
    parse_bounded(v, 0).map(|n| n as u64)
}

/// Memory sizes with Redis's units (`1mb`, `2gb`, `100k`), read as
/// Redis's `memtoull` reads them: digits alone (none is 0), a number too
/// large saturates, and a unit that overflows wraps.
pub(crate) fn parse_memory(v: &str) -> Result<u64, String> {
    let bad = || "argument must be a memory value".to_string();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (digits, unit) = v.split_at(split);
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return Err(bad()),
    };
    if digits.len() >= 128 {
        return Err(bad());
    }
    let n = digits.bytes().fold(0u64, |n, d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    });
    Ok(n.wrapping_mul(mult))
}

/// A memory size Redis keeps in a `size_t` limited to `LONG_MAX`.
fn parse_memory_size(v: &str) -> Result<u64, String> {
    parse_memory_in(v, 0)
}

/// A memory size of at least `min`, at most `LONG_MAX`.
fn parse_memory_in(v: &str, min: u64) -> Result<u64, String> {
    let n = parse_memory(v)?;
    if n < min || n > i64::MAX as u64 {
        return Err(out_of_range(min, i64::MAX));
    }
    Ok(n)
}

/// An integer within bounds, kept as its text.
fn int_text(v: &str, min: i64, max: i64) -> Result<String, String> {
    parse_int_in(v, min, max).map(|n| n.to_string())
}

/// `maxmemory-clients`: bytes (with units), or a share of `maxmemory`
/// written `N%`.
fn parse_memory_or_percent(v: &str) -> Result<String, String> {
    let bad = || "argument must be a memory or percent value".to_string();
    if let Some(digits) = v.strip_suffix('%') {
        let n = parse_i64(digits.as_bytes())
            .filter(|n| *n >= 0)
            .ok_or_else(bad)?;
        if n > 100 {
            return Err("percentage argument must be less or equal to 100".into());
        }
        return Ok(format!("{n}%"));
    }
    parse_memory_size(v)
        .map(|n| n.to_string())
        .map_err(|_| bad())
}

fn parse_enum(v: &str, allowed: &[&str]) -> Result<String, String> {
    let lower = v.to_ascii_lowercase();
    if allowed.contains(&lower.as_str()) {
        Ok(lower)
    } else {
        Err("argument(s) must be one of the following: ".to_string() + &allowed.join(", "))
    }
}

fn text(v: &str) -> Result<String, String> {
    Ok(v.to_string())
}

/// A file or folder name in `dir`, never a path, as Redis takes one.
fn bare_name(v: &str, refusal: &str) -> Result<String, String> {
    if v.is_empty() || v.contains('/') {
        return Err(refusal.to_string());
    }
    text(v)
}

/// As many threads as Redis allows for `io-threads`.
const MAX_IO_THREADS: usize = 128;

const LOGLEVELS: &[&str] = &["debug", "verbose", "notice", "warning", "nothing"];
const POLICIES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];

const DEFAULT_LIMITS: EncodingLimits = EncodingLimits::DEFAULT;

directives! {
    /// Addresses to listen on.
    "bind" => bind: Vec<String> {
        default: vec!["127.0.0.1".into()],
        // Values arrive joined by spaces, from a file line or the flag's words.
        parse: |v: &str| text(v).map(|v| v.split(' ').map(String::from).collect()),
        change: Startup,
        multiword: true,
    }
    /// TCP port to listen on (0 picks a free port).
    "port" => port: u16 {
        default: 6379,
        parse: |v: &str| v.parse().map_err(|_| "the port must be a number from 0 to 65535".to_string()),
        change: Startup,
    }
    /// A unix socket's path to listen on beside TCP ("": none); with
    /// port 0, on it alone. A socket file already there is replaced.
    "unixsocket" => unixsocket: String {
        default: String::new(),
        parse: text,
        change: Never,
    }
    /// The unix socket's permissions, in octal (0: as the umask leaves them).
    "unixsocketperm" => unixsocketperm: FileMode {
        default: FileMode::default(),
        parse: FileMode::parse,
        change: Never,
    }
    /// Password clients must AUTH with (the default user's).
    "requirepass" => requirepass: Option<String> {
        default: None,
        parse: |v| text(v).map(|v| (!v.is_empty()).then_some(v)),
        change: Runtime,
        reacts: [Password],
    }
    /// Where ACL LOAD and ACL SAVE read and write users ("": no file).
    "aclfile" => aclfile: String {
        default: String::new(),
        parse: text,
        change: Never,
    }
    /// Number of databases.
    "databases" => databases: usize {
        default: 16,
        parse: |v: &str| {
            v.parse()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| "the number of databases must be at least 1".to_string())
        },
        change: Never,
    }
    /// Most clients connected at once.
    "maxclients" => maxclients: usize {
        default: 10000,
        parse: |v| parse_num(v).map(|n| n as usize),
        change: Runtime,
    }
    /// Log level: debug, verbose, notice, warning, nothing.
    "loglevel" => loglevel: String {
        default: "notice".into(),
        parse: |v| parse_enum(v, LOGLEVELS),
        change: Runtime,
    }
    /// yes: without a password, refuse clients not on the loopback
    /// interface (Redis's DENIED error).
    "protected-mode" => protected_mode: bool {
        default: true,
        parse: parse_yes_no,
        change: Runtime,
    }
    /// Seconds a client may stay idle before it is closed (0: forever).
    "timeout" => timeout: u64 {
        default: 0,
        parse: parse_num,
        change: Runtime,
    }
    /// Seconds between TCP keepalive probes to clients (0: none).
    "tcp-keepalive" => tcp_keepalive: u64 {
        default: 300,
        parse: parse_num,
        change: Runtime,
    }
    /// Connections the kernel may hold, completed, before they are
    /// accepted; past it, new ones wait for a retried handshake.
    "tcp-backlog" => tcp_backlog: u32 {
        default: 511,
        parse: |v| parse_int(v, 0).map(|n| n as u32),
        change: Never,
    }
    /// Bytes of memory past which writes are refused with OOM (0: no limit).
    "maxmemory" => maxmemory: u64 {
        default: 0,
        parse: parse_memory,
        change: Runtime,
        reacts: [Guard],
    }
    /// What happens at maxmemory: noeviction refuses writes; the others
    /// are accepted and reported.
    "maxmemory-policy" => maxmemory_policy: String {
        default: "noeviction".into(),
        parse: |v| parse_enum(v, POLICIES),
        change: Runtime,
        reacts: [Guard, AccessClocks],
    }
    /// Milliseconds a script may run before other clients get BUSY.
    "busy-reply-threshold" | "lua-time-limit" => busy_reply_threshold: u64 {
        default: 5000,
        parse: parse_num,
        change: Runtime,
    }
    /// Commands slower than this many microseconds enter the slow log
    /// (negative: none do).
    "slowlog-log-slower-than" => slowlog_log_slower_than: i64 {
        default: 10_000,
        parse: |v| parse_bounded(v, -1),
        change: Runtime,
        reacts: [SlowLog],
    }
    /// How many entries the slow log keeps.
    "slowlog-max-len" => slowlog_max_len: i64 {
        default: 128,
        parse: |v| parse_bounded(v, 0),
        change: Runtime,
        reacts: [SlowLog],
    }
    /// Keys client-side caching remembers before evicting (0: no limit).
    "tracking-table-max-keys" => tracking_table_max_keys: u64 {
        default: 1_000_000,
        parse: parse_count,
        change: Runtime,
        reacts: [PubSub],
    }
    /// How many entries ACL LOG keeps.
    "acllog-max-len" => acllog_max_len: i64 {
        default: 128,
        parse: |v| parse_bounded(v, 0),
        change: Runtime,
    }
    /// Milliseconds; 0 turns latency monitoring off.
    "latency-monitor-threshold" => latency_monitor_threshold: i64 {
        default: 0,
        parse: |v| parse_bounded(v, 0),
        change: Runtime,
        reacts: [Latency],
    }
    /// Which keyspace events are published, in Redis's letters (KEA: all).
    "notify-keyspace-events" => notify_keyspace_events: String {
        default: String::new(),
        // Kept as given (`A` does not include `n`, yet Redis prints
        // `A` alone when both are on), reported in Redis's spelling.
        get: |c| {
            crate::keyspace::events::render_flags(
                crate::keyspace::events::parse_flags(&c.notify_keyspace_events).unwrap_or(0),
            )
        },
        parse: |v: &str| {
            crate::keyspace::events::parse_flags(v)
                .ok_or_else(|| crate::keyspace::events::INVALID_FLAGS.to_string())?;
            text(v)
        },
        change: Runtime,
        reacts: [PubSub],
    }
    /// Background tasks' frequency, per second (1 to 500).
    "hz" => hz: u64 {
        default: 10,
        parse: |v| parse_num(v).map(|n| n.clamp(1, 500)),
        change: Runtime,
    }
    /// Output buffer limits per client class: `<class> <hard> <soft>
    /// <soft-seconds>`...; rlockd applies the pubsub class's.
    "client-output-buffer-limit" => client_output_buffer_limit: String {
        default: "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60".into(),
        set: |c, v| {
            c.client_output_buffer_limit = merge_buffer_limits(&c.client_output_buffer_limit, v)?;
            Ok(())
        },
        change: Runtime,
        reacts: [PubSub],
        multiword: true,
    }
    /// yes: log every write to the append-only file, and load it at start.
    "appendonly" => appendonly: bool {
        default: false,
        parse: parse_yes_no,
        change: Runtime,
        reacts: [Persistence],
    }
    /// When the append-only file is fsynced: always, everysec, no.
    "appendfsync" => appendfsync: String {
        default: "everysec".into(),
        parse: |v| parse_enum(v, crate::persist::Fsync::NAMES),
        change: Runtime,
        reacts: [Persistence],
    }
    /// The directory of the append-only file ("": the working directory).
    "dir" => dir: String {
        default: String::new(),
        // Absolute, as Redis reports its working directory.
        get: |c| {
            let dir = match c.dir.as_str() {
                "" => std::env::current_dir(),
                dir => std::path::absolute(dir),
            };
            dir.map_or_else(|_| c.dir.clone(), |p| p.to_string_lossy().into_owned())
        },
        parse: |v: &str| {
            if !std::path::Path::new(v).is_dir() {
                return Err("No such file or directory".to_string());
            }
            text(v)
        },
        change: Runtime,
    }
    /// The append-only file's name.
    "appendfilename" => appendfilename: String {
        default: "appendonly.aof".into(),
        // A name, not a path, as in Redis.
        parse: |v| bare_name(v, "appendfilename can't be a path, just a filename"),
        change: Never,
    }
    // Snapshots (`dump.rdb`): one block, kept together for merges.
    /// The snapshot schedule: pairs of `<seconds> <changes>`, each a point
    /// at which BGSAVE runs when that many writes happened in that many
    /// seconds; "": none. rlockd's default is none.
    "save" => save: String {
        default: String::new(),
        parse: |v: &str| {
            save_points(v).map(|points| {
                points
                    .iter()
                    .map(|p| format!("{} {}", p.seconds, p.changes))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
        },
        change: Runtime,
        multiword: true,
    }
    /// The snapshot file's name, in `dir`.
    "dbfilename" => dbfilename: String {
        default: "dump.rdb".into(),
        parse: |v| bare_name(v, "dbfilename can't be a path, just a filename"),
        change: Runtime,
    }
    /// yes: LZF-compress long strings in snapshots.
    "rdbcompression" => rdbcompression: bool {
        default: true,
        parse: parse_yes_no,
        change: Runtime,
    }
    /// yes: end snapshots with a CRC-64 and check it when loading one.
    "rdbchecksum" => rdbchecksum: bool {
        default: true,
        parse: parse_yes_no,
        change: Never,
    }
    /// Redis removes replication's snapshot files with this: kept and
    /// reported (rlockd makes none).
    "rdb-del-sync-files" => rdb_del_sync_files: bool {
        default: false,
        parse: parse_yes_no,
        change: Runtime,
    }
    /// Redis's testing delay per key saved (microseconds): kept and reported.
    "rdb-key-save-delay" => rdb_key_save_delay: String {
        default: "0".into(),
        parse: |v| int_text(v, i32::MIN.into(), i32::MAX.into()),
        change: Runtime,
        hidden: true,
    }
    /// yes: refuse writes while the last background save failed.
    "stop-writes-on-bgsave-error" => stop_writes_on_bgsave_error: bool {
        default: true,
        parse: parse_yes_no,
        change: Runtime,
    }
    /// Redis's deep checks of RESTORE payloads and snapshots: kept and
    /// reported (rlockd checks every payload whole).
    "sanitize-dump-payload" => sanitize_dump_payload: String {
        default: "no".into(),
        parse: |v| parse_enum(v, &["no", "yes", "clients"]),
        change: Runtime,
    }
    /// Redis starts its AOF rewrites with an RDB preamble: kept and
    /// reported (rlockd's rewrite writes commands).
    "aof-use-rdb-preamble" => aof_use_rdb_preamble: bool {
        default: true,
        parse: parse_yes_no,
        change: Runtime,
    }
    /// Redis 7's folder for a multi-part AOF: kept and reported (rlockd
    /// writes one file, `appendfilename`).
    "appenddirname" => appenddirname: String {
        default: "appendonlydir".into(),
        parse: |v| bare_name(v, "appenddirname can't be a path, just a dirname"),
        change: Never,
    }
    /// yes: load an append-only file whose last record is torn, truncating
    /// it there.
    "aof-load-truncated" => aof_load_truncated: bool {
        default: true,
        parse: parse_yes_no,
        change: Runtime,
    }
    /// Growth, in percent of its size after the last rewrite, at which the
    /// append-only file is rewritten (0: never).
    "auto-aof-rewrite-percentage" => auto_aof_rewrite_percentage: u64 {
        default: 100,
        parse: parse_num,
        change: Runtime,
    }
    /// The append-only file is not rewritten automatically below this size.
    "auto-aof-rewrite-min-size" => auto_aof_rewrite_min_size: u64 {
        default: 64 * 1024 * 1024,
        parse: parse_memory,
        change: Runtime,
    }
    /// Ours: for this many ms after starting, writes are refused with
    /// LOADING, so no lock a crashed server granted can be granted again
    /// while its lease may still run (0: off).
    "lock-restart-grace-ms" => lock_restart_grace_ms: u64 {
        default: 0,
        parse: parse_num,
        change: Startup,
    }
    /// Most memory one Lua state may use, so a runaway script fails
    /// cleanly instead of exhausting the server (at least 1mb).
    "lua-heap-limit" => lua_heap_limit: u64 {
        default: 128 * 1024 * 1024,
        parse: |v| parse_memory(v).map(|n| n.max(1024 * 1024)),
        change: Runtime,
    }
    /// Ours: SCRIPT KILL also stops a script that has written, rolling its
    /// writes back; no answers UNKILLABLE as Redis does.
    "script-kill-rollback" => script_kill_rollback: bool {
        default: true,
        parse: parse_yes_no,
        change: Runtime,
    }
    /// Ours: run on a manual clock that clients move with RLOCKD.CLOCK
    /// (tests only); without it that command does not exist.
    "enable-clock-control" => enable_clock_control: bool {
        default: false,
        parse: parse_yes_no,
        change: Startup,
    }
    /// Who may run DEBUG: no, yes, or local (loopback clients).
    "enable-debug-command" => enable_debug_command: DebugCommand {
        default: DebugCommand::No,
        parse: DebugCommand::parse,
        change: Never,
    }
    /// Ours: serve Prometheus metrics over HTTP on this port (0 picks one);
    /// not served unless given.
    "metrics-port" => metrics_port: Option<u16> {
        default: None,
        parse: |v: &str| {
            v.parse()
                .map(Some)
                .map_err(|_| "the metrics port must be a number from 0 to 65535".to_string())
        },
        change: Startup,
    }
    /// Fields past which a hash leaves its compact form.
    "hash-max-listpack-entries" | "hash-max-ziplist-entries" => hash_max_listpack_entries: u64 {
        default: DEFAULT_LIMITS.hash_max_listpack_entries,
        parse: parse_count,
        change: Runtime,
        reacts: [Encodings],
    }
    /// Bytes of a field or value past which a hash leaves its compact form.
    "hash-max-listpack-value" | "hash-max-ziplist-value" => hash_max_listpack_value: u64 {
        default: DEFAULT_LIMITS.hash_max_listpack_value,
        parse: parse_memory_size,
        change: Runtime,
        reacts: [Encodings],
    }
    /// Members past which a set of integers leaves its compact form.
    "set-max-intset-entries" => set_max_intset_entries: u64 {
        default: DEFAULT_LIMITS.set_max_intset_entries,
        parse: parse_count,
        change: Runtime,
        reacts: [Encodings],
    }
    /// Members past which a sorted set leaves its compact form.
    "zset-max-listpack-entries" | "zset-max-ziplist-entries" => zset_max_listpack_entries: u64 {
        default: DEFAULT_LIMITS.zset_max_listpack_entries,
        parse: parse_count,
        change: Runtime,
        reacts: [Encodings],
    }
    /// Bytes of a member past which a sorted set leaves its compact form.
    "zset-max-listpack-value" | "zset-max-ziplist-value" => zset_max_listpack_value: u64 {
        default: DEFAULT_LIMITS.zset_max_listpack_value,
        parse: parse_memory_size,
        change: Runtime,
        reacts: [Encodings],
    }
    /// Redis's list node size: reported and kept, with no effect on how
    /// rlockd holds lists.
    "list-max-listpack-size" | "list-max-ziplist-size" => list_max_listpack_size: i64 {
        default: -2,
        parse: |v| parse_int_in(v, i32::MIN.into(), i32::MAX.into()),
        change: Runtime,
    }
    /// Redis's list compression depth: reported and kept only.
    "list-compress-depth" => list_compress_depth: i64 {
        default: 0,
        parse: |v| parse_int(v, 0),
        change: Runtime,
    }
    /// A stream node's size in bytes (0: no limit), which approximate
    /// trimming works in.
    "stream-node-max-bytes" => stream_node_max_bytes: u64 {
        default: DEFAULT_LIMITS.stream_node_max_bytes,
        parse: parse_memory_size,
        change: Runtime,
        reacts: [Encodings],
    }
    /// A stream node's size in entries (0: no limit).
    "stream-node-max-entries" => stream_node_max_entries: u64 {
        default: DEFAULT_LIMITS.stream_node_max_entries,
        parse: parse_count,
        change: Runtime,
        reacts: [Encodings],
    }
    /// yes: answer as a one-node Redis Cluster owning every hash slot
    /// (CLUSTER SLOTS/NODES, CROSSSLOT errors).
    "cluster-enabled" => cluster_enabled: bool {
        default: false,
        parse: parse_yes_no,
        change: Never,
    }
    /// Threads that serve clients and run their commands (1 to 128; by
    /// default one per core).
    "io-threads" => io_threads: usize {
        default: std::thread::available_parallelism().map_or(1, |n| n.get()),
        parse: |v: &str| {
            v.parse()
                .ok()
                .filter(|n| (1..=MAX_IO_THREADS).contains(n))
                .ok_or(format!("io-threads must be between 1 and {MAX_IO_THREADS}"))
        },
        change: Never,
    }
    /// Writes are refused unless this many replicas are within
    /// min-replicas-max-lag seconds: with any, always (there are none).
    "min-replicas-to-write" | "min-slaves-to-write" => min_replicas_to_write: i64 {
        default: 0,
        parse: |v| parse_int(v, 0),
        change: Runtime,
        reacts: [Guard],
    }
    /// The lag, in seconds, within which a replica counts for
    /// min-replicas-to-write (0: the check is off).
    "min-replicas-max-lag" | "min-slaves-max-lag" => min_replicas_max_lag: i64 {
        default: 10,
        parse: |v| parse_int(v, 0),
        change: Runtime,
        reacts: [Guard],
    }
    /// Redis's replication backlog size: kept and reported (never below
    /// 16kb, as in Redis).
    "repl-backlog-size" => repl_backlog_size: String {
        default: "1048576".into(),
        parse: |v| parse_memory_in(v, 1).map(|n| n.max(16 * 1024).to_string()),
        change: Runtime,
    }
    /// The primary to replicate from at start, `<host> <port>` ("": none);
    /// REPLICAOF changes it at run time, as CONFIG GET then shows.
    "replicaof" | "slaveof" => replicaof: String {
        default: String::new(),
        parse: |v: &str| parse_primary(v).map(|p| p.map_or_else(String::new, |(h, port)| format!("{h} {port}"))),
        change: Never,
        multiword: true,
    }
    /// The password a replica gives its primary's AUTH ("": none).
    "masterauth" => masterauth: String {
        default: String::new(),
        parse: text,
        change: Runtime,
    }
    /// The user a replica authenticates as with `masterauth` ("": the
    /// default user, AUTH with the password alone).
    "masteruser" => masteruser: String {
        default: String::new(),
        parse: text,
        change: Runtime,
    }
    /// A replica refuses clients' writes (`-READONLY`).
    "replica-read-only" | "slave-read-only" => replica_read_only: bool {
        default: true,
        parse: parse_yes_no,
        change: Runtime,
        reacts: [Guard],
    }
    /// Seconds of silence from its primary after which a replica drops
    /// the link and connects again (the primary pings every 10).
    "repl-timeout" => repl_timeout: i64 {
        default: 60,
        parse: |v| parse_int(v, 1),
        change: Runtime,
    }
    /// Where a replica stands in line for promotion (INFO's
    /// slave_priority; 0: never).
    "replica-priority" | "slave-priority" => replica_priority: i64 {
        default: 100,
        parse: |v| parse_int(v, 0),
        change: Runtime,
    }
    /// no: while its link is down, a replica answers only the commands
    /// flagged `stale` (INFO, CONFIG…), the rest `-MASTERDOWN`.
    "replica-serve-stale-data" | "slave-serve-stale-data" => replica_serve_stale_data: bool {
        default: true,
        parse: parse_yes_no,
        change: Runtime,
        reacts: [Guard],
    }
    /// The address a replica tells its primary to list it under ("": the
    /// one the primary sees).
    "replica-announce-ip" | "slave-announce-ip" => replica_announce_ip: String {
        default: String::new(),
        parse: text,
        change: Runtime,
    }
    /// The port a replica tells its primary it listens on (0: its own).
    "replica-announce-port" | "slave-announce-port" => replica_announce_port: u16 {
        default: 0,
        parse: |v| parse_int_in(v, 0, 65535).map(|n| n as u16),
        change: Runtime,
    }
    /// Redis's memory limit for all clients: kept and reported.
    "maxmemory-clients" => maxmemory_clients: String {
        default: "0".into(),
        parse: parse_memory_or_percent,
        change: Runtime,
    }
    /// Redis's eviction sample size: kept and reported.
    "maxmemory-samples" => maxmemory_samples: String {
        default: "5".into(),
        parse: |v| int_text(v, 1, i32::MAX.into()),
        change: Runtime,
    }
    /// Redis's eviction effort: kept and reported.
    "maxmemory-eviction-tenacity" => maxmemory_eviction_tenacity: String {
        default: "10".into(),
        parse: |v| int_text(v, 0, 100),
        change: Runtime,
    }
    /// Redis's limit on a client's query buffer (at least 1mb): kept and
    /// reported.
    "client-query-buffer-limit" => client_query_buffer_limit: String {
        default: "1073741824".into(),
        parse: |v| parse_memory_in(v, 1024 * 1024).map(|n| n.to_string()),
        change: Runtime,
    }
    /// Redis's testing delay while loading keys: kept and reported.
    "key-load-delay" => key_load_delay: String {
        default: "0".into(),
        parse: |v| int_text(v, i32::MIN.into(), i32::MAX.into()),
        change: Runtime,
        hidden: true,
    }
    reported {
        /// Reported only: rlockd runs in the foreground.
        "daemonize" = "no", Never;
        /// Reported only: Redis's longest bulk string.
        "proto-max-bulk-len" = "536870912", Startup;
        /// Reported only: Redis's HyperLogLog sparse form limit.
        "hll-sparse-max-bytes" = "3000", Startup;
        /// Reported only: DEL frees at once.
        "lazyfree-lazy-user-del" = "no", Startup;
    }
}

/// `replicaof`'s value: `<host> <port>`, or nothing for "" and `no one`.
pub fn parse_primary(v: &str) -> Result<Option<(String, u16)>, String> {
    let words: Vec<&str> = v.split_whitespace().collect();
    match words[..] {
        [] => Ok(None),
        [no, one] if no.eq_ignore_ascii_case("no") && one.eq_ignore_ascii_case("one") => Ok(None),
        [host, port] => match port.parse::<u16>() {
            Ok(port) => Ok(Some((host.to_string(), port))),
            _ => Err("Invalid master port".into()),
        },
        _ => Err("wrong number of arguments".into()),
    }
}

/// One `save` point: a snapshot when `changes` writes happened within
/// `seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SavePoint {
    pub seconds: i64,
    pub changes: i64,
}

/// `save`'s pairs, with Redis's check: an even count of integers.
pub fn save_points(v: &str) -> Result<Vec<SavePoint>, String> {
    let words: Vec<&str> = v.split_whitespace().collect();
    let invalid = || "Invalid save parameters".to_string();
    if words.len() % 2 == 1 {
        return Err(invalid());
    }
    words
        .chunks(2)
        .map(|pair| {
            let n = |w: &str| w.parse::<i64>().map_err(|_| invalid());
            Ok(SavePoint {
                seconds: n(pair[0])?,
                changes: n(pair[1])?,
            })
        })
        .collect()
}

impl Config {
    /// When values leave their compact forms, as the keyspace reads it.
    pub fn encoding(&self) -> EncodingLimits {
        EncodingLimits {
            hash_max_listpack_entries: self.hash_max_listpack_entries,
            hash_max_listpack_value: self.hash_max_listpack_value,
            set_max_intset_entries: self.set_max_intset_entries,
            zset_max_listpack_entries: self.zset_max_listpack_entries,
            zset_max_listpack_value: self.zset_max_listpack_value,
            stream_node_max_entries: self.stream_node_max_entries,
            stream_node_max_bytes: self.stream_node_max_bytes,
        }
    }
}

/// CONFIG SET client-output-buffer-limit: `<class> <hard> <soft>
/// <soft-seconds>` groups (sizes may carry units) replace those classes'
/// limits in `current`; the result is in Redis's form, in bytes.
fn merge_buffer_limits(current: &str, value: &str) -> Result<String, String> {
    const CLASSES: [&str; 3] = ["normal", "slave", "pubsub"];
    let mut limits: Vec<[u64; 3]> = CLASSES
        .iter()
        .map(|class| {
            let words: Vec<&str> = current.split_whitespace().collect();
            words
                .chunks(4)
                .find(|c| c.len() == 4 && c[0] == *class)
                .and_then(|c| Some([c[1].parse().ok()?, c[2].parse().ok()?, c[3].parse().ok()?]))
                .unwrap_or([0, 0, 0])
        })
        .collect();
    let words: Vec<&str> = value.split_whitespace().collect();
    if !words.len().is_multiple_of(4) {
        return Err("Wrong number of arguments in buffer limit configuration.".into());
    }
    for group in words.chunks(4) {
        let class = match group[0].to_ascii_lowercase().as_str() {
            "normal" => 0,
            "slave" | "replica" => 1,
            "pubsub" => 2,
            _ => {
                return Err("Invalid client class specified in buffer limit configuration.".into());
            }
        };
        let invalid =
            || "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
        let hard = parse_memory(group[1]).map_err(|_| invalid())?;
        let soft = parse_memory(group[2]).map_err(|_| invalid())?;
        let secs = group[3].parse::<u64>().map_err(|_| invalid())?;
        limits[class] = [hard, soft, secs];
    }
    Ok(CLASSES
        .iter()
        .zip(&limits)
        .map(|(class, [hard, soft, secs])| format!("{class} {hard} {soft} {secs}"))
        .collect::<Vec<_>>()
        .join(" "))
}

pub fn find_param(name: &str) -> Option<&'static Param> {
    let lower = name.to_ascii_lowercase();
    PARAMS
        .iter()
        .find(|p| p.name == lower || p.alias == Some(lower.as_str()))
}

/// CONFIG GET: every (name, value) whose name or alias matches one of the
/// patterns, each once.
pub(crate) fn get_matching(config: &Config, patterns: &[&[u8]]) -> Vec<(&'static str, String)> {
    let mut out: Vec<(&'static str, String)> = Vec::new();
    for pat in patterns {
        let lower = pat.to_ascii_lowercase();
        for p in PARAMS {
            for name in std::iter::once(p.name).chain(p.alias) {
                let listed = !p.hidden || lower == name.as_bytes();
                if listed
                    && glob_match(&lower, name.as_bytes(), true)
                    && !out.iter().any(|(n, _)| *n == name)
                {
                    out.push((name, (p.get)(config)));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_units() {
        assert_eq!(parse_memory("100"), Ok(100));
        assert_eq!(parse_memory("1mb"), Ok(1 << 20));
        assert_eq!(parse_memory("2GB"), Ok(2 << 30));
        assert_eq!(parse_memory(""), Ok(0));
        assert!(parse_memory("x").is_err());
        assert!(parse_memory("-1").is_err());
        assert!(parse_memory(" 5").is_err());
        assert!(parse_memory_size("9223372036854775808").is_err());
        assert_eq!(
            parse_memory_size("9223372036854775807"),
            Ok(i64::MAX as u64)
        );
    }

    #[test]
    fn integers_are_read_strictly() {
        assert_eq!(
            parse_count("05"),
            Err("argument couldn't be parsed into an integer".into())
        );
        assert!(parse_count("+5").is_err());
        assert_eq!(
            parse_count("-1"),
            Err("argument must be between 0 and 9223372036854775807 inclusive".into())
        );
        assert_eq!(
            parse_int_in("-70000", i32::MIN.into(), i32::MAX.into()),
            Ok(-70000)
        );
    }

    #[test]
    fn buffer_limits_merge_by_class() {
        let default = Config::default().client_output_buffer_limit;
        assert_eq!(
            merge_buffer_limits(&default, "pubsub 1mb 512kb 10").unwrap(),
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 524288 10"
        );
        assert_eq!(
            merge_buffer_limits(&default, "replica 1 2 3 normal 4 5 6").unwrap(),
            "normal 4 5 6 slave 1 2 3 pubsub 33554432 8388608 60"
        );
        assert_eq!(merge_buffer_limits(&default, "").unwrap(), default);
        assert!(merge_buffer_limits(&default, "pubsub 1mb 512kb").is_err());
        assert!(merge_buffer_limits(&default, "foo 1 1 1").is_err());
        assert!(merge_buffer_limits(&default, "pubsub -1 1 1").is_err());
        assert!(merge_buffer_limits(&default, "pubsub 1 1 -1").is_err());
    }

    #[test]
    fn keyspace_events_are_stored_canonically() {
        let mut c = Config::default();
        let param = find_param("notify-keyspace-events").unwrap();
        let set = |c: &mut Config, v| param.apply(c, v);
        let get = param.get;
        set(&mut c, "KEA").unwrap();
        assert_eq!(get(&c), "AKE");
        assert!(set(&mut c, "q").is_err());
        assert_eq!(get(&c), "AKE");
        set(&mut c, "AKn").unwrap();
        assert_eq!(get(&c), "AK");
        assert_eq!(c.notify_keyspace_events, "AKn");
    }

    #[test]
    fn modes_are_octal_as_redis_reads_them() {
        assert_eq!(FileMode::parse("0777"), Ok(FileMode(0o777)));
        assert_eq!(FileMode::parse("+7"), Ok(FileMode(0o7)));
        assert_eq!(FileMode::parse(""), Ok(FileMode(0)));
        let not_octal = Err("argument couldn't be parsed as an octal number".to_string());
        assert_eq!(FileMode::parse("8"), not_octal);
        assert_eq!(FileMode::parse("7 "), not_octal);
        assert_eq!(FileMode::parse("+"), not_octal);
        let range = Err("argument must be between 0 and 777 inclusive".to_string());
        assert_eq!(FileMode::parse("1777"), range);
        assert_eq!(FileMode::parse("-1"), range);
        assert_eq!(FileMode(0o750).show(), "750");
    }

    #[test]
    fn get_by_pattern_and_alias() {
        let c = Config::default();
        let got = get_matching(&c, &[b"lua-time-limit"]);
        assert_eq!(got, vec![("lua-time-limit", "5000".to_string())]);
        let got = get_matching(&c, &[b"max*"]);
        assert!(got.iter().any(|(n, _)| *n == "maxclients"));
    }
}

/// A line of a config file that could not be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFileError {
    pub line: usize,
    pub text: String,
    pub reason: String,
}

impl std::fmt::Display for ConfigFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "config file, line {}: '{}': {}",
            self.line, self.text, self.reason
        )
    }
}

impl std::error::Error for ConfigFileError {}

impl Config {
    /// Applies a redis.conf-style file: one `directive value...` per line,
    /// `#` comments, Redis's quoting. Directives are the names CONFIG GET
    /// knows; those rlockd only reports are accepted and ignored.
    pub fn apply_file(&mut self, text: &str) -> Result<(), ConfigFileError> {
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fail = |reason: String| ConfigFileError {
                line: i + 1,
                text: line.to_string(),
                reason,
            };
            let words = crate::protocol::parse::split_args(line.as_bytes())
                .ok_or_else(|| fail("unbalanced quotes".into()))?;
            let words: Vec<String> = words
                .iter()
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            let (directive, values) = words
                .split_first()
                .ok_or_else(|| fail("empty line".into()))?;
            if values.is_empty() {
                return Err(fail("a value is missing".into()));
            }
            self.apply_directive(directive, values).map_err(fail)?;
        }
        Ok(())
    }

    /// Applies one directive (a config file line, or the command-line flag
    /// of the same name) with its values; a flag given alone has none.
    pub fn apply_directive(&mut self, directive: &str, values: &[String]) -> Result<(), String> {
        let param = find_param(directive).ok_or("unknown directive")?;
        let value = match values {
            [] => param.alone.to_string(),
            _ => values.join(" "),
        };
        param.apply(self, &value)
    }
}

#[cfg(test)]
mod file_tests {
    use super::*;

    #[test]
    fn applies_directives_and_names_bad_lines() {
        let mut c = Config::default();
        c.apply_file("# rlockd\nport 7000\nbind 127.0.0.1 ::1\nrequirepass \"s e\"\nmaxmemory 1mb\nlua-time-limit 100\ndaemonize no\n")
            .unwrap();
        assert_eq!(c.port, 7000);
        assert_eq!(c.bind, vec!["127.0.0.1".to_string(), "::1".to_string()]);
        assert_eq!(c.requirepass.as_deref(), Some("s e"));
        assert_eq!(c.maxmemory, 1 << 20);
        c.apply_file("io-threads 3\n").unwrap();
        assert_eq!(c.io_threads, 3);
        for bad in ["io-threads 0\n", "io-threads 129\n", "io-threads many\n"] {
            let err = c.apply_file(bad).unwrap_err().to_string();
            assert!(
                err.contains("io-threads must be between 1 and 128"),
                "{err}"
            );
        }
        assert_eq!(c.io_threads, 3, "a bad value leaves the setting alone");
        assert_eq!(c.busy_reply_threshold, 100);
        let err = Config::default()
            .apply_file("port 1\nfrobnicate yes\n")
            .unwrap_err();
        assert_eq!((err.line, err.text.as_str()), (2, "frobnicate yes"));
        assert_eq!(err.reason, "unknown directive");
        let err = Config::default().apply_file("maxclients lots").unwrap_err();
        assert_eq!(
            err.to_string(),
            "config file, line 1: 'maxclients lots': argument couldn't be parsed into an integer"
        );
        assert!(Config::default().apply_file("port").is_err());
        c.apply_file("tcp-backlog 4096\n").unwrap();
        assert_eq!(c.tcp_backlog, 4096);
        for (bad, why) in [
            ("-1", "argument must be between 0 and 2147483647 inclusive"),
            (
                "2147483648",
                "argument must be between 0 and 2147483647 inclusive",
            ),
            ("x", "argument couldn't be parsed into an integer"),
        ] {
            let err = c.apply_file(&format!("tcp-backlog {bad}")).unwrap_err();
            assert_eq!(err.reason, why);
        }
        assert_eq!(c.tcp_backlog, 4096);
    }
}
