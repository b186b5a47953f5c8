//! One client connection: read what has arrived, run every complete
//! request in order, and answer the whole batch with one write. Pub/sub
//! messages from the client's mailbox are written as they arrive, and
//! ahead of the reply of the command during which they arrived.

use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::client_handle::{ClientAddr, ClientHandle};
use crate::command::pubsub::forget_subscriptions;
use crate::command::{dispatch, forget_transaction, replicates};
use crate::context::Client;
use crate::context::Shared;
use crate::context::client::Blocked;
use crate::context::guard::NOREPLICAS;
use crate::context::safe_mode::{self, PendingWrite, Settled};
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

/// What a client is served over: a TCP connection, a unix socket's.
pub trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Stream for S {}

/// A connection whose client asked to become a replica (SYNC, PSYNC):
/// what `crate::replication` serves it with. The client stays listed
/// until that is done.
pub struct Handoff<S> {
    pub client: Client,
    pub stream: S,
    /// What it sent after its PSYNC (its first ACKs may be there).
    pub input: BytesMut,
}

/// Serves one client until it leaves, or until it asks to become a
/// replica: then the connection is handed back.
pub async fn serve<S: Stream>(
    shared: Arc<Shared>,
    mut stream: S,
    addr: ClientAddr,
    laddr: ClientAddr,
) -> Option<Handoff<S>> {
    let id = shared.next_client_id();
    let handle = Arc::new(ClientHandle::new(id, addr, laddr, shared.now_ms()));
    shared.clients.insert(id, handle.clone());
    let mut client = Client::new(handle.clone(), shared.acl.default_user());
    let (mailbox, mut mail) = Mailbox::new(handle.clone());
    shared.pubsub.tracking.connect(mailbox.clone());
    client.pubsub.attach(mailbox);

    let replica = run(&shared, &mut client, &mut stream, &mut mail)
        .await
        .ok()
        .flatten();

    forget_transaction(&shared, &mut client);
    forget_subscriptions(&shared, &mut client);
    shared.pubsub.tracking.disconnect(id);
    match replica {
        Some(input) => Some(Handoff {
            client,
            stream,
            input,
        }),
        None => {
            shared.clients.remove(&id);
            None
        }
    }
}

/// Output waiting to be written, and how much of it came from the mailbox
/// (that much leaves the client's pub/sub backlog once written).
struct Output {
    buf: BytesMut,
    mail_bytes: usize,
    /// The safe mode's replies in `buf` that wait for their writes'
    /// acknowledgements, in order: the pipeline runs on meanwhile, and
    /// its whole output goes once the last is acknowledged (group
    /// commit: one round trip to the replicas per batch).
    held: Vec<HeldReply>,
}

/// A reply in the output that must not go before its write is
/// acknowledged.
struct HeldReply {
    /// Its bytes in the output.
    at: Range<usize>,
    write: PendingWrite,
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
        self.write_frame(frame, protocol);
        self.mail_bytes += frame.len();
    }

    /// A frame of the client's own, not from the mailbox.
    fn write_frame(&mut self, frame: &[u8], protocol: Protocol) {
        write_frame(&mut self.buf, frame, protocol == Protocol::Resp3);
    }

    /// Queues a reply, held back until `write` is acknowledged if it is
    /// one.
    fn add_reply(&mut self, reply: &Reply, protocol: Protocol, write: Option<PendingWrite>) {
        let start = self.buf.len();
        reply.encode(protocol, &mut self.buf);
        if let Some(write) = write {
            let at = start..self.buf.len();
            self.held.push(HeldReply { at, write });
        }
    }

    /// Puts NOREPLICAS in the place of each held reply whose write was not
    /// acknowledged (`acked` says), and lets go of them all.
    fn settle_held(&mut self, protocol: Protocol, acked: impl Fn(&PendingWrite) -> bool) {
        let mut refusal = BytesMut::new();
        Reply::Error(CmdError::other(NOREPLICAS)).encode(protocol, &mut refusal);
        let mut rebuilt: Option<BytesMut> = None;
        let mut copied = 0;
        for held in self.held.drain(..) {
            if acked(&held.write) {
                continue;
            }
            let out = rebuilt.get_or_insert_with(|| BytesMut::with_capacity(self.buf.len()));
            out.extend_from_slice(&self.buf[copied..held.at.start]);
            out.extend_from_slice(&refusal);
            copied = held.at.end;
        }
        if let Some(mut out) = rebuilt {
            out.extend_from_slice(&self.buf[copied..]);
            self.buf = out;
        }
    }

    /// Empties the written output; what came from the mailbox leaves the
    /// client's pub/sub backlog.
    fn sent(&mut self, handle: &ClientHandle) {
        self.buf.clear();
        if self.mail_bytes > 0 {
            handle.backlog.fetch_sub(self.mail_bytes, Ordering::Relaxed);
            self.mail_bytes = 0;
        }
    }
}

