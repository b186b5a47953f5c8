//! What the replication benches share (`replication`, `safe_mode`): a
//! primary with replicas of its own kind on loopback, and timed rounds of
//! Redisson lock+unlock pairs against it, each client a lock of its own,
//! optionally with the `WAIT` Redisson sends after each lock.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use super::{Conn, Reply, Server, free_port, join_clients, launch, transient_args};

const LOCK_LUA: &str = include_str!("../../src/command/scripting/lock_scripts/redisson_lock.lua");
const UNLOCK_LUA: &str =
    include_str!("../../src/command/scripting/lock_scripts/redisson_unlock.lua");

/// Which program plays every role of one side, with the arguments it gets
/// in each of them.
pub struct Side {
    pub name: &'static str,
    pub program: String,
    pub extra: Vec<String>,
}

impl Side {
    /// A server of this side on a free port, persistence off, syncing
    /// replicas at once; `role` adds its own arguments (`--replicaof`).
    pub fn start(&self, role: &[String]) -> Option<Server> {
        let mut args = transient_args(free_port(), "rlockd-bench-replicated");
        // A replica's sync file is removed once loaded, as nothing saves.
        args.extend(
            [
                "--repl-diskless-sync",
                "yes",
                "--repl-diskless-sync-delay",
                "0",
                "--rdb-del-sync-files",
                "yes",
            ]
            .map(String::from),
        );
        args.extend_from_slice(&self.extra);
        args.extend_from_slice(role);
        launch(self.name, &self.program, &args)
    }

    /// A replica of `primary`, once its link is up (`None` if it does not
    /// start or its link is not up within `limit`).
    pub fn replica_of(&self, primary: &Server, limit: Duration) -> Option<Server> {
        let port = primary.addr.port().to_string();
        let replica = self.start(&["--replicaof".into(), "127.0.0.1".into(), port])?;
        until_link_up(replica.addr, limit).then_some(replica)
    }

    /// A primary and `count` replicas of it, every link up.
    pub fn with_replicas(&self, count: usize, limit: Duration) -> Option<Replicated> {
        let primary = self.start(&[])?;
        let replicas = (0..count)
            .map(|_| self.replica_of(&primary, limit))
            .collect::<Option<_>>()?;
        Some(Replicated { primary, replicas })
    }
}

/// A primary and its replicas, running while this lives.
pub struct Replicated {
    pub primary: Server,
    pub replicas: Vec<Server>,
}

/// INFO `section` of the server at `addr`.
pub fn info(addr: SocketAddr, section: &str) -> io::Result<String> {
    match Conn::open(addr)?.cmd(&["INFO", section])? {
        Reply::Bulk(Some(text)) => Ok(String::from_utf8_lossy(&text).into_owned()),
        other => Err(io::Error::other(format!("INFO {section}: {other:?}"))),
    }
}

/// Polls the replica at `addr` until its link to the primary is up;
/// whether it came up within `limit`.
pub fn until_link_up(addr: SocketAddr, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if info(addr, "replication").is_ok_and(|i| i.contains("master_link_status:up")) {
            return true;
        }
        thread::sleep(Duration::from_millis(5));
    }
    false
}

/// `WAIT <replicas> <timeout_ms>` after each lock, counted in its latency.
#[derive(Clone, Copy)]
pub struct Wait {
    pub replicas: usize,
    pub timeout_ms: u64,
}

/// One round of lock+unlock pairs: how many clients, for how long, each
/// client's lock named `{prefix}:{n}`.
pub struct PairRound<'a> {
    pub prefix: &'a str,
    pub clients: usize,
    pub length: Duration,
    pub wait: Option<Wait>,
}

/// What a round measured: pairs/s, and every lock's round trip in µs (the
/// WAIT included).
pub struct Pairs {
    pub rate: f64,
    pub lock_us: Vec<f64>,
}

impl PairRound<'_> {
    /// Runs the round against the primary at `addr`. Any reply but a grant,
    /// an acknowledged WAIT and a release is an error.
    pub fn run(&self, addr: SocketAddr) -> io::Result<Pairs> {
        let mut admin = Conn::open(addr)?;
        let lock = admin.script_load(LOCK_LUA)?;
        let unlock = admin.script_load(UNLOCK_LUA)?;
        let start = Arc::new(Barrier::new(self.clients + 1));
        let mut workers = Vec::new();
        for n in 0..self.clients {
            let (start, lock, unlock) = (start.clone(), lock.clone(), unlock.clone());
            let (name, length) = (format!("{}:{n}", self.prefix), self.length);
            let wait = self
                .wait
                .map(|w| (w.replicas.to_string(), w.timeout_ms.to_string()));
            let mut conn = Conn::open(addr)?;
            workers.push(thread::spawn(move || -> io::Result<(u64, Vec<f64>)> {
                let channel = format!("redisson_lock__channel:{{{name}}}");
                let owner = format!("8743c9c0-0795-4907-87fd-6c719a6b4586:{n}");
                let (mut pairs, mut lock_us) = (0u64, Vec::new());
                start.wait();
                let until = Instant::now() + length;
                while Instant::now() < until {
                    let asked = Instant::now();
                    match conn.cmd(&["EVALSHA", &lock, "1", &name, "30000", &owner])? {
                        Reply::Bulk(None) => {}
                        other => return Err(io::Error::other(format!("lock: {other:?}"))),
                    }
                    if let Some((replicas, timeout)) = &wait {
                        match conn.cmd(&["WAIT", replicas, timeout])? {
                            Reply::Int(_) => {}
                            other => return Err(io::Error::other(format!("WAIT: {other:?}"))),
                        }
                    }
                    lock_us.push(asked.elapsed().as_secs_f64() * 1e6);
                    let release = [
                        "EVALSHA", &unlock, "2", &name, &channel, "0", "30000", &owner,
                    ];
                    match conn.cmd(&release)? {
                        Reply::Int(1) => pairs += 1,
                        other => return Err(io::Error::other(format!("unlock: {other:?}"))),
                    }
                }
                Ok((pairs, lock_us))
            }));
        }
        start.wait();
        let started = Instant::now();
        let (pairs, lock_us) = join_clients(workers)?;
        Ok(Pairs {
            rate: pairs as f64 / started.elapsed().as_secs_f64(),
            lock_us,
        })
    }
}
