//! The real `redis-cli` against rlockd, compared with the same runs
//! against a real `redis-server`: one-shot commands, piped stdin, and an
//! interactive session on a pseudo-terminal (which exercises the
//! `COMMAND DOCS` hints that redis-cli fetches at start-up), and `monitor`
//! on one while another client takes and releases a Redisson lock.
//!
//! Skips without redis-server/redis-cli unless `RLOCKD_REQUIRE_REDIS=1`;
//! `CONFORMANCE_SELF_TEST=1` runs a second redis-server instead of rlockd.

mod refserver;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use refserver::{RedisServer, Subject, finish, flushall};

const CLI_TIMEOUT: Duration = Duration::from_secs(20);

/// How an output is normalised before comparing.
#[derive(Clone, Copy)]
enum Norm {
    Exact,
    /// Order-independent: compare the sorted lines.
    SortLines,
    /// Keep only the lines from the first one starting with this text.
    From(&'static str),
}

/// One redis-cli run: its arguments (after `-p PORT`) and its stdin.
struct Run {
    args: Vec<String>,
    stdin: Option<Vec<u8>>,
    norm: Norm,
}

fn run(args: &[&str]) -> Run {
    Run {
        args: args.iter().map(|s| s.to_string()).collect(),
        stdin: None,
        norm: Norm::Exact,
    }
}

fn run_stdin(args: &[&str], stdin: &str) -> Run {
    Run {
        stdin: Some(stdin.as_bytes().to_vec()),
        ..run(args)
    }
}

fn run_norm(args: &[&str], norm: Norm) -> Run {
    Run { norm, ..run(args) }
}

struct Output {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    code: Option<i32>,
}

/// Runs `cmd` with `stdin`, killing it after `timeout`.
fn output_with_timeout(mut cmd: Command, stdin: Option<Vec<u8>>, timeout: Duration) -> Output {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
    }
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let deadline = Instant::now() + timeout;
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break Some(-999);
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Output {
        stdout: out_t.join().unwrap(),
        stderr: err_t.join().unwrap(),
        code,
    }
}

/// What a run printed, normalised, with its exit code and the port
/// replaced by `PORT`.
fn transcript(cli: &Path, port: u16, r: &Run) -> String {
    let mut cmd = Command::new(cli);
    cmd.args(["-p", &port.to_string()]).args(&r.args);
    let out = output_with_timeout(cmd, r.stdin.clone(), CLI_TIMEOUT);
    let norm = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes).replace(&port.to_string(), "PORT");
        match r.norm {
            Norm::Exact => text,
            Norm::SortLines => {
                let mut lines: Vec<&str> = text.lines().collect();
                lines.sort();
                lines.join("\n")
            }
            Norm::From(marker) => match text.find(marker) {
                Some(at) => text[at..].to_string(),
                None => text,
            },
        }
    };
    let mut t = format!("$ redis-cli {}\n", r.args.join(" "));
    for (label, bytes) in [("", &out.stdout), ("[stderr] ", &out.stderr)] {
        if !bytes.is_empty() {
            t.push_str(label);
            t.push_str(&norm(bytes));
            if !t.ends_with('\n') {
                t.push_str("[no newline]\n");
            }
        }
    }
    t.push_str(&format!("[exit {:?}]\n", out.code));
    t
}

