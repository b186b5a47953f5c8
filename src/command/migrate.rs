//! MIGRATE: moves (or copies) keys to another server by sending it
//! RESTORE commands over a plain RESP connection, as Redis 7.0 does. The
//! payloads are rlockd's own DUMP format, so the target must be rlockd.
//!
//! Like Redis, the command waits for the target while it holds its keys:
//! nothing can change them between the DUMP and the DEL. A connection is
//! opened for each call (Redis keeps one for 10 s per target).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use bytes::{Bytes, BytesMut};

use super::Ctx;
use super::presets::{NONDET, RW_ACCESS_DELETE};
use super::spec::acl::{DANGEROUS, KEYSPACE};
use super::spec::flag::WRITE;
use super::spec::{CommandSpec, Group, KeySpec};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::dump;
use crate::protocol::{Protocol, Reply};
use crate::pubsub::Event;
use crate::util::parse_i64;

/// What a MIGRATE line asks for.
struct MigrateArgs {
    copy: bool,
    replace: bool,
    /// AUTH's password, or AUTH2's user and password.
    auth: Option<(Option<Bytes>, Bytes)>,
    /// Where the keys start in the arguments, and how many there are.
    first_key: usize,
    key_count: usize,
}

/// Reads the options in Redis's order: each option, then the timeout and
/// the database (syntax errors come first).
fn parse_options(args: &[Bytes]) -> CmdResult<MigrateArgs> {
    let mut out = MigrateArgs {
        copy: false,
        replace: false,
        auth: None,
        first_key: 3,
        key_count: 1,
    };
    let mut i = 6;
    while i < args.len() {
        let more = args.len() - 1 - i;
        match &args[i].to_ascii_lowercase()[..] {
            b"copy" => out.copy = true,
            b"replace" => out.replace = true,
            b"auth" if more >= 1 => {
                out.auth = Some((None, args[i + 1].clone()));
                i += 1;
            }
            b"auth2" if more >= 2 => {
                out.auth = Some((Some(args[i + 1].clone()), args[i + 2].clone()));
                i += 2;
            }
            b"keys" => {
                if !args[3].is_empty() {
                    return Err(CmdError::other(
                        "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string",
                    ));
                }
                out.first_key = i + 1;
                out.key_count = more;
                break;
            }
            _ => return Err(CmdError::Syntax),
        }
        i += 1;
    }
    Ok(out)
}

/// How talking to the target went wrong, in Redis's words.
enum Trouble {
    Connect,
    Write,
    Read,
}

impl Trouble {
    fn error(self) -> CmdError {
        CmdError::other(match self {
            Trouble::Connect => "IOERR error or timeout connecting to the client",
            Trouble::Write => "IOERR error or timeout writing to target instance",
            Trouble::Read => "IOERR error or timeout reading to target instance",
        })
    }
}

/// One command of the request, as a RESP array of bulk strings.
fn encode_command(out: &mut BytesMut, words: Vec<Bytes>) {
    Reply::Array(words.into_iter().map(Reply::Bulk).collect()).encode(Protocol::Resp2, out);
}

/// Sends `request` and reads one reply line per expected reply, until the
/// first that does not come (what came is kept: the keys it acknowledged
/// are moved).
fn exchange(
    host: &[u8],
    port: &[u8],
    timeout: Duration,
    request: &[u8],
    replies: usize,
) -> Result<(Vec<String>, Option<Trouble>), Trouble> {
    // Redis reads the port as atoi does: a bad one is port 0, refused.
    let port = parse_i64(port)
        .and_then(|p| u16::try_from(p).ok())
        .unwrap_or(0);
    let host = String::from_utf8_lossy(host);
    let addr = (host.as_ref(), port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or(Trouble::Connect)?;
    // Redis connects without blocking and learns of a refusal only when
    // it writes.
    let mut stream = TcpStream::connect_timeout(&addr, timeout).map_err(|e| {
        if e.kind() == std::io::ErrorKind::ConnectionRefused {
            Trouble::Write
        } else {
            Trouble::Connect
        }
    })?;
    let _ = stream.set_nodelay(true);
    stream
        .set_write_timeout(Some(timeout))
        .and_then(|()| stream.set_read_timeout(Some(timeout)))
        .map_err(|_| Trouble::Connect)?;
    stream.write_all(request).map_err(|_| Trouble::Write)?;
    let mut reader = BufReader::new(stream);
    let mut lines = Vec::with_capacity(replies);
    for _ in 0..replies {
        let mut line = Vec::new();
        match reader.read_until(b'\n', &mut line) {
            Ok(n) if n > 0 && line.ends_with(b"\n") => {
                let text = String::from_utf8_lossy(&line);
                lines.push(text.trim_end_matches(['\r', '\n']).to_string());
            }
            _ => return Ok((lines, Some(Trouble::Read))),
        }
    }
    Ok((lines, None))
}

/// Blocks on the network without stalling the other connections of this
/// worker thread (a multi-threaded runtime hands them to another one).
fn off_async<T>(work: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    if Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread) {
        tokio::task::block_in_place(work)
    } else {
        work()
    }
}

