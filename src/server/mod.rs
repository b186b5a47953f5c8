//! Starting, running and stopping one server instance; many may run in
//! one process, each with its own keyspace.

mod aof;
mod listener;
mod listening;
mod metrics;
#[cfg(feature = "cli")]
pub mod process;
#[cfg(feature = "cli")]
pub mod syslog;

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::client_handle::{ClientAddr, ClientHandle};
use crate::clock::{Clock, ManualClock, SystemClock};
use crate::config::Config;
use crate::context::Shared;
use crate::context::renames::CommandNames;
use crate::context::snapshot;
pub use crate::context::{HeldLock, LockKind, LockOwner, PauseMode, Waiters};
use listener::{Accepted, Listener, METRICS, Stream, UnixSocket, listen};
use listening::{Listening, listen_all};

/// The entry point: `Server::builder()…start()`.
pub struct Server;

impl Server {
    /// A builder with the defaults of `redis-server` (port 6379 on
    /// 127.0.0.1, 16 databases, the system clock).
    pub fn builder() -> ServerBuilder {
        ServerBuilder {
            config: Config::default(),
            clock: Arc::new(SystemClock),
            manual: None,
        }
    }
}

/// Settings for one server, then `start` (async) or `start_blocking`:
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = rlockd::Server::builder()
///     .port(0)                 // a free port
///     .bind("127.0.0.1")
///     .requirepass("s3cret")
///     .databases(4)
///     .start()
///     .await?;
/// let client = redis::Client::open(format!("redis://:s3cret@{}", server.addr()))?;
/// let mut con = client.get_multiplexed_async_connection().await?;
/// let n: i64 = redis::cmd("DBSIZE").query_async(&mut con).await?;
/// assert_eq!(n, 0);
/// # Ok(())
/// # }
/// ```
///
/// Any other setting goes through a whole [`Config`]:
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let config = rlockd::Config {
///     notify_keyspace_events: "Ex".into(),
///     busy_reply_threshold: 100,
///     ..rlockd::Config::default()
/// };
/// let server = rlockd::Server::builder().config(config).port(0).start().await?;
/// # Ok(())
/// # }
/// ```
pub struct ServerBuilder {
    config: Config,
    clock: Arc<dyn Clock>,
    manual: Option<Arc<ManualClock>>,
}

impl ServerBuilder {
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    pub fn port(mut self, port: u16) -> Self {
        self.config.port = port;
        self
    }

    /// Replaces the default bind address; call again to add more.
    pub fn bind(mut self, addr: impl Into<String>) -> Self {
        if self.config.bind == Config::default().bind {
            self.config.bind.clear();
        }
        self.config.bind.push(addr.into());
        self
    }

    /// Listens on a unix socket at `path` too (`unixsocket`), or on it
    /// alone with `.port(0)`, as Redis takes port 0 with a socket:
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = std::env::temp_dir().join(format!("rlockd-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("rlockd.sock");
    /// let server = rlockd::Server::builder().port(0).unix_socket(&path).start().await?;
    /// assert_eq!(server.url(), format!("unix://{}", path.display()));
    /// let mut con = redis::Client::open(server.url())?.get_multiplexed_async_connection().await?;
    /// let pong: String = redis::cmd("PING").query_async(&mut con).await?;
    /// assert_eq!(pong, "PONG");
    /// server.shutdown().await;
    /// assert!(!path.exists()); // the socket file goes with the server
    /// # std::fs::remove_dir(&dir)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn unix_socket(mut self, path: impl AsRef<Path>) -> Self {
        self.config.unixsocket = path.as_ref().to_string_lossy().into_owned();
        self
    }

    /// Serves TLS on `port` too (0: a free one, which
    /// [`ServerHandle::tls_addrs`] tells), with the certificates of the
    /// config's `tls-*` settings; with `.port(0)`, TLS alone:
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = std::env::temp_dir().join(format!("rlockd-tls-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()])?;
    /// std::fs::write(dir.join("cert.pem"), cert.cert.pem())?;
    /// std::fs::write(dir.join("key.pem"), cert.signing_key.serialize_pem())?;
    /// let config = rlockd::Config {
    ///     tls_cert_file: dir.join("cert.pem").display().to_string(),
    ///     tls_key_file: dir.join("key.pem").display().to_string(),
    ///     tls_auth_clients: "no".into(),
    ///     ..rlockd::Config::default()
    /// };
    /// let server = rlockd::Server::builder().config(config).port(0).tls_port(0).start().await?;
    /// assert!(server.url().starts_with("rediss://127.0.0.1:"));
    /// assert!(server.addrs().is_empty());
    /// server.shutdown().await;
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn tls_port(mut self, port: u16) -> Self {
        self.config.tls_port = Some(port);
        self
    }

    pub fn requirepass(mut self, pass: impl Into<String>) -> Self {
        self.config.requirepass = Some(pass.into());
        self
    }

    /// Serves Prometheus metrics over HTTP at `/metrics` on this port (0
    /// picks a free one; [`ServerHandle::metrics_addr`] tells which), on the
    /// first bind address:
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use tokio::io::{AsyncReadExt, AsyncWriteExt};
    /// let server = rlockd::Server::builder().port(0).metrics_port(0).start().await?;
    /// let mut http = tokio::net::TcpStream::connect(server.metrics_addr().unwrap()).await?;
    /// http.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await?;
    /// let mut page = String::new();
    /// http.read_to_string(&mut page).await?;
    /// assert!(page.contains("\nrlockd_connected_clients 0\n"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn metrics_port(mut self, port: u16) -> Self {
        self.config.metrics_port = Some(port);
        self
    }

    pub fn databases(mut self, n: usize) -> Self {
        self.config.databases = n;
        self
    }

    /// Answers as a one-node Redis Cluster owning every hash slot, as
    /// `--cluster-enabled yes` does, so cluster clients connect unchanged:
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> redis::RedisResult<()> {
    /// use redis::AsyncCommands;
    /// let server = rlockd::Server::builder().port(0).cluster_enabled(true).start().await?;
    /// let client = redis::cluster::ClusterClient::new(vec![server.url()])?;
    /// let mut con = client.get_async_connection().await?;
    /// let () = con.set("{order:7}:lock", "owner-1").await?;
    /// // The client splits a request by slot, as rlockd's CROSSSLOT asks it to.
    /// let got: Vec<Option<String>> = con.mget(&["{order:7}:lock", "other"]).await?;
    /// assert_eq!(got, [Some("owner-1".to_string()), None]);
    /// server.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn cluster_enabled(mut self, enabled: bool) -> Self {
        self.config.cluster_enabled = enabled;
        self
    }

    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self.manual = None;
        self
    }

    /// Time stands still until the test moves it with
    /// [`ServerHandle::clock`]:
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// let server = rlockd::Server::builder().port(0).manual_clock().start().await?;
    /// let clock = server.clock()?;
    /// let before = clock.now();
    /// // Leases of 30 s are gone now: a key lives through its deadline's
    /// // millisecond, as in Redis.
    /// clock.advance(Duration::from_millis(30_001));
    /// assert_eq!(clock.now(), before + Duration::from_millis(30_001));
    /// server.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn manual_clock(mut self) -> Self {
        let manual = Arc::new(ManualClock::default());
        self.clock = manual.clone();
        self.manual = Some(manual);
        self
    }

    /// A manual clock that starts at `at`: a restarted server that goes on
    /// from the time its predecessor stopped at, before it loads its
    /// append-only file.
    pub fn manual_clock_at(self, at: std::time::SystemTime) -> Self {
        let server = self.manual_clock();
        if let Some(manual) = &server.manual {
            manual.set(at);
        }
        server
    }

    /// Binds every address and starts serving on the current tokio runtime.
    pub async fn start(self) -> io::Result<ServerHandle> {
        let mut listeners = Vec::new();
        let socket = &self.config.unixsocket;
        // Port 0 beside a socket or a TLS port is Redis's "no TCP"; alone,
        // rlockd picks a free port.
        let (addrs, port) = match self.config.port {
            0 if !socket.is_empty() || self.config.tls_port.is_some() => (Vec::new(), 0),
            port => {
                let bound = listen_all(&self.config, port, Listener::Tcp)?;
                listeners.extend(bound.listeners);
                (bound.addrs, bound.port)
            }
        };
        let tls = crate::tls::Tls::default();
        tls.configure(&self.config).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("Failed to configure TLS: {e}"),
            )
        })?;
        let (tls_addrs, tls_port) = match self.config.tls_port {
            Some(port) => {
                let bound = listen_all(&self.config, port, Listener::Tls)?;
                listeners.extend(bound.listeners);
                (bound.addrs, bound.port)
            }
            None => (Vec::new(), 0),
        };
        if addrs.is_empty() && tls_addrs.is_empty() && socket.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::AddrNotAvailable,
                "Configured to not listen anywhere, exiting.",
            ));
        }
        let unix_socket = match socket.as_str() {
            "" => None,
            path => {
                listeners.push(Listener::Unix(UnixSocket::bind(
                    path,
                    self.config.unixsocketperm,
                )?));
                Some(PathBuf::from(path))
            }
        };
        // Clients can only move a clock that tests could move too.
        let manual = match self.manual {
            None if self.config.enable_clock_control => {
                Some(Arc::new(if self.config.clock_control_runs {
                    ManualClock::running()
                } else {
                    ManualClock::default()
                }))
            }
            manual => manual,
        };
        let metrics = match self.config.metrics_port {
            Some(port) => {
                // With no bind address (`bind ""`), loopback.
                let first = self.config.bind.first().map_or("127.0.0.1", String::as_str);
                let host = bind_address(first).0;
                Some(listen(host, port, self.config.tcp_backlog, METRICS)?)
            }
            None => None,
        };
        let metrics_addr = metrics.as_ref().map(|l| l.local_addr()).transpose()?;
        // The port chosen for port 0 is the port in force: CONFIG GET, INFO
        // and CLUSTER answer it.
        let mut config = self.config;
        config.port = port;
        let command_names = CommandNames::build(&config.renamed_commands, |name| {
            crate::command::REGISTRY.lookup(name.as_bytes()).is_some()
        })
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("rename-command: {e}")))?;
        config.tls_port = config.tls_port.map(|_| tls_port);
        let mut shared = Shared::new(
            config,
            self.clock,
            manual,
            crate::command::REGISTRY.specs.len(),
            command_names,
        );
        shared.tls = tls;
        let shared = Arc::new(shared);
        // Users declared in the config file, or those of the ACL file: not
        // both, as Redis refuses.
        let declared = std::mem::take(&mut shared.config.write().users);
        if !declared.is_empty() {
            if !shared.config.read().aclfile.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    USERS_AND_ACL_FILE,
                ));
            }
            crate::command::acl::load_configured(&shared, &declared)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        }
        // Users come from the ACL file when there is one, as at Redis's start.
        if !shared.config.read().aclfile.is_empty() {
            crate::command::acl::load_file(&shared, None).map_err(|e| {
                // The reply's text, without the code a client would get.
                let text = e.to_string();
                let why = text.strip_prefix(e.code()).unwrap_or(&text).trim_start();
                io::Error::other(format!(
                    "Aborting Redis startup because of ACL errors: {why}"
                ))
            })?;
        }
        // As Redis: the append-only file when it is on, else the snapshot,
        // which clients already connected to are told LOADING about. No
        // file, no LOADING: a client connecting at once to a fresh server
        // must be served, as Redis serves it.
        let (appendonly, from_snapshot) = {
            let config = shared.config.read();
            let appendonly = config.appendonly;
            (
                appendonly,
                !appendonly && snapshot::rdb_path(&config).exists(),
            )
        };
        if appendonly {
            aof::load_and_open(&shared)?;
        } else if from_snapshot {
            shared.snapshots.set_loading(true);
        }
        let stop_rx = shared.shutdown.subscribe();
        let mut tasks = JoinSet::new();
        let listening = Listening::start(&shared, listeners);
        let _ = shared.listening.set(listening.clone());
        if from_snapshot {
            let loaded = snapshot::load_file(&shared, false);
            shared.snapshots.set_loading(false);
            let point = loaded.map_err(|e| {
                tracing::warn!("{e}");
                io::Error::other(e.to_string())
            })?;
            // As Redis 7.0, from the snapshot only: an AOF's base says
            // nothing of replication.
            if let Some(Some(point)) = point {
                shared.replica.restore(point);
            }
        }
        shared
            .persistence
            .start_grace(&shared.config.read(), shared.now_ms());
        if let Some(listener) = metrics {
            tasks.spawn(metrics::serve(shared.clone(), listener, stop_rx.clone()));
        }
        tasks.spawn(crate::replication::run(shared.clone(), stop_rx.clone()));
        tasks.spawn(crate::replication::primary::cron(
            shared.clone(),
            stop_rx.clone(),
        ));
        tasks.spawn(crate::context::failover::serve(
            shared.clone(),
            stop_rx.clone(),
        ));
        tasks.spawn(housekeeping(shared.clone(), stop_rx));
        Ok(ServerHandle {
            shared,
            addrs,
            tls_addrs,
            unix_socket,
            metrics_addr,
            tasks,
            listening,
        })
    }
}

