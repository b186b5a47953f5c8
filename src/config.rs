//! Server settings, and the one table of parameters that CONFIG GET/SET
//! (and later the config file) read and write.

use std::collections::BTreeMap;

use crate::keyspace::EncodingLimits;
use crate::util::{glob_match, parse_i64};

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub bind: Vec<String>,
    pub port: u16,
    pub requirepass: Option<String>,
    /// Where ACL LOAD and ACL SAVE read and write users ("": no file).
    pub aclfile: String,
    pub databases: usize,
    pub maxclients: usize,
    pub loglevel: String,
    pub protected_mode: bool,
    pub timeout: u64,
    pub tcp_keepalive: u64,
    /// Connections the kernel may hold, completed, before they are
    /// accepted; past it, new ones wait for a retried handshake.
    pub tcp_backlog: u32,
    pub maxmemory: u64,
    pub maxmemory_policy: String,
    pub busy_reply_threshold: u64,
    pub notify_keyspace_events: String,
    pub hz: u64,
    pub save: String,
    pub client_output_buffer_limit: String,
    /// Most memory one Lua state may use, so a runaway script fails
    /// cleanly instead of exhausting the server.
    pub lua_heap_limit: u64,
    /// Commands slower than this many microseconds enter the slow log
    /// (negative: none do).
    pub slowlog_log_slower_than: i64,
    pub slowlog_max_len: i64,
    /// Keys client-side caching remembers before evicting (0: no limit).
    pub tracking_table_max_keys: u64,
    /// How many entries ACL LOG keeps.
    pub acllog_max_len: i64,
    /// Milliseconds; 0 turns latency monitoring off.
    pub latency_monitor_threshold: i64,
    /// Ours: SCRIPT KILL also stops a script that has written, rolling its
    /// writes back; `no` answers `-UNKILLABLE` as Redis does.
    pub script_kill_rollback: bool,
    /// Answer as a one-node Redis Cluster that owns every hash slot.
    pub cluster_enabled: bool,
    /// Ours: the server runs on a manual clock that clients move with
    /// `RLOCKD.CLOCK`; without it that command does not exist.
    pub enable_clock_control: bool,
    /// Ours: where Prometheus metrics are served over HTTP (`None`: not served).
    pub metrics_port: Option<u16>,
    /// When values leave their compact forms (`hash-max-listpack-entries`…).
    pub encoding: EncodingLimits,
    /// Redis's list node sizes: reported and kept, with no effect on how
    /// rlockd holds lists.
    pub list_max_listpack_size: i64,
    pub list_compress_depth: i64,
    /// Log every write to the append-only file and load it at start.
    pub appendonly: bool,
    /// `always`, `everysec` or `no`.
    pub appendfsync: String,
    /// Where the append-only file is ("": the working directory).
    pub dir: String,
    pub appendfilename: String,
    /// Load a file whose last record is torn, truncating it there.
    pub aof_load_truncated: bool,
    pub auto_aof_rewrite_percentage: u64,
    pub auto_aof_rewrite_min_size: u64,
    /// Ours: for this long after starting, writes are refused with
    /// `-LOADING`, so no lock a crashed server granted can be granted again
    /// while its lease may still run (0: off).
    pub lock_restart_grace_ms: u64,
    /// Who may run DEBUG; fixed at startup, as in Redis.
    pub enable_debug_command: DebugCommand,
    /// Threads that serve clients and run their commands (`io-threads`,
    /// read at startup as in Redis); by default one per core.
    pub io_threads: usize,
    /// Writes are refused unless this many replicas are within
    /// `min_replicas_max_lag` seconds: with any, always (there are none).
    pub min_replicas_to_write: i64,
    pub min_replicas_max_lag: i64,
    /// The values of the `kept!` settings that were set, by name.
    pub kept: BTreeMap<&'static str, String>,
}

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

