//! Streams: entries ordered by id, and consumer groups with their lists
//! of delivered-but-unacknowledged entries. Entries sit in a `BTreeMap`;
//! beside it the stream keeps a sketch of how Redis would have cut it into
//! listpack nodes, because approximate trimming (`~`) and XINFO's
//! `radix-tree-keys` depend on where those cuts fall.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use bytes::Bytes;

use super::EncodingLimits;

/// A stream entry id: milliseconds, then a sequence number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const ZERO: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// The id right after this one; `None` past the last possible id.
    pub fn next(self) -> Option<StreamId> {
        match self.seq.checked_add(1) {
            Some(seq) => Some(StreamId::new(self.ms, seq)),
            None => Some(StreamId::new(self.ms.checked_add(1)?, 0)),
        }
    }

    /// The id right before this one; `None` before 0-0.
    pub fn prev(self) -> Option<StreamId> {
        match self.seq.checked_sub(1) {
            Some(seq) => Some(StreamId::new(self.ms, seq)),
            None => Some(StreamId::new(self.ms.checked_sub(1)?, u64::MAX)),
        }
    }

    pub fn is_zero(self) -> bool {
        self == StreamId::ZERO
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// One listpack node as Redis would hold it: entries appended to it
/// (deleted ones included), those still live, its last id and a rough
/// byte size.
#[derive(Debug, Clone, PartialEq)]
struct Node {
    appended: u32,
    live: u32,
    last: StreamId,
    bytes: usize,
}

/// A rough listpack size of one entry: its fields and values with their
/// headers, plus the id deltas and flags.
fn entry_bytes(fields: &[Bytes]) -> usize {
    8 + fields.iter().map(|f| f.len() + 2).sum::<usize>()
}

/// Entries read by a group when the count is unknown (Redis's -1).
pub const ENTRIES_READ_UNKNOWN: i64 = -1;

/// A delivered entry waiting for its XACK.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub consumer: Bytes,
    pub delivery_time: u64,
    pub delivery_count: u64,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Consumer {
    pub seen_time: u64,
    pub pending: BTreeSet<StreamId>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub last_id: StreamId,
    pub entries_read: i64,
    pub pending: BTreeMap<StreamId, Pending>,
    pub consumers: BTreeMap<Bytes, Consumer>,
}

impl Group {
    pub fn new(last_id: StreamId, entries_read: i64) -> Group {
        Group {
            last_id,
            entries_read,
            pending: BTreeMap::new(),
            consumers: BTreeMap::new(),
        }
    }

    /// The consumer called `name`, made (seen now) if new; the flag says
    /// whether it was made.
    pub fn consumer(&mut self, name: &Bytes, now: u64) -> (&mut Consumer, bool) {
        let created = !self.consumers.contains_key(name);
        let consumer = self.consumers.entry(name.clone()).or_default();
        if created {
            consumer.seen_time = now;
        }
        (consumer, created)
    }

    /// Records a delivery of `id` to `consumer` at `now`, moving the entry
    /// from whoever had it before.
    pub fn deliver(&mut self, id: StreamId, consumer: &Bytes, now: u64, count: u64) {
        if let Some(old) = self.pending.get(&id)
            && let Some(owner) = self.consumers.get_mut(&old.consumer)
        {
            owner.pending.remove(&id);
        }
        self.pending.insert(
            id,
            Pending {
                consumer: consumer.clone(),
                delivery_time: now,
                delivery_count: count,
            },
        );
        self.consumers
            .entry(consumer.clone())
            .or_default()
            .pending
            .insert(id);
    }

    /// Drops `id` from the pending list; false if it was not there.
    pub fn acknowledge(&mut self, id: StreamId) -> bool {
        let Some(pending) = self.pending.remove(&id) else {
            return false;
        };
        if let Some(owner) = self.consumers.get_mut(&pending.consumer) {
            owner.pending.remove(&id);
        }
        true
    }
}

// A group's changes as Redis 7.0 sends them to replicas and writes them
// to its AOF (`t_stream.c`'s `streamPropagate…`): each line is one
// command, and running them in order over the state before the change
// makes the same group.

fn id_arg(id: StreamId) -> Bytes {
    Bytes::from(id.to_string())
}

/// `XCLAIM key group consumer 0 id TIME ms RETRYCOUNT n FORCE JUSTID
/// LASTID last`: the entry pending as `pending` says (or, with the entry
/// gone from the stream, dropped from the pending list, which the same
/// line does on a replica that finds it gone too).
pub fn claim_form(
    key: &Bytes,
    group: &Bytes,
    entry: StreamId,
    pending: &Pending,
    last: StreamId,
) -> Vec<Bytes> {
    vec![
        Bytes::from_static(b"XCLAIM"),
        key.clone(),
        group.clone(),
        pending.consumer.clone(),
        Bytes::from_static(b"0"),
        id_arg(entry),
        Bytes::from_static(b"TIME"),
        Bytes::from(pending.delivery_time.to_string()),
        Bytes::from_static(b"RETRYCOUNT"),
        Bytes::from(pending.delivery_count.to_string()),
        Bytes::from_static(b"FORCE"),
        Bytes::from_static(b"JUSTID"),
        Bytes::from_static(b"LASTID"),
        id_arg(last),
    ]
}

/// `XGROUP <sub> key group`, then `rest`.
fn xgroup_form(
    sub: &'static [u8],
    key: &Bytes,
    group: &Bytes,
    rest: impl IntoIterator<Item = Bytes>,
) -> Vec<Bytes> {
    let mut line = vec![
        Bytes::from_static(b"XGROUP"),
        Bytes::from_static(sub),
        key.clone(),
        group.clone(),
    ];
    line.extend(rest);
    line
}

/// `XGROUP SETID key group last ENTRIESREAD n`: the group's position.
pub fn set_id_form(key: &Bytes, name: &Bytes, group: &Group) -> Vec<Bytes> {
    let read = Bytes::from(group.entries_read.to_string());
    let rest = [
        id_arg(group.last_id),
        Bytes::from_static(b"ENTRIESREAD"),
        read,
    ];
    xgroup_form(b"SETID", key, name, rest)
}

/// `XGROUP CREATECONSUMER key group consumer`.
pub fn create_consumer_form(key: &Bytes, group: &Bytes, consumer: &Bytes) -> Vec<Bytes> {
    xgroup_form(b"CREATECONSUMER", key, group, [consumer.clone()])
}

/// An entry as a read hands it out; `None` for a pending entry that was
/// deleted since it was delivered.
pub type ReadEntry = (StreamId, Option<Vec<Bytes>>);

/// A read by a consumer of a group (XREADGROUP).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupRead {
    pub group: Bytes,
    pub consumer: Bytes,
    pub noack: bool,
}

