//! What the append-only file records: each write as the state it left its
//! keys in (a key's whole value, then `PEXPIREAT` with its absolute
//! deadline, or `DEL`), written while the command still holds the keys'
//! shards.
//!
//! Logging states rather than commands makes every record idempotent:
//! replaying a record again leaves the same key in the same state. That
//! is what lets a rewrite snapshot the keyspace one shard at a time while
//! clients keep writing (see `rewrite`), and it logs scripts, blocking
//! pops, random pops and relative leases as their effects for free. The
//! price: a write to a large collection logs the whole collection, so
//! persistence suits lock-sized values (the rewrite compacts the file).

use std::io::Write;
use std::sync::Arc;

use bytes::Bytes;

use super::shard::Map;
use super::{Entry, Keyspace, Locked, SHARDS, Value, key_shard};
use crate::persist::backlog::Backlog;
use crate::persist::{Aof, Batch, Stream};

/// Elements per command when a collection is written out, as Redis's
/// rewrite does, so no single command is huge.
const ITEMS_PER_COMMAND: usize = 64;

/// The keys a command changed since its last checkpoint, and the records
/// already made.
#[derive(Default)]
pub(super) struct Changes {
    keys: Vec<(usize, Bytes)>,
    seen: Map<(usize, Bytes), ()>,
    batch: Batch,
    /// The DEL of each key found past its deadline, for replicas only
    /// (the file's records carry absolute deadlines already).
    expired: Batch,
}

impl Changes {
    pub(super) fn note(&mut self, db: usize, key: &[u8]) {
        let id = (db, Bytes::copy_from_slice(key));
        if self.seen.insert(id.clone(), ()).is_none() {
            self.keys.push(id);
        }
    }
}

/// Appends the commands that recreate `entry` at `key` (or delete it).
fn record_key(batch: &mut Batch, db: usize, key: &[u8], entry: Option<&Entry>) {
    let db = Some(db);
    let Some(entry) = entry else {
        batch.push(db, &[b"DEL", key]);
        return;
    };
    let deadline = entry.expire_at().map(|at| at.to_string());
    if let Value::Str(s, _) = &entry.value {
        // One command: a lock's value and its lease are never apart.
        match &deadline {
            Some(at) => batch.push(db, &[b"SET", key, s, b"PXAT", at.as_bytes()]),
            None => batch.push(db, &[b"SET", key, s]),
        }
        return;
    }
    batch.push(db, &[b"DEL", key]);
    match &entry.value {
        Value::Str(..) => {}
        Value::Hash(h) => {
            let pairs: Vec<(&[u8], &[u8])> = h.iter().collect();
            for chunk in pairs.chunks(ITEMS_PER_COMMAND) {
                let mut args: Vec<&[u8]> = vec![b"HSET", key];
                args.extend(chunk.iter().flat_map(|(f, v)| [*f, *v]));
                batch.push(db, &args);
            }
        }
        Value::List(items) => {
            let items: Vec<&[u8]> = items.iter().map(|b| &b[..]).collect();
            push_chunked(batch, db, b"RPUSH", key, &items);
        }
        Value::Set(set) => {
            let members = set.members();
            let members: Vec<&[u8]> = members.iter().map(|b| &b[..]).collect();
            push_chunked(batch, db, b"SADD", key, &members);
        }
        Value::ZSet(z) => {
            let pairs: Vec<(String, &Bytes)> = z
                .iter()
                .map(|(m, s)| (crate::util::format_double(s), m))
                .collect();
            for chunk in pairs.chunks(ITEMS_PER_COMMAND) {
                let mut args: Vec<&[u8]> = vec![b"ZADD", key];
                args.extend(chunk.iter().flat_map(|(s, m)| [s.as_bytes(), &m[..]]));
                batch.push(db, &args);
            }
        }
        // Streams (their groups, consumers and pending entries) travel as
        // rlockd's own DUMP payload, which only rlockd restores.
        Value::Stream(_) => {
            let payload = super::dump::dump(&entry.value);
            batch.push(db, &[b"RESTORE", key, b"0", &payload]);
        }
    }
    if let Some(at) = &deadline {
        batch.push(db, &[b"PEXPIREAT", key, at.as_bytes()]);
    }
}

fn push_chunked(batch: &mut Batch, db: Option<usize>, cmd: &[u8], key: &[u8], items: &[&[u8]]) {
    for chunk in items.chunks(ITEMS_PER_COMMAND) {
        let mut args: Vec<&[u8]> = vec![cmd, key];
        args.extend_from_slice(chunk);
        batch.push(db, &args);
    }
}