/// Groups of redis-cli runs; each group starts on an empty server.
fn one_shot_groups() -> Vec<(&'static str, Vec<Run>)> {
    vec![
        (
            "ping",
            vec![
                run(&["PING"]),
                run(&["--no-raw", "PING"]),
                run(&["PING", "hello"]),
            ],
        ),
        (
            "strings",
            vec![
                run(&["SET", "k", "v"]),
                run(&["GET", "k"]),
                run(&["--no-raw", "GET", "k"]),
                run(&["GET", "missing"]),
                run(&["--no-raw", "GET", "missing"]),
                run(&["-3", "--no-raw", "GET", "missing"]),
                run(&["SET", "n", "10"]),
                run(&["--no-raw", "INCRBY", "n", "5"]),
                run(&["-r", "3", "INCR", "n"]),
                run(&["--no-raw", "MGET", "k", "missing", "n"]),
                run(&["--csv", "MGET", "k", "missing", "n"]),
                run(&["SET", "spaced", "a b\tc\nd"]),
                run(&["GET", "spaced"]),
                run(&["--no-raw", "GET", "spaced"]),
                run(&["SET", "bin", "caf\u{e9} \u{1}"]),
                run(&["--no-raw", "GET", "bin"]),
                run(&["--json", "GET", "bin"]),
                run(&["--quoted-json", "GET", "bin"]),
                run(&["--no-raw", "SET", "t", "v", "EX", "100"]),
                run(&["--no-raw", "TTL", "t"]),
                run(&["--no-raw", "TYPE", "t"]),
                run(&["--no-raw", "STRLEN", "t"]),
            ],
        ),
        (
            "hashes",
            vec![
                run(&["HSET", "h", "a", "1", "b", "2"]),
                run(&["HGETALL", "h"]),
                run(&["--no-raw", "HGETALL", "h"]),
                run(&["-3", "HGETALL", "h"]),
                run(&["-3", "--no-raw", "HGETALL", "h"]),
                run(&["--csv", "HGETALL", "h"]),
                run(&["--json", "HGETALL", "h"]),
                run(&["-2", "--json", "HGETALL", "h"]),
                run(&["-d", ",", "HGETALL", "h"]),
                run(&["--no-raw", "HMGET", "h", "a", "nope"]),
                run(&["--no-raw", "HINCRBYFLOAT", "h", "f", "1.5"]),
                run(&["--no-raw", "HSCAN", "h", "0"]),
                run(&["--no-raw", "HGETALL", "missing"]),
                run(&["-3", "--no-raw", "HGETALL", "missing"]),
            ],
        ),
        (
            "errors",
            vec![
                run(&["NOSUCH"]),
                run(&["--no-raw", "NOSUCH", "a", "b"]),
                run(&["GET"]),
                run(&["SET", "s", "x"]),
                run(&["INCR", "s"]),
                run(&["-e", "INCR", "s"]),
                run(&["-e", "--no-raw", "HGET", "s", "f"]),
                run(&["--no-raw", "EXEC"]),
                run(&["--no-raw", "SELECT", "99"]),
            ],
        ),
        (
            "databases",
            vec![
                run(&["-n", "2", "SET", "z", "1"]),
                run(&["-n", "2", "DBSIZE"]),
                run(&["DBSIZE"]),
                run(&["-n", "2", "--no-raw", "KEYS", "*"]),
                run(&["-n", "2", "FLUSHDB"]),
                run(&["-n", "2", "DBSIZE"]),
            ],
        ),
        (
            "stdin argument",
            vec![
                run_stdin(&["-x", "SET", "x"], "from stdin\n"),
                run(&["--no-raw", "GET", "x"]),
                run_stdin(&["-x", "HSET", "h", "f"], "v"),
                run(&["HGET", "h", "f"]),
            ],
        ),
        (
            "scan",
            vec![
                run(&["MSET", "k1", "1", "k2", "22", "k3", "333", "other", "x"]),
                run(&["HSET", "kh", "f", "v"]),
                run_norm(&["--scan"], Norm::SortLines),
                run_norm(&["--scan", "--pattern", "k*"], Norm::SortLines),
                run_norm(
                    &["--scan", "--pattern", "k*", "--count", "1"],
                    Norm::SortLines,
                ),
                run_norm(&["KEYS", "k?"], Norm::SortLines),
                run_norm(&["--bigkeys"], Norm::From("-------- summary")),
            ],
        ),
        (
            "misc",
            vec![
                run(&["--no-raw", "COMMAND", "GETKEYS", "SET", "k", "v"]),
                run(&["--no-raw", "CONFIG", "GET", "databases"]),
                run(&["-3", "--no-raw", "CONFIG", "GET", "databases"]),
                run(&["--no-raw", "CLIENT", "GETNAME"]),
                run(&["--no-raw", "ECHO", ""]),
                run(&["--no-raw", "DBSIZE"]),
                run(&["--no-raw", "EXISTS", "a"]),
            ],
        ),
        (
            "pipe mode",
            vec![
                run_stdin(
                    &["--pipe"],
                    "SET a 1\r\nSET b 2\r\nINCR a\r\n*3\r\n$4\r\nHSET\r\n$1\r\nh\r\n$1\r\nf\r\n",
                ),
                run_stdin(&["--pipe"], "*2\r\n$3\r\nGET\r\n$1\r\na\r\nINCR h\r\n"),
                run(&["MGET", "a", "b"]),
            ],
        ),
        (
            "piped stdin",
            vec![
                run_stdin(
                    &[],
                    "PING\nSET a 1\nGET a\nINCR a\nHSET h f v g w\nHGETALL h\nNOSUCH x\n\
                     MULTI\nSET x 1\nINCR x\nEXEC\nGET missing\nSELECT 1\nDBSIZE\n",
                ),
                run_stdin(
                    &["--no-raw"],
                    "PING\nGET a\nHGETALL h\nNOSUCH x\nMULTI\nINCR x\nHGET h f\nEXEC\n\
                     GET missing\nSET \"quoted key\" 'single quoted'\nGET \"quoted key\"\n",
                ),
                run_stdin(
                    &["-3", "--no-raw"],
                    "HGETALL h\nGET missing\nMGET a missing\n",
                ),
            ],
        ),
    ]
}

