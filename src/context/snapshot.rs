//! Snapshots as the server runs them: SAVE, BGSAVE (now, or SCHEDULE'd
//! behind an AOF rewrite), the `save` schedule, the save at shutdown, and
//! loading `dump.rdb` (at start and for DEBUG RELOAD). The keyspace takes
//! the point-in-time copy (`Keyspace::begin_capture`, whose doc says why
//! it is consistent while clients write); `persist::rdb` frames the file.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::Instant;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::Shared;
use super::job::JobRecord;
use super::replica::SavedPoint;
use crate::config::{Config, save_points};
use crate::keyspace::Keyspace;
use crate::keyspace::snapshot::{Capture, CaptureOptions, Clocks, LoadedKey};
use crate::persist::rdb::{FileReader, FileWriter, Item, RdbError};
use crate::scripting::functions::Library;

/// How long a failed background save waits before the schedule tries
/// again (Redis's `CONFIG_BGSAVE_RETRY_DELAY`).
const RETRY_SECS: i64 = 5;

/// What SHUTDOWN asked of the save on the way out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownSave {
    /// As the `save` schedule says: a save when it has points.
    Configured,
    Save,
    NoSave,
}

/// The saves' state, for BGSAVE, LASTSAVE and INFO persistence.
pub struct Snapshots {
    running: AtomicBool,
    /// BGSAVE SCHEDULE: to start once the AOF rewrite under way ends.
    scheduled: AtomicBool,
    /// Unix seconds of the last successful save (or of the start).
    last_save: AtomicI64,
    /// Unix seconds of the last background save tried.
    last_try: AtomicI64,
    job: JobRecord,
    /// The keyspace's change counter when the last successful save began.
    dirty_at_save: AtomicU64,
    shutdown: Mutex<ShutdownSave>,
    /// A BGSAVE's capture, begun by the command, for the server's
    /// background loop to finish on a thread of its own.
    pending: Mutex<Option<Begun>>,
    asked: Notify,
    /// Set while `dump.rdb` loads at start: commands without the LOADING
    /// flag are refused.
    loading: AtomicBool,
    /// Set while a replica loads its primary's snapshot aside, serving
    /// the old data (`repl-diskless-load swapdb`).
    async_loading: AtomicBool,
    /// FLUSHALL while a snapshot is written (a BGSAVE, a full sync's):
    /// it stops at its next write, as Redis kills its RDB child, so that
    /// data the user just flushed never becomes the file left on disk or
    /// a replica's dataset.
    cancelled: AtomicBool,
    /// The file on disk was written for a disk-backed full sync, not
    /// asked for: `rdb-del-sync-files` may remove it.
    for_replicas: AtomicBool,
    /// The capture being written, for INFO's progress figures.
    current: Mutex<Option<Arc<Capture>>>,
    /// SAVEs and background saves started (`rdb_saves`).
    started: AtomicU64,
    /// Bytes commands set aside during the last BGSAVE and the last AOF
    /// rewrite's base (`rdb_last_cow_size`, `aof_last_cow_size`).
    last_aside: AtomicU64,
    aof_last_aside: AtomicU64,
    /// Set while an AOF rewrite waits for a save to end before it takes
    /// its own capture (`aof_rewrite_scheduled`).
    rewrite_waits: AtomicBool,
    /// What the last load loaded and skipped as expired.
    last_load_loaded: AtomicU64,
    last_load_expired: AtomicU64,
}

/// INFO persistence's figures of the save under way, as Redis reports its
/// child's.
#[derive(Debug, Default, Clone, Copy)]
pub struct SaveProgress {
    pub keys_saved: u64,
    pub keys_total: u64,
    /// Bytes set aside by commands so far: what a fork's copy-on-write
    /// would have copied.
    pub aside_bytes: u64,
}

impl Snapshots {
    pub fn new(started_secs: i64) -> Snapshots {
        Snapshots {
            running: AtomicBool::new(false),
            scheduled: AtomicBool::new(false),
            last_save: AtomicI64::new(started_secs),
            last_try: AtomicI64::new(0),
            job: JobRecord::default(),
            dirty_at_save: AtomicU64::new(0),
            shutdown: Mutex::new(ShutdownSave::Configured),
            pending: Mutex::new(None),
            asked: Notify::new(),
            cancelled: AtomicBool::new(false),
            for_replicas: AtomicBool::new(false),
            loading: AtomicBool::new(false),
            async_loading: AtomicBool::new(false),
            current: Mutex::new(None),
            started: AtomicU64::new(0),
            last_aside: AtomicU64::new(0),
            aof_last_aside: AtomicU64::new(0),
            rewrite_waits: AtomicBool::new(false),
            last_load_loaded: AtomicU64::new(0),
            last_load_expired: AtomicU64::new(0),
        }
    }

    /// The save under way's progress; zeros when none runs.
    pub fn progress(&self) -> SaveProgress {
        self.current
            .lock()
            .as_ref()
            .map_or_else(SaveProgress::default, |c| SaveProgress {
                keys_saved: c.keys_saved(),
                keys_total: c.keys_total(),
                aside_bytes: c.aside_bytes(),
            })
    }