impl ServerBuilder {
    /// Starts the server on a runtime of its own (`io-threads` worker
    /// threads: one per core unless the config says), for tests that have
    /// no tokio runtime:
    ///
    /// ```
    /// use redis::Commands;
    /// let server = rlockd::Server::builder().port(0).start_blocking()?;
    /// let mut con = redis::Client::open(server.url())?.get_connection()?;
    /// let _: () = con.set_ex("lease", "owner", 30)?;
    /// assert_eq!(con.ttl::<_, i64>("lease")?, 30);
    /// server.shutdown(); // or let it drop
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start_blocking(self) -> io::Result<BlockingServer> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(self.config.io_threads)
            .thread_name("rlockd")
            .enable_all()
            .build()?;
        let handle = off_runtime(|| runtime.block_on(self.start()))?;
        Ok(BlockingServer {
            handle: Some(handle),
            runtime: Some(runtime),
        })
    }
}

/// How long dropping a [`BlockingServer`] waits for a graceful shutdown.
const BLOCKING_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A server on its own runtime (see [`ServerBuilder::start_blocking`]).
/// Everything a [`ServerHandle`] offers is here too (`addr`, `url`,
/// `clock`, `locks`, …); dropping it stops the server.
pub struct BlockingServer {
    // Both are taken only by `shutdown` and `drop`.
    handle: Option<ServerHandle>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl std::ops::Deref for BlockingServer {
    type Target = ServerHandle;

    fn deref(&self) -> &ServerHandle {
        self.handle.as_ref().expect("a running server")
    }
}

impl BlockingServer {
    /// Stops the server gracefully (as [`ServerHandle::shutdown`]) and
    /// waits for it.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let (Some(handle), Some(runtime)) = (self.handle.take(), self.runtime.take()) else {
            return;
        };
        // A script spinning past the busy threshold holds its connection:
        // past the grace period the runtime is abandoned instead.
        off_runtime(|| {
            // The timer is made inside the runtime, which it needs.
            runtime.block_on(async {
                tokio::time::timeout(BLOCKING_SHUTDOWN_GRACE, handle.shutdown()).await
            })
        })
        .ok();
        runtime.shutdown_background();
    }
}

