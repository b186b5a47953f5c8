//! One client connection: read what has arrived, run every complete
//! request in order, and answer the whole batch with one write. Pub/sub
//! messages from the client's mailbox are written as they arrive, and
//! ahead of the reply of the command during which they arrived.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::client_handle::ClientHandle;
use crate::command::pubsub::forget_subscriptions;
use crate::command::{dispatch, forget_transaction, replicates};
use crate::context::Client;
use crate::context::Shared;
use crate::context::client::Blocked;
use crate::error::CmdError;
use crate::keyspace::{LockPlan, Outcome};
use crate::protocol::{Protocol, Reply, RequestParser};
use crate::pubsub::tracking::Scope;
use crate::pubsub::{Mailbox, MailboxReceiver, write_frame};

const READ_CHUNK: usize = 16 * 1024;
/// Replies of a long pipeline are flushed at this size rather than held.
const FLUSH_AT: usize = 1024 * 1024;
/// The most input buffer an idle connection keeps.
const QUERY_BUF_KEEP: usize = 4 * READ_CHUNK;

pub async fn serve(
    shared: Arc<Shared>,
    mut stream: TcpStream,
    addr: SocketAddr,
    laddr: SocketAddr,
) {
    let _ = stream.set_nodelay(true);
    let id = shared.next_client_id();
    let handle = Arc::new(ClientHandle::new(id, addr, laddr, shared.now_ms()));
    shared.clients.insert(id, handle.clone());
    let mut client = Client::new(handle.clone(), shared.acl.default_user());
    let (mailbox, mut mail) = Mailbox::new(handle.clone());
    shared.pubsub.tracking.connect(mailbox.clone());
    client.pubsub.attach(mailbox);

    let _ = run(&shared, &mut client, &mut stream, &mut mail).await;

    forget_transaction(&shared, &mut client);
    forget_subscriptions(&shared, &mut client);
    shared.pubsub.tracking.disconnect(id);
    shared.clients.remove(&id);
}

/// Output waiting to be written, and how much of it came from the mailbox
/// (that much leaves the client's pub/sub backlog once written).
struct Output {
    buf: BytesMut,
    mail_bytes: usize,
}

impl Output {
    /// Moves the frames waiting in the mailbox into the output: all of
    /// them, or (`bounded`) until the output is worth a write.
    fn take_mail(&mut self, mail: &mut MailboxReceiver, protocol: Protocol, bounded: bool) {
        while let Ok(frame) = mail.try_recv() {
            self.add_frame(&frame, protocol);
            if bounded && self.buf.len() >= FLUSH_AT {
                break;
            }
        }
    }

    fn add_frame(&mut self, frame: &[u8], protocol: Protocol) {
        write_frame(&mut self.buf, frame, protocol == Protocol::Resp3);
        self.mail_bytes += frame.len();
    }
}