/// What ended an idle connection's wait. When several are ready at once,
/// the first listed wins: a killed client's pending requests are never
/// run, even when they arrived in the same instant as the kill.
enum Wake {
    Killed,
    /// This many bytes of requests arrived; none means the client closed.
    Input(usize),
    /// A pub/sub message or invalidation, forwarded without waiting for a
    /// request.
    Mail(Bytes),
}

/// Where the connection goes after a request, or after a batch of them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Then {
    /// On to the next request.
    Continue,
    /// Write what is answered, then close (QUIT, a protocol error).
    Close,
    /// Close without writing more: the client was killed or went away.
    Abandon,
    /// Write what is answered, then hand the connection over: the client
    /// is a replica now.
    Replicate,
}

/// A command's reply, and whether the client waited for it.
enum Answer {
    Now(Reply),
    /// Served after blocking: the invalidations the serving caused for
    /// this client (BLMOVE's destination) are in its mailbox by now and
    /// follow the reply.
    AfterWait(Reply),
}

/// One connection's loop: wait for input or mail, serve every complete
/// request, write the batch's replies.
struct Connection<'c, S> {
    shared: &'c Shared,
    client: &'c mut Client,
    stream: &'c mut S,
    mail: &'c mut MailboxReceiver,
    handle: Arc<ClientHandle>,
    input: BytesMut,
    requests: RequestParser,
    output: Output,
}

/// Serves until the client leaves; its unread input when it became a
/// replica instead.
async fn run(
    shared: &Shared,
    client: &mut Client,
    stream: &mut impl Stream,
    mail: &mut MailboxReceiver,
) -> std::io::Result<Option<BytesMut>> {
    let handle = client.handle.clone();
    // One wait for a kill across all reads, not one made and dropped for
    // each (each is a turn on the kill signal's lock).
    let killed = handle.killed();
    tokio::pin!(killed);
    let mut conn = Connection::new(shared, client, stream, mail);
    loop {
        match conn.wake(killed.as_mut()).await? {
            Wake::Killed | Wake::Input(0) => return Ok(None),
            Wake::Mail(frame) => conn.forward_mail(&frame).await?,
            Wake::Input(read) => {
                conn.note_input(read);
                match conn.serve_batch().await? {
                    Then::Continue => {}
                    Then::Replicate => return Ok(Some(std::mem::take(&mut conn.input))),
                    Then::Close | Then::Abandon => return Ok(None),
                }
                conn.shrink_input();
            }
        }
    }
}

impl<'c, S: Stream> Connection<'c, S> {
    fn new(
        shared: &'c Shared,
        client: &'c mut Client,
        stream: &'c mut S,
        mail: &'c mut MailboxReceiver,
    ) -> Self {
        Connection {
            shared,
            handle: client.handle.clone(),
            client,
            stream,
            mail,
            input: BytesMut::with_capacity(READ_CHUNK),
            requests: RequestParser::default(),
            output: Output {
                buf: BytesMut::with_capacity(READ_CHUNK),
                mail_bytes: 0,
                held: Vec::new(),
            },
        }
    }

