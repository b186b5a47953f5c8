//! Starting, running and stopping one server instance; many may run in
//! one process, each with its own keyspace.

mod state;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::clock::{Clock, ManualClock, SystemClock};
use crate::config::Config;
pub use state::{CommandStat, Shared, Stats, random_hex};

/// How often the expiry driver reclaims keys whose deadline has passed.
const EXPIRY_TICK: Duration = Duration::from_millis(10);

pub struct Server;

impl Server {
    pub fn builder() -> ServerBuilder {
        ServerBuilder {
            config: Config::default(),
            clock: Arc::new(SystemClock),
            manual: None,
        }
    }
}

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

    pub fn requirepass(mut self, pass: impl Into<String>) -> Self {
        self.config.requirepass = Some(pass.into());
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
    /// # async fn main() -> std::io::Result<()> {
    /// use std::time::Duration;
    /// let server = rlockd::Server::builder().port(0).manual_clock().start().await?;
    /// let before = server.clock().now();
    /// server.clock().advance(Duration::from_secs(30)); // leases of 30 s are gone now
    /// assert_eq!(server.clock().now(), before + Duration::from_secs(30));
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

    /// Binds every address and starts serving on the current tokio runtime.
    pub async fn start(self) -> io::Result<ServerHandle> {
        let mut listeners = Vec::new();
        let mut port = self.config.port;
        for host in &self.config.bind {
            let listener = TcpListener::bind((host.as_str(), port)).await?;
            // Port 0 picks a free port once; every address shares it.
            port = listener.local_addr()?.port();
            listeners.push(listener);
        }
        let addrs = listeners
            .iter()
            .map(|l| l.local_addr())
            .collect::<io::Result<Vec<_>>>()?;
        let shared = Arc::new(Shared::new(self.config, self.clock));
        shared.port.store(port as u64, Ordering::Relaxed);
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut tasks = JoinSet::new();
        for listener in listeners {
            tasks.spawn(accept_loop(shared.clone(), listener, stop_rx.clone()));
        }
        tasks.spawn(expiry_loop(shared.clone(), stop_rx));
        Ok(ServerHandle {
            shared,
            addrs,
            stop: stop_tx,
            tasks,
            manual: self.manual,
        })
    }
}

async fn accept_loop(shared: Arc<Shared>, listener: TcpListener, mut stop: watch::Receiver<bool>) {
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stop.changed() => break,
        };
        let (stream, addr) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        shared
            .stats
            .connections_received
            .fetch_add(1, Ordering::Relaxed);
        if shared.clients.len() >= shared.config.read().maxclients {
            shared
                .stats
                .rejected_connections
                .fetch_add(1, Ordering::Relaxed);
            tokio::spawn(refuse(stream, "-ERR max number of clients reached\r\n"));
            continue;
        }
        let laddr = stream.local_addr().unwrap_or(addr);
        connections.spawn(crate::connection::serve(
            shared.clone(),
            stream,
            addr,
            laddr,
        ));
        // Reap finished connections so the set does not grow without bound.
        while connections.try_join_next().is_some() {}
    }
    for client in shared.clients.iter() {
        client.kill();
    }
    while connections.join_next().await.is_some() {}
}

async fn refuse(mut stream: tokio::net::TcpStream, message: &'static str) {
    use tokio::io::AsyncWriteExt;
    let _ = stream.write_all(message.as_bytes()).await;
}

async fn expiry_loop(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(EXPIRY_TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => { shared.keyspace.expire_due(); }
            _ = stop.changed() => return,
        }
    }
}

/// A running server. Dropping it stops the server too.
pub struct ServerHandle {
    shared: Arc<Shared>,
    addrs: Vec<SocketAddr>,
    stop: watch::Sender<bool>,
    tasks: JoinSet<()>,
    manual: Option<Arc<ManualClock>>,
}

/// Moves a manual clock. Every move also reclaims the keys whose deadline
/// it passed, raising their `expired` events, before it returns.
pub struct ClockControl<'a> {
    clock: &'a ManualClock,
    shared: &'a Shared,
}

impl ClockControl<'_> {
    pub fn advance(&self, by: Duration) {
        self.clock.advance(by);
        self.shared.keyspace.expire_due_now();
    }

    pub fn set(&self, to: std::time::SystemTime) {
        self.clock.set(to);
        self.shared.keyspace.expire_due_now();
    }

    pub fn now(&self) -> std::time::SystemTime {
        self.clock.now()
    }
}

impl ServerHandle {
    /// The first bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addrs[0]
    }

    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    pub fn url(&self) -> String {
        format!("redis://{}", self.addr())
    }

    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The server's manual clock.
    ///
    /// # Panics
    /// If the server was not built with [`ServerBuilder::manual_clock`].
    pub fn clock(&self) -> ClockControl<'_> {
        let clock = self
            .manual
            .as_deref()
            .expect("the server was not built with Server::builder().manual_clock()");
        ClockControl {
            clock,
            shared: &self.shared,
        }
    }

    /// Stops accepting, lets each connection finish the replies it is
    /// working on, closes every client and waits for all of it.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        while self.tasks.join_next().await.is_some() {}
    }

    /// Waits until the server stops (SHUTDOWN, signal handler, or `shutdown`).
    pub async fn wait(&mut self) {
        while self.tasks.join_next().await.is_some() {}
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}
