//! Native runs of the well-known lock scripts. A script whose SHA1 is one
//! of these runs as Rust instead of Lua: the same commands, in the same
//! order, through the same command path as `redis.call`, so replies,
//! effects, statistics and notifications are those of the Lua run. Each
//! is a line-for-line transliteration of its script, taking its branches
//! from the commands' replies as the script does.
//!
//! The one thing a transliteration cannot reproduce cheaply is a failing
//! `redis.call` (its error carries the script's line), so before running,
//! each checks, without touching anything, that none of its calls can
//! fail; if one could, the script runs in Lua as usual.

use std::collections::HashMap;
use std::sync::{LazyLock, OnceLock};

use bytes::Bytes;

use crate::command::Ctx;
use crate::command::registry::{execute, registry};
use crate::context::Client;
use crate::keyspace::Value;
use crate::protocol::Reply;
use crate::scripting::sha1_hex;
use crate::util::parse_i64;

/// A native run: `None` if it must run in Lua (decided before any effect).
pub(super) type Native = fn(&mut NativeRun) -> Option<Reply>;

/// The scripts run natively, each with its native run. Their texts are
/// kept byte for byte as the clients send them: a client's EVALSHA names
/// the SHA1 of exactly that text.
const KNOWN: [(&str, Native); 4] = [
    // Redisson's RLock (`tryLockInnerAsync`'s string literals, joined).
    (include_str!("lock_scripts/redisson_lock.lua"), |run| {
        reentrant_lock(run, &HINCRBY)
    }),
    // Redisson's unlock (`unlockInnerAsync`).
    (include_str!("lock_scripts/redisson_unlock.lua"), |run| {
        reentrant_unlock(run, false)
    }),
    // The hiredis `dlock` client of `tests/clients/cpp/dlock.cpp`: takes a
    // free lock with HSET, and unlocking a free lock publishes and answers 1.
    (include_str!("lock_scripts/dlock_lock.lua"), |run| {
        reentrant_lock(run, &HSET)
    }),
    (include_str!("lock_scripts/dlock_unlock.lua"), |run| {
        reentrant_unlock(run, true)
    }),
];

static BY_SHA: LazyLock<HashMap<String, Native, foldhash::fast::RandomState>> =
    LazyLock::new(|| {
        KNOWN
            .iter()
            .map(|&(text, native)| (sha1_hex(text.as_bytes()), native))
            .collect()
    });

pub(super) fn find(sha: &str) -> Option<Native> {
    BY_SHA.get(sha).copied()
}

/// What a native run works with: the caller's context, a script client,
/// the script's KEYS and ARGV.
pub(super) struct NativeRun<'r, 'c, 'a> {
    ctx: &'r mut Ctx<'c, 'a>,
    client: Client,
    keys: &'r [Bytes],
    args: &'r [Bytes],
}

/// What a lock's hash holds for one owner, as far as its calls care.
enum Holds {
    /// No key: the lock is free.
    Free,
    /// A hash without the owner's field.
    Other,
    /// A hash with the owner's count, an integer.
    Count(i64),
}

impl<'r, 'c, 'a> NativeRun<'r, 'c, 'a> {
    pub(super) fn new(ctx: &'r mut Ctx<'c, 'a>, keys: &'r [Bytes], args: &'r [Bytes]) -> Self {
        let client = Client::for_script(ctx.client);
        NativeRun {
            ctx,
            client,
            keys,
            args,
        }
    }

    /// Runs one command as `redis.call` would (its keys are the script's
    /// declared keys, whose shards the run holds). A failure, which the
    /// checks before the run rule out, ends the run with the command's
    /// error.
    fn call<const N: usize>(&mut self, cmd: &Call, args: [&Bytes; N]) -> Result<Reply, Reply> {
        const { assert!(N < LINE, "a call longer than LINE") };
        // A line on the stack spares an allocation per call.
        let mut line: [Bytes; LINE] = Default::default();
        line[0] = Bytes::clone(&cmd.name);
        for (slot, arg) in line[1..].iter_mut().zip(args) {
            *slot = Bytes::clone(arg);
        }
        match execute(
            self.ctx.shared,
            &mut self.client,
            cmd.id(),
            &line[..=N],
            self.ctx.locked,
        ) {
            Reply::Error(e) => Err(Reply::Error(e)),
            reply => Ok(reply),
        }
    }

    fn int<const N: usize>(&mut self, cmd: &Call, args: [&Bytes; N]) -> Result<i64, Reply> {
        match self.call(cmd, args)? {
            Reply::Int(n) => Ok(n),
            other => Err(other),
        }
    }

    /// What `key` holds for `owner`; `None` if a call on it could fail
    /// (not a hash, or the owner's count is not an integer).
    fn holds(&mut self, key: &[u8], owner: &[u8]) -> Option<Holds> {
        let db = self.client.db;
        match self.ctx.locked.db(db).peek(key).ok()? {
            None => Some(Holds::Free),
            Some(Value::Hash(hash)) => match hash.get(owner) {
                None => Some(Holds::Other),
                Some(count) => parse_i64(count).map(Holds::Count),
            },
            Some(_) => None,
        }
    }
}

