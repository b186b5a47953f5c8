//! rlockd under real Sentinel (`redis-sentinel` 7.0.15, three of them,
//! started here; issue #31 item 1, first slice). Each topology runs twice,
//! side by side: once with rlockd where the test puts it, once with a
//! redis-server there, and what Sentinel makes of the two must agree.
//!
//! - A redis-server primary with two replicas: the sentinels find them
//!   (the primary's INFO, then each replica's own INFO, PING and hellos),
//!   and after a `kill -9` of the primary promote the first in line with
//!   their MULTI / SLAVEOF NO ONE / CONFIG REWRITE / CLIENT KILL TYPE
//!   normal, pubsub / EXEC, which rewrites its config file and drops its
//!   clients; the other replica, and the old primary restarted, are told
//!   to follow it.
//! - That transaction sent by hand to both kinds of replica answers the
//!   same bytes.
//! - redis-py's `Sentinel`, go-redis's `NewFailoverClient` and Redisson's
//!   `useSentinelServers` keep taking a lock through that failover: on the
//!   old primary before, on the promoted replica after.
//! - SENTINEL FAILOVER, a manual switch, promotes a replica of a live
//!   primary and makes the primary follow it.
//! - A primary with no replicas: SENTINEL MASTER's fields, its hellos, and
//!   SENTINEL FAILOVER's refusal.
//!
//! Everything listens on loopback at free ports, with its files in a temp
//! dir; every process is killed when the test ends, failing or not.

mod common;
mod refserver;
#[path = "common/sentinel.rs"]
mod rig;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::blocking::{Running, connect, q};
use redis::Value;
use rig::{
    Kind, NAME, SLOW, Server, Tools, field, fields, listed_replica, sentinel, sentinels, text,
    tools, wait_for,
};

/// Env var that turns a missing client interpreter or package into a
/// failure, as for `tests/real_clients.rs`.
const REQUIRE_CLIENTS_ENV: &str = "RLOCKD_REQUIRE_CLIENTS";

/// A lock client in Sentinel mode that takes and releases a lock on
/// whichever primary the sentinels name, round after round, printing
/// `locked PORT` for each round that held it on the server at PORT.
enum LockProgram {
    /// `tests/clients/redis_py_sentinel.py`, run by this Python.
    RedisPy(PathBuf),
    /// `TestSentinelLockLoop` of `tests/clients/go`, compiled to this
    /// test binary: go-redis's `NewFailoverClient` with redislock.
    GoRedis(PathBuf),
    /// `rlockd.clients.SentinelLockLoop` of `tests/clients/java`: Redisson's
    /// `useSentinelServers`, run by this `java` on this classpath.
    Redisson { java: PathBuf, classpath: String },
}

impl LockProgram {
    /// Every client this machine has, each missing one a SKIP (a failure
    /// with `RLOCKD_REQUIRE_CLIENTS=1`, as `.ci/run` sets).
    fn available(test: &str) -> Vec<LockProgram> {
        let skip = |why: &str| refserver::skip_unless_required(test, why, REQUIRE_CLIENTS_ENV);
        let mut found = Vec::new();
        match refserver::client_python() {
            Ok(python) => found.push(LockProgram::RedisPy(python)),
            Err(why) => skip(&why),
        }
        match go_test_binary() {
            Ok(binary) => found.push(LockProgram::GoRedis(binary)),
            Err(why) => skip(&why),
        }
        let java = refserver::find_tool("java", "RLOCKD_JAVA");
        match (refserver::java_classpath(), java) {
            (Ok(classpath), Some(java)) => found.push(LockProgram::Redisson {
                java,
                classpath: classpath.clone(),
            }),
            (Err(why), _) => skip(why),
            (_, None) => skip("no `java` on PATH (or $RLOCKD_JAVA)"),
        }
        found
    }