impl Default for Config {
    fn default() -> Self {
        Config {
            bind: vec!["127.0.0.1".into()],
            port: 6379,
            requirepass: None,
            aclfile: String::new(),
            databases: 16,
            maxclients: 10000,
            loglevel: "notice".into(),
            protected_mode: true,
            timeout: 0,
            tcp_keepalive: 300,
            tcp_backlog: 511,
            maxmemory: 0,
            maxmemory_policy: "noeviction".into(),
            busy_reply_threshold: 5000,
            notify_keyspace_events: String::new(),
            hz: 10,
            save: String::new(),
            client_output_buffer_limit:
                "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60".into(),
            lua_heap_limit: 128 * 1024 * 1024,
            slowlog_log_slower_than: 10_000,
            slowlog_max_len: 128,
            tracking_table_max_keys: 1_000_000,
            acllog_max_len: 128,
            latency_monitor_threshold: 0,
            script_kill_rollback: true,
            cluster_enabled: false,
            enable_clock_control: false,
            metrics_port: None,
            encoding: EncodingLimits::default(),
            list_max_listpack_size: -2,
            list_compress_depth: 0,
            appendonly: false,
            appendfsync: "everysec".into(),
            dir: String::new(),
            appendfilename: "appendonly.aof".into(),
            aof_load_truncated: true,
            auto_aof_rewrite_percentage: 100,
            auto_aof_rewrite_min_size: 64 * 1024 * 1024,
            lock_restart_grace_ms: 0,
            enable_debug_command: DebugCommand::No,
            io_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            min_replicas_to_write: 0,
            min_replicas_max_lag: 10,
            kept: BTreeMap::new(),
        }
    }
}

type Getter = fn(&Config) -> String;
type Setter = fn(&mut Config, &str) -> Result<(), String>;

/// One setting: its name(s), how to read it, and how it changes at run time.
pub struct Param {
    pub name: &'static str,
    pub alias: Option<&'static str>,
    pub get: Getter,
    pub set: Change,
}

/// How CONFIG SET treats a setting.
#[derive(Clone, Copy)]
pub enum Change {
    /// Fixed at startup, in Redis too: CONFIG SET refuses it.
    Never,
    /// Redis changes it at run time, rlockd keeps its startup value (its
    /// listeners, its own startup settings): CONFIG SET accepts that value
    /// unchanged, as Redis does, and refuses any other as immutable.
    Startup,
    With(Setter),
}

/// Settings a CONFIG GET pattern never lists: only their exact name does.
const HIDDEN: &[&str] = &["key-load-delay"];

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.into()
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

/// A count Redis keeps in a `size_t` limited to `LONG_MAX`.
fn parse_count(v: &str) -> Result<u64, String> {
    parse_bounded(v, 0).map(|n| n as u64)
}