pub fn migrate(ctx: &mut Ctx) -> CmdResult<Reply> {
    let args = ctx.args;
    let opts = parse_options(args)?;
    let timeout = parse_i64(&args[5]).ok_or(CmdError::NotInteger)?;
    let target_db = parse_i64(&args[4]).ok_or(CmdError::NotInteger)?;
    let timeout = Duration::from_millis(if timeout <= 0 { 1000 } else { timeout as u64 });
    let now = ctx.now();
    let restore = if ctx.shared.cluster.is_some() {
        "RESTORE-ASKING"
    } else {
        "RESTORE"
    };
    let mut db = ctx.db();
    let mut request = BytesMut::new();
    if let Some((user, password)) = &opts.auth {
        let mut words = vec![Bytes::from_static(b"AUTH")];
        words.extend(user.clone());
        words.push(password.clone());
        encode_command(&mut request, words);
    }
    encode_command(
        &mut request,
        vec![Bytes::from_static(b"SELECT"), target_db.to_string().into()],
    );
    let mut moved = Vec::new();
    for key in &args[opts.first_key..opts.first_key + opts.key_count] {
        // A read lookup first, as Redis's (hits and misses).
        if db.get(key)?.is_none() {
            continue;
        }
        let Some(entry) = db.entry(key)? else {
            continue;
        };
        let ttl = entry
            .expire_at()
            .map_or(0, |at| at.saturating_sub(now).max(1));
        let mut words = vec![
            Bytes::from_static(restore.as_bytes()),
            key.clone(),
            ttl.to_string().into(),
            dump::dump(&entry.value).into(),
        ];
        if opts.replace {
            words.push(Bytes::from_static(b"REPLACE"));
        }
        encode_command(&mut request, words);
        moved.push(key.clone());
    }
    if moved.is_empty() {
        return Ok(Reply::status("NOKEY"));
    }
    // AUTH's and SELECT's replies come before the keys'.
    let preamble = opts.auth.is_some() as usize + 1;
    let (host, port) = (&args[1], &args[2]);
    let (lines, trouble) =
        off_async(|| exchange(host, port, timeout, &request, preamble + moved.len()))
            .map_err(Trouble::error)?;
    if lines.len() < preamble {
        return Err(Trouble::Read.error());
    }
    let refused = lines[..preamble].iter().find(|l| l.starts_with('-'));
    let mut failure = None;
    for (key, line) in moved.iter().zip(&lines[preamble..]) {
        if let Some(error) = refused.or(line.starts_with('-').then_some(line)) {
            failure.get_or_insert_with(|| {
                CmdError::other(format!(
                    "ERR Target instance replied with error: {}",
                    &error[1..]
                ))
            });
        } else if !opts.copy {
            db.remove(key)?;
            db.modified(key, Event::Del)?;
        }
    }
    match (failure, trouble) {
        (Some(e), _) => Err(e),
        (None, Some(trouble)) => Err(trouble.error()),
        (None, None) => Ok(Reply::OK),
    }
}

const RW_ACCESS_DELETE_INCOMPLETE: &[&str] = &["RW", "access", "delete", "incomplete"];

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("migrate", -6, Group::Generic, migrate).flags(WRITE).acl(KEYSPACE | DANGEROUS).tips(NONDET)
        .keys(&[KeySpec::range(3, 0, 1, RW_ACCESS_DELETE), KeySpec::all_after_keyword("KEYS", -2, RW_ACCESS_DELETE_INCOMPLETE)])
        .syntax("host port key destination-db timeout [COPY] [REPLACE] [AUTH password | AUTH2 username password] [KEYS key...]")
        .doc("2.6.0", "Moves keys to another rlockd with RESTORE, deleting them here unless COPY."),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<Bytes> {
        line.split(' ')
            .map(|w| Bytes::copy_from_slice(w.replace("''", "").as_bytes()))
            .collect()
    }

    #[test]
    fn options_parse_as_redis_reads_them() {
        let o = parse_options(&args("MIGRATE h 1 k 0 10 COPY REPLACE AUTH2 u p"))
            .ok()
            .unwrap();
        assert!(o.copy && o.replace);
        assert_eq!(o.auth, Some((Some(Bytes::from("u")), Bytes::from("p"))));
        let o = parse_options(&args("MIGRATE h 1 '' 0 10 AUTH pw KEYS a b c"))
            .ok()
            .unwrap();
        assert_eq!((o.first_key, o.key_count), (9, 3));
        assert!(matches!(
            parse_options(&args("MIGRATE h 1 k 0 10 KEYS a")),
            Err(CmdError::Other(_))
        ));
        assert!(matches!(
            parse_options(&args("MIGRATE h 1 k 0 10 AUTH2 u")),
            Err(CmdError::Syntax)
        ));
    }
}
