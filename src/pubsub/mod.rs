//! Publish/subscribe: who listens to which channel, pattern and shard
//! channel, and how a message reaches them.
//!
//! Every connection owns a mailbox: an unbounded queue of encoded frames
//! that its task drains into the socket alongside its replies. A publisher
//! looks up the channel's subscribers (a `DashMap`, so publishers of
//! different channels share no lock), encodes the message once, and puts
//! a reference to that one buffer in each mailbox: it never waits for a
//! subscriber. The bytes queued for a client and not yet written are
//! counted; a client that falls too far behind (`client-output-buffer-limit
//! pubsub`) is disconnected alone and its queue freed.
//!
//! Frames are queued in their RESP2 form (`*3\r\n$7\r\nmessage…`); for a
//! RESP3 client the connection writes `>` in place of the leading `*`.

pub(crate) mod monitor;
pub(crate) mod tracking;

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};
use dashmap::DashMap;
use indexmap::{IndexMap, IndexSet};
use parking_lot::RwLock;
use tokio::sync::mpsc;

use crate::client_handle::ClientHandle;
pub(crate) use crate::keyspace::Event;
use crate::keyspace::EventSink;
use crate::keyspace::events as notify;
use crate::util::glob_match;
pub(crate) use monitor::{Monitors, Origin};

pub(crate) type Hasher = foldhash::fast::RandomState;
/// A channel's subscribers by client id.
type Subscribers = IndexMap<u64, Arc<Mailbox>, Hasher>;
pub(crate) type MailboxReceiver = mpsc::UnboundedReceiver<Bytes>;

/// The three kinds of subscription; each has its own namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Channel,
    Pattern,
    Shard,
}

impl Kind {
    /// How introspection names the kind.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Channel => "channel",
            Kind::Pattern => "pattern",
            Kind::Shard => "shardchannel",
        }
    }

    /// The confirmation's first element for a subscription and a removal.
    pub fn verbs(self) -> (&'static str, &'static str) {
        match self {
            Kind::Channel => ("subscribe", "unsubscribe"),
            Kind::Pattern => ("psubscribe", "punsubscribe"),
            Kind::Shard => ("ssubscribe", "sunsubscribe"),
        }
    }
}

/// Where a client's messages wait until its connection writes them.
pub(crate) struct Mailbox {
    tx: mpsc::UnboundedSender<Bytes>,
    handle: Arc<ClientHandle>,
}

impl Mailbox {
    pub fn new(handle: Arc<ClientHandle>) -> (Arc<Mailbox>, MailboxReceiver) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Arc::new(Mailbox { tx, handle }), rx)
    }

    pub fn id(&self) -> u64 {
        self.handle.id
    }

    /// Queues a frame of the client's own (a subscription confirmation):
    /// counted like a message, never refused.
    pub fn push(&self, frame: Bytes) {
        self.handle
            .backlog
            .fetch_add(frame.len(), Ordering::Relaxed);
        let _ = self.tx.send(frame);
    }

    /// Queues a published frame, unless the client is closing or this
    /// frame takes it over its output limits, which closes it.
    fn deliver(&self, frame: &Bytes, limits: &Limits) {
        let handle = &*self.handle;
        if handle.is_killed() {
            return;
        }
        let backlog = handle.backlog.fetch_add(frame.len(), Ordering::Relaxed) + frame.len();
        if limits.exceeded(backlog as u64, &handle.over_soft_since) {
            tracing::warn!(
                "closing client id={} addr={}: {backlog} bytes of pub/sub messages queued \
                 (client-output-buffer-limit pubsub)",
                handle.id,
                handle.addr
            );
            handle.kill();
            return;
        }
        let _ = self.tx.send(frame.clone());
    }
}

/// `client-output-buffer-limit pubsub <hard> <soft> <soft-seconds>`, in
/// atomics so that publishers read them without a lock.
#[derive(Default)]
struct Limits {
    hard: AtomicU64,
    soft: AtomicU64,
    soft_ms: AtomicU64,
}

/// Milliseconds on a monotonic clock, for the soft limit's grace period.
fn monotonic_ms() -> u64 {
    static START: LazyLock<Instant> = LazyLock::new(Instant::now);
    START.elapsed().as_millis() as u64
}

