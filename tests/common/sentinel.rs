//! Servers and real `redis-sentinel`s on loopback for the tests that run a
//! failover (`tests/sentinel.rs`, `tests/safety_failover.rs`) and the bench
//! that times one (`benches/failover.rs`). Not a module of `common` itself:
//! it needs `refserver`, which not every test has, so those include it by
//! path, each using a part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, blocking::Running, blocking::connect, blocking::q};
use crate::refserver;
use redis::{Connection, Value};

/// How long Sentinel gets for what takes it a few seconds (discovery, a
/// failover) on a loaded machine.
pub const SLOW: Duration = Duration::from_secs(40);

/// The name the sentinels monitor the primary by.
pub const NAME: &str = "m";

/// What these tests need: redis-server and redis-sentinel.
pub struct Tools {
    pub server: PathBuf,
    pub sentinel: PathBuf,
}

/// The tools, or `None` (and the test skipped) without them.
pub fn tools(test: &str) -> Option<Tools> {
    let server = refserver::redis_server_path(test)?;
    let Some(sentinel) = refserver::find_tool("redis-sentinel", "REDIS_SENTINEL") else {
        refserver::skip_unless_required(
            test,
            "`redis-sentinel` not found on PATH (or $REDIS_SENTINEL): apt-get install redis-sentinel",
            refserver::REQUIRE_ENV,
        );
        return None;
    };
    Some(Tools { server, sentinel })
}

/// Which server plays the part under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Rlockd,
    Redis,
}

/// A server started from a config file of its own.
pub struct Server {
    pub process: Running,
    pub port: u16,
    pub conf: PathBuf,
}

impl Server {
    /// A `kind` server on a free port, its config file `name.conf` in
    /// `dir` holding `lines`.
    pub fn start(
        tools: &Tools,
        kind: Kind,
        dir: &common::TempDir,
        name: &str,
        lines: &str,
    ) -> Server {
        let port = refserver::free_port();
        let conf = dir.file(&format!("{name}.conf"));
        // Its snapshots (a full sync's) in a directory of its own.
        let own = dir.file(name);
        std::fs::create_dir_all(&own).unwrap();
        let mut text = format!(
            "port {port}\nbind 127.0.0.1\ndir {}\n{lines}",
            own.display()
        );
        if kind == Kind::Redis {
            text += &format!("logfile {}\n", own.join("log").display());
        }
        std::fs::write(&conf, text).unwrap();
        Server::run(tools, kind, port, conf)
    }

    /// Starts it (again) from its config file.
    pub fn run(tools: &Tools, kind: Kind, port: u16, conf: PathBuf) -> Server {
        let process = match kind {
            Kind::Rlockd => Running::new(common::spawn_binary(&[conf.to_str().unwrap()]).0),
            Kind::Redis => spawn(&tools.server, &conf, port),
        };
        Server {
            process,
            port,
            conf,
        }
    }

    /// `kill -9`, and the port and config file to start it again with.
    pub fn kill(mut self) -> (u16, PathBuf) {
        let _ = self.process.0.kill();
        let _ = self.process.0.wait();
        (self.port, self.conf.clone())
    }

    /// Its INFO `section`; `None` when the connection fails: a sentinel
    /// reconfiguring a server drops its clients (`CLIENT KILL TYPE
    /// normal`), a poll's included.
    pub fn info(&self, section: &str) -> Option<String> {
        let mut con = redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .ok()?
            .get_connection()
            .ok()?;
        redis::cmd("INFO").arg(section).query(&mut con).ok()
    }
}

