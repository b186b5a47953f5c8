//! Clients blocked on list and sorted set keys (BLPOP, BLMOVE, BZPOPMIN…):
//! each shard queues the waiters of its keys, oldest first. A command that
//! gives a waited-on key a list or sorted set marks the key ready; when
//! the command lets its shards go (after EXEC or a whole script, never
//! halfway through) the ready keys' elements are handed to their waiters
//! in arrival order, under the same locks, so no other client can take an
//! element a waiter was owed. A waiter is served only by its own type.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;

use super::Event;
use super::waiter::{End, Outcome, Taken, Waiter, Wanted, ZEnd};
use super::{Db, ListOp, Locked, Shard, Ttl, Value, key_shard};
use crate::error::CmdError;

/// Waiters served by one command, with what each was handed.
pub(super) type Served = Vec<(Arc<Waiter>, Outcome)>;

impl Db<'_, '_> {
    /// Queues `waiter` on `key`, dropping waiters that stopped waiting.
    pub fn block(&mut self, key: &[u8], waiter: &Arc<Waiter>) -> Result<(), CmdError> {
        let db = self.index as u32;
        let shard = self.locked.shard_for(key)?;
        let queue = shard
            .blocked
            .entry((db, Bytes::copy_from_slice(key)))
            .or_default();
        queue.retain(|w| w.is_waiting());
        queue.push_back(waiter.clone());
        Ok(())
    }

    /// Takes `waiter` off `key`'s queue.
    pub fn unblock(&mut self, key: &[u8], waiter: &Arc<Waiter>) -> Result<(), CmdError> {
        let db = self.index as u32;
        let shard = self.locked.shard_for(key)?;
        let k = (db, Bytes::copy_from_slice(key));
        if let Some(queue) = shard.blocked.get_mut(&k) {
            queue.retain(|w| !Arc::ptr_eq(w, waiter));
            if queue.is_empty() {
                shard.blocked.remove(&k);
            }
        }
        Ok(())
    }

    /// Notes that `key` may have gained elements: if anyone waits on it,
    /// they are served when the command lets its shards go.
    pub fn signal_ready(&mut self, key: &[u8]) -> Result<(), CmdError> {
        let db = self.index;
        let shard = self.locked.shard_for(key)?;
        if shard.blocked.is_empty()
            || !shard
                .blocked
                .contains_key(&(db as u32, Bytes::copy_from_slice(key)))
        {
            return Ok(());
        }
        let ready = &mut self.locked.ready;
        if !ready.iter().any(|(d, k)| *d == db && k[..] == *key) {
            ready.push((db, Bytes::copy_from_slice(key)));
        }
        Ok(())
    }

    /// The oldest waiter on `key` still waiting that `serves` accepts,
    /// claimed for serving. Waiters for another type stay queued.
    fn claim_waiter(
        &mut self,
        key: &Bytes,
        serves: fn(&Wanted) -> bool,
    ) -> Result<Option<Arc<Waiter>>, CmdError> {
        let k = (self.index as u32, key.clone());
        let shard = self.locked.shard_for(key)?;
        let Some(queue) = shard.blocked.get_mut(&k) else {
            return Ok(None);
        };
        queue.retain(|w| w.is_waiting());
        let mut claimed = None;
        while let Some(i) = queue.iter().position(|w| serves(&w.wanted)) {
            if let Some(waiter) = queue.remove(i)
                && waiter.claim()
            {
                claimed = Some(waiter);
                break;
            }
        }
        if queue.is_empty() {
            shard.blocked.remove(&k);
        }
        Ok(claimed)
    }

    /// The stream readers waiting on `key`, oldest first.
    fn stream_waiters(&mut self, key: &Bytes) -> Result<Vec<Arc<Waiter>>, CmdError> {
        let k = (self.index as u32, key.clone());
        let shard = self.locked.shard_for(key)?;
        Ok(shard.blocked.get(&k).map_or_else(Vec::new, |queue| {
            queue
                .iter()
                .filter(|w| matches!(w.wanted, Wanted::Stream(_)) && w.is_waiting())
                .cloned()
                .collect()
        }))
    }

