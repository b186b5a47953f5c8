//! SLOWLOG: the most recent commands that took longer than
//! `slowlog-log-slower-than`, newest first, as Redis records them.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use parking_lot::Mutex;

use crate::config::Config;
use crate::protocol::Reply;

/// Redis keeps at most this many arguments of a command…
const MAX_ARGS: usize = 32;
/// …and this many bytes of each.
const MAX_ARG_BYTES: usize = 128;

struct Entry {
    id: u64,
    unix_secs: u64,
    micros: u64,
    args: Vec<Bytes>,
    addr: String,
    name: Bytes,
}

/// Who ran a logged command.
pub struct Caller {
    pub addr: String,
    pub name: Option<Bytes>,
}

#[derive(Default)]
pub struct SlowLog {
    /// Read by every command: kept out of the config lock.
    threshold_us: AtomicI64,
    max_len: AtomicI64,
    next_id: AtomicU64,
    entries: Mutex<VecDeque<Entry>>,
}

impl SlowLog {
    pub fn configure(&self, config: &Config) {
        self.threshold_us
            .store(config.slowlog_log_slower_than, Ordering::Relaxed);
        self.max_len
            .store(config.slowlog_max_len, Ordering::Relaxed);
        self.trim(&mut self.entries.lock());
    }

    /// Whether a command that took `took` enters the log.
    pub fn is_slow(&self, took: Duration) -> bool {
        let threshold = self.threshold_us.load(Ordering::Relaxed);
        threshold >= 0 && took.as_micros() >= threshold as u128
    }

    pub fn record(&self, took: Duration, args: &[Bytes], caller: Caller) {
        let secret = crate::pubsub::monitor::secret_args(args);
        let kept = args.len().min(MAX_ARGS);
        let args = (0..kept)
            .map(|i| {
                if kept < args.len() && i == kept - 1 {
                    format!("... ({} more arguments)", args.len() - kept + 1).into()
                } else if secret(i) {
                    Bytes::from_static(b"(redacted)")
                } else if args[i].len() > MAX_ARG_BYTES {
                    let more = format!("... ({} more bytes)", args[i].len() - MAX_ARG_BYTES);
                    [&args[i][..MAX_ARG_BYTES], more.as_bytes()].concat().into()
                } else {
                    // A copy: a slice would keep the whole request's
                    // input buffer alive for as long as the entry lives.
                    Bytes::copy_from_slice(&args[i])
                }
            })
            .collect();
        let entry = Entry {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            unix_secs: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs(),
            micros: took.as_micros() as u64,
            args,
            addr: caller.addr,
            name: caller.name.unwrap_or_default(),
        };
        let mut entries = self.entries.lock();
        entries.push_front(entry);
        self.trim(&mut entries);
    }

    fn trim(&self, entries: &mut VecDeque<Entry>) {
        let max = self.max_len.load(Ordering::Relaxed).max(0) as usize;
        entries.truncate(max);
    }

    pub fn entries(&self) -> usize {
        self.entries.lock().len()
    }

    pub fn reset(&self) {
        self.entries.lock().clear();
    }

    /// The newest `count` entries (all of them for `None`).
    pub fn newest(&self, count: Option<usize>) -> Reply {
        let entries = self.entries.lock();
        let count = count.unwrap_or(entries.len());
        Reply::Array(
            entries
                .iter()
                .take(count)
                .map(|e| {
                    Reply::Array(vec![
                        Reply::Int(e.id as i64),
                        Reply::Int(e.unix_secs as i64),
                        Reply::Int(e.micros as i64),
                        Reply::Array(e.args.iter().cloned().map(Reply::Bulk).collect()),
                        Reply::bulk(e.addr.clone()),
                        Reply::Bulk(e.name.clone()),
                    ])
                })
                .collect(),
        )
    }
}