/// Runs `f` on a thread of its own and waits for it: tokio refuses to block
/// on a runtime from a thread that drives another one (a blocking server
/// started or dropped inside an async test).
fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(f)
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

impl Drop for BlockingServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Redis's refusal of users declared both ways.
const USERS_AND_ACL_FILE: &str = "Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.";

/// A `bind` address as Redis reads it: `-` before it makes it optional
/// (not being able to bind it is no error), `*` is every IPv4 address and
/// `::*` every IPv6 one.
pub fn bind_address(spec: &str) -> (&str, bool) {
    let (host, optional) = match spec.strip_prefix('-') {
        Some(host) => (host, true),
        None => (spec, false),
    };
    let host = match host {
        "*" => "0.0.0.0",
        "::*" => "::",
        host => host,
    };
    (host, optional)
}

/// Serves a client just accepted, once its TLS handshake (on the TLS
/// port) is done, unless protected mode or `maxclients` turns it away.
/// A handshake that fails or runs past `tls-handshake-timeout-ms` is
/// logged, as Redis logs it, and the connection closed.
async fn admit(shared: Arc<Shared>, accepted: Accepted, mut stop: watch::Receiver<bool>) {
    let Accepted {
        mut stream,
        peer,
        local,
        tls,
    } = accepted;
    if tls {
        let limit = match shared.config.read().tls_handshake_timeout_ms {
            0 => None,
            ms => Some(Duration::from_millis(ms)),
        };
        let handshake = stream.handshake(shared.tls.acceptor(), limit);
        stream = tokio::select! {
            done = handshake => match done {
                Ok(stream) => stream,
                Err(e) => {
                    tracing::warn!(
                        "Error accepting a client connection: {e} (addr={peer} laddr={local})"
                    );
                    return;
                }
            },
            _ = stop.wait_for(|stopped| *stopped) => return,
        };
    }
    if denied_by_protected_mode(&shared.config.read(), &peer) {
        return refuse(stream, PROTECTED_MODE_DENIED).await;
    }
    if shared.clients.len() >= shared.config.read().maxclients {
        shared
            .stats
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed);
        return refuse(stream, "-ERR max number of clients reached\r\n").await;
    }
    if let Some(replica) = crate::connection::serve(shared.clone(), stream, peer, local).await {
        crate::replication::primary::serve(shared, replica).await;
    }
}