    async fn wake(&mut self, killed: Pin<&mut impl Future<Output = ()>>) -> std::io::Result<Wake> {
        if self.input.capacity() - self.input.len() < READ_CHUNK / 4 {
            self.input.reserve(READ_CHUNK);
        }
        Ok(tokio::select! {
            biased;
            _ = killed => Wake::Killed,
            r = self.stream.read_buf(&mut self.input) => Wake::Input(r?),
            Some(frame) = self.mail.recv() => Wake::Mail(frame),
        })
    }

    /// Writes a message that arrived while idle, with those queued behind
    /// it up to a write's worth.
    async fn forward_mail(&mut self, frame: &[u8]) -> std::io::Result<()> {
        self.output.add_frame(frame, self.client.protocol);
        self.output.take_mail(self.mail, self.client.protocol, true);
        self.flush().await
    }

    fn note_input(&mut self, read: usize) {
        self.shared.stats.add_input(read);
        self.handle
            .last_interaction_ms
            .store(self.shared.now_ms(), Ordering::Relaxed);
    }

    /// Serves the complete requests read, in order, and writes their
    /// replies; says whether the connection stays open.
    async fn serve_batch(&mut self) -> std::io::Result<Then> {
        let then = self.serve_requests().await?;
        if then == Then::Abandon {
            return Ok(then);
        }
        self.flush().await?;
        Ok(if self.handle.is_killed() {
            Then::Abandon
        } else {
            then
        })
    }

    async fn serve_requests(&mut self) -> std::io::Result<Then> {
        loop {
            let unread = self.input.len();
            let args = match self
                .requests
                .next_request(&mut self.input, self.client.authenticated)
            {
                Ok(Some(_)) if self.handle.is_killed() => return Ok(Then::Abandon),
                Ok(Some(args)) => args,
                Ok(None) => return Ok(Then::Continue),
                Err(e) => {
                    let error = Reply::Error(CmdError::Other(e.message()));
                    error.encode(self.client.protocol, &mut self.output.buf);
                    return Ok(Then::Close);
                }
            };
            self.client.query_bytes = unread;
            let then = self.serve(&args).await?;
            if then != Then::Continue {
                return Ok(then);
            }
            if self.output.buf.len() >= FLUSH_AT {
                self.flush().await?;
            }
        }
    }

