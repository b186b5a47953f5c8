//! What the append-only file records: each write as the state it left its
//! keys in, written while the command still holds the keys' shards. A
//! key's state is either all of it (its whole value, then `PEXPIREAT`
//! with its absolute deadline, or `DEL`), or, where the command named the
//! members it may change (a `Touch`) or the members it changed, just
//! those members' states (`HSET key f v` or `HDEL key f`, `SADD`/`SREM`,
//! `ZADD key score m`/`ZREM`) and the deadline: so one `HSET` on a
//! 100,000-field hash records one field, not 100,000.
//!
//! Logging states rather than commands makes every record idempotent:
//! replaying a record again leaves the same key in the same state. That
//! is what lets a rewrite snapshot the keyspace one shard at a time while
//! clients keep writing (see `rewrite`), and it logs scripts, blocking
//! pops, random pops and relative leases as their effects for free.
//!
//! Why member records keep that property. A rewrite's base holds each key
//! as it was at some moment after the switch to the new incremental file,
//! so replay runs records `1..n` over state `S_j` (`j` the number of
//! records made before the shard was read), not only over `S_0`. Take
//! each part of a key on its own: a member, the deadline, the key's
//! existence and kind. A whole record sets every part; a member record
//! sets its members, and the deadline where there is one. Every change
//! after the switch is in some record, so a part that no record sets is
//! the same in `S_j` as now, and a part some record sets ends as its last
//! such record left it, which is its state now. Two rules keep a member
//! record exact: only a key that was there, live and of the same kind,
//! before every change since the last record gets one (a key the command
//! created, or one changed in any undeclared way, is recorded whole,
//! since the members a created key lost are in no record), and a key
//! with a deadline records it each time (the base leaves out a key that
//! expired meanwhile, and no record says it expired, so its members must
//! come back with the deadline that ends them). A member record replayed
//! over a key a later record turned into another kind fails (WRONGTYPE)
//! and changes nothing, as loading lets it; that later record puts the
//! key right.
//!
//! Lists (Redisson's queues) are the exception: a push or pop onto a list
//! that was there, or an LSET, LINSERT, LREM or LTRIM of it, is recorded
//! as itself (`RPUSH key items`, `LPOP key n`, `LTRIM key 0 9`…, then
//! the deadline), which is not idempotent. That is sound only where
//! the records are replayed in order over exactly the state they were
//! made from, so never while a copy of the keyspace is being taken that
//! records will be replayed over (`CopyUnderWay`: a rewrite, from before
//! its switch to a new file until its base is written; an AOF switched on
//! at run time, until its first base): a list is recorded whole then.
//! Whoever else replays these records over such a copy (a replica's full
//! sync not taken while every shard is held) must hold one too.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::journal::Touch;
use super::shard::Map;
use super::{End, Entry, Keyspace, Locked, SHARDS, Value};
use crate::persist::backlog::Backlog;
use crate::persist::{Aof, Audience, Batch, Stream};

/// Elements per command when a collection is written out, as Redis's
/// rewrite does, so no single command is huge.
const ITEMS_PER_COMMAND: usize = 64;

/// How much of a changed key its record carries.
enum Extent {
    /// All of it.
    Whole,
    /// All of it, and no key of any kind, live or past its deadline, was
    /// there before its first change since the last record: replicas
    /// have none either (the DEL of a key reclaimed past its deadline
    /// reaches them before the command's records), so they take it
    /// without the DEL before it, as Redis sends a new key. The file keeps
    /// that DEL: its loading expires nothing, and the keys the expiry
    /// driver reclaims leave no record in it.
    Created,
    /// These members (unsorted, perhaps repeated) and the deadline: the
    /// key held a collection before its first change since the last
    /// record, and every change since named the members it made.
    Members(Vec<Bytes>),
    /// These list commands, in order, and the deadline: the key held a
    /// list before its first change since the last record, and every
    /// change since was one of these.
    Ops(Vec<ListOp>),
    /// One command's changes to `keys`, recorded as the command itself
    /// or the commands Redis sends for it (`lines`, resolved) where
    /// records are replayed in order over the state they were made from,
    /// else as those keys whole. The key it is filed under is its first,
    /// and is never merged into: a later change to one of its keys makes
    /// a record of its own after it.
    Command {
        lines: Vec<Vec<Bytes>>,
        keys: Vec<(usize, Bytes)>,
    },
}

/// A change to a list, recorded as the command that makes it.
pub(crate) enum ListOp {
    /// These elements pushed one after another.
    Push(End, Vec<Bytes>),
    /// This many elements popped.
    Pop(End, usize),
    /// LSET of the element at this index (from the head).
    Set(usize, Bytes),
    /// LINSERT of `element` before (or `after`) the first `pivot`.
    Insert {
        after: bool,
        pivot: Bytes,
        element: Bytes,
    },
    /// LREM of up to `count` elements equal to this one (all for 0, from
    /// the tail for a negative count).
    Remove(i64, Bytes),
    /// LTRIM to the elements from `start` to `stop` (from the head).
    Trim(usize, usize),
}

