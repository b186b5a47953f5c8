//! Client-side caching (CLIENT TRACKING): which clients cached which keys,
//! and the invalidation messages a change sends them.
//!
//! Default mode remembers, per key name (in every database alike, as Redis
//! does), the ids of the clients that read it; the first change to the key
//! tells each of them once and forgets the key. Broadcast mode remembers
//! nothing per key: a client registers prefixes and hears of every changed
//! key that starts with one of them, the keys of one command in one message
//! per prefix.
//!
//! A message goes to the tracking client itself when it speaks RESP3
//! (`>2 invalidate [keys]`), or to the client it redirects to: as a push
//! for a RESP3 target, as a `__redis__:invalidate` pub/sub message for a
//! subscribed RESP2 one. What a client's own command makes it hear comes
//! after that command's reply: the connection runs each command in a
//! [`Scope`] and writes what it collected once the reply is out.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use bytes::{BufMut, Bytes, BytesMut};
use dashmap::DashMap;
use indexmap::{IndexMap, IndexSet};
use parking_lot::{Mutex, RwLock};

use super::{Hasher, Mailbox, header};

/// The channel RESP2 redirect targets hear invalidations on.
pub const CHANNEL: &[u8] = b"__redis__:invalidate";

/// How a client tracks, as CLIENT TRACKING ON set it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mode {
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
}

struct Tracker {
    mode: Mode,
    /// The client id messages go to; 0: the tracking client itself.
    redirect: u64,
    prefixes: BTreeSet<Bytes>,
    /// CLIENT CACHING was given for the next command.
    caching: bool,
    /// The redirect target has gone away.
    broken: AtomicBool,
}

/// What CLIENT LIST and CLIENT TRACKINGINFO show of a tracking client.
pub struct TrackingInfo {
    pub mode: Mode,
    pub redirect: u64,
    pub caching: bool,
    pub broken: bool,
    pub prefixes: Vec<Bytes>,
}

/// The per-key table of default mode: key → ids of the clients that read it.
#[derive(Default)]
struct KeyTable {
    keys: IndexMap<Bytes, IndexSet<u64, Hasher>, Hasher>,
    /// (key, client) pairs: INFO's `tracking_total_items`.
    items: usize,
}

/// Why CLIENT TRACKING ON refuses a set of prefixes.
pub enum PrefixError {
    /// A new prefix overlaps one the client already has.
    Existing { new: Bytes, old: Bytes },
    /// Two of the new prefixes overlap.
    Provided { first: Bytes, second: Bytes },
}

#[derive(Default)]
pub struct Tracking {
    /// Every connected client's mailbox, by id: where messages for it and
    /// for those redirecting to it go.
    connections: DashMap<u64, Arc<Mailbox>, Hasher>,
    trackers: RwLock<HashMap<u64, Tracker>>,
    tracking_clients: AtomicUsize,
    keys: Mutex<KeyTable>,
    key_count: AtomicUsize,
    /// Broadcast prefixes and the clients registered on each.
    prefixes: RwLock<BTreeMap<Bytes, IndexSet<u64, Hasher>>>,
    prefix_count: AtomicUsize,
    /// `tracking-table-max-keys` (0: no limit).
    max_keys: AtomicU64,
}

thread_local! {
    /// The command this thread runs for a client, if any (see [`Scope`]).
    static SCOPE: RefCell<Option<ScopeState>> = const { RefCell::new(None) };
}

struct ScopeState {
    client: u64,
    /// Frames for the client itself, written after its reply.
    after: Vec<Bytes>,
    /// Keys changed for broadcast, with the client that changed each
    /// (`None`: the server, by expiry), sent when the command ends.
    changed: BTreeMap<Bytes, Option<u64>>,
    /// A command a script ran read something: the script's own keys are
    /// then remembered (Redis tracks the keys a script declares).
    script_read: bool,
}

fn with_scope<T>(f: impl FnOnce(&mut ScopeState) -> T) -> Option<T> {
    SCOPE.with_borrow_mut(|scope| scope.as_mut().map(f))
}