    /// Logs HTTP sent to the port as Redis does, once a minute at most.
    fn warn_of_attack(&self) {
        let now = self.shared.now_ms();
        let last = self.shared.attack_logged_ms.load(Ordering::Relaxed);
        if (last == 0 || now.saturating_sub(last) > ATTACK_LOG_EVERY_MS)
            && self
                .shared
                .attack_logged_ms
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::warn!(
                "Possible SECURITY ATTACK detected. It looks like somebody is sending POST or \
                 Host: commands to Redis. This is likely due to an attacker attempting to use \
                 Cross Protocol Scripting to compromise your Redis instance. Connection aborted."
            );
        }
    }

    /// One request: held while paused, run, waited on while blocked, then
    /// its reply queued among the mail.
    async fn serve(&mut self, args: &[Bytes]) -> std::io::Result<Then> {
        if args.first().is_some_and(|name| is_http(name)) {
            self.warn_of_attack();
            return Ok(Then::Abandon);
        }
        if !self.hold_while_paused(args).await? {
            return Ok(Then::Abandon);
        }
        let scope = Scope::enter(self.client.id);
        safe_mode::begin_command();
        let reply = dispatch(self.shared, self.client, args);
        let written = self.shared.written(self.client.from_primary);
        if self.client.sync_asked.is_some() {
            return Ok(Then::Replicate);
        }
        // Invalidations the command caused for this very client follow its
        // reply, as in Redis.
        let invalidations = scope.finish(&self.shared.pubsub.tracking);
        let (answer, written) = match self.client.blocked.take() {
            None => (Answer::Now(reply), written),
            Some(blocked) => match self.wait_blocked(blocked, args).await? {
                Some((reply, written)) => (Answer::AfterWait(reply), written),
                None => return Ok(Then::Abandon),
            },
        };
        if self.client.close_silently {
            return Ok(Then::Close);
        }
        self.queue_answer(answer, written);
        for frame in &invalidations {
            self.output.write_frame(frame, self.client.protocol);
        }
        // Subscriptions start once their confirmation is out.
        self.client.pubsub.commit(&self.shared.pubsub);
        Ok(if self.client.close_after_reply {
            Then::Close
        } else {
            Then::Continue
        })
    }

    /// The safe mode, before the output goes: waits for the last held
    /// write's acknowledgements (or its timeout), and answers NOREPLICAS
    /// in place of each held reply whose write was not acknowledged.
    async fn settle_held(&mut self) -> std::io::Result<()> {
        let Some(last) = self.output.held.last() else {
            return Ok(());
        };
        let settled = tokio::select! {
            settled = self.shared.settle(&last.write) => settled,
            _ = self.handle.killed() => return Err(std::io::ErrorKind::ConnectionAborted.into()),
        };
        let shared = self.shared;
        match settled {
            Settled::Acknowledged => self.output.held.clear(),
            Settled::TimedOut => self
                .output
                .settle_held(self.client.protocol, |w| shared.acknowledged(w)),
        }
        Ok(())
    }

    /// Holds a request back while CLIENT PAUSE covers it; false if the
    /// client was killed meanwhile.
    async fn hold_while_paused(&mut self, args: &[Bytes]) -> std::io::Result<bool> {
        let shared = self.shared;
        if !shared
            .faults
            .holds_back(|| replicates(shared, self.client, args))
        {
            return Ok(true);
        }
        self.send_answered().await?;
        let writes = replicates(shared, self.client, args);
        // A held client counts as blocked, as in Redis (INFO
        // blocked_clients, the `b` flag).
        self.handle.info.lock().blocked = true;
        let unpaused = tokio::select! {
            _ = shared.faults.wait_unpaused(writes) => true,
            _ = self.handle.killed() => false,
        };
        if unpaused {
            self.handle.info.lock().blocked = false;
        }
        Ok(unpaused)
    }

    /// The blocked command's reply and what it waits for, or `None` if the
    /// client went away.
    async fn wait_blocked(
        &mut self,
        blocked: Blocked,
        args: &[Bytes],
    ) -> std::io::Result<Option<(Reply, Option<PendingWrite>)>> {
        self.send_answered().await?;
        let waiting = Waiting {
            shared: self.shared,
            stream: self.stream,
            input: &mut self.input,
        };
        waiting.wait(self.client, blocked, args).await
    }

    /// Writes what the pipeline answered so far, and the mail before it,
    /// ahead of a request that makes the client wait.
    async fn send_answered(&mut self) -> std::io::Result<()> {
        self.queue_mail();
        self.flush().await
    }

    /// Queues a reply and every message that arrived while its command ran
    /// (a PUBLISH to one's own channel, earlier confirmations). A reply
    /// overtakes none of them, except that a monitor's own command's line
    /// follows its reply, as in Redis, as does what a served blocked
    /// command caused.
    /// A write's reply (`written`) is held until it is acknowledged.
    fn queue_answer(&mut self, answer: Answer, written: Option<PendingWrite>) {
        match answer {
            Answer::Now(reply) if !self.client.pubsub.monitoring() => {
                self.queue_mail();
                self.queue_reply(reply, written);
            }
            Answer::Now(reply) | Answer::AfterWait(reply) => {
                self.queue_reply(reply, written);
                self.queue_mail();
            }
        }
    }

    fn queue_mail(&mut self) {
        self.output
            .take_mail(self.mail, self.client.protocol, false);
    }

    fn queue_reply(&mut self, reply: Reply, written: Option<PendingWrite>) {
        // Pub/sub confirmations go out whatever CLIENT REPLY says, as in
        // Redis.
        if self.client.replies.answer_and_advance() | matches!(reply, Reply::Push(_)) {
            self.output.add_reply(&reply, self.client.protocol, written);
        }
    }

    /// A big request's buffer is not kept once it is answered, as Redis
    /// shrinks its query buffers: an idle client holds little memory.
    fn shrink_input(&mut self) {
        if self.input.is_empty() && self.input.capacity() > QUERY_BUF_KEEP {
            self.input = BytesMut::with_capacity(READ_CHUNK);
        }
    }

    /// Writes the output, giving up if the client is killed meanwhile: a
    /// subscriber that stopped reading must not hold its task forever.
    async fn flush(&mut self) -> std::io::Result<()> {
        if self.output.buf.is_empty() {
            return Ok(());
        }
        if !self.output.held.is_empty() {
            self.settle_held().await?;
        }
        // `appendfsync always`: nothing is acknowledged before it is on disk.
        if let Some(aof) = self.shared.keyspace.log() {
            aof.wait_durable().await;
        }
        let delay = self.shared.faults.reply_delay();
        if !delay.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = self.handle.killed() => return Err(std::io::ErrorKind::ConnectionAborted.into()),
            }
        }
        tokio::select! {
            biased;
            r = self.stream.write_all(&self.output.buf) => r?,
            _ = self.handle.killed() => return Err(std::io::ErrorKind::ConnectionAborted.into()),
        }
        self.shared.stats.add_output(self.output.buf.len());
        self.output.sent(&self.handle);
        Ok(())
    }
}