impl ListOp {
    /// Folds `next` into this one where one command does both.
    fn absorb(&mut self, next: ListOp) -> Option<ListOp> {
        match (self, next) {
            (ListOp::Push(end, items), ListOp::Push(more_end, more)) if *end == more_end => {
                items.extend(more);
                None
            }
            (ListOp::Pop(end, count), ListOp::Pop(more_end, more)) if *end == more_end => {
                *count += more;
                None
            }
            (_, next) => Some(next),
        }
    }
}

/// The key the running command declared it changes only some members of,
/// and those members.
struct Declared {
    db: usize,
    key: Bytes,
    members: Vec<Bytes>,
    /// Whether `members` were added to the key's extent already: a command
    /// notes its key once per change it makes.
    noted: bool,
}

/// The keys a command changed since its last checkpoint, and the records
/// already made.
#[derive(Default)]
pub(super) struct Changes {
    keys: Vec<(usize, Bytes, Extent)>,
    /// Where each key is in `keys`.
    seen: Map<(usize, Bytes), usize>,
    batch: Batch,
    /// The DEL of each key found past its deadline, for replicas only
    /// (the file's records carry absolute deadlines already).
    expired: Batch,
    /// Whether the file takes `expired` too: a command recorded as
    /// itself may have read those keys as missing, which the file, whose
    /// loading expires nothing, must know before it.
    expired_in_file: bool,
    declared: Option<Declared>,
}

impl Changes {
    /// Notes a change to `key`: of the declared members if it is the
    /// declared key, else of the whole key. True if this is the key's
    /// first change since the last record, and recorded whole.
    fn note(&mut self, db: usize, key: &[u8]) -> bool {
        let extent = match &mut self.declared {
            Some(d) if d.db == db && d.key == key => {
                if d.noted {
                    return false;
                }
                d.noted = true;
                Extent::Members(std::mem::take(&mut d.members))
            }
            _ => Extent::Whole,
        };
        let whole = matches!(extent, Extent::Whole);
        self.note_extent(db, key, extent) && whole
    }

    /// Notes that `key` changed as `extent` says, after its changes so
    /// far. True if this is its first change since the last record.
    fn note_extent(&mut self, db: usize, key: &[u8], extent: Extent) -> bool {
        let id = (db, Bytes::copy_from_slice(key));
        let Some(&at) = self.seen.get(&id) else {
            self.seen.insert(id.clone(), self.keys.len());
            self.keys.push((id.0, id.1, extent));
            return true;
        };
        let known = &mut self.keys[at].2;
        match (known, extent) {
            (Extent::Members(known), Extent::Members(more)) => known.extend(more),
            (Extent::Ops(known), Extent::Ops(more)) => {
                for op in more {
                    let rest = match known.last_mut() {
                        Some(last) => last.absorb(op),
                        None => Some(op),
                    };
                    known.extend(rest);
                }
            }
            (Extent::Whole | Extent::Created | Extent::Command { .. }, _) => {}
            // A change of another sort, or to the whole key.
            (known, _) => *known = Extent::Whole,
        }
        false
    }
}

/// Appends the commands that recreate `entry` at `key` (or delete it);
/// `created`: replicas know no key was there (see `Extent::Created`).
fn record_key(batch: &mut Batch, db: usize, key: &[u8], entry: Option<&Entry>, created: bool) {
    let db = Some(db);
    let Some(entry) = entry else {
        batch.push(db, &[b"DEL", key]);
        return;
    };
    if let Value::Str(s, _) = &entry.value {
        // One command: a lock's value and its lease are never apart.
        match entry.expire_at().map(|at| at.to_string()) {
            Some(at) => batch.push(db, &[b"SET", key, s, b"PXAT", at.as_bytes()]),
            None => batch.push(db, &[b"SET", key, s]),
        }
        return;
    }
    let audience = if created {
        Audience::File
    } else {
        Audience::Everyone
    };
    batch.push_for(audience, db, &[b"DEL", key]);
    match &entry.value {
        Value::Str(..) => {}
        Value::Hash(h) => {
            let pairs: Vec<&[u8]> = h.iter().flat_map(|(f, v)| [f, v]).collect();
            push_chunked(batch, db, b"HSET", key, &pairs, 2);
        }
        Value::List(items) => {
            let items: Vec<&[u8]> = items.iter().map(|b| &b[..]).collect();
            push_chunked(batch, db, b"RPUSH", key, &items, 1);
        }
        Value::Set(set) => {
            let members = set.members();
            let members: Vec<&[u8]> = members.iter().map(|b| &b[..]).collect();
            push_chunked(batch, db, b"SADD", key, &members, 1);
        }
        Value::ZSet(z) => {
            let scored: Vec<(String, &Bytes)> = z
                .iter()
                .map(|(m, s)| (crate::util::format_double(s), m))
                .collect();
            push_scored(batch, db, key, &scored);
        }
        // Streams (their groups, consumers and pending entries) travel as
        // rlockd's own DUMP payload, which only rlockd restores.
        Value::Stream(_) => {
            let payload = super::dump::dump(&entry.value);
            batch.push(db, &[b"RESTORE", key, b"0", &payload]);
        }
    }
    record_deadline(batch, db, key, entry);
}

