//! The append-only file as Redis 7.0 lays it out (`manifest`: a base file,
//! an RDB or commands, then incremental files of RESP commands, so
//! `redis-check-aof` and redis-server read it), appended to by a thread
//! of its own. Under `appendfsync always` a client's
//! reply waits until what it wrote is on disk (`wait_durable`); the writer
//! fsyncs whatever accumulated meanwhile at once (group commit).
//!
//! What is logged is decided above (the keyspace logs each write as the
//! state it left the keys in); this module knows only records, databases
//! and bytes.
//!
//! `backlog` is the replication stream and its recent bytes, which
//! replicas read.
//!
//! `rdb` is Redis's snapshot format at the level of bytes, which DUMP
//! payloads, `dump.rdb` and the AOF's preamble share.

pub mod backlog;
pub mod load;
pub mod manifest;
pub mod rdb;

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

pub use manifest::{Layout, Manifest};

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
    commands: Vec<Record>,
}

/// Who reads a command of a batch.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    Everyone,
    /// The replication stream only: PUBLISH, which changes no key.
    Replicas,
    /// The file only: the DEL before a key recreated whole that a
    /// replica knows is not there.
    File,
}

struct Record {
    db: Option<usize>,
    bytes: Vec<u8>,
    audience: Audience,
    /// `Some`: one of two forms of the same change, kept or dropped by
    /// `settle` (true: the commands that made it, false: the state it
    /// left).
    as_commands: Option<bool>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// Whether the file takes any of it.
    pub fn has_file_records(&self) -> bool {
        self.commands
            .iter()
            .any(|r| r.audience != Audience::Replicas)
    }

    /// Whether replicas take any of it.
    pub fn has_replica_records(&self) -> bool {
        self.commands.iter().any(|r| r.audience != Audience::File)
    }

    pub fn push(&mut self, db: Option<usize>, args: &[&[u8]]) {
        self.push_for(Audience::Everyone, db, args);
    }