    /// SAVE and BGSAVE run (`rdb_saves`).
    pub fn saves_started(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }

    /// Counts a SAVE command's save, as Redis counts it.
    pub fn count_save(&self) {
        self.started.fetch_add(1, Ordering::Relaxed);
    }

    /// `rdb_last_cow_size` and `aof_last_cow_size` (see `last_aside`).
    pub fn last_aside(&self) -> (u64, u64) {
        (
            self.last_aside.load(Ordering::Relaxed),
            self.aof_last_aside.load(Ordering::Relaxed),
        )
    }

    /// Whether an AOF rewrite waits for the save under way.
    pub fn rewrite_waits(&self) -> bool {
        self.rewrite_waits.load(Ordering::Acquire)
    }

    /// `rdb_last_load_keys_loaded` and `rdb_last_load_keys_expired`.
    pub fn last_load(&self) -> (u64, u64) {
        (
            self.last_load_loaded.load(Ordering::Relaxed),
            self.last_load_expired.load(Ordering::Relaxed),
        )
    }

    pub fn in_progress(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }

    pub fn scheduled(&self) -> bool {
        self.scheduled.load(Ordering::Acquire)
    }

    /// BGSAVE SCHEDULE while a rewrite runs.
    pub fn schedule(&self) {
        self.scheduled.store(true, Ordering::Release);
    }

    pub fn last_save(&self) -> i64 {
        self.last_save.load(Ordering::Relaxed)
    }

    /// When the BGSAVE under way started and how the last one went.
    pub fn saves(&self) -> &JobRecord {
        &self.job
    }

    /// Changes since the last save, from the keyspace's counter `dirty`.
    pub fn changes_since(&self, dirty: u64) -> u64 {
        dirty.saturating_sub(self.dirty_at_save.load(Ordering::Relaxed))
    }

    pub fn loading(&self) -> bool {
        self.loading.load(Ordering::Acquire)
    }

    /// INFO's `async_loading`.
    pub fn async_loading(&self) -> bool {
        self.async_loading.load(Ordering::Acquire)
    }

    pub fn set_loading(&self, on: bool) {
        self.loading.store(on, Ordering::Release);
    }

    pub fn set_shutdown(&self, mode: ShutdownSave) {
        *self.shutdown.lock() = mode;
    }

    /// Returns once a BGSAVE waits to be finished.
    pub async fn save_asked(&self) {
        self.asked.notified().await
    }

    /// FLUSHALL: the snapshot under way, if any, is given up (see
    /// `cancelled`); an AOF rewrite's base is not one, as Redis kills only
    /// its RDB child.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
    }

    /// Whether the file on disk was written only to feed replicas; false
    /// from then on (`rdb-del-sync-files`: it is being removed, or the
    /// setting is off and forgets it, as Redis's flag).
    pub fn take_for_replicas(&self) -> bool {
        self.for_replicas.swap(false, Ordering::AcqRel)
    }

    /// Claims the right to save; false while another save runs.
    fn claim(&self) -> bool {
        !self.running.swap(true, Ordering::AcqRel)
    }
}

/// Where the snapshot lives: `dir/dbfilename`.
pub fn rdb_path(config: &Config) -> PathBuf {
    PathBuf::from(&config.dir).join(&config.dbfilename)
}

/// Why a save failed.
#[derive(Debug)]
pub enum SaveError {
    /// Another save runs.
    InProgress,
    Io(std::io::Error),
}

impl std::fmt::Display for SaveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SaveError::InProgress => f.write_str("a background save is in progress"),
            SaveError::Io(e) => e.fmt(f),
        }
    }
}

/// The capture's options and where it goes, read once from the config.
struct Plan {
    options: CaptureOptions,
    checksum: bool,
    path: PathBuf,
}

fn plan(shared: &Shared) -> Plan {
    let config = shared.config.read();
    let policy = &config.maxmemory_policy;
    let clocks = if policy.contains("lfu") {
        Clocks::Lfu
    } else if policy.contains("lru") {
        Clocks::Lru
    } else {
        Clocks::None
    };
    Plan {
        options: CaptureOptions {
            compress: config.rdbcompression,
            clocks,
            key_delay_us: config.rdb_key_save_delay,
        },
        checksum: config.rdbchecksum,
        path: rdb_path(&config),
    }
}

/// A capture begun: the keyspace's part, the libraries and change count
/// as of the same moment.
struct Begun {
    capture: Arc<Capture>,
    functions: Vec<Bytes>,
    plan: Plan,
    /// The replication history the file says it stands in.
    point: Option<SavedPoint>,
}

fn library_codes(shared: &Shared) -> Vec<Bytes> {
    let libraries = shared.scripts.libraries.read();
    libraries.libraries().map(|l| l.code.clone()).collect()
}

