//! Persistence as the server runs it: switching the append-only file on
//! and off, rewrites (BGREWRITEAOF, automatic, and the one that makes the
//! file when `appendonly` is switched on at run time), and the grace
//! period after a restart without persistence (`lock-restart-grace-ms`).

use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::Mutex;
use tokio::sync::Notify;

use super::Shared;
use crate::config::Config;
use crate::persist::{Aof, Fsync};

/// The rewrite's state, for BGREWRITEAOF and INFO persistence.
pub struct Persistence {
    /// A rewrite asked for and not started yet: the server's background
    /// loop starts it (a command cannot run one itself without blocking).
    requested: AtomicBool,
    /// Wakes that loop for a request.
    asked: Notify,
    rewriting: AtomicBool,
    job: JobRecord,
    /// Until then (server time, Unix ms: the clock leases are measured
    /// by), writes are refused with LOADING (`lock-restart-grace-ms`); set
    /// once the data (if any) is loaded. 0: no grace.
    grace_until_ms: AtomicU64,
}

/// When a background job (a rewrite, a BGSAVE) started and how the last
/// one ended, for INFO persistence.
pub struct JobRecord {
    started: Mutex<Option<Instant>>,
    last_ok: AtomicBool,
    /// How long the last one took; -1 before any.
    last_secs: AtomicI64,
}

impl Default for JobRecord {
    fn default() -> Self {
        JobRecord {
            started: Mutex::new(None),
            last_ok: AtomicBool::new(true),
            last_secs: AtomicI64::new(-1),
        }
    }
}

impl JobRecord {
    pub fn start(&self) {
        *self.started.lock() = Some(Instant::now());
    }

    pub fn end(&self, ok: bool) {
        let secs = self
            .started
            .lock()
            .take()
            .map_or(0, |s| s.elapsed().as_secs() as i64);
        self.last_secs.store(secs, Ordering::Relaxed);
        self.last_ok.store(ok, Ordering::Relaxed);
    }

    pub fn last_ok(&self) -> bool {
        self.last_ok.load(Ordering::Relaxed)
    }

    /// A job done another way (SAVE for BGSAVE) went well.
    pub fn mark_ok(&self) {
        self.last_ok.store(true, Ordering::Relaxed);
    }

    pub fn last_secs(&self) -> i64 {
        self.last_secs.load(Ordering::Relaxed)
    }

    /// How long the one under way has run; -1 when none runs.
    pub fn current_secs(&self) -> i64 {
        self.started
            .lock()
            .map_or(-1, |s| s.elapsed().as_secs() as i64)
    }
}

/// Where the append-only file lives: `dir/appendfilename`.
pub fn aof_path(config: &Config) -> PathBuf {
    PathBuf::from(&config.dir).join(&config.appendfilename)
}

impl Default for Persistence {
    fn default() -> Self {
        Persistence {
            requested: AtomicBool::new(false),
            asked: Notify::new(),
            rewriting: AtomicBool::new(false),
            job: JobRecord::default(),
            grace_until_ms: AtomicU64::new(0),
        }
    }
}

impl Persistence {
    /// Starts the restart grace period (`lock-restart-grace-ms`, if any)
    /// at server time `now_ms`.
    pub fn start_grace(&self, config: &Config, now_ms: u64) {
        if config.lock_restart_grace_ms > 0 {
            let until = now_ms.saturating_add(config.lock_restart_grace_ms);
            self.grace_until_ms.store(until, Ordering::Relaxed);
        }
    }

    /// Whether the restart grace period still refuses writes. Every write
    /// asks, so the clock (`now_ms`) is read only while a grace period is
    /// set, and one found over is cleared for good.
    pub fn in_grace(&self, now_ms: impl FnOnce() -> u64) -> bool {
        let until = self.grace_until_ms.load(Ordering::Relaxed);
        if until == 0 {
            return false;
        }
        if now_ms() < until {
            return true;
        }
        // A grace period started meanwhile (a restart) is left alone.
        let _ =
            self.grace_until_ms
                .compare_exchange(until, 0, Ordering::Relaxed, Ordering::Relaxed);
        false
    }