/// Redis 7.0's words, byte for byte (its typo included): clients match on them.
const PROTECTED_MODE_DENIED: &str = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// Protected mode (on by default) with no password admits only local
/// clients.
fn denied_by_protected_mode(config: &Config, peer: &ClientAddr) -> bool {
    config.protected_mode && config.requirepass.is_none() && !peer.is_local()
}

async fn refuse(mut stream: Stream, message: &'static str) {
    use tokio::io::AsyncWriteExt;
    let _ = stream.write_all(message.as_bytes()).await;
}

/// The longest the expiry driver sleeps towards a deadline at once.
const LONGEST_SLEEP: Duration = Duration::from_secs(3600);

/// The server's background work, `hz` times a second at most as in
/// Redis's serverCron: reclaiming keys when the expiry alarm says some are
/// due (at their deadline when the last pass was long enough ago, so
/// keys coming due one after another are reclaimed in batches), and, with
/// the AOF on, starting a rewrite once the file has grown enough. A
/// BGREWRITEAOF starts at once. A server with nothing due and no AOF
/// sleeps.
async fn housekeeping(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    use tokio::time::Instant;
    let alarm = shared.keyspace.expiry_alarm();
    let mut last_pass = Instant::now();
    let mut next_cron = Instant::now();
    loop {
        let now = Instant::now();
        let period = Duration::from_millis(1000 / shared.config.read().hz.max(1));
        if now >= next_cron {
            start_rewrite_if_asked(&shared);
            snapshot::run_schedule(&shared);
            snapshot::finish_in_background(&shared);
            next_cron = now + period;
        }
        let cron = (shared.keyspace.log().is_some() || snapshot::has_schedule(&shared))
            .then_some(next_cron);
        let expiry = alarm.due().map(|due| {
            // A far deadline (EXPIREAT can name any year) is looked at
            // again within the hour rather than overflowing an Instant.
            let until_due = Duration::from_millis(due.saturating_sub(shared.now_ms()));
            (now + until_due.min(LONGEST_SLEEP)).max(last_pass + period)
        });
        let wake = cron.into_iter().chain(expiry).min();
        tokio::select! {
            _ = sleep_until(wake) => {}
            _ = alarm.rung_earlier() => continue,
            _ = shared.persistence.rewrite_asked() => {
                start_rewrite_if_asked(&shared);
                continue;
            }
            _ = shared.snapshots.save_asked() => {
                snapshot::finish_in_background(&shared);
                continue;
            }
            _ = stop.changed() => return,
        }
        if alarm.due().is_some_and(|due| due <= shared.now_ms()) {
            let started = std::time::Instant::now();
            shared.keyspace.expire_due();
            // Redis's latency event for a slow active-expiry cycle.
            shared.latency.observe("expire-cycle", started.elapsed());
            last_pass = Instant::now();
        }
    }
}

