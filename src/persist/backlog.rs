//! The replication backlog: the command stream replicas follow, as
//! Redis's `master_repl_offset` counts it, and its recent bytes kept
//! for replicas to read from (a partial resync continues from them).
//!
//! A primary's stream is made of the same batches the append-only file
//! takes (each write as the state it left its keys in, scripts as their
//! effects, absolute deadlines), plus what only replicas need: the DEL of
//! an expired key, PUBLISH, PING and GETACK. A replica's stream is its
//! primary's, byte for byte (`feed`), so that its offsets stay the
//! primary's and a replica of it, or a replica that follows it once it is
//! promoted, continues where it stood.
//!
//! One ring serves every replica: each reads from its own position. The
//! ring keeps `repl-backlog-size` bytes, and more while a replica still
//! has to read them (Redis's shared replication buffer), up to
//! `HARD_LIMIT` behind the newest byte: a replica further behind is
//! dropped and syncs again in full.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use tokio::sync::watch;

use super::{Batch, Stream};

/// How far behind a replica may fall before it is dropped: Redis's
/// default `client-output-buffer-limit replica` hard limit.
pub const HARD_LIMIT: usize = 256 * 1024 * 1024;

/// A reader's position fell out of the ring.
#[derive(Debug, PartialEq, Eq)]
pub struct Gone;

struct Ring {
    data: VecDeque<u8>,
    /// The offset of `data`'s first byte (offsets count from 1).
    first: i64,
}

struct Inner {
    /// Bytes of stream ever made or applied (`master_repl_offset`).
    offset: i64,
    /// None until a replica asks for the stream (or this server, as a
    /// replica, has synced once).
    ring: Option<Ring>,
    /// `repl-backlog-size`.
    size: usize,
    /// The database the stream last selected.
    stream: Stream,
    /// Each reader's next offset, which the ring keeps.
    readers: HashMap<u64, i64>,
}

thread_local! {
    /// Where the records this thread last appended end. A command runs on
    /// one thread, without yielding, from its dispatch to its reply, so
    /// the connection that ran it finds its own records' end here
    /// (`take_appended`): the offset the safe mode waits for. Read there
    /// rather than carried up from the shards' guard, because EXEC takes
    /// shards of its own inside its command.
    static APPENDED: Cell<Option<i64>> = const { Cell::new(None) };
}

/// The offset the records appended on this thread since the last call end
/// at, if any were.
pub fn take_appended() -> Option<i64> {
    APPENDED.take()
}

pub struct Backlog {
    inner: Mutex<Inner>,
    /// Set while the ring takes this server's own records: writes note
    /// their changes only then.
    recording: AtomicBool,
    /// Set while this server is a replica: its stream is its primary's.
    following: AtomicBool,
    /// The offset, for readers waiting for more.
    grown: watch::Sender<i64>,
}

impl Backlog {
    pub fn new(size: usize) -> Backlog {
        Backlog {
            inner: Mutex::new(Inner {
                offset: 0,
                ring: None,
                size,
                stream: Stream::default(),
                readers: HashMap::new(),
            }),
            recording: AtomicBool::new(false),
            following: AtomicBool::new(false),
            grown: watch::Sender::new(0),
        }
    }

    /// Whether writes record what they change for the stream. One
    /// relaxed load: every command asks.
    #[inline]
    pub fn recording(&self) -> bool {
        self.recording.load(Ordering::Relaxed)
    }

    fn settle_recording(&self, inner: &Inner) {
        let on = inner.ring.is_some() && !self.following.load(Ordering::Relaxed);
        self.recording.store(on, Ordering::Relaxed);
    }

    pub fn offset(&self) -> i64 {
        self.inner.lock().offset
    }

    pub fn is_active(&self) -> bool {
        self.inner.lock().ring.is_some()
    }

    /// The offset of the first byte kept and how many are kept; `(0, 0)`
    /// with no ring, as Redis reports it.
    pub fn span(&self) -> (i64, i64) {
        let inner = self.inner.lock();
        inner
            .ring
            .as_ref()
            .map_or((0, 0), |r| (r.first, r.data.len() as i64))
    }

