//! Prometheus metrics over plain HTTP (`metrics-port`): a minimal
//! HTTP/1.1 responder, one request per connection, `GET /metrics` only.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::{Shared, Waiters};
use crate::command::REGISTRY;
use crate::keyspace::LockPlan;
use crate::pubsub::Kind;

/// A request head larger than this is refused.
const MAX_HEAD: usize = 8 * 1024;

pub async fn serve(shared: Arc<Shared>, listener: TcpListener, mut stop: watch::Receiver<bool>) {
    loop {
        let stream = tokio::select! {
            a = listener.accept() => a,
            _ = stop.changed() => return,
        };
        if let Ok((stream, _)) = stream {
            tokio::spawn(answer(shared.clone(), stream));
        }
    }
}

async fn answer(shared: Arc<Shared>, mut stream: TcpStream) {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if head.len() > MAX_HEAD {
            let _ = respond(&mut stream, "431 Request Header Fields Too Large", "").await;
            return;
        }
    }
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let mut words = line.split(|&b| b == b' ');
    let (method, path) = (words.next(), words.next());
    let _ = match (method, path) {
        (Some(b"GET"), Some(b"/metrics")) => {
            // Reading the keyspace takes every shard: off the async workers.
            let body = tokio::task::spawn_blocking(move || render(&shared))
                .await
                .unwrap_or_default();
            respond(&mut stream, "200 OK", &body).await
        }
        (Some(b"GET"), _) => respond(&mut stream, "404 Not Found", "").await,
        _ => respond(&mut stream, "405 Method Not Allowed", "").await,
    };
}

async fn respond(stream: &mut TcpStream, status: &str, body: &str) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}

/// Appends one metric family: its help, its type, and its samples
/// (`labels` is the `{…}` part, empty for none).
fn family(out: &mut String, name: &str, kind: &str, help: &str, samples: &[(String, u64)]) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    for (labels, value) in samples {
        let _ = writeln!(out, "{name}{labels} {value}");
    }
}

fn single(value: impl TryInto<u64>) -> [(String, u64); 1] {
    [(String::new(), value.try_into().unwrap_or(u64::MAX))]
}

/// Label values are escaped as the text format requires.
fn label(name: &str, value: &str) -> String {
    let escaped = value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n");
    format!("{{{name}=\"{escaped}\"}}")
}

/// The whole exposition, read at one moment.
pub fn render(shared: &Shared) -> String {
    let mut out = String::new();
    family(
        &mut out,
        "rlockd_connected_clients",
        "gauge",
        "Client connections open now.",
        &single(shared.clients.len()),
    );
    let blocked = shared
        .clients
        .iter()
        .filter(|c| c.info.lock().counts_as_blocked())
        .count();
    family(
        &mut out,
        "rlockd_blocked_clients",
        "gauge",
        "Clients waiting in a blocking command (BLPOP, BLMOVE…).",
        &single(blocked),
    );
    let stats = &shared.stats;
    let commands: Vec<(String, u64)> = stats
        .commands()
        .map(|(id, stat)| (id, stat.calls))
        .filter(|&(_, calls)| calls > 0)
        .map(|(id, calls)| (label("cmd", &REGISTRY.full_names[id]), calls))
        .collect();
    family(
        &mut out,
        "rlockd_commands_processed_total",
        "counter",
        "Commands run, by command (subcommands as `client|id`).",
        &commands,
    );

    let databases = shared.keyspace.databases();
    let (keys, locks, expired) = match shared.keyspace.lock(&LockPlan::All) {
        Ok(mut locked) => {
            let locks = crate::context::introspect::held_locks(&mut locked, databases, None).len();
            let keys: Vec<(String, u64)> = (0..databases)
                .map(|db| (db, locked.shards().map(|s| s.db_len(db)).sum::<usize>()))
                .filter(|&(_, n)| n > 0)
                .map(|(db, n)| (label("db", &db.to_string()), n as u64))
                .collect();
            let expired: u64 = locked.shards().map(|s| s.stats.expired).sum();
            (keys, single(locks).to_vec(), single(expired).to_vec())
        }
        // A script past the busy threshold holds shards: no keyspace
        // samples this time rather than a scrape that hangs.
        Err(_) => (Vec::new(), Vec::new(), Vec::new()),
    };
    family(
        &mut out,
        "rlockd_keys",
        "gauge",
        "Keys stored, by database.",
        &keys,
    );
    family(
        &mut out,
        "rlockd_held_locks",
        "gauge",
        "Locks held: hashes of owner to hold count, and strings with a deadline.",
        &locks,
    );

    let waiters = crate::context::introspect::waiters(&shared.pubsub, None);
    let per_kind = |count: fn(&Waiters) -> usize| -> Vec<(String, u64)> {
        [Kind::Channel, Kind::Pattern, Kind::Shard]
            .into_iter()
            .map(|kind| {
                let n: usize = waiters.iter().filter(|w| w.kind == kind).map(count).sum();
                (label("kind", kind.name()), n as u64)
            })
            .collect()
    };
    family(
        &mut out,
        "rlockd_pubsub_channels",
        "gauge",
        "Channels, patterns and shard channels with at least one subscriber.",
        &per_kind(|_| 1),
    );
    family(
        &mut out,
        "rlockd_pubsub_subscribers",
        "gauge",
        "Subscriptions, by kind of channel.",
        &per_kind(|w| w.clients.len()),
    );

    let scripts = &shared.scripts.counters;
    family(
        &mut out,
        "rlockd_script_runs_total",
        "counter",
        "Lua scripts run (EVAL, EVALSHA and their read-only forms).",
        &single(scripts.runs.get()),
    );
    family(
        &mut out,
        "rlockd_script_busy_total",
        "counter",
        "Script runs that went past busy-reply-threshold.",
        &single(scripts.busy.load(Ordering::Relaxed)),
    );
    family(
        &mut out,
        "rlockd_expired_keys_total",
        "counter",
        "Keys reclaimed because their deadline passed.",
        &expired,
    );
    family(
        &mut out,
        "rlockd_expiry_lag_milliseconds",
        "gauge",
        "How late after its deadline the latest key reclaimed by active expiry went.",
        &single(shared.keyspace.expiry_lag_ms()),
    );
    out
}