    /// BGREWRITEAOF: false if a rewrite is already running or asked for.
    pub fn request_rewrite(&self) -> bool {
        let new =
            !self.rewriting.load(Ordering::Acquire) && !self.requested.swap(true, Ordering::AcqRel);
        if new {
            self.asked.notify_one();
        }
        new
    }

    /// Returns once a rewrite is asked for.
    pub async fn rewrite_asked(&self) {
        self.asked.notified().await
    }

    pub fn rewrite_in_progress(&self) -> bool {
        self.rewriting.load(Ordering::Acquire) || self.requested.load(Ordering::Acquire)
    }

    /// When the rewrite under way started and how the last one went.
    pub fn rewrites(&self) -> &JobRecord {
        &self.job
    }

    /// Takes a pending request (also raised by the file outgrowing
    /// `auto-aof-rewrite-percentage`); the caller then runs `rewrite`.
    pub fn take_request(&self, shared: &Shared) -> bool {
        if self.rewriting.load(Ordering::Acquire) {
            return false;
        }
        let auto = shared.keyspace.log().is_some_and(|aof| {
            let config = shared.config.read();
            aof.wants_rewrite(
                config.auto_aof_rewrite_percentage,
                config.auto_aof_rewrite_min_size,
            )
        });
        if !self.requested.swap(false, Ordering::AcqRel) && !auto {
            return false;
        }
        self.rewriting.store(true, Ordering::Release);
        self.job.start();
        true
    }
}

/// Rewrites the append-only file from the keyspace, blocking the calling
/// thread (not clients: see `Keyspace::snapshot`). Without an AOF running
/// it writes the file once, as BGREWRITEAOF does in Redis.
pub fn rewrite(shared: &Shared) {
    let aof = shared.keyspace.log();
    let path = aof.as_ref().map_or_else(
        || aof_path(&shared.config.read()),
        |a| a.path().to_path_buf(),
    );
    tracing::info!("Background append only file rewriting started");
    if let Some(aof) = &aof {
        aof.begin_rewrite();
    }
    let snapshot = crate::persist::rewrite_temp(&path).and_then(|(file, tmp)| {
        let mut out = BufWriter::new(file);
        shared.keyspace.snapshot(&mut out)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        Ok((file, tmp))
    });
    let result = match &aof {
        Some(aof) => aof.finish_rewrite(snapshot),
        None => {
            snapshot.and_then(|(file, tmp)| crate::persist::install_snapshot(&path, file, &tmp))
        }
    };
    let state = &shared.persistence;
    match &result {
        Ok(()) => tracing::info!("Background AOF rewrite finished successfully"),
        Err(e) => tracing::warn!("Background AOF rewrite failed: {e}"),
    }
    state.job.end(result.is_ok());
    state.rewriting.store(false, Ordering::Release);
}

/// CONFIG SET appendonly / appendfsync: applies the change of `old` to `new`.
pub fn reconfigure(shared: &Shared, old: &Config, new: &Config) {
    let fsync = Fsync::parse(&new.appendfsync).unwrap_or(Fsync::EverySec);
    match (old.appendonly, new.appendonly) {
        (false, true) => {
            // As in Redis: the file is made by a rewrite, and records
            // buffer until it is written.
            let aof = Aof::pending_rewrite(&aof_path(new), fsync);
            shared.keyspace.set_log(Some(aof));
            shared.persistence.requested.store(true, Ordering::Release);
            shared.persistence.asked.notify_one();
        }
        (true, false) => {
            if let Some(aof) = shared.keyspace.log() {
                shared.keyspace.set_log(None);
                aof.close();
            }
        }
        _ => {
            if let Some(aof) = shared.keyspace.log() {
                aof.set_fsync(fsync);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grace_ends_at_its_deadline_and_the_clock_goes_unread_after() {
        let persistence = Persistence::default();
        assert!(
            !persistence.in_grace(|| panic!("no grace set: the clock is not read")),
            "no grace without lock-restart-grace-ms"
        );
        let config = Config {
            lock_restart_grace_ms: 500,
            ..Config::default()
        };
        persistence.start_grace(&config, 1_000);
        assert!(persistence.in_grace(|| 1_499));
        assert!(!persistence.in_grace(|| 1_500), "over at its deadline");
        assert!(
            !persistence.in_grace(|| panic!("an ended grace is cleared")),
            "and stays over"
        );
    }
}
