//! Full syncs as a primary runs them for its replicas, as Redis 7.0 does:
//! one snapshot serves every replica that asked for it in time.
//!
//! A replica that needs a full sync joins the transfer being formed, or
//! forms one. The transfer waits `repl-diskless-sync-delay` (diskless
//! only; cut short once `repl-diskless-sync-max-replicas` replicas
//! wait), then for any save under way, then takes the snapshot once for
//! all that joined by then:
//! - diskless (`repl-diskless-sync yes` and every replica said `capa
//!   eof`): the RDB goes to every replica's feed as it is encoded, in
//!   pieces of `PIECE` bytes, each queue holding a few: the snapshot moves
//!   at the pace of its slowest replica, and a replica that dropped (its
//!   feed closed) leaves the others going, as Redis's pipe to its
//!   replicas' sockets does; memory holds those pieces, not the image.
//! - disk-backed: the snapshot is saved to `dump.rdb`, as BGSAVE saves it,
//!   and each replica is handed the file to send; a replica that asks
//!   while such a save runs attaches to it, as Redis attaches one to its
//!   BGSAVE for replication.
//!
//! The sockets are `crate::replication::primary`'s: it reads the feed.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use tokio::sync::{Notify, mpsc};

use super::Shared;
use super::replicas::SyncState;
use super::snapshot::{SaveClaim, rdb_path};

/// The diskless payload goes to replicas in pieces of this many bytes.
const PIECE: usize = 64 * 1024;
/// Pieces a replica's feed holds before the snapshot waits for it.
const QUEUED: usize = 4;

/// What a replica waiting for its full sync is handed, in this order.
#[derive(Debug)]
pub enum Feed {
    /// The snapshot's instant is taken at this offset (`+FULLRESYNC`'s);
    /// whether its bytes come as `Piece`s, else as a `File`.
    Begun { offset: i64, diskless: bool },
    /// Diskless: the next bytes of the RDB.
    Piece(Bytes),
    /// Diskless: the RDB is whole.
    Ended,
    /// Disk-backed: the file, opened for this replica, and its length.
    File(File, u64),
}

/// The feed a replica reads; closed early when its snapshot failed.
pub type FeedReceiver = mpsc::Receiver<Feed>;

/// One snapshot for the replicas that joined it.
pub struct Transfer {
    members: Mutex<Members>,
    /// `repl-diskless-sync-max-replicas` replicas wait: start now.
    enough: Notify,
}

#[derive(Default)]
struct Members {
    feeds: Vec<mpsc::Sender<Feed>>,
    /// Whether every replica joined takes the `$EOF:` form.
    all_eof: bool,
    /// The snapshot's offset, once taken.
    begun: Option<i64>,
}

impl Transfer {
    fn new(capa_eof: bool) -> Transfer {
        Transfer {
            members: Mutex::new(Members {
                all_eof: capa_eof,
                ..Members::default()
            }),
            enough: Notify::new(),
        }
    }

    /// Adds a replica; how many the transfer now serves.
    fn add(&self, capa_eof: bool) -> (FeedReceiver, usize) {
        let (tx, rx) = mpsc::channel(QUEUED);
        let mut members = self.members.lock();
        members.all_eof &= capa_eof;
        if let Some(offset) = members.begun {
            // Attached to a disk-backed save under way: the same point.
            let _ = tx.try_send(Feed::Begun {
                offset,
                diskless: false,
            });
        }
        members.feeds.push(tx);
        (rx, members.feeds.len())
    }

    /// Hands each replica what `make` makes, waiting for room in its feed;
    /// a replica whose feed closed (it went) is dropped, or one that
    /// `make` fails for. How many remain.
    fn hand(&self, make: impl Fn() -> std::io::Result<Feed>) -> usize {
        let feeds = self.members.lock().feeds.clone();
        self.hand_to(feeds, make)
    }