/// Memory sizes with Redis's units (`1mb`, `2gb`, `100k`), read as
/// Redis's `memtoull` reads them: digits alone (none is 0), a number too
/// large saturates, and a unit that overflows wraps.
pub fn parse_memory(v: &str) -> Result<u64, String> {
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
    let n = parse_memory(v)?;
    if n > i64::MAX as u64 {
        return Err(out_of_range(0, i64::MAX));
    }
    Ok(n)
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

/// Settings Redis has but we only report, so clients that read them work;
/// `$change` says whether Redis lets CONFIG SET change them.
macro_rules! fixed {
    ($name:literal, $value:literal, $change:ident) => {
        Param {
            name: $name,
            alias: None,
            get: |_| $value.into(),
            set: Change::$change,
        }
    };
}

/// A setting Redis has that would change nothing in rlockd, which only
/// checks and keeps its value, so that CONFIG SET and GET answer as Redis's.
macro_rules! kept {
    ($name:literal, $default:literal, $parse:expr) => {
        Param {
            name: $name,
            alias: None,
            get: |c| {
                c.kept
                    .get($name)
                    .cloned()
                    .unwrap_or_else(|| $default.into())
            },
            set: Change::With(|c, v| {
                let value = $parse(v)?;
                c.kept.insert($name, value);
                Ok(())
            }),
        }
    };
}

/// A setting kept in `field` of the config, read back with `to_string`
/// and set through `parse`.
macro_rules! setting {
    ($name:literal, $alias:expr, $($field:ident).+, $parse:expr) => {
        Param {
            name: $name,
            alias: $alias,
            get: |c| c.$($field).+.to_string(),
            set: Change::With(|c, v| {
                c.$($field).+ = $parse(v)?;
                Ok(())
            }),
        }
    };
}

pub static PARAMS: &[Param] = &[
    Param {
        name: "bind",
        alias: None,
        get: |c| c.bind.join(" "),
        set: Change::Startup,
    },
    Param {
        name: "port",
        alias: None,
        get: |c| c.port.to_string(),
        set: Change::Startup,
    },
    Param {
        name: "requirepass",
        alias: None,
        get: |c| c.requirepass.clone().unwrap_or_default(),
        set: Change::With(|c, v| {
            c.requirepass = (!v.is_empty()).then(|| v.to_string());
            Ok(())
        }),
    },
    Param {
        name: "aclfile",
        alias: None,
        get: |c| c.aclfile.clone(),
        set: Change::Never,
    },
    Param {
        name: "databases",
        alias: None,
        get: |c| c.databases.to_string(),
        set: Change::Never,
    },
    Param {
        name: "maxclients",
        alias: None,
        get: |c| c.maxclients.to_string(),
        set: Change::With(|c, v| {
            c.maxclients = parse_num(v)? as usize;
            Ok(())
        }),
    },
    Param {
        name: "loglevel",
        alias: None,
        get: |c| c.loglevel.clone(),
        set: Change::With(|c, v| {
            c.loglevel = parse_enum(v, LOGLEVELS)?;
            Ok(())
        }),
    },
    Param {
        name: "protected-mode",
        alias: None,
        get: |c| yes_no(c.protected_mode),
        set: Change::With(|c, v| {
            c.protected_mode = parse_yes_no(v)?;
            Ok(())
        }),
    },
    Param {
        name: "timeout",
        alias: None,
        get: |c| c.timeout.to_string(),
        set: Change::With(|c, v| {
            c.timeout = parse_num(v)?;
            Ok(())
        }),
    },
    Param {
        name: "tcp-keepalive",
        alias: None,
        get: |c| c.tcp_keepalive.to_string(),
        set: Change::With(|c, v| {
            c.tcp_keepalive = parse_num(v)?;
            Ok(())
        }),
    },
    Param {
        name: "tcp-backlog",
        alias: None,
        get: |c| c.tcp_backlog.to_string(),
        set: Change::Never,
    },
    Param {
        name: "maxmemory",
        alias: None,
        get: |c| c.maxmemory.to_string(),
        set: Change::With(|c, v| {
            c.maxmemory = parse_memory(v)?;
            Ok(())
        }),
    },
    Param {
        name: "maxmemory-policy",
        alias: None,
        get: |c| c.maxmemory_policy.clone(),
        set: Change::With(|c, v| {
            c.maxmemory_policy = parse_enum(v, POLICIES)?;
            Ok(())
        }),
    },
    Param {
        name: "busy-reply-threshold",
        alias: Some("lua-time-limit"),
        get: |c| c.busy_reply_threshold.to_string(),
        set: Change::With(|c, v| {
            c.busy_reply_threshold = parse_num(v)?;
            Ok(())
        }),
    },
    Param {
        name: "slowlog-log-slower-than",
        alias: None,
        get: |c| c.slowlog_log_slower_than.to_string(),
        set: Change::With(|c, v| {
            c.slowlog_log_slower_than = parse_bounded(v, -1)?;
            Ok(())
        }),
    },
    Param {
        name: "slowlog-max-len",
        alias: None,
        get: |c| c.slowlog_max_len.to_string(),
        set: Change::With(|c, v| {
            c.slowlog_max_len = parse_bounded(v, 0)?;
            Ok(())
        }),
    },
    Param {
        name: "tracking-table-max-keys",
        alias: None,
        get: |c| c.tracking_table_max_keys.to_string(),
        set: Change::With(|c, v| {
            c.tracking_table_max_keys = parse_bounded(v, 0)? as u64;
            Ok(())
        }),
    },
    Param {
        name: "acllog-max-len",
        alias: None,
        get: |c| c.acllog_max_len.to_string(),
        set: Change::With(|c, v| {
            c.acllog_max_len = parse_bounded(v, 0)?;
            Ok(())
        }),
    },
    Param {
        name: "latency-monitor-threshold",
        alias: None,
        get: |c| c.latency_monitor_threshold.to_string(),
        set: Change::With(|c, v| {
            c.latency_monitor_threshold = parse_bounded(v, 0)?;
            Ok(())
        }),
    },
    Param {
        name: "notify-keyspace-events",
        alias: None,
        // Kept as given (`A` does not include `n`, yet Redis prints
        // `A` alone when both are on), reported in Redis's spelling.
        get: |c| {
            crate::keyspace::events::render_flags(
                crate::keyspace::events::parse_flags(&c.notify_keyspace_events).unwrap_or(0),
            )
        },
        set: Change::With(|c, v| {
            crate::keyspace::events::parse_flags(v)
                .ok_or_else(|| crate::keyspace::events::INVALID_FLAGS.to_string())?;
            c.notify_keyspace_events = v.to_string();
            Ok(())
        }),
    },
    Param {
        name: "hz",
        alias: None,
        get: |c| c.hz.to_string(),
        set: Change::With(|c, v| {
            c.hz = parse_num(v)?.clamp(1, 500);
            Ok(())
        }),
    },
    Param {
        name: "save",
        alias: None,
        get: |c| c.save.clone(),
        set: Change::With(|c, v| {
            c.save = v.to_string();
            Ok(())
        }),
    },
    Param {
        name: "client-output-buffer-limit",
        alias: None,
        get: |c| c.client_output_buffer_limit.clone(),
        set: Change::With(|c, v| {
            c.client_output_buffer_limit = merge_buffer_limits(&c.client_output_buffer_limit, v)?;
            Ok(())
        }),
    },
    Param {
        name: "appendonly",
        alias: None,
        get: |c| yes_no(c.appendonly),
        set: Change::With(|c, v| {
            c.appendonly = parse_yes_no(v)?;
            Ok(())
        }),
    },
    Param {
        name: "appendfsync",
        alias: None,
        get: |c| c.appendfsync.clone(),
        set: Change::With(|c, v| {
            c.appendfsync = parse_enum(v, crate::persist::Fsync::NAMES)?;
            Ok(())
        }),
    },
    Param {
        name: "dir",
        alias: None,
        // Absolute, as Redis reports its working directory.
        get: |c| {
            let dir = match c.dir.as_str() {
                "" => std::env::current_dir(),
                dir => std::path::absolute(dir),
            };
            dir.map_or_else(|_| c.dir.clone(), |p| p.to_string_lossy().into_owned())
        },
        set: Change::With(|c, v| {
            if !std::path::Path::new(v).is_dir() {
                return Err("No such file or directory".into());
            }
            c.dir = v.to_string();
            Ok(())
        }),
    },
    Param {
        name: "appendfilename",
        alias: None,
        get: |c| c.appendfilename.clone(),
        set: Change::Never,
    },
    Param {
        name: "aof-load-truncated",
        alias: None,
        get: |c| yes_no(c.aof_load_truncated),
        set: Change::With(|c, v| {
            c.aof_load_truncated = parse_yes_no(v)?;
            Ok(())
        }),
    },
    Param {
        name: "auto-aof-rewrite-percentage",
        alias: None,
        get: |c| c.auto_aof_rewrite_percentage.to_string(),
        set: Change::With(|c, v| {
            c.auto_aof_rewrite_percentage = parse_num(v)?;
            Ok(())
        }),
    },
    Param {
        name: "auto-aof-rewrite-min-size",
        alias: None,
        get: |c| c.auto_aof_rewrite_min_size.to_string(),
        set: Change::With(|c, v| {
            c.auto_aof_rewrite_min_size = parse_memory(v)?;
            Ok(())
        }),
    },
    Param {
        name: "lock-restart-grace-ms",
        alias: None,
        get: |c| c.lock_restart_grace_ms.to_string(),
        set: Change::Startup,
    },
    Param {
        name: "lua-heap-limit",
        alias: None,
        get: |c| c.lua_heap_limit.to_string(),
        set: Change::With(|c, v| {
            c.lua_heap_limit = parse_memory(v)?.max(1024 * 1024);
            Ok(())
        }),
    },
    Param {
        name: "script-kill-rollback",
        alias: None,
        get: |c| yes_no(c.script_kill_rollback),
        set: Change::With(|c, v| {
            c.script_kill_rollback = parse_yes_no(v)?;
            Ok(())
        }),
    },
    Param {
        name: "enable-clock-control",
        alias: None,
        get: |c| yes_no(c.enable_clock_control),
        set: Change::Startup,
    },
    Param {
        name: "enable-debug-command",
        alias: None,
        get: |c| c.enable_debug_command.name().into(),
        set: Change::Never,
    },
    Param {
        name: "metrics-port",
        alias: None,
        get: |c| c.metrics_port.unwrap_or(0).to_string(),
        set: Change::Startup,
    },
    setting!(
        "hash-max-listpack-entries",
        Some("hash-max-ziplist-entries"),
        encoding.hash_max_listpack_entries,
        parse_count
    ),
    setting!(
        "hash-max-listpack-value",
        Some("hash-max-ziplist-value"),
        encoding.hash_max_listpack_value,
        parse_memory_size
    ),
    setting!(
        "set-max-intset-entries",
        None,
        encoding.set_max_intset_entries,
        parse_count
    ),
    setting!(
        "zset-max-listpack-entries",
        Some("zset-max-ziplist-entries"),
        encoding.zset_max_listpack_entries,
        parse_count
    ),
    setting!(
        "zset-max-listpack-value",
        Some("zset-max-ziplist-value"),
        encoding.zset_max_listpack_value,
        parse_memory_size
    ),
    setting!(
        "list-max-listpack-size",
        Some("list-max-ziplist-size"),
        list_max_listpack_size,
        |v| parse_int_in(v, i32::MIN.into(), i32::MAX.into())
    ),
    setting!("list-compress-depth", None, list_compress_depth, |v| {
        parse_int_in(v, 0, i32::MAX.into())
    }),
    setting!(
        "stream-node-max-bytes",
        None,
        encoding.stream_node_max_bytes,
        parse_memory_size
    ),
    setting!(
        "stream-node-max-entries",
        None,
        encoding.stream_node_max_entries,
        parse_count
    ),
    fixed!("daemonize", "no", Never),
    fixed!("dbfilename", "dump.rdb", Never),
    Param {
        name: "cluster-enabled",
        alias: None,
        get: |c| yes_no(c.cluster_enabled),
        set: Change::Never,
    },
    fixed!("proto-max-bulk-len", "536870912", Startup),
    fixed!("hll-sparse-max-bytes", "3000", Startup),
    Param {
        name: "io-threads",
        alias: None,
        get: |c| c.io_threads.to_string(),
        set: Change::Never,
    },
    fixed!("replica-read-only", "yes", Startup),
    setting!(
        "min-replicas-to-write",
        Some("min-slaves-to-write"),
        min_replicas_to_write,
        |v| parse_int_in(v, 0, i32::MAX.into())
    ),
    setting!(
        "min-replicas-max-lag",
        Some("min-slaves-max-lag"),
        min_replicas_max_lag,
        |v| parse_int_in(v, 0, i32::MAX.into())
    ),
    fixed!("lazyfree-lazy-user-del", "no", Startup),
    Param {
        name: "replicaof",
        alias: Some("slaveof"),
        get: |_| String::new(),
        set: Change::Never,
    },
    kept!("repl-backlog-size", "1048576", |v| {
        // Redis's backlog is never smaller than 16 kB, whatever is asked.
        parse_memory_in(v, 1).map(|n| n.max(16 * 1024).to_string())
    }),
    kept!("maxmemory-clients", "0", parse_memory_or_percent),
    kept!("maxmemory-samples", "5", |v| int_text(
        v,
        1,
        i32::MAX.into()
    )),
    kept!("maxmemory-eviction-tenacity", "10", |v| int_text(v, 0, 100)),
    kept!("client-query-buffer-limit", "1073741824", |v| {
        parse_memory_in(v, 1024 * 1024).map(|n| n.to_string())
    }),
    kept!("key-load-delay", "0", |v| int_text(
        v,
        i32::MIN.into(),
        i32::MAX.into()
    )),
];

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
pub fn get_matching(config: &Config, patterns: &[&[u8]]) -> Vec<(&'static str, String)> {
    let mut out: Vec<(&'static str, String)> = Vec::new();
    for pat in patterns {
        let lower = pat.to_ascii_lowercase();
        for p in PARAMS {
            for name in std::iter::once(p.name).chain(p.alias) {
                let listed = !HIDDEN.contains(&name) || lower == name.as_bytes();
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
        let Change::With(set) = find_param("notify-keyspace-events").unwrap().set else {
            panic!("notify-keyspace-events is settable")
        };
        let get = find_param("notify-keyspace-events").unwrap().get;
        set(&mut c, "KEA").unwrap();
        assert_eq!(get(&c), "AKE");
        assert!(set(&mut c, "q").is_err());
        assert_eq!(get(&c), "AKE");
        set(&mut c, "AKn").unwrap();
        assert_eq!(get(&c), "AK");
        assert_eq!(c.notify_keyspace_events, "AKn");
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
    /// knows, plus the startup-only `bind`, `port`, `databases`,
    /// `cluster-enabled`, `enable-clock-control`, `metrics-port`,
    /// `appendfilename`, `lock-restart-grace-ms` and `io-threads`.
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
    /// of the same name) with its values.
    pub fn apply_directive(&mut self, directive: &str, values: &[String]) -> Result<(), String> {
        let value = values.join(" ");
        match directive.to_ascii_lowercase().as_str() {
            "bind" => self.bind = values.to_vec(),
            "aclfile" => self.aclfile = value,
            "port" => {
                self.port = value
                    .parse()
                    .map_err(|_| "the port must be a number from 0 to 65535")?
            }
            "databases" => {
                self.databases = value
                    .parse()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or("the number of databases must be at least 1")?
            }
            "enable-clock-control" => self.enable_clock_control = parse_yes_no(&value)?,
            "metrics-port" => {
                self.metrics_port = Some(
                    value
                        .parse()
                        .map_err(|_| "the metrics port must be a number from 0 to 65535")?,
                )
            }
            "cluster-enabled" => self.cluster_enabled = parse_yes_no(&value)?,
            "appendfilename" => {
                // A name, not a path, as in Redis.
                if value.is_empty() || value.contains('/') {
                    return Err("appendfilename can't be a path, just a filename".into());
                }
                self.appendfilename = value
            }
            "lock-restart-grace-ms" => self.lock_restart_grace_ms = parse_num(&value)?,
            "tcp-backlog" => self.tcp_backlog = parse_int_in(&value, 0, i32::MAX.into())? as u32,
            "io-threads" => {
                self.io_threads = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=MAX_IO_THREADS).contains(n))
                    .ok_or(format!("io-threads must be between 1 and {MAX_IO_THREADS}"))?
            }
            "enable-debug-command" => self.enable_debug_command = DebugCommand::parse(&value)?,
            name => {
                let param = find_param(name).ok_or("unknown directive")?;
                // Settings rlockd only reports (daemonize, dir…) are
                // accepted so that existing files load.
                if let Change::With(set) = param.set {
                    set(self, &value)?;
                }
            }
        }
        Ok(())
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