    /// Serves every stream reader on `key` that can now be answered, in
    /// arrival order, into `served`: a group read takes entries past the
    /// group's last id (so a second reader of the group usually finds
    /// none left); a group or stream that is gone answers its readers
    /// with an error.
    fn serve_stream_readers(&mut self, key: &Bytes, served: &mut Served) -> Result<(), CmdError> {
        let now = self.now();
        for waiter in self.stream_waiters(key)? {
            let Wanted::Stream(wait) = &waiter.wanted else {
                continue;
            };
            let Some(at) = waiter.keys.iter().position(|k| k == key) else {
                continue;
            };
            // A group read served goes to replicas as Redis's forms of it,
            // after the records of the write that made the key ready.
            self.locked.begin_command_record();
            let mut lines = Vec::new();
            let stream = match self.get_mut(key)? {
                Some(Value::Stream(s)) => Some(s),
                _ => None,
            };
            let top = stream.as_ref().and_then(|s| s.last()).map(|(id, _)| id);
            // What the reader must be past: `None` when it is owed an error.
            let past = match (&stream, &wait.group) {
                (None, None) => continue,
                (Some(_), None) => Some(wait.after[at]),
                (None, Some(_)) => None,
                (Some(s), Some(read)) => s.groups.get(&read.group).map(|g| g.last_id),
            };
            if past.is_some_and(|past| top.is_none_or(|top| top <= past)) {
                continue;
            }
            if !waiter.claim() {
                continue;
            }
            let outcome = match (stream, &wait.group) {
                (None, _) => stream_gone(),
                (Some(stream), None) => Outcome::Served {
                    key: key.clone(),
                    taken: Taken::Stream(stream.read_after(wait.after[at], wait.count)),
                },
                (Some(stream), Some(read)) => match stream.groups.get_mut(&read.group) {
                    None => Outcome::Failed(CmdError::other(
                        "NOGROUP the consumer group this client was blocked on no longer exists",
                    )),
                    Some(group) => {
                        let (consumer, created) = group.consumer(&read.consumer, now);
                        consumer.seen_time = now;
                        let entries = stream.deliver_new(read, wait.count, now);
                        lines = stream.group_read_lines(key, read, &entries, created, false);
                        if created {
                            self.notify(key, Event::XgroupCreateConsumer);
                        }
                        Outcome::Served {
                            key: key.clone(),
                            taken: Taken::Stream(entries),
                        }
                    }
                },
            };
            served.push((waiter, outcome));
            if !lines.is_empty() {
                self.dirtied(key)?;
                self.locked.record_as_commands(self.index, lines);
            }
        }
        Ok(())
    }

    /// Takes an element off the list at `key`, deleting the list once it is
    /// empty; `None` if there is no list there (or nothing in it).
    pub fn pop_list(&mut self, key: &[u8], end: End) -> Result<Option<Bytes>, CmdError> {
        Ok(self.pop_list_many(key, end, 1)?.pop())
    }

    /// Takes up to `count` elements off one end of the list at `key` (one
    /// event for them all, as Redis raises), deleting the list once empty.
    pub fn pop_list_many(
        &mut self,
        key: &[u8],
        end: End,
        count: usize,
    ) -> Result<Vec<Bytes>, CmdError> {
        let Some(Value::List(list)) = self.get_mut(key)? else {
            return Ok(Vec::new());
        };
        let taken: Vec<Bytes> = (0..count.min(list.len()))
            .filter_map(|_| end.pop(list))
            .collect();
        if taken.is_empty() {
            return Ok(taken);
        }
        let (emptied, popped) = (list.is_empty(), taken.len());
        // A list emptied by pops goes as the pops, as Redis sends them
        // (`LPOP key 3`): replayed, they empty it too.
        let removal = if emptied {
            Removal::Unnoted
        } else {
            Removal::None
        };
        self.after_pop(key, removal, |db| {
            db.modified_list(key, || ListOp::Pop(end, popped), end.pop_event())
        })?;
        Ok(taken)
    }