/// Sleeps until `wake`, or for good.
async fn sleep_until(wake: Option<tokio::time::Instant>) {
    match wake {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn start_rewrite_if_asked(shared: &Arc<Shared>) {
    if shared.persistence.take_request(shared) {
        let shared = shared.clone();
        tokio::task::spawn_blocking(move || crate::context::persistence::rewrite(&shared));
    }
}

/// A running server. Dropping it stops the server too.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = rlockd::Server::builder().port(0).start().await?;
/// assert_eq!(server.url(), format!("redis://{}", server.addr()));
/// let mut con = redis::Client::open(server.url())?.get_multiplexed_async_connection().await?;
/// let pong: String = redis::cmd("PING").query_async(&mut con).await?;
/// assert_eq!(pong, "PONG");
/// let addr = server.addr();
/// server.shutdown().await; // graceful: in-flight replies are finished
/// assert!(tokio::net::TcpStream::connect(addr).await.is_err());
/// # Ok(())
/// # }
/// ```
pub struct ServerHandle {
    shared: Arc<Shared>,
    /// Empty with port 0 and a unix socket or a TLS port.
    addrs: Vec<SocketAddr>,
    /// The TLS port's addresses, if it has one.
    tls_addrs: Vec<SocketAddr>,
    unix_socket: Option<PathBuf>,
    metrics_addr: Option<SocketAddr>,
    tasks: JoinSet<()>,
    /// The accept loops, and the clients they serve.
    listening: Arc<Listening>,
}

/// One client's pub/sub output backlog ([`ServerHandle::backlogs`]).
#[derive(Debug, Clone, Copy)]
pub struct Backlog {
    /// Its `CLIENT ID`.
    pub client: u64,
    /// Bytes of pub/sub frames queued for it and not yet written.
    pub bytes: usize,
    /// When the backlog reached the soft limit, in milliseconds of a
    /// monotonic clock, or 0.
    pub over_soft_since: u64,
}

/// [`ServerHandle::clock`] on a server that runs on the system clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoManualClock;

impl std::fmt::Display for NoManualClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the server was not built with Server::builder().manual_clock()")
    }
}

