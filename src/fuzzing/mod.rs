//! Entry points for the fuzz targets in `fuzz/` and for
//! `tests/fuzz_corpus.rs`, which replays their corpus: both go through
//! these functions, so a corpus file tests exactly what the fuzzer ran.
//!
//! The harness runs requests through the real dispatch path
//! (`command::dispatch`) on an in-process server state, without
//! sockets, so one input costs microseconds rather than a round trip.

mod payload;
mod rdbfile;
mod script;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::{Bytes, BytesMut};

use crate::client_handle::ClientHandle;
use crate::clock::SystemClock;
use crate::command::pubsub::forget_subscriptions;
use crate::command::{dispatch, forget_transaction};
use crate::config::Config;
use crate::connection::forget_waiter;
use crate::context::Client;
use crate::context::Shared;
use crate::protocol::{ProtocolError, Reply, RequestParser};
use crate::pubsub::{Mailbox, MailboxReceiver};
use crate::scripting::Runner;

pub use payload::restore;
pub use script::generate as generate_script;

/// Everything the request parser makes of `data`: the requests, then the
/// error that ended the stream, if one did.
pub type Parsed = (Vec<Vec<Bytes>>, Option<ProtocolError>);

/// Parses `data` as a client's byte stream, both as one read and split into
/// reads of `chunk` bytes, and as an authenticated and an unauthenticated
/// client. Panics if splitting the reads changes what is parsed: framing
/// must not depend on how TCP delivered the bytes.
pub fn parse(data: &[u8], chunk: usize) -> Parsed {
    let whole = parse_in_reads(data, data.len().max(1), true);
    let split = parse_in_reads(data, chunk.max(1), true);
    assert_eq!(
        whole, split,
        "parse of {data:?} depends on reads of {chunk}"
    );
    let _ = parse_in_reads(data, chunk.max(1), false);
    whole
}

fn parse_in_reads(data: &[u8], chunk: usize, authenticated: bool) -> Parsed {
    let mut parser = RequestParser::default();
    let mut buf = BytesMut::new();
    let mut requests = Vec::new();
    for read in data.chunks(chunk) {
        buf.extend_from_slice(read);
        loop {
            match parser.next_request(&mut buf, authenticated) {
                Ok(Some(args)) => requests.push(args),
                Ok(None) => break,
                Err(e) => return (requests, Some(e)),
            }
        }
    }
    (requests, None)
}

/// A script running this long is past the busy threshold, where SCRIPT
/// KILL can stop it; the watchdog then does.
const BUSY_MS: u64 = 100;
const WATCHDOG_EVERY: Duration = Duration::from_millis(20);

/// One server state and one connected client, run a request at a time.
pub struct Harness {
    shared: Arc<Shared>,
    base: Config,
    client: Client,
    mail: MailboxReceiver,
}

impl Default for Harness {
    fn default() -> Self {
        Self::new()
    }
}

impl Harness {
    pub fn new() -> Self {
        let base = Config {
            busy_reply_threshold: BUSY_MS,
            // Every keyspace event is raised, so their code runs too.
            notify_keyspace_events: "KEA".into(),
            // Enough for any script the fuzzer writes; less than the
            // default so that a memory bomb fails fast.
            lua_heap_limit: 32 * 1024 * 1024,
            ..Config::default()
        };
        let shared = Arc::new(Shared::new(
            base.clone(),
            Arc::new(SystemClock),
            None,
            crate::command::REGISTRY.specs.len(),
            Default::default(),
        ));
        spawn_watchdog(Arc::downgrade(&shared));
        let (client, mail) = connect(&shared);
        Harness {
            shared,
            base,
            client,
            mail,
        }
    }

    /// Starts the next input from an empty server and a new connection, so
    /// that what one input does cannot change how the next one runs.
    pub fn reset(&mut self) {
        self.disconnect();
        self.shared.unpause();
        self.shared.shutdown.send_replace(false);
        self.shared.pubsub.configure(&self.base);
        self.shared.keyspace.set_limits(self.base.encoding());
        *self.shared.config.write() = self.base.clone();
        (self.client, self.mail) = connect(&self.shared);
        self.run(&[Bytes::from_static(b"FLUSHALL")]);
    }

    /// Runs one command line as the connection would, and returns its
    /// reply; `None` once the connection would have closed.
    pub fn run(&mut self, args: &[Bytes]) -> Option<Reply> {
        let client = &mut self.client;
        if client.close_after_reply || client.close_silently || client.handle.is_killed() {
            return None;
        }
        let mut reply = dispatch(&self.shared, client, args);
        if let Some(blocked) = client.blocked.take() {
            // Nothing else runs while the harness waits, so a blocked
            // command would wait for ever: it times out at once instead,
            // which is what BLPOP & co. answer after their timeout. No
            // other client exists to serve the waiter meanwhile.
            blocked.waiter.cancel();
            forget_waiter(&self.shared, &blocked);
            reply = blocked.timeout_reply;
        }
        client.pubsub.commit(&self.shared.pubsub);
        // The reply is written out as it would be, then dropped with
        // whatever pub/sub messages arrived.
        let mut out = BytesMut::new();
        reply.encode(client.protocol, &mut out);
        while self.mail.try_recv().is_ok() {}
        client
            .handle
            .backlog
            .store(0, std::sync::atomic::Ordering::Relaxed);
        Some(reply)
    }

    /// Parses `data` as a connection's input and runs every request in it,
    /// until a protocol error or a command that closes the connection.
    pub fn run_stream(&mut self, data: &[u8]) -> Vec<Reply> {
        let mut parser = RequestParser::default();
        let mut buf = BytesMut::from(data);
        let mut replies = Vec::new();
        while let Ok(Some(args)) = parser.next_request(&mut buf, self.client.authenticated) {
            match self.run(&args) {
                Some(reply) => replies.push(reply),
                None => break,
            }
        }
        replies
    }

    /// EVAL of `script` with two keys and two arguments.
    pub fn eval(&mut self, script: &str) -> Option<Reply> {
        let args = ["EVAL", script, "2", "{k}1", "{k}2", "a1", "2"];
        self.run(&args.map(|a| Bytes::copy_from_slice(a.as_bytes())))
    }
}

impl Harness {
    /// What the connection does when its client goes away.
    fn disconnect(&mut self) {
        forget_transaction(&self.shared, &mut self.client);
        forget_subscriptions(&self.shared, &mut self.client);
        self.shared.clients.remove(&self.client.id);
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.disconnect();
    }
}

fn connect(shared: &Shared) -> (Client, MailboxReceiver) {
    let id = shared.next_client_id();
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 1));
    let handle = Arc::new(ClientHandle::new(id, addr, addr, shared.now_ms()));
    shared.clients.insert(id, handle.clone());
    let mut client = Client::new(handle.clone(), shared.acl.default_user());
    let (mailbox, mail) = Mailbox::new(handle);
    client.pubsub.attach(mailbox);
    (client, mail)
}

/// Plays the operator who sends SCRIPT KILL: a generated script may loop
/// for a long time, and the fuzzer must move on. It ends with the harness.
fn spawn_watchdog(shared: Weak<Shared>) {
    std::thread::spawn(move || {
        while let Some(shared) = shared.upgrade() {
            // Writes included: they are rolled back.
            let _ = shared.scripts.kill(true, Runner::Script);
            drop(shared);
            std::thread::sleep(WATCHDOG_EVERY);
        }
    });
}
