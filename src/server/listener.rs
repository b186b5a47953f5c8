//! Where clients connect: TCP addresses, the unix socket and the TLS
//! port. The accept loop takes one from any kind, and the connection code
//! serves them all through `Stream`.

use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpSocket, TcpStream, UnixListener, UnixStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::client_handle::ClientAddr;
use crate::config::FileMode;

pub(super) enum Listener {
    Tcp(TcpListener),
    /// The TLS port: TCP whose clients shake hands before they are served.
    Tls(TcpListener),
    Unix(UnixSocket),
}

/// A client just accepted, and both ends as CLIENT LIST shows them.
pub(super) struct Accepted {
    pub stream: Stream,
    pub peer: ClientAddr,
    pub local: ClientAddr,
    /// Came to the TLS port: the handshake is still to come.
    pub tls: bool,
}

impl Listener {
    fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<Accepted>> {
        match self {
            Listener::Tcp(listener) | Listener::Tls(listener) => {
                let (stream, peer) = std::task::ready!(listener.poll_accept(cx))?;
                // Replies go out as soon as they are written, not batched
                // with the next.
                let _ = stream.set_nodelay(true);
                let local = stream.local_addr().unwrap_or(peer);
                Poll::Ready(Ok(Accepted {
                    stream: Stream::Tcp(stream),
                    peer: peer.into(),
                    local: local.into(),
                    tls: matches!(self, Listener::Tls(_)),
                }))
            }
            Listener::Unix(socket) => {
                let (stream, _) = std::task::ready!(socket.listener.poll_accept(cx))?;
                let at = ClientAddr::Unix(socket.path.clone());
                Poll::Ready(Ok(Accepted {
                    stream: Stream::Unix(stream),
                    peer: at.clone(),
                    local: at,
                    tls: false,
                }))
            }
        }
    }
}

/// A listener its accept loop waits on, which CONFIG SET may close from
/// elsewhere: closing drops the socket at once (so its address can be
/// bound again straight after) and wakes the loop.
pub(super) struct Slot(Mutex<SlotState>);

struct SlotState {
    listener: Option<Listener>,
    /// The accept loop's, while it waits for a client.
    waiting: Option<Waker>,
}

impl Slot {
    pub fn new(listener: Listener) -> Arc<Slot> {
        Arc::new(Slot(Mutex::new(SlotState {
            listener: Some(listener),
            waiting: None,
        })))
    }

    /// The next client; none once the listener is closed.
    pub async fn accept(&self) -> Option<io::Result<Accepted>> {
        std::future::poll_fn(|cx| {
            let mut state = self.0.lock();
            let Some(listener) = &state.listener else {
                return Poll::Ready(None);
            };
            let polled = listener.poll_accept(cx).map(Some);
            if polled.is_pending() {
                state.waiting = Some(cx.waker().clone());
            }
            polled
        })
        .await
    }

    pub fn close(&self) {
        let mut state = self.0.lock();
        state.listener = None;
        if let Some(waker) = state.waiting.take() {
            waker.wake();
        }
    }
}

/// What a TCP listener is for, as its failure names it.
pub(super) const SERVER: &str = "server TCP";
pub(super) const METRICS: &str = "metrics";

/// An address that could not be listened on, named as Redis's log line
/// names it: `Could not create server TCP listening socket HOST:PORT:
/// bind: REASON`.
#[derive(Debug)]
pub(super) struct ListenFailure {
    what: &'static str,
    host: String,
    port: u16,
    /// The step that failed, as Redis prefixes it (`bind: `); none for a
    /// name that does not resolve.
    step: &'static str,
    error: io::Error,
}

impl ListenFailure {
    /// Whether Redis goes on without this address: an optional one
    /// (`-addr`) the host does not have, or any of a protocol the kernel
    /// lacks (IPv6 switched off).
    pub fn passed_over(&self, optional: bool) -> bool {
        const UNSUPPORTED: [i32; 5] = [
            libc::ENOPROTOOPT,
            libc::EPROTONOSUPPORT,
            libc::ESOCKTNOSUPPORT,
            libc::EPFNOSUPPORT,
            libc::EAFNOSUPPORT,
        ];
        let errno = self.error.raw_os_error();
        (optional && self.error.kind() == io::ErrorKind::AddrNotAvailable)
            || errno.is_some_and(|e| UNSUPPORTED.contains(&e))
    }
}

impl std::fmt::Display for ListenFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A name that does not resolve: std's text leads with its own
        // words before the resolver's, which Redis prints alone.
        let reason = crate::util::os_reason(&self.error);
        let reason = reason
            .strip_prefix("failed to lookup address information: ")
            .unwrap_or(&reason);
        write!(
            f,
            "Could not create {} listening socket {}:{}: {}{reason}",
            self.what, self.host, self.port, self.step
        )
    }
}