impl std::error::Error for NoManualClock {}

/// Moves a manual clock. Every move also reclaims the keys whose deadline
/// it passed, raising their `expired` events, before it returns:
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::{Duration, UNIX_EPOCH};
/// let server = rlockd::Server::builder().port(0).manual_clock().start().await?;
/// let mut con = redis::Client::open(server.url())?.get_multiplexed_async_connection().await?;
/// redis::cmd("SET").arg("lease").arg("me").arg("PX").arg(30_000).exec_async(&mut con).await?;
/// server.clock()?.advance(Duration::from_secs(10));
/// let left: i64 = redis::cmd("PTTL").arg("lease").query_async(&mut con).await?;
/// assert_eq!(left, 20_000);
/// server.clock()?.set(UNIX_EPOCH + Duration::from_secs(4_102_444_800)); // year 2100
/// let gone: Option<String> = redis::cmd("GET").arg("lease").query_async(&mut con).await?;
/// assert_eq!(gone, None);
/// # Ok(())
/// # }
/// ```
pub struct ClockControl<'a> {
    clock: &'a ManualClock,
    shared: &'a Shared,
}

impl ClockControl<'_> {
    pub fn advance(&self, by: Duration) {
        self.shared.advance_clock(self.clock, by);
    }

    pub fn set(&self, to: std::time::SystemTime) {
        self.shared.set_clock(self.clock, to);
    }

    pub fn now(&self) -> std::time::SystemTime {
        self.clock.now()
    }
}

impl ServerHandle {
    /// The first bound address. This and the other addresses below are
    /// those the server started on: a later CONFIG SET of `port`, `bind`
    /// or `tls-port` moves the listeners, not these.
    ///
    /// # Panics
    /// If the server has no plain TCP port (port 0 with
    /// [`ServerBuilder::unix_socket`] or [`ServerBuilder::tls_port`]):
    /// [`Self::url`] serves all three.
    pub fn addr(&self) -> SocketAddr {
        *self
            .addrs
            .first()
            .expect("the server has no plain TCP port")
    }

    /// Every TCP address bound; none when only the unix socket or the
    /// TLS port listens.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// The TLS port's addresses ([`ServerBuilder::tls_port`]), if any.
    pub fn tls_addrs(&self) -> &[SocketAddr] {
        &self.tls_addrs
    }

    /// The unix socket's path, if it listens on one.
    pub fn unix_socket(&self) -> Option<&Path> {
        self.unix_socket.as_deref()
    }