/// A client blocked in BLPOP and the like. Its next requests are read
/// meanwhile but not run (only so that a disconnect is seen), as in Redis.
struct Waiting<'w, S> {
    shared: &'w Shared,
    stream: &'w mut S,
    input: &'w mut BytesMut,
}

/// Requests read ahead while blocked stop being read past this much: the
/// client is not being answered anyway.
const BLOCKED_INPUT_MAX: usize = 64 * 1024 * 1024;

impl<S: Stream> Waiting<'_, S> {
    /// The blocking command's reply, with the write it waits for in the
    /// safe mode (the pop that served it), or `None` if the client went
    /// away.
    async fn wait(
        mut self,
        client: &mut Client,
        mut blocked: Blocked,
        args: &[Bytes],
    ) -> std::io::Result<Option<(Reply, Option<PendingWrite>)>> {
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
                let written = blocked
                    .waiter
                    .written_at()
                    .and_then(|at| self.shared.pending_write(at, client.from_primary));
                break Ok(Some((reply, written)));
            }
            // The element went elsewhere: run the command again, keeping
            // its deadline.
            client.retry_deadline = Some(blocked.deadline);
            safe_mode::begin_command();
            let reply = dispatch(self.shared, client, args);
            let written = self.shared.written(client.from_primary);
            client.retry_deadline = None;
            match client.blocked.take() {
                Some(again) => blocked = again,
                None => break Ok(Some((reply, written))),
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

/// An HTTP request line (`POST /…`) or header (`Host: …`) read as a
/// command: a browser tricked into sending a request to the port (cross
/// protocol scripting). Redis answers nothing and drops the connection,
/// replies already made included.
fn is_http(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b"post") || name.eq_ignore_ascii_case(b"host:")
}

/// How often an attack is logged at most.
const ATTACK_LOG_EVERY_MS: u64 = 60_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unacknowledged_replies_become_noreplicas_in_place() {
        let mut output = Output {
            buf: BytesMut::new(),
            mail_bytes: 0,
            held: Vec::new(),
        };
        let write = |offset| Some(PendingWrite::at(offset));
        output.add_reply(&Reply::status("OK"), Protocol::Resp2, write(10));
        output.add_reply(&Reply::Int(7), Protocol::Resp2, None);
        output.add_reply(&Reply::status("OK"), Protocol::Resp2, write(20));
        output.write_frame(b"*1\r\n$4\r\nmail\r\n", Protocol::Resp2);
        output.add_reply(&Reply::status("OK"), Protocol::Resp2, write(30));
        // The replicas got as far as 20.
        output.settle_held(Protocol::Resp2, |w| w.offset() <= 20);
        let noreplicas = format!("-{NOREPLICAS}\r\n");
        assert_eq!(
            String::from_utf8_lossy(&output.buf),
            format!("+OK\r\n:7\r\n+OK\r\n*1\r\n$4\r\nmail\r\n{noreplicas}")
        );
        assert!(output.held.is_empty());
    }
}
