//! Where clients connect: TCP addresses, the unix socket and the TLS
//! port. The accept loop takes one from any kind, and the connection code
//! serves them all through `Stream`.

use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
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
    pub async fn accept(&self) -> io::Result<Accepted> {
        match self {
            Listener::Tcp(listener) | Listener::Tls(listener) => {
                let (stream, peer) = listener.accept().await?;
                // Replies go out as soon as they are written, not batched
                // with the next.
                let _ = stream.set_nodelay(true);
                let local = stream.local_addr().unwrap_or(peer);
                Ok(Accepted {
                    stream: Stream::Tcp(stream),
                    peer: peer.into(),
                    local: local.into(),
                    tls: matches!(self, Listener::Tls(_)),
                })
            }
            Listener::Unix(socket) => {
                let (stream, _) = socket.listener.accept().await?;
                let at = ClientAddr::Unix(socket.path.clone());
                Ok(Accepted {
                    stream: Stream::Unix(stream),
                    peer: at.clone(),
                    local: at,
                    tls: false,
                })
            }
        }
    }
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
        let failed = |e: io::Error| {
            io::Error::new(e.kind(), format!("Failed opening Unix socket {path}: {e}"))
        };
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
            std::fs::remove_file(path).map_err(failed)?;
        }
        let listener = UnixListener::bind(path).map_err(failed)?;
        let socket = UnixSocket {
            listener,
            path: path.into(),
        };
        if mode != FileMode::default() {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode.0))
                .map_err(failed)?;
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