/// A COUNT of 0 means no limit.
fn read_limit(count: usize) -> usize {
    if count == 0 { usize::MAX } else { count }
}

/// How a trim picks what goes: down to a length, or below an id.
#[derive(Debug, Clone, Copy)]
pub enum Trim {
    MaxLen(u64),
    MinId(StreamId),
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Stream {
    entries: BTreeMap<StreamId, Box<[Bytes]>>,
    /// The nodes by their first id.
    nodes: BTreeMap<StreamId, Node>,
    pub last_id: StreamId,
    pub max_deleted: StreamId,
    pub entries_added: u64,
    pub groups: BTreeMap<Bytes, Group>,
}

impl Stream {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    pub fn first_id(&self) -> StreamId {
        self.entries
            .first_key_value()
            .map_or(StreamId::ZERO, |(id, _)| *id)
    }

    pub fn get(&self, id: StreamId) -> Option<&[Bytes]> {
        self.entries.get(&id).map(|f| &f[..])
    }

    pub fn first(&self) -> Option<(StreamId, &[Bytes])> {
        self.entries.first_key_value().map(|(id, f)| (*id, &f[..]))
    }

    pub fn last(&self) -> Option<(StreamId, &[Bytes])> {
        self.entries.last_key_value().map(|(id, f)| (*id, &f[..]))
    }