    pub fn push_for(&mut self, audience: Audience, db: Option<usize>, args: &[&[u8]]) {
        let mut bytes = Vec::with_capacity(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
        encode(&mut bytes, args);
        self.commands.push(Record {
            db,
            bytes,
            audience,
            as_commands: None,
        });
    }

    /// How many commands it holds so far (where `mark_form` starts).
    pub fn len(&self) -> usize {
        self.commands.len()
    }

    /// Marks the commands from `start` on as one form of a change made
    /// before it is known which form its readers may take (see `settle`).
    pub fn mark_form(&mut self, start: usize, as_commands: bool) {
        for record in self.commands.iter_mut().skip(start) {
            record.as_commands = Some(as_commands);
        }
    }

    /// Keeps one form of each change marked with two: the commands that
    /// made it where records are replayed in order over the state they
    /// were made from, else the state it left.
    pub fn settle(&mut self, as_commands: bool) {
        self.commands
            .retain(|r| r.as_commands.is_none_or(|form| form == as_commands));
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
    fn select(&mut self, db: Option<usize>) {
        if let Some(db) = db
            && self.db != Some(db)
        {
            encode(&mut self.buf, &[b"SELECT", db.to_string().as_bytes()]);
            self.db = Some(db);
        }
    }

    /// Appends what `reader` takes of a batch, as one transaction if
    /// that is several commands.
    pub fn put(&mut self, batch: &Batch, reader: Audience) {
        let taken = batch.commands.iter().filter(|r| r.takes(reader)).count();
        self.put_as(batch, reader, taken > 1);
    }

    /// Appends a batch without MULTI/EXEC (a snapshot is read whole or not
    /// at all).
    pub fn put_plain(&mut self, batch: &Batch) {
        self.put_as(batch, Audience::Everyone, false);
    }

    fn put_as(&mut self, batch: &Batch, reader: Audience, wrap: bool) {
        let mut taken = batch.commands.iter().filter(|r| r.takes(reader));
        if wrap {
            // As Redis: the first command's database is selected before
            // MULTI, so a reader sees the transaction start in its database.
            if let Some(first) = taken.clone().next() {
                self.select(first.db);
            }
            encode(&mut self.buf, &[b"MULTI"]);
        }
        for record in &mut taken {
            self.select(record.db);
            self.buf.extend_from_slice(&record.bytes);
        }
        if wrap {
            encode(&mut self.buf, &[b"EXEC"]);
        }
    }
}

impl Record {
    /// Whether `reader` (the file or the replicas; `Everyone`: both, as a
    /// snapshot) takes this command.
    fn takes(&self, reader: Audience) -> bool {
        reader == Audience::Everyone
            || self.audience == Audience::Everyone
            || self.audience == reader
    }
}

/// What the writer has not written yet.
struct Inner {
    pending: Stream,
    /// Batches appended so far.
    seq: u64,
    stop: bool,
}

/// The incremental file being appended to, and the manifest that lists it.
struct Target {
    file: Option<File>,
    manifest: Manifest,
}

pub struct Aof {
    layout: Layout,
    fsync: AtomicU8,
    inner: Mutex<Inner>,
    wake: Condvar,
    target: Mutex<Target>,
    /// An AOF switched on at run time appends to a temporary file that
    /// no manifest lists until the first rewrite has written a base.
    /// Changed with `target` held; read without it by every write that
    /// records list ops (`awaiting_base`), which must not wait for it.
    awaiting_base: AtomicBool,
    durable: tokio::sync::watch::Sender<u64>,
    last_write_ok: AtomicBool,
    current_size: AtomicU64,
    /// The size after the last rewrite (or the base's at start):
    /// auto-rewrite's base.
    base_size: AtomicU64,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Aof {
    /// Appends to the last incremental file `manifest` lists, first
    /// listing a new one if it has none (persisting the manifest).
    pub fn open(layout: Layout, mut manifest: Manifest, fsync: Fsync) -> std::io::Result<Arc<Aof>> {
        let (name, created) = match manifest.incrs.last() {
            Some(last) => (last.name.clone(), false),
            None => (manifest.new_incr(&layout.stem), true),
        };
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(layout.file(&name))?;
        layout.persist(&manifest)?;
        if created {
            tracing::info!("Creating AOF incr file {name} on server start");
        } else {
            tracing::info!("Opening AOF incr file {name} on server start");
        }
        let (size, base) = layout.sizes(&manifest);
        Ok(Self::start(
            layout,
            manifest,
            fsync,
            file,
            false,
            (size, base),
        ))
    }

    /// An AOF switched on at run time: records go to the temporary
    /// incremental file until the rewrite the caller starts at once has
    /// written a base (`manifest`: what the directory lists now, if anything).
    pub fn pending_rewrite(
        layout: Layout,
        manifest: Manifest,
        fsync: Fsync,
    ) -> std::io::Result<Arc<Aof>> {
        std::fs::create_dir_all(&layout.dir)?;
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(layout.temp_incr_path())?;
        Ok(Self::start(layout, manifest, fsync, file, true, (0, 0)))
    }

    fn start(
        layout: Layout,
        manifest: Manifest,
        fsync: Fsync,
        file: File,
        awaiting_base: bool,
        (size, base): (u64, u64),
    ) -> Arc<Aof> {
        let aof = Arc::new(Aof {
            layout,
            fsync: AtomicU8::new(fsync.to_u8()),
            inner: Mutex::new(Inner {
                pending: Stream::default(),
                seq: 0,
                stop: false,
            }),
            wake: Condvar::new(),
            target: Mutex::new(Target {
                file: Some(file),
                manifest,
            }),
            awaiting_base: AtomicBool::new(awaiting_base),
            durable: tokio::sync::watch::Sender::new(0),
            last_write_ok: AtomicBool::new(true),
            current_size: AtomicU64::new(size),
            base_size: AtomicU64::new(base),
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

    pub fn layout(&self) -> &Layout {
        &self.layout
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
        inner.pending.put(batch, Audience::File);
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
            {
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
            }
            // The bytes are taken while the file is held, so a rewrite
            // switching files (`begin_rewrite`) never strands them between
            // the two: what was appended before the switch goes to the old
            // file, encoded for it.
            let mut target = self.target.lock();
            let (data, seq, stop) = {
                let mut inner = self.inner.lock();
                (
                    std::mem::take(&mut inner.pending.buf),
                    inner.seq,
                    inner.stop,
                )
            };
            let Some(file) = &mut target.file else {
                if stop {
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
            if data.is_empty() && stop {
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

    /// Starts a rewrite: from now on records go to a new incremental file,
    /// listed after the current one, so the base the rewrite writes next
    /// plus that file are the whole dataset. (An AOF waiting for its first
    /// base keeps its temporary file, which has every record already.)
    pub fn begin_rewrite(&self) -> std::io::Result<()> {
        let mut target = self.target.lock();
        if self.awaiting_base() {
            return Ok(());
        }
        let mut manifest = target.manifest.clone();
        let name = manifest.new_incr(&self.layout.stem);
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(self.layout.file(&name))?;
        self.layout.persist(&manifest)?;
        tracing::info!("Creating AOF incr file {name} on background rewrite");
        let mut inner = self.inner.lock();
        let rest = std::mem::take(&mut inner.pending.buf);
        if let Some(old) = &mut target.file {
            old.write_all(&rest)?;
            old.sync_data()?;
            self.current_size
                .fetch_add(rest.len() as u64, Ordering::Relaxed);
        }
        // The new file starts with no database selected.
        inner.pending = Stream::default();
        target.file = Some(file);
        target.manifest = manifest;
        self.durable.send_replace(inner.seq);
        Ok(())
    }

    /// Ends a rewrite whose base is written at `tmp` (in `format`): lists
    /// it as the new base, and retires the files it replaces.
    pub fn finish_rewrite(&self, tmp: &Path, format: BaseFormat) -> std::io::Result<()> {
        let mut target = self.target.lock();
        let mut manifest = target.manifest.clone();
        let base = install_base(&self.layout, &mut manifest, tmp, format)?;
        if self.awaiting_base() {
            let name = manifest.new_incr(&self.layout.stem);
            std::fs::rename(self.layout.temp_incr_path(), self.layout.file(&name))?;
        }
        manifest.retire_incrs(true);
        if let Err(e) = self.layout.persist(&manifest) {
            let _ = std::fs::remove_file(self.layout.file(&base));
            return Err(e);
        }
        self.awaiting_base.store(false, Ordering::Release);
        let _ = self.layout.delete_history(&mut manifest);
        let (size, _) = self.layout.sizes(&manifest);
        target.manifest = manifest;
        self.current_size.store(size, Ordering::Relaxed);
        self.base_size.store(size, Ordering::Relaxed);
        Ok(())
    }

    /// Whether a rewrite must still write the first base.
    pub fn awaiting_base(&self) -> bool {
        self.awaiting_base.load(Ordering::Acquire)
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

    /// The files' size now, and after the last rewrite.
    pub fn sizes(&self) -> (u64, u64) {
        (
            self.current_size.load(Ordering::Relaxed),
            self.base_size.load(Ordering::Relaxed),
        )
    }
}

/// How a rewrite writes the base: an RDB (`aof-use-rdb-preamble yes`),
/// or commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaseFormat {
    Rdb,
    Commands,
}

/// The temporary file a rewrite writes its base to, in `dir` (Redis's name).
pub fn rewrite_temp(dir: &Path) -> std::io::Result<(File, PathBuf)> {
    let tmp = dir.join(format!("temp-rewriteaof-bg-{}.aof", std::process::id()));
    let file = File::create(&tmp)?;
    Ok((file, tmp))
}

/// Moves a written base (`tmp`, fsynced) into the directory under the
/// next base name, which `manifest` now lists, the old base becoming
/// history; its name. The caller persists the manifest.
fn install_base(
    layout: &Layout,
    manifest: &mut Manifest,
    tmp: &Path,
    format: BaseFormat,
) -> std::io::Result<String> {
    std::fs::create_dir_all(&layout.dir)?;
    let name = manifest.new_base(&layout.stem, format == BaseFormat::Rdb);
    std::fs::rename(tmp, layout.file(&name))?;
    tracing::info!("Successfully renamed the temporary AOF base file into {name}");
    Ok(name)
}

/// A base written with no AOF appending (BGREWRITEAOF with `appendonly
/// no`, or the first base at start): it replaces every file the directory
/// lists. The manifest as persisted.
pub fn install_offline(
    layout: &Layout,
    manifest: Option<Manifest>,
    tmp: &Path,
    format: BaseFormat,
) -> std::io::Result<Manifest> {
    let mut manifest = manifest.unwrap_or_default();
    let base = install_base(layout, &mut manifest, tmp, format)?;
    manifest.retire_incrs(false);
    if let Err(e) = layout.persist(&manifest) {
        let _ = std::fs::remove_file(layout.file(&base));
        return Err(e);
    }
    let _ = layout.delete_history(&mut manifest);
    Ok(manifest)
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

/// Writes the file at `path` whole or not at all: `fill` writes it to a
/// temporary file beside it (`temp-<pid>.rdb`, Redis's name), which is
/// fsynced and renamed over it if `fill` answers true (a save made stale
/// meanwhile answers false, and the file stays as it was). Returns what
/// `fill` answered.
pub fn write_atomically(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<bool>,
) -> std::io::Result<bool> {
    write_atomically_via(path, &format!("temp-{}.rdb", std::process::id()), fill)
}

/// `write_atomically` through the temporary file named `tmp`: a save
/// that may run while another is being given up (FLUSHALL's, as Redis's
/// parent saves beside its dying child) takes a name of its own, so the
/// two never share a file.
pub fn write_atomically_via(
    path: &Path,
    tmp: &str,
    fill: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<bool>,
) -> std::io::Result<bool> {
    let tmp = path.with_file_name(tmp);
    let written = File::create(&tmp).and_then(|file| {
        let mut out = BufWriter::new(file);
        let filled = fill(&mut out);
        if !matches!(filled, Ok(true)) {
            // Dropped, the buffer would be written: a file given up gets
            // nothing more.
            let (_, _unwritten) = out.into_parts();
            return filled;
        }
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        sync_dir(path);
        Ok(true)
    });
    if !matches!(written, Ok(true)) {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}
