//! Persistence as the server runs it: switching the append-only file on
//! and off, rewrites (BGREWRITEAOF, automatic, and the one that makes the
//! file when `appendonly` is switched on at run time), and the grace
//! period after a restart without persistence (`lock-restart-grace-ms`).

use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

use super::Shared;
use super::grace::Grace;
use super::job::JobRecord;
use crate::config::Config;
use crate::persist::{Aof, BaseFormat, Fsync, Layout, Manifest};

/// The rewrite's state, for BGREWRITEAOF and INFO persistence.
pub struct Persistence {
    /// A rewrite asked for and not started yet: the server's background
    /// loop starts it (a command cannot run one itself without blocking).
    requested: AtomicBool,
    /// Wakes that loop for a request.
    asked: Notify,
    rewriting: AtomicBool,
    job: JobRecord,
    /// While it runs, writes are refused with LOADING
    /// (`lock-restart-grace-ms`); started once the data (if any) is loaded.
    grace: Grace,
}

/// Where the append-only files live: `dir/appenddirname`, named after
/// `appendfilename`.
pub fn aof_layout(config: &Config) -> Layout {
    Layout {
        dir: PathBuf::from(&config.dir).join(&config.appenddirname),
        stem: config.appendfilename.clone(),
    }
}

/// Where Redis before 7.0 kept its single append-only file:
/// `dir/appendfilename`.
pub fn single_file_path(config: &Config) -> PathBuf {
    PathBuf::from(&config.dir).join(&config.appendfilename)
}

/// The manifest in `layout`'s directory, if it has a readable one.
fn listed(layout: &Layout) -> Option<Manifest> {
    layout.read_manifest().ok().flatten().and_then(Result::ok)
}

/// Writes a base of the dataset as of now into `dir` (an RDB when
/// `aof-use-rdb-preamble`, else commands): the temporary file, fsynced.
pub fn write_base(shared: &Shared, dir: &Path) -> std::io::Result<(PathBuf, BaseFormat)> {
    let rdb = shared.config.read().aof_use_rdb_preamble;
    let (file, tmp) = crate::persist::rewrite_temp(dir)?;
    let written = if rdb {
        super::snapshot::rdb_now(shared, BufWriter::new(file), true).and_then(|(out, _)| {
            let file = out.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()
        })
    } else {
        let mut out = BufWriter::new(file);
        shared.keyspace.snapshot(&mut out).and_then(|()| {
            let file = out.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()
        })
    };
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    let format = if rdb {
        BaseFormat::Rdb
    } else {
        BaseFormat::Commands
    };
    Ok((tmp, format))
}

impl Default for Persistence {
    fn default() -> Self {
        Persistence {
            requested: AtomicBool::new(false),
            asked: Notify::new(),
            rewriting: AtomicBool::new(false),
            job: JobRecord::default(),
            grace: Grace::default(),
        }
    }
}

impl Persistence {
    /// Starts the restart grace period (`lock-restart-grace-ms`, if any)
    /// at server time `now_ms`.
    pub fn start_grace(&self, config: &Config, now_ms: u64) {
        self.grace.start(config.lock_restart_grace_ms, now_ms);
    }

    /// Whether the restart grace period still refuses writes.
    pub fn in_grace(&self, now_ms: impl FnOnce() -> u64) -> bool {
        self.grace.active(now_ms)
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
        // An AOF switched on at run time whose first rewrite failed tries
        // again, as Redis reschedules it.
        let auto = shared.keyspace.log().is_some_and(|aof| {
            let config = shared.config.read();
            aof.awaiting_base()
                || aof.wants_rewrite(
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
/// thread (not clients), as Redis 7.0 does: records go to a new
/// incremental file from the start, the base is written beside, and the
/// manifest then lists the new base and that file alone. Without an AOF
/// running it writes a base all the same, as BGREWRITEAOF does in Redis.
///
/// Why a base taken while clients write is consistent with the file
/// after it: the new incremental file receives every record from before
/// the base's point in time is taken, and records made until the base is
/// written are idempotent (`keyspace::aof`; lists' pushes and pops are
/// recorded as whole lists meanwhile), so one replayed over a base that
/// has it already leaves its keys as they were.
pub fn rewrite(shared: &Shared) {
    let aof = shared.keyspace.log();
    let layout = aof
        .as_ref()
        .map_or_else(|| aof_layout(&shared.config.read()), |a| a.layout().clone());
    tracing::info!("Background append only file rewriting started");
    let dir = PathBuf::from(&shared.config.read().dir);
    // Records made from the switch until the base has read their keys
    // are replayed over it: lists are recorded whole meanwhile.
    let copy = shared.keyspace.begin_copy();
    let result = aof
        .as_ref()
        .map_or(Ok(()), |aof| aof.begin_rewrite())
        .and_then(|()| write_base(shared, &dir))
        .and_then(|(tmp, format)| {
            let installed = match &aof {
                Some(aof) => aof.finish_rewrite(&tmp, format),
                None => crate::persist::install_offline(&layout, listed(&layout), &tmp, format)
                    .map(drop),
            };
            if installed.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            installed
        });
    drop(copy);
    let state = &shared.persistence;
    match &result {
        Ok(()) => tracing::info!("Background AOF rewrite finished successfully"),
        Err(e) => tracing::warn!("Background AOF rewrite failed: {e}"),
    }
    state.job.end(result.is_ok());
    state.rewriting.store(false, Ordering::Release);
}

/// CONFIG SET appendonly / appendfsync: applies the change of `old` to `new`.
/// Refused, with Redis's words, when the file cannot be made.
pub fn reconfigure(shared: &Shared, old: &Config, new: &Config) -> Result<(), &'static str> {
    let fsync = Fsync::parse(&new.appendfsync).unwrap_or(Fsync::EverySec);
    match (old.appendonly, new.appendonly) {
        (false, true) => {
            // As in Redis: the base is made by a rewrite, and records go
            // to a temporary file until it is written. That file is made
            // now, so a directory that cannot take it refuses the change,
            // rather than AOF reporting itself on and persisting nothing.
            let layout = aof_layout(new);
            let manifest = listed(&layout).unwrap_or_default();
            match Aof::pending_rewrite(layout, manifest, fsync) {
                Ok(aof) => shared.keyspace.set_log(Some(aof)),
                Err(e) => {
                    tracing::warn!(
                        "Redis needs to enable the AOF but can't open the append only file: {}",
                        crate::util::os_reason(&e)
                    );
                    return Err("Unable to turn on AOF. Check server logs.");
                }
            }
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
    Ok(())
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
