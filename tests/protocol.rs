//! Raw-socket protocol tests: the same bytes go to a real `redis-server`
//! and to rlockd, and everything that comes back (until the server closes
//! the connection or goes quiet) must be byte-for-byte the same.
//!
//! Skips without redis-server unless `RLOCKD_REQUIRE_REDIS=1`;
//! `CONFORMANCE_SELF_TEST=1` runs a second redis-server instead of rlockd.

mod refserver;

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use refserver::{RedisServer, Subject, exchange, exchange_chunks, flushall, show};

/// How long a connection must stay silent before its answer is complete.
const QUIET: Duration = Duration::from_millis(300);

struct Case {
    name: &'static str,
    chunks: Vec<Vec<u8>>,
    /// Pause between chunks.
    gap: Duration,
}

fn case(name: &'static str, bytes: impl AsRef<[u8]>) -> Case {
    Case {
        name,
        chunks: vec![bytes.as_ref().to_vec()],
        gap: Duration::ZERO,
    }
}

fn multibulk(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn open_cases() -> Vec<Case> {
    let mut cases = vec![
        // Inline commands
        case("inline PING", "PING\r\n"),
        case("inline PING, LF only", "PING\n"),
        case("inline lower case", "ping\r\necho hi\r\n"),
        case("inline double quotes", "SET a \"b c\"\r\nGET a\r\n"),
        case("inline single quotes", "ECHO 'x y'\r\n"),
        case("inline escapes", "ECHO \"a\\x41\\n\\t\\\\\\\"\"\r\n"),
        case("inline single-quote escape", "ECHO 'it\\'s'\r\n"),
        case("inline empty quoted argument", "ECHO \"\"\r\n"),
        case("inline extra spaces", "   SET    k    v   \r\nGET k\r\n"),
        case("inline tabs", "SET\tk\tv\r\nGET\tk\r\n"),
        case("inline empty lines", "\r\n\r\n\n  \r\nPING\r\n"),
        case("inline unknown command", "NOSUCH a b\r\n"),
        case("inline wrong arity", "GET\r\n"),
        case("inline bare CR", "ECHO a\rb\r\n"),
        // Multibulk requests
        case("multibulk PING", multibulk(&[b"PING"])),
        case("multibulk binary", multibulk(&[b"ECHO", b"\x00\r\n\xff"])),
        case("multibulk empty", "*0\r\nPING\r\n"),
        case("multibulk negative", "*-1\r\nPING\r\n"),
        case("multibulk -5", "*-5\r\nPING\r\n"),
        case(
            "multibulk empty command name",
            "*1\r\n$0\r\n\r\n*2\r\n$0\r\n\r\n$1\r\nx\r\n",
        ),
        case(
            "multibulk incomplete, then nothing",
            "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n",
        ),
        case("mixed inline and multibulk", {
            let mut b = b"SET a 1\r\n".to_vec();
            b.extend(multibulk(&[b"INCR", b"a"]));
            b.extend_from_slice(b"GET a\r\n");
            b.extend(multibulk(&[b"GET", b"a"]));
            b
        }),
        case("big bulk value", {
            let v = vec![b'x'; 1 << 20];
            let mut b = multibulk(&[b"SET", b"big", &v]);
            b.extend(multibulk(&[b"STRLEN", b"big"]));
            b.extend(multibulk(&[b"GET", b"big"]));
            b
        }),
        case("many arguments", {
            let mut args: Vec<Vec<u8>> = vec![b"DEL".to_vec()];
            args.extend((0..10_000).map(|i| format!("key{i}").into_bytes()));
            let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
            multibulk(&refs)
        }),
        case("QUIT inline, then more", "PING\r\nQUIT\r\nPING\r\n"),
        case("QUIT multibulk", {
            let mut b = multibulk(&[b"QUIT"]);
            b.extend(multibulk(&[b"PING"]));
            b
        }),
        // Protocol errors: an error reply, then the connection is closed.
        case("unbalanced double quote", "SET a \"b c\r\nPING\r\n"),
        case("unbalanced single quote", "ECHO 'x y\r\n"),
        case("quote followed by a letter", "ECHO \"x\"y\r\n"),
        case("invalid multibulk length", "*abc\r\n"),
        case("multibulk length with junk", "*1x\r\n"),
        case("multibulk length over INT_MAX", "*2147483648\r\n"),
        case("invalid bulk length", "*1\r\n$x\r\n"),
        case("negative bulk length", "*1\r\n$-1\r\n"),
        case("bulk length over 512MB", "*1\r\n$536870913\r\n"),
        case("expected $", "*1\r\nfoo\r\n"),
        case(
            "expected $ on the second argument",
            "*2\r\n$4\r\nECHO\r\n:1\r\n",
        ),
        case("error after good commands", "PING\r\nPING\r\n*1\r\nfoo\r\n"),
        case("too big inline request", vec![b'a'; 70 * 1024]),
        case("too big multibulk count string", {
            let mut b = b"*".to_vec();
            b.extend(vec![b'1'; 70 * 1024]);
            b
        }),
        case("too big bulk count string", {
            let mut b = b"*1\r\n$".to_vec();
            b.extend(vec![b'1'; 70 * 1024]);
            b
        }),
    ];

    // Pipelining: 1000 commands in one write.
    let mut pipeline = Vec::new();
    for i in 0..1000 {
        let key = format!("k{}", i % 10);
        let val = i.to_string();
        match i % 4 {
            0 => pipeline.extend(multibulk(&[b"SET", key.as_bytes(), val.as_bytes()])),
            1 => pipeline.extend(multibulk(&[b"INCR", b"counter"])),
            2 => pipeline.extend(format!("GET {key}\r\n").into_bytes()),
            _ => pipeline.extend(multibulk(&[b"HSET", b"h", key.as_bytes(), val.as_bytes()])),
        }
    }
    cases.push(case("pipeline of 1000 commands", pipeline));

    // A request split into many writes, one byte at a time.
    let split = [
        multibulk(&[b"SET", b"k", b"split value"]),
        b"GET k\r\n".to_vec(),
    ]
    .concat();
    cases.push(Case {
        name: "one byte per write",
        chunks: split.iter().map(|&b| vec![b]).collect(),
        gap: Duration::from_millis(1),
    });
    cases.push(Case {
        name: "split between CR and LF",
        chunks: vec![
            b"*1\r".to_vec(),
            b"\n$4\r".to_vec(),
            b"\nPING\r".to_vec(),
            b"\nPING\r".to_vec(),
            b"\n".to_vec(),
        ],
        gap: Duration::from_millis(20),
    });
    // HTTP sent to the port (cross protocol scripting): no reply, the
    // connection dropped, replies already made included.
    cases.extend([
        case(
            "HTTP POST",
            "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4\r\n\r\nPING",
        ),
        case(
            "HTTP GET with a Host header",
            "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        ),
        case("Host: as a multibulk request", multibulk(&[b"HOST:", b"x"])),
        case("post after replies", "PING\r\nSET k v\r\npost\r\nPING\r\n"),
        case(
            "POST inside MULTI",
            "MULTI\r\nSET k v\r\nPOST x\r\nEXEC\r\n",
        ),
        // The classic attack: point `dir` at a directory to plant a file
        // in, then have the server write there. Protected configs refuse
        // it, alone or hidden among harmless settings, in MULTI and from a
        // script.
        case(
            "protected configs: the dir attack",
            "CONFIG SET dir /root/.ssh\r\nCONFIG SET dbfilename authorized_keys\r\n\
             CONFIG SET appendonly no dir /etc/cron.d\r\nCONFIG GET appendonly\r\n",
        ),
        case(
            "protected configs in MULTI and scripts",
            "MULTI\r\nCONFIG SET dir /tmp\r\nEXEC\r\n\
             EVAL \"return redis.pcall('config', 'set', 'dir', '/tmp')\" 0\r\n",
        ),
    ]);
    cases
}

/// Cases for a server that requires a password: limits for clients that
/// have not authenticated yet.
fn auth_cases() -> Vec<Case> {
    vec![
        case("NOAUTH", "GET k\r\nPING\r\n"),
        case("wrong password", "AUTH wrong\r\nGET k\r\n"),
        case("right password", "AUTH secret\r\nSET k v\r\nGET k\r\n"),
        case("AUTH default user", "AUTH default secret\r\nPING\r\n"),
        case("AUTH other user", "AUTH nobody secret\r\n"),
        case("unauthenticated multibulk length", "*11\r\n"),
        case("unauthenticated multibulk length ok", {
            let args: Vec<&[u8]> = vec![b"PING"];
            let mut b = multibulk(&args);
            b.extend_from_slice(b"*10\r\n");
            b
        }),
        case("unauthenticated bulk length", "*1\r\n$16385\r\n"),
        case("authenticated bulk length", {
            let v = vec![b'y'; 20_000];
            let mut b = b"AUTH secret\r\n".to_vec();
            b.extend(multibulk(&[b"ECHO", &v]));
            b
        }),
        case("HELLO without AUTH", "HELLO 2 SETNAME x\r\n"),
        case("QUIT without AUTH", "QUIT\r\n"),
        case("HTTP before AUTH", "POST / HTTP/1.1\r\nHost: x\r\n\r\n"),
    ]
}

/// Runs the cases on `WORKERS` pairs of servers at once (each case waits
/// out a quiet period, so running them one by one would be slow) and
/// returns the differences, in case order.
fn run_cases(bin: &Path, label: &str, cases: &[Case], password: Option<&str>) -> Vec<String> {
    const WORKERS: usize = 8;
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, String)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..WORKERS.min(cases.len()) {
            s.spawn(|| {
                let redis = RedisServer::start_with(bin, password);
                let subject = Subject::start_with(bin, password);
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(c) = cases.get(i) else { break };
                    flushall(redis.addr, password);
                    flushall(subject.addr(), password);
                    let (a, b) = std::thread::scope(|s| {
                        let a = s.spawn(|| exchange_chunks(redis.addr, &c.chunks, c.gap, QUIET));
                        let b =
                            s.spawn(|| exchange_chunks(subject.addr(), &c.chunks, c.gap, QUIET));
                        (a.join().unwrap(), b.join().unwrap())
                    });
                    if a != b {
                        let report = format!(
                            "\n[{label}] {}\n  sent:         {}\n  redis-server: {}\n  {:<14}{}\n",
                            c.name,
                            show(&c.chunks.concat(), 200),
                            show(&a, 1500),
                            format!("{}:", subject.name()),
                            show(&b, 1500)
                        );
                        results.lock().unwrap().push((i, report));
                    }
                }
            });
        }
    });
    let mut diffs = results.into_inner().unwrap();
    diffs.sort();
    diffs.into_iter().map(|(_, d)| d).collect()
}

