//! Scripts that crashed, wedged or exhausted the vendored Lua 5.1 (issue
//! 10, item 1), each named by the CVE of its class. The server runs as its
//! own process, so a crash shows as a closed connection and a wedged
//! script as a timeout, and each test then says which.

mod common;

use std::process::Child;
use std::time::{Duration, Instant};

use redis::{Connection, Value};

/// A reply that takes longer than this counts as a wedged server.
const PATIENCE: Duration = Duration::from_secs(10);

struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start() -> Server {
        let (child, port) = common::spawn_binary(&["--port", "0"]);
        Server { child, port }
    }

    fn connect(&self) -> Connection {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}/", self.port)).unwrap();
        let con = client.get_connection().expect("connects");
        con.set_read_timeout(Some(PATIENCE)).unwrap();
        con
    }

    /// The reply to EVAL `script` with no keys, or its error text. Panics
    /// with a diagnosis if the server died or did not answer in time.
    fn eval(&mut self, con: &mut Connection, script: &str) -> Result<Value, String> {
        let started = Instant::now();
        let reply = redis::cmd("EVAL").arg(script).arg(0).query::<Value>(con);
        match reply {
            Ok(v) => Ok(v),
            Err(e) if e.code().is_some() => Err(format!(
                "{} {}",
                e.code().unwrap_or_default(),
                e.detail().unwrap_or_default()
            )),
            Err(e) => {
                // A crashed server may take a moment to be reaped.
                let deadline = Instant::now() + Duration::from_secs(2);
                let mut died = self.child.try_wait().ok().flatten();
                while died.is_none() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(50));
                    died = self.child.try_wait().ok().flatten();
                }
                panic!(
                    "{script:?}: no reply after {:?} ({e}); server {}",
                    started.elapsed(),
                    match died {
                        Some(status) => format!("died: {status}"),
                        None => "still running (wedged)".into(),
                    }
                )
            }
        }
    }

    /// The raw RESP reply to EVAL `script`, read until the server has
    /// been quiet for a moment.
    fn raw_eval(&self, script: &str) -> Vec<u8> {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let request = format!(
            "*3\r\n$4\r\nEVAL\r\n${}\r\n{script}\r\n$1\r\n0\r\n",
            script.len()
        );
        s.write_all(request.as_bytes()).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let deadline = Instant::now() + PATIENCE;
        let mut out = Vec::new();
        let mut buf = [0u8; 65536];
        while Instant::now() < deadline {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(_) if !out.is_empty() => break,
                Err(_) => {}
            }
        }
        out
    }

    fn assert_alive(&mut self, con: &mut Connection) {
        assert_eq!(
            self.eval(con, "return 'alive'"),
            Ok(Value::BulkString(b"alive".to_vec()))
        );
    }
}

fn int(n: i64) -> Result<Value, String> {
    Ok(Value::Int(n))
}

fn error_containing(reply: Result<Value, String>, text: &str) {
    match reply {
        Err(e) => assert!(e.contains(text), "error {e:?} lacks {text:?}"),
        Ok(v) => panic!("expected an error with {text:?}, got {v:?}"),
    }
}

/// CVE-2025-46817: 5.1's `unpack` computed its count in `int`; this range
/// overflowed it and the process died (SIGSEGV).
#[test]
fn cve_2025_46817_unpack_overflowing_range_is_refused() {
    let mut server = Server::start();
    let mut con = server.connect();
    for script in [
        "return unpack({}, -2^31, 2^31 - 1)",
        "return unpack({}, 0, 2^31 - 1)",
        "return unpack({1, 2}, -2^31)",
    ] {
        error_containing(server.eval(&mut con, script), "too many results to unpack");
    }
    server.assert_alive(&mut con);
}

