//! A small RESP client that shows exactly what the server sent: replies
//! and push frames, RESP2 and RESP3, frame by frame.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::WAIT;

/// One reply or push frame.
#[derive(Debug, Clone, PartialEq)]
pub enum F {
    Simple(String),
    Err(String),
    Int(i64),
    Bulk(Vec<u8>),
    /// `$-1`, `*-1` or RESP3 `_`.
    Nil,
    Arr(Vec<F>),
    Push(Vec<F>),
    Map(Vec<(F, F)>),
}

pub fn b(s: &str) -> F {
    F::Bulk(s.as_bytes().to_vec())
}

/// `[b(w0), b(w1), …]` as the array (RESP2) form of a message.
pub fn arr(words: &[&str]) -> F {
    F::Arr(words.iter().map(|w| b(w)).collect())
}

/// Parses one frame from the front of `buf`; `None` if incomplete.
pub fn parse(buf: &[u8]) -> Option<(F, usize)> {
    let end = buf.windows(2).position(|w| w == b"\r\n")?;
    let line = std::str::from_utf8(&buf[1..end]).unwrap();
    let after = end + 2;
    let aggregate = |n: usize, mut at: usize| -> Option<(Vec<F>, usize)> {
        let mut items = Vec::with_capacity(n);
        for _ in 0..n {
            let (f, used) = parse(&buf[at..])?;
            items.push(f);
            at += used;
        }
        Some((items, at))
    };
    Some(match buf[0] {
        b'+' => (F::Simple(line.to_string()), after),
        b'-' => (F::Err(line.to_string()), after),
        b':' => (F::Int(line.parse().unwrap()), after),
        b'_' => (F::Nil, after),
        b'$' => {
            let n: i64 = line.parse().unwrap();
            if n < 0 {
                return Some((F::Nil, after));
            }
            let n = n as usize;
            if buf.len() < after + n + 2 {
                return None;
            }
            (F::Bulk(buf[after..after + n].to_vec()), after + n + 2)
        }
        b'*' | b'>' | b'~' => {
            let n: i64 = line.parse().unwrap();
            if n < 0 {
                return Some((F::Nil, after));
            }
            let (items, at) = aggregate(n as usize, after)?;
            let f = if buf[0] == b'>' {
                F::Push(items)
            } else {
                F::Arr(items)
            };
            (f, at)
        }
        b'%' => {
            let n: usize = line.parse().unwrap();
            let (items, at) = aggregate(n * 2, after)?;
            let mut it = items.into_iter();
            let mut pairs = Vec::new();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                pairs.push((k, v));
            }
            (F::Map(pairs), at)
        }
        other => panic!("unexpected frame type {:?}", other as char),
    })
}

/// A connection over TCP, or over any other stream (a TLS session).
pub struct Conn<S = TcpStream> {
    pub s: S,
    pub buf: BytesMut,
}

impl Conn {
    pub async fn open(addr: SocketAddr) -> Conn {
        let s = TcpStream::connect(addr).await.unwrap();
        s.set_nodelay(true).unwrap();
        Conn::over(s)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> Conn<S> {
    pub fn over(s: S) -> Conn<S> {
        Conn {
            s,
            buf: BytesMut::with_capacity(64 * 1024),
        }
    }

    pub async fn send(&mut self, args: &[&str]) {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        self.s.write_all(&out).await.unwrap();
    }

    /// The next frame, waiting up to `limit`.
    pub async fn read_within(&mut self, limit: Duration) -> Option<F> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some((f, used)) = parse(&self.buf) {
                self.buf.advance(used);
                return Some(f);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.s.read_buf(&mut self.buf)).await {
                Ok(Ok(0)) | Err(_) => return None,
                Ok(Ok(_)) => {}
                Ok(Err(e)) => panic!("read failed: {e}"),
            }
        }
    }

    pub async fn read(&mut self) -> F {
        self.read_within(WAIT).await.expect("a frame")
    }

    pub async fn cmd(&mut self, args: &[&str]) -> F {
        self.send(args).await;
        self.read().await
    }

    /// Asserts that nothing more arrives for a moment.
    pub async fn quiet(&mut self) {
        if let Some(f) = self.read_within(Duration::from_millis(150)).await {
            panic!("unexpected frame {f:?}");
        }
    }
}