    /// Takes up to `count` members off one end of the sorted set at `key`,
    /// deleting the set once empty.
    pub fn pop_zset(
        &mut self,
        key: &[u8],
        end: ZEnd,
        count: usize,
    ) -> Result<Vec<(Bytes, f64)>, CmdError> {
        let Some(Value::ZSet(zset)) = self.get_mut(key)? else {
            return Ok(Vec::new());
        };
        let taken: Vec<(Bytes, f64)> = (0..count.min(zset.len()))
            .filter_map(|_| zset.pop(end == ZEnd::Max))
            .collect();
        if taken.is_empty() {
            return Ok(taken);
        }
        let removal = if zset.is_empty() {
            Removal::Noted
        } else {
            Removal::None
        };
        let members = taken.iter().map(|(m, _)| m.clone());
        self.after_pop(key, removal, |db| {
            db.modified_members(key, members, end.pop_event())
        })?;
        Ok(taken)
    }

    /// Raises a pop's event (`modified`: the change made known as a
    /// change to what it took), deleting the key first if it was emptied
    /// (its `del` follows the pop's event, as in Redis).
    fn after_pop(
        &mut self,
        key: &[u8],
        removal: Removal,
        modified: impl FnOnce(&mut Self) -> Result<(), CmdError>,
    ) -> Result<(), CmdError> {
        match removal {
            Removal::None => {}
            Removal::Noted => {
                self.remove(key)?;
            }
            Removal::Unnoted => self.remove_unnoted(key)?,
        }
        modified(self)?;
        if !matches!(removal, Removal::None) {
            self.notify(key, Event::Del);
        }
        Ok(())
    }

    /// Puts an element on the list at `key`, creating it if needed. The
    /// caller has checked that any existing value there is a list.
    pub fn push_list(&mut self, key: &[u8], end: End, element: Bytes) -> Result<(), CmdError> {
        if !matches!(self.get_mut(key)?, Some(Value::List(_))) {
            self.insert(key, Value::List(VecDeque::new()), Ttl::Clear)?;
        }
        if let Some(Value::List(list)) = self.get_mut(key)? {
            end.push(list, element.clone());
        }
        // A list made just now is recorded whole (`insert`).
        self.modified_list(key, || ListOp::Push(end, vec![element]), end.push_event())?;
        self.signal_ready(key)
    }

    /// Whether the value at `key`, if any, is a list (WRONGTYPE otherwise).
    pub fn check_list(&mut self, key: &[u8]) -> Result<(), CmdError> {
        match self.get_mut(key)? {
            None | Some(Value::List(_)) => Ok(()),
            Some(_) => Err(CmdError::WrongType),
        }
    }
}