/// CVE-2025-46817 class: `table.insert` at a far position shifted every
/// index in between, one at a time in C, where SCRIPT KILL cannot reach
/// (2^31 steps for this one). Now it visits only the keys present.
#[test]
fn cve_2025_46817_table_insert_far_position_is_prompt() {
    let mut server = Server::start();
    let mut con = server.connect();
    let started = Instant::now();
    let reply = server.eval(
        &mut con,
        "local t = {1, 2} t[-5] = 'a' t[-3] = 'b' \
         table.insert(t, -2^31 + 1, 'v') \
         local seen = {} \
         for _, i in ipairs({-2^31 + 1, -5, -4, -3, -2, 0, 1, 2, 3}) do \
           seen[#seen + 1] = tostring(t[i]) \
         end \
         return table.concat(seen, ',')",
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    // The same shift 5.1 makes: every index from the position up moves by one.
    assert_eq!(
        reply,
        Ok(Value::BulkString(b"v,nil,a,nil,b,nil,nil,1,2".to_vec()))
    );
    server.assert_alive(&mut con);
}

/// Unbounded C recursion in 5.1's matcher: one level per quantified item,
/// so a pattern of a million `a?` overflowed the C stack and the process
/// died (Redis 7.0.15 dies too). Lua 5.2+ answers "pattern too complex".
#[test]
fn unbounded_pattern_recursion_answers_pattern_too_complex() {
    let mut server = Server::start();
    let mut con = server.connect();
    for call in [
        "string.find(s, p)",
        "string.match(s, p)",
        "string.gsub(s, p, 'x')",
        "s:gmatch(p)()",
    ] {
        let script =
            format!("local s, p = string.rep('a', 1e6), string.rep('a?', 1e6) return {call}");
        error_containing(server.eval(&mut con, &script), "pattern too complex");
    }
    server.assert_alive(&mut con);
}

/// Memory bombs: each is answered with an error or its small result, and
/// the memory goes back: neither the Lua heap nor the process keeps what
/// the attempts took. `string.rep('', 2^31 - 1)` was 2^31 appends in C,
/// which SCRIPT KILL cannot interrupt.
#[test]
fn memory_bombs_fail_cleanly_and_memory_is_returned() {
    let mut server = Server::start();
    let mut con = server.connect();
    let started = Instant::now();
    assert_eq!(
        server.eval(&mut con, "return #string.rep('', 2^31 - 1)"),
        int(0)
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "empty string.rep took {:?}",
        started.elapsed()
    );
    let bombs = [
        "return #string.rep('x', 2^31 - 1)",
        "return #string.rep('abcdefgh', 2^28)",
        "local s = string.rep('x', 2^20) return #string.rep(s, 2^10)",
        "local t = {} for i = 1, 2^24 do t[i] = 'xxxxxxxxxxxxxxxx' .. i end return #table.concat(t)",
        "local t = {} for i = 1, 2^30 do t[i] = i end return #t",
        "local s = 'x' for i = 1, 40 do s = s .. s end return #s",
    ];
    // The allocator keeps some freed memory, so the process may grow by
    // about one heap's worth; a leak would grow it by a heap per bomb.
    let mut rss_after_first = 0;
    for round in 0..4 {
        for bomb in bombs {
            error_containing(server.eval(&mut con, bomb), "ERR Error running script");
        }
        let lua = info_field(&mut con, "used_memory_lua");
        assert!(lua < 16 << 20, "round {round}: Lua keeps {lua} bytes");
        let rss = rss_bytes(server.child.id());
        if round == 0 {
            rss_after_first = rss;
        } else {
            assert!(
                rss < rss_after_first + (192 << 20),
                "round {round}: RSS grew from {rss_after_first} to {rss}"
            );
        }
    }
    server.assert_alive(&mut con);
}

fn info_field(con: &mut Connection, field: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("memory").query(con).unwrap();
    common::info_number(&info, field)
}

fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmRSS");
    kb * 1024
}

/// CVE-2025-49844: 5.1's parser makes the chunk-name string and does not
/// anchor it before the reader runs, so a collection during the first read
/// frees it and the function keeps a dangling name. `load(reader)` without
/// a name used a fresh C literal; now every load path passes a name that
/// is already a live string. A use-after-free does not crash reliably, so
/// this checks what it corrupts: the name in the loaded chunk's errors,
/// over many loads with full collections (and fresh garbage to reuse the
/// freed memory) inside the reader.
#[test]
fn cve_2025_49844_chunk_name_survives_collection_during_load() {
    let mut server = Server::start();
    let mut con = server.connect();
    // Each load runs in its own call, so that no earlier chunk (which
    // would hold the same name) is still reachable from the stack.
    let script = "\
        local function attempt() \
          local sent = false \
          local f = load(function() \
            if sent then return nil end \
            sent = true \
            collectgarbage('collect') \
            local junk = {} \
            for j = 1, 50 do junk[j] = string.rep(string.char(65 + j % 26), 7) .. j end \
            return 'error(\"boom\")' \
          end) \
          local ok, err = pcall(f) \
          return err \
        end \
        local bad = 0 \
        for i = 1, 300 do \
          if attempt() ~= '(load):1: boom' then bad = bad + 1 end \
        end \
        return bad";
    assert_eq!(server.eval(&mut con, script), int(0));
    server.assert_alive(&mut con);
}

