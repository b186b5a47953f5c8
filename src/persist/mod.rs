//! The append-only file, in Redis's AOF format (RESP commands, so
//! `redis-check-aof` and redis-server read it): one file, `dir/appendfilename`,
//! written by a thread of its own. Under `appendfsync always` a client's
//! reply waits until what it wrote is on disk (`wait_durable`); the writer
//! fsyncs whatever accumulated meanwhile at once (group commit).
//!
//! What is logged is decided above (the keyspace logs each write as the
//! state it left the keys in); this module knows only records, databases
//! and bytes.
//!
//! `rdb` is Redis's snapshot format at the level of bytes, which DUMP
//! payloads, `dump.rdb` and the AOF's preamble share.

pub mod load;
pub mod rdb;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// `appendfsync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fsync {
    Always,
    EverySec,
    No,
}

impl Fsync {
    /// In Redis's order, which its error message lists.
    pub const NAMES: &[&str] = &["everysec", "always", "no"];

    pub fn parse(name: &str) -> Option<Fsync> {
        match name.to_ascii_lowercase().as_str() {
            "always" => Some(Fsync::Always),
            "everysec" => Some(Fsync::EverySec),
            "no" => Some(Fsync::No),
            _ => None,
        }
    }

    fn from_u8(n: u8) -> Fsync {
        match n {
            0 => Fsync::Always,
            1 => Fsync::EverySec,
            _ => Fsync::No,
        }
    }

    fn to_u8(self) -> u8 {
        self as u8
    }
}