#[test]
fn raw_protocol_matches_redis() {
    let Some(bin) = refserver::redis_server_path("protocol") else {
        return;
    };
    let started = Instant::now();
    let open = open_cases();
    let auth = auth_cases();
    let mut diffs = run_cases(&bin, "no password", &open, None);
    diffs.extend(run_cases(&bin, "requirepass", &auth, Some("secret")));

    let what = format!("protocol: {} raw exchanges", open.len() + auth.len());
    refserver::finish(&what, started, diffs);
}

/// rlockd's documented difference (docs/compatibility.md): a request with more than
/// 1,048,576 arguments is refused, where Redis 7.0 waits for them.
#[test]
fn multibulk_over_one_million_is_refused() {
    if refserver::self_test() {
        return;
    }
    let server = refserver::Rlockd::start();
    let got = exchange(server.addr, b"*1048577\r\n", QUIET);
    assert_eq!(
        show(&got, 200),
        show(
            b"-ERR Protocol error: invalid multibulk length\r\n<closed>",
            200
        )
    );
    let got = exchange(server.addr, b"*1048576\r\n", QUIET);
    assert!(!got.ends_with(b"<closed>"), "{}", show(&got, 200));
}

/// CLIENT INFO's fields that do not depend on the process (ids, ports,
/// ages, allocator sizes), as `name=value`, in order: the running client's
/// `qbuf` counts its request and whatever was pipelined behind it, as in
/// Redis, whose query buffer is trimmed only after the batch has run.
/// `lib-name`/`lib-ver` (CLIENT SETINFO, Redis 7.2, docs/compatibility.md)
/// are left out.
fn stable_client_fields(reply: &[u8]) -> Vec<String> {
    const VARYING: &[&str] = &[
        "id",
        "addr",
        "laddr",
        "fd",
        "age",
        "idle",
        "qbuf-free",
        "argv-mem",
        "rbs",
        "rbp",
        "tot-mem",
        "lib-name",
        "lib-ver",
    ];
    let text = String::from_utf8_lossy(reply);
    let line = text.lines().nth(1).unwrap_or_default();
    line.split(' ')
        .map(|field| match field.split_once('=') {
            Some((name, _)) if VARYING.contains(&name) => name.to_string(),
            _ => field.to_string(),
        })
        .filter(|f| !f.starts_with("lib-"))
        .collect()
}

#[test]
fn client_info_fields_match_redis() {
    let Some(bin) = refserver::redis_server_path("protocol") else {
        return;
    };
    let redis = RedisServer::start(&bin);
    let subject = Subject::start(&bin);
    let requests: [(&str, Vec<u8>); 3] = [
        ("multibulk", multibulk(&[b"CLIENT", b"INFO"])),
        ("inline", b"CLIENT INFO\r\n".to_vec()),
        (
            "pipelined",
            [multibulk(&[b"CLIENT", b"LIST"]), multibulk(&[b"PING"])].concat(),
        ),
    ];
    let mut diffs = Vec::new();
    for (name, bytes) in &requests {
        let want = stable_client_fields(&exchange(redis.addr, bytes, QUIET));
        let got = stable_client_fields(&exchange(subject.addr(), bytes, QUIET));
        assert!(want.iter().any(|f| f.starts_with("qbuf=")), "{want:?}");
        if want != got {
            diffs.push(format!(
                "\n[{name}]\n  redis-server: {want:?}\n  {:<14}{got:?}\n",
                subject.name()
            ));
        }
    }
    refserver::finish("protocol: CLIENT INFO fields", Instant::now(), diffs);
}