/// CVE-2025-46818: the metatables of basic types are shared by every
/// script on a Lua state, so one that changed the string metatable (or
/// the library behind it) changed what later scripts run. Every path to
/// them is read-only, and other types have none to reach.
#[test]
fn cve_2025_46818_basic_type_metatables_cannot_be_changed() {
    let mut server = Server::start();
    let mut con = server.connect();
    let attempts = [
        "getmetatable('').__index = {upper = function() return 'pwned' end}",
        "getmetatable('').__index.upper = function() return 'pwned' end",
        "getmetatable('').__newindex = function() end",
        "rawset(getmetatable(''), '__index', {})",
        "setmetatable(getmetatable(''), {__index = function() return 'pwned' end})",
        "string.upper = function() return 'pwned' end",
        "rawset(string, 'upper', function() return 'pwned' end)",
        "local mt = getmetatable('') rawset(mt.__index, 'upper', nil)",
        "setmetatable(1, {})",
        "debug.setmetatable(1, {__index = function() return 'pwned' end})",
    ];
    for attempt in attempts {
        let reply = server.eval(&mut con, attempt);
        assert!(reply.is_err(), "{attempt:?} was allowed: {reply:?}");
    }
    // Every type but string has no metatable a script could reach.
    assert_eq!(
        server.eval(
            &mut con,
            "return tostring(getmetatable(1)) .. tostring(getmetatable(true)) .. \
             tostring(getmetatable(nil)) .. tostring(getmetatable(type)) .. \
             tostring(getmetatable(coroutine.create(function() end)))"
        ),
        Ok(Value::BulkString(b"nilnilnilnilnil".to_vec()))
    );
    // Later scripts, on whichever Lua state, see the library unchanged.
    for _ in 0..8 {
        assert_eq!(
            server.eval(&mut con, "return ('abc'):upper() .. string.upper('d')"),
            Ok(Value::BulkString(b"ABCD".to_vec()))
        );
    }
}

/// CVE-2021-32626 class: deep or wide values between Lua and replies, and
/// in the libraries that convert structures, must stop at Redis's limits
/// with Redis's errors, never exhaust the Lua or the native stack, and
/// must not fail short of those limits either.
#[test]
fn cve_2021_32626_deep_and_wide_values_stop_at_redis_limits() {
    let mut server = Server::start();
    let mut con = server.connect();
    let bulk = |s: &str| Ok(Value::BulkString(s.as_bytes().to_vec()));
    // Redis answers 1000 nested arrays around the error: read it raw.
    let deep = server.raw_eval("local t = {} for i = 1, 1e6 do t = {t} end return t");
    assert!(
        deep.starts_with(&b"*1\r\n".repeat(1000))
            && deep.ends_with(b"-ERR reached lua stack limit\r\n"),
        "{:?}",
        String::from_utf8_lossy(&deep)
    );
    error_containing(
        server.eval(
            &mut con,
            "local t = {} for i = 1, 9000 do t[i] = i end return redis.call('echo', unpack(t))",
        ),
        "too many results to unpack",
    );
    assert_eq!(
        server.eval(
            &mut con,
            "for i = 1, 100000 do redis.call('rpush', 'big', i) end \
             local items = redis.call('lrange', 'big', 0, -1) \
             return #items + items[100000]"
        ),
        int(200000)
    );
    assert_eq!(
        server.eval(
            &mut con,
            "return type(cjson.decode(string.rep('[', 1000) .. string.rep(']', 1000)))"
        ),
        bulk("table")
    );
    error_containing(
        server.eval(&mut con, "return cjson.decode(string.rep('[', 100000))"),
        "Found too many nested data structures (1001) at character 1001",
    );
    error_containing(
        server.eval(
            &mut con,
            "local t = {} for i = 1, 100000 do t = {t} end return cjson.encode(t)",
        ),
        "Cannot serialise, excessive nesting (1001)",
    );
    error_containing(
        server.eval(&mut con, "local t = {} t[1] = t return cjson.encode(t)"),
        "Cannot serialise, excessive nesting (1001)",
    );
    assert_eq!(
        server.eval(
            &mut con,
            "local t = {} t[1] = t return type(cmsgpack.pack(t))"
        ),
        bulk("string")
    );
    error_containing(
        server.eval(
            &mut con,
            "return cmsgpack.unpack(string.rep('\\145', 100000) .. '\\1')",
        ),
        "ERR",
    );
    error_containing(
        server.eval(
            &mut con,
            "return struct.pack('i' .. string.rep('9', 20), 1)",
        ),
        "integral size overflow",
    );
    error_containing(
        server.eval(&mut con, "return struct.unpack('c2147483647', 'x')"),
        "data string too short",
    );
    server.assert_alive(&mut con);
}