/// Commands that are logged together (one command's, one transaction's or
/// one script's effects), each in its database (`None`: any). More than
/// one is wrapped in MULTI/EXEC, so a torn tail never replays half of them.
#[derive(Default)]
pub struct Batch {
    commands: Vec<(Option<usize>, Vec<u8>)>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    pub fn push(&mut self, db: Option<usize>, args: &[&[u8]]) {
        let mut out = Vec::with_capacity(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
        encode(&mut out, args);
        self.commands.push((db, out));
    }
}

/// One command as a RESP array of bulk strings.
pub fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    let mut n = itoa::Buffer::new();
    out.push(b'*');
    out.extend_from_slice(n.format(args.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for arg in args {
        out.push(b'$');
        out.extend_from_slice(n.format(arg.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// Bytes bound for one file, and the database its last SELECT chose
/// there, so that a SELECT is written only when the database changes.
#[derive(Default)]
pub struct Stream {
    pub buf: Vec<u8>,
    db: Option<usize>,
}

impl Stream {
    /// Appends a batch, as one transaction if it has several commands.
    pub fn put(&mut self, batch: &Batch) {
        self.put_as(batch, batch.commands.len() > 1);
    }

    /// Appends a batch without MULTI/EXEC (a snapshot is read whole or not
    /// at all).
    pub fn put_plain(&mut self, batch: &Batch) {
        self.put_as(batch, false);
    }

    fn put_as(&mut self, batch: &Batch, wrap: bool) {
        if wrap {
            encode(&mut self.buf, &[b"MULTI"]);
        }
        for (db, command) in &batch.commands {
            if let Some(db) = *db
                && self.db != Some(db)
            {
                encode(&mut self.buf, &[b"SELECT", db.to_string().as_bytes()]);
                self.db = Some(db);
            }
            self.buf.extend_from_slice(command);
        }
        if wrap {
            encode(&mut self.buf, &[b"EXEC"]);
        }
    }
}

/// What the writer has not written yet, and the rewrite's copy of it.
struct Inner {
    pending: Stream,
    /// While a rewrite runs, every record also goes here: it is appended
    /// to the new file once the snapshot is written.
    rewrite: Option<Stream>,
    /// Batches appended so far.
    seq: u64,
    /// Bumped when a rewrite replaces the file, so the writer never writes
    /// bytes meant for the old file (they are in the new one already) to
    /// the new one.
    generation: u64,
    /// False until the first rewrite of an AOF switched on at run time
    /// has made the file: records go to the rewrite buffer alone.
    has_file: bool,
    stop: bool,
}

/// The file being appended to (`None` until the first rewrite of an AOF
/// switched on at run time has written it).
struct Target {
    file: Option<File>,
    generation: u64,
}

pub struct Aof {
    path: PathBuf,
    fsync: AtomicU8,
    inner: Mutex<Inner>,
    wake: Condvar,
    target: Mutex<Target>,
    durable: tokio::sync::watch::Sender<u64>,
    last_write_ok: AtomicBool,
    current_size: AtomicU64,
    /// The size after the last rewrite (or at start): auto-rewrite's base.
    base_size: AtomicU64,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Aof {
    /// Appends to the existing file at `path` (created if missing).
    pub fn open(path: &Path, fsync: Fsync) -> std::io::Result<Arc<Aof>> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let size = file.metadata()?.len();
        Ok(Self::start(path, fsync, Some(file), size))
    }

    /// An AOF switched on at run time: nothing is written until the rewrite
    /// the caller starts at once (`begin_rewrite`) has made the file.
    pub fn pending_rewrite(path: &Path, fsync: Fsync) -> Arc<Aof> {
        let aof = Self::start(path, fsync, None, 0);
        aof.begin_rewrite();
        aof
    }

    fn start(path: &Path, fsync: Fsync, file: Option<File>, size: u64) -> Arc<Aof> {
        let aof = Arc::new(Aof {
            path: path.to_path_buf(),
            fsync: AtomicU8::new(fsync.to_u8()),
            inner: Mutex::new(Inner {
                pending: Stream::default(),
                rewrite: None,
                seq: 0,
                generation: 0,
                has_file: file.is_some(),
                stop: false,
            }),
            wake: Condvar::new(),
            target: Mutex::new(Target {
                file,
                generation: 0,
            }),
            durable: tokio::sync::watch::Sender::new(0),
            last_write_ok: AtomicBool::new(true),
            current_size: AtomicU64::new(size),
            base_size: AtomicU64::new(size),
            writer: Mutex::new(None),
        });
        let writer = aof.clone();
        let handle = std::thread::Builder::new()
            .name("rlockd-aof".into())
            .spawn(move || writer.write_loop())
            .expect("the AOF writer thread starts");
        *aof.writer.lock() = Some(handle);
        aof
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn fsync(&self) -> Fsync {
        Fsync::from_u8(self.fsync.load(Ordering::Relaxed))
    }

    pub fn set_fsync(&self, fsync: Fsync) {
        self.fsync.store(fsync.to_u8(), Ordering::Relaxed);
    }

    /// Logs a batch. Called while the shards it describes are still held,
    /// so batches about the same keys are logged in the order they happened.
    pub fn append(&self, batch: &Batch) {
        let mut inner = self.inner.lock();
        if let Some(rewrite) = &mut inner.rewrite {
            rewrite.put(batch);
        }
        if inner.has_file {
            inner.pending.put(batch);
        }
        inner.seq += 1;
        drop(inner);
        self.wake.notify_one();
    }

    /// Waits until everything appended so far is on disk (`always`; the
    /// other policies never make a reply wait).
    pub async fn wait_durable(&self) {
        if self.fsync() != Fsync::Always {
            return;
        }
        let target = self.inner.lock().seq;
        let mut rx = self.durable.subscribe();
        let _ = rx.wait_for(|&durable| durable >= target).await;
    }

    /// Writes out and fsyncs what is pending, and stops the writer.
    pub fn close(&self) {
        self.inner.lock().stop = true;
        self.wake.notify_one();
        if let Some(writer) = self.writer.lock().take() {
            let _ = writer.join();
        }
        let mut target = self.target.lock();
        if let Some(file) = &mut target.file {
            let _ = file.sync_data();
        }
        target.file = None;
        // Nothing more reaches the file: nobody waits for it.
        self.durable.send_replace(u64::MAX);
    }

    /// Drops what is not written yet and the file, as a crash would.
    pub fn abandon(&self) {
        {
            let mut inner = self.inner.lock();
            inner.stop = true;
            inner.pending.buf.clear();
            inner.generation += 1;
        }
        self.wake.notify_one();
        self.target.lock().file = None;
        // Nobody waits for a reply that will not be written.
        self.durable.send_replace(u64::MAX);
    }

    fn write_loop(&self) {
        let mut last_sync = Instant::now();
        let mut unsynced = false;
        loop {
            let (data, seq, generation) = {
                let mut inner = self.inner.lock();
                while inner.pending.buf.is_empty() && !inner.stop {
                    if unsynced && self.fsync() == Fsync::EverySec {
                        let left = Duration::from_secs(1).saturating_sub(last_sync.elapsed());
                        if self.wake.wait_for(&mut inner, left).timed_out() {
                            break;
                        }
                    } else {
                        self.wake.wait(&mut inner);
                    }
                }
                let data = std::mem::take(&mut inner.pending.buf);
                (data, inner.seq, inner.generation)
            };
            let mut target = self.target.lock();
            if target.generation != generation {
                // A rewrite took these bytes into the new file.
                continue;
            }
            let Some(file) = &mut target.file else {
                if self.inner.lock().stop {
                    return;
                }
                continue;
            };
            if let Err(e) = file.write_all(&data) {
                self.write_failed(&e);
                continue;
            }
            self.current_size
                .fetch_add(data.len() as u64, Ordering::Relaxed);
            unsynced |= !data.is_empty();
            let policy = self.fsync();
            let due = policy == Fsync::Always
                || (policy == Fsync::EverySec && last_sync.elapsed() >= Duration::from_secs(1));
            if unsynced && due {
                if let Err(e) = file.sync_data() {
                    self.write_failed(&e);
                    continue;
                }
                last_sync = Instant::now();
                unsynced = false;
            }
            self.last_write_ok.store(true, Ordering::Relaxed);
            drop(target);
            self.durable.send_replace(seq);
            if data.is_empty() && self.inner.lock().stop {
                return;
            }
        }
    }

    /// Under `always` an acknowledged write must be on disk, and this one
    /// cannot be: like Redis, stop rather than acknowledge it.
    fn write_failed(&self, e: &std::io::Error) {
        self.last_write_ok.store(false, Ordering::Relaxed);
        tracing::error!("Error writing to the AOF file: {e}");
        if self.fsync() == Fsync::Always {
            tracing::error!(
                "Can't recover from AOF write error when the AOF fsync policy is 'always'. Exiting..."
            );
            std::process::exit(1);
        }
        std::thread::sleep(Duration::from_millis(100));
    }

    /// Starts copying every record into the rewrite buffer (if it is not
    /// already: an AOF switched on at run time starts with it).
    pub fn begin_rewrite(&self) {
        self.inner
            .lock()
            .rewrite
            .get_or_insert_with(Stream::default);
    }

    /// Ends a rewrite whose snapshot is in `snapshot` (at `tmp`): appends the
    /// records logged meanwhile, makes it the file, and carries on there.
    pub fn finish_rewrite(
        &self,
        snapshot: std::io::Result<(File, PathBuf)>,
    ) -> std::io::Result<()> {
        let result = snapshot.and_then(|(mut file, tmp)| {
            let mut target = self.target.lock();
            let mut inner = self.inner.lock();
            let tail = inner.rewrite.take().unwrap_or_default();
            file.write_all(&tail.buf)?;
            file.sync_all()?;
            std::fs::rename(&tmp, &self.path)?;
            sync_dir(&self.path);
            let size = file.metadata()?.len();
            target.file = Some(file);
            target.generation += 1;
            inner.generation += 1;
            inner.has_file = true;
            // Everything pending is in the new file, after the snapshot.
            inner.pending = Stream {
                buf: Vec::new(),
                db: tail.db,
            };
            self.current_size.store(size, Ordering::Relaxed);
            self.base_size.store(size, Ordering::Relaxed);
            self.durable.send_replace(inner.seq);
            Ok(())
        });
        // A failed rewrite leaves the file as it was; an AOF still waiting
        // for its first file keeps buffering for the next attempt.
        if result.is_err() {
            let mut inner = self.inner.lock();
            if inner.has_file {
                inner.rewrite = None;
            }
        }
        result
    }

    /// Past `auto-aof-rewrite-min-size` and grown by `percent` % since the
    /// last rewrite (0: never).
    pub fn wants_rewrite(&self, percent: u64, min_size: u64) -> bool {
        let (size, base) = (
            self.current_size.load(Ordering::Relaxed),
            self.base_size.load(Ordering::Relaxed),
        );
        percent > 0 && size >= min_size && size.saturating_sub(base) * 100 >= base.max(1) * percent
    }

    /// `aof_last_write_status`.
    pub fn last_write_ok(&self) -> bool {
        self.last_write_ok.load(Ordering::Relaxed)
    }

    /// The file's size now, and after the last rewrite.
    pub fn sizes(&self) -> (u64, u64) {
        (
            self.current_size.load(Ordering::Relaxed),
            self.base_size.load(Ordering::Relaxed),
        )
    }
}

/// The temporary file a rewrite writes its snapshot to, next to `path`.
pub fn rewrite_temp(path: &Path) -> std::io::Result<(File, PathBuf)> {
    let name = format!("temp-rewriteaof-{}.aof", std::process::id());
    let tmp = path.with_file_name(name);
    let file = File::create(&tmp)?;
    Ok((file, tmp))
}

/// Makes a rename durable (best effort: not every file system allows it).
fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent()
        && let Ok(d) = File::open(if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        })
    {
        let _ = d.sync_all();
    }
}

/// Writes a finished snapshot as the file when no AOF is running
/// (BGREWRITEAOF with `appendonly no`).
pub fn install_snapshot(path: &Path, file: File, tmp: &Path) -> std::io::Result<()> {
    file.sync_all()?;
    std::fs::rename(tmp, path)?;
    sync_dir(path);
    Ok(())
}

/// Writes `bytes` as the file at `path` whole or not at all: to a
/// temporary file beside it (`temp-<pid>.rdb`, Redis's name), fsynced,
/// then renamed over it.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_file_name(format!("temp-{}.rdb", std::process::id()));
    let written = File::create(&tmp).and_then(|mut file| {
        file.write_all(bytes)?;
        install_snapshot(path, file, &tmp)
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}