/// Appends the commands that give `members` of the collection at `key`
/// the states they have in `entry`, then its deadline. False, with nothing
/// appended, if `entry` holds no collection of members.
fn record_members(
    batch: &mut Batch,
    db: usize,
    key: &[u8],
    entry: &Entry,
    members: &mut Vec<Bytes>,
) -> bool {
    members.sort_unstable();
    members.dedup();
    let db = Some(db);
    let mut gone: Vec<&[u8]> = Vec::new();
    let remove: &[u8] = match &entry.value {
        Value::Hash(h) => {
            let mut pairs: Vec<&[u8]> = Vec::new();
            for member in members.iter() {
                match h.get(member) {
                    Some(value) => pairs.extend([&member[..], value]),
                    None => gone.push(member),
                }
            }
            push_chunked(batch, db, b"HSET", key, &pairs, 2);
            b"HDEL"
        }
        Value::Set(set) => {
            let (kept, removed): (Vec<&Bytes>, Vec<&Bytes>) =
                members.iter().partition(|m| set.contains(m));
            let kept: Vec<&[u8]> = kept.into_iter().map(|m| &m[..]).collect();
            push_chunked(batch, db, b"SADD", key, &kept, 1);
            gone.extend(removed.into_iter().map(|m| &m[..]));
            b"SREM"
        }
        Value::ZSet(z) => {
            let mut scored: Vec<(String, &Bytes)> = Vec::new();
            for member in members.iter() {
                match z.score(member) {
                    Some(score) => scored.push((crate::util::format_double(score), member)),
                    None => gone.push(member),
                }
            }
            push_scored(batch, db, key, &scored);
            b"ZREM"
        }
        Value::Str(..) | Value::List(_) | Value::Stream(_) => return false,
    };
    push_chunked(batch, db, remove, key, &gone, 1);
    record_deadline(batch, db, key, entry);
    true
}

/// Appends the list commands that made the list at `key` what `entry`
/// holds from what it held at the last record, then its deadline (a key
/// replayed past its deadline is gone, and the pushes must not make it
/// anew without one); no `entry`: the ops emptied the list (a list is
/// deleted once empty, and every other removal is recorded whole). False,
/// with nothing appended, if it holds no list.
fn record_ops(
    batch: &mut Batch,
    db: usize,
    key: &[u8],
    entry: Option<&Entry>,
    ops: &[ListOp],
) -> bool {
    if entry.is_some_and(|e| !matches!(e.value, Value::List(_))) {
        return false;
    }
    let db = Some(db);
    for op in ops {
        match op {
            ListOp::Push(end, items) => {
                let cmd: &[u8] = if *end == End::Left {
                    b"LPUSH"
                } else {
                    b"RPUSH"
                };
                let items: Vec<&[u8]> = items.iter().map(|b| &b[..]).collect();
                push_chunked(batch, db, cmd, key, &items, 1);
            }
            ListOp::Pop(end, count) => {
                let cmd: &[u8] = if *end == End::Left { b"LPOP" } else { b"RPOP" };
                batch.push(db, &[cmd, key, count.to_string().as_bytes()]);
            }
            ListOp::Set(index, element) => {
                batch.push(db, &[b"LSET", key, index.to_string().as_bytes(), element]);
            }
            ListOp::Insert {
                after,
                pivot,
                element,
            } => {
                let place: &[u8] = if *after { b"AFTER" } else { b"BEFORE" };
                batch.push(db, &[b"LINSERT", key, place, pivot, element]);
            }
            ListOp::Remove(count, element) => {
                batch.push(db, &[b"LREM", key, count.to_string().as_bytes(), element]);
            }
            ListOp::Trim(start, stop) => {
                let (start, stop) = (start.to_string(), stop.to_string());
                batch.push(db, &[b"LTRIM", key, start.as_bytes(), stop.as_bytes()]);
            }
        }
    }
    if let Some(entry) = entry {
        record_deadline(batch, db, key, entry);
    }
    true
}

/// `PEXPIREAT` with the key's absolute deadline, if it has one.
fn record_deadline(batch: &mut Batch, db: Option<usize>, key: &[u8], entry: &Entry) {
    if let Some(at) = entry.expire_at() {
        batch.push(db, &[b"PEXPIREAT", key, at.to_string().as_bytes()]);
    }
}

/// ZADD of each member with its score, as Redis writes scores (`%.17g`,
/// which reads back as the same double).
fn push_scored(batch: &mut Batch, db: Option<usize>, key: &[u8], scored: &[(String, &Bytes)]) {
    let args: Vec<&[u8]> = scored
        .iter()
        .flat_map(|(s, m)| [s.as_bytes(), &m[..]])
        .collect();
    push_chunked(batch, db, b"ZADD", key, &args, 2);
}

/// `cmd key` and `items`, `width` arguments an item, `ITEMS_PER_COMMAND`
/// items a command; nothing for no items.
fn push_chunked(
    batch: &mut Batch,
    db: Option<usize>,
    cmd: &[u8],
    key: &[u8],
    items: &[&[u8]],
    width: usize,
) {
    for chunk in items.chunks(ITEMS_PER_COMMAND * width) {
        let mut args: Vec<&[u8]> = vec![cmd, key];
        args.extend_from_slice(chunk);
        batch.push(db, &args);
    }
}