/// Takes the point in time a snapshot holds; `write_rdb` writes it out,
/// and must be called, as one capture runs at a time. An AOF's base says
/// nothing of replication, as in Redis 7.0; other files say where in its
/// history they stand. On a replica the caller holds the link between
/// two of its primary's commands, so that the offset and the data agree.
fn begin(shared: &Shared, aof_base: bool) -> Begun {
    let plan = plan(shared);
    if !aof_base {
        // A FLUSHALL from here on flushed what this capture holds.
        shared.snapshots.cancelled.store(false, Ordering::Release);
    }
    let capture = shared.keyspace.begin_capture(plan.options);
    let point = (!aof_base)
        .then(|| shared.replica.saved_point(capture.repl_offset))
        .flatten();
    *shared.snapshots.current.lock() = Some(capture.clone());
    // Read after the keys' instant: a FUNCTION LOAD or DELETE between the
    // two is in the file and also after the replication offset it marks,
    // which a replica then runs again to the same libraries (refused as
    // already done); read before, the same change would be lost to it.
    let functions = library_codes(shared);
    Begun {
        capture,
        functions,
        plan,
        point,
    }
}

/// `begin`, for `dump.rdb` or a replica's full sync, between two of a
/// primary's commands. The
/// link holds its side only while it applies one, never across a wait,
/// so this waits a moment at most, on any thread.
fn begin_between_commands(shared: &Shared) -> Begun {
    let _between = loop {
        match shared.replica.apply_gate.try_write() {
            Ok(held) => break held,
            Err(_) => std::thread::yield_now(),
        }
    };
    begin(shared, false)
}

/// Writes the RDB `begun` captured to `sink` as it is encoded, a few
/// dozen keys at a time (see `keyspace::snapshot`), and ends the capture
/// (`aof_base`: as the base of an AOF, which says so in an aux field).
/// Every snapshot leaves the server this way: `dump.rdb` (SAVE, BGSAVE),
/// an AOF's base (`rdb_now`), a replica's full sync (`SaveClaim`). Gives
/// the sink back, flushed.
fn write_rdb<W: Write>(
    shared: &Shared,
    begun: &Begun,
    sink: W,
    aof_base: bool,
) -> std::io::Result<W> {
    let header = Header {
        functions: &begun.functions,
        point: begun.point.as_ref(),
        aof_base,
    };
    let sink = Stoppable {
        sink,
        stop: (!aof_base).then_some(&shared.snapshots.cancelled),
    };
    let written = match open_file(&begun.plan, &header, sink) {
        Ok(mut file) => shared
            .keyspace
            .end_capture(&begun.capture, &mut file)
            .and_then(|()| file.finish(begun.plan.checksum)),
        Err(e) => {
            shared.keyspace.abandon_capture();
            Err(e)
        }
    };
    *shared.snapshots.current.lock() = None;
    let state = &shared.snapshots;
    let last = if aof_base {
        &state.aof_last_aside
    } else {
        &state.last_aside
    };
    last.store(begun.capture.aside_bytes(), Ordering::Relaxed);
    written.map(|stoppable| stoppable.sink)
}

/// A snapshot's sink that fails its next write once `stop` is set: a
/// FLUSHALL ends the save at its next write of keys, not at its end.
struct Stoppable<'f, W> {
    sink: W,
    /// None for an AOF's base, which a FLUSHALL does not stop.
    stop: Option<&'f AtomicBool>,
}

/// The error a snapshot stopped by FLUSHALL ends with.
#[derive(Debug)]
struct Flushed;

impl std::fmt::Display for Flushed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the dataset was flushed during the save")
    }
}

impl std::error::Error for Flushed {}

/// Whether `e` is a FLUSHALL's stop rather than a failure.
fn is_flushed(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Flushed>())
}

impl<W: Write> Write for Stoppable<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.stop.is_some_and(|stop| stop.load(Ordering::Acquire)) {
            return Err(std::io::Error::other(Flushed));
        }
        self.sink.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.sink.flush()
    }
}

/// What a file says before its first database.
struct Header<'a> {
    functions: &'a [Bytes],
    point: Option<&'a SavedPoint>,
    aof_base: bool,
}

/// A file's header as Redis 7.0 writes it, up to its first database.
fn open_file<W: Write>(
    plan: &Plan,
    header: &Header<'_>,
    sink: W,
) -> std::io::Result<FileWriter<W>> {
    let mut file = FileWriter::new(sink, plan.options.compress)?;
    file.aux("redis-ver", crate::protocol::REDIS_VERSION.as_bytes())?;
    file.aux("redis-bits", b"64")?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    file.aux("ctime", now.to_string().as_bytes())?;
    let used = crate::util::alloc::memory_now().used;
    file.aux("used-mem", used.to_string().as_bytes())?;
    if let Some(point) = header.point {
        file.aux(REPL_STREAM_DB, point.stream_db.to_string().as_bytes())?;
        file.aux(REPL_ID, point.replid.as_bytes())?;
        file.aux(REPL_OFFSET, point.offset.to_string().as_bytes())?;
    }
    file.aux("aof-base", if header.aof_base { b"1" } else { b"0" })?;
    for code in header.functions {
        file.function(code)?;
    }
    Ok(file)
}

