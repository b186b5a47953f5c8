//! Request framing. Clients send arrays of bulk strings; people typing into
//! telnet send inline lines. Each header is validated as it arrives, so that
//! oversized or malformed lengths are refused with Redis's error text before
//! any payload is buffered. A request's arguments are slices of the one
//! buffer it arrived in, and what was checked of a request still arriving is
//! remembered, so a large request read in many pieces is not walked again
//! from its start after each read.

use std::borrow::Cow;
use std::ops::Range;

use bytes::{Bytes, BytesMut};

/// Longest inline line or length header before the client is cut off.
const INLINE_MAX: usize = 64 * 1024;
/// Largest bulk argument (Redis's `proto-max-bulk-len` default).
pub(crate) const MAX_BULK_LEN: i64 = 512 * 1024 * 1024;
/// Most arguments in one request.
pub(crate) const MAX_MULTIBULK_LEN: i64 = 1024 * 1024;

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

/// Argument slots a parser keeps between requests; one huge request must not
/// pin its table for the life of the connection.
const ARG_SLOTS_KEPT: usize = 1024;

/// Splits requests off one connection's input buffer, remembering how far
/// the request at its front has been checked. It must always be handed the
/// same buffer, which may only grow at its end between calls.
#[derive(Debug, Default)]
pub(crate) struct RequestParser {
    /// The multibulk request at the front of the buffer, once its count is read.
    progress: Option<Progress>,
    /// Where each argument read so far lies within the request.
    args: Vec<Range<usize>>,
}

/// How far a multibulk request has been read.
#[derive(Debug, Clone, Copy)]
struct Progress {
    /// The limits it was checked under; a change means checking it again.
    authenticated: bool,
    /// Arguments whose headers have not been read.
    left: usize,
    /// Where the next argument's header starts (or, once none is left, the
    /// request's end).
    pos: usize,
    /// A header's `\r` was followed by something other than `\n`. Redis
    /// skips that byte unseen; this server refuses the request once it has
    /// arrived in full, as it always has.
    stray_after_cr: bool,
}

impl RequestParser {
    /// Takes the next complete request off the front of `buf`.
    /// `Ok(None)` means more bytes are needed; empty requests are skipped.
    pub fn next_request(
        &mut self,
        buf: &mut BytesMut,
        authenticated: bool,
    ) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        Ok(self
            .next_request_framed(buf, authenticated)?
            .map(|(_, args)| args))
    }

    /// `next_request`, with the bytes the request was read from (a
    /// replica passes its primary's stream on unchanged).
    pub fn next_request_framed(
        &mut self,
        buf: &mut BytesMut,
        authenticated: bool,
    ) -> Result<Option<(Bytes, Vec<Bytes>)>, ProtocolError> {
        loop {
            let Some(&first) = buf.first() else {
                return Ok(None);
            };
            let step = if first == b'*' {
                self.multibulk(buf, authenticated)?
            } else {
                inline(buf)?
            };
            match step {
                Step::Incomplete => return Ok(None),
                Step::Skipped => continue,
                Step::Request(frame, args) => return Ok(Some((frame, args))),
            }
        }
    }

    fn multibulk(
        &mut self,
        buf: &mut BytesMut,
        authenticated: bool,
    ) -> Result<Step, ProtocolError> {
        let mut progress = match self.progress.take() {
            Some(p) if p.authenticated == authenticated => p,
            _ => {
                self.args.clear();
                match count_header(buf, authenticated)? {
                    Count::Incomplete => return Ok(Step::Incomplete),
                    Count::Empty { header_len } => {
                        let _ = buf.split_to(header_len);
                        return Ok(Step::Skipped);
                    }
                    Count::Args(p) => p,
                }
            }
        };
        loop {
            if progress.pos > buf.len() {
                self.progress = Some(progress);
                return Ok(Step::Incomplete);
            }
            if progress.left == 0 {
                break;
            }
            let Some(bulk) = bulk_header(buf, progress.pos, authenticated)? else {
                self.progress = Some(progress);
                return Ok(Step::Incomplete);
            };
            progress.stray_after_cr |= bulk.stray_after_cr;
            progress.pos = bulk.payload.end + 2;
            progress.left -= 1;
            self.args.push(bulk.payload);
        }
        if progress.stray_after_cr {
            return Err(ProtocolError(Cow::Borrowed("invalid bulk length")));
        }
        let frame = buf.split_to(progress.pos).freeze();
        let args = self.args.iter().map(|r| frame.slice(r.clone())).collect();
        if self.args.capacity() > ARG_SLOTS_KEPT {
            self.args = Vec::new();
        }
        Ok(Step::Request(frame, args))
    }
}