    /// Starts keeping the stream (from the next byte), if not yet.
    pub fn activate(&self) {
        let mut inner = self.inner.lock();
        if inner.ring.is_none() {
            inner.ring = Some(Ring {
                data: VecDeque::new(),
                first: inner.offset + 1,
            });
        }
        self.settle_recording(&inner);
    }

    /// Frees the ring (`repl-backlog-ttl` passed with no replicas).
    pub fn deactivate(&self) {
        let mut inner = self.inner.lock();
        inner.ring = None;
        self.settle_recording(&inner);
    }

    /// A replica's full sync: its stream goes on from `offset`, with a
    /// ring of its own from there.
    pub fn restart_at(&self, offset: i64) {
        let mut inner = self.inner.lock();
        inner.offset = offset;
        inner.ring = Some(Ring {
            data: VecDeque::new(),
            first: offset + 1,
        });
        inner.stream = Stream::default();
        self.settle_recording(&inner);
        self.grown.send_replace(offset);
    }

    /// While this server follows a primary, its own writes (a writable
    /// replica's) stay out of the stream, which is the primary's.
    pub fn set_following(&self, on: bool) {
        self.following.store(on, Ordering::Relaxed);
        let mut inner = self.inner.lock();
        // A promoted replica's first record selects its database anew.
        inner.stream = Stream::default();
        self.settle_recording(&inner);
    }

    pub fn set_size(&self, size: usize) {
        let mut inner = self.inner.lock();
        inner.size = size;
        trim(&mut inner);
    }

    /// A full sync's starting point, taken while every shard is held: the
    /// offset the replica continues from. The record after it selects
    /// its database, since the replica starts in database 0.
    pub fn sync_point(&self) -> i64 {
        let mut inner = self.inner.lock();
        inner.stream = Stream::default();
        inner.offset
    }

    /// Appends the DELs of keys found past their deadline: a change no
    /// client asked for, so no reply waits for it.
    pub fn append(&self, batch: &Batch) {
        self.append_at(batch);
    }

    /// Appends one command's (or transaction's, script's) changes, and
    /// notes where they end for the reply (`take_appended`); returns that
    /// end.
    pub fn append_change(&self, batch: &Batch) -> Option<i64> {
        let end = self.append_at(batch);
        if end.is_some() {
            APPENDED.set(end);
        }
        end
    }

    fn append_at(&self, batch: &Batch) -> Option<i64> {
        if !self.recording() || batch.is_empty() {
            return None;
        }
        let mut inner = self.inner.lock();
        inner.stream.put(batch);
        // Encoded once for every replica, in a buffer kept for the next.
        let mut bytes = std::mem::take(&mut inner.stream.buf);
        self.push(&mut inner, &bytes);
        bytes.clear();
        inner.stream.buf = bytes;
        Some(inner.offset)
    }

    /// Appends a command that changes no key (PUBLISH, PING, GETACK), on
    /// a primary only; in `db` when it is a client's (Redis selects the
    /// client's database first), in any for the server's own.
    pub fn command(&self, db: Option<usize>, args: &[&[u8]]) {
        let mut batch = Batch::default();
        batch.push(db, args);
        self.append_at(&batch);
    }

    /// Bytes of the primary's stream, applied (on a replica).
    pub fn feed(&self, bytes: &[u8]) {
        let mut inner = self.inner.lock();
        self.push(&mut inner, bytes);
    }

    fn push(&self, inner: &mut Inner, bytes: &[u8]) {
        inner.offset += bytes.len() as i64;
        if let Some(ring) = &mut inner.ring {
            ring.data.extend(bytes);
        }
        trim(inner);
        self.grown.send_replace(inner.offset);
    }

    /// Wakes when the offset moves.
    pub fn watch(&self) -> watch::Receiver<i64> {
        self.grown.subscribe()
    }

    /// Whether a partial resync may continue from `from` (the replica's
    /// offset plus one): its bytes are all kept.
    pub fn has_from(&self, from: i64) -> bool {
        let inner = self.inner.lock();
        inner
            .ring
            .as_ref()
            .is_some_and(|r| from >= r.first && from <= inner.offset + 1)
    }

