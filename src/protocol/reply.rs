//! Replies as a small tree, encoded for the connection's protocol version at
//! write time: one command handler serves RESP2 and RESP3 clients alike.

use std::borrow::Cow;

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::CmdError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    #[default]
    Resp2,
    Resp3,
}

impl Protocol {
    pub fn version(self) -> i64 {
        match self {
            Protocol::Resp2 => 2,
            Protocol::Resp3 => 3,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Status(Cow<'static, str>),
    Error(CmdError),
    Int(i64),
    Bulk(Bytes),
    /// A missing value: `$-1` in RESP2, `_` in RESP3.
    Nil,
    /// A missing aggregate (EXEC aborted by WATCH, timed-out blocking pop): `*-1` / `_`.
    NilArray,
    Array(Vec<Reply>),
    /// Flattened to an array in RESP2.
    Map(Vec<(Reply, Reply)>),
    Set(Vec<Reply>),
    Double(f64),
    /// A coordinate as Redis prints it (`%.17Lf`, trailing zeros cut): a
    /// bulk string in RESP2, a double in RESP3.
    Coord(f64),
    Bool(bool),
    /// `txt` verbatim string in RESP3; a bulk string in RESP2.
    Verbatim(Bytes),
    /// Out-of-band messages (pub/sub); an array in RESP2.
    Push(Vec<Reply>),
    /// A number too large for an integer, in decimal: `(` in RESP3, a bulk
    /// string in RESP2.
    BigNumber(Bytes),
    /// A reply preceded by attributes (RESP3 `|`); RESP2 sees the reply only.
    Attributed(Vec<(Reply, Reply)>, Box<Reply>),
    /// A push frame, then the reply (RESP3 only: DEBUG PROTOCOL push).
    AfterPush(Vec<Reply>, Box<Reply>),
}

impl Reply {
    pub const OK: Reply = Reply::Status(Cow::Borrowed("OK"));

    pub fn status(text: &'static str) -> Reply {
        Reply::Status(Cow::Borrowed(text))
    }

    pub fn bulk(data: impl Into<Bytes>) -> Reply {
        Reply::Bulk(data.into())
    }

    pub fn bulk_from(data: &[u8]) -> Reply {
        Reply::Bulk(Bytes::copy_from_slice(data))
    }

    pub fn bulk_str(text: &str) -> Reply {
        Reply::Bulk(Bytes::copy_from_slice(text.as_bytes()))
    }

    pub fn opt_bulk(data: Option<Bytes>) -> Reply {
        data.map_or(Reply::Nil, Reply::Bulk)
    }

    pub fn array_of_bulks<I, B>(items: I) -> Reply
    where
        I: IntoIterator<Item = B>,
        B: Into<Bytes>,
    {
        Reply::Array(items.into_iter().map(|b| Reply::Bulk(b.into())).collect())
    }

    pub fn encode(&self, proto: Protocol, out: &mut BytesMut) {
        match self {
            Reply::Status(s) => line(out, b'+', s.as_bytes()),
            Reply::Error(CmdError::RawText(text)) => {
                let text: Vec<u8> = text
                    .iter()
                    .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
                    .collect();
                line(out, b'-', &text);
            }
            Reply::Error(e) => {
                // An error reply is one line: Redis replaces line breaks in
                // messages that echo user input.
                let text = e.to_string().replace(['\r', '\n'], " ");
                line(out, b'-', text.as_bytes());
            }
            Reply::Int(n) => int_line(out, b':', *n),
            Reply::Bulk(b) => bulk(out, b),
            Reply::Nil => match proto {
                Protocol::Resp2 => out.put_slice(b"$-1\r\n"),
                Protocol::Resp3 => out.put_slice(b"_\r\n"),
            },
            Reply::NilArray => match proto {
                Protocol::Resp2 => out.put_slice(b"*-1\r\n"),
                Protocol::Resp3 => out.put_slice(b"_\r\n"),
            },
            Reply::Array(items) => aggregate(out, proto, b'*', items),
            Reply::Set(items) => {
                let tag = if proto == Protocol::Resp3 { b'~' } else { b'*' };
                aggregate(out, proto, tag, items)
            }
            Reply::Push(items) => {
                let tag = if proto == Protocol::Resp3 { b'>' } else { b'*' };
                aggregate(out, proto, tag, items)
            }
            Reply::Map(pairs) => {
                match proto {
                    Protocol::Resp2 => int_line(out, b'*', pairs.len() as i64 * 2),
                    Protocol::Resp3 => int_line(out, b'%', pairs.len() as i64),
                }
                pairs_body(out, proto, pairs);
            }
            Reply::BigNumber(digits) => match proto {
                Protocol::Resp2 => bulk(out, digits),
                Protocol::Resp3 => line(out, b'(', digits),
            },
            Reply::Attributed(pairs, reply) => {
                if proto == Protocol::Resp3 {
                    int_line(out, b'|', pairs.len() as i64);
                    pairs_body(out, proto, pairs);
                }
                reply.encode(proto, out);
            }
            Reply::AfterPush(items, reply) => {
                Reply::Push(items.clone()).encode(proto, out);
                reply.encode(proto, out);
            }
            Reply::Double(d) => {
                let text = crate::util::format_double(*d);
                match proto {
                    Protocol::Resp2 => bulk(out, text.as_bytes()),
                    Protocol::Resp3 => line(out, b',', text.as_bytes()),
                }
            }
            Reply::Coord(d) => {
                let text = crate::util::format_fixed17(*d);
                match proto {
                    Protocol::Resp2 => bulk(out, text.as_bytes()),
                    Protocol::Resp3 => line(out, b',', text.as_bytes()),
                }
            }
            Reply::Bool(b) => match proto {
                Protocol::Resp2 => int_line(out, b':', *b as i64),
                Protocol::Resp3 => out.put_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
            },
            Reply::Verbatim(text) => match proto {
                Protocol::Resp2 => bulk(out, text),
                Protocol::Resp3 => {
                    int_line(out, b'=', text.len() as i64 + 4);
                    out.put_slice(b"txt:");
                    out.put_slice(text);
                    out.put_slice(b"\r\n");
                }
            },
        }
    }
}

impl From<CmdError> for Reply {
    fn from(e: CmdError) -> Self {
        Reply::Error(e)
    }
}

fn line(out: &mut BytesMut, tag: u8, body: &[u8]) {
    out.reserve(body.len() + 3);
    out.put_u8(tag);
    out.put_slice(body);
    out.put_slice(b"\r\n");
}

fn int_line(out: &mut BytesMut, tag: u8, n: i64) {
    let mut buf = itoa::Buffer::new();
    line(out, tag, buf.format(n).as_bytes());
}

fn bulk(out: &mut BytesMut, data: &[u8]) {
    int_line(out, b'$', data.len() as i64);
    out.reserve(data.len() + 2);
    out.put_slice(data);
    out.put_slice(b"\r\n");
}

fn pairs_body(out: &mut BytesMut, proto: Protocol, pairs: &[(Reply, Reply)]) {
    for (k, v) in pairs {
        k.encode(proto, out);
        v.encode(proto, out);
    }
}

fn aggregate(out: &mut BytesMut, proto: Protocol, tag: u8, items: &[Reply]) {
    int_line(out, tag, items.len() as i64);
    for item in items {
        item.encode(proto, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(r: &Reply, p: Protocol) -> Vec<u8> {
        let mut out = BytesMut::new();
        r.encode(p, &mut out);
        out.to_vec()
    }

    #[test]
    fn resp2_and_resp3_shapes() {
        let map = Reply::Map(vec![(Reply::bulk_str("a"), Reply::Int(1))]);
        assert_eq!(enc(&map, Protocol::Resp2), b"*2\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(enc(&map, Protocol::Resp3), b"%1\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(enc(&Reply::Nil, Protocol::Resp2), b"$-1\r\n");
        assert_eq!(enc(&Reply::Nil, Protocol::Resp3), b"_\r\n");
        assert_eq!(enc(&Reply::NilArray, Protocol::Resp2), b"*-1\r\n");
        assert_eq!(enc(&Reply::Bool(true), Protocol::Resp2), b":1\r\n");
        assert_eq!(enc(&Reply::Double(1.5), Protocol::Resp3), b",1.5\r\n");
        assert_eq!(enc(&Reply::Double(1.5), Protocol::Resp2), b"$3\r\n1.5\r\n");
    }

    #[test]
    fn error_text_is_one_line() {
        let r = Reply::Error(CmdError::other("ERR a\r\nb"));
        assert_eq!(enc(&r, Protocol::Resp2), b"-ERR a  b\r\n");
    }
}
