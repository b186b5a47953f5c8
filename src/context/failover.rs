//! FAILOVER, Redis 7.0's coordinated switch: the primary holds writes
//! back, waits until a replica (the one named, or any) has acknowledged
//! everything, then follows it, asking `PSYNC <replid> <offset> FAILOVER`;
//! the replica promotes itself on that request and answers `+CONTINUE`,
//! and writes flow again, now to the new primary. A timeout ends the
//! wait (and the switch) unless FORCE goes on to the named replica.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

use super::Shared;
use super::fault::PauseMode;
use super::replica::{LinkState, Primary};
use super::replicas::SyncState;

/// How often the switch looks at its replicas and its link.
const STEP: Duration = Duration::from_millis(10);
/// How long writes are held back at most: until the switch ends.
const HOLD: Duration = Duration::from_secs(365 * 24 * 3600);

/// Where a failover stands, as INFO's `master_failover_state` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum FailoverState {
    None,
    WaitingForSync,
    InProgress,
}

impl FailoverState {
    pub fn name(self) -> &'static str {
        match self {
            FailoverState::None => "no-failover",
            FailoverState::WaitingForSync => "waiting-for-sync",
            FailoverState::InProgress => "failover-in-progress",
        }
    }
}

/// What FAILOVER asked for.
#[derive(Debug, Clone)]
pub struct FailoverAsk {
    pub target: Option<Primary>,
    pub timeout: Option<Duration>,
    pub force: bool,
}

#[derive(Default)]
pub struct Failover {
    state: AtomicU8,
    /// Why the switch must end early (FAILOVER ABORT, the target's
    /// refusal); its task sees it.
    aborted: Mutex<Option<&'static str>>,
    /// The switch FAILOVER asked for, for the task (`serve`) to run.
    asked: Mutex<Option<FailoverAsk>>,
    wake: tokio::sync::Notify,
}

impl Failover {
    pub fn state(&self) -> FailoverState {
        match self.state.load(Ordering::Acquire) {
            1 => FailoverState::WaitingForSync,
            2 => FailoverState::InProgress,
            _ => FailoverState::None,
        }
    }

    fn set(&self, state: FailoverState) {
        self.state.store(state as u8, Ordering::Release);
    }

    /// Starts the switch (the caller checked FAILOVER's arguments):
    /// writes are held back at once, and `serve` runs it to its end.
    pub fn start(&self, shared: &Shared, ask: FailoverAsk) {
        self.set(FailoverState::WaitingForSync);
        *self.aborted.lock() = None;
        shared.pause(HOLD, PauseMode::Write);
        *self.asked.lock() = Some(ask);
        self.wake.notify_one();
    }

    /// FAILOVER ABORT: false if none is under way.
    pub fn abort(&self) -> bool {
        self.end_early("Failover manually aborted")
    }

    /// The target refused `PSYNC … FAILOVER`.
    pub fn refused(&self) {
        self.end_early("Failover target rejected psync request");
    }

    fn end_early(&self, why: &'static str) -> bool {
        if self.state() == FailoverState::None {
            return false;
        }
        self.aborted.lock().get_or_insert(why);
        true
    }

    fn aborted(&self) -> Option<&'static str> {
        *self.aborted.lock()
    }
}

/// Runs each switch FAILOVER asks for, until the server stops.
pub async fn serve(shared: Arc<Shared>, mut stop: tokio::sync::watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = shared.failover.wake.notified() => {}
            _ = stop.changed() => return,
        }
        let ask = shared.failover.asked.lock().take();
        if let Some(ask) = ask {
            run(&shared, ask).await;
        }
    }
}

async fn run(shared: &Shared, ask: FailoverAsk) {
    let deadline = ask.timeout.map(|t| tokio::time::Instant::now() + t);
    let past =
        |d: Option<tokio::time::Instant>| d.is_some_and(|d| tokio::time::Instant::now() >= d);
    let target = loop {
        if let Some(why) = shared.failover.aborted() {
            return end(shared, why, true);
        }
        if let Some(target) = caught_up(shared, ask.target.as_ref()) {
            break target;
        }
        if past(deadline) {
            match &ask.target {
                Some(target) if ask.force => break target.clone(),
                _ => return end(shared, "Replica never caught up before timeout", true),
            }
        }
        shared
            .replica
            .backlog
            .command(None, &[b"REPLCONF", b"GETACK", b"*"]);
        tokio::time::sleep(STEP * 10).await;
    };
    tracing::info!(
        "Failover target {}:{} is synced, failing over.",
        target.host,
        target.port
    );
    shared.failover.set(FailoverState::InProgress);
    shared.follow(Some(target));
    loop {
        if let Some(why) = shared.failover.aborted() {
            return end(shared, why, true);
        }
        if shared.replica.link() == LinkState::Connected {
            return end(shared, "Failover target accepted the switch", false);
        }
        tokio::time::sleep(STEP).await;
    }
}

/// The replica to switch to: the one named, or any, once online and at
/// this server's offset.
fn caught_up(shared: &Shared, target: Option<&Primary>) -> Option<Primary> {
    let offset = shared.replica.offset();
    shared
        .replicas
        .all()
        .into_iter()
        .filter(|r| r.state() == SyncState::Online && r.ack_offset() == offset)
        .map(|r| Primary {
            host: r.ip.clone(),
            port: r.port,
        })
        .find(|r| target.is_none_or(|t| t == r))
}

/// Ends the switch; an aborted one makes this server a primary again.
fn end(shared: &Shared, why: &str, aborted: bool) {
    if aborted {
        tracing::warn!("FAILOVER aborted: {why}");
        if shared.replica.is_replica() {
            shared.follow(None);
        }
    } else {
        tracing::info!("FAILOVER ended: {why}");
    }
    shared.failover.set(FailoverState::None);
    shared.unpause();
}