    fn name(&self) -> &'static str {
        match self {
            LockProgram::RedisPy(_) => "redis-py",
            LockProgram::GoRedis(_) => "go-redis",
            LockProgram::Redisson { .. } => "redisson",
        }
    }

    fn command(&self, sentinels: &[u16]) -> Command {
        let ports: Vec<String> = sentinels.iter().map(u16::to_string).collect();
        match self {
            LockProgram::RedisPy(python) => {
                let mut command = Command::new(python);
                command
                    .arg(clients_dir().join("redis_py_sentinel.py"))
                    .arg(NAME)
                    .args(ports);
                command
            }
            LockProgram::GoRedis(binary) => {
                let mut command = Command::new(binary);
                command
                    .args(["-test.run", "^TestSentinelLockLoop$"])
                    .env("RLOCKD_SENTINELS", ports.join(","))
                    .env("RLOCKD_MASTER", NAME);
                command
            }
            LockProgram::Redisson { java, classpath } => {
                let mut command = Command::new(java);
                command
                    .args(["-cp", classpath, "rlockd.clients.SentinelLockLoop", NAME])
                    .args(ports);
                command
            }
        }
    }
}

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// Compiles the Go clients' tests (modules from the Go proxy as go.sum
/// pins them) into a binary under the target directory.
fn go_test_binary() -> Result<PathBuf, String> {
    let go = refserver::find_tool("go", "RLOCKD_GO")
        .ok_or("no `go` on PATH (or $RLOCKD_GO): install Go 1.26+ (go.dev/dl)")?;
    let binary = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sentinel-go.test");
    let built = Command::new(go)
        .args(["test", "-c", "-o"])
        .arg(&binary)
        .arg(".")
        .current_dir(clients_dir().join("go"))
        .output()
        .map_err(|e| format!("go does not run: {e}"))?;
    if !built.status.success() {
        return Err(format!(
            "go test -c failed: {}",
            String::from_utf8_lossy(&built.stderr).trim()
        ));
    }
    Ok(binary)
}

/// One lock client running, its `locked PORT` lines read as they come.
struct LockClient {
    _process: Running,
    lines: std::sync::mpsc::Receiver<String>,
}

impl LockClient {
    /// Runs it; its standard input stays open while it runs (the Go client
    /// ends when it closes).
    fn start(mut command: Command) -> LockClient {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the client program starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        LockClient {
            _process: Running::new(child),
            lines,
        }
    }

    /// Waits for a round that held the lock on the server at `port`.
    fn locked_on(&self, port: u16) -> bool {
        let want = format!("locked {port}");
        wait_for(&format!("redis-py to lock on {port}"), SLOW, || match self
            .lines
            .recv_timeout(Duration::from_millis(100))
        {
            Ok(line) => (line == want).then_some(true),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => None,
            Err(e) => panic!("the client program ended: {e}"),
        })
    }
}

/// The values of `names` among `fields`.
fn picked(fields: &[(String, String)], names: &[&str]) -> Vec<String> {
    names.iter().map(|n| field(fields, n).to_string()).collect()
}

/// Runs `topology` with rlockd and with redis-server in the part under
/// test, side by side: (rlockd's, redis-server's).
fn both<T: Send>(tools: &Tools, topology: impl Fn(&Tools, Kind) -> T + Sync) -> (T, T) {
    std::thread::scope(|s| {
        let rlockd = s.spawn(|| topology(tools, Kind::Rlockd));
        let redis = s.spawn(|| topology(tools, Kind::Redis));
        (rlockd.join().unwrap(), redis.join().unwrap())
    })
}

/// A raw client, to see the server close it.
fn raw_client(port: u16, request: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(common::WAIT)).unwrap();
    s.write_all(request).unwrap();
    let mut buf = [0u8; 256];
    let n = s.read(&mut buf).unwrap();
    assert!(n > 0, "an answer to {request:?}");
    s
}

/// Whether the server closed `s` (within `common::WAIT`).
fn closed(mut s: TcpStream) -> bool {
    let deadline = Instant::now() + common::WAIT;
    let mut buf = [0u8; 256];
    while Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return true,
        }
    }
    false
}

fn has_replicaof_line(conf: &Path) -> bool {
    std::fs::read_to_string(conf)
        .unwrap()
        .lines()
        .any(|l| l.starts_with("replicaof") || l.starts_with("slaveof"))
}

/// Waits until sentinel `at` names a primary other than the one at
/// `port`, and gives its port.
fn primary_moved(at: u16, port: u16) -> u16 {
    wait_for("the sentinels to promote a replica", SLOW, || {
        let Value::Array(addr) = sentinel(at, &["GET-MASTER-ADDR-BY-NAME", NAME]) else {
            return None;
        };
        let now: u16 = text(addr.get(1)?.clone()).parse().ok()?;
        (now != port).then_some(now)
    })
}

/// Whether `server`, once a sentinel made it a replica, follows `port`.
fn told_to_follow(server: &Server, port: u16) -> bool {
    wait_for("a server to be made a replica", SLOW, || {
        let info = server.info("replication")?;
        (common::info_value(&info, "role") == "slave")
            .then(|| common::info_value(&info, "master_port") == port.to_string())
    })
}