    /// The settings now in force (CONFIG SET changes them).
    pub fn config(&self) -> Config {
        self.shared.config.read().clone()
    }

    /// Wakes on every CONFIG SET; read [`Self::config`] then.
    pub fn config_changes(&self) -> watch::Receiver<u64> {
        self.shared.config_changes.subscribe()
    }

    /// Where Prometheus metrics are served, if they are
    /// ([`ServerBuilder::metrics_port`]).
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// `redis://` and the first address, or when there is no plain TCP,
    /// `unix://` and the socket's path, or `rediss://` and the first TLS
    /// address.
    pub fn url(&self) -> String {
        match (&self.unix_socket, self.tls_addrs.first()) {
            _ if !self.addrs.is_empty() => format!("redis://{}", self.addr()),
            (Some(path), _) => format!("unix://{}", path.display()),
            (None, Some(addr)) => format!("rediss://{addr}"),
            (None, None) => unreachable!("a server listens somewhere"),
        }
    }

    /// Reads the settings now in force where the handle cannot be
    /// borrowed, as a task woken by [`Self::config_changes`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = rlockd::Server::builder().port(0).start().await?;
    /// let (mut changes, config) = (server.config_changes(), server.config_reader());
    /// let mut con = redis::Client::open(server.url())?.get_multiplexed_async_connection().await?;
    /// redis::cmd("CONFIG").arg("SET").arg("loglevel").arg("warning").exec_async(&mut con).await?;
    /// changes.changed().await?;
    /// assert_eq!(config().loglevel, "warning");
    /// # Ok(())
    /// # }
    /// ```
    pub fn config_reader(&self) -> impl Fn() -> Config + Send + Sync + 'static {
        let shared = self.shared.clone();
        move || shared.config.read().clone()
    }

    /// Each connected client's pub/sub output backlog, as the output buffer
    /// limits (`client-output-buffer-limit pubsub`) see it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = rlockd::Server::builder().port(0).start().await?;
    /// let mut sub = redis::Client::open(server.url())?.get_async_pubsub().await?;
    /// sub.subscribe("news").await?;
    /// let backlogs = server.backlogs();
    /// assert_eq!((backlogs.len(), backlogs[0].bytes), (1, 0));
    /// # Ok(())
    /// # }
    /// ```
    pub fn backlogs(&self) -> Vec<Backlog> {
        let backlog = |c: &ClientHandle| Backlog {
            client: c.id,
            bytes: c.backlog.load(Ordering::Relaxed),
            over_soft_since: c.over_soft_since.load(Ordering::Relaxed),
        };
        self.shared.clients.iter().map(|c| backlog(&c)).collect()
    }

    /// The server's manual clock, or [`NoManualClock`] if the server was
    /// not built with [`ServerBuilder::manual_clock`] (or with
    /// `enable_clock_control` in its config).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let server = rlockd::Server::builder().port(0).start().await?;
    /// assert!(server.clock().is_err(), "the system clock cannot be moved");
    /// # Ok(())
    /// # }
    /// ```
    pub fn clock(&self) -> Result<ClockControl<'_>, NoManualClock> {
        let clock = self.shared.manual_clock.as_deref().ok_or(NoManualClock)?;
        Ok(ClockControl {
            clock,
            shared: &self.shared,
        })
    }

    /// The locks held now whose key matches the glob `pattern` (all with
    /// `None`): hashes of owner field to hold count, and strings with a
    /// deadline.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = rlockd::Server::builder().port(0).start().await?;
    /// let mut con = redis::Client::open(server.url())?.get_multiplexed_async_connection().await?;
    /// redis::cmd("HSET").arg("lock:a").arg("c1:7").arg(1).exec_async(&mut con).await?;
    /// redis::cmd("PEXPIRE").arg("lock:a").arg(30_000).exec_async(&mut con).await?;
    /// let locks = server.locks(Some("lock:*"));
    /// assert_eq!(&locks[0].owners[0].owner[..], b"c1:7");
    /// assert_eq!(locks[0].owners[0].holds, 1);
    /// assert!(locks[0].ttl.unwrap() <= std::time::Duration::from_secs(30));
    /// # Ok(())
    /// # }
    /// ```
    pub fn locks(&self, pattern: Option<&str>) -> Vec<HeldLock> {
        self.shared.held_locks(pattern.map(str::as_bytes))
    }

    /// Who is subscribed to what, for channels, patterns and shard channels
    /// whose name matches the glob `pattern` (all with `None`).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = rlockd::Server::builder().port(0).start().await?;
    /// let mut sub = redis::Client::open(server.url())?.get_async_pubsub().await?;
    /// sub.subscribe("redisson_lock__channel:{lock:a}").await?;
    /// let waiters = server.waiters(Some("redisson_lock__channel:*"));
    /// assert_eq!(waiters.len(), 1);
    /// assert_eq!(waiters[0].clients.len(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn waiters(&self, pattern: Option<&str>) -> Vec<Waiters> {
        crate::context::introspect::waiters(&self.shared.pubsub, pattern.map(str::as_bytes))
    }

    /// Holds back commands as `CLIENT PAUSE <ms> WRITE|ALL` does: clients'
    /// commands wait (unanswered) until the pause ends or [`Self::unpause`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::{Duration, Instant};
    /// use rlockd::server::PauseMode;
    /// let server = rlockd::Server::builder().port(0).start().await?;
    /// let mut con = redis::Client::open(server.url())?.get_multiplexed_async_connection().await?;
    /// server.pause(Duration::from_millis(100), PauseMode::Write);
    /// let asked = Instant::now();
    /// redis::cmd("SET").arg("k").arg("v").exec_async(&mut con).await?; // waits for the pause
    /// assert!(asked.elapsed() >= Duration::from_millis(90));
    /// # Ok(())
    /// # }
    /// ```
    pub fn pause(&self, duration: Duration, mode: PauseMode) {
        self.shared.pause(duration, mode);
    }

    /// Ends a pause at once (`CLIENT UNPAUSE`).
    pub fn unpause(&self) {
        self.shared.unpause();
    }

    /// Closes every client connection, as a network failure or a server
    /// restart would; the server goes on accepting new ones. Returns how
    /// many were open.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = rlockd::Server::builder().port(0).start().await?;
    /// let mut con = redis::Client::open(server.url())?.get_multiplexed_async_connection().await?;
    /// redis::cmd("PING").exec_async(&mut con).await?;
    /// assert_eq!(server.drop_connections(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn drop_connections(&self) -> usize {
        let clients: Vec<_> = self.shared.clients.iter().map(|c| c.clone()).collect();
        clients.iter().for_each(|c| c.kill());
        clients.len()
    }

    /// Holds every reply this long before writing it (a slow network or an
    /// overloaded server); `Duration::ZERO` stops it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::{Duration, Instant};
    /// let server = rlockd::Server::builder().port(0).start().await?;
    /// let mut con = redis::Client::open(server.url())?.get_multiplexed_async_connection().await?;
    /// server.delay_replies(Duration::from_millis(50));
    /// let asked = Instant::now();
    /// redis::cmd("PING").exec_async(&mut con).await?;
    /// assert!(asked.elapsed() >= Duration::from_millis(50));
    /// # Ok(())
    /// # }
    /// ```
    pub fn delay_replies(&self, delay: Duration) {
        self.shared.faults.set_reply_delay(delay);
    }

    /// Stops accepting, lets each connection finish the replies it is
    /// working on, closes every client and waits for all of it.
    pub async fn shutdown(mut self) {
        self.shared.stop();
        self.wait().await;
    }

    /// Waits until the server stops (SHUTDOWN, signal handler, or `shutdown`).
    /// The append-only file is written out and fsynced last.
    pub async fn wait(&mut self) {
        while self.tasks.join_next().await.is_some() {}
        self.listening.wait().await;
        snapshot::save_on_shutdown(&self.shared, None);
        if let Some(aof) = self.shared.keyspace.log() {
            aof.close();
        }
    }

    /// Stops the server as `kill -9` would: what the append-only file has
    /// not yet been handed is lost (under `appendfsync always`, nothing that
    /// was acknowledged), and nothing more reaches the file.
    pub async fn crash(mut self) {
        if let Some(aof) = self.shared.keyspace.log() {
            aof.abandon();
        }
        self.shared.stop();
        while self.tasks.join_next().await.is_some() {}
        self.listening.wait().await;
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.shared.stop();
    }
}
