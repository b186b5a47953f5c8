//! Shared support for the differential tests (conformance, redis-cli,
//! raw protocol): finding the real Redis tools, running a throwaway
//! `redis-server`, running rlockd in-process, and the skip/require rule.
#![allow(dead_code)]

pub mod pki;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Env var that turns a missing Redis tool from a skip into a failure.
pub const REQUIRE_ENV: &str = "RLOCKD_REQUIRE_REDIS";

/// Env var that makes the "rlockd" side a second real redis-server, to
/// check that a test's cases are deterministic against Redis itself.
pub const SELF_TEST_ENV: &str = "CONFORMANCE_SELF_TEST";

/// Writes straight to the process's stderr, past the test harness's
/// output capture, so the line shows in a plain `cargo test` run.
pub fn loud(msg: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{msg}");
    let _ = err.flush();
}

pub fn env_flag(name: &str) -> bool {
    matches!(
        std::env::var(name).as_deref(),
        Ok("1") | Ok("true") | Ok("yes")
    )
}

pub fn self_test() -> bool {
    env_flag(SELF_TEST_ENV)
}

/// Finds a Redis tool: `$env_var` if set, else `name` on PATH.
pub fn find_tool(name: &str, env_var: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env_var).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Returns the tool's path, or `None` after announcing a SKIP. Panics
/// instead of skipping when `RLOCKD_REQUIRE_REDIS=1`.
pub fn require_tool(test: &str, name: &str, env_var: &str) -> Option<PathBuf> {
    if let Some(p) = find_tool(name, env_var) {
        return Some(p);
    }
    skip_unless_required(
        test,
        &format!(
            "`{name}` not found on PATH (or ${env_var}): apt-get install redis-server redis-tools"
        ),
        REQUIRE_ENV,
    );
    None
}

/// Announces that `test` passes without testing because of `reason`, or
/// panics instead when `$require_env` is set (as CI sets it), so that a
/// missing dependency cannot turn a CI run green.
pub fn skip_unless_required(test: &str, reason: &str, require_env: &str) {
    if env_flag(require_env) {
        panic!("{test}: {reason}, and {require_env}=1");
    }
    loud(&format!(
        "\n=== SKIP {test}: {reason}. Passing without testing. ===\n"
    ));
    record_skip(test, reason);
}

/// Where this `cargo test` run's skips are noted for `tests/zz_skipped.rs`
/// to list at its end: one file per run, named by the cargo process that
/// runs every test binary of it, so an earlier run's skips never show.
pub fn skip_record() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("skipped")
        .join(format!("{}.txt", std::os::unix::process::parent_id()))
}

/// Appends `test: reason` as one line (one write, so tests of a binary
/// skipping at once do not interleave).
fn record_skip(test: &str, reason: &str) {
    let path = skip_record();
    let line = format!("{test}: {}\n", reason.replace('\n', " "));
    let written = std::fs::create_dir_all(path.parent().unwrap()).and_then(|()| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?
            .write_all(line.as_bytes())
    });
    if let Err(e) = written {
        loud(&format!("cannot note the skip in {}: {e}", path.display()));
    }
}

/// The Python with the pinned client packages: `$RLOCKD_PYTHON`, else the
/// project's `.venv` (as `.ci/run` makes it), else `python3` on PATH.
pub fn project_python() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    match std::env::var_os("RLOCKD_PYTHON") {
        None if venv.is_file() => Some(venv),
        _ => find_tool("python3", "RLOCKD_PYTHON"),
    }
}