impl Locked<'_> {
    /// Notes that `key` in `db` changed (when the AOF is on).
    pub(super) fn note_change(&mut self, db: usize, key: &[u8]) {
        let Some(changes) = &mut self.changes else {
            return;
        };
        if !changes.note(db, key) {
            return;
        }
        // Asked before the change: every path that creates a key notes it
        // before storing it, and one that notes after finds it there,
        // which only keeps a DEL that was not needed.
        let absent = self
            .shard_for(key)
            .is_ok_and(|shard| shard.dbs[db].get(key).is_none());
        if let Some(changes) = self.changes.as_mut().filter(|_| absent)
            && let Some(last) = changes.keys.last_mut()
        {
            last.2 = Extent::Created;
        }
    }

    /// Notes that a lookup reclaimed `key` past its deadline: replicas,
    /// which keep such keys, learn it by a DEL, as Redis tells them.
    pub(super) fn note_expired(&mut self, db: usize, key: &[u8]) {
        if let Some(changes) = &mut self.changes {
            changes.expired.push(Some(db), &[b"DEL", key]);
        }
    }

    /// Notes that `key` in `db`, a collection that was there before the
    /// command, changed in `members` only (SPOP, ZPOPMIN, SMOVE's source).
    pub(super) fn note_members(&mut self, db: usize, key: &[u8], members: Vec<Bytes>) {
        if let Some(changes) = &mut self.changes {
            changes.note_extent(db, key, Extent::Members(members));
        }
    }

    /// Notes that the list at `key` in `db`, there before the command,
    /// changed by `op` (a push or pop at one end).
    pub(super) fn note_list(&mut self, db: usize, key: &[u8], op: impl FnOnce() -> ListOp) {
        if let Some(changes) = &mut self.changes {
            changes.note_extent(db, key, Extent::Ops(vec![op()]));
        }
    }

    /// Whether changes are recorded (for the file or for replicas).
    pub(super) fn records_changes(&self) -> bool {
        self.changes.is_some()
    }

    /// Names what the command about to run may change of `key` in `db`
    /// (`touch`, asked only while changes are recorded), so that its changes to
    /// `key` are recorded as those members' states. Only a collection
    /// there now qualifies: a key the command creates is recorded whole.
    pub fn declare_touch<'t>(
        &mut self,
        db: usize,
        key: Option<&[u8]>,
        touch: impl FnOnce() -> Option<Touch<'t>>,
    ) {
        if self.changes.is_none() {
            return;
        }
        let declared = key.and_then(|key| {
            let Some(Touch::Members { args, step }) = touch() else {
                return None;
            };
            let now = self.deadline_clock();
            let shard = self.shard_for(key).ok()?;
            let collection = shard.dbs[db]
                .get(key)
                .filter(|n| !n.is_expired(now))
                .is_some_and(|n| matches!(n.type_name(), "hash" | "set" | "zset"));
            collection.then(|| Declared {
                db,
                key: Bytes::copy_from_slice(key),
                // Copied: the command's line may be a buffer reused for
                // the next (a script's `redis.call`).
                members: args
                    .iter()
                    .step_by(step.max(1))
                    .map(|m| Bytes::copy_from_slice(m))
                    .collect(),
                noted: false,
            })
        });
        if let Some(changes) = &mut self.changes {
            changes.declared = declared;
        }
    }

    /// The command that declared what it touches is done.
    pub fn end_touch(&mut self) {
        if let Some(changes) = &mut self.changes {
            changes.declared = None;
        }
    }

    /// Records the state of every key changed so far, so that a
    /// whole-database change logged next comes after them. `ops`: whether
    /// a list's pushes and pops may be recorded as themselves (they are
    /// not idempotent: only where no copy of the keyspace is yet to read
    /// the list; see `CopyUnderWay`).
    fn checkpoint(&mut self, ops: bool) {
        let Some(mut changes) = self.changes.take() else {
            return;
        };
        let batch = &mut changes.batch;
        for (db, key, mut extent) in changes.keys.drain(..) {
            match &mut extent {
                Extent::Command { lines, keys } => {
                    // Before the records are appended, whether they may go
                    // as commands is not known yet: both forms go in the
                    // batch, and `log_changes` keeps one.
                    let start = batch.len();
                    for line in lines.iter() {
                        let args: Vec<&[u8]> = line.iter().map(|a| &a[..]).collect();
                        batch.push(Some(db), &args);
                    }
                    changes.expired_in_file = true;
                    if ops {
                        continue;
                    }
                    batch.mark_form(start, true);
                    let start = batch.len();
                    for (db, key) in keys {
                        self.record_now(batch, *db, key, &mut Extent::Whole, ops);
                    }
                    batch.mark_form(start, false);
                }
                extent => self.record_now(batch, db, &key, extent, ops),
            }
        }
        changes.seen.clear();
        self.changes = Some(changes);
    }

    /// Records `key`'s state now: by the parts `extent` names where it
    /// can, else whole.
    fn record_now(
        &mut self,
        batch: &mut Batch,
        db: usize,
        key: &[u8],
        extent: &mut Extent,
        ops: bool,
    ) {
        let now = self.now;
        let entry = match self.shard_for(key) {
            Ok(shard) => shard.dbs[db]
                .get(key)
                .filter(|n| !n.is_expired(now))
                .map(|n| n.entry()),
            // Every changed key's shard is held.
            Err(_) => return,
        };
        let created = matches!(extent, Extent::Created);
        let by_part = match (extent, entry.as_deref()) {
            (Extent::Members(members), Some(entry)) => {
                record_members(batch, db, key, entry, members)
            }
            (Extent::Ops(list_ops), entry) if ops => record_ops(batch, db, key, entry, list_ops),
            _ => false,
        };
        if !by_part {
            record_key(batch, db, key, entry.as_deref(), created);
        }
    }

    /// The command about to run may be recorded as itself
    /// (`record_as_command`): the changes before it are recorded first,
    /// as they stand now. Lists go whole, as whether their commands may
    /// go as themselves is known only once the records are appended (a
    /// command recorded as itself goes in both forms until then).
    pub fn begin_command_record(&mut self) {
        if self.changes.as_ref().is_some_and(|c| !c.keys.is_empty()) {
            self.checkpoint(false);
        }
    }

    /// Records what the command changed since `begin_command_record` as
    /// the command itself, `args` in database `db`, where records are
    /// replayed in order over the state they were made from (a full
    /// sync's snapshot is one exact point of the stream; an AOF while no
    /// copy of the keyspace is under way), else as the keys it changed,
    /// whole. `args` must name everything that it read at random or from
    /// the clock, so that running it again makes the same change.
    pub fn record_as_command(&mut self, db: usize, args: &[&[u8]]) {
        let line = args.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        self.record_as_commands(db, vec![line]);
    }

    /// As `record_as_command`, for a command that Redis sends as other
    /// commands (a stream's XREADGROUP as XCLAIMs), in order; with none,
    /// what it changed since `begin_command_record` reaches neither the
    /// file nor replicas (a consumer's seen time, which Redis does not
    /// send either).
    pub fn record_as_commands(&mut self, db: usize, lines: Vec<Vec<Bytes>>) {
        let Some(changes) = &mut self.changes else {
            return;
        };
        if changes.keys.is_empty() {
            return;
        }
        let keys: Vec<(usize, Bytes)> = changes.keys.drain(..).map(|(db, k, _)| (db, k)).collect();
        changes.seen.clear();
        if lines.is_empty() {
            return;
        }
        let first = keys[0].1.clone();
        changes
            .keys
            .push((db, first, Extent::Command { lines, keys }));
    }

    /// A command that changes no key and goes to replicas only (PUBLISH),
    /// in `db`, after the records of the changes before it and before
    /// those after it, as Redis puts it in a script's or a transaction's
    /// MULTI. False, with nothing taken, if changes are not noted: it
    /// goes down the stream on its own then.
    pub fn note_for_replicas(&mut self, db: usize, args: &[&[u8]]) -> bool {
        if self.changes.is_none() {
            return false;
        }
        self.checkpoint(false);
        if let Some(changes) = &mut self.changes {
            changes.batch.push_for(Audience::Replicas, Some(db), args);
        }
        true
    }

    /// A change to whole databases (FLUSHDB, FLUSHALL), logged as the
    /// command itself after the key changes before it.
    pub(super) fn note_whole(&mut self, db: Option<usize>, command: &[u8]) {
        if self.changes.is_none() {
            return;
        }
        self.checkpoint(false);
        if let Some(changes) = &mut self.changes {
            changes.batch.push(db, &[command]);
        }
    }

    /// SWAPDB (or a replica's swapped-in snapshot), once swapped: every
    /// key of the databases `dbs` is written out whole after they were
    /// emptied (`note_whole` before the swap), so the record stays
    /// idempotent (a swap replayed twice would undo itself).
    pub(super) fn note_swapped(&mut self, dbs: &[usize]) {
        if self.changes.is_none() {
            return;
        }
        let keys: Vec<(usize, Bytes)> = self
            .shards()
            .flat_map(|s| {
                dbs.iter()
                    .copied()
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
    /// replication stream; called with its shards held. Returns where its
    /// records end in the stream, if it made any there.
    pub(super) fn log_changes(&mut self) -> Option<i64> {
        // The file the records go to, held until they are in it, so that
        // they are made for it: one still waiting for its first base
        // takes no list ops. The replication stream always can: a full
        // sync's snapshot is one exact point of it.
        let ks = self.ks;
        let log = ks.logging.load(Ordering::Acquire).then(|| ks.log.read());
        let aof = log.as_ref().and_then(|guard| guard.as_ref());
        let ops =
            ks.copying.load(Ordering::Acquire) == 0 && aof.is_none_or(|aof| !aof.awaiting_base());
        self.checkpoint(ops);
        let changes = self.changes.as_mut()?;
        changes.batch.settle(ops);
        let changes = &*changes;
        let backlog = self.ks.backlog.get();
        if let Some(backlog) = backlog {
            backlog.append(&changes.expired);
        }
        if !changes.batch.has_file_records() {
            // Nothing changed, whatever it published: no reply waits.
            if let Some(backlog) = backlog {
                backlog.append(&changes.batch);
            }
            return None;
        }
        if let Some(aof) = aof {
            if changes.expired_in_file && !changes.expired.is_empty() {
                aof.append(&changes.expired);
            }
            aof.append(&changes.batch);
        }
        backlog?.append_change(&changes.batch)
    }
}

/// A copy of the keyspace that records will be replayed over, taken
/// while clients write (a rewrite's base, from before its switch to a new
/// incremental file until the base is written): a record made meanwhile
/// may be in the copy already, so it must be idempotent, and lists are
/// recorded whole. Ends when dropped.
pub struct CopyUnderWay<'a>(&'a Keyspace);

impl Drop for CopyUnderWay<'_> {
    fn drop(&mut self) {
        self.0.copying.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Keyspace {
    /// Starts a `CopyUnderWay`, taken before the copy's records start
    /// going where they will be replayed over it. It waits for every
    /// shard: a command holds its shards from its change until its
    /// records are made, so none that chose to record list ops before
    /// this can make its records after it.
    pub(crate) fn begin_copy(&self) -> CopyUnderWay<'_> {
        let shards: Vec<_> = (0..SHARDS).map(|idx| self.wait_shard(idx)).collect();
        self.copying.fetch_add(1, Ordering::AcqRel);
        drop(shards);
        CopyUnderWay(self)
    }

    /// Switches logging to `aof` (or off).
    pub fn set_log(&self, aof: Option<Arc<Aof>>) {
        let on = aof.is_some();
        *self.log.write() = aof;
        self.logging.store(on, Ordering::Release);
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
        if !self.logging.load(Ordering::Acquire) {
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
                    record_key(&mut batch, db, node.key(), Some(&node.entry()), false);
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
    use crate::keyspace::{HashValue, LockPlan, SortedSet, Ttl};

    fn logged(entry: Option<Entry>) -> String {
        let mut batch = Batch::default();
        record_key(&mut batch, 0, b"k", entry.as_ref(), false);
        let mut stream = Stream::default();
        stream.put(&batch, crate::persist::Audience::File);
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
        assert!(text.starts_with("*2 $6 SELECT $1 0 *1 $5 MULTI *2 $3 DEL $1 k *66 $5 RPUSH"));
        assert!(text.ends_with("*3 $5 RPUSH $1 k $2 64 *3 $9 PEXPIREAT $1 k $1 5 *1 $4 EXEC "));
    }

    /// The text of `entry`'s record as changed in `members` only.
    fn logged_members(entry: &Entry, members: &[&str]) -> String {
        let mut batch = Batch::default();
        let mut members = members.iter().map(|m| Bytes::from(m.to_string())).collect();
        assert!(record_members(&mut batch, 0, b"k", entry, &mut members));
        let mut stream = Stream::default();
        stream.put_plain(&batch);
        String::from_utf8_lossy(&stream.buf).replace("\r\n", " ")
    }

    #[test]
    fn members_are_logged_as_their_states_and_the_deadline() {
        let limits = crate::keyspace::EncodingLimits::default();
        let mut hash = HashValue::empty_hashtable();
        hash.insert(b"f", b"1", &limits);
        hash.insert(b"g", b"2", &limits);
        let entry = Entry::new(Value::Hash(hash), Some(7));
        assert_eq!(
            logged_members(&entry, &["g", "gone", "f", "g"]),
            "*2 $6 SELECT $1 0 *6 $4 HSET $1 k $1 f $1 1 $1 g $1 2 *3 $4 HDEL $1 k $4 gone \
             *3 $9 PEXPIREAT $1 k $1 7 "
        );
        let mut set = crate::keyspace::SetValue::for_first_member(b"a");
        set.insert(b"b", &limits);
        let entry = Entry::new(Value::Set(Box::new(set)), None);
        assert_eq!(
            logged_members(&entry, &["b", "c"]),
            "*2 $6 SELECT $1 0 *3 $4 SADD $1 k $1 b *3 $4 SREM $1 k $1 c "
        );
        let mut zset = SortedSet::for_first_member(b"m", &limits);
        zset.insert(Bytes::from_static(b"m"), 0.1, &limits);
        let entry = Entry::new(Value::ZSet(Box::new(zset)), None);
        assert_eq!(
            logged_members(&entry, &["m", "x"]),
            "*2 $6 SELECT $1 0 *4 $4 ZADD $1 k $19 0.10000000000000001 $1 m *3 $4 ZREM $1 k $1 x "
        );
        let mut batch = Batch::default();
        let list = Entry::new(Value::List(Default::default()), None);
        assert!(!record_members(&mut batch, 0, b"k", &list, &mut vec![]));
        assert!(batch.is_empty());
    }

    /// A keyspace logging to a fresh AOF directory, and the directory.
    fn logging(test: &str) -> (Keyspace, Arc<Aof>, crate::persist::Layout) {
        let ks = Keyspace::new(2, Arc::new(crate::clock::SystemClock));
        let layout = crate::persist::Layout {
            dir: std::env::temp_dir().join(format!("rlockd-aof-{test}-{}", std::process::id())),
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
        (ks, aof, layout)
    }

    /// What the AOF of `logging` holds once closed, its directory gone.
    fn written(aof: Arc<Aof>, layout: crate::persist::Layout) -> String {
        aof.close();
        let text =
            String::from_utf8(std::fs::read(layout.file("appendonly.aof.1.incr.aof")).unwrap())
                .unwrap();
        let _ = std::fs::remove_dir_all(&layout.dir);
        text.replace("\r\n", " ")
    }

    /// Sets field `f` of the hash at `key` to `v`, as HSET does, having
    /// declared it (or not).
    fn hset(ks: &Keyspace, key: &[u8], field: &'static [u8], declare: bool) {
        let args = [Bytes::from_static(field)];
        let mut locked = ks.lock(&LockPlan::All).unwrap();
        if declare {
            locked.declare_touch(0, Some(key), || Some(Touch::each(&args)));
        }
        let limits = crate::keyspace::EncodingLimits::default();
        let mut db = locked.db(0);
        let hash = db.typed_or_insert::<HashValue>(key, || Value::Hash(HashValue::default()));
        hash.unwrap().insert(field, b"v", &limits);
        db.modified(key, crate::keyspace::Event::Hset).unwrap();
        locked.end_touch();
    }

    #[test]
    fn a_declared_change_to_a_collection_logs_its_members_only() {
        let (ks, aof, layout) = logging("members");
        // Made by the command: whole, though declared.
        hset(&ks, b"h", b"a", true);
        hset(&ks, b"h", b"b", true);
        // Undeclared: whole.
        hset(&ks, b"h", b"c", false);
        // Declared, then another undeclared change in the same batch.
        {
            let args = [Bytes::from_static(b"d")];
            let mut locked = ks.lock(&LockPlan::All).unwrap();
            locked.declare_touch(0, Some(b"h"), || Some(Touch::each(&args)));
            let mut db = locked.db(0);
            db.modified(b"h", crate::keyspace::Event::Hset).unwrap();
            locked.end_touch();
            locked
                .db(0)
                .modified(b"h", crate::keyspace::Event::Hset)
                .unwrap();
        }
        assert_eq!(
            written(aof, layout),
            "*2 $6 SELECT $1 0 *1 $5 MULTI *2 $3 DEL $1 h *4 $4 HSET $1 h $1 a $1 v *1 $4 EXEC \
             *4 $4 HSET $1 h $1 b $1 v \
             *1 $5 MULTI *2 $3 DEL $1 h *8 $4 HSET $1 h $1 a $1 v $1 b $1 v $1 c $1 v *1 $4 EXEC \
             *1 $5 MULTI *2 $3 DEL $1 h *8 $4 HSET $1 h $1 a $1 v $1 b $1 v $1 c $1 v *1 $4 EXEC "
        );
    }

    #[test]
    fn a_new_deadline_on_a_collection_logs_the_deadline_alone() {
        let (ks, aof, layout) = logging("deadline");
        hset(&ks, b"h", b"a", true);
        {
            let mut locked = ks.lock(&LockPlan::All).unwrap();
            let mut db = locked.db(0);
            db.set_expire(b"h", Some(4_000_000_000_000)).unwrap();
            db.deadline_modified(b"h").unwrap();
        }
        // Cleared: no member record could say so.
        {
            let mut locked = ks.lock(&LockPlan::All).unwrap();
            locked.db(0).set_expire(b"h", None).unwrap();
        }
        assert_eq!(
            written(aof, layout),
            "*2 $6 SELECT $1 0 *1 $5 MULTI *2 $3 DEL $1 h *4 $4 HSET $1 h $1 a $1 v *1 $4 EXEC \
             *3 $9 PEXPIREAT $1 h $13 4000000000000 \
             *1 $5 MULTI *2 $3 DEL $1 h *4 $4 HSET $1 h $1 a $1 v *1 $4 EXEC "
        );
    }

    /// Pushes `items` at the back of the list at `key`, as RPUSH does.
    fn rpush(ks: &Keyspace, key: &[u8], items: &[&'static [u8]]) {
        let mut locked = ks.lock(&LockPlan::All).unwrap();
        let mut db = locked.db(0);
        for item in items {
            db.push_list(key, End::Right, Bytes::from_static(item))
                .unwrap();
        }
    }

    #[test]
    fn pushes_and_pops_are_logged_as_themselves_unless_a_copy_is_under_way() {
        let (ks, aof, layout) = logging("ops");
        // Made by the command: whole.
        rpush(&ks, b"l", &[b"a"]);
        rpush(&ks, b"l", &[b"b", b"c"]);
        {
            let mut locked = ks.lock(&LockPlan::All).unwrap();
            let mut db = locked.db(0);
            db.push_list(b"l", End::Left, Bytes::from_static(b"z"))
                .unwrap();
            db.pop_list_many(b"l", End::Right, 2).unwrap();
            db.pop_list_many(b"l", End::Right, 1).unwrap();
        }
        {
            let _copy = ks.begin_copy();
            rpush(&ks, b"l", &[b"d"]);
        }
        rpush(&ks, b"l", &[b"e"]);
        assert_eq!(
            written(aof, layout),
            "*2 $6 SELECT $1 0 *1 $5 MULTI *2 $3 DEL $1 l *3 $5 RPUSH $1 l $1 a *1 $4 EXEC \
             *4 $5 RPUSH $1 l $1 b $1 c \
             *1 $5 MULTI *3 $5 LPUSH $1 l $1 z *3 $4 RPOP $1 l $1 3 *1 $4 EXEC \
             *1 $5 MULTI *2 $3 DEL $1 l *4 $5 RPUSH $1 l $1 z $1 d *1 $4 EXEC \
             *3 $5 RPUSH $1 l $1 e "
        );
    }

    /// Sets `key` to `value` as a command recorded as itself, `line`.
    fn set_as_command(ks: &Keyspace, key: &[u8], value: &'static [u8], line: &[&[u8]]) {
        let mut locked = ks.lock(&LockPlan::All).unwrap();
        // A change before it in the same batch: recorded before it.
        locked
            .db(0)
            .insert(
                b"before",
                Value::string(Bytes::from_static(b"1")),
                Ttl::Clear,
            )
            .unwrap();
        locked.begin_command_record();
        locked
            .db(0)
            .insert(key, Value::string(Bytes::from_static(value)), Ttl::Clear)
            .unwrap();
        locked.record_as_command(0, line);
        // A change after it to the same key: a record of its own.
        locked
            .db(0)
            .set_expire(key, Some(4_000_000_000_000))
            .unwrap();
    }

    #[test]
    fn a_command_recorded_as_itself_goes_whole_while_a_copy_is_under_way() {
        let (ks, aof, layout) = logging("itself");
        set_as_command(&ks, b"k", b"v", &[b"COPY", b"src", b"k"]);
        {
            let _copy = ks.begin_copy();
            set_as_command(&ks, b"k", b"w", &[b"COPY", b"src", b"k"]);
        }
        assert_eq!(
            written(aof, layout),
            "*2 $6 SELECT $1 0 *1 $5 MULTI *3 $3 SET $6 before $1 1 *3 $4 COPY $3 src $1 k \
             *5 $3 SET $1 k $1 v $4 PXAT $13 4000000000000 *1 $4 EXEC \
             *1 $5 MULTI *3 $3 SET $6 before $1 1 \
             *5 $3 SET $1 k $1 w $4 PXAT $13 4000000000000 \
             *5 $3 SET $1 k $1 w $4 PXAT $13 4000000000000 *1 $4 EXEC "
        );
    }

    /// Two commands recorded as themselves in one batch (a transaction):
    /// the first is recorded before the second runs, when whether the
    /// batch may go as commands is not known yet.
    fn two_commands(ks: &Keyspace) {
        let mut locked = ks.lock(&LockPlan::All).unwrap();
        for (key, value) in [(b"a", b"1"), (b"b", b"2")] {
            locked.begin_command_record();
            locked
                .db(0)
                .insert(key, Value::string(Bytes::from_static(value)), Ttl::Clear)
                .unwrap();
            locked.record_as_commands(
                0,
                vec![vec![
                    Bytes::from_static(b"APPEND"),
                    Bytes::from_static(key),
                    Bytes::from_static(value),
                ]],
            );
        }
    }

    #[test]
    fn commands_in_one_batch_go_as_commands_or_all_whole() {
        let (ks, aof, layout) = logging("batch");
        two_commands(&ks);
        {
            let _copy = ks.begin_copy();
            two_commands(&ks);
        }
        assert_eq!(
            written(aof, layout),
            "*2 $6 SELECT $1 0 *1 $5 MULTI *3 $6 APPEND $1 a $1 1 *3 $6 APPEND $1 b $1 2 *1 $4 EXEC \
             *1 $5 MULTI *3 $3 SET $1 a $1 1 *3 $3 SET $1 b $1 2 *1 $4 EXEC "
        );
    }

    #[test]
    fn a_command_logs_what_it_left() {
        let (ks, aof, layout) = logging("unit");
        {
            let mut locked = ks.lock(&LockPlan::All).unwrap();
            let mut db = locked.db(1);
            db.insert(b"a", Value::string(Bytes::from_static(b"1")), Ttl::Clear)
                .unwrap();
            db.insert(b"a", Value::string(Bytes::from_static(b"2")), Ttl::Clear)
                .unwrap();
            locked.note_whole(Some(0), b"FLUSHDB");
            locked.note_whole(Some(1), b"FLUSHDB");
            locked.note_swapped(&[0, 1]);
        }
        let text = written(aof, layout);
        assert_eq!(
            text,
            "*2 $6 SELECT $1 1 *1 $5 MULTI *3 $3 SET $1 a $1 2 *2 $6 SELECT $1 0 \
             *1 $7 FLUSHDB *2 $6 SELECT $1 1 *1 $7 FLUSHDB *3 $3 SET $1 a $1 2 *1 $4 EXEC "
        );
    }
}