impl Limits {
    /// Redis's rule: at or over the hard limit closes at once; at or over
    /// the soft limit closes once that has lasted longer than the grace
    /// period. `since` holds when the soft limit was first reached (+1).
    fn exceeded(&self, used: u64, since: &AtomicU64) -> bool {
        let hard = self.hard.load(Ordering::Relaxed);
        if hard > 0 && used >= hard {
            return true;
        }
        let soft = self.soft.load(Ordering::Relaxed);
        if soft > 0 && used >= soft {
            let now = monotonic_ms() + 1;
            return match since.compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => false,
                Err(start) => now.saturating_sub(start) > self.soft_ms.load(Ordering::Relaxed),
            };
        }
        if since.load(Ordering::Relaxed) != 0 {
            since.store(0, Ordering::Relaxed);
        }
        false
    }
}

/// Parses the pubsub class of a `client-output-buffer-limit` value:
/// (hard bytes, soft bytes, soft seconds).
pub(crate) fn pubsub_limits(value: &str) -> Option<(u64, u64, u64)> {
    let words: Vec<&str> = value.split_whitespace().collect();
    let class = words.chunks(4).find(|c| c.len() == 4 && c[0] == "pubsub")?;
    Some((
        class[1].parse().ok()?,
        class[2].parse().ok()?,
        class[3].parse().ok()?,
    ))
}

thread_local! {
    /// What this thread publishes (and the MONITOR lines of the commands
    /// it runs) while a script runs: a script that is rolled back (killed,
    /// or started over) must not have told anyone anything, so all of it
    /// waits for the script to commit.
    static HELD: RefCell<Option<Vec<Held>>> = const { RefCell::new(None) };
}

enum Held {
    Message {
        sharded: bool,
        channel: Bytes,
        message: Bytes,
    },
    MonitorLine(Bytes),
}

/// Holds back what this thread publishes until `release` (delivered in
/// order) or `discard`. Holds do not nest: a script never runs inside
/// another.
pub(crate) struct HeldMessages(());

impl HeldMessages {
    pub fn hold() -> HeldMessages {
        HELD.set(Some(Vec::new()));
        HeldMessages(())
    }

    /// Forgets what was held so far and goes on holding.
    pub fn discard(&self) {
        HELD.with_borrow_mut(|held| held.as_mut().map(Vec::clear));
    }

    /// Stops holding and delivers what was held.
    pub fn release(self, pubsub: &PubSub) {
        for held in HELD.take().unwrap_or_default() {
            match held {
                Held::Message {
                    sharded: true,
                    channel,
                    message,
                } => _ = pubsub.spublish(&channel, &message),
                Held::Message {
                    channel, message, ..
                } => _ = pubsub.publish(&channel, &message),
                Held::MonitorLine(line) => pubsub.monitors.deliver(&line),
            }
        }
    }
}

impl Drop for HeldMessages {
    fn drop(&mut self) {
        HELD.set(None);
    }
}

/// Keeps `item` for later if this thread holds its messages.
fn hold(item: impl FnOnce() -> Held) -> bool {
    HELD.with_borrow_mut(|held| match held {
        Some(held) => {
            held.push(item());
            true
        }
        None => false,
    })
}

fn held(sharded: bool, channel: &[u8], message: &[u8]) -> bool {
    hold(|| Held::Message {
        sharded,
        channel: Bytes::copy_from_slice(channel),
        message: Bytes::copy_from_slice(message),
    })
}

fn hold_monitor_line(line: &Bytes) -> bool {
    hold(|| Held::MonitorLine(line.clone()))
}

/// Every subscription of every client.
pub(crate) struct PubSub {
    channels: DashMap<Bytes, Subscribers, Hasher>,
    shard_channels: DashMap<Bytes, Subscribers, Hasher>,
    /// Read by every publish, written only by (P)UNSUBSCRIBE.
    patterns: RwLock<IndexMap<Bytes, Subscribers, Hasher>>,
    /// How many distinct patterns, so that publishing skips the lock when none.
    pattern_count: AtomicUsize,
    /// The enabled `notify-keyspace-events` classes.
    events: AtomicU32,
    limits: Limits,
    pub monitors: Monitors,
    /// Client-side caching: who cached which keys.
    pub tracking: tracking::Tracking,
}

