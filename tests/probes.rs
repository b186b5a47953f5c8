//! What Redisson sends around its lock scripts on non-single-server
//! configurations: `WAIT 0 0`, `WAITAOF 0 0 0` (a Redis 7.2 command, so not
//! in the differential suite), and `INFO ALL` read for `connected_slaves`
//! and `aof_enabled`.

mod common;

use std::time::{Duration, Instant};

use common::{cmd, connect, err, start};

#[tokio::test]
async fn wait_and_waitaof_answer_like_a_lone_redis() {
    let server = start().await;
    let mut c = connect(&server).await;
    assert_eq!(cmd::<i64>(&mut c, &["WAIT", "0", "0"]).await.unwrap(), 0);
    assert_eq!(
        cmd::<Vec<i64>>(&mut c, &["WAITAOF", "0", "0", "0"])
            .await
            .unwrap(),
        vec![0, 0]
    );
    assert_eq!(
        cmd::<Vec<i64>>(&mut c, &["waitaof", "0", "0", "100"])
            .await
            .unwrap(),
        vec![0, 0]
    );

    // Asking for acknowledgements nobody can give waits out the timeout.
    let started = Instant::now();
    assert_eq!(cmd::<i64>(&mut c, &["WAIT", "1", "150"]).await.unwrap(), 0);
    assert!(started.elapsed() >= Duration::from_millis(150));
    let started = Instant::now();
    assert_eq!(
        cmd::<Vec<i64>>(&mut c, &["WAITAOF", "0", "2", "150"])
            .await
            .unwrap(),
        vec![0, 0]
    );
    assert!(started.elapsed() >= Duration::from_millis(150));

    // Redis 7.2's errors.
    assert_eq!(
        err(&mut c, &["WAITAOF", "1", "0", "0"]).await,
        "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled."
    );
    assert_eq!(
        err(&mut c, &["WAITAOF", "2", "0", "0"]).await,
        "ERR value is out of range, value must between 0 and 1"
    );
    assert_eq!(
        err(&mut c, &["WAITAOF", "0", "-1", "0"]).await,
        "ERR value is out of range, must be positive"
    );
    assert_eq!(
        err(&mut c, &["WAITAOF", "0", "0", "-1"]).await,
        "ERR timeout is negative"
    );
    assert_eq!(
        err(&mut c, &["WAITAOF", "0", "0"]).await,
        "ERR wrong number of arguments for 'waitaof' command"
    );
    let script = "return redis.call('waitaof', 0, 0, 0)";
    assert_eq!(
        err(&mut c, &["EVAL", script, "0"]).await,
        format!(
            "ERR This Redis command is not allowed from script script: {}, on @user_script:1.",
            rlockd::scripting::sha1_hex(script.as_bytes())
        )
    );

    // Inside MULTI nothing waits.
    let mut pipe = redis::pipe();
    pipe.atomic()
        .cmd("WAIT")
        .arg(5)
        .arg(0)
        .cmd("WAITAOF")
        .arg(0)
        .arg(5)
        .arg(0);
    let (wait, waitaof): (i64, Vec<i64>) = pipe.query_async(&mut c).await.unwrap();
    assert_eq!((wait, waitaof), (0, vec![0, 0]));
}

/// Redisson reads these fields of `INFO ALL` to decide whether to append
/// `WAIT` to its scripts.
#[tokio::test]
async fn info_all_reports_a_lone_master_without_aof() {
    let server = start().await;
    let mut c = connect(&server).await;
    let all: String = cmd(&mut c, &["INFO", "ALL"]).await.unwrap();
    let field = |text: &str, name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .map(|v| v.trim().to_string())
    };
    assert_eq!(field(&all, "role").as_deref(), Some("master"));
    assert_eq!(field(&all, "connected_slaves").as_deref(), Some("0"));
    assert_eq!(field(&all, "aof_enabled").as_deref(), Some("0"));
    let sections: Vec<&str> = all.lines().filter(|l| l.starts_with("# ")).collect();
    assert_eq!(
        sections,
        [
            "# Server",
            "# Clients",
            "# Memory",
            "# Persistence",
            "# Stats",
            "# Replication",
            "# CPU",
            "# Modules",
            "# Commandstats",
            "# Errorstats",
            "# Latencystats",
            "# Cluster",
            "# Keyspace"
        ],
        "Redis 7.0's order"
    );
    let replication: String = cmd(&mut c, &["INFO", "REPLICATION"]).await.unwrap();
    assert_eq!(field(&replication, "role").as_deref(), Some("master"));
    assert_eq!(
        field(&replication, "connected_slaves").as_deref(),
        Some("0")
    );
    let persistence: String = cmd(&mut c, &["info", "persistence"]).await.unwrap();
    assert_eq!(field(&persistence, "aof_enabled").as_deref(), Some("0"));
}