impl From<ListenFailure> for io::Error {
    fn from(failed: ListenFailure) -> io::Error {
        io::Error::new(failed.error.kind(), failed.to_string())
    }
}

/// Listens on the first address `host` resolves to that binds, with room
/// for `backlog` connections not yet accepted (`tcp-backlog`; tokio's own
/// `bind` fixes it at 1024, and the kernel caps it at `somaxconn`). A
/// name is resolved on the spot, as Redis does: CONFIG SET of `bind`
/// waits for it.
pub(super) fn listen(
    host: &str,
    port: u16,
    backlog: u32,
    what: &'static str,
) -> Result<TcpListener, ListenFailure> {
    let failed = |step, error| ListenFailure {
        what,
        host: host.to_string(),
        port,
        step,
        error,
    };
    let mut last = None;
    let addrs =
        std::net::ToSocketAddrs::to_socket_addrs(&(host, port)).map_err(|e| failed("", e))?;
    for addr in addrs {
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()
        } else {
            TcpSocket::new_v6()
        };
        let socket = socket.map_err(|e| failed("socket: ", e))?;
        socket
            .set_reuseaddr(true)
            .map_err(|e| failed("setsockopt SO_REUSEADDR: ", e))?;
        // As Redis: an IPv6 socket takes IPv6 alone, so `bind * -::*`
        // (redis.conf's default) binds 0.0.0.0 and :: side by side
        // instead of the second finding its port taken by the first.
        if addr.is_ipv6() {
            socket2::SockRef::from(&socket)
                .set_only_v6(true)
                .map_err(|e| failed("setsockopt IPV6_V6ONLY: ", e))?;
        }
        let bound = socket.bind(addr).map_err(|e| failed("bind: ", e));
        match bound.and_then(|()| socket.listen(backlog).map_err(|e| failed("listen: ", e))) {
            Ok(listener) => return Ok(listener),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        failed(
            "",
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{host} has no address"),
            ),
        )
    }))
}

/// The listening unix socket; its file goes when it does, as Redis
/// removes it at shutdown.
pub(super) struct UnixSocket {
    listener: UnixListener,
    path: Arc<str>,
}

impl UnixSocket {
    /// Listens at `path`, replacing a socket file a server that is gone
    /// left there (anything else there is an error), with `mode`'s
    /// permissions.
    pub fn bind(path: &str, mode: FileMode) -> io::Result<UnixSocket> {
        // Redis's words, with the path Redis leaves out.
        let failed = |step: &'static str| {
            move |e: io::Error| {
                let reason = crate::util::os_reason(&e);
                io::Error::new(
                    e.kind(),
                    format!("Failed opening Unix socket {path}: {step}{reason}"),
                )
            }
        };
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
            std::fs::remove_file(path).map_err(failed("unlink: "))?;
        }
        let listener = UnixListener::bind(path).map_err(failed("bind: "))?;
        let socket = UnixSocket {
            listener,
            path: path.into(),
        };
        if mode != FileMode::default() {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode.0))
                .map_err(failed("chmod: "))?;
        }
        Ok(socket)
    }
}

impl Drop for UnixSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&*self.path);
    }
}

/// A connection of any kind; all are served by the same code.
pub(super) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    /// Boxed: a TLS session's state is much larger than a socket.
    Tls(Box<TlsStream<TcpStream>>),
}

/// Why a client of the TLS port was not served.
pub(super) enum HandshakeError {
    /// Not a TCP connection, or no TLS settings in force.
    NotTls,
    TimedOut,
    Failed(io::Error),
}

impl std::fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HandshakeError::NotTls => f.write_str("TLS is not configured"),
            HandshakeError::TimedOut => f.write_str("TLS handshake timed out"),
            HandshakeError::Failed(e) => e.fmt(f),
        }
    }
}

impl Stream {
    /// The TLS handshake over a TCP connection, given `limit` to finish
    /// (none: as long as it takes, as in Redis).
    pub async fn handshake(
        self,
        acceptor: Option<TlsAcceptor>,
        limit: Option<Duration>,
    ) -> Result<Stream, HandshakeError> {
        let (Stream::Tcp(tcp), Some(acceptor)) = (self, acceptor) else {
            return Err(HandshakeError::NotTls);
        };
        let handshake = acceptor.accept(tcp);
        let done = match limit {
            Some(limit) => tokio::time::timeout(limit, handshake)
                .await
                .map_err(|_| HandshakeError::TimedOut)?,
            None => handshake.await,
        };
        done.map(|tls| Stream::Tls(Box::new(tls)))
            .map_err(HandshakeError::Failed)
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            Stream::Unix(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Unix(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