fn current_client() -> Option<u64> {
    with_scope(|s| s.client)
}

/// One command of one client, from before it runs until its reply is
/// encoded. Must not be held across an await: it lives in the thread.
pub struct Scope(());

impl Scope {
    pub fn enter(client: u64) -> Scope {
        // `with_borrow_mut` rather than `set`, which goes through the
        // lazy-initialisation path on every call (every command).
        SCOPE.with_borrow_mut(|scope| {
            *scope = Some(ScopeState {
                client,
                after: Vec::new(),
                changed: BTreeMap::new(),
                script_read: false,
            })
        });
        Scope(())
    }

    /// Ends the command: sends the broadcast messages it caused, and
    /// returns the frames its own client must get after its reply.
    pub fn finish(self, tracking: &Tracking) -> Vec<Bytes> {
        let changed = with_scope(|s| std::mem::take(&mut s.changed)).unwrap_or_default();
        if !changed.is_empty() {
            tracking.broadcast(&changed);
        }
        SCOPE.take().map(|s| s.after).unwrap_or_default()
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        SCOPE.with_borrow_mut(|scope| *scope = None);
    }
}

/// Notes that a command run by a script read keys.
pub fn note_script_read() {
    with_scope(|s| s.script_read = true);
}

/// Whether the script that just ended read anything (and forgets it).
pub fn take_script_read() -> bool {
    with_scope(|s| std::mem::take(&mut s.script_read)).unwrap_or(false)
}

/// What an invalidation carries: keys, or null for "everything" (a flush).
enum Payload<'a> {
    Keys(&'a [&'a [u8]]),
    Flushed,
}

impl Payload<'_> {
    /// The payload as Redis encodes it; a flush's null in the protocol of
    /// the tracking client (not of the target it redirects to).
    fn encode(&self, out: &mut BytesMut, tracker_resp3: bool) {
        match self {
            Payload::Keys(keys) => {
                header(out, b'*', keys.len());
                for key in *keys {
                    header(out, b'$', key.len());
                    out.put_slice(key);
                    out.put_slice(b"\r\n");
                }
            }
            Payload::Flushed if tracker_resp3 => out.put_slice(b"_\r\n"),
            Payload::Flushed => out.put_slice(b"$-1\r\n"),
        }
    }
}

fn bulk(out: &mut BytesMut, part: &[u8]) {
    header(out, b'$', part.len());
    out.put_slice(part);
    out.put_slice(b"\r\n");
}

/// Queues `frame` for `mailbox`'s client, after the reply if its own
/// command is running on this thread.
fn deliver(mailbox: &Mailbox, frame: Bytes) {
    let id = mailbox.id();
    let deferred = with_scope(|s| {
        if s.client == id {
            s.after.push(frame.clone());
            true
        } else {
            false
        }
    });
    if deferred != Some(true) {
        mailbox.push(frame);
    }
}