/// A lease PEXPIRE takes without error and without deleting the key: a
/// positive decimal integer far from overflowing a deadline.
fn lease_ok(lease: &[u8]) -> bool {
    (1..=13).contains(&lease.len()) && lease[0] != b'0' && lease.iter().all(u8::is_ascii_digit)
}

/// A command the scripts call, resolved on its first call: a run skips
/// the name lookup a client's line needs.
struct Call {
    name: Bytes,
    id: OnceLock<usize>,
}

impl Call {
    const fn new(name: &'static [u8]) -> Self {
        Call {
            name: Bytes::from_static(name),
            id: OnceLock::new(),
        }
    }

    fn id(&self) -> usize {
        *self.id.get_or_init(|| {
            registry()
                .lookup(&self.name)
                .expect("a command in the table")
        })
    }
}

static EXISTS: Call = Call::new(b"exists");
static HSET: Call = Call::new(b"hset");
static HINCRBY: Call = Call::new(b"hincrby");
static HEXISTS: Call = Call::new(b"hexists");
static PEXPIRE: Call = Call::new(b"pexpire");
static PTTL: Call = Call::new(b"pttl");
static DEL: Call = Call::new(b"del");
static PUBLISH: Call = Call::new(b"publish");

/// Room for a command and its arguments: HINCRBY's three are the most a
/// script passes (`call` refuses to compile a longer one).
const LINE: usize = 4;

/// Literal arguments, as `redis.call` would pass them.
static ONE: Bytes = Bytes::from_static(b"1");
static MINUS_ONE: Bytes = Bytes::from_static(b"-1");

/// The lock scripts: KEYS[1] the lock, ARGV[1] the lease, ARGV[2] the
/// owner; `take_free` is the command that takes a free lock.
fn reentrant_lock(run: &mut NativeRun, take_free: &Call) -> Option<Reply> {
    let (Some(key), [lease, owner, ..]) = (run.keys.first(), run.args) else {
        return None;
    };
    match run.holds(key, owner)? {
        Holds::Count(n) if n == i64::MAX => return None,
        _ if !lease_ok(lease) => return None,
        _ => {}
    }
    let steps = |run: &mut NativeRun| -> Result<Reply, Reply> {
        if run.int(&EXISTS, [key])? == 0 {
            run.int(take_free, [key, owner, &ONE])?;
            run.int(&PEXPIRE, [key, lease])?;
            return Ok(Reply::Nil);
        }
        if run.int(&HEXISTS, [key, owner])? == 1 {
            run.int(&HINCRBY, [key, owner, &ONE])?;
            run.int(&PEXPIRE, [key, lease])?;
            return Ok(Reply::Nil);
        }
        run.call(&PTTL, [key])
    };
    Some(steps(run).unwrap_or_else(|failed| failed))
}

/// The unlock scripts: KEYS[1] the lock, KEYS[2] the wake-up channel;
/// ARGV[1] the message, ARGV[2] the lease, ARGV[3] the owner.
/// `publish_free`: a free lock publishes and answers 1.
fn reentrant_unlock(run: &mut NativeRun, publish_free: bool) -> Option<Reply> {
    let ([key, channel, ..], [message, lease, owner, ..]) = (run.keys, run.args) else {
        return None;
    };
    match run.holds(key, owner)? {
        Holds::Count(n) if n == i64::MIN => return None,
        // A free lock is an error-free run for Redisson's too: its HEXISTS on
        // a missing key answers 0.
        _ if !lease_ok(lease) => return None,
        _ => {}
    }
    let steps = |run: &mut NativeRun| -> Result<Reply, Reply> {
        if publish_free && run.int(&EXISTS, [key])? == 0 {
            run.int(&PUBLISH, [channel, message])?;
            return Ok(Reply::Int(1));
        }
        if run.int(&HEXISTS, [key, owner])? == 0 {
            return Ok(Reply::Nil);
        }
        if run.int(&HINCRBY, [key, owner, &MINUS_ONE])? > 0 {
            run.int(&PEXPIRE, [key, lease])?;
            return Ok(Reply::Int(0));
        }
        run.int(&DEL, [key])?;
        run.int(&PUBLISH, [channel, message])?;
        Ok(Reply::Int(1))
    };
    Some(steps(run).unwrap_or_else(|failed| failed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_script_is_found_by_its_sha() {
        for (text, _) in KNOWN {
            assert!(find(&sha1_hex(text.as_bytes())).is_some());
        }
        assert!(find(&sha1_hex(b"return 1")).is_none());
    }

    #[test]
    fn leases_that_pexpire_takes_cleanly() {
        for ok in ["1", "30000", "9999999999999"] {
            assert!(lease_ok(ok.as_bytes()), "{ok}");
        }
        for refused in [
            "",
            "0",
            "-5",
            "030000",
            "1.5",
            "abc",
            "99999999999999",
            " 1",
        ] {
            assert!(!lease_ok(refused.as_bytes()), "{refused}");
        }
    }
}