/// CVE-2025-46819: Lua 5.1's lexer mishandled `[[` nested in a level-0
/// long string or comment (an out-of-bounds read; Redis's fix makes such
/// a `[[` plain content). rlockd never hands Lua that case: the long
/// bracket is given a higher level first, in scripts and in loadstring
/// and load inside them.
#[test]
fn cve_2025_46819_nested_long_brackets_are_plain_content() {
    let mut server = Server::start();
    let mut con = server.connect();
    let bulk = |s: &str| Ok(Value::BulkString(s.as_bytes().to_vec()));
    assert_eq!(server.eval(&mut con, "return [[a [[b]]"), bulk("a [[b"));
    assert_eq!(
        server.eval(&mut con, "--[[ [[ ]]\nreturn [[x]=] [[y]]"),
        bulk("x]=] [[y")
    );
    assert_eq!(
        server.eval(&mut con, "return loadstring('return [[a [[b]]')()"),
        bulk("a [[b")
    );
    assert_eq!(
        server.eval(
            &mut con,
            "local parts = {'return [', '[a [', '[b]', ']'} local i = 0 \
             return load(function() i = i + 1 return parts[i] end)()"
        ),
        bulk("a [[b")
    );
    error_containing(
        server.eval(&mut con, "return [[[["),
        "unfinished long string near '<eof>'",
    );
    // The chunk keeps its own text as its name.
    assert_eq!(
        server.eval(&mut con, "return select(2, loadstring('x = [[ [[ [=['))"),
        bulk("[string \"x = [[ [[ [=[\"]:1: unfinished long string near '<eof>'")
    );
    server.assert_alive(&mut con);
}

/// Exponential backtracking in a pattern ran in 5.1's C matcher, where the
/// instruction hook never fires: SCRIPT KILL answered OK and the script
/// ran on for ages. The Rust matcher checks for the kill as it goes. (The
/// script first runs Lua for a moment so the hook has marked it busy,
/// which SCRIPT KILL requires.)
#[test]
fn backtracking_pattern_is_stopped_by_script_kill() {
    let mut server = Server::start();
    let mut admin = server.connect();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("busy-reply-threshold")
        .arg(100)
        .query(&mut admin)
        .unwrap();
    let mut runner = server.connect();
    let script = "local function now() local t = redis.call('time') return t[1] * 1e6 + t[2] end \
        local t0 = now() while now() - t0 < 300000 do end \
        return string.find(string.rep('a', 40), string.rep('a*', 40) .. 'b')";
    let started = Instant::now();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(700));
        redis::cmd("SCRIPT").arg("KILL").query::<String>(&mut admin)
    });
    let reply = server.eval(&mut runner, script);
    assert_eq!(killer.join().unwrap().ok().as_deref(), Some("OK"));
    error_containing(reply, "Script killed by user with SCRIPT KILL");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "ended after {:?}",
        started.elapsed()
    );
    server.assert_alive(&mut runner);
}