async fn run(
    shared: &Shared,
    client: &mut Client,
    stream: &mut TcpStream,
    mail: &mut MailboxReceiver,
) -> std::io::Result<()> {
    let mut input = BytesMut::with_capacity(READ_CHUNK);
    let mut requests = RequestParser::default();
    let mut output = Output {
        buf: BytesMut::with_capacity(READ_CHUNK),
        mail_bytes: 0,
    };
    let handle = client.handle.clone();
    // One wait for a kill across all reads, not one made and dropped for
    // each (each is a turn on the kill signal's lock).
    let killed = handle.killed();
    tokio::pin!(killed);
    loop {
        if input.capacity() - input.len() < READ_CHUNK / 4 {
            input.reserve(READ_CHUNK);
        }
        // A killed client's pending requests are never run, even when they
        // arrived in the same instant as the kill.
        let read = tokio::select! {
            biased;
            _ = &mut killed => return Ok(()),
            r = stream.read_buf(&mut input) => r?,
            Some(frame) = mail.recv() => {
                output.add_frame(&frame, client.protocol);
                output.take_mail(mail, client.protocol, true);
                flush(shared, &handle, stream, &mut output).await?;
                continue;
            }
        };
        if read == 0 {
            return Ok(());
        }
        shared.stats.add_input(read);
        handle
            .last_interaction_ms
            .store(shared.now_ms(), Ordering::Relaxed);

        let mut closing = false;
        loop {
            let unread = input.len();
            match requests.next_request(&mut input, client.authenticated) {
                Ok(Some(_)) if handle.is_killed() => return Ok(()),
                Ok(Some(args)) => {
                    client.query_bytes = unread;
                    if shared
                        .faults
                        .holds_back(|| replicates(shared, client, &args))
                    {
                        // What the pipeline answered so far goes out first.
                        output.take_mail(mail, client.protocol, false);
                        flush(shared, &handle, stream, &mut output).await?;
                        let writes = replicates(shared, client, &args);
                        // A held client counts as blocked, as in Redis
                        // (INFO blocked_clients, the `b` flag).
                        handle.info.lock().blocked = true;
                        tokio::select! {
                            _ = shared.faults.wait_unpaused(writes) => {}
                            _ = handle.killed() => return Ok(()),
                        }
                        handle.info.lock().blocked = false;
                    }
                    let scope = Scope::enter(client.id);
                    let mut reply = dispatch(shared, client, &args);
                    // Invalidations the command caused for this very
                    // client follow its reply, as in Redis.
                    let after = scope.finish(&shared.pubsub.tracking);
                    let mut served_late = false;
                    if let Some(blocked) = client.blocked.take() {
                        served_late = true;
                        // The replies before it go out before it waits.
                        output.take_mail(mail, client.protocol, false);
                        flush(shared, &handle, stream, &mut output).await?;
                        let waited = Waiting {
                            shared,
                            stream,
                            input: &mut input,
                        };
                        match waited.wait(client, blocked, &args).await? {
                            Some(r) => reply = r,
                            None => return Ok(()),
                        }
                    }
                    if client.close_silently {
                        flush(shared, &handle, stream, &mut output).await?;
                        return Ok(());
                    }
                    // Messages that arrived meanwhile (a PUBLISH to one's
                    // own channel, earlier confirmations) go first, all
                    // of them: the reply must not overtake any. A
                    // monitor's own command's line follows its reply, as
                    // in Redis; so do the invalidations a served blocked
                    // command caused for its client (BLMOVE's destination),
                    // which are in the mailbox by the time it answers.
                    // Pub/sub confirmations go out whatever CLIENT REPLY says, as in
                    // Redis.
                    let answered =
                        client.replies.answer_and_advance() | matches!(reply, Reply::Push(_));
                    if client.pubsub.monitoring() || served_late {
                        if answered {
                            reply.encode(client.protocol, &mut output.buf);
                        }
                        output.take_mail(mail, client.protocol, false);
                    } else {
                        output.take_mail(mail, client.protocol, false);
                        if answered {
                            reply.encode(client.protocol, &mut output.buf);
                        }
                    }
                    for frame in &after {
                        write_frame(&mut output.buf, frame, client.protocol == Protocol::Resp3);
                    }
                    // Subscriptions start once their confirmation is out.
                    client.pubsub.commit(&shared.pubsub);
                    if client.close_after_reply {
                        closing = true;
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    Reply::Error(CmdError::Other(e.message()))
                        .encode(client.protocol, &mut output.buf);
                    closing = true;
                    break;
                }
            }
            if output.buf.len() >= FLUSH_AT {
                flush(shared, &handle, stream, &mut output).await?;
            }
        }
        flush(shared, &handle, stream, &mut output).await?;
        if closing || handle.is_killed() {
            return Ok(());
        }
        // A big request's buffer is not kept once it is answered, as Redis
        // shrinks its query buffers: an idle client holds little memory.
        if input.is_empty() && input.capacity() > QUERY_BUF_KEEP {
            input = BytesMut::with_capacity(READ_CHUNK);
        }
    }
}

/// A client blocked in BLPOP and the like. Its next requests are read
/// meanwhile but not run (only so that a disconnect is seen), as in Redis.
struct Waiting<'w> {
    shared: &'w Shared,
    stream: &'w mut TcpStream,
    input: &'w mut BytesMut,
}

/// Requests read ahead while blocked stop being read past this much: the
/// client is not being answered anyway.
const BLOCKED_INPUT_MAX: usize = 64 * 1024 * 1024;