/// The aux fields of a file's replication history.
const REPL_STREAM_DB: &str = "repl-stream-db";
const REPL_ID: &str = "repl-id";
const REPL_OFFSET: &str = "repl-offset";

/// Writes what `begun` captured as `dump.rdb`; false if a FLUSHALL
/// meanwhile made it stale.
fn finish(shared: &Shared, begun: Begun) -> std::io::Result<bool> {
    let path = begun.plan.path.clone();
    let written = crate::persist::write_atomically(&path, |out| {
        match write_rdb(shared, &begun, out, false) {
            Ok(_) => Ok(!shared.snapshots.cancelled.swap(false, Ordering::AcqRel)),
            Err(e) if is_flushed(&e) => Ok(false),
            Err(e) => Err(e),
        }
    })?;
    if written {
        let state = &shared.snapshots;
        state.for_replicas.store(false, Ordering::Release);
        state
            .last_save
            .store((shared.now_ms() / 1000) as i64, Ordering::Relaxed);
        state
            .dirty_at_save
            .store(begun.capture.dirty, Ordering::Relaxed);
    }
    Ok(written)
}

/// The dataset as of now, as an RDB streamed to `sink` while clients go
/// on: an AOF rewrite's base (`aof_base`, with `aof-use-rdb-preamble
/// yes`). Waits for a save under way, as one capture runs at a time.
/// Gives the sink back, flushed, with the replication offset of that
/// moment.
pub fn rdb_now<W: Write>(shared: &Shared, sink: W, aof_base: bool) -> std::io::Result<(W, i64)> {
    let _claim = SaveClaim::wait(shared, aof_base);
    let begun = begin(shared, aof_base);
    let offset = begun.capture.repl_offset;
    write_rdb(shared, &begun, sink, aof_base).map(|sink| (sink, offset))
}

/// The right to save, held until dropped: one capture runs at a time.
pub struct SaveClaim<'s> {
    shared: &'s Shared,
}