impl Default for PubSub {
    fn default() -> Self {
        Self::new()
    }
}

impl PubSub {
    pub fn new() -> Self {
        PubSub {
            channels: DashMap::default(),
            shard_channels: DashMap::default(),
            patterns: RwLock::new(IndexMap::default()),
            pattern_count: AtomicUsize::new(0),
            events: AtomicU32::new(0),
            limits: Limits::default(),
            monitors: Monitors::default(),
            tracking: tracking::Tracking::default(),
        }
    }

    /// Takes up the settings publishers read: the keyspace events and the
    /// pubsub output limits.
    pub fn configure(&self, config: &crate::config::Config) {
        let events = notify::parse_flags(&config.notify_keyspace_events).unwrap_or(0);
        self.events.store(events, Ordering::Relaxed);
        let (hard, soft, secs) =
            pubsub_limits(&config.client_output_buffer_limit).unwrap_or((0, 0, 0));
        self.limits.hard.store(hard, Ordering::Relaxed);
        self.limits.soft.store(soft, Ordering::Relaxed);
        self.limits
            .soft_ms
            .store(secs.saturating_mul(1000), Ordering::Relaxed);
        self.tracking.set_max_keys(config.tracking_table_max_keys);
    }

    fn map(&self, kind: Kind) -> &DashMap<Bytes, Subscribers, Hasher> {
        match kind {
            Kind::Shard => &self.shard_channels,
            _ => &self.channels,
        }
    }

    /// Registers `mailbox` on a channel, pattern or shard channel.
    fn add(&self, kind: Kind, name: &Bytes, mailbox: &Arc<Mailbox>) {
        if kind == Kind::Pattern {
            let mut patterns = self.patterns.write();
            patterns
                .entry(name.clone())
                .or_default()
                .insert(mailbox.id(), mailbox.clone());
            self.pattern_count.store(patterns.len(), Ordering::Relaxed);
        } else {
            self.map(kind)
                .entry(name.clone())
                .or_default()
                .insert(mailbox.id(), mailbox.clone());
        }
    }

    fn remove(&self, kind: Kind, name: &[u8], id: u64) {
        if kind == Kind::Pattern {
            let mut patterns = self.patterns.write();
            if let Some(subs) = patterns.get_mut(name) {
                subs.swap_remove(&id);
                if subs.is_empty() {
                    patterns.shift_remove(name);
                }
            }
            self.pattern_count.store(patterns.len(), Ordering::Relaxed);
        } else {
            self.map(kind).remove_if_mut(name, |_, subs| {
                subs.swap_remove(&id);
                subs.is_empty()
            });
        }
    }

    /// PUBLISH: delivers to the channel's subscribers, then to every
    /// matching pattern's; returns how many deliveries were made.
    /// Held back while a script runs: the count is of the receivers now.
    pub fn publish(&self, channel: &[u8], message: &[u8]) -> usize {
        if held(false, channel, message) {
            return self.receivers(channel);
        }
        let mut receivers = 0;
        if let Some(subs) = self.channels.get(channel) {
            let frame = encode(&[b"message", channel, message]);
            for mailbox in subs.values() {
                mailbox.deliver(&frame, &self.limits);
            }
            receivers += subs.len();
        }
        if self.pattern_count.load(Ordering::Relaxed) > 0 {
            for (pattern, subs) in self.patterns.read().iter() {
                if glob_match(pattern, channel, false) {
                    let frame = encode(&[b"pmessage", pattern, channel, message]);
                    for mailbox in subs.values() {
                        mailbox.deliver(&frame, &self.limits);
                    }
                    receivers += subs.len();
                }
            }
        }
        receivers
    }

    /// SPUBLISH: shard channels only; patterns never see these.
    pub fn spublish(&self, channel: &[u8], message: &[u8]) -> usize {
        if held(true, channel, message) {
            return self.numsub(Kind::Shard, channel);
        }
        let Some(subs) = self.shard_channels.get(channel) else {
            return 0;
        };
        let frame = encode(&[b"smessage", channel, message]);
        for mailbox in subs.values() {
            mailbox.deliver(&frame, &self.limits);
        }
        subs.len()
    }