impl Locked<'_> {
    /// Notes that `key` in `db` changed (when the AOF is on).
    pub(super) fn note_change(&mut self, db: usize, key: &[u8]) {
        if let Some(changes) = &mut self.changes {
            changes.note(db, key);
        }
    }

    /// Notes that a lookup reclaimed `key` past its deadline: replicas,
    /// which keep such keys, learn it by a DEL, as Redis tells them.
    pub(super) fn note_expired(&mut self, db: usize, key: &[u8]) {
        if let Some(changes) = &mut self.changes {
            changes.expired.push(Some(db), &[b"DEL", key]);
        }
    }

    /// Records the state of every key changed so far, so that a
    /// whole-database change logged next comes after them.
    fn checkpoint(&mut self) {
        let Some(mut changes) = self.changes.take() else {
            return;
        };
        let now = self.now;
        for (db, key) in changes.keys.drain(..) {
            let entry = match self.shard(key_shard(&key)) {
                Ok(shard) => shard.dbs[db]
                    .get(&key)
                    .filter(|n| !n.is_expired(now))
                    .map(|n| n.entry()),
                // Every changed key's shard is held.
                Err(_) => continue,
            };
            record_key(&mut changes.batch, db, &key, entry.as_deref());
        }
        changes.seen.clear();
        self.changes = Some(changes);
    }

    /// A change to whole databases (FLUSHDB, FLUSHALL), logged as the
    /// command itself after the key changes before it.
    pub(super) fn note_whole(&mut self, db: Option<usize>, command: &[u8]) {
        if self.changes.is_none() {
            return;
        }
        self.checkpoint();
        if let Some(changes) = &mut self.changes {
            changes.batch.push(db, &[command]);
        }
    }

    /// SWAPDB, once swapped: every key of both databases is written out
    /// whole after both were emptied (`note_whole` before the swap), so
    /// the record stays idempotent (a swap replayed twice would undo itself).
    pub(super) fn note_swapped(&mut self, a: usize, b: usize) {
        if self.changes.is_none() {
            return;
        }
        let keys: Vec<(usize, Bytes)> = self
            .shards()
            .flat_map(|s| {
                [a, b]
                    .into_iter()
                    .flat_map(|db| {
                        s.dbs[db]
                            .iter()
                            .map(|n| (db, Bytes::copy_from_slice(n.key())))
                            .collect::<Vec<_>>()
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        for (db, key) in keys {
            self.note_change(db, &key);
        }
    }

    /// Forgets what a rolled-back attempt changed: its keys are back.
    pub(super) fn forget_changes(&mut self) {
        if let Some(changes) = &mut self.changes {
            *changes = Changes::default();
        }
    }

    /// Logs everything the command changed, in the file and the
    /// replication stream; called with its shards held.
    pub(super) fn log_changes(&mut self) {
        self.checkpoint();
        let Some(changes) = &self.changes else {
            return;
        };
        let backlog = self.ks.backlog.get();
        if let Some(backlog) = backlog {
            backlog.append(&changes.expired);
        }
        if changes.batch.is_empty() {
            return;
        }
        if self.ks.logging.load(std::sync::atomic::Ordering::Acquire)
            && let Some(aof) = self.ks.log.read().as_ref()
        {
            aof.append(&changes.batch);
        }
        if let Some(backlog) = backlog {
            backlog.append_change(&changes.batch);
        }
    }
}

impl Keyspace {
    /// Switches logging to `aof` (or off).
    pub fn set_log(&self, aof: Option<Arc<Aof>>) {
        let on = aof.is_some();
        *self.log.write() = aof;
        self.logging.store(on, std::sync::atomic::Ordering::Release);
    }

    /// Hands the keyspace the replication stream, once, at start.
    pub(crate) fn set_backlog(&self, backlog: Arc<Backlog>) {
        let _ = self.backlog.set(backlog);
    }

    /// Whether a command notes what it changes: for the file or for
    /// replicas.
    pub(super) fn noting(&self) -> bool {
        self.logging.load(std::sync::atomic::Ordering::Acquire)
            || self.backlog.get().is_some_and(|b| b.recording())
    }

    /// The AOF, if on. Every reply asks, so the common answer (off) costs
    /// one load, not a write to the lock's shared counter.
    pub fn log(&self) -> Option<Arc<Aof>> {
        if !self.logging.load(std::sync::atomic::Ordering::Acquire) {
            return None;
        }
        self.log.read().clone()
    }

    /// Writes every live key, one shard at a time, each shard held only
    /// while it is read.
    ///
    /// Why a rewrite's base written this way while clients write is
    /// consistent: the AOF switches to a new incremental file before the
    /// first shard is read, and a record is made while its keys' shards
    /// are held. So each key's change either happened before its shard was
    /// read (it is in the base; if it came after the switch it is in the
    /// new file too, which replays it again to the same state) or after
    /// (it is in the new file, replayed after the base). Replaying the
    /// base and then that file therefore ends with every key in the state
    /// its last record gave it, which is its state now.
    pub fn snapshot(&self, out: &mut impl Write) -> std::io::Result<()> {
        let mut stream = Stream::default();
        for idx in 0..SHARDS {
            let shard = self.wait_shard(idx);
            let now = self.clock.now_ms();
            for (db, map) in shard.dbs.iter().enumerate() {
                for node in map.iter().filter(|n| !n.is_expired(now)) {
                    let mut batch = Batch::default();
                    record_key(&mut batch, db, node.key(), Some(&node.entry()));
                    stream.put_plain(&batch);
                }
            }
            drop(shard);
            out.write_all(&stream.buf)?;
            stream.buf.clear();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::{LockPlan, Ttl};

    fn logged(entry: Option<Entry>) -> String {
        let mut batch = Batch::default();
        record_key(&mut batch, 0, b"k", entry.as_ref());
        let mut stream = Stream::default();
        stream.put(&batch);
        String::from_utf8_lossy(&stream.buf).replace("\r\n", " ")
    }

    #[test]
    fn keys_are_logged_as_states_with_absolute_deadlines() {
        let lease = Entry::new(
            Value::string(Bytes::from_static(b"owner")),
            Some(1_700_000_000_123),
        );
        assert_eq!(
            logged(Some(lease)),
            "*2 $6 SELECT $1 0 *5 $3 SET $1 k $5 owner $4 PXAT $13 1700000000123 "
        );
        assert_eq!(logged(None), "*2 $6 SELECT $1 0 *2 $3 DEL $1 k ");
        let list = Value::List((0..65).map(|i| Bytes::from(i.to_string())).collect());
        let text = logged(Some(Entry::new(list, Some(5))));
        assert!(text.starts_with("*1 $5 MULTI *2 $6 SELECT $1 0 *2 $3 DEL $1 k *66 $5 RPUSH"));
        assert!(text.ends_with("*3 $5 RPUSH $1 k $2 64 *3 $9 PEXPIREAT $1 k $1 5 *1 $4 EXEC "));
    }

    #[test]
    fn a_command_logs_what_it_left() {
        let ks = Keyspace::new(2, Arc::new(crate::clock::SystemClock));
        let layout = crate::persist::Layout {
            dir: std::env::temp_dir().join(format!("rlockd-aof-unit-{}", std::process::id())),
            stem: "appendonly.aof".into(),
        };
        std::fs::create_dir_all(&layout.dir).unwrap();
        let aof = Aof::open(
            layout.clone(),
            Default::default(),
            crate::persist::Fsync::No,
        )
        .unwrap();
        ks.set_log(Some(aof.clone()));
        {
            let mut locked = ks.lock(&LockPlan::All).unwrap();
            let mut db = locked.db(1);
            db.insert(b"a", Value::string(Bytes::from_static(b"1")), Ttl::Clear)
                .unwrap();
            db.insert(b"a", Value::string(Bytes::from_static(b"2")), Ttl::Clear)
                .unwrap();
            locked.note_whole(Some(0), b"FLUSHDB");
            locked.note_whole(Some(1), b"FLUSHDB");
            locked.note_swapped(0, 1);
        }
        aof.close();
        let text =
            String::from_utf8(std::fs::read(layout.file("appendonly.aof.1.incr.aof")).unwrap())
                .unwrap();
        let _ = std::fs::remove_dir_all(&layout.dir);
        assert_eq!(
            text.replace("\r\n", " "),
            "*1 $5 MULTI *2 $6 SELECT $1 1 *3 $3 SET $1 a $1 2 *2 $6 SELECT $1 0 \
             *1 $7 FLUSHDB *2 $6 SELECT $1 1 *1 $7 FLUSHDB *3 $3 SET $1 a $1 2 *1 $4 EXEC "
        );
    }
}