/// Whether `server`'s link to its primary comes up.
fn link_up(server: &Server) -> bool {
    wait_for("a replica's link to come up", SLOW, || {
        let info = server.info("replication")?;
        (common::info_value(&info, "master_link_status") == "up").then_some(true)
    })
}

/// A `primary` server, and a `kind` replica of it first in line for
/// promotion. The primary is never promoted back once it follows (priority
/// 0), so a loaded machine's stall that looks like a failure to the
/// sentinels cannot move the primary on again.
fn primary_and_replica(
    tools: &Tools,
    primary: Kind,
    kind: Kind,
    dir: &common::TempDir,
) -> (Server, Server) {
    let primary = Server::start(
        tools,
        primary,
        dir,
        "primary",
        "save \"\"\nrepl-diskless-sync-delay 0\nreplica-priority 0\n",
    );
    let replica = Server::start(
        tools,
        kind,
        dir,
        "replica",
        &format!(
            "replicaof 127.0.0.1 {}\nreplica-priority 50\n",
            primary.port
        ),
    );
    (primary, replica)
}

/// What the sentinels made of one run of the failover topology; both
/// kinds of replica must give the same.
#[derive(Debug, PartialEq, Eq)]
struct Failover {
    /// The replica as SENTINEL REPLICAS listed it before the failover:
    /// flags, role-reported, master-link-status, slave-priority.
    listed: Vec<String>,
    /// Its run id is 40 characters, as Sentinel reads it.
    runid_len: usize,
    /// How many other sentinels each one heard of.
    other_sentinels: Vec<usize>,
    /// GET-MASTER-ADDR-BY-NAME named the replica after the kill.
    promoted: bool,
    /// The replica's INFO role afterwards.
    role: String,
    /// CONFIG REWRITE took the replicaof line out of its file.
    replicaof_in_file: bool,
    /// CLIENT KILL TYPE normal and pubsub closed these clients.
    normal_closed: bool,
    pubsub_closed: bool,
    /// SENTINEL MASTER afterwards: flags, role-reported, num-slaves.
    master: Vec<String>,
    /// The other replica was told to follow the promoted one.
    other_follows: bool,
    /// Each Sentinel-mode client held a lock on the primary before the
    /// kill, and on the promoted replica after.
    locked: Vec<(&'static str, bool, bool)>,
    /// The old primary, restarted, was told to follow the replica.
    old_primary_follows: bool,
}

fn failover(tools: &Tools, kind: Kind, programs: &[LockProgram]) -> Failover {
    let dir = common::TempDir::new(&format!("failover-{kind:?}"));
    // All three of one kind: Sentinel over rlockd alone, or over Redis.
    let (primary, replica) = primary_and_replica(tools, kind, kind, &dir);
    // Never promoted either.
    let other = Server::start(
        tools,
        kind,
        &dir,
        "other",
        &format!("replicaof 127.0.0.1 {}\nreplica-priority 0\n", primary.port),
    );
    for server in [&replica, &other] {
        link_up(server);
    }
    let sentinels = sentinels(tools, &dir, primary.port, 3);
    let ports: Vec<u16> = sentinels.iter().map(|s| s.1).collect();
    let listed = wait_for("the sentinels to find the replicas", SLOW, || {
        let all: Vec<_> = ports
            .iter()
            .flat_map(|&s| {
                [
                    listed_replica(s, replica.port),
                    listed_replica(s, other.port),
                ]
            })
            .collect::<Option<_>>()?;
        let ready = |f: &Vec<(String, String)>| {
            field(f, "master-link-status") == "ok" && field(f, "runid").len() == 40
        };
        all.iter().all(ready).then(|| all[0].clone())
    });
    let other_sentinels = wait_for("the sentinels to hear of each other", SLOW, || {
        let counts: Vec<usize> = ports
            .iter()
            .map(|&s| match sentinel(s, &["SENTINELS", NAME]) {
                Value::Array(others) => others.len(),
                _ => 0,
            })
            .collect();
        counts.iter().all(|&n| n == 2).then_some(counts)
    });
    let normal = raw_client(replica.port, b"PING\r\n");
    let pubsub = raw_client(replica.port, b"SUBSCRIBE news\r\n");
    let clients: Vec<(&str, LockClient)> = programs
        .iter()
        .map(|p| (p.name(), LockClient::start(p.command(&ports))))
        .collect();
    let locked_before: Vec<bool> = clients
        .iter()
        .map(|c| c.1.locked_on(primary.port))
        .collect();

    let (old_port, old_conf) = primary.kill();
    let at = ports[0];
    let promoted = primary_moved(at, old_port) == replica.port;
    let role = wait_for("the promoted replica's INFO", SLOW, || {
        Some(common::info_value(&replica.info("replication")?, "role").to_string())
    });
    // Just after the switch the sentinel may not have connected to the new
    // primary yet (`master,disconnected`).
    let master = wait_for("the sentinel to connect to the new primary", SLOW, || {
        let f = fields(sentinel(at, &["MASTER", NAME]));
        (field(&f, "flags") == "master" && field(&f, "role-reported") == "master").then_some(f)
    });

    let locked_after = clients.iter().map(|c| c.1.locked_on(replica.port));
    // The other replica is told to follow it, and syncs from it.
    let other_follows = told_to_follow(&other, replica.port) && link_up(&other);

    // Restarted, the old primary learns from the sentinels whom it follows
    // now, and syncs from it.
    let old = Server::run(tools, kind, old_port, old_conf);
    let old_primary_follows = told_to_follow(&old, replica.port) && link_up(&old);
    drop(sentinels);
    Failover {
        listed: [
            "flags",
            "role-reported",
            "master-link-status",
            "slave-priority",
        ]
        .iter()
        .map(|f| field(&listed, f).to_string())
        .collect(),
        runid_len: field(&listed, "runid").len(),
        other_sentinels,
        promoted,
        role,
        replicaof_in_file: has_replicaof_line(&replica.conf),
        normal_closed: closed(normal),
        pubsub_closed: closed(pubsub),
        master: picked(&master, &["flags", "role-reported", "num-slaves"]),
        other_follows,
        locked: clients
            .iter()
            .map(|c| c.0)
            .zip(locked_before.into_iter().zip(locked_after))
            .map(|(name, (before, after))| (name, before, after))
            .collect(),
        old_primary_follows,
    }
}

#[test]
fn sentinel_fails_over_among_rlockd_servers_as_among_redis_ones() {
    let test = "sentinel_fails_over_among_rlockd_servers_as_among_redis_ones";
    let Some(tools) = tools(test) else {
        return;
    };
    let programs = LockProgram::available(test);
    let (rlockd, redis) = both(&tools, |tools, kind| failover(tools, kind, &programs));
    let expected = Failover {
        listed: ["slave", "slave", "ok", "50"].map(String::from).to_vec(),
        runid_len: 40,
        other_sentinels: vec![2, 2, 2],
        promoted: true,
        role: "master".into(),
        replicaof_in_file: false,
        normal_closed: true,
        pubsub_closed: true,
        master: ["master", "master", "2"].map(String::from).to_vec(),
        other_follows: true,
        locked: programs.iter().map(|c| (c.name(), true, true)).collect(),
        old_primary_follows: true,
    };
    assert_eq!(redis, expected, "redis-server as the replica");
    assert_eq!(rlockd, expected, "rlockd as the replica");
}

/// A command as hiredis sends it.
fn resp(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

/// The transaction a sentinel sends to make a server follow `primary`
/// (`NO ONE`: to promote it), as `sentinelSendSlaveOf` writes it.
fn reconfigure(primary: [&str; 2]) -> Vec<u8> {
    [
        resp(&["MULTI"]),
        resp(&["SLAVEOF", primary[0], primary[1]]),
        resp(&["CONFIG", "REWRITE"]),
        resp(&["CLIENT", "KILL", "TYPE", "normal"]),
        resp(&["CLIENT", "KILL", "TYPE", "pubsub"]),
        resp(&["EXEC"]),
    ]
    .concat()
}

/// What one kind of replica answered to a sentinel's commands, and what
/// its config file said after each transaction.
#[derive(Debug, PartialEq, Eq)]
struct Answers {
    promote: String,
    replicaof_after_promotion: bool,
    normal_closed: bool,
    pubsub_closed: bool,
    demote: String,
    replicaof_after_demotion: Option<String>,
}

fn answers(tools: &Tools, kind: Kind, primary: u16) -> Answers {
    let dir = common::TempDir::new(&format!("transaction-{kind:?}"));
    let replica = Server::start(
        tools,
        kind,
        &dir,
        "replica",
        &format!("replicaof 127.0.0.1 {primary}\n"),
    );
    let addr = ([127, 0, 0, 1], replica.port).into();
    let normal = raw_client(replica.port, b"PING\r\n");
    let pubsub = raw_client(replica.port, b"SUBSCRIBE __sentinel__:hello\r\n");
    let hello = format!(
        "127.0.0.1,26379,{},0,{NAME},127.0.0.1,{primary},0",
        "a".repeat(40)
    );
    let first = [
        resp(&["CLIENT", "SETNAME", "sentinel-aaaaaaaa-cmd"]),
        resp(&["PING"]),
        resp(&["PUBLISH", "__sentinel__:hello", &hello]),
        reconfigure(["NO", "ONE"]),
    ]
    .concat();
    // Each transaction kills its own connection too (`CLIENT KILL TYPE
    // normal`), so an exchange ends when the server closes it: the quiet
    // spell only bounds a server that never does, and a slow CONFIG
    // REWRITE cannot cut a reply short.
    let quiet = common::WAIT;
    let promote = refserver::exchange(addr, &first, quiet);
    let replicaof_after_promotion = has_replicaof_line(&replica.conf);
    let port = primary.to_string();
    let demote = refserver::exchange(addr, &reconfigure(["127.0.0.1", &port]), quiet);
    let file = std::fs::read_to_string(&replica.conf).unwrap();
    Answers {
        promote: refserver::show(&promote, 2000),
        replicaof_after_promotion,
        normal_closed: closed(normal),
        pubsub_closed: closed(pubsub),
        demote: refserver::show(&demote, 2000),
        replicaof_after_demotion: file
            .lines()
            .find(|l| l.starts_with("replicaof"))
            .map(String::from),
    }
}

#[test]
fn sentinels_reconfiguring_transaction_answers_as_redis() {
    let Some(tools) = tools("sentinels_reconfiguring_transaction_answers_as_redis") else {
        return;
    };
    let dir = common::TempDir::new("transaction-primary");
    let primary = Server::start(&tools, Kind::Redis, &dir, "primary", "save \"\"\n");
    let redis = answers(&tools, Kind::Redis, primary.port);
    let rlockd = answers(&tools, Kind::Rlockd, primary.port);
    assert_eq!(rlockd, redis);
    assert!(!redis.replicaof_after_promotion && redis.normal_closed && redis.pubsub_closed);
    assert_eq!(
        redis.replicaof_after_demotion,
        Some(format!("replicaof 127.0.0.1 {}", primary.port))
    );
}

/// What a lone sentinel made of a primary with no replicas.
#[derive(Debug, PartialEq, Eq)]
struct Alone {
    /// SENTINEL MASTER's field names, and flags, role-reported, num-slaves.
    names: Vec<String>,
    master: Vec<String>,
    /// A hello the sentinel published on the primary named it.
    hello_heard: bool,
    /// SENTINEL FAILOVER's answer.
    failover: String,
}

fn alone(tools: &Tools, kind: Kind) -> Alone {
    let dir = common::TempDir::new(&format!("alone-{kind:?}"));
    let primary = Server::start(tools, kind, &dir, "primary", "save \"\"\n");
    let mut listener = raw_client(primary.port, b"SUBSCRIBE __sentinel__:hello\r\n");
    let sentinels = sentinels(tools, &dir, primary.port, 1);
    let at = sentinels[0].1;
    let master = wait_for("the sentinel to see the primary", SLOW, || {
        let f = fields(sentinel(at, &["MASTER", NAME]));
        (field(&f, "role-reported") == "master" && field(&f, "info-refresh") != "0").then_some(f)
    });
    let expected = format!(",{NAME},127.0.0.1,{},", primary.port);
    let mut heard = Vec::new();
    let hello_heard = wait_for("a hello on the primary", SLOW, || {
        let mut buf = [0u8; 1024];
        if let Ok(n) = listener.read(&mut buf) {
            heard.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&heard)
            .contains(&expected)
            .then_some(true)
    });
    let failover = match redis::cmd("SENTINEL")
        .arg("FAILOVER")
        .arg(NAME)
        .query::<Value>(&mut connect(at))
    {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or("")),
    };
    Alone {
        names: master.iter().map(|(n, _)| n.clone()).collect(),
        master: picked(&master, &["flags", "role-reported", "num-slaves"]),
        hello_heard,
        failover,
    }
}

#[test]
fn a_primary_alone_under_sentinel_answers_as_redis() {
    let Some(tools) = tools("a_primary_alone_under_sentinel_answers_as_redis") else {
        return;
    };
    let (rlockd, redis) = both(&tools, alone);
    assert_eq!(rlockd, redis);
    assert_eq!(redis.master, ["master", "master", "0"]);
    assert!(redis.hello_heard);
    assert_eq!(redis.failover, "NOGOODSLAVE No suitable replica to promote");
}

/// What SENTINEL FAILOVER, a manual switch, made of a live primary and its
/// replica.
#[derive(Debug, PartialEq, Eq)]
struct Manual {
    /// SENTINEL REPLICAS left it out while it said `replica_announced:0`.
    unannounced_hidden: bool,
    answer: String,
    promoted: bool,
    replicaof_in_file: bool,
    /// The primary, still up, was told to follow its former replica.
    primary_follows: bool,
}

fn manual(tools: &Tools, kind: Kind) -> Manual {
    let dir = common::TempDir::new(&format!("manual-{kind:?}"));
    let (primary, replica) = primary_and_replica(tools, Kind::Redis, kind, &dir);
    let sentinels = sentinels(tools, &dir, primary.port, 1);
    let at = sentinels[0].1;
    wait_for("the sentinel to find the replica in sync", SLOW, || {
        let f = listed_replica(at, replica.port)?;
        (field(&f, "master-link-status") == "ok").then_some(())
    });
    // `replica-announced no` hides it from what Sentinel tells clients.
    let announce = |yes: &str| {
        q(
            &mut connect(replica.port),
            &["CONFIG", "SET", "replica-announced", yes],
        )
    };
    announce("no");
    let unannounced_hidden = wait_for("the sentinel to hide the replica", SLOW, || {
        listed_replica(at, replica.port).is_none().then_some(true)
    });
    announce("yes");
    wait_for("the sentinel to list the replica again", SLOW, || {
        listed_replica(at, replica.port)
    });
    let answer = text(sentinel(at, &["FAILOVER", NAME]));
    let promoted = primary_moved(at, primary.port) == replica.port;
    Manual {
        unannounced_hidden,
        answer,
        promoted,
        replicaof_in_file: has_replicaof_line(&replica.conf),
        primary_follows: told_to_follow(&primary, replica.port),
    }
}

#[test]
fn a_manual_failover_promotes_an_rlockd_replica_as_a_redis_one() {
    let Some(tools) = tools("a_manual_failover_promotes_an_rlockd_replica_as_a_redis_one") else {
        return;
    };
    let (rlockd, redis) = both(&tools, manual);
    let expected = Manual {
        unannounced_hidden: true,
        answer: "OK".into(),
        promoted: true,
        replicaof_in_file: false,
        primary_follows: true,
    };
    assert_eq!(redis, expected, "redis-server as the replica");
    assert_eq!(rlockd, expected, "rlockd as the replica");
}

/// INFO replication's `master_sync_*` lines, the seconds since the last
/// bytes left out (they tick).
fn sync_lines(info: &str) -> Vec<String> {
    info.lines()
        .filter(|l| l.starts_with("master_sync_") && !l.starts_with("master_sync_last_io"))
        .map(String::from)
        .collect()
}

/// While a full sync's payload comes in (before its header, part way
/// through a `$<len>` one, part way through a diskless one), INFO
/// replication's `master_sync_*` fields read as a Redis replica's do.
#[test]
fn info_while_a_sync_transfers_answers_as_redis() {
    let Some(tools) = tools("info_while_a_sync_transfers_answers_as_redis") else {
        return;
    };
    let mark = "m".repeat(40);
    let payloads = [
        String::new(),
        "$100\r\n0123456789".to_string(),
        format!("$EOF:{mark}\r\n0123456789"),
    ];
    for (i, payload) in payloads.iter().enumerate() {
        let dir = common::TempDir::new(&format!("transfer-{i}"));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let follow = format!(
            "replicaof 127.0.0.1 {}\n",
            listener.local_addr().unwrap().port()
        );
        let mut seen = Vec::new();
        let mut links = Vec::new();
        let mut servers = Vec::new();
        for kind in [Kind::Rlockd, Kind::Redis] {
            let server = Server::start(&tools, kind, &dir, &format!("{kind:?}"), &follow);
            let (mut link, _) = common::fake_primary::handshake_seen(&listener);
            link.write_all(payload.as_bytes()).unwrap();
            let read = if payload.is_empty() { "0" } else { "10" };
            let lines = wait_for("the replica to read the payload", SLOW, || {
                let lines = sync_lines(&server.info("replication")?);
                lines
                    .contains(&format!("master_sync_read_bytes:{read}"))
                    .then_some(lines)
            });
            seen.push(lines);
            links.push(link);
            servers.push(server);
        }
        assert_eq!(seen[0], seen[1], "payload {payload:?}");
    }
}