    /// How many deliveries a PUBLISH on `channel` would make.
    fn receivers(&self, channel: &[u8]) -> usize {
        let direct = self.numsub(Kind::Channel, channel);
        if self.pattern_count.load(Ordering::Relaxed) == 0 {
            return direct;
        }
        let patterns = self.patterns.read();
        direct
            + patterns
                .iter()
                .filter(|(pattern, _)| glob_match(pattern, channel, false))
                .map(|(_, subs)| subs.len())
                .sum::<usize>()
    }

    /// Active channels (or shard channels) matching `pattern`.
    pub fn channels(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Bytes> {
        self.map(kind)
            .iter()
            .filter(|e| pattern.is_none_or(|p| glob_match(p, e.key(), false)))
            .map(|e| e.key().clone())
            .collect()
    }

    /// Every subscription target of every kind with its subscribers' ids.
    pub fn subscribers(&self) -> Vec<(Kind, Bytes, Vec<u64>)> {
        let ids = |subs: &Subscribers| subs.keys().copied().collect::<Vec<_>>();
        let mut out: Vec<_> = [Kind::Channel, Kind::Shard]
            .into_iter()
            .flat_map(|kind| {
                self.map(kind)
                    .iter()
                    .map(move |e| (kind, e.key().clone(), ids(e.value())))
                    .collect::<Vec<_>>()
            })
            .collect();
        out.extend(
            self.patterns
                .read()
                .iter()
                .map(|(name, subs)| (Kind::Pattern, name.clone(), ids(subs))),
        );
        out
    }

    /// Subscribers of one channel (or shard channel), patterns not counted.
    pub fn numsub(&self, kind: Kind, channel: &[u8]) -> usize {
        self.map(kind).get(channel).map_or(0, |s| s.len())
    }

    /// Distinct patterns subscribed to, by anyone.
    pub fn numpat(&self) -> usize {
        self.patterns.read().len()
    }

    /// Channels (or shard channels) with at least one subscriber.
    pub fn channel_count(&self, kind: Kind) -> usize {
        self.map(kind).len()
    }
}

impl EventSink for PubSub {
    fn changed(&self, key: &[u8], by_client: bool) {
        self.tracking.changed(key, by_client);
    }

    fn flushed(&self) {
        self.tracking.flushed();
    }

    /// Raises a keyspace event: one atomic load when notifications are off.
    fn notify(&self, event: Event, db: usize, key: &[u8]) {
        let flags = self.events.load(Ordering::Relaxed);
        if flags & event.class() == 0 {
            return;
        }
        let name = event.name().as_bytes();
        let mut db_text = itoa::Buffer::new();
        let db_text = db_text.format(db).as_bytes();
        let channel = |family: &[u8], tail: &[u8]| {
            let mut c = Vec::with_capacity(family.len() + db_text.len() + tail.len() + 5);
            c.extend_from_slice(b"__");
            c.extend_from_slice(family);
            c.push(b'@');
            c.extend_from_slice(db_text);
            c.extend_from_slice(b"__:");
            c.extend_from_slice(tail);
            c
        };
        if flags & notify::class::KEYSPACE != 0 {
            self.publish(&channel(b"keyspace", key), name);
        }
        if flags & notify::class::KEYEVENT != 0 {
            self.publish(&channel(b"keyevent", name), key);
        }
    }
}

/// A RESP2 array of bulk strings.
pub(crate) fn encode(parts: &[&[u8]]) -> Bytes {
    let size: usize = parts.iter().map(|p| p.len() + 16).sum::<usize>() + 8;
    let mut out = BytesMut::with_capacity(size);
    header(&mut out, b'*', parts.len());
    for part in parts {
        header(&mut out, b'$', part.len());
        out.put_slice(part);
        out.put_slice(b"\r\n");
    }
    out.freeze()
}

fn header(out: &mut BytesMut, tag: u8, n: usize) {
    out.put_u8(tag);
    out.put_slice(itoa::Buffer::new().format(n).as_bytes());
    out.put_slice(b"\r\n");
}

/// A subscription confirmation: `[verb, name, count]`.
pub(crate) fn confirmation(verb: &str, name: &[u8], count: usize) -> Bytes {
    let mut out = BytesMut::with_capacity(name.len() + 48);
    header(&mut out, b'*', 3);
    header(&mut out, b'$', verb.len());
    out.put_slice(verb.as_bytes());
    out.put_slice(b"\r\n");
    header(&mut out, b'$', name.len());
    out.put_slice(name);
    out.put_slice(b"\r\n");
    header(&mut out, b':', count);
    out.freeze()
}

/// Appends a queued frame to a connection's output in its protocol.
pub(crate) fn write_frame(out: &mut BytesMut, frame: &[u8], resp3: bool) {
    if resp3 && frame.first() == Some(&b'*') {
        out.put_u8(b'>');
        out.put_slice(&frame[1..]);
    } else {
        out.put_slice(frame);
    }
}

/// One client's subscriptions, in the order it made them.
///
/// A new subscription reaches the registry only at `commit`, which the
/// connection calls once the command's reply (the confirmation) is in its
/// output: no message can then be written ahead of its confirmation.
#[derive(Default)]
pub(crate) struct Subscriptions {
    mailbox: Option<Arc<Mailbox>>,
    channels: IndexSet<Bytes, Hasher>,
    patterns: IndexSet<Bytes, Hasher>,
    shard: IndexSet<Bytes, Hasher>,
    /// Subscribed to but not yet registered.
    pending: Vec<(Kind, Bytes)>,
    /// In MONITOR mode.
    monitoring: bool,
}

impl Subscriptions {
    /// Gives the client the mailbox its connection drains.
    pub fn attach(&mut self, mailbox: Arc<Mailbox>) {
        self.mailbox = Some(mailbox);
    }

