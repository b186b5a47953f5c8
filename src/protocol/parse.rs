//! Request framing. Clients send arrays of bulk strings; people typing into
//! telnet send inline lines. Headers are validated here first, so that
//! oversized or malformed lengths are refused with Redis's error text before
//! any payload is buffered; the multibulk frame itself is then decoded by
//! `redis-protocol`.

use std::borrow::Cow;

use bytes::{Bytes, BytesMut};
use redis_protocol::resp2::{decode::decode_bytes_mut, types::BytesFrame};

/// Longest inline line or length header before the client is cut off.
const INLINE_MAX: usize = 64 * 1024;
/// Largest bulk argument (Redis's `proto-max-bulk-len` default).
pub const MAX_BULK_LEN: i64 = 512 * 1024 * 1024;
/// Most arguments in one request.
pub const MAX_MULTIBULK_LEN: i64 = 1024 * 1024;

/// A malformed request: the client gets `-ERR Protocol error: <text>` and
/// the connection closes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub Cow<'static, str>);

impl ProtocolError {
    pub fn message(&self) -> String {
        format!("ERR Protocol error: {}", self.0)
    }
}

/// Before AUTH a client may only send small requests, so an unauthenticated
/// peer cannot make the server buffer much.
const UNAUTHENTICATED_MULTIBULK_MAX: i64 = 10;
const UNAUTHENTICATED_BULK_MAX: i64 = 16 * 1024;

/// Takes the next complete request off the front of `buf`.
/// `Ok(None)` means more bytes are needed; empty requests are skipped.
pub fn next_request(
    buf: &mut BytesMut,
    authenticated: bool,
) -> Result<Option<Vec<Bytes>>, ProtocolError> {
    loop {
        if buf.is_empty() {
            return Ok(None);
        }
        let step = if buf[0] == b'*' {
            multibulk(buf, authenticated)?
        } else {
            inline(buf)?
        };
        match step {
            Step::Incomplete => return Ok(None),
            Step::Skipped => continue,
            Step::Request(args) => return Ok(Some(args)),
        }
    }
}

enum Step {
    Incomplete,
    Skipped,
    Request(Vec<Bytes>),
}

/// Finds the `\r\n` ending the header that starts at `from`, if it has arrived.
fn header_end(
    buf: &[u8],
    from: usize,
    too_big: &'static str,
) -> Result<Option<usize>, ProtocolError> {
    match memchr(b'\r', &buf[from..]) {
        Some(i) if from + i + 1 < buf.len() => Ok(Some(from + i)),
        Some(_) => Ok(None),
        None if buf.len() - from > INLINE_MAX => Err(ProtocolError(Cow::Borrowed(too_big))),
        None => Ok(None),
    }
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == needle)
}

fn multibulk(buf: &mut BytesMut, authenticated: bool) -> Result<Step, ProtocolError> {
    let Some(end) = header_end(buf, 1, "too big mbulk count string")? else {
        return Ok(Step::Incomplete);
    };
    let count = crate::util::parse_i64(&buf[1..end])
        .filter(|n| *n <= MAX_MULTIBULK_LEN)
        .ok_or(ProtocolError(Cow::Borrowed("invalid multibulk length")))?;
    if !authenticated && count > UNAUTHENTICATED_MULTIBULK_MAX {
        return Err(ProtocolError(Cow::Borrowed(
            "unauthenticated multibulk length",
        )));
    }
    if count <= 0 {
        let _ = buf.split_to(end + 2);
        return Ok(Step::Skipped);
    }
    let mut pos = end + 2;
    for _ in 0..count {
        let Some(&tag) = buf.get(pos) else {
            return Ok(Step::Incomplete);
        };
        if tag != b'$' {
            return Err(ProtocolError(
                format!("expected '$', got '{}'", tag as char).into(),
            ));
        }
        let Some(end) = header_end(buf, pos + 1, "too big bulk count string")? else {
            return Ok(Step::Incomplete);
        };
        let len = crate::util::parse_i64(&buf[pos + 1..end])
            .filter(|n| (0..=MAX_BULK_LEN).contains(n))
            .ok_or(ProtocolError(Cow::Borrowed("invalid bulk length")))?;
        if !authenticated && len > UNAUTHENTICATED_BULK_MAX {
            return Err(ProtocolError(Cow::Borrowed("unauthenticated bulk length")));
        }
        pos = end + 2 + len as usize + 2;
        if pos > buf.len() {
            return Ok(Step::Incomplete);
        }
    }
    match decode_bytes_mut(buf) {
        Ok(Some((BytesFrame::Array(items), _, _))) => Ok(Step::Request(
            items
                .into_iter()
                .map(|item| match item {
                    BytesFrame::BulkString(b) => b,
                    _ => Bytes::new(),
                })
                .collect(),
        )),
        // The headers were valid, so only a bulk not followed by CRLF lands here.
        _ => Err(ProtocolError(Cow::Borrowed("invalid bulk length"))),
    }
}