impl<'s> SaveClaim<'s> {
    /// Waits for the save under way, if any (`rewrite`: an AOF rewrite
    /// waits, which INFO calls scheduled).
    pub fn wait(shared: &'s Shared, rewrite: bool) -> SaveClaim<'s> {
        let state = &shared.snapshots;
        while !state.claim() {
            state.rewrite_waits.store(rewrite, Ordering::Release);
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        state.rewrite_waits.store(false, Ordering::Release);
        SaveClaim { shared }
    }

    /// A diskless full sync: the snapshot as of now, between two of this
    /// server's own primary's commands if it is a replica, streamed to the
    /// sink `open` makes once the capture's offset is known (replicas are
    /// told it before the bytes). Gives the sink back, flushed.
    pub fn stream_to<W: Write>(
        &self,
        open: impl FnOnce(i64) -> std::io::Result<W>,
    ) -> std::io::Result<W> {
        let begun = begin_between_commands(self.shared);
        match open(begun.capture.repl_offset) {
            Ok(sink) => write_rdb(self.shared, &begun, sink, false),
            Err(e) => {
                self.shared.keyspace.abandon_capture();
                *self.shared.snapshots.current.lock() = None;
                Err(e)
            }
        }
    }

    /// A disk-backed full sync: the snapshot as of now saved as
    /// `dump.rdb`, as BGSAVE saves it (and counted as one); `begun` hears
    /// its offset first. The file's path once written; None if a FLUSHALL
    /// meanwhile made it stale. While the claim is held no other save
    /// replaces the file.
    pub fn save_file(&self, begun: impl FnOnce(i64)) -> std::io::Result<Option<PathBuf>> {
        start_background(self.shared);
        let capture = begin_between_commands(self.shared);
        begun(capture.capture.repl_offset);
        let path = capture.plan.path.clone();
        let result = finish(self.shared, capture);
        if matches!(result, Ok(true)) {
            self.shared
                .snapshots
                .for_replicas
                .store(true, Ordering::Release);
        }
        finished_in_background(self.shared, &result);
        result.map(|written| written.then_some(path))
    }
}

impl Drop for SaveClaim<'_> {
    fn drop(&mut self) {
        self.shared
            .snapshots
            .running
            .store(false, Ordering::Release);
    }
}

/// SAVE (and the save at shutdown): the file written before it returns.
pub fn save(shared: &Shared) -> Result<(), SaveError> {
    if !shared.snapshots.claim() {
        return Err(SaveError::InProgress);
    }
    let begun = begin_between_commands(shared);
    let result = finish(shared, begun);
    shared.snapshots.running.store(false, Ordering::Release);
    match result {
        Ok(_) => {
            tracing::info!("DB saved on disk");
            // As in Redis, a save that works clears a failed one's refusal.
            shared.snapshots.job.mark_ok();
            shared.guard.set_save_failed(false);
            Ok(())
        }
        Err(e) => {
            tracing::warn!("Failed saving the DB: {e}");
            Err(SaveError::Io(e))
        }
    }
}

/// BGSAVE: the point in time is taken before this returns; the server's
/// background loop has the rest done on a thread of its own
/// (`finish_in_background`).
pub fn background_save(shared: &Shared) -> Result<(), SaveError> {
    let state = &shared.snapshots;
    if !state.claim() {
        return Err(SaveError::InProgress);
    }
    state.scheduled.store(false, Ordering::Release);
    start_background(shared);
    let begun = begin_between_commands(shared);
    *state.pending.lock() = Some(begun);
    state.asked.notify_one();
    tracing::info!("Background saving started by pid {}", std::process::id());
    Ok(())
}

/// Finishes a BGSAVE's capture, if one waits, on a thread of its own.
pub fn finish_in_background(shared: &Arc<Shared>) {
    let Some(begun) = shared.snapshots.pending.lock().take() else {
        return;
    };
    let worker = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("rlockd-bgsave".into())
        .spawn(move || {
            let result = finish(&worker, begun);
            finished_in_background(&worker, &result);
            worker.snapshots.running.store(false, Ordering::Release);
        });
    if let Err(e) = spawned {
        tracing::warn!("Can't save in background: {e}");
        // The capture will not be written: its maps go back to normal.
        shared.keyspace.abandon_capture();
        *shared.snapshots.current.lock() = None;
        shared.snapshots.job.end(false);
        shared.guard.set_save_failed(true);
        shared.snapshots.running.store(false, Ordering::Release);
    }
}

/// Records a background save's start (`rdb_saves`, INFO's timings).
fn start_background(shared: &Shared) {
    let state = &shared.snapshots;
    state
        .last_try
        .store((shared.now_ms() / 1000) as i64, Ordering::Relaxed);
    state.job.start();
    state.started.fetch_add(1, Ordering::Relaxed);
}

/// Logs and records how a background save (BGSAVE's, or a disk-backed
/// full sync's) ended.
fn finished_in_background(shared: &Shared, result: &std::io::Result<bool>) {
    match result {
        Ok(true) => {
            tracing::info!("DB saved on disk");
            tracing::info!("Background saving terminated with success");
        }
        Ok(false) => {
            // As Redis after it kills its child (SIGUSR1): the last save's
            // status, and the refusal of writes it may cause, stay as
            // they were.
            tracing::warn!("Background saving terminated by signal 10");
            shared.snapshots.job.end_stopped();
            return;
        }
        Err(e) => tracing::warn!("Background saving error: {e}"),
    }
    shared.snapshots.job.end(result.is_ok());
    shared.guard.set_save_failed(result.is_err());
}

/// FLUSHALL with `save` points: the file made empty of keys at once
/// (its libraries stay, as FLUSHALL leaves them), while the caller holds
/// every shard, after `Snapshots::cancel` stopped any under way. `dirty`
/// is the keyspace's change counter after the flush, which counts as one
/// change after the save, as in Redis.
pub fn save_flushed(shared: &Shared, dirty: u64) -> std::io::Result<()> {
    let state = &shared.snapshots;
    let plan = plan(shared);
    let functions = library_codes(shared);
    // The offset as the flush finds it (Redis saves before it propagates
    // the flush): a server restarted from here may get the flush again,
    // to the same end.
    let point = shared.replica.saved_point(shared.replica.offset());
    let header = Header {
        functions: &functions,
        point: point.as_ref(),
        aof_base: false,
    };
    let tmp = format!("temp-flushall-{}.rdb", std::process::id());
    crate::persist::write_atomically_via(&plan.path, &tmp, |out| {
        open_file(&plan, &header, out)?.finish(plan.checksum)?;
        Ok(true)
    })?;
    state.for_replicas.store(false, Ordering::Release);
    state
        .last_save
        .store((shared.now_ms() / 1000) as i64, Ordering::Relaxed);
    state
        .dirty_at_save
        .store(dirty.saturating_sub(1), Ordering::Relaxed);
    tracing::info!("DB saved on disk");
    Ok(())
}

/// The schedule, run by the server's background loop: a SCHEDULE'd
/// BGSAVE once no rewrite runs, or the first `save` point reached.
pub fn run_schedule(shared: &Arc<Shared>) {
    let state = &shared.snapshots;
    if state.in_progress() || shared.persistence.rewrite_in_progress() {
        return;
    }
    if state.scheduled() {
        let _ = background_save(shared);
        return;
    }
    let points = save_points(&shared.config.read().save).unwrap_or_default();
    if points.is_empty() {
        return;
    }
    let now = (shared.now_ms() / 1000) as i64;
    let since_save = now - state.last_save();
    let may_retry =
        state.job.last_ok() || now - state.last_try.load(Ordering::Relaxed) > RETRY_SECS;
    if !may_retry {
        return;
    }
    let changes = state.changes_since(shared.keyspace.dirty());
    if let Some(point) = points
        .iter()
        .find(|p| changes >= p.changes.max(0) as u64 && since_save > p.seconds)
    {
        tracing::info!(
            "{} changes in {} seconds. Saving...",
            point.changes,
            point.seconds
        );
        let _ = background_save(shared);
    }
}

/// Whether the schedule needs the background loop awake.
pub fn has_schedule(shared: &Shared) -> bool {
    shared.snapshots.scheduled() || !shared.config.read().save.is_empty()
}

/// The save on the way out, as SHUTDOWN (`mode`, when it names one) or
/// the `save` schedule asks: false if it was wanted and failed. Done
/// once: a later call (the server's last step) does nothing.
pub fn save_on_shutdown(shared: &Shared, mode: Option<ShutdownSave>) -> bool {
    let mode = {
        let mut kept = shared.snapshots.shutdown.lock();
        let mode = mode.unwrap_or(*kept);
        *kept = ShutdownSave::NoSave;
        mode
    };
    let wanted = match mode {
        ShutdownSave::Configured => !shared.config.read().save.is_empty(),
        ShutdownSave::Save => true,
        ShutdownSave::NoSave => false,
    };
    if !wanted {
        return true;
    }
    tracing::info!("Saving the final RDB snapshot before exiting.");
    // A BGSAVE begun but not handed to a thread is finished here; one
    // running is waited for, then superseded.
    if let Some(begun) = shared.snapshots.pending.lock().take() {
        let _ = finish(shared, begun);
        shared.snapshots.running.store(false, Ordering::Release);
    }
    while shared.snapshots.in_progress() {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    if save(shared).is_err() {
        tracing::warn!("Error trying to save the DB, can't exit.");
        return false;
    }
    true
}

/// Why a file could not be loaded, as Redis logs it.
#[derive(Debug)]
pub enum LoadError {
    Io(std::io::Error),
    Format(RdbError),
    /// A function library that does not load, or collides.
    Function(String),
    /// A key the keyspace refused.
    Key(String),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Io(e) => write!(f, "Fatal error loading the DB: {e}. Exiting."),
            LoadError::Format(RdbError::BadHeader) => {
                f.write_str("Wrong signature or RDB version trying to load DB from file")
            }
            LoadError::Format(RdbError::Truncated { .. }) => {
                f.write_str("Short read or OOM loading DB. Unrecoverable error, aborting now.")
            }
            LoadError::Format(e @ RdbError::Checksum { .. }) => write!(f, "{e}. Aborting now."),
            LoadError::Format(e) => write!(f, "Internal error in RDB reading: {e}"),
            LoadError::Function(e) => write!(f, "Failed loading library: {e}"),
            LoadError::Key(e) => write!(f, "Failed loading a key: {e}"),
        }
    }
}