    /// `hand`, to the replicas `feeds` lists.
    fn hand_to(
        &self,
        feeds: Vec<mpsc::Sender<Feed>>,
        make: impl Fn() -> std::io::Result<Feed>,
    ) -> usize {
        let mut lost = Vec::new();
        for feed in feeds {
            let sent = make()
                .ok()
                .is_some_and(|item| feed.blocking_send(item).is_ok());
            if !sent {
                lost.push(feed);
            }
        }
        let mut members = self.members.lock();
        members
            .feeds
            .retain(|f| !lost.iter().any(|l| l.same_channel(f)));
        members.feeds.len()
    }

    /// Tells the replicas the snapshot's offset; those that attach later
    /// are told as they attach (`add`), never twice.
    fn begin(&self, offset: i64, diskless: bool) {
        let feeds = {
            let mut members = self.members.lock();
            members.begun = Some(offset);
            members.feeds.clone()
        };
        self.hand_to(feeds, || Ok(Feed::Begun { offset, diskless }));
    }

    /// Closes every feed: a replica that got no end knows it failed.
    fn close(&self) {
        self.members.lock().feeds.clear();
    }
}

/// The transfers a primary has going.
#[derive(Default)]
pub struct FullSyncs {
    state: Mutex<Forming>,
}

#[derive(Default)]
struct Forming {
    /// Joined by replicas asking now: its snapshot is not taken yet.
    open: Option<Arc<Transfer>>,
    /// A disk-backed save for replicas under way, attached to by those
    /// that ask meanwhile.
    saving: Option<Arc<Transfer>>,
}

impl FullSyncs {
    /// Replica `id` needs a full sync (`capa_eof`: it takes the diskless
    /// form): it joins a transfer, or starts one, and is attached to the
    /// backlog from the snapshot's offset on. Its feed.
    pub fn join(&self, shared: &Arc<Shared>, id: u64, capa_eof: bool) -> FeedReceiver {
        let backlog = &shared.replica.backlog;
        let mut state = self.state.lock();
        if let Some(saving) = &state.saving {
            // Before its capture, from now on, as below; after, from its
            // offset on, while the backlog still holds that.
            let begun = saving.members.lock().begun;
            let from = begun.unwrap_or_else(|| backlog.offset()) + 1;
            if backlog.has_from(from) {
                backlog.attach(id, from);
                tracing::info!("Waiting for end of BGSAVE for SYNC");
                return saving.add(capa_eof).0;
            }
        }
        // Held from before the capture, so nothing after it is dropped
        // before this replica has read it.
        backlog.attach(id, backlog.offset() + 1);
        if let Some(open) = &state.open {
            let (feed, waiting) = open.add(capa_eof);
            let enough = shared.config.read().repl_diskless_sync_max_replicas;
            if enough > 0 && waiting as i64 >= enough {
                open.enough.notify_one();
            }
            return feed;
        }
        let transfer = Arc::new(Transfer::new(capa_eof));
        let (feed, _) = transfer.add(capa_eof);
        state.open = Some(transfer.clone());
        tokio::spawn(run(shared.clone(), transfer));
        feed
    }
}

/// Waits out the delay, then takes and hands out the snapshot.
async fn run(shared: Arc<Shared>, transfer: Arc<Transfer>) {
    let delay = {
        let config = shared.config.read();
        let diskless = config.repl_diskless_sync && transfer.members.lock().all_eof;
        let enough = config.repl_diskless_sync_max_replicas;
        let waiting = transfer.members.lock().feeds.len() as i64;
        let delay = config.repl_diskless_sync_delay.max(0) as u64;
        if diskless && !(enough > 0 && waiting >= enough) {
            delay
        } else {
            0
        }
    };
    if delay > 0 {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(delay)) => {}
            _ = transfer.enough.notified() => {}
        }
    }
    let worker = transfer.clone();
    let taken = tokio::task::spawn_blocking(move || take(&shared, &worker)).await;
    if taken.is_err() {
        transfer.close();
    }
}

