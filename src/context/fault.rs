//! Faults a test injects: CLIENT PAUSE (also from the Rust API) and a
//! delay before every reply.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::Notify;

/// What a pause holds back, least to most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PauseMode {
    /// Commands that write or may publish (writes, EVAL, PUBLISH…).
    Write,
    /// Every command.
    All,
}

/// A pause longer than this is treated as this long (a practical forever;
/// `Instant` cannot hold Redis's largest timeouts).
const LONGEST_PAUSE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

#[derive(Default)]
pub struct Faults {
    /// Set while `pause` may be in force, so the command path reads one
    /// atomic and never the lock when nothing is paused.
    pausing: AtomicBool,
    pause: Mutex<Option<(Instant, PauseMode)>>,
    unpaused: Notify,
    reply_delay_us: AtomicU64,
}

impl Faults {
    /// CLIENT PAUSE: a pause already in force keeps its later end and its
    /// stricter mode, as Redis merges them. Returns when the pause ends.
    pub fn pause(&self, duration: Duration, mode: PauseMode) -> Instant {
        let now = Instant::now();
        let until = now + duration.min(LONGEST_PAUSE);
        let mut pause = self.pause.lock();
        let merged = match *pause {
            Some((end, current)) if end > now => (end.max(until), current.max(mode)),
            _ => (until, mode),
        };
        *pause = Some(merged);
        self.pausing.store(true, Ordering::Release);
        merged.0
    }

    /// CLIENT UNPAUSE: everything held back runs now.
    pub fn unpause(&self) {
        *self.pause.lock() = None;
        self.pausing.store(false, Ordering::Release);
        self.unpaused.notify_waiters();
    }

    /// When a command may run, if a pause holds it back now. A pause found
    /// over is cleared, so the command path stops looking.
    fn paused_until(&self, writes: bool) -> Option<Instant> {
        if !self.pausing.load(Ordering::Acquire) {
            return None;
        }
        let mut pause = self.pause.lock();
        let (until, mode) = (*pause)?;
        if until <= Instant::now() {
            *pause = None;
            self.pausing.store(false, Ordering::Release);
            return None;
        }
        (writes || mode == PauseMode::All).then_some(until)
    }

    /// Whether a pause holds back a command; `writes` (whether it writes,
    /// which costs a table lookup) is asked only while a pause is on.
    pub fn holds_back(&self, writes: impl FnOnce() -> bool) -> bool {
        self.pausing.load(Ordering::Acquire) && self.paused_until(writes()).is_some()
    }

    /// Returns once no pause holds back a command of this kind.
    pub async fn wait_unpaused(&self, writes: bool) {
        loop {
            // Registered before looking, so an UNPAUSE in between wakes it.
            let unpaused = self.unpaused.notified();
            let Some(until) = self.paused_until(writes) else {
                return;
            };
            tokio::select! {
                _ = tokio::time::sleep_until(until.into()) => {}
                _ = unpaused => {}
            }
        }
    }

    /// Every reply waits this long before it is written (zero: none).
    pub fn set_reply_delay(&self, delay: Duration) {
        self.reply_delay_us
            .store(delay.as_micros() as u64, Ordering::Relaxed);
    }

    pub fn reply_delay(&self) -> Duration {
        Duration::from_micros(self.reply_delay_us.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_merge_to_the_later_end_and_the_stricter_mode() {
        let faults = Faults::default();
        let long = faults.pause(Duration::from_secs(60), PauseMode::Write);
        assert!(!faults.holds_back(|| false), "reads pass a WRITE pause");
        let merged = faults.pause(Duration::from_millis(1), PauseMode::All);
        assert_eq!(merged, long, "the later end stays");
        assert!(faults.holds_back(|| false), "the stricter mode stays");
        faults.unpause();
        assert!(!faults.holds_back(|| true));
    }

    #[test]
    fn an_ended_pause_is_cleared() {
        let faults = Faults::default();
        faults.pause(Duration::from_millis(1), PauseMode::All);
        std::thread::sleep(Duration::from_millis(5));
        assert!(!faults.holds_back(|| true));
        assert!(
            !faults.pausing.load(Ordering::Acquire),
            "the command path stops looking"
        );
    }
}