/// Runs one of Redis's programs on its config file, once it answers
/// PING on `port`.
pub fn spawn(program: &Path, conf: &Path, port: u16) -> Running {
    let process = Running::new(
        Command::new(program)
            .arg(conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{} does not start: {e}", program.display())),
    );
    wait_for("it to answer PING", common::STARTUP_WAIT, || {
        refserver::ping(([127, 0, 0, 1], port).into()).then_some(())
    });
    process
}

/// Polls `probe` every 50 ms until it gives a value, failing the test
/// after `limit`.
pub fn wait_for<T>(what: &str, limit: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(start.elapsed() < limit, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn text(v: Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
        Value::SimpleString(s) => s,
        Value::Okay => "OK".into(),
        Value::Int(n) => n.to_string(),
        other => format!("{other:?}"),
    }
}

/// SENTINEL MASTER's or one entry of SENTINEL REPLICAS's flat list of
/// names and values.
pub fn fields(v: Value) -> Vec<(String, String)> {
    let Value::Array(items) = v else {
        panic!("a list of fields, got {v:?}")
    };
    let items: Vec<String> = items.into_iter().map(text).collect();
    items
        .chunks(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect()
}

pub fn field<'a>(fields: &'a [(String, String)], name: &str) -> &'a str {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {name} in {fields:?}"))
}

/// `count` sentinels watching the primary at `port`, a majority of them
/// the quorum, with short periods so a failover takes seconds.
pub fn sentinels(
    tools: &Tools,
    dir: &common::TempDir,
    port: u16,
    count: usize,
) -> Vec<(Running, u16)> {
    let quorum = count / 2 + 1;
    (0..count)
        .map(|i| {
            let own = refserver::free_port();
            let conf = dir.file(&format!("sentinel{i}.conf"));
            std::fs::write(
                &conf,
                format!(
                    "port {own}\nbind 127.0.0.1\ndir {}\nlogfile {}\n\
                     sentinel monitor {NAME} 127.0.0.1 {port} {quorum}\n\
                     sentinel down-after-milliseconds {NAME} 1000\n\
                     sentinel failover-timeout {NAME} 4000\n",
                    dir.arg(),
                    dir.file(&format!("sentinel{i}.log")).display()
                ),
            )
            .unwrap();
            let process = spawn(&tools.sentinel, &conf, own);
            // Hellos and INFO more often than every 2 and 10 s, and no
            // TILT mode when a loaded machine stalls a sentinel's timer.
            q(
                &mut connect(own),
                &[
                    "SENTINEL",
                    "DEBUG",
                    "info-period",
                    "500",
                    "publish-period",
                    "500",
                    "tilt-trigger",
                    "60000",
                ],
            );
            (process, own)
        })
        .collect()
}

pub fn sentinel(port: u16, args: &[&str]) -> Value {
    let mut all = vec!["SENTINEL"];
    all.extend_from_slice(args);
    q(&mut connect(port), &all)
}

/// The replica at `port` as sentinel `at` lists it, once it does.
pub fn listed_replica(at: u16, port: u16) -> Option<Vec<(String, String)>> {
    let Value::Array(replicas) = sentinel(at, &["REPLICAS", NAME]) else {
        return None;
    };
    replicas
        .into_iter()
        .map(fields)
        .find(|f| field(f, "port") == port.to_string())
}

/// A blocking connection whose every wait (connect, read, write) is
/// bounded by `timeout`: a dead or stalled server must not hold its client.
pub fn bounded(port: u16, timeout: Duration) -> Option<Connection> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).ok()?;
    let con = client.get_connection_with_timeout(timeout).ok()?;
    con.set_read_timeout(Some(timeout)).ok()?;
    con.set_write_timeout(Some(timeout)).ok()?;
    Some(con)
}

/// The primary's port as the first sentinel that answers names it (`SENTINEL
/// GET-MASTER-ADDR-BY-NAME`), asking from the `first`th on, as a client in
/// Sentinel mode does.
pub fn primary(sentinels: &[u16], first: usize, timeout: Duration) -> Option<u16> {
    (0..sentinels.len()).find_map(|i| {
        let mut con = bounded(sentinels[(first + i) % sentinels.len()], timeout)?;
        let reply: Value = redis::cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(NAME)
            .query(&mut con)
            .ok()?;
        let Value::Array(addr) = reply else {
            return None;
        };
        text(addr.get(1)?.clone()).parse().ok()
    })
}

/// A primary and two replicas of one kind, each with the config `lines`,
/// and three sentinels watching them.
pub struct Watched {
    /// The primary first.
    pub servers: Vec<Server>,
    pub sentinels: Vec<(Running, u16)>,
}

impl Watched {
    /// Starts them, and returns once every sentinel lists both replicas
    /// with their links up (so a failover can pick either).
    pub fn start(tools: &Tools, kind: Kind, dir: &common::TempDir, lines: &str) -> Watched {
        let first = Server::start(tools, kind, dir, "s0", lines);
        let follow = format!("{lines}replicaof 127.0.0.1 {}\n", first.port);
        let others = [1, 2].map(|i| Server::start(tools, kind, dir, &format!("s{i}"), &follow));
        let replicas = others.each_ref().map(|s| s.port);
        let sentinels = sentinels(tools, dir, first.port, 3);
        let watched = Watched {
            servers: [first].into_iter().chain(others).collect(),
            sentinels,
        };
        let ports = watched.sentinel_ports();
        wait_for("the sentinels to find both replicas", SLOW, || {
            ports
                .iter()
                .all(|&at| {
                    replicas.iter().all(|&r| {
                        listed_replica(at, r)
                            .is_some_and(|f| field(&f, "master-link-status") == "ok")
                    })
                })
                .then_some(())
        });
        watched
    }

    pub fn sentinel_ports(&self) -> Vec<u16> {
        self.sentinels.iter().map(|s| s.1).collect()
    }
}