    /// Subscribed to anything: RESP2 clients are then in subscribed mode.
    pub fn active(&self) -> bool {
        !(self.channels.is_empty() && self.patterns.is_empty() && self.shard.is_empty())
    }

    fn set(&self, kind: Kind) -> &IndexSet<Bytes, Hasher> {
        match kind {
            Kind::Channel => &self.channels,
            Kind::Pattern => &self.patterns,
            Kind::Shard => &self.shard,
        }
    }

    fn set_mut(&mut self, kind: Kind) -> &mut IndexSet<Bytes, Hasher> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shard,
        }
    }

    /// The count a confirmation reports: channels and patterns together,
    /// shard channels on their own.
    pub fn count(&self, kind: Kind) -> usize {
        match kind {
            Kind::Shard => self.shard.len(),
            _ => self.channels.len() + self.patterns.len(),
        }
    }

    /// (channels, patterns, shard channels), for CLIENT LIST.
    pub fn counts(&self) -> (usize, usize, usize) {
        (self.channels.len(), self.patterns.len(), self.shard.len())
    }

    /// The names of one kind, in subscription order.
    pub fn names(&self, kind: Kind) -> Vec<Bytes> {
        self.set(kind).iter().cloned().collect()
    }

    /// Subscribes (taking effect at `commit`); false if already subscribed.
    pub fn subscribe(&mut self, kind: Kind, name: &Bytes) -> bool {
        if !self.set_mut(kind).insert(name.clone()) {
            return false;
        }
        self.pending.push((kind, name.clone()));
        true
    }

    /// Registers the subscriptions made since the last commit.
    pub fn commit(&mut self, pubsub: &PubSub) {
        if self.pending.is_empty() {
            return;
        }
        let Some(mailbox) = &self.mailbox else {
            self.pending.clear();
            return;
        };
        for (kind, name) in self.pending.drain(..) {
            pubsub.add(kind, &name, mailbox);
        }
    }

    /// Unsubscribes at once; false if not subscribed.
    pub fn unsubscribe(&mut self, pubsub: &PubSub, kind: Kind, name: &[u8]) -> bool {
        if !self.set_mut(kind).shift_remove(name) {
            return false;
        }
        if let Some(at) = self
            .pending
            .iter()
            .position(|(k, n)| *k == kind && n == name)
        {
            self.pending.swap_remove(at);
        } else if let Some(mailbox) = &self.mailbox {
            pubsub.remove(kind, name, mailbox.id());
        }
        true
    }

    /// Queues a frame of the client's own, ahead of anything published to
    /// it later (confirmations beyond the one a command replies with).
    pub fn push(&self, frame: Bytes) {
        if let Some(mailbox) = &self.mailbox {
            mailbox.push(frame);
        }
    }

    pub fn monitoring(&self) -> bool {
        self.monitoring
    }

    /// Enters MONITOR mode: every command's line comes to the mailbox.
    pub fn monitor(&mut self, pubsub: &PubSub) {
        if let Some(mailbox) = &self.mailbox {
            pubsub.monitors.add(mailbox);
            self.monitoring = true;
        }
    }

    /// Drops every subscription without confirmations, and MONITOR mode
    /// (RESET, disconnect).
    pub fn clear(&mut self, pubsub: &PubSub) {
        if self.monitoring
            && let Some(mailbox) = &self.mailbox
        {
            pubsub.monitors.remove(mailbox.id());
            self.monitoring = false;
        }
        for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
            for name in self.names(kind) {
                self.unsubscribe(pubsub, kind, &name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames() {
        assert_eq!(
            &encode(&[b"message", b"ch", b"hi"])[..],
            b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"
        );
        assert_eq!(
            &confirmation("subscribe", b"a", 1)[..],
            b"*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n"
        );
        let mut out = BytesMut::new();
        write_frame(&mut out, b"*1\r\n$1\r\na\r\n", true);
        assert_eq!(&out[..], b">1\r\n$1\r\na\r\n");
    }

    fn subscriber(pubsub: &PubSub, pattern: &'static [u8]) -> MailboxReceiver {
        let addr: std::net::SocketAddr = "127.0.0.1:1".parse().unwrap();
        let handle = Arc::new(ClientHandle::new(7, addr, addr, 0));
        let (mailbox, rx) = Mailbox::new(handle);
        let mut subs = Subscriptions::default();
        subs.attach(mailbox);
        subs.subscribe(Kind::Pattern, &Bytes::from_static(pattern));
        subs.commit(pubsub);
        rx
    }

    /// A lookup that finds a key past its deadline reclaims it and raises
    /// `expired`, before any timer wheel has run.
    #[test]
    fn lazy_expiry_raises_expired() {
        use crate::clock::SystemClock;
        use crate::keyspace::{Keyspace, LockPlan, Ttl, Value};
        let pubsub = Arc::new(PubSub::new());
        let config = crate::config::Config {
            notify_keyspace_events: "KEA".into(),
            ..Default::default()
        };
        pubsub.configure(&config);
        let mut rx = subscriber(&pubsub, b"__keyevent@*");
        let ks = Keyspace::with_events(1, Arc::new(SystemClock), pubsub.clone());
        let mut locked = ks.lock(&LockPlan::for_keys([&b"k"[..]])).unwrap();
        let past = locked.now() - 1;
        let mut db = locked.db(0);
        db.insert(b"k", Value::string(Bytes::from_static(b"v")), Ttl::At(past))
            .unwrap();
        assert!(db.get(b"k").unwrap().is_none());
        let frame = rx.try_recv().unwrap();
        assert_eq!(
            &frame[..],
            b"*4\r\n$8\r\npmessage\r\n$12\r\n__keyevent@*\r\n$22\r\n__keyevent@0__:expired\r\n$1\r\nk\r\n"
        );
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn limits_parse() {
        let default = crate::config::Config::default().client_output_buffer_limit;
        assert_eq!(pubsub_limits(&default), Some((33554432, 8388608, 60)));
        assert_eq!(pubsub_limits("normal 0 0 0"), None);
    }

    #[test]
    fn soft_limit_needs_time() {
        let limits = Limits::default();
        limits.soft.store(10, Ordering::Relaxed);
        limits.soft_ms.store(60_000, Ordering::Relaxed);
        let since = AtomicU64::new(0);
        assert!(!limits.exceeded(5, &since));
        assert!(!limits.exceeded(10, &since));
        assert_ne!(since.load(Ordering::Relaxed), 0);
        assert!(!limits.exceeded(11, &since));
        assert!(!limits.exceeded(5, &since));
        assert_eq!(since.load(Ordering::Relaxed), 0);
        // A zero grace period closes on the second check over the limit.
        limits.soft_ms.store(0, Ordering::Relaxed);
        assert!(!limits.exceeded(10, &since));
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(limits.exceeded(10, &since));
        limits.hard.store(20, Ordering::Relaxed);
        assert!(limits.exceeded(20, &AtomicU64::new(0)));
    }
}