impl Locked<'_> {
    /// Hands the elements of the keys marked ready to their waiters, oldest
    /// waiter first, until each key is empty or has no one waiting. A move
    /// can make its destination ready in turn; that is served too. The
    /// waiters are told (`Waiter::finish`) by the caller.
    pub(super) fn serve_ready(&mut self) -> Served {
        let mut served = Served::new();
        // In the order the keys became ready, as Redis serves them: a client
        // waiting on two keys filled in one transaction takes from the first.
        // A key signalled again while others are served queues again.
        while !self.ready.is_empty() {
            let (db, key) = self.ready.remove(0);
            let mut db = self.db(db);
            // Stream readers are served or, if the key no longer holds a
            // stream, group readers are unblocked, after any list or
            // sorted set waiters (Redis's order).
            if !matches!(db.peek(&key), Ok(Some(Value::List(_) | Value::ZSet(_)))) {
                let _ = db.serve_stream_readers(&key, &mut served);
                continue;
            }
            loop {
                let serves: fn(&Wanted) -> bool = match db.get_mut(&key) {
                    Ok(Some(Value::List(l))) if !l.is_empty() => Wanted::takes_list,
                    Ok(Some(Value::ZSet(z))) if !z.is_empty() => Wanted::takes_zset,
                    _ => break,
                };
                let Ok(Some(waiter)) = db.claim_waiter(&key, serves) else {
                    break;
                };
                let outcome = serve_one(&mut db, &key, &waiter.wanted);
                served.push((waiter, outcome));
            }
            let _ = db.serve_stream_readers(&key, &mut served);
        }
        served
    }

    /// The keys of database `db` (every database with `None`) holding a
    /// stream some client waits on, before a flush empties them: their
    /// group readers must learn that the stream is gone.
    pub(super) fn waited_streams(&mut self, db: Option<usize>) -> Vec<(usize, Bytes)> {
        let mut waited = Vec::new();
        for shard in self.shards() {
            for (bdb, key) in shard.blocked.keys() {
                let bdb = *bdb as usize;
                if db.is_none_or(|d| d == bdb)
                    && matches!(shard.dbs[bdb].get(key), Some(n) if matches!(n.entry().value, Value::Stream(_)))
                {
                    waited.push((bdb, key.clone()));
                }
            }
        }
        waited
    }
}

/// How a group reader learns that its stream was deleted, replaced or
/// expired: the group went with it, so waiting on could only end in
/// NOGROUP (plain readers wait on for a new stream there).
fn stream_gone() -> Outcome {
    Outcome::Failed(CmdError::other("UNBLOCKED the stream key no longer exists"))
}

impl Shard {
    /// Unblocks the group readers of a stream the expiry wheel reclaimed
    /// (no command runs, so none will serve the key later).
    pub(super) fn stream_gone(&mut self, db: usize, key: &[u8]) {
        let Some(queue) = self.blocked.get(&(db as u32, Bytes::copy_from_slice(key))) else {
            return;
        };
        for waiter in queue {
            if matches!(&waiter.wanted, Wanted::Stream(w) if w.group.is_some()) && waiter.claim() {
                waiter.finish(stream_gone(), None);
            }
        }
    }
}

/// Serves one claimed waiter from the non-empty value at `key`.
fn serve_one(db: &mut Db, key: &Bytes, wanted: &Wanted) -> Outcome {
    let result = match wanted {
        Wanted::List { end, count } => db.pop_list_many(key, *end, *count).map(Taken::List),
        Wanted::ZSet { end, count } => db.pop_zset(key, *end, *count).map(Taken::ZSet),
        // Queued on no key (WAIT), or never claimed here (streams).
        Wanted::Time | Wanted::Stream(_) => return Outcome::Cancelled,
        Wanted::Move { from, dest, to } => {
            // The destination may live in a shard the command does not
            // hold, and taking it here could only be tried.
            if db.locked.ensure(&[key_shard(dest)]).is_err() {
                return Outcome::Retry;
            }
            match db.check_list(dest) {
                Ok(()) => db.pop_list(key, *from).and_then(|element| match element {
                    Some(element) => db
                        .push_list(dest, *to, element.clone())
                        .map(|()| Taken::List(vec![element])),
                    None => Ok(Taken::List(Vec::new())),
                }),
                Err(e) => Err(e),
            }
        }
    };
    match result {
        Ok(Taken::List(v)) if v.is_empty() => Outcome::Retry,
        Ok(Taken::ZSet(v)) if v.is_empty() => Outcome::Retry,
        Ok(taken) => Outcome::Served {
            key: key.clone(),
            taken,
        },
        Err(CmdError::ShardBusy) => Outcome::Retry,
        Err(e) => Outcome::Failed(e),
    }
}

/// Whether a pop emptied its key, and how its removal is recorded.
enum Removal {
    None,
    /// Recorded as the key's deletion.
    Noted,
    /// Recorded by the pops alone (`modified_list`), which empty it
    /// again when replayed.
    Unnoted,
}
