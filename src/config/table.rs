//! The directives, one entry each.

use super::parse::*;
use super::values::{DebugCommand, DisklessLoad, FileMode, Value};
use super::{Change, Hook, Kept, Param};
use crate::keyspace::EncodingLimits;

/// As many threads as Redis allows for `io-threads`.
const MAX_IO_THREADS: usize = 128;

/// syslog's facilities Redis offers.
pub(super) const SYSLOG_FACILITIES: &[&str] = &[
    "user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7",
];

/// The longest bulk string the protocol reads, in bytes.
const MAX_BULK_LEN: u64 = crate::protocol::parse::MAX_BULK_LEN as u64;

const LOGLEVELS: &[&str] = &["debug", "verbose", "notice", "warning", "nothing"];
/// How many of them Redis 7.0 has.
const REDIS_LOGLEVELS: usize = 4;
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
    /// Addresses to listen on (CONFIG SET moves the TCP and TLS listeners).
    "bind" => bind: Vec<String> {
        default: vec!["127.0.0.1".into()],
        parse: bind_list,
        change: Runtime,
        reacts: [Listeners],
        multiword: true,
    }
    /// TCP port to listen on (0 picks a free port at start; CONFIG SET
    /// moves the listeners, and 0 there closes them, as in Redis).
    "port" => port: u16 {
        default: 6379,
        parse: |v: &str| v.parse().map_err(|_| "the port must be a number from 0 to 65535".to_string()),
        change: Runtime,
        reacts: [Listeners],
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
    // ---- TLS, as Redis 7.0 configures it (src/tls.rs applies these).
    /// A port to serve TLS on beside TCP (0: none); with port 0, TLS
    /// alone. CONFIG SET opens, moves or closes it.
    "tls-port" => tls_port: Option<u16> {
        default: None,
        parse: |v: &str| {
            parse_int_in(v, 0, u16::MAX.into()).map(|n| (n != 0).then_some(n as u16))
        },
        change: Runtime,
        reacts: [Listeners],
    }
    /// The server's certificate chain, PEM (read again by every CONFIG SET
    /// of a tls-* setting, so renewed files are taken up).
    "tls-cert-file" => tls_cert_file: String {
        default: String::new(),
        parse: text,
        change: Runtime,
        reacts: [Tls],
    }
    /// The certificate's private key, PEM.
    "tls-key-file" => tls_key_file: String {
        default: String::new(),
        parse: text,
        change: Runtime,
        reacts: [Tls],
    }
    /// The password of an encrypted tls-key-file.
    "tls-key-file-pass" => tls_key_file_pass: String {
        default: String::new(),
        parse: text,
        change: Runtime,
        reacts: [Tls],
    }
    /// Kept for replication (not built yet): the certificate rlockd would
    /// present as a client.
    "tls-client-cert-file" => tls_client_cert_file: String {
        default: String::new(),
        parse: text,
        change: Runtime,
    }
    /// Kept for replication: tls-client-cert-file's key.
    "tls-client-key-file" => tls_client_key_file: String {
        default: String::new(),
        parse: text,
        change: Runtime,
    }
    /// Kept for replication: tls-client-key-file's password.
    "tls-client-key-file-pass" => tls_client_key_file_pass: String {
        default: String::new(),
        parse: text,
        change: Runtime,
    }
    /// Kept and reported: rustls offers no finite-field Diffie-Hellman, so
    /// there are no parameters to load.
    "tls-dh-params-file" => tls_dh_params_file: String {
        default: String::new(),
        parse: text,
        change: Runtime,
    }
    /// The CAs client certificates must chain to, PEM.
    "tls-ca-cert-file" => tls_ca_cert_file: String {
        default: String::new(),
        parse: text,
        change: Runtime,
        reacts: [Tls],
    }
    /// A directory of CA certificates (PEM files), as tls-ca-cert-file.
    "tls-ca-cert-dir" => tls_ca_cert_dir: String {
        default: String::new(),
        parse: text,
        change: Runtime,
        reacts: [Tls],
    }
    /// Client certificates: yes (required), optional (checked when sent),
    /// no.
    "tls-auth-clients" => tls_auth_clients: String {
        default: "yes".into(),
        parse: |v| parse_enum(v, &["no", "yes", "optional"]),
        change: Runtime,
        reacts: [Tls],
    }
    /// The TLS versions offered, of TLSv1.2 and TLSv1.3 ("": both);
    /// rustls offers no older ones.
    "tls-protocols" => tls_protocols: String {
        default: String::new(),
        parse: text,
        change: Runtime,
        reacts: [Tls],
    }
    /// TLS 1.2 ciphers, OpenSSL's names joined by ':' ("": all rustls
    /// offers).
    "tls-ciphers" => tls_ciphers: String {
        default: String::new(),
        parse: text,
        change: Runtime,
        reacts: [Tls],
    }
    /// TLS 1.3 cipher suites, their IANA names joined by ':' ("": all).
    "tls-ciphersuites" => tls_ciphersuites: String {
        default: String::new(),
        parse: text,
        change: Runtime,
        reacts: [Tls],
    }
    /// yes: the server's order of ciphers wins over the client's.
    "tls-prefer-server-ciphers" => tls_prefer_server_ciphers: bool {
        default: false,
        parse: parse_yes_no,
        change: Runtime,
        reacts: [Tls],
    }
    /// yes: clients may resume TLS sessions.
    "tls-session-caching" => tls_session_caching: bool {
        default: true,
        parse: parse_yes_no,
        change: Runtime,
        reacts: [Tls],
    }
    /// How many TLS sessions are kept for resumption.
    "tls-session-cache-size" => tls_session_cache_size: u64 {
        default: 20 * 1024,
        parse: |v| parse_int(v, 0).map(|n| n as u64),
        change: Runtime,
        reacts: [Tls],
    }
    /// Kept and reported: rustls keeps sessions until the cache is full.
    "tls-session-cache-timeout" => tls_session_cache_timeout: u64 {
        default: 300,
        parse: |v| parse_int(v, 0).map(|n| n as u64),
        change: Runtime,
    }
    /// Kept for replication (not built yet): replicate over TLS.
    "tls-replication" => tls_replication: bool {
        default: false,
        parse: parse_yes_no,
        change: Runtime,
        reacts: [Tls],
    }
    /// Kept for the cluster bus (rlockd has none): talk to nodes over TLS.
    "tls-cluster" => tls_cluster: bool {
        default: false,
        parse: parse_yes_no,
        change: Runtime,
        reacts: [Tls],
    }
    /// Ours: milliseconds a client has to finish its TLS handshake before
    /// it is closed (0: forever, as in Redis).
    "tls-handshake-timeout-ms" => tls_handshake_timeout_ms: u64 {
        default: 10_000,
        parse: parse_num,
        change: Runtime,
    }
    // ---- end of TLS
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
        parse: |v| parse_int_in(v, 1, u32::MAX.into()).map(|n| n as usize),
        change: Runtime,
    }
    /// Log level: debug, verbose, notice, warning, nothing.
    "loglevel" => loglevel: String {
        default: "notice".into(),
        // `nothing` (Redis 7.2's) is accepted, but Redis 7.0's error
        // names its four.
        parse: |v| {
            parse_enum(v, LOGLEVELS).map_err(|_| not_one_of(&LOGLEVELS[..REDIS_LOGLEVELS]))
        },
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
        parse: |v| parse_int(v, 0).map(|n| n as u64),
        change: Runtime,
    }
    /// Seconds between TCP keepalive probes to clients (0: none).
    "tcp-keepalive" => tcp_keepalive: u64 {
        default: 300,
        parse: |v| parse_int(v, 0).map(|n| n as u64),
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
        parse: |v| parse_bounded(v, 0).map(|n| n as u64),
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
        parse: |v| parse_int(v, 0).map(|n| n.clamp(1, 500) as u64),
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
        // Refused as Redis's chdir refuses it.
        parse: |v: &str| match std::fs::metadata(v) {
            Err(e) => Err(crate::util::os_reason(&e)),
            Ok(m) if !m.is_dir() => Err("Not a directory".to_string()),
            Ok(_) => text(v),
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
    // Replication, as a replica (`src/replication/`).
    /// The primary to replicate from at start, `<host> <port>` ("": none);
    /// REPLICAOF changes it at run time, as CONFIG GET then shows.
    "replicaof" | "slaveof" => replicaof: String {
        default: String::new(),
        parse: |v: &str| {
            parse_primary(v).map(|p| p.map_or_else(String::new, |(h, port)| format!("{h} {port}")))
        },
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
    /// Seconds of silence after which a replica drops its link to the
    /// primary and connects again, and a primary drops a replica.
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
    /// How a replica takes a full sync's snapshot: `disabled` writes it to
    /// the snapshot file (`dir/dbfilename`) and loads it from there;
    /// `on-empty-db` loads it straight from the link when the replica
    /// holds no keys (else as `disabled`); `swapdb` always does.
    "repl-diskless-load" => repl_diskless_load: DisklessLoad {
        default: DisklessLoad::Disabled,
        parse: DisklessLoad::parse,
        change: Runtime,
    }
    /// yes: without persistence (no `save` points, `appendonly no`), a
    /// replica deletes the snapshot file a full sync wrote once it is
    /// loaded, and a primary the one a disk-backed sync wrote once its
    /// replicas have it.
    "rdb-del-sync-files" => rdb_del_sync_files: bool {
        default: false,
        parse: parse_yes_no,
        change: Runtime,
    }
    /// no: a replica says so in INFO (`replica_announced:0`), and Sentinel
    /// leaves it out of what it tells clients (SENTINEL REPLICAS).
    "replica-announced" => replica_announced: bool {
        default: true,
        parse: parse_yes_no,
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
    /// Redis's testing delay: microseconds a snapshot waits per key saved
    /// (negative: one for every that many keys), with no shard held.
    "rdb-key-save-delay" => rdb_key_save_delay: i64 {
        default: 0,
        parse: |v| parse_int_in(v, i32::MIN.into(), i32::MAX.into()),
        change: Runtime,
        hidden: true,
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
    /// yes: refuse writes while the last background save failed.
    "stop-writes-on-bgsave-error" => stop_writes_on_bgsave_error: bool {
        default: true,
        parse: parse_yes_no,
        change: Runtime,
    }
    /// yes: an AOF rewrite writes the base file as an RDB; no: as commands.
    "aof-use-rdb-preamble" => aof_use_rdb_preamble: bool {
        default: true,
        parse: parse_yes_no,
        change: Runtime,
    }
    /// The folder (in `dir`) of the multi-part append-only file: its
    /// manifest, base and incremental files.
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
        parse: |v| parse_int(v, 0).map(|n| n as u64),
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
    /// Ours (the safe mode, off at 0): a write is answered only once this
    /// many replicas acknowledged it, and refused with NOREPLICAS when
    /// fewer are connected, so an acknowledged lock survives a failover.
    "lock-sync-replicas" => lock_sync_replicas: i64 {
        default: 0,
        parse: |v| parse_int(v, 0),
        change: Runtime,
        reacts: [Guard],
    }
    /// Ours: how long a write waits for lock-sync-replicas' acknowledgements
    /// before it is answered NOREPLICAS (at least 1).
    "lock-sync-timeout-ms" => lock_sync_timeout_ms: u64 {
        default: 1000,
        parse: |v| parse_num(v).map(|n| n.max(1)),
        change: Runtime,
    }
    /// Ours: for this many ms after this server is promoted from replica to
    /// primary, no write may create a key (a new lock) or lower an integer
    /// counter (a semaphore's permit), while renewals and releases of the
    /// locks it has are served (0: off).
    "lock-promotion-grace-ms" => lock_promotion_grace_ms: u64 {
        default: 0,
        parse: parse_num,
        change: Runtime,
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
    /// Ours: with enable-clock-control, the clock runs as the system clock
    /// does and RLOCKD.CLOCK steps it (a wall clock stepped by an operator
    /// or NTP), rather than standing still between moves.
    "clock-control-runs" => clock_control_runs: bool {
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
    /// Who may CONFIG SET the protected directives (`dir`, `dbfilename`):
    /// no, yes, or local (loopback clients).
    "enable-protected-configs" => enable_protected_configs: DebugCommand {
        default: DebugCommand::No,
        parse: DebugCommand::parse,
        change: Never,
    }
    /// Ours: once listening, write the ready line (the addresses) to this
    /// file too, removed at shutdown ("": none).
    "ready-file" => ready_file: String {
        default: String::new(),
        parse: text,
        change: Startup,
    }
    /// yes: detach into the background once listening (writing pidfile,
    /// /var/run/redis.pid unless another is named).
    "daemonize" => daemonize: bool {
        default: false,
        parse: parse_yes_no,
        change: Never,
    }
    /// A file to write the server's process id to ("": none unless
    /// daemonized); removed at shutdown.
    "pidfile" => pidfile: String {
        default: String::new(),
        parse: text,
        change: Never,
    }
    /// A file to append the log to ("": standard output, or nowhere when
    /// daemonized).
    "logfile" => logfile: String {
        default: String::new(),
        parse: text,
        change: Never,
    }
    /// yes: also send the log to syslog.
    "syslog-enabled" => syslog_enabled: bool {
        default: false,
        parse: parse_yes_no,
        change: Never,
    }
    /// The name syslog's entries carry.
    "syslog-ident" => syslog_ident: String {
        default: "redis".into(),
        parse: text,
        change: Never,
    }
    /// The syslog facility: user, local0 to local7.
    "syslog-facility" => syslog_facility: String {
        default: "local0".into(),
        parse: |v| parse_enum(v, SYSLOG_FACILITIES),
        change: Never,
    }
    /// How a supervisor hears that the server is ready: no, systemd
    /// (sd_notify over NOTIFY_SOCKET), upstart (the server stops itself
    /// with SIGSTOP when UPSTART_JOB is set), auto (whichever of the two
    /// variables is set).
    "supervised" => supervised: String {
        default: "no".into(),
        parse: |v| parse_enum(v, &["upstart", "systemd", "auto", "no"]),
        change: Never,
    }
    /// Redis's longest bulk string: rlockd's is fixed at 512mb, and
    /// another value stops start-up.
    "proto-max-bulk-len" => proto_max_bulk_len: u64 {
        default: MAX_BULK_LEN,
        parse: |v| {
            let n = parse_memory_in(v, 1024 * 1024)?;
            if n != MAX_BULK_LEN {
                return Err(format!(
                    "rlockd reads bulk strings of up to {MAX_BULK_LEN} bytes (512mb), a limit it cannot change"
                ));
            }
            Ok(n)
        },
        change: Startup,
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
    /// Writes are refused unless this many replicas acknowledged within
    /// min-replicas-max-lag seconds.
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
    /// Bytes of the replication stream kept for replicas that reconnect
    /// to continue from (never below 16kb, as in Redis).
    "repl-backlog-size" => repl_backlog_size: String {
        default: "1048576".into(),
        parse: |v| parse_memory_in(v, 1).map(|n| n.max(16 * 1024).to_string()),
        change: Runtime,
        reacts: [Backlog],
    }
    /// Seconds without replicas after which the backlog is freed (0:
    /// never).
    "repl-backlog-ttl" => repl_backlog_ttl: i64 {
        default: 3600,
        parse: |v| parse_bounded(v, 0),
        change: Runtime,
    }
    /// yes: a full sync streams the snapshot to replicas that take it
    /// so (`$EOF:` framing) after repl-diskless-sync-delay; no: it is
    /// sent with its length first.
    "repl-diskless-sync" => repl_diskless_sync: bool {
        default: true,
        parse: parse_yes_no,
        change: Runtime,
    }
    /// Seconds a diskless full sync waits before it starts.
    "repl-diskless-sync-delay" => repl_diskless_sync_delay: i64 {
        default: 5,
        parse: |v| parse_int(v, 0),
        change: Runtime,
    }
    /// A diskless full sync starts before its delay ends once this many
    /// replicas wait for it (0: only the delay counts).
    "repl-diskless-sync-max-replicas" => repl_diskless_sync_max_replicas: i64 {
        default: 0,
        parse: |v| parse_int(v, 0),
        change: Runtime,
    }
    /// Seconds between the PINGs a primary sends its replicas.
    "repl-ping-replica-period" | "repl-ping-slave-period" => repl_ping_replica_period: i64 {
        default: 10,
        parse: |v| parse_int(v, 1),
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
    /// Redis's testing delay while loading keys: microseconds per key, or
    /// (negative, -n) one microsecond for one key in n. Tests use it to
    /// hold a load open long enough to watch it.
    "key-load-delay" => key_load_delay: i64 {
        default: 0,
        parse: |v| parse_int_in(v, i32::MIN.into(), i32::MAX.into()),
        change: Runtime,
        hidden: true,
    }
}

impl Config {
    /// `repl-backlog-size` in bytes (its text is checked when set).
    pub fn backlog_size(&self) -> usize {
        self.repl_backlog_size.parse().unwrap_or(1024 * 1024)
    }

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
