//! A published message written straight to the subscriber's socket by the
//! publisher's thread, while the subscriber's connection waits for input
//! with nothing queued. Waking the subscriber's task to write it instead
//! costs a task switch per subscriber, and on a multi-core server it wakes
//! idle worker threads to share out those tasks: an unlock that wakes 15
//! waiters woke up to 8 threads.
//!
//! The connection and the publishers take turns through one state word:
//! the connection holds it whenever it is not waiting for input (it may be
//! writing replies or queued messages), and opens it only with its output
//! empty. A publisher that finds it open writes one frame and gives it
//! back; one that does not (or finds messages already queued, which must
//! go first) queues its frame as before.
//!
//! A command's messages are written once it has finished (`Outbox`), not
//! while it holds its keys' shards: other clients' commands on those keys
//! do not wait for the writes.

use std::cell::{Cell, RefCell};
use std::io::IoSlice;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Weak};

use bytes::Bytes;
use tokio::net::tcp::OwnedWriteHalf;

use super::{Mail, Mailbox, PubSub};
use crate::peer::ClientHandle;
use crate::util::stripe::Counter;

/// Publishers may write.
const OPEN: u8 = 0;
/// The connection runs: everything goes through its mailbox.
const CONNECTION: u8 = 1;
/// A publisher is writing a frame.
const PUBLISHER: u8 = 2;

/// Spins before a waiting connection yields its thread to the publisher.
const SPINS: u32 = 64;

pub struct Direct {
    state: AtomicU8,
    resp3: AtomicBool,
    /// Weak: the socket closes when the connection ends, whoever still
    /// holds this.
    socket: Weak<OwnedWriteHalf>,
    /// INFO's total_net_output_bytes.
    written: Arc<Counter>,
}

impl Direct {
    /// Held by the connection until it first opens it.
    pub fn new(socket: &Arc<OwnedWriteHalf>, written: Arc<Counter>) -> Direct {
        Direct {
            state: AtomicU8::new(CONNECTION),
            resp3: AtomicBool::new(false),
            socket: Arc::downgrade(socket),
            written,
        }
    }

    /// The connection waits for input, its output written and nothing
    /// left in its mailbox that it has taken out.
    pub fn open(&self, resp3: bool) {
        self.resp3.store(resp3, Ordering::Relaxed);
        self.state.store(OPEN, Ordering::Release);
    }

    /// The connection goes on: it waits out a publisher's write.
    pub fn close(&self) {
        let mut spins = 0;
        loop {
            match self.state.compare_exchange_weak(
                OPEN,
                CONNECTION,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) | Err(CONNECTION) => return,
                Err(_) if spins < SPINS => {
                    spins += 1;
                    std::hint::spin_loop();
                }
                // The publisher's thread may have been preempted mid-write.
                Err(_) => std::thread::yield_now(),
            }
        }
    }

    /// Writes `frame` if the connection is open to it and has nothing
    /// queued (the client's backlog). What is not written is handed to
    /// `queue` before the next publisher may write, so that frames never
    /// interleave. False if the frame was not taken at all.
    pub fn write(&self, frame: &Bytes, client: &ClientHandle, queue: impl FnOnce(Mail)) -> bool {
        if self
            .state
            .compare_exchange(OPEN, PUBLISHER, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        let taken = client.backlog.load(Ordering::Relaxed) == 0 && {
            // Nothing is queued: a soft limit's grace period is over, as
            // it would be were the frame queued and found under the limit.
            if client.over_soft_since.load(Ordering::Relaxed) != 0 {
                client.over_soft_since.store(0, Ordering::Relaxed);
            }
            match self.send(frame) {
                Some(n) if n == frame.len() => {}
                Some(0) | None => queue(Mail::frame(frame.clone())),
                // The written length is the frame's: RESP3's `>` stands in
                // for its `*`.
                Some(n) => queue(Mail::rest(frame.slice(n..))),
            }
            true
        };
        self.state.store(OPEN, Ordering::Release);
        taken
    }

    /// Bytes written without waiting, `None` on an error (the connection
    /// sees it on its own next read or write).
    fn send(&self, frame: &[u8]) -> Option<usize> {
        let socket = self.socket.upgrade()?;
        let written = match frame.split_first() {
            Some((b'*', rest)) if self.resp3.load(Ordering::Relaxed) => {
                socket.try_write_vectored(&[IoSlice::new(b">"), IoSlice::new(rest)])
            }
            _ => socket.try_write(frame),
        };
        match written {
            Ok(n) => {
                self.written.add(n as u64);
                Some(n)
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Some(0),
            Err(_) => None,
        }
    }
}

thread_local! {
    /// Deliveries are held: a command runs on this thread's connection.
    static HOLDING: Cell<bool> = const { Cell::new(false) };
    /// `HELD` has something: most commands publish nothing, and this
    /// spares them a look at it.
    static ANY_HELD: Cell<bool> = const { Cell::new(false) };
    static HELD: RefCell<Vec<(Arc<Mailbox>, Bytes)>> = const { RefCell::new(Vec::new()) };
}

/// Holds this thread's deliveries to sockets until the command that made
/// them is done.
pub struct Outbox<'p> {
    pubsub: &'p PubSub,
}

impl<'p> Outbox<'p> {
    pub fn open(pubsub: &'p PubSub) -> Outbox<'p> {
        HOLDING.set(true);
        Outbox { pubsub }
    }

    /// Delivers what was held: written to idle subscribers' sockets if
    /// `write` says so (it does not when no reply may go out before the
    /// disk has it, or a delay is injected), queued for their connections
    /// else.
    pub fn send(self, write: impl FnOnce() -> bool) {
        self.deliver(write);
    }

    fn deliver(&self, write: impl FnOnce() -> bool) {
        HOLDING.set(false);
        if !ANY_HELD.replace(false) {
            return;
        }
        let write = write();
        for (mailbox, frame) in HELD.take() {
            mailbox.deliver_now(&frame, &self.pubsub.limits, write);
        }
    }
}

impl Drop for Outbox<'_> {
    /// A command that did not finish: its deliveries are queued.
    fn drop(&mut self) {
        self.deliver(|| false);
    }
}

/// Keeps a delivery to `mailbox` for the end of the command, if one is
/// running on this thread.
pub(super) fn hold(mailbox: &Arc<Mailbox>, frame: &Bytes) -> bool {
    if !HOLDING.get() {
        return false;
    }
    HELD.with_borrow_mut(|held| held.push((mailbox.clone(), frame.clone())));
    ANY_HELD.set(true);
    true
}