impl From<RdbError> for LoadError {
    fn from(e: RdbError) -> Self {
        LoadError::Format(e)
    }
}

/// Loads `dump.rdb` if it exists; None if there is none, else where the
/// file stands in a replication history, if it says. Its libraries
/// replace those of the same names when `merge` (DEBUG RELOAD MERGE),
/// else such a name is an error; its keys replace any of theirs.
pub fn load_file(shared: &Shared, merge: bool) -> Result<Option<Option<SavedPoint>>, LoadError> {
    let (path, verify) = {
        let config = shared.config.read();
        (rdb_path(&config), config.rdbchecksum)
    };
    let data = match std::fs::read(&path) {
        Ok(data) => data,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LoadError::Io(e)),
    };
    load_data(shared, &data, verify, merge).map(Some)
}

/// Loads a whole file's bytes (from disk, or a primary's full sync),
/// logging as Redis does; where it stands in a replication history, if
/// it says.
pub fn load_data(
    shared: &Shared,
    data: &[u8],
    verify: bool,
    merge: bool,
) -> Result<Option<SavedPoint>, LoadError> {
    let started = Instant::now();
    shared.keyspace.set_loading(true);
    let loaded = load_bytes(shared, &mut Dest::live(shared), data, verify, merge);
    shared.keyspace.set_loading(false);
    let counts = loaded?;
    counts.log(&shared.snapshots);
    tracing::info!(
        "DB loaded from disk: {:.3} seconds",
        started.elapsed().as_secs_f64()
    );
    Ok(counts.point.complete(shared.keyspace.databases()))
}

/// Where a load puts what it reads: the keyspace itself, or one aside
/// (`repl-diskless-load swapdb`) with the libraries kept beside it.
struct Dest<'k> {
    keys: &'k Keyspace,
    /// Staged: the libraries read, added at the swap; None: added as read.
    libraries: Option<Vec<Library>>,
    /// The append-only file's base: its keys are kept past their deadline,
    /// as Redis keeps them, for the records after it replay over every key
    /// it held (a renewal's PEXPIREAT must find the key whose old deadline
    /// passed while the server was down). A snapshot skips them.
    aof_base: bool,
}