impl Waiting<'_> {
    /// The blocking command's reply, or `None` if the client went away.
    async fn wait(
        mut self,
        client: &mut Client,
        mut blocked: Blocked,
        args: &[Bytes],
    ) -> std::io::Result<Option<Reply>> {
        let handle = client.handle.clone();
        handle.info.lock().blocked = true;
        let result = loop {
            handle.info.lock().waiter = Some(blocked.waiter.clone());
            let outcome = self.wait_once(&handle, &blocked).await;
            forget_waiter(self.shared, &blocked);
            let Some(outcome) = outcome else {
                break Ok(None);
            };
            let served = matches!(outcome, Outcome::Served { .. });
            let serving = std::time::Instant::now();
            if let Some(reply) = blocked.reply(outcome) {
                if served {
                    crate::command::log_if_slow(self.shared, client, serving.elapsed(), args);
                }
                if let Reply::Error(e) = &reply {
                    let id = handle.info.lock().last_cmd;
                    self.shared.stats.record_unblocked_error(id, e.code());
                }
                break Ok(Some(reply));
            }
            // The element went elsewhere: run the command again, keeping
            // its deadline.
            client.retry_deadline = Some(blocked.deadline);
            let reply = dispatch(self.shared, client, args);
            client.retry_deadline = None;
            match client.blocked.take() {
                Some(again) => blocked = again,
                None => break Ok(Some(reply)),
            }
        };
        {
            let mut info = handle.info.lock();
            info.blocked = false;
            info.waiter = None;
        }
        result
    }

    /// How the wait ended; `None` if the client disconnected or was killed.
    async fn wait_once(&mut self, handle: &ClientHandle, blocked: &Blocked) -> Option<Outcome> {
        let waiter = &blocked.waiter;
        let deadline = blocked.deadline.map(tokio::time::Instant::from_std);
        let (mut timed_out, mut closed) = (false, false);
        loop {
            let reading = !closed && self.input.len() < BLOCKED_INPUT_MAX;
            tokio::select! {
                outcome = waiter.served() => return Some(outcome),
                _ = tokio::time::sleep_until(deadline.unwrap_or_else(tokio::time::Instant::now)),
                    if deadline.is_some() && !timed_out => {
                    // An element already on its way is owed to the client.
                    timed_out = true;
                    if waiter.cancel() {
                        return Some(Outcome::Cancelled);
                    }
                }
                r = self.stream.read_buf(self.input), if reading => {
                    if !matches!(r, Ok(n) if n > 0) {
                        closed = true;
                        if waiter.cancel() {
                            return None;
                        }
                    }
                }
                _ = handle.killed() => {
                    if waiter.cancel() {
                        return None;
                    }
                }
            }
        }
    }
}

/// Takes a finished wait off its keys' queues.
pub(crate) fn forget_waiter(shared: &Shared, blocked: &Blocked) {
    let waiter = &blocked.waiter;
    let plan = LockPlan::for_keys(waiter.keys.iter().map(|k| &k[..]));
    // Behind a busy script the entries stay; whoever next queues on or
    // serves those keys drops them.
    if let Ok(mut locked) = shared.keyspace.lock(&plan) {
        let mut db = locked.db(waiter.db);
        for key in &waiter.keys {
            let _ = db.unblock(key, waiter);
        }
    }
}

/// Writes the output, giving up if the client is killed meanwhile: a
/// subscriber that stopped reading must not hold its task forever.
async fn flush(
    shared: &Shared,
    handle: &ClientHandle,
    stream: &mut TcpStream,
    output: &mut Output,
) -> std::io::Result<()> {
    if output.buf.is_empty() {
        return Ok(());
    }
    // `appendfsync always`: nothing is acknowledged before it is on disk.
    if let Some(aof) = shared.keyspace.log() {
        aof.wait_durable().await;
    }
    let delay = shared.faults.reply_delay();
    if !delay.is_zero() {
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = handle.killed() => return Err(std::io::ErrorKind::ConnectionAborted.into()),
        }
    }
    tokio::select! {
        biased;
        r = stream.write_all(&output.buf) => r?,
        _ = handle.killed() => return Err(std::io::ErrorKind::ConnectionAborted.into()),
    }
    shared.stats.add_output(output.buf.len());
    output.buf.clear();
    if output.mail_bytes > 0 {
        handle
            .backlog
            .fetch_sub(output.mail_bytes, Ordering::Relaxed);
        output.mail_bytes = 0;
    }
    Ok(())
}