/// A Python with the client packages of `tests/clients/requirements.txt`:
/// [`project_python`] if it has them, else a venv under `target/` made
/// and filled on first use (pip needs no root; one setup per test binary,
/// kept for the next). `Err` says what is missing and how to install it.
pub fn client_python() -> Result<PathBuf, String> {
    static SETUP: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let has_packages = |python: &Path| {
        Command::new(python)
            .args(["-c", "import redis, redis_lock, pytest_redis"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let python =
        project_python().ok_or("no python3 on PATH: apt-get install python3 python3-venv")?;
    if has_packages(&python) || std::env::var_os("RLOCKD_PYTHON").is_some() {
        return Ok(python);
    }
    let _one_at_a_time = SETUP.lock().unwrap_or_else(|e| e.into_inner());
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("clients-venv");
    let venv_python = venv.join("bin/python");
    if has_packages(&venv_python) {
        return Ok(venv_python);
    }
    let requirements = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/requirements.txt");
    loud(&format!(
        "setting up {} (pip install -r {})",
        venv.display(),
        requirements.display()
    ));
    let ran = |cmd: &mut Command| {
        cmd.output()
            .map_err(|e| e.to_string())
            .and_then(|o| match o.status.success() {
                true => Ok(()),
                false => Err(String::from_utf8_lossy(&o.stderr).trim().to_string()),
            })
    };
    ran(Command::new(&python).arg("-m").arg("venv").arg(&venv))
        .and_then(|()| {
            ran(Command::new(&venv_python)
                .args(["-m", "pip", "install", "-q", "-r"])
                .arg(&requirements))
        })
        .map(|()| venv_python)
        .map_err(|why| {
            format!(
                "no client packages, and setting up {} failed ({why}): apt-get install python3-venv, and reach PyPI",
                venv.display()
            )
        })
}

/// The classpath of the built Java module (`mvn test-compile`, once per
/// test binary), or why there is none.
pub fn java_classpath() -> &'static Result<String, String> {
    static CLASSPATH: std::sync::OnceLock<Result<String, String>> = std::sync::OnceLock::new();
    CLASSPATH.get_or_init(|| {
        let mvn = find_tool("mvn", "RLOCKD_MVN")
            .ok_or("no `mvn` on PATH (or $RLOCKD_MVN): apt-get install maven")?;
        find_tool("java", "RLOCKD_JAVA").ok_or(
            "no `java` on PATH (or $RLOCKD_JAVA): apt-get install openjdk-17-jdk-headless maven",
        )?;
        let module = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/java");
        let built = Command::new(mvn)
            .args(["-q", "-B", "test-compile"])
            .current_dir(&module)
            .output()
            .map_err(|e| format!("cannot run mvn: {e}"))?;
        if !built.status.success() {
            return Err(format!(
                "mvn test-compile failed in {}:\n{}{}",
                module.display(),
                String::from_utf8_lossy(&built.stdout),
                String::from_utf8_lossy(&built.stderr)
            ));
        }
        let deps = std::fs::read_to_string(module.join("target/test-classpath.txt"))
            .map_err(|e| format!("no classpath file after mvn: {e}"))?;
        Ok(format!(
            "{}:{}",
            module.join("target/test-classes").display(),
            deps.trim()
        ))
    })
}

pub fn redis_server_path(test: &str) -> Option<PathBuf> {
    require_tool(test, "redis-server", "REDIS_SERVER")
}

pub fn redis_cli_path(test: &str) -> Option<PathBuf> {
    require_tool(test, "redis-cli", "REDIS_CLI")
}

/// A loopback port free a moment ago, for a server that must be told one.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A fresh directory for one test's files (sockets, certificates),
/// removed with what is left in it when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    /// `kind` names the tests it is for in the directory's name.
    pub fn new(kind: &str) -> TempDir {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("rlockd-{kind}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    pub fn root(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// How a test server is set up.
#[derive(Debug, Clone, Copy, Default)]
pub struct Setup<'a> {
    /// `requirepass`.
    pub password: Option<&'a str>,
    /// A one-node Redis Cluster owning every slot.
    pub cluster: bool,
    /// The append-only files the reference server starts from, with
    /// `appendonly yes`: a directory (copied as its `appendonlydir`) or an
    /// old single file (copied as `appendonly.aof`). rlockd ignores it.
    pub aof: Option<&'a Path>,
    /// A TLS port beside the plain one, with the certificates of this
    /// directory (`pki::Pki`'s) and `tls-auth-clients optional`.
    pub tls: Option<&'a Path>,
    /// `enable-protected-configs` (`yes`, `local`): who may CONFIG SET
    /// `dir`.
    pub protected_configs: Option<&'a str>,
    /// A snapshot the reference server starts from (its own directory
    /// gets a copy, as `dump.rdb`). rlockd ignores it.
    pub rdb: Option<&'a Path>,
}

impl<'a> Setup<'a> {
    /// A TLS port beside the plain one, with `pki`'s certificates.
    pub fn over_tls(pki: &'a pki::Pki) -> Setup<'a> {
        Setup {
            tls: Some(pki.dir()),
            ..Setup::default()
        }
    }
}

/// The `tls-*` settings of `Setup::tls`, as directive and value.
fn tls_settings(dir: &Path) -> [(&'static str, String); 4] {
    let file = |name: &str| dir.join(name).to_str().unwrap().to_string();
    [
        ("tls-cert-file", file("server.pem")),
        ("tls-key-file", file("server.key")),
        ("tls-ca-cert-file", file("ca.pem")),
        ("tls-auth-clients", "optional".to_string()),
    ]
}

/// Redis puts a node's cluster bus 10000 above its port and refuses a
/// port whose bus port would not fit.
const CLUSTER_PORT_MAX: u16 = 55535;

/// A free port that a cluster node may use.
fn free_cluster_port() -> u16 {
    loop {
        let port = free_port();
        if port <= CLUSTER_PORT_MAX {
            return port;
        }
    }
}

/// Turns a fresh cluster node into a one-node cluster: every slot
/// assigned to it, and the cluster state `ok` (Redis waits about two
/// seconds after startup before it says so).
fn claim_all_slots(addr: SocketAddr) -> Result<(), String> {
    let mut s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(|e| e.to_string())?;
    let mut ask = |cmd: &[u8]| -> Result<String, String> {
        s.write_all(cmd).map_err(|e| e.to_string())?;
        let mut buf = vec![0u8; 4096];
        let n = s.read(&mut buf).map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
    };
    let added = ask(b"CLUSTER ADDSLOTSRANGE 0 16383\r\n")?;
    if added != "+OK\r\n" {
        return Err(format!("CLUSTER ADDSLOTSRANGE answered {added:?}"));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if ask(b"CLUSTER INFO\r\n")?.contains("cluster_state:ok") {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err("cluster_state did not become ok".into())
}

/// A `redis-server` child on a free loopback port, with persistence off.
/// Killed when dropped.
pub struct RedisServer {
    child: Child,
    pub addr: SocketAddr,
    /// With `Setup::tls`.
    pub tls_port: Option<u16>,
    dir: PathBuf,
}

impl RedisServer {
    pub fn start(bin: &Path) -> RedisServer {
        RedisServer::start_with(bin, None)
    }

    /// Like `start`, with `requirepass` set when `password` is given.
    pub fn start_with(bin: &Path, password: Option<&str>) -> RedisServer {
        RedisServer::start_setup(
            bin,
            Setup {
                password,
                ..Setup::default()
            },
        )
    }

    /// A cluster node gets a fresh cluster config file in its own temporary
    /// directory, announces 127.0.0.1 (as rlockd reports the address a
    /// client reached it at), and owns every slot before this returns.
    pub fn start_setup(bin: &Path, setup: Setup) -> RedisServer {
        let mut last_err = String::new();
        for _ in 0..5 {
            let port = if setup.cluster {
                free_cluster_port()
            } else {
                free_port()
            };
            let dir =
                std::env::temp_dir().join(format!("rlockd-ref-{}-{}", std::process::id(), port));
            std::fs::create_dir_all(&dir).expect("temp dir");
            let mut extra: Vec<std::ffi::OsString> = Vec::new();
            if let Some(p) = setup.password {
                extra.extend(["--requirepass".into(), p.into()]);
            }
            if let Some(aof) = setup.aof {
                copy_aof(aof, &dir);
                extra.extend(["--appendonly".into(), "yes".into()]);
            }
            if let Some(who) = setup.protected_configs {
                extra.extend(["--enable-protected-configs".into(), who.into()]);
            }
            let tls_port = setup.tls.map(|dir| {
                let port = free_port();
                extra.extend(["--tls-port".into(), port.to_string().into()]);
                for (name, value) in tls_settings(dir) {
                    extra.extend([format!("--{name}").into(), value.into()]);
                }
                port
            });
            if let Some(rdb) = setup.rdb {
                std::fs::copy(rdb, dir.join("dump.rdb")).expect("a copy of the snapshot");
            }
            if setup.cluster {
                extra.extend([
                    "--cluster-enabled".into(),
                    "yes".into(),
                    "--cluster-announce-ip".into(),
                    "127.0.0.1".into(),
                    "--cluster-config-file".into(),
                    dir.join("nodes.conf").into(),
                ]);
            }
            let child = Command::new(bin)
                .args(["--port", &port.to_string()])
                .args(["--bind", "127.0.0.1"])
                .args(["--save", ""])
                .args(["--appendonly", "no"])
                .args(["--daemonize", "no"])
                .args(["--enable-debug-command", "yes"])
                .args(["--loglevel", "warning"])
                .args(&extra)
                .arg("--dir")
                .arg(&dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn();
            let mut child = match child {
                Ok(c) => c,
                Err(e) => panic!("cannot run {}: {e}", bin.display()),
            };
            let addr: SocketAddr = ([127, 0, 0, 1], port).into();
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                if let Ok(Some(status)) = child.try_wait() {
                    last_err = format!("redis-server on port {port} exited: {status}");
                    break;
                }
                // Another test's server may have taken the port between
                // its pick and this bind: then ours exits, but the other
                // answers PING meanwhile.
                if ping(addr) && !serves_pid(addr, setup.password, child.id()) {
                    let _ = child.kill();
                    let _ = child.wait();
                    last_err = format!("another server answered on port {port}");
                    break;
                }
                if ping(addr) {
                    let server = RedisServer {
                        child,
                        addr,
                        tls_port,
                        dir,
                    };
                    if setup.cluster
                        && let Err(e) = claim_all_slots(addr)
                    {
                        panic!("redis-server on port {port}: {e}");
                    }
                    return server;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    last_err = format!("redis-server on port {port} did not answer PING");
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
        panic!("could not start redis-server: {last_err}");
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Its `dir`, where SAVE writes `dump.rdb`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Copies an AOF directory's files, or a single file, into `dir`.
fn copy_aof(aof: &Path, dir: &Path) {
    if !aof.is_dir() {
        std::fs::copy(aof, dir.join("appendonly.aof")).expect("a copy of the AOF");
        return;
    }
    let target = dir.join("appendonlydir");
    std::fs::create_dir_all(&target).expect("the AOF directory");
    for entry in std::fs::read_dir(aof).expect("the AOF directory reads") {
        let entry = entry.expect("a directory entry");
        std::fs::copy(entry.path(), target.join(entry.file_name())).expect("a copy of the AOF");
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// True when a server at `addr` answers `PING` (with `+PONG`, or with
/// `-NOAUTH` when it wants a password).
pub fn ping(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 7];
    s.read_exact(&mut buf).is_ok() && (&buf == b"+PONG\r\n" || &buf == b"-NOAUTH")
}

/// Whether the server at `addr` is the process `pid` (INFO's
/// `process_id`), authenticating first when it has a password.
fn serves_pid(addr: SocketAddr, password: Option<&str>, pid: u32) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let mut request = String::new();
    if let Some(p) = password {
        request += &format!("*2\r\n$4\r\nAUTH\r\n${}\r\n{p}\r\n", p.len());
    }
    request += "INFO server\r\nQUIT\r\n";
    if s.write_all(request.as_bytes()).is_err() {
        return false;
    }
    // QUIT closes the connection once everything before it is answered.
    let mut text = Vec::new();
    let _ = s.read_to_end(&mut text);
    String::from_utf8_lossy(&text).contains(&format!("\r\nprocess_id:{pid}\r\n"))
}

/// rlockd running in this process on its own runtime, on a free loopback
/// port. Shut down when dropped.
pub struct Rlockd {
    _server: rlockd::BlockingServer,
    pub addr: SocketAddr,
    /// With `Setup::tls`.
    pub tls_port: Option<u16>,
    /// Its own `dir`, as the reference has, so a snapshot (DEBUG RELOAD)
    /// lands there and no other server loads it.
    dir: PathBuf,
}

impl Drop for Rlockd {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Rlockd {
    pub fn start() -> Rlockd {
        Rlockd::start_with(None)
    }

    /// Like `start`, with `requirepass` set when `password` is given.
    pub fn start_with(password: Option<&str>) -> Rlockd {
        Rlockd::start_setup(Setup {
            password,
            ..Setup::default()
        })
    }

    pub fn start_setup(setup: Setup) -> Rlockd {
        static STARTED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("rlockd-sub-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        // DEBUG on both sides, as the reference's command line allows it.
        let mut config = rlockd::Config {
            enable_debug_command: rlockd::DebugCommand::Yes,
            dir: dir.to_string_lossy().into_owned(),
            ..rlockd::Config::default()
        };
        if let Some(who) = setup.protected_configs {
            config
                .apply_directive("enable-protected-configs", &[who.to_string()])
                .expect("a valid enable-protected-configs");
        }
        if let Some(dir) = setup.tls {
            for (name, value) in tls_settings(dir) {
                config.apply_directive(name, &[value]).unwrap();
            }
        }
        let mut builder = rlockd::Server::builder()
            .config(config)
            .port(0)
            .cluster_enabled(setup.cluster);
        if setup.tls.is_some() {
            // Port 0 beside a TLS port would mean TLS alone.
            builder = builder.port(free_port()).tls_port(0);
        }
        if let Some(p) = setup.password {
            builder = builder.requirepass(p);
        }
        let server = builder.start_blocking().expect("rlockd starts");
        Rlockd {
            addr: server.addr(),
            tls_port: server.tls_addrs().first().map(|a| a.port()),
            _server: server,
            dir,
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Closes every client connection (see `ServerHandle::drop_connections`).
    pub fn drop_connections(&self) -> usize {
        self._server.drop_connections()
    }
}

/// The server under test: rlockd, or in self-test mode a second
/// redis-server, so that a test can check its own determinism.
pub enum Subject {
    Rlockd(Rlockd),
    Redis(RedisServer),
}

impl Subject {
    pub fn start(redis_bin: &Path) -> Subject {
        Subject::start_with(redis_bin, None)
    }

    /// Like `start`, with `requirepass` set when `password` is given.
    pub fn start_with(redis_bin: &Path, password: Option<&str>) -> Subject {
        Subject::start_setup(
            redis_bin,
            Setup {
                password,
                ..Setup::default()
            },
        )
    }

    pub fn start_setup(redis_bin: &Path, setup: Setup) -> Subject {
        if self_test() {
            Subject::Redis(RedisServer::start_setup(redis_bin, setup))
        } else {
            Subject::Rlockd(Rlockd::start_setup(setup))
        }
    }

    pub fn addr(&self) -> SocketAddr {
        match self {
            Subject::Rlockd(r) => r.addr,
            Subject::Redis(r) => r.addr,
        }
    }

    pub fn port(&self) -> u16 {
        self.addr().port()
    }

    /// The TLS port, with `Setup::tls`.
    pub fn tls_port(&self) -> Option<u16> {
        match self {
            Subject::Rlockd(r) => r.tls_port,
            Subject::Redis(r) => r.tls_port,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Subject::Rlockd(_) => "rlockd",
            Subject::Redis(_) => "redis-server#2",
        }
    }

    /// Closes every client connection: rlockd's own hook, or `CLIENT KILL`
    /// of every normal and pub/sub client on redis-server.
    pub fn drop_connections(&self, password: Option<&str>) {
        match self {
            Subject::Rlockd(r) => {
                r.drop_connections();
            }
            Subject::Redis(r) => {
                let mut req = Vec::new();
                if let Some(p) = password {
                    req.extend_from_slice(
                        format!("*2\r\n$4\r\nAUTH\r\n${}\r\n{p}\r\n", p.len()).as_bytes(),
                    );
                }
                for kind in ["normal", "pubsub"] {
                    req.extend_from_slice(
                        format!(
                            "*4\r\n$6\r\nCLIENT\r\n$4\r\nKILL\r\n$4\r\nTYPE\r\n${}\r\n{kind}\r\n",
                            kind.len()
                        )
                        .as_bytes(),
                    );
                }
                // Every reply read, so both kills are done on return.
                let replies = usize::from(password.is_some()) + 2;
                let got = exchange_lines(r.addr, &req, replies);
                assert!(
                    got.starts_with(b"+OK") || got.starts_with(b":"),
                    "CLIENT KILL on {}: {}",
                    r.addr,
                    show(&got, 300)
                );
            }
        }
    }
}

/// Which server a run of a real-client scenario talks to.
pub enum Target {
    Redis(PathBuf),
    Rlockd,
}

impl Target {
    pub fn start(&self, setup: Setup) -> Subject {
        match self {
            Target::Redis(bin) => Subject::Redis(RedisServer::start_setup(bin, setup)),
            Target::Rlockd => Subject::Rlockd(Rlockd::start_setup(setup)),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Target::Redis(_) => "redis-server",
            Target::Rlockd => "rlockd",
        }
    }

    /// Why a scenario that fails on this target fails.
    pub fn blame(&self) -> &'static str {
        match self {
            Target::Redis(_) => "it fails on redis-server too, so the client program is wrong",
            Target::Rlockd => "it passes on redis-server, so rlockd differs",
        }
    }
}

/// redis-server first (when installed), then rlockd: a scenario that fails
/// only on rlockd is rlockd's fault, not the client program's.
pub fn targets(test: &str) -> Vec<Target> {
    redis_server_path(test)
        .map(Target::Redis)
        .into_iter()
        .chain([Target::Rlockd])
        .collect()
}

/// Sends `bytes` on a new connection and returns everything that comes
/// back until the server closes the connection or stays quiet for
/// `quiet`. `<closed>` is appended when the server closed it.
pub fn exchange(addr: SocketAddr, bytes: &[u8], quiet: Duration) -> Vec<u8> {
    exchange_chunks(addr, &[bytes.to_vec()], Duration::ZERO, quiet)
}

/// Sends `bytes` and reads `replies` one-line replies (`+OK`, `:N`,
/// errors), or what came before the server closed; fails past 30 s.
fn exchange_lines(addr: SocketAddr, bytes: &[u8], replies: usize) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(bytes).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while out.windows(2).filter(|w| w == b"\r\n").count() < replies {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => panic!("{addr}: {e} after {}", show(&out, 300)),
        }
    }
    out
}

/// Like `exchange`, sending the chunks as separate writes `gap` apart.
pub fn exchange_chunks(
    addr: SocketAddr,
    chunks: &[Vec<u8>],
    gap: Duration,
    quiet: Duration,
) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(quiet)).unwrap();
    let mut out = Vec::new();
    // Write from another thread, so that a large request cannot deadlock
    // with a server that answers while we are still sending.
    let mut writer = s.try_clone().unwrap();
    let chunks = chunks.to_vec();
    let sender = std::thread::spawn(move || {
        for (i, c) in chunks.iter().enumerate() {
            if i > 0 {
                std::thread::sleep(gap);
            }
            if writer.write_all(c).is_err() {
                break;
            }
        }
    });
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => {
                out.extend_from_slice(b"<closed>");
                break;
            }
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                if sender.is_finished() {
                    break;
                }
            }
            Err(_) => {
                out.extend_from_slice(b"<closed>");
                break;
            }
        }
    }
    let _ = sender.join();
    out
}

/// Empties every database of the server at `addr`.
pub fn flushall(addr: SocketAddr, password: Option<&str>) {
    let mut req = Vec::new();
    if let Some(p) = password {
        req.extend_from_slice(format!("*2\r\n$4\r\nAUTH\r\n${}\r\n{p}\r\n", p.len()).as_bytes());
    }
    req.extend_from_slice(b"*1\r\n$8\r\nFLUSHALL\r\n*1\r\n$4\r\nQUIT\r\n");
    let got = exchange(addr, &req, Duration::from_secs(5));
    assert!(
        got.ends_with(b"+OK\r\n+OK\r\n<closed>"),
        "FLUSHALL on {addr}: {}",
        show(&got, 300)
    );
}

/// Renders bytes readably on one line: printable ASCII as is, CR, LF,
/// tab and backslash as `\r` `\n` `\t` `\\`, other bytes as `\xHH`.
pub fn show(bytes: &[u8], limit: usize) -> String {
    let mut out = String::new();
    for &b in bytes {
        if out.len() >= limit {
            out.push_str(&format!("… ({} bytes in all)", bytes.len()));
            break;
        }
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

/// Prints the summary (and every difference), then fails on any.
pub fn finish(what: &str, started: Instant, diffs: Vec<String>) {
    let summary = format!(
        "{what}, {} differences ({:.1}s)",
        diffs.len(),
        started.elapsed().as_secs_f64()
    );
    let report = diffs.concat();
    if !diffs.is_empty() {
        loud(&report);
    }
    loud(&summary);
    assert!(diffs.is_empty(), "{summary}{report}");
}