    /// Entries from `start` to `end` (inclusive), forwards or backwards.
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
    ) -> Box<dyn Iterator<Item = (StreamId, &[Bytes])> + '_> {
        if start > end {
            return Box::new(std::iter::empty());
        }
        let items = self.entries.range(start..=end).map(|(id, f)| (*id, &f[..]));
        if rev {
            Box::new(items.rev())
        } else {
            Box::new(items)
        }
    }

    /// Appends an entry; the caller has checked `id` is past `last_id`.
    /// A new node starts where Redis would start one (`limits`' node sizes).
    pub fn append(&mut self, id: StreamId, fields: Vec<Bytes>, limits: &EncodingLimits) {
        let bytes = entry_bytes(&fields);
        let fits = self.nodes.last_key_value().is_some_and(|(_, n)| {
            limits.stream_node_takes(u64::from(n.appended), n.bytes as u64, bytes as u64)
        });
        if fits {
            if let Some(mut last) = self.nodes.last_entry() {
                let node = last.get_mut();
                node.appended += 1;
                node.live += 1;
                node.last = id;
                node.bytes += bytes;
            }
        } else {
            self.nodes.insert(
                id,
                Node {
                    appended: 1,
                    live: 1,
                    last: id,
                    bytes: 16 + bytes,
                },
            );
        }
        self.entries.insert(id, fields.into_boxed_slice());
        self.last_id = id;
        self.entries_added = self.entries_added.saturating_add(1);
    }

    /// Each node as Redis would hold it: its master id (the first entry
    /// appended to it, maybe deleted since) and its last entry's id.
    pub fn node_spans(&self) -> impl Iterator<Item = (StreamId, StreamId)> + '_ {
        self.nodes.iter().map(|(first, node)| (*first, node.last))
    }

    /// Adds a node as a loaded RDB file or DUMP payload gives it: `entries`
    /// (ascending, past every entry so far) under the master id `master`,
    /// which held `deleted` more that are gone. The caller sets the
    /// stream's counters after its last node.
    pub fn load_node(
        &mut self,
        master: StreamId,
        entries: Vec<(StreamId, Vec<Bytes>)>,
        deleted: u32,
    ) {
        let Some(&(last, _)) = entries.last() else {
            return;
        };
        let mut node = Node {
            appended: deleted + entries.len() as u32,
            live: entries.len() as u32,
            last,
            bytes: 16,
        };
        for (id, fields) in entries {
            node.bytes += entry_bytes(&fields);
            self.entries.insert(id, fields.into_boxed_slice());
        }
        self.nodes.insert(master, node);
    }

    /// Deletes one entry; false if there is none with that id.
    pub fn delete(&mut self, id: StreamId) -> bool {
        if self.entries.remove(&id).is_none() {
            return false;
        }
        if let Some((&first, node)) = self.nodes.range_mut(..=id).next_back() {
            node.live -= 1;
            if node.live == 0 {
                self.nodes.remove(&first);
            }
        }
        true
    }

    /// Trims from the oldest end as Redis does: whole nodes first; then,
    /// unless `approx`, single entries of the next node. `limit` (0: none)
    /// caps the entries an approximate trim removes. Returns how many went.
    pub fn trim(&mut self, how: Trim, approx: bool, limit: u64) -> u64 {
        let mut deleted = 0u64;
        while let Some((&first, node)) = self.nodes.first_key_value() {
            if let Trim::MaxLen(max) = how
                && self.entries.len() as u64 <= max
            {
                break;
            }
            let live = u64::from(node.live);
            if limit > 0 && deleted + live > limit {
                break;
            }
            let whole = match how {
                Trim::MaxLen(max) => self.entries.len() as u64 - live >= max,
                Trim::MinId(min) => node.last < min,
            };
            if whole {
                let next = self.nodes.range(first..).nth(1).map(|(id, _)| *id);
                match next {
                    Some(next) => self.entries = self.entries.split_off(&next),
                    None => self.entries.clear(),
                }
                self.nodes.remove(&first);
                deleted += live;
                continue;
            }
            if approx {
                break;
            }
            while let Some((&id, _)) = self.entries.first_key_value() {
                let done = match how {
                    Trim::MaxLen(max) => self.entries.len() as u64 <= max,
                    Trim::MinId(min) => id >= min,
                };
                if done {
                    break;
                }
                self.delete(id);
                deleted += 1;
            }
            break;
        }
        deleted
    }

    /// The position of `id` in the history of added entries, when it can be
    /// known (Redis's estimate); `ENTRIES_READ_UNKNOWN` otherwise.
    pub fn entries_read_at(&self, id: StreamId) -> i64 {
        if self.entries_added == 0 {
            return 0;
        }
        let added = self.entries_added as i64;
        if self.is_empty() && id <= self.last_id || id == self.last_id {
            return added;
        }
        if id > self.last_id {
            return ENTRIES_READ_UNKNOWN;
        }
        let first = self.first_id();
        if self.max_deleted.is_zero() || self.max_deleted < first {
            let len = self.len() as i64;
            if id < first {
                return added - len;
            }
            if id == first {
                return added - len + 1;
            }
        }
        ENTRIES_READ_UNKNOWN
    }

    /// Whether an entry deleted by XDEL may lie at or after `start`.
    pub fn has_tombstone_from(&self, start: StreamId) -> bool {
        !self.is_empty()
            && !self.max_deleted.is_zero()
            && self.first_id() <= self.max_deleted
            && start <= self.max_deleted
    }

    /// How many entries `group` has yet to read, when it can be known.
    pub fn lag(&self, group: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        let added = self.entries_added as i64;
        if group.entries_read != ENTRIES_READ_UNKNOWN && !self.has_tombstone_from(group.last_id) {
            return Some(added - group.entries_read);
        }
        let read = self.entries_read_at(group.last_id);
        (read != ENTRIES_READ_UNKNOWN).then(|| added - read)
    }

    /// Moves `group`'s last delivered id to `id` (an entry it is handing
    /// out), keeping its read counter as Redis keeps it.
    pub fn advance_group(&mut self, group: &Bytes, id: StreamId) {
        let tombstone = self.has_tombstone_from(id);
        let estimate = self.entries_read_at(id);
        let added = self.entries_added;
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        if id <= g.last_id {
            return;
        }
        if g.entries_read != ENTRIES_READ_UNKNOWN && !tombstone {
            g.entries_read = g.entries_read.saturating_add(1);
        } else if added > 0 {
            g.entries_read = estimate;
        }
        g.last_id = id;
    }

    /// Entries after `after`, at most `count` (0: all).
    pub fn read_after(&self, after: StreamId, count: usize) -> Vec<ReadEntry> {
        let Some(start) = after.next() else {
            return Vec::new();
        };
        self.range(start, StreamId::MAX, false)
            .take(read_limit(count))
            .map(|(id, f)| (id, Some(f.to_vec())))
            .collect()
    }

    /// Hands a group's next entries to a consumer: past the group's last
    /// delivered id, recorded as pending unless `noack`.
    pub fn deliver_new(&mut self, read: &GroupRead, count: usize, now: u64) -> Vec<ReadEntry> {
        let Some(last) = self.groups.get(&read.group).map(|g| g.last_id) else {
            return Vec::new();
        };
        let entries = self.read_after(last, count);
        for (id, _) in &entries {
            self.advance_group(&read.group, *id);
            if let Some(group) = self.groups.get_mut(&read.group)
                && !read.noack
            {
                group.deliver(*id, &read.consumer, now, 1);
            }
        }
        entries
    }

    /// A consumer's own pending entries after `after`, each delivered
    /// again (those still in the stream).
    pub fn deliver_history(
        &mut self,
        read: &GroupRead,
        after: StreamId,
        count: usize,
        now: u64,
    ) -> Vec<ReadEntry> {
        let (Some(start), Some(group)) = (after.next(), self.groups.get(&read.group)) else {
            return Vec::new();
        };
        let ids: Vec<StreamId> = group
            .consumers
            .get(&read.consumer)
            .map(|c| {
                c.pending
                    .range(start..)
                    .take(read_limit(count))
                    .copied()
                    .collect()
            })
            .unwrap_or_default();
        let found: Vec<ReadEntry> = ids
            .into_iter()
            .map(|id| (id, self.get(id).map(<[Bytes]>::to_vec)))
            .collect();
        if let Some(group) = self.groups.get_mut(&read.group) {
            for (id, fields) in &found {
                if fields.is_some()
                    && let Some(p) = group.pending.get_mut(id)
                {
                    p.delivery_time = now;
                    p.delivery_count = p.delivery_count.saturating_add(1);
                }
            }
        }
        found
    }

    /// A group read's changes in Redis's forms (`claim_form`…): the consumer
    /// if the read `created` it and no XCLAIM makes it, each entry handed
    /// out (or, from the `history`, handed out again) as its XCLAIM, then
    /// for new entries the group's position. Redis sends that position
    /// only for NOACK reads; an XCLAIM's LASTID moves the group's id but
    /// not its read counter, which replicas must have too.
    pub fn group_read_lines(
        &self,
        key: &Bytes,
        read: &GroupRead,
        entries: &[ReadEntry],
        created: bool,
        history: bool,
    ) -> Vec<Vec<Bytes>> {
        let Some(group) = self.groups.get(&read.group) else {
            return Vec::new();
        };
        let claims: Vec<Vec<Bytes>> = entries
            .iter()
            .filter(|(_, fields)| fields.is_some() && !read.noack)
            .filter_map(|(id, _)| {
                let pending = group.pending.get(id)?;
                let last = if history { group.last_id } else { *id };
                Some(claim_form(key, &read.group, *id, pending, last))
            })
            .collect();
        let mut lines = Vec::new();
        if created && claims.is_empty() {
            lines.push(create_consumer_form(key, &read.group, &read.consumer));
        }
        lines.extend(claims);
        if !history && !entries.is_empty() {
            lines.push(set_id_form(key, &read.group, group));
        }
        lines
    }

    /// A rough size in bytes, for MEMORY USAGE.
    pub fn approx_bytes(&self) -> u64 {
        let nodes: usize = self.nodes.values().map(|n| n.bytes).sum();
        let groups: usize = self
            .groups
            .iter()
            .map(|(name, g)| {
                64 + name.len()
                    + g.pending.len() * 48
                    + g.consumers.keys().map(|c| 48 + c.len()).sum::<usize>()
            })
            .sum();
        (64 + nodes + self.nodes.len() * 32 + groups) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream_of(n: u64) -> Stream {
        let mut s = Stream::default();
        for i in 1..=n {
            s.append(
                StreamId::new(i, 0),
                vec![Bytes::from_static(b"f")],
                &EncodingLimits::DEFAULT,
            );
        }
        s
    }

    #[test]
    fn ids_step_across_the_sequence_boundary() {
        assert_eq!(StreamId::new(1, u64::MAX).next(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(StreamId::new(2, 0).prev(), Some(StreamId::new(1, u64::MAX)));
        assert_eq!(StreamId::ZERO.prev(), None);
    }

    #[test]
    fn approximate_trim_removes_whole_nodes_only() {
        let mut s = stream_of(250);
        assert_eq!(s.node_count(), 3);
        assert_eq!(s.trim(Trim::MaxLen(120), true, 0), 100);
        assert_eq!(s.len(), 150);
        assert_eq!(s.trim(Trim::MaxLen(120), false, 0), 30);
        assert_eq!(s.first_id(), StreamId::new(131, 0));
    }

    #[test]
    fn deleting_a_node_s_last_live_entry_drops_the_node() {
        let mut s = stream_of(101);
        assert!(s.delete(StreamId::new(101, 0)));
        assert_eq!(s.node_count(), 1);
        assert!(!s.delete(StreamId::new(101, 0)));
    }
}