#[test]
fn one_shot_and_piped_output_matches_redis() {
    let (Some(server_bin), Some(cli)) = (
        refserver::redis_server_path("redis_cli"),
        refserver::redis_cli_path("redis_cli"),
    ) else {
        return;
    };
    let started = Instant::now();
    let redis = RedisServer::start(&server_bin);
    let subject = Subject::start(&server_bin);
    let groups = one_shot_groups();
    let mut diffs = Vec::new();
    let mut runs = 0;
    for (name, group) in &groups {
        flushall(redis.addr, None);
        flushall(subject.addr(), None);
        for r in group {
            runs += 1;
            let a = transcript(&cli, redis.port(), r);
            let b = transcript(&cli, subject.port(), r);
            if a != b {
                diffs.push(format!(
                    "\n[{name}]\n--- redis-server:\n{a}--- {}:\n{b}",
                    subject.name()
                ));
            }
        }
    }
    finish(
        &format!("redis-cli: {runs} runs in {} groups", groups.len()),
        started,
        diffs,
    );
}

// ---------------------------------------------------------------------------
// Interactive mode, on a pseudo-terminal made by script(1).

/// An interactive redis-cli on a pseudo-terminal, and what it has shown.
struct Terminal {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    screen: Arc<Mutex<Vec<u8>>>,
    reader: std::thread::JoinHandle<()>,
    port: String,
}