/// Whether one key starts with the other.
fn overlap(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

fn protocol_of(mailbox: &Mailbox) -> (bool, bool) {
    let info = mailbox.handle.info.lock();
    (info.protocol == 3, info.sub + info.psub + info.ssub > 0)
}

impl Tracking {
    /// Registers a connection's mailbox.
    pub fn connect(&self, mailbox: Arc<Mailbox>) {
        self.connections.insert(mailbox.id(), mailbox);
    }

    /// A connection closed: its tracking ends, and clients redirecting to
    /// it find their redirect broken.
    pub fn disconnect(&self, id: u64) {
        self.disable(id);
        self.connections.remove(&id);
    }

    pub fn exists(&self, id: u64) -> bool {
        self.connections.contains_key(&id)
    }

    fn mailbox(&self, id: u64) -> Option<Arc<Mailbox>> {
        self.connections.get(&id).map(|m| m.clone())
    }

    /// Takes up `tracking-table-max-keys`, evicting keys at once if the
    /// table is now over it.
    pub fn set_max_keys(&self, max: u64) {
        self.max_keys.store(max, Ordering::Relaxed);
        self.enforce_limit();
    }

    /// Whether any client tracks: commands skip all bookkeeping otherwise.
    pub fn active(&self) -> bool {
        self.tracking_clients.load(Ordering::Relaxed) > 0
    }

    /// (tracking clients, keys, items, prefixes) for INFO.
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let (keys, items) = {
            let table = self.keys.lock();
            (table.keys.len(), table.items)
        };
        (
            self.tracking_clients.load(Ordering::Relaxed),
            keys,
            items,
            self.prefix_count.load(Ordering::Relaxed),
        )
    }

    /// Checks new broadcast prefixes against each other and against those
    /// the client has, as Redis does (existing ones in sorted order).
    pub fn check_prefixes(&self, id: u64, new: &[Bytes]) -> Result<(), PrefixError> {
        let trackers = self.trackers.read();
        let existing = trackers.get(&id).map(|t| &t.prefixes);
        for (i, prefix) in new.iter().enumerate() {
            if let Some(old) = existing
                .into_iter()
                .flatten()
                .find(|old| overlap(old, prefix))
            {
                return Err(PrefixError::Existing {
                    new: prefix.clone(),
                    old: old.clone(),
                });
            }
            if let Some(second) = new[i + 1..].iter().find(|p| overlap(prefix, p)) {
                return Err(PrefixError::Provided {
                    first: prefix.clone(),
                    second: second.clone(),
                });
            }
        }
        Ok(())
    }

    /// CLIENT TRACKING ON: the mode and redirect replace the old ones;
    /// broadcast prefixes add to those the client has (none means every key).
    pub fn enable(&self, id: u64, mode: Mode, redirect: u64, prefixes: &[Bytes]) {
        // Locks in the order `broadcast` takes them: prefixes, then trackers.
        let mut table = mode.bcast.then(|| self.prefixes.write());
        let mut trackers = self.trackers.write();
        let tracker = trackers.entry(id).or_insert_with(|| {
            self.tracking_clients.fetch_add(1, Ordering::Relaxed);
            Tracker {
                mode: Mode::default(),
                redirect: 0,
                prefixes: BTreeSet::new(),
                caching: false,
                broken: AtomicBool::new(false),
            }
        });
        tracker.broken.store(false, Ordering::Relaxed);
        tracker.redirect = redirect;
        if let Some(table) = &mut table {
            let empty = [Bytes::new()];
            let added = if prefixes.is_empty() {
                &empty[..]
            } else {
                prefixes
            };
            for prefix in added {
                tracker.prefixes.insert(prefix.clone());
                table.entry(prefix.clone()).or_default().insert(id);
            }
            self.prefix_count.store(table.len(), Ordering::Relaxed);
        }
        tracker.mode = mode;
    }

    /// CLIENT TRACKING OFF. The keys it read stay in the table until they
    /// change, as in Redis.
    pub fn disable(&self, id: u64) {
        let Some(tracker) = self.trackers.write().remove(&id) else {
            return;
        };
        self.tracking_clients.fetch_sub(1, Ordering::Relaxed);
        if tracker.prefixes.is_empty() {
            return;
        }
        let mut table = self.prefixes.write();
        for prefix in &tracker.prefixes {
            if let Some(clients) = table.get_mut(prefix) {
                clients.swap_remove(&id);
                if clients.is_empty() {
                    table.remove(prefix);
                }
            }
        }
        self.prefix_count.store(table.len(), Ordering::Relaxed);
    }

    /// How client `id` tracks, if it does.
    pub fn info(&self, id: u64) -> Option<TrackingInfo> {
        let trackers = self.trackers.read();
        let t = trackers.get(&id)?;
        Some(TrackingInfo {
            mode: t.mode.clone(),
            redirect: t.redirect,
            caching: t.caching,
            broken: t.broken.load(Ordering::Relaxed),
            prefixes: t.prefixes.iter().cloned().collect(),
        })
    }

    /// CLIENT CACHING YES|NO: the next command (or transaction) opts in or out.
    pub fn set_caching(&self, id: u64) {
        if let Some(t) = self.trackers.write().get_mut(&id) {
            t.caching = true;
        }
    }

    /// A command ended: CLIENT CACHING applied to it only.
    pub fn command_done(&self, id: u64) {
        if !self.active() {
            return;
        }
        let cached = self.trackers.read().get(&id).is_some_and(|t| t.caching);
        if cached && let Some(t) = self.trackers.write().get_mut(&id) {
            t.caching = false;
        }
    }

    /// Remembers that client `id` read `keys` (default mode, subject to
    /// OPTIN/OPTOUT and CLIENT CACHING).
    pub fn remember<'k>(&self, id: u64, keys: impl Iterator<Item = &'k [u8]>) {
        {
            let trackers = self.trackers.read();
            let Some(t) = trackers.get(&id) else {
                return;
            };
            let mode = &t.mode;
            if mode.bcast || (mode.optin && !t.caching) || (mode.optout && t.caching) {
                return;
            }
        }
        {
            let mut table = self.keys.lock();
            for key in keys {
                let ids = table.keys.entry(Bytes::copy_from_slice(key)).or_default();
                if ids.insert(id) {
                    table.items += 1;
                }
            }
            self.key_count.store(table.keys.len(), Ordering::Relaxed);
        }
        self.enforce_limit();
    }

    /// Evicts keys until the table is within `tracking-table-max-keys`,
    /// telling their readers as if the keys had changed.
    fn enforce_limit(&self) {
        let max = self.max_keys.load(Ordering::Relaxed);
        while max > 0 && self.key_count.load(Ordering::Relaxed) as u64 > max {
            let Some((key, ids)) = self.take_key(None) else {
                break;
            };
            // No client changed the key: NOLOOP does not hold it back.
            self.tell_readers(&key, ids, None);
        }
    }

    /// Removes `key` (or, for `None`, the oldest key) from the table.
    fn take_key(&self, key: Option<&[u8]>) -> Option<(Bytes, IndexSet<u64, Hasher>)> {
        let mut table = self.keys.lock();
        let taken = match key {
            Some(key) => table.keys.swap_remove_entry(key),
            None => table.keys.swap_remove_index(0),
        };
        if let Some((_, ids)) = &taken {
            table.items -= ids.len();
            self.key_count.store(table.keys.len(), Ordering::Relaxed);
        }
        taken
    }

    /// A key changed: its default-mode readers hear of it now, broadcast
    /// clients when the command ends. `by_client`: a client's command
    /// changed it, not expiry (NOLOOP filters only the former in
    /// broadcast mode).
    pub fn changed(&self, key: &[u8], by_client: bool) {
        if self.prefix_count.load(Ordering::Relaxed) > 0 {
            let modifier = by_client.then(current_client).flatten();
            let key = Bytes::copy_from_slice(key);
            let queued = with_scope(|s| s.changed.insert(key.clone(), modifier)).is_some();
            if !queued {
                self.broadcast(&BTreeMap::from([(key, modifier)]));
            }
        }
        if self.key_count.load(Ordering::Relaxed) == 0 {
            return;
        }
        if let Some((key, ids)) = self.take_key(Some(key)) {
            self.tell_readers(&key, ids, current_client());
        }
    }

    /// Tells the default-mode readers `ids` that `key` changed, but not
    /// `changer` if it asked not to hear of its own changes (NOLOOP).
    fn tell_readers(&self, key: &[u8], ids: IndexSet<u64, Hasher>, changer: Option<u64>) {
        let trackers = self.trackers.read();
        for id in ids {
            let Some(t) = trackers.get(&id) else {
                continue;
            };
            if t.mode.bcast || (t.mode.noloop && changer == Some(id)) {
                continue;
            }
            self.send(id, t, &Payload::Keys(&[key]));
        }
    }

    /// Sends each broadcast client the changed keys under its prefixes,
    /// one message per prefix.
    fn broadcast(&self, changed: &BTreeMap<Bytes, Option<u64>>) {
        let prefixes = self.prefixes.read();
        let trackers = self.trackers.read();
        for (prefix, clients) in prefixes.iter() {
            let matching: Vec<(&Bytes, Option<u64>)> = changed
                .iter()
                .filter(|(key, _)| key.starts_with(prefix))
                .map(|(key, by)| (key, *by))
                .collect();
            if matching.is_empty() {
                continue;
            }
            for &id in clients {
                let Some(t) = trackers.get(&id) else {
                    continue;
                };
                let keys: Vec<&[u8]> = matching
                    .iter()
                    .filter(|(_, by)| !(t.mode.noloop && *by == Some(id)))
                    .map(|(key, _)| &key[..])
                    .collect();
                if !keys.is_empty() {
                    self.send(id, t, &Payload::Keys(&keys));
                }
            }
        }
    }

    /// FLUSHDB / FLUSHALL: every tracking client hears that everything
    /// changed, and the table is emptied.
    pub fn flushed(&self) {
        if !self.active() && self.key_count.load(Ordering::Relaxed) == 0 {
            return;
        }
        {
            let trackers = self.trackers.read();
            for (&id, t) in trackers.iter() {
                self.send(id, t, &Payload::Flushed);
            }
        }
        let mut table = self.keys.lock();
        *table = KeyTable::default();
        self.key_count.store(0, Ordering::Relaxed);
    }

    /// Sends one invalidation for tracking client `id`, where its mode says.
    fn send(&self, id: u64, tracker: &Tracker, payload: &Payload) {
        let Some(own) = self.mailbox(id) else {
            return;
        };
        let (own_resp3, _) = protocol_of(&own);
        let mut frame = BytesMut::new();
        if tracker.redirect == 0 {
            if own_resp3 {
                header(&mut frame, b'*', 2);
                bulk(&mut frame, b"invalidate");
                payload.encode(&mut frame, own_resp3);
                deliver(&own, frame.freeze());
            }
            return;
        }
        let Some(target) = self.mailbox(tracker.redirect) else {
            tracker.broken.store(true, Ordering::Relaxed);
            if own_resp3 {
                header(&mut frame, b'*', 2);
                bulk(&mut frame, b"tracking-redir-broken");
                header(&mut frame, b':', tracker.redirect as usize);
                deliver(&own, frame.freeze());
            }
            return;
        };
        match protocol_of(&target) {
            (true, _) => {
                header(&mut frame, b'*', 2);
                bulk(&mut frame, b"invalidate");
            }
            (false, true) => {
                header(&mut frame, b'*', 3);
                bulk(&mut frame, b"message");
                bulk(&mut frame, CHANNEL);
            }
            // A RESP2 client that subscribes to nothing cannot be told.
            (false, false) => return,
        }
        payload.encode(&mut frame, own_resp3);
        deliver(&target, frame.freeze());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client_handle::ClientHandle;

    fn client(tracking: &Tracking, id: u64, resp3: bool) -> super::super::MailboxReceiver {
        let addr: std::net::SocketAddr = "127.0.0.1:1".parse().unwrap();
        let handle = Arc::new(ClientHandle::new(id, addr, addr, 0));
        handle.info.lock().protocol = if resp3 { 3 } else { 2 };
        let (mailbox, rx) = Mailbox::new(handle);
        tracking.connect(mailbox);
        rx
    }

    #[test]
    fn default_mode_tells_once_then_forgets() {
        let tracking = Tracking::default();
        let mut rx = client(&tracking, 1, true);
        tracking.enable(1, Mode::default(), 0, &[]);
        tracking.remember(1, [&b"k"[..]].into_iter());
        assert_eq!(tracking.counts(), (1, 1, 1, 0));
        tracking.changed(b"k", true);
        assert_eq!(
            &rx.try_recv().unwrap()[..],
            b"*2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n"
        );
        tracking.changed(b"k", true);
        assert!(rx.try_recv().is_err());
        assert_eq!(tracking.counts(), (1, 0, 0, 0));
    }

    #[test]
    fn own_changes_wait_for_the_reply_and_noloop_drops_them() {
        let tracking = Tracking::default();
        let mut rx = client(&tracking, 1, true);
        tracking.enable(1, Mode::default(), 0, &[]);
        tracking.remember(1, [&b"a"[..], &b"b"[..]].into_iter());
        let scope = Scope::enter(1);
        tracking.changed(b"a", true);
        assert_eq!(scope.finish(&tracking).len(), 1);
        assert!(rx.try_recv().is_err());
        let noloop = Mode {
            noloop: true,
            ..Mode::default()
        };
        tracking.enable(1, noloop, 0, &[]);
        let scope = Scope::enter(1);
        tracking.changed(b"b", true);
        assert!(scope.finish(&tracking).is_empty());
    }

    #[test]
    fn broadcast_batches_per_prefix_and_redirects_as_pubsub() {
        let tracking = Tracking::default();
        let _own = client(&tracking, 1, false);
        let mut target = client(&tracking, 2, false);
        let bcast = Mode {
            bcast: true,
            ..Mode::default()
        };
        let prefixes = [Bytes::from_static(b"a:"), Bytes::from_static(b"b:")];
        tracking.enable(1, bcast, 2, &prefixes);
        // Not subscribed: a RESP2 target hears nothing.
        tracking.changed(b"a:1", true);
        assert!(target.try_recv().is_err());
        tracking.connections.get(&2).unwrap().handle.info.lock().sub = 1;
        let scope = Scope::enter(3);
        for key in [&b"a:2"[..], b"a:1", b"c:1", b"b:1"] {
            tracking.changed(key, true);
        }
        scope.finish(&tracking);
        assert_eq!(
            &target.try_recv().unwrap()[..],
            &b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*2\r\n$3\r\na:1\r\n$3\r\na:2\r\n"[..]
        );
        assert!(target.try_recv().unwrap().ends_with(b"*1\r\n$3\r\nb:1\r\n"));
        assert!(target.try_recv().is_err());
    }

    #[test]
    fn a_gone_target_breaks_the_redirect() {
        let tracking = Tracking::default();
        let mut own = client(&tracking, 1, true);
        let _target = client(&tracking, 2, true);
        tracking.enable(1, Mode::default(), 2, &[]);
        tracking.remember(1, [&b"k"[..]].into_iter());
        tracking.disconnect(2);
        tracking.changed(b"k", true);
        assert_eq!(
            &own.try_recv().unwrap()[..],
            b"*2\r\n$21\r\ntracking-redir-broken\r\n:2\r\n"
        );
        assert!(tracking.info(1).unwrap().broken);
    }

    #[test]
    fn prefixes_must_not_overlap() {
        let tracking = Tracking::default();
        let p = |s: &'static [u8]| Bytes::from_static(s);
        assert!(matches!(
            tracking.check_prefixes(1, &[p(b"FOOBAR"), p(b"FOO")]),
            Err(PrefixError::Provided { .. })
        ));
        let bcast = Mode {
            bcast: true,
            ..Mode::default()
        };
        tracking.enable(1, bcast, 0, &[p(b"FOO"), p(b"BAR")]);
        assert!(matches!(
            tracking.check_prefixes(1, &[p(b"BARB")]),
            Err(PrefixError::Existing { .. })
        ));
        assert!(tracking.check_prefixes(1, &[p(b"X")]).is_ok());
    }

    #[test]
    fn the_limit_evicts_with_an_invalidation() {
        let tracking = Tracking::default();
        let mut rx = client(&tracking, 1, true);
        tracking.enable(1, Mode::default(), 0, &[]);
        tracking.remember(1, [&b"a"[..], &b"b"[..], &b"c"[..]].into_iter());
        tracking.set_max_keys(1);
        assert!(rx.try_recv().is_ok());
        assert!(rx.try_recv().is_ok());
        assert!(rx.try_recv().is_err());
        assert_eq!(tracking.counts().1, 1);
    }
}