enum Step {
    Incomplete,
    Skipped,
    /// The request's bytes, and its arguments.
    Request(Bytes, Vec<Bytes>),
}

/// What the `*<count>\r\n` header at the front of a buffer says.
enum Count {
    Incomplete,
    /// `*0` or a negative count: nothing to run.
    Empty {
        header_len: usize,
    },
    Args(Progress),
}

fn count_header(buf: &[u8], authenticated: bool) -> Result<Count, ProtocolError> {
    let Some(end) = header_end(buf, 1, "too big mbulk count string")? else {
        return Ok(Count::Incomplete);
    };
    let count = crate::util::parse_i64(&buf[1..end])
        .filter(|n| *n <= MAX_MULTIBULK_LEN)
        .ok_or(ProtocolError(Cow::Borrowed("invalid multibulk length")))?;
    if !authenticated && count > UNAUTHENTICATED_MULTIBULK_MAX {
        return Err(ProtocolError(Cow::Borrowed(
            "unauthenticated multibulk length",
        )));
    }
    let header_len = end + 2;
    if count <= 0 {
        return Ok(Count::Empty { header_len });
    }
    Ok(Count::Args(Progress {
        authenticated,
        left: count as usize,
        pos: header_len,
        stray_after_cr: buf[end + 1] != b'\n',
    }))
}

/// A `$<len>\r\n` header whose whole line has arrived.
struct BulkHeader {
    /// Where its payload lies (it may not have arrived yet).
    payload: Range<usize>,
    stray_after_cr: bool,
}

/// Reads the bulk header starting at `pos`; `None` until its line has arrived.
fn bulk_header(
    buf: &[u8],
    pos: usize,
    authenticated: bool,
) -> Result<Option<BulkHeader>, ProtocolError> {
    let Some(&tag) = buf.get(pos) else {
        return Ok(None);
    };
    if tag != b'$' {
        return Err(ProtocolError(
            format!("expected '$', got '{}'", tag as char).into(),
        ));
    }
    let Some(end) = header_end(buf, pos + 1, "too big bulk count string")? else {
        return Ok(None);
    };
    let len = crate::util::parse_i64(&buf[pos + 1..end])
        .filter(|n| (0..=MAX_BULK_LEN).contains(n))
        .ok_or(ProtocolError(Cow::Borrowed("invalid bulk length")))?;
    if !authenticated && len > UNAUTHENTICATED_BULK_MAX {
        return Err(ProtocolError(Cow::Borrowed("unauthenticated bulk length")));
    }
    let start = end + 2;
    Ok(Some(BulkHeader {
        payload: start..start + len as usize,
        stray_after_cr: buf[end + 1] != b'\n',
    }))
}

/// Finds the `\r` ending the header that starts at `from`, once the byte
/// after it has arrived too.
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