    /// Registers reader `id` at `from`: the ring keeps its bytes.
    pub fn attach(&self, id: u64, from: i64) {
        self.inner.lock().readers.insert(id, from);
    }

    pub fn detach(&self, id: u64) {
        let mut inner = self.inner.lock();
        inner.readers.remove(&id);
        trim(&mut inner);
    }

    /// Up to `max` bytes from `from` on, moving reader `id` past them.
    #[cfg(test)]
    pub fn read(&self, id: u64, from: i64, max: usize) -> Result<Vec<u8>, Gone> {
        let mut out = Vec::new();
        self.read_into(id, from, max, &mut out)?;
        Ok(out)
    }

    /// `read` into `out` (cleared first), a buffer its reader keeps.
    pub fn read_into(&self, id: u64, from: i64, max: usize, out: &mut Vec<u8>) -> Result<(), Gone> {
        out.clear();
        let mut inner = self.inner.lock();
        let Some(ring) = &inner.ring else {
            return Err(Gone);
        };
        if from < ring.first || from > inner.offset + 1 {
            return Err(Gone);
        }
        let start = (from - ring.first) as usize;
        let end = ring.data.len().min(start + max);
        let (front, back) = ring.data.as_slices();
        let split = front.len();
        if start < split {
            out.extend_from_slice(&front[start..end.min(split)]);
        }
        if end > split {
            out.extend_from_slice(&back[start.saturating_sub(split)..end - split]);
        }
        let next = from + out.len() as i64;
        if let Some(pos) = inner.readers.get_mut(&id) {
            *pos = next;
        }
        trim(&mut inner);
        Ok(())
    }
}

/// Drops what neither the backlog's size nor a reader within the hard
/// limit still needs.
fn trim(inner: &mut Inner) {
    let end = inner.offset + 1;
    let slowest = inner.readers.values().copied().min().unwrap_or(end);
    let Some(ring) = &mut inner.ring else {
        return;
    };
    let by_size = end - inner.size as i64;
    let by_limit = end - (inner.size.max(HARD_LIMIT)) as i64;
    let keep_from = by_size.min(slowest).max(by_limit).max(ring.first);
    let drop = (keep_from - ring.first) as usize;
    if drop > 0 {
        ring.data.drain(..drop);
        ring.first = keep_from;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_its_size_and_what_readers_still_need() {
        let backlog = Backlog::new(4);
        backlog.feed(b"ab");
        assert_eq!(backlog.span(), (0, 0));
        assert_eq!(backlog.offset(), 2);
        backlog.activate();
        backlog.attach(7, 3);
        backlog.feed(b"cdefgh");
        assert_eq!(backlog.span(), (3, 6));
        assert_eq!(backlog.read(7, 3, 2).unwrap(), b"cd");
        assert_eq!(backlog.span(), (5, 4));
        backlog.detach(7);
        backlog.feed(b"ij");
        assert_eq!(backlog.span(), (7, 4));
        assert!(backlog.has_from(7) && backlog.has_from(11) && !backlog.has_from(6));
        assert_eq!(backlog.read(1, 5, 10), Err(Gone));
        assert_eq!(backlog.read(1, 9, 10).unwrap(), b"ij");
    }

    #[test]
    fn records_select_their_database_once_and_again_after_a_sync_point() {
        let backlog = Backlog::new(1024);
        backlog.activate();
        let mut batch = Batch::default();
        batch.push(Some(2), &[b"DEL", b"k"]);
        backlog.append(&batch);
        backlog.append(&batch);
        let at = backlog.sync_point();
        backlog.append(&batch);
        let text = String::from_utf8(backlog.read(0, 1, 1 << 20).unwrap()).unwrap();
        let del = "*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n";
        let select = "*2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n";
        assert_eq!(text, format!("{select}{del}{del}{select}{del}"));
        assert_eq!(at as usize, select.len() + 2 * del.len());
    }
}