fn inline(buf: &mut BytesMut) -> Result<Step, ProtocolError> {
    // Redis looks for the newline in a C string: a NUL byte hides it, and
    // the request stays incomplete.
    let visible = memchr(0, buf).unwrap_or(buf.len());
    let Some(nl) = memchr(b'\n', &buf[..visible]) else {
        if buf.len() > INLINE_MAX {
            return Err(ProtocolError(Cow::Borrowed("too big inline request")));
        }
        return Ok(Step::Incomplete);
    };
    let line = buf.split_to(nl + 1);
    let text = line[..nl].strip_suffix(b"\r").unwrap_or(&line[..nl]);
    let args =
        split_args(text).ok_or(ProtocolError(Cow::Borrowed("unbalanced quotes in request")))?;
    if args.is_empty() {
        return Ok(Step::Skipped);
    }
    Ok(Step::Request(args.into_iter().map(Bytes::from).collect()))
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c')
}

fn hex_val(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Splits an inline line the way redis-cli and Redis do: whitespace
/// separated, with "double quotes" (C escapes, `\xHH`) and 'single quotes'.
/// `None` for unbalanced quotes or a closing quote not followed by a space.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    // Redis splits a C string: a NUL byte ends the line.
    let line = line.split(|&b| b == 0).next().unwrap_or(line);
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && is_space(line[i]) {
            i += 1;
        }
        if i >= line.len() {
            return Some(args);
        }
        let mut cur = Vec::new();
        let mut in_double = false;
        let mut in_single = false;
        loop {
            let c = line.get(i).copied();
            if in_double {
                match c {
                    None => return None,
                    Some(b'\\') if line.get(i + 1) == Some(&b'x') => {
                        let hex = |k: usize| line.get(i + k).copied().and_then(hex_val);
                        match (hex(2), hex(3)) {
                            (Some(h), Some(l)) => {
                                cur.push(h * 16 + l);
                                i += 3;
                            }
                            _ => {
                                cur.push(b'x');
                                i += 1;
                            }
                        }
                    }
                    Some(b'\\') if i + 1 < line.len() => {
                        i += 1;
                        cur.push(match line[i] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 0x08,
                            b'a' => 0x07,
                            other => other,
                        });
                    }
                    Some(b'"') => {
                        if line.get(i + 1).is_some_and(|&n| !is_space(n)) {
                            return None;
                        }
                        i += 1;
                        break;
                    }
                    Some(other) => cur.push(other),
                }
            } else if in_single {
                match c {
                    None => return None,
                    Some(b'\\') if line.get(i + 1) == Some(&b'\'') => {
                        i += 1;
                        cur.push(b'\'');
                    }
                    Some(b'\'') => {
                        if line.get(i + 1).is_some_and(|&n| !is_space(n)) {
                            return None;
                        }
                        i += 1;
                        break;
                    }
                    Some(other) => cur.push(other),
                }
            } else {
                match c {
                    None => break,
                    Some(b) if is_space(b) => break,
                    Some(b'"') => in_double = true,
                    Some(b'\'') => in_single = true,
                    Some(other) => cur.push(other),
                }
            }
            i += 1;
        }
        args.push(cur);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Everything the parser makes of `input` fed in the given chunk sizes.
    fn run(input: &[u8], chunks: &[usize]) -> (Vec<Vec<Bytes>>, Option<ProtocolError>) {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        let mut rest = input;
        let mut sizes = chunks.iter().cycle();
        while !rest.is_empty() {
            let n = (*sizes.next().unwrap_or(&rest.len())).clamp(1, rest.len());
            buf.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            loop {
                match next_request(&mut buf, true) {
                    Ok(Some(args)) => out.push(args),
                    Ok(None) => break,
                    Err(e) => return (out, Some(e)),
                }
            }
        }
        (out, None)
    }

    fn encode(args: &[Vec<u8>]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        out
    }

    #[test]
    fn inline_quoting() {
        let got = split_args(br#"set "a b" 'c d' "\x41\n" plain"#).unwrap();
        assert_eq!(
            got,
            vec![
                b"set".to_vec(),
                b"a b".to_vec(),
                b"c d".to_vec(),
                b"A\n".to_vec(),
                b"plain".to_vec()
            ]
        );
        assert_eq!(split_args(br#"a"b c""#).unwrap(), vec![b"ab c".to_vec()]);
        assert!(split_args(br#""open"#).is_none());
        assert!(split_args(br#""a"b"#).is_none());
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(input in proptest::collection::vec(any::<u8>(), 0..512),
                                       chunks in proptest::collection::vec(1usize..64, 1..8)) {
            let _ = run(&input, &chunks);
        }

        #[test]
        fn chunking_does_not_change_requests(
            reqs in proptest::collection::vec(
                proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..6), 1..10),
            chunks in proptest::collection::vec(1usize..50, 1..8)) {
            let mut stream = Vec::new();
            for r in &reqs {
                stream.extend(encode(r));
            }
            let (whole, err) = run(&stream, &[stream.len()]);
            prop_assert!(err.is_none());
            let (pieces, err) = run(&stream, &chunks);
            prop_assert!(err.is_none());
            prop_assert_eq!(&whole, &pieces);
            let want: Vec<Vec<Bytes>> = reqs.iter().map(|r| r.iter().map(|a| Bytes::copy_from_slice(a)).collect()).collect();
            prop_assert_eq!(whole, want);
        }
    }
}