impl Terminal {
    fn open(cli: &Path, script: &Path, addr: SocketAddr) -> Terminal {
        let port = addr.port().to_string();
        // A fixed terminal size keeps linenoise from asking the terminal
        // for its cursor position (whose answer never comes here).
        let inner = format!(
            "stty cols 200 rows 50; exec {} -p {port}",
            shell_quote(&cli.display().to_string())
        );
        let mut child = Command::new(script)
            .args(["-qfec", &inner, "/dev/null"])
            .env("TERM", "xterm")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run script(1)");
        let screen = Arc::new(Mutex::new(Vec::new()));
        let mut out = child.stdout.take().unwrap();
        let reader = {
            let screen = screen.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = out.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    screen.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            })
        };
        let stdin = child.stdin.take().unwrap();
        Terminal {
            child,
            stdin,
            screen,
            reader,
            port,
        }
    }

    fn prompt(&self) -> String {
        format!("127.0.0.1:{}> ", self.port)
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).into_owned()
    }

    /// Waits until the screen satisfies `done`, or the deadline passes.
    fn wait_until(&self, deadline: Instant, done: impl Fn(&str) -> bool) {
        while !done(&self.screen()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn type_keys(&mut self, keys: &str) {
        let _ = self.stdin.write_all(keys.as_bytes());
        let _ = self.stdin.flush();
    }

    /// Waits for redis-cli to exit (killed at the deadline); the whole
    /// screen, the port replaced by PORT.
    fn close(mut self, deadline: Instant) -> String {
        while self.child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(self.stdin);
        let _ = self.child.wait();
        let _ = self.reader.join();
        let screen = String::from_utf8_lossy(&self.screen.lock().unwrap()).into_owned();
        screen.replace(&self.port, "PORT")
    }
}

/// Types `lines` into an interactive redis-cli, one after each prompt,
/// and returns everything the terminal showed (port replaced by PORT).
fn interactive(cli: &Path, script: &Path, addr: SocketAddr, lines: &[&str]) -> String {
    let mut term = Terminal::open(cli, script, addr);
    let prompt = term.prompt();
    let prompts_after_reply = |s: &str| {
        // The first prompt, then one after every reply (they follow "\n").
        let first = usize::from(s.contains(&prompt));
        first + s.matches(&format!("\n{prompt}")).count()
    };
    let deadline = Instant::now() + CLI_TIMEOUT;
    for (i, line) in lines.iter().enumerate() {
        // Wait for the prompt that follows the previous reply.
        term.wait_until(deadline, |s| prompts_after_reply(s) > i);
        term.type_keys(&format!("{line}\r"));
    }
    term.close(deadline)
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The lines of a terminal transcript with escape sequences and the
/// line-editing redraws removed: what a person reads on the screen.
fn visible_lines(screen: &str) -> Vec<String> {
    let mut plain = String::new();
    let mut chars = screen.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                while let Some(&n) = chars.peek() {
                    chars.next();
                    if n.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        plain.push(c);
    }
    plain
        .split('\n')
        .map(|l| {
            // A redraw starts again at column 0: keep the last version.
            let l = l.trim_end_matches('\r');
            l.rsplit('\r').next().unwrap_or(l).to_string()
        })
        .collect()
}

#[test]
fn interactive_session_matches_redis() {
    let (Some(server_bin), Some(cli)) = (
        refserver::redis_server_path("redis_cli interactive"),
        refserver::redis_cli_path("redis_cli interactive"),
    ) else {
        return;
    };
    let Some(script) = refserver::require_tool("redis_cli interactive", "script", "SCRIPT") else {
        return;
    };
    let started = Instant::now();
    let lines = [
        "PING",
        "SET k v",
        "GET k",
        "HSET h f v",
        "HGETALL h",
        "SET k v EX 100 NX",
        "HINCRBY h n 5",
        "GET nosuchkey",
        "NOSUCH command",
        "quit",
    ];
    let redis = RedisServer::start(&server_bin);
    let subject = Subject::start(&server_bin);
    let theirs = interactive(&cli, &script, redis.addr, &lines);
    let ours = interactive(&cli, &script, subject.addr(), &lines);

    // What a person sees after typing, against rlockd.
    let seen = visible_lines(&ours);
    let expect = [
        "PORT> PING",
        "PONG",
        "PORT> SET k v",
        "OK",
        "PORT> GET k",
        "\"v\"",
        "PORT> HSET h f v",
        "(integer) 1",
        "PORT> HGETALL h",
        "1) \"f\"",
        "2) \"v\"",
        "PORT> SET k v EX 100 NX",
        "(nil)",
        "PORT> HINCRBY h n 5",
        "(integer) 5",
        "PORT> GET nosuchkey",
        "(nil)",
        "PORT> NOSUCH command",
        "(error) ERR unknown command 'NOSUCH', with args beginning with: 'command' ",
        "PORT> quit",
    ];
    let seen_text = seen.join("\n");
    let mut at = 0;
    for want in expect {
        match seen[at..].iter().position(|l| l.ends_with(want)) {
            Some(p) => at += p + 1,
            None => panic!(
                "interactive redis-cli against {}: expected a line ending with {want:?} \
                 after line {at}; the screen showed:\n{seen_text}",
                subject.name()
            ),
        }
    }
    let errors: Vec<&String> = seen
        .iter()
        .filter(|l| l.contains("ERR") && !l.contains("unknown command 'NOSUCH'"))
        .collect();
    assert!(
        errors.is_empty(),
        "unexpected errors on the screen: {errors:?}\n{seen_text}"
    );

    // The whole terminal stream, hints included (redis-cli builds its
    // hints from COMMAND DOCS), must be what redis-server gives.
    let mut diffs = Vec::new();
    if theirs != ours {
        let a = visible_lines(&theirs);
        let b = visible_lines(&ours);
        let mut report = String::from("\n[interactive] terminal output differs");
        let raw_a: Vec<&str> = theirs.split('\n').collect();
        let raw_b: Vec<&str> = ours.split('\n').collect();
        for i in 0..raw_a.len().max(raw_b.len()) {
            let (x, y) = (raw_a.get(i), raw_b.get(i));
            if x != y {
                report.push_str(&format!(
                    "\n  line {i}:\n    redis-server: {:?}\n    {:<14}{:?}",
                    x.unwrap_or(&""),
                    format!("{}:", subject.name()),
                    y.unwrap_or(&"")
                ));
            }
        }
        if a != b {
            report.push_str("\n  (the visible text differs too)");
        }
        report.push('\n');
        diffs.push(report);
    }
    finish("redis-cli interactive: 1 session", started, diffs);
}

// ---------------------------------------------------------------------------
// `monitor` in an interactive redis-cli while another client takes and
// releases a Redisson lock.

const LOCK_SCRIPT: &str = include_str!("../src/command/scripting/lock_scripts/redisson_lock.lua");
const UNLOCK_SCRIPT: &str =
    include_str!("../src/command/scripting/lock_scripts/redisson_unlock.lua");

/// Sends one command as RESP and returns its reply (one simple frame).
fn send(stream: &mut std::net::TcpStream, args: &[&str]) -> String {
    let mut frame = format!("*{}\r\n", args.len());
    for a in args {
        frame.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    stream.write_all(frame.as_bytes()).unwrap();
    let mut reply = Vec::new();
    let mut buf = [0u8; 512];
    // A bulk string is two lines, anything else here one.
    while !(reply.ends_with(b"\r\n")
        && (reply.first() != Some(&b'$')
            || reply.starts_with(b"$-1")
            || reply.windows(2).filter(|w| w == b"\r\n").count() == 2))
    {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the server closed the connection");
        reply.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&reply).into_owned()
}

/// The MONITOR lines a terminal showed, each without its timestamp and
/// with the client's port as PORT: `[0 127.0.0.1:PORT] "evalsha" ...`.
fn monitor_lines(screen: &str) -> Vec<String> {
    visible_lines(screen)
        .iter()
        .filter_map(|l| {
            let (stamp, rest) = l.split_once(' ')?;
            let is_stamp = stamp.split_once('.').is_some_and(|(s, us)| {
                s.bytes().all(|b| b.is_ascii_digit()) && us.bytes().all(|b| b.is_ascii_digit())
            });
            if !is_stamp || !rest.starts_with('[') {
                return None;
            }
            let (who, command) = rest.split_once("] ")?;
            let who = match who.rsplit_once(':') {
                Some((host, _)) => format!("{host}:PORT"),
                None => who.to_string(),
            };
            Some(format!("{who}] {command}"))
        })
        .collect()
}

/// Runs `monitor` in an interactive redis-cli while another connection
/// takes the lock twice (reentrant), releases it twice (the second
/// release publishes the unlock message); the lines the terminal showed.
fn monitor_a_lock(cli: &Path, script: &Path, addr: SocketAddr) -> Vec<String> {
    let deadline = Instant::now() + CLI_TIMEOUT;
    let mut term = Terminal::open(cli, script, addr);
    let prompt = term.prompt();
    term.wait_until(deadline, |s| s.contains(&prompt));
    term.type_keys("monitor\r");
    term.wait_until(deadline, |s| s.contains("OK"));

    let mut client = std::net::TcpStream::connect(addr).unwrap();
    let sha = send(&mut client, &["SCRIPT", "LOAD", LOCK_SCRIPT]);
    let sha = sha.lines().nth(1).unwrap_or_default().to_string();
    let lock = ["EVALSHA", &sha, "1", "{L}", "30000", "owner-a:1"];
    assert_eq!(send(&mut client, &lock), "$-1\r\n");
    assert_eq!(send(&mut client, &lock), "$-1\r\n");
    let unlock = [
        "EVAL",
        UNLOCK_SCRIPT,
        "2",
        "{L}",
        "redisson_lock__channel:{L}",
        "0",
        "30000",
        "owner-a:1",
    ];
    assert_eq!(send(&mut client, &unlock), ":0\r\n");
    assert_eq!(send(&mut client, &unlock), ":1\r\n");

    term.wait_until(deadline, |s| s.contains("\"publish\""));
    // Monitor mode reads until the connection ends: stop the terminal now.
    monitor_lines(&term.close(Instant::now()))
}

#[test]
fn interactive_monitor_shows_a_redisson_lock() {
    let (Some(server_bin), Some(cli)) = (
        refserver::redis_server_path("redis_cli monitor"),
        refserver::redis_cli_path("redis_cli monitor"),
    ) else {
        return;
    };
    let Some(script) = refserver::require_tool("redis_cli monitor", "script", "SCRIPT") else {
        return;
    };
    let redis = RedisServer::start(&server_bin);
    let subject = Subject::start(&server_bin);
    let theirs = monitor_a_lock(&cli, &script, redis.addr);
    let ours = monitor_a_lock(&cli, &script, subject.addr());

    // What the operator sees: the client's script calls, then each call
    // the script makes, as `[0 lua]`.
    let client = "[0 127.0.0.1:PORT]";
    let lock_calls = [
        "[0 lua] \"exists\" \"{L}\"",
        "[0 lua] \"hincrby\" \"{L}\" \"owner-a:1\" \"1\"",
        "[0 lua] \"pexpire\" \"{L}\" \"30000\"",
    ];
    for want in [
        format!("{client} \"SCRIPT\" \"LOAD\""),
        format!("{client} \"EVALSHA\""),
        lock_calls[0].to_string(),
        lock_calls[1].to_string(),
        lock_calls[2].to_string(),
        "[0 lua] \"hexists\" \"{L}\" \"owner-a:1\"".to_string(),
        format!("{client} \"EVAL\""),
        "[0 lua] \"hincrby\" \"{L}\" \"owner-a:1\" \"-1\"".to_string(),
        "[0 lua] \"del\" \"{L}\"".to_string(),
        "[0 lua] \"publish\" \"redisson_lock__channel:{L}\" \"0\"".to_string(),
    ] {
        assert!(
            ours.iter().any(|l| l.starts_with(&want)),
            "{}: no MONITOR line starting with {want:?} in:\n{}",
            subject.name(),
            ours.join("\n")
        );
    }
    assert_eq!(
        theirs,
        ours,
        "MONITOR lines (without timestamps and ports): redis-server, then {}",
        subject.name()
    );
}
