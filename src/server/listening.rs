//! The listeners in force and their accept loops. CONFIG SET of `port`,
//! `tls-port` and `bind` moves the TCP and TLS ones as Redis 7.0 does: the
//! old ones close, the new ones bind (port 0 binds none), clients already
//! connected stay; when an address does not bind, the old settings are
//! listened on again and the change is refused with Redis's words.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::admit;
use super::listener::{Listener, SERVER, Slot, listen};
use crate::config::Config;
use crate::context::Shared;
use crate::context::listening::{BIND_FAILED, PORT_FAILED, Relisten};

/// Bound listeners of one kind: what `listen_all` makes.
pub(super) struct Bound {
    pub listeners: Vec<Listener>,
    pub addrs: Vec<SocketAddr>,
    /// The port they share (the one picked, for port 0).
    pub port: u16,
}

/// Listens on `port` at every bind address, each a listener of `kind`;
/// port 0 picks a free port once, and every address shares it. An
/// optional address (`-addr`) the host lacks is passed over with Redis's
/// warning.
pub(super) fn listen_all(
    config: &Config,
    mut port: u16,
    kind: fn(tokio::net::TcpListener) -> Listener,
) -> io::Result<Bound> {
    let mut bound = Bound {
        listeners: Vec::new(),
        addrs: Vec::new(),
        port,
    };
    for entry in &config.bind {
        let (host, optional) = super::bind_address(entry);
        let listener = match listen(host, port, config.tcp_backlog, SERVER) {
            Ok(listener) => listener,
            Err(failed) if failed.passed_over(optional) => {
                tracing::warn!("Warning: {failed}");
                continue;
            }
            Err(failed) => return Err(failed.into()),
        };
        let addr = listener.local_addr()?;
        port = addr.port();
        bound.addrs.push(addr);
        bound.listeners.push(kind(listener));
    }
    bound.port = port;
    Ok(bound)
}

/// The TCP and TLS listeners open now (the unix socket never moves), and
/// every accept loop, those whose listener was closed included: they go
/// on serving the clients they accepted.
pub(super) struct Listening {
    shared: Weak<Shared>,
    runtime: Handle,
    stop: watch::Receiver<bool>,
    open: Mutex<Open>,
    loops: Mutex<JoinSet<()>>,
}

#[derive(Default)]
struct Open {
    tcp: Vec<Arc<Slot>>,
    tls: Vec<Arc<Slot>>,
}

impl Open {
    fn of(&mut self, kind: Kind) -> &mut Vec<Arc<Slot>> {
        match kind {
            Kind::Tcp => &mut self.tcp,
            Kind::Tls => &mut self.tls,
        }
    }
}

/// Which listeners a change moves.
#[derive(Clone, Copy)]
enum Kind {
    Tcp,
    Tls,
}

impl Kind {
    fn port(self, config: &Config) -> u16 {
        match self {
            Kind::Tcp => config.port,
            Kind::Tls => config.tls_port.unwrap_or(0),
        }
    }

    fn wrap(self) -> fn(tokio::net::TcpListener) -> Listener {
        match self {
            Kind::Tcp => Listener::Tcp,
            Kind::Tls => Listener::Tls,
        }
    }
}

impl Listening {
    /// Serves `listeners` (those bound at start) for `shared` until it stops.
    pub fn start(shared: &Arc<Shared>, listeners: Vec<Listener>) -> Arc<Listening> {
        let listening = Arc::new(Listening {
            shared: Arc::downgrade(shared),
            runtime: Handle::current(),
            stop: shared.shutdown.subscribe(),
            open: Mutex::default(),
            loops: Mutex::default(),
        });
        let mut open = listening.open.lock();
        for listener in listeners {
            let kind = match listener {
                Listener::Tcp(_) => Some(Kind::Tcp),
                Listener::Tls(_) => Some(Kind::Tls),
                Listener::Unix(_) => None,
            };
            let slot = listening.serve(shared.clone(), listener);
            if let Some(kind) = kind {
                open.of(kind).push(slot);
            }
        }
        drop(open);
        listening
    }