/// Takes the snapshot, once no other save runs, for the replicas joined
/// by then.
fn take(shared: &Shared, transfer: &Arc<Transfer>) {
    let claim = SaveClaim::wait(shared, false);
    let diskless = {
        let mut state = shared.full_syncs.state.lock();
        if state
            .open
            .as_ref()
            .is_some_and(|t| Arc::ptr_eq(t, transfer))
        {
            state.open = None;
        }
        let diskless = shared.config.read().repl_diskless_sync && transfer.members.lock().all_eof;
        if !diskless {
            state.saving = Some(transfer.clone());
        }
        diskless
    };
    tracing::info!(
        "Starting BGSAVE for SYNC with target: {}",
        if diskless { "replicas sockets" } else { "disk" }
    );
    if diskless {
        let streamed = claim.stream_to(|offset| {
            transfer.begin(offset, true);
            Ok(Fanout {
                transfer,
                pending: BytesMut::with_capacity(PIECE),
            })
        });
        match streamed {
            Ok(_) => {
                let up = transfer.hand(|| Ok(Feed::Ended));
                tracing::info!(
                    "Diskless rdb transfer, done reading from pipe, {up} replicas still up."
                );
            }
            Err(e) => tracing::warn!("Diskless rdb transfer to replicas failed: {e}"),
        }
    } else {
        let saved = claim.save_file(|offset| transfer.begin(offset, false));
        // No replica attaches once the file is written.
        shared.full_syncs.state.lock().saving = None;
        match saved {
            Ok(Some(path)) => {
                transfer.hand(|| open_file(&path));
            }
            Ok(None) => tracing::warn!("BGSAVE for SYNC cancelled by a FLUSHALL"),
            Err(e) => tracing::warn!("BGSAVE for SYNC failed: {e}"),
        }
        // Still under the claim: no other save has replaced the file.
    }
    transfer.close();
    drop(claim);
}

/// `rdb-del-sync-files` on a primary that persists nothing (no `save`
/// points, no AOF): the `dump.rdb` a disk-backed sync wrote only to feed
/// replicas is removed once none waits for it or reads it, as Redis
/// does, so that a restart does not load data the server was told not
/// to keep. Run once a second, as Redis's replication cron.
pub fn remove_sync_file(shared: &Shared) {
    let (enabled, persists, path) = {
        let config = shared.config.read();
        (
            config.rdb_del_sync_files,
            !config.save.is_empty() || config.appendonly,
            rdb_path(&config),
        )
    };
    let snapshots = &shared.snapshots;
    if !enabled {
        // Forgotten, so that turning the setting on later removes only a
        // file written after.
        snapshots.take_for_replicas();
        return;
    }
    let busy = snapshots.in_progress()
        || shared
            .replicas
            .all()
            .iter()
            .any(|r| r.state() != SyncState::Online);
    if persists || busy || !path.exists() || !snapshots.take_for_replicas() {
        return;
    }
    tracing::info!("Removing the RDB file used to feed replicas in a persistence-less instance");
    if let Err(e) = std::fs::remove_file(&path) {
        tracing::warn!("Can't remove {}: {e}", path.display());
    }
}

fn open_file(path: &Path) -> std::io::Result<Feed> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    Ok(Feed::File(file, len))
}

/// The diskless payload's sink: each `PIECE` bytes go to every replica.
struct Fanout<'t> {
    transfer: &'t Transfer,
    pending: BytesMut,
}

impl Fanout<'_> {
    fn send(&mut self) -> std::io::Result<()> {
        let piece = self.pending.split().freeze();
        if self.transfer.hand(|| Ok(Feed::Piece(piece.clone()))) == 0 {
            tracing::warn!("Diskless rdb transfer, last replica dropped, the snapshot given up.");
            return Err(std::io::Error::other("every replica of the sync went"));
        }
        Ok(())
    }
}

impl std::io::Write for Fanout<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        if self.pending.len() >= PIECE {
            self.send()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.send()
    }
}