fn inline(buf: &mut BytesMut) -> Result<Step, ProtocolError> {
    // Redis looks for the newline in a C string: a NUL byte hides it, and
    // the request stays incomplete.
    let nl = match buf.iter().position(|&b| b == b'\n' || b == 0) {
        Some(i) if buf[i] == b'\n' => i,
        _ if buf.len() > INLINE_MAX => {
            return Err(ProtocolError(Cow::Borrowed("too big inline request")));
        }
        _ => return Ok(Step::Incomplete),
    };
    let line = buf.split_to(nl + 1).freeze();
    let text = line[..nl].strip_suffix(b"\r").unwrap_or(&line[..nl]);
    let args =
        split_args(text).ok_or(ProtocolError(Cow::Borrowed("unbalanced quotes in request")))?;
    if args.is_empty() {
        return Ok(Step::Skipped);
    }
    Ok(Step::Request(
        line,
        args.into_iter().map(Bytes::from).collect(),
    ))
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

    /// The parser as it was before it read multibulk frames itself (headers
    /// checked here, the frame then decoded by `redis-protocol`, the whole
    /// request walked again on every call): what the new one must match.
    mod oracle {
        use super::super::{
            INLINE_MAX, MAX_BULK_LEN, MAX_MULTIBULK_LEN, ProtocolError, Step,
            UNAUTHENTICATED_BULK_MAX, UNAUTHENTICATED_MULTIBULK_MAX, header_end, memchr,
            split_args,
        };
        use bytes::{Bytes, BytesMut};
        use redis_protocol::resp2::{decode::decode_bytes_mut, types::BytesFrame};
        use std::borrow::Cow;

        fn error(text: &'static str) -> ProtocolError {
            ProtocolError(Cow::Borrowed(text))
        }

        pub fn next_request(
            buf: &mut BytesMut,
            authenticated: bool,
        ) -> Result<Option<Vec<Bytes>>, ProtocolError> {
            while !buf.is_empty() {
                let step = if buf[0] == b'*' {
                    multibulk(buf, authenticated)?
                } else {
                    inline(buf)?
                };
                match step {
                    Step::Incomplete => return Ok(None),
                    Step::Skipped => {}
                    Step::Request(_, args) => return Ok(Some(args)),
                }
            }
            Ok(None)
        }

        fn multibulk(buf: &mut BytesMut, authenticated: bool) -> Result<Step, ProtocolError> {
            let Some(end) = header_end(buf, 1, "too big mbulk count string")? else {
                return Ok(Step::Incomplete);
            };
            let count = crate::util::parse_i64(&buf[1..end])
                .filter(|n| *n <= MAX_MULTIBULK_LEN)
                .ok_or(error("invalid multibulk length"))?;
            if !authenticated && count > UNAUTHENTICATED_MULTIBULK_MAX {
                return Err(error("unauthenticated multibulk length"));
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
                    let text = format!("expected '$', got '{}'", tag as char);
                    return Err(ProtocolError(text.into()));
                }
                let Some(end) = header_end(buf, pos + 1, "too big bulk count string")? else {
                    return Ok(Step::Incomplete);
                };
                let len = crate::util::parse_i64(&buf[pos + 1..end])
                    .filter(|n| (0..=MAX_BULK_LEN).contains(n))
                    .ok_or(error("invalid bulk length"))?;
                if !authenticated && len > UNAUTHENTICATED_BULK_MAX {
                    return Err(error("unauthenticated bulk length"));
                }
                pos = end + 2 + len as usize + 2;
                if pos > buf.len() {
                    return Ok(Step::Incomplete);
                }
            }
            match decode_bytes_mut(buf) {
                Ok(Some((BytesFrame::Array(items), _, _))) => Ok(Step::Request(
                    Bytes::new(),
                    items
                        .into_iter()
                        .map(|item| match item {
                            BytesFrame::BulkString(b) => b,
                            _ => Bytes::new(),
                        })
                        .collect(),
                )),
                _ => Err(error("invalid bulk length")),
            }
        }

        fn inline(buf: &mut BytesMut) -> Result<Step, ProtocolError> {
            let visible = memchr(0, buf).unwrap_or(buf.len());
            let Some(nl) = memchr(b'\n', &buf[..visible]) else {
                if buf.len() > INLINE_MAX {
                    return Err(error("too big inline request"));
                }
                return Ok(Step::Incomplete);
            };
            let line = buf.split_to(nl + 1);
            let text = line[..nl].strip_suffix(b"\r").unwrap_or(&line[..nl]);
            let args = split_args(text).ok_or(error("unbalanced quotes in request"))?;
            if args.is_empty() {
                return Ok(Step::Skipped);
            }
            Ok(Step::Request(
                Bytes::new(),
                args.into_iter().map(Bytes::from).collect(),
            ))
        }
    }

    /// One call's result and how many bytes it left in the buffer.
    type Call = (Result<Option<Vec<Bytes>>, ProtocolError>, usize);

    /// Every call a connection makes while `input` arrives in the given
    /// chunk sizes, the client's authentication cycling through `auths`
    /// from one read to the next; it stops at the first error.
    fn calls(
        input: &[u8],
        chunks: &[usize],
        auths: &[bool],
        mut parse: impl FnMut(&mut BytesMut, bool) -> Result<Option<Vec<Bytes>>, ProtocolError>,
    ) -> Vec<Call> {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        let mut rest = input;
        let mut sizes = chunks.iter().cycle();
        let mut auth = auths.iter().cycle();
        while !rest.is_empty() {
            let n = (*sizes.next().unwrap_or(&rest.len())).clamp(1, rest.len());
            buf.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            let authenticated = *auth.next().unwrap_or(&true);
            loop {
                let result = parse(&mut buf, authenticated);
                let last = !matches!(result, Ok(Some(_)));
                let failed = result.is_err();
                out.push((result, buf.len()));
                if failed {
                    return out;
                }
                if last {
                    break;
                }
            }
        }
        out
    }

    /// The requests a connection's parser makes of `input` fed in the given
    /// chunk sizes, and the error that ended it, if one did.
    fn run(input: &[u8], chunks: &[usize]) -> (Vec<Vec<Bytes>>, Option<ProtocolError>) {
        let mut parser = RequestParser::default();
        let mut requests = Vec::new();
        for (result, _) in calls(input, chunks, &[true], |b, a| parser.next_request(b, a)) {
            match result {
                Ok(Some(args)) => requests.push(args),
                Ok(None) => {}
                Err(e) => return (requests, Some(e)),
            }
        }
        (requests, None)
    }

    /// The old and the new parser (kept across calls, as a connection keeps
    /// it) must make the same calls of the same input.
    fn same_as_oracle(input: &[u8], chunks: &[usize], auths: &[bool]) -> Result<(), String> {
        let old = calls(input, chunks, auths, oracle::next_request);
        let mut parser = RequestParser::default();
        let new = calls(input, chunks, auths, |b, a| parser.next_request(b, a));
        if old == new {
            Ok(())
        } else {
            Err(format!(
                "input {:?} chunks {chunks:?} auths {auths:?}\nold {old:?}\nnew {new:?}",
                Bytes::copy_from_slice(input)
            ))
        }
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

    /// Pieces of nearly valid traffic: whole requests, headers of every
    /// kind of length (valid, negative, over the unauthenticated limits,
    /// malformed), payloads, and line ends that are whole, partial or stray.
    fn piece() -> impl Strategy<Value = Vec<u8>> {
        let arg = proptest::collection::vec(any::<u8>(), 0..12);
        prop_oneof![
            proptest::collection::vec(arg, 0..5).prop_map(|a| encode(&a)),
            (-3i64..14).prop_map(|n| format!("*{n}\r\n").into_bytes()),
            (-3i64..24).prop_map(|n| format!("${n}\r\n").into_bytes()),
            prop_oneof![Just(16384i64), Just(16385), Just(1048576), Just(1048577)]
                .prop_map(|n| format!("*1\r\n${n}\r\n").into_bytes()),
            proptest::sample::select(vec![
                &b"\r\n"[..],
                b"\r",
                b"\n",
                b"\0",
                b"*",
                b"$",
                b"*1\rX",
                b"$1\rXa\r\n",
                b"*01\r\n",
                b"$+1\r\n",
                b"$01\r\n",
                b"*-0\r\n",
                b"PING\r\n",
                b"SET a \"b\r\n",
                b"  \r\n",
            ])
            .prop_map(<[u8]>::to_vec),
            proptest::collection::vec(any::<u8>(), 0..8),
        ]
    }

    fn traffic() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(piece(), 0..12).prop_map(|p| p.concat())
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

    /// As Redis does, the two bytes after a payload are skipped unread.
    #[test]
    fn bytes_after_a_payload_are_not_checked() {
        let (got, err) = run(b"*2\r\n$1\r\naXY$1\r\nb\r\n", &[64]);
        assert_eq!(err, None);
        assert_eq!(got, vec![vec![Bytes::from("a"), Bytes::from("b")]]);
    }

    /// A header's `\r` not followed by `\n` fails the request once all of it
    /// has arrived (Redis would skip the byte).
    #[test]
    fn a_stray_byte_after_a_header_fails_the_whole_request() {
        let input = b"*2\r\n$1\rXa\r\n$1\r\nb\r\n";
        let (got, err) = run(&input[..input.len() - 1], &[64]);
        assert_eq!((got.len(), err), (0, None));
        let (got, err) = run(input, &[3]);
        assert_eq!(got.len(), 0);
        assert_eq!(
            err.unwrap().message(),
            "ERR Protocol error: invalid bulk length"
        );
    }

    #[test]
    fn headers_longer_than_the_limit_match_the_oracle() {
        for prefix in [&b"*"[..], b"*1\r\n$", b"*1\r\n$1\r\na\r\n*"] {
            for tail in [&b""[..], b"\r\n", b"0\r\n"] {
                let mut input = prefix.to_vec();
                input.extend(vec![b'1'; INLINE_MAX + 10]);
                input.extend_from_slice(tail);
                for chunk in [100, 4096, input.len()] {
                    same_as_oracle(&input, &[chunk], &[true]).unwrap();
                }
            }
        }
    }

    /// The parser keeps what it has checked: a request arriving in pieces
    /// is read on from where the last piece ended.
    #[test]
    fn a_request_arriving_in_pieces_is_read_on() {
        let input = encode(&[b"EVALSHA".to_vec(), vec![b'a'; 40], b"1".to_vec()]);
        let mut parser = RequestParser::default();
        let mut buf = BytesMut::new();
        let mut left = Vec::new();
        for &b in &input {
            buf.extend_from_slice(&[b]);
            let got = parser.next_request(&mut buf, true).unwrap();
            left.push(parser.progress.map(|p| p.left));
            if got.is_some() {
                assert!(buf.is_empty());
            }
        }
        assert_eq!(left.iter().flatten().min(), Some(&0));
        assert!(left.contains(&Some(2)) && left.contains(&Some(1)));
        assert_eq!(left.last(), Some(&None));
    }

    #[test]
    fn arguments_share_one_buffer() {
        let mut buf = BytesMut::from(&encode(&[b"SET".to_vec(), b"k".to_vec(), b"v".to_vec()])[..]);
        let args = RequestParser::default()
            .next_request(&mut buf, true)
            .unwrap()
            .unwrap();
        let set = args[0].as_ptr() as usize;
        assert_eq!(args[1].as_ptr() as usize, set + "SET\r\n$1\r\n".len());
        assert_eq!(
            args[2].as_ptr() as usize,
            set + "SET\r\n$1\r\nk\r\n$1\r\n".len()
        );
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

        #[test]
        fn nearly_valid_traffic_parses_as_before(
            input in traffic(),
            chunks in proptest::collection::vec(1usize..40, 1..6),
            auths in proptest::collection::vec(proptest::bool::weighted(0.7), 1..4)) {
            prop_assert_eq!(same_as_oracle(&input, &chunks, &auths), Ok(()));
        }

        #[test]
        fn arbitrary_bytes_parse_as_before(
            input in proptest::collection::vec(any::<u8>(), 0..256),
            chunks in proptest::collection::vec(1usize..64, 1..6),
            auths in proptest::collection::vec(any::<bool>(), 1..4)) {
            prop_assert_eq!(same_as_oracle(&input, &chunks, &auths), Ok(()));
        }
    }
}