    fn serve(&self, shared: Arc<Shared>, listener: Listener) -> Arc<Slot> {
        let slot = Slot::new(listener);
        self.loops.lock().spawn_on(
            accept_loop(shared, slot.clone(), self.stop.clone()),
            &self.runtime,
        );
        slot
    }

    /// Waits for every accept loop, and so for every client, to end.
    pub async fn wait(&self) {
        let mut loops = std::mem::take(&mut *self.loops.lock());
        while loops.join_next().await.is_some() {}
    }

    /// Listens on `kind`'s port of `config` (none for port 0) and serves
    /// what binds; an address that does not bind is logged as Redis logs
    /// it and nothing stays bound.
    fn open(&self, open: &mut Open, kind: Kind, config: &Config) -> Result<(), ()> {
        let port = kind.port(config);
        let Some(shared) = self.shared.upgrade() else {
            return Ok(());
        };
        if port == 0 {
            return Ok(());
        }
        let bound = listen_all(config, port, kind.wrap()).map_err(|e| {
            tracing::warn!("Warning: {e}");
        })?;
        for listener in bound.listeners {
            let slot = self.serve(shared.clone(), listener);
            open.of(kind).push(slot);
        }
        Ok(())
    }

    fn close(open: &mut Open, kind: Kind) {
        for slot in open.of(kind).drain(..) {
            slot.close();
        }
    }

    /// Listens as `config` says on `kinds`, after closing them; on a
    /// failure closes what did bind.
    fn reopen(&self, open: &mut Open, kinds: &[Kind], config: &Config) -> Result<(), ()> {
        for kind in kinds {
            Listening::close(open, *kind);
        }
        let opened = kinds
            .iter()
            .try_for_each(|kind| self.open(open, *kind, config));
        if opened.is_err() {
            for kind in kinds {
                Listening::close(open, *kind);
            }
        }
        opened
    }
}

impl Relisten for Listening {
    fn relisten(&self, old: &Config, new: &Config) -> Result<(), &'static str> {
        if *self.stop.borrow() {
            return Ok(());
        }
        let mut open = self.open.lock();
        // A new bind list moves both kinds, to the ports `new` gives.
        let rebind = old.bind != new.bind;
        let kinds: Vec<Kind> = [Kind::Tcp, Kind::Tls]
            .into_iter()
            .filter(|kind| rebind || kind.port(old) != kind.port(new))
            .collect();
        if kinds.is_empty() || self.reopen(&mut open, &kinds, new).is_ok() {
            return Ok(());
        }
        let why = if rebind {
            tracing::warn!("Failed to bind");
            BIND_FAILED
        } else {
            PORT_FAILED
        };
        if self.reopen(&mut open, &kinds, old).is_err() {
            tracing::warn!("Failed applying restored failed CONFIG SET command: {why}");
        }
        Err(why)
    }
}

/// Accepts clients from `slot` until the server stops or CONFIG SET
/// closes the listener; those accepted are served to their end either way
/// (at the server's stop, every client is closed).
async fn accept_loop(shared: Arc<Shared>, slot: Arc<Slot>, mut stop: watch::Receiver<bool>) {
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            a = slot.accept() => a,
            _ = stop.changed() => break,
        };
        let accepted = match accepted {
            Some(Ok(accepted)) => accepted,
            Some(Err(e)) => {
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
            None => {
                let served = async { while connections.join_next().await.is_some() {} };
                tokio::select! {
                    _ = served => return,
                    _ = stop.changed() => break,
                }
            }
        };
        shared
            .stats
            .connections_received
            .fetch_add(1, Ordering::Relaxed);
        // Each client is admitted in its own task: a TLS handshake that
        // stalls holds up no one else.
        connections.spawn(admit(shared.clone(), accepted, stop.clone()));
        // Reap finished connections so the set does not grow without bound.
        while connections.try_join_next().is_some() {}
    }
    for client in shared.clients.iter() {
        client.kill();
    }
    while connections.join_next().await.is_some() {}
}
