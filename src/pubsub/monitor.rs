//! MONITOR: every command run, as one status line per command, sent to
//! the clients that asked through the same mailboxes pub/sub messages
//! use. With nobody monitoring, a command pays one relaxed atomic load.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use indexmap::IndexMap;
use parking_lot::RwLock;

use super::{Hasher, Mailbox};
use crate::client_handle::ClientAddr;

/// Who ran a command, as the line's bracket shows it.
#[derive(Clone, Copy)]
pub enum Origin<'o> {
    Client(&'o ClientAddr),
    /// A script's `redis.call`.
    Script,
}

/// The clients in MONITOR mode, by client id.
#[derive(Default)]
pub struct Monitors {
    count: AtomicUsize,
    mailboxes: RwLock<IndexMap<u64, Arc<Mailbox>, Hasher>>,
}

impl Monitors {
    /// Whether anyone monitors: the only cost of MONITOR to the hot path.
    pub fn active(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    pub(super) fn add(&self, mailbox: &Arc<Mailbox>) {
        let mut mailboxes = self.mailboxes.write();
        mailboxes.insert(mailbox.id(), mailbox.clone());
        self.count.store(mailboxes.len(), Ordering::Relaxed);
    }

    pub(super) fn remove(&self, id: u64) {
        let mut mailboxes = self.mailboxes.write();
        mailboxes.shift_remove(&id);
        self.count.store(mailboxes.len(), Ordering::Relaxed);
    }

    /// Sends one command's line to every monitor (or holds it, while a
    /// script that may still be rolled back runs on this thread).
    pub fn feed(&self, db: usize, origin: Origin, args: &[Bytes]) {
        let line = line(db, origin, args);
        if !super::hold_monitor_line(&line) {
            self.deliver(&line);
        }
    }

    pub(super) fn deliver(&self, line: &Bytes) {
        for mailbox in self.mailboxes.read().values() {
            mailbox.push(line.clone());
        }
    }
}

/// `+<secs>.<micros> [<db> <addr>] "arg" …`, with passwords redacted.
fn line(db: usize, origin: Origin, args: &[Bytes]) -> Bytes {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let mut out = format!("+{}.{:06} [{db} ", now.as_secs(), now.subsec_micros()).into_bytes();
    match origin {
        // Redis names a socket client by the socket alone, without its `:0`.
        Origin::Client(ClientAddr::Unix(path)) => {
            out.extend_from_slice(b"unix:");
            out.extend_from_slice(path.as_bytes());
        }
        Origin::Client(addr) => out.extend_from_slice(addr.to_string().as_bytes()),
        Origin::Script => out.extend_from_slice(b"lua"),
    }
    out.push(b']');
    let secret = secret_args(args);
    for (i, arg) in args.iter().enumerate() {
        out.push(b' ');
        if secret(i) {
            out.extend_from_slice(b"\"(redacted)\"");
        } else {
            crate::util::quote(&mut out, arg);
        }
    }
    out.extend_from_slice(b"\r\n");
    out.into()
}

/// The directives whose values CONFIG SET hides, as Redis's
/// `SENSITIVE_CONFIG` ones.
const SENSITIVE_DIRECTIVES: &[&[u8]] = &[
    b"requirepass",
    b"masterauth",
    b"tls-key-file-pass",
    b"tls-client-key-file-pass",
];

/// Which arguments carry a secret, as Redis redacts them: all of AUTH's;
/// the two after each AUTH option of HELLO (scanned as HELLO parses its
/// options); MIGRATE's AUTH password and AUTH2 user and password; every
/// argument of ACL SETUSER from the user's name on; the value CONFIG SET
/// gives a sensitive directive.
pub fn secret_args(args: &[Bytes]) -> impl Fn(usize) -> bool + use<> {
    let name = args[0].to_ascii_lowercase();
    let sub = |s: &[u8]| args.get(1).is_some_and(|a| a.eq_ignore_ascii_case(s));
    let mut hidden = Vec::new();
    if name == b"auth" {
        hidden.extend(1..args.len());
    } else if name == b"migrate" {
        // The options follow host, port, key, db and timeout.
        for (i, arg) in args.iter().enumerate().skip(6) {
            if arg.eq_ignore_ascii_case(b"auth") {
                hidden.push(i + 1);
            } else if arg.eq_ignore_ascii_case(b"auth2") {
                hidden.extend([i + 1, i + 2]);
            }
        }
    } else if name == b"acl" && sub(b"setuser") {
        hidden.extend(2..args.len());
    } else if name == b"config" && sub(b"set") {
        let pairs = args.get(2..).unwrap_or_default().chunks(2);
        for (n, pair) in pairs.enumerate() {
            let directive = pair[0].to_ascii_lowercase();
            if SENSITIVE_DIRECTIVES.contains(&directive.as_slice()) {
                hidden.push(3 + 2 * n);
            }
        }
    } else if name == b"hello" {
        let mut i = 2;
        while i < args.len() {
            let left = args.len() - i - 1;
            if args[i].eq_ignore_ascii_case(b"auth") && left >= 2 {
                hidden.extend([i + 1, i + 2]);
                i += 3;
            } else if args[i].eq_ignore_ascii_case(b"setname") && left >= 1 {
                i += 2;
            } else {
                break;
            }
        }
    }
    move |i| hidden.contains(&i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(args: &[&[u8]]) -> String {
        let args: Vec<Bytes> = args.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        let line = line(3, Origin::Script, &args);
        let text = String::from_utf8(line.to_vec()).unwrap();
        text.split_once(' ').unwrap().1.to_string()
    }

    #[test]
    fn quoting_and_redaction() {
        assert_eq!(
            shown(&[b"set", b"a\"b\\c", b"\x01\n\xff\x07 ~"]),
            "[3 lua] \"set\" \"a\\\"b\\\\c\" \"\\x01\\n\\xff\\a ~\"\r\n"
        );
        assert_eq!(
            shown(&[b"AUTH", b"u", b"p"]),
            "[3 lua] \"AUTH\" \"(redacted)\" \"(redacted)\"\r\n"
        );
        assert_eq!(
            shown(&[b"hello", b"3", b"SETNAME", b"n", b"auth", b"u", b"p"]),
            "[3 lua] \"hello\" \"3\" \"SETNAME\" \"n\" \"auth\" \"(redacted)\" \"(redacted)\"\r\n"
        );
    }

    /// The arguments Redis 7.0 redacts beyond AUTH and HELLO's.
    fn hidden(args: &[&[u8]]) -> Vec<usize> {
        let args: Vec<Bytes> = args.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        let secret = secret_args(&args);
        (0..args.len()).filter(|&i| secret(i)).collect()
    }

    #[test]
    fn migrate_acl_setuser_and_sensitive_directives_are_redacted() {
        let migrate: &[&[u8]] = &[b"MIGRATE", b"h", b"1", b"k", b"0", b"5", b"COPY"];
        assert_eq!(hidden(migrate), Vec::<usize>::new());
        assert_eq!(hidden(&[migrate, &[b"auth", b"pw"]].concat()), [8]);
        assert_eq!(
            hidden(&[migrate, &[b"AUTH2", b"u", b"pw"]].concat()),
            [8, 9]
        );
        assert_eq!(
            hidden(&[b"acl", b"SETUSER", b"n", b"on", b">pw"]),
            [2, 3, 4]
        );
        assert_eq!(hidden(&[b"acl", b"whoami"]), Vec::<usize>::new());
        assert_eq!(
            hidden(&[b"CONFIG", b"set", b"maxclients", b"9", b"MasterAuth", b"pw"]),
            [5]
        );
        assert_eq!(
            hidden(&[b"config", b"get", b"requirepass"]),
            Vec::<usize>::new()
        );
    }
}
