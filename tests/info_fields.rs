//! INFO's field names, as Prometheus's redis_exporter reads them: every
//! field it maps that a real redis-server 7.0 reports, rlockd reports too.

mod refserver;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use refserver::RedisServer;

/// The INFO fields redis_exporter turns into gauges and counters (its
/// `metricMapGauges` / `metricMapCounters`, Redis's own fields only) and
/// the sections it parses per line (keyspace `dbN`, `cmdstat_*`,
/// `errorstat_*`).
const EXPORTER_FIELDS: &[&str] = &[
    "uptime_in_seconds",
    "process_id",
    "connected_clients",
    "blocked_clients",
    "tracking_clients",
    "client_recent_max_output_buffer",
    "client_recent_max_input_buffer",
    "used_memory",
    "used_memory_rss",
    "used_memory_peak",
    "used_memory_lua",
    "used_memory_scripts",
    "maxmemory",
    "mem_fragmentation_ratio",
    "mem_fragmentation_bytes",
    "mem_clients_normal",
    "mem_not_counted_for_evict",
    "lazyfree_pending_objects",
    "active_defrag_running",
    "migrate_cached_sockets",
    "active_defrag_hits",
    "active_defrag_misses",
    "active_defrag_key_hits",
    "active_defrag_key_misses",
    "expired_time_cap_reached_count",
    "expired_stale_perc",
    "loading",
    "rdb_changes_since_last_save",
    "rdb_bgsave_in_progress",
    "rdb_last_save_time",
    "rdb_last_bgsave_status",
    "rdb_last_bgsave_time_sec",
    "rdb_current_bgsave_time_sec",
    "rdb_last_cow_size",
    "aof_enabled",
    "aof_rewrite_in_progress",
    "aof_rewrite_scheduled",
    "aof_last_rewrite_time_sec",
    "aof_current_rewrite_time_sec",
    "aof_last_cow_size",
    "aof_last_bgrewrite_status",
    "aof_last_write_status",
    "module_fork_in_progress",
    "module_fork_last_cow_size",
    "pubsub_channels",
    "pubsub_patterns",
    "latest_fork_usec",
    "connected_slaves",
    "repl_backlog_size",
    "repl_backlog_active",
    "repl_backlog_first_byte_offset",
    "repl_backlog_histlen",
    "master_repl_offset",
    "second_repl_offset",
    "slave_expires_tracked_keys",
    "sync_full",
    "sync_partial_ok",
    "sync_partial_err",
    "total_connections_received",
    "total_commands_processed",
    "rejected_connections",
    "total_net_input_bytes",
    "total_net_output_bytes",
    "expired_keys",
    "evicted_keys",
    "keyspace_hits",
    "keyspace_misses",
    "used_cpu_sys",
    "used_cpu_user",
    "used_cpu_sys_children",
    "used_cpu_user_children",
    "redis_version",
    "redis_mode",
    "os",
    "maxmemory_policy",
    "tcp_port",
    "run_id",
    "role",
    "cluster_enabled",
];

fn info(addr: SocketAddr) -> BTreeSet<String> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"SET k v\r\nGET k\r\nNOSUCH\r\nINFO everything\r\n")
        .unwrap();
    let mut text = String::new();
    let mut buf = [0u8; 64 * 1024];
    while !text.contains("# Keyspace") || !text.ends_with("\r\n\r\n") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed early");
        text.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    text.lines()
        .filter_map(|l| l.split_once(':').map(|(k, _)| k.to_string()))
        .filter(|k| !k.is_empty() && !k.starts_with(['+', '$', '#']))
        .collect()
}

#[test]
fn exporter_fields_that_redis_reports_rlockd_reports_too() {
    let Some(bin) = refserver::redis_server_path("info_fields") else {
        return;
    };
    let redis = RedisServer::start(&bin);
    let theirs = info(([127, 0, 0, 1], redis.port()).into());
    let server = rlockd::Server::builder().port(0).start_blocking().unwrap();
    let ours = info(server.addr());
    let missing: Vec<&str> = EXPORTER_FIELDS
        .iter()
        .copied()
        .filter(|f| theirs.contains(*f) && !ours.contains(*f))
        .collect();
    assert!(missing.is_empty(), "INFO lacks {missing:?}");
    for per_line in ["db0", "cmdstat_get", "errorstat_ERR"] {
        assert_eq!(
            theirs.contains(per_line),
            ours.contains(per_line),
            "{per_line}"
        );
    }
}