impl<'k> Dest<'k> {
    fn live(shared: &'k Shared) -> Dest<'k> {
        Dest {
            keys: &shared.keyspace,
            libraries: None,
            aof_base: false,
        }
    }
}

fn add_libraries(shared: &Shared, libraries: Vec<Library>, merge: bool) -> Result<(), LoadError> {
    shared
        .scripts
        .libraries
        .write()
        .add(libraries, merge)
        .map_err(|_| LoadError::Function("a library or function that exists already".into()))
}

/// `repl-diskless-load swapdb`: a primary's snapshot is loaded aside
/// while clients go on with the old data (INFO's `async_loading`), then
/// swapped in at once, as Redis 7.0 does; the old data is dropped after.
pub fn load_swapping(shared: &Shared, data: &[u8], verify: bool) -> Result<(), LoadError> {
    let started = Instant::now();
    let staged = shared.keyspace.staging();
    let mut dest = Dest {
        keys: &staged,
        libraries: Some(Vec::new()),
        aof_base: false,
    };
    shared
        .snapshots
        .async_loading
        .store(true, Ordering::Release);
    let loaded = load_bytes(shared, &mut dest, data, verify, false).and_then(|counts| {
        // No capture may walk maps while they move.
        let _claim = SaveClaim::wait(shared, false);
        // Held until the libraries and INFO's flag agree with the keys: a
        // client that reads a new key must not then see old functions or
        // `async_loading:1`.
        let mut all = lock_all(shared);
        all.replace_all(&staged)
            .map_err(|e| LoadError::Key(e.to_string()))?;
        shared.scripts.libraries.write().clear();
        add_libraries(shared, dest.libraries.take().unwrap_or_default(), false)?;
        shared
            .snapshots
            .async_loading
            .store(false, Ordering::Release);
        Ok(counts)
    });
    // A load that failed swaps nothing, and is no longer under way.
    shared
        .snapshots
        .async_loading
        .store(false, Ordering::Release);
    let counts = loaded?;
    drop(staged);
    counts.log(&shared.snapshots);
    tracing::info!(
        "MASTER <-> REPLICA sync: Swapped the old data for the new one in {:.3} seconds",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Keys loaded per hold of their shards.
const LOAD_BATCH: usize = 1024;

/// `key-load-delay`, paid per batch rather than per key: a sleep per key
/// would cost a system call each and oversleep by far more than asked.
#[derive(Clone, Copy)]
struct LoadPace {
    per_key_us: i64,
}

impl LoadPace {
    fn of(config: &Config) -> LoadPace {
        LoadPace {
            per_key_us: config.key_load_delay,
        }
    }

    /// Redis sleeps `n` microseconds per key, or for `-n`, one in `n`
    /// keys sleeps one microsecond: the same total, in one sleep.
    fn after(self, keys: usize) {
        let keys = keys as u64;
        let micros = match self.per_key_us {
            0 => return,
            n if n > 0 => keys * n as u64,
            n => keys / n.unsigned_abs(),
        };
        std::thread::sleep(std::time::Duration::from_micros(micros));
    }
}

fn load_batch(
    shared: &Shared,
    dest: &Dest<'_>,
    batch: &mut Vec<LoadedKey>,
    merge: bool,
    pace: LoadPace,
) -> Result<u64, LoadError> {
    pace.after(batch.len());
    dest.keys
        // A replica keeps keys past their deadline, as Redis's does: they
        // read as gone, and the primary's DELs remove them.
        .load_keys(batch, shared.replica.is_replica() || dest.aof_base, merge)
        .map_err(|e| LoadError::Key(e.to_string()))
}

/// What a load loaded and skipped.
struct Counts {
    keys: u64,
    expired: u64,
    /// Empty collections, which no key holds.
    empty: u64,
    /// The bytes the RDB took (an AOF's commands may follow).
    length: usize,
    point: PointFields,
}

/// The replication aux fields a file holds, as read.
#[derive(Default)]
struct PointFields {
    replid: Option<String>,
    offset: Option<i64>,
    stream_db: Option<i64>,
}

impl PointFields {
    /// Takes one aux field if it is one of these; as Redis, an id of
    /// another length than 40 is ignored.
    fn take(&mut self, name: &[u8], value: &[u8]) {
        let number = || std::str::from_utf8(value).ok()?.parse::<i64>().ok();
        match std::str::from_utf8(name) {
            Ok(REPL_ID) if value.len() == 40 => {
                self.replid = Some(String::from_utf8_lossy(value).into_owned())
            }
            Ok(REPL_OFFSET) => self.offset = number(),
            Ok(REPL_STREAM_DB) => self.stream_db = number(),
            _ => {}
        }
    }

    /// The point, when the file gave all of it, sane: Redis takes one
    /// back only with an id, an offset and a database.
    fn complete(self, databases: usize) -> Option<SavedPoint> {
        let stream_db = usize::try_from(self.stream_db?)
            .ok()
            .filter(|&db| db < databases)?;
        Some(SavedPoint {
            replid: self.replid?,
            offset: self.offset.filter(|&o| o >= 0)?,
            stream_db,
        })
    }
}

impl Counts {
    /// Logs the load as Redis does, and keeps its figures for INFO.
    fn log(&self, state: &Snapshots) {
        let Counts {
            keys,
            expired,
            empty,
            ..
        } = self;
        state.last_load_loaded.store(*keys, Ordering::Relaxed);
        state.last_load_expired.store(*expired, Ordering::Relaxed);
        if *empty > 0 {
            tracing::info!(
                "Done loading RDB, keys loaded: {keys}, keys expired: {expired}, empty keys skipped: {empty}."
            );
        } else {
            tracing::info!("Done loading RDB, keys loaded: {keys}, keys expired: {expired}.");
        }
    }
}

/// Loads the RDB an AOF's base starts with (the caller has the keyspace
/// loading); the bytes it took, after which commands may follow.
pub fn load_aof_preamble(shared: &Shared, data: &[u8]) -> Result<usize, LoadError> {
    let verify = shared.config.read().rdbchecksum;
    let mut dest = Dest {
        aof_base: true,
        ..Dest::live(shared)
    };
    let counts = load_bytes(shared, &mut dest, data, verify, false)?;
    counts.log(&shared.snapshots);
    Ok(counts.length)
}

/// Loads a whole file.
fn load_bytes(
    shared: &Shared,
    dest: &mut Dest<'_>,
    data: &[u8],
    verify: bool,
    merge: bool,
) -> Result<Counts, LoadError> {
    let mut reader = FileReader::open(data)?;
    let limits = shared.keyspace.limits();
    let databases = shared.keyspace.databases() as u64;
    let (heap, pace) = {
        let config = shared.config.read();
        (config.lua_heap_limit as usize, LoadPace::of(&config))
    };
    let (mut db, mut read, mut expired, mut empty) = (0, 0, 0, 0);
    let mut point = PointFields::default();
    let mut batch = Vec::with_capacity(LOAD_BATCH);
    loop {
        let at = reader.decoder().pos();
        match reader.next()? {
            Item::Aux { name, value } => {
                if &*name == b"redis-ver" {
                    tracing::info!(
                        "Loading RDB produced by version {}",
                        String::from_utf8_lossy(&value)
                    );
                }
                point.take(&name, &value);
            }
            Item::SelectDb(n) => {
                if n >= databases {
                    return Err(RdbError::Corrupt {
                        at,
                        what: "FATAL: Data file was created with a Redis server configured to handle more than databases",
                    }
                    .into());
                }
                db = n as usize;
            }
            Item::ResizeDb { .. } => {}
            Item::Function(code) => {
                let library = shared
                    .scripts
                    .prepare_library(Bytes::copy_from_slice(&code), heap)
                    .map_err(|e| LoadError::Function(e.to_string()))?;
                match &mut dest.libraries {
                    Some(staged) => staged.push(library),
                    None => add_libraries(shared, vec![library], merge)?,
                }
            }
            Item::Key { kind, key, meta } => {
                let value = match crate::keyspace::dump::read_value(kind, reader.decoder(), &limits)
                {
                    Ok(value) => value,
                    // Redis skips an empty collection too.
                    Err(RdbError::EmptyKey { .. }) => {
                        empty += 1;
                        continue;
                    }
                    Err(e) => return Err(e.into()),
                };
                read += 1;
                batch.push(LoadedKey {
                    db,
                    key: key.into_owned(),
                    value,
                    meta,
                });
                if batch.len() == LOAD_BATCH {
                    expired += load_batch(shared, dest, &mut batch, merge, pace)?;
                }
            }
            Item::End => break,
        }
    }
    expired += load_batch(shared, dest, &mut batch, merge, pace)?;
    let length = reader.end_offset();
    reader.finish(verify)?;
    Ok(Counts {
        keys: read - expired,
        expired,
        empty,
        length,
        point,
    })
}

/// Empties the keyspace and the function libraries, before a load that
/// replaces them.
pub fn empty_all(shared: &Shared) {
    let mut locked = lock_all(shared);
    crate::keyspace::flush_all(&mut locked, None);
    drop(locked);
    shared.scripts.libraries.write().clear();
}

/// Every shard, once no busy script holds one (a script past the busy
/// threshold refuses; it ends or is killed, so asking again is waiting
/// for it).
fn lock_all(shared: &Shared) -> crate::keyspace::Locked<'_> {
    loop {
        match shared.keyspace.lock(&crate::keyspace::LockPlan::All) {
            Ok(locked) => return locked,
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
        }
    }
}

/// Whether any database holds a key.
pub fn holds_keys(shared: &Shared) -> bool {
    let databases = shared.config.read().databases;
    lock_all(shared)
        .shards()
        .any(|shard| (0..databases).any(|db| shard.db_len(db) > 0))
}

/// DEBUG RELOAD: saves (unless `save` is off), empties the keyspace and
/// the libraries (unless `flush` is off), and loads the file back.
pub fn reload(shared: &Shared, save_first: bool, flush: bool, merge: bool) -> Result<(), String> {
    if save_first {
        save(shared).map_err(|_| "Error trying to save the DB".to_string())?;
    }
    if flush {
        empty_all(shared);
    }
    match load_file(shared, merge) {
        Ok(_) => {
            tracing::info!("DB reloaded by DEBUG RELOAD");
            Ok(())
        }
        Err(e) => {
            tracing::warn!("{e}");
            Err("Error trying to load the RDB dump, check server logs.".to_string())
        }
    }
}
