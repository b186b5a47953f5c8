//! Sixteen clients wanting one lock the way Redisson's `lock()` waits for
//! it, `redis-server` versus `rlockd` side by side: each client subscribes
//! to the lock's channel, tries the reentrant lock script (EVALSHA), and
//! when refused waits for the unlock script's PUBLISH (or the lease's
//! remaining time) before trying again. A holder keeps the lock for the
//! think time, releases it, and thinks as long again before wanting it
//! anew. Reported: acquisitions/s, the server's CPU time per acquisition,
//! the hand-off latency (unlock sent → next grant to a client that had
//! been waiting) p99, and the acquire-wait p99 (wanting → granted: how
//! fairly waiters are served), then rlockd / redis, and the bound the
//! holds set: the acquisitions/s ratio a server whose hand-offs took no
//! time at all would reach. Rounds alternate between the servers. Mutual
//! exclusion is checked as it runs.
//!
//! Run with `cargo bench --bench contention`. Knobs:
//! `RLOCKD_BENCH_CLIENTS` (16), `RLOCKD_BENCH_THINK_US` (1000),
//! `RLOCKD_BENCH_ROUNDS` (3), `RLOCKD_BENCH_SECONDS` (3).

mod support;

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use support::{Conn, Reply, Server, knob, median, percentile, start_servers};

const LOCK_LUA: &str = include_str!("../src/command/scripting/lock_scripts/redisson_lock.lua");
const UNLOCK_LUA: &str = include_str!("../src/command/scripting/lock_scripts/redisson_unlock.lua");
const NAME: &str = "contended";
const CHANNEL: &str = "redisson_lock__channel:{contended}";
/// The longest a refused client waits for a wake-up before trying again.
const MAX_WAIT: Duration = Duration::from_millis(100);

fn sha(conn: &mut Conn, script: &str) -> io::Result<String> {
    match conn.cmd(&["SCRIPT", "LOAD", script])? {
        Reply::Bulk(Some(sha)) => Ok(String::from_utf8(sha).expect("hex")),
        other => Err(io::Error::other(format!("SCRIPT LOAD: {other:?}"))),
    }
}

/// What every client of a round shares.
struct Table {
    start: Barrier,
    held: AtomicBool,
    last_unlock: Mutex<Option<Instant>>,
}

#[derive(Default)]
struct Tally {
    acquisitions: u64,
    /// Unlock sent → granted to a waiter, µs.
    handoff_us: Vec<f64>,
    /// Wanting → granted, µs.
    wait_us: Vec<f64>,
}

struct Client {
    conn: Conn,
    sub: Conn,
    owner: String,
    lock: String,
    unlock: String,
}

impl Client {
    fn open(addr: SocketAddr, n: usize, lock: &str, unlock: &str) -> io::Result<Client> {
        let mut sub = Conn::open(addr)?;
        sub.cmd(&["SUBSCRIBE", CHANNEL])?;
        Ok(Client {
            conn: Conn::open(addr)?,
            sub,
            owner: format!("8743c9c0-0795-4907-87fd-6c719a6b4586:{n}"),
            lock: lock.into(),
            unlock: unlock.into(),
        })
    }

    /// Tries once: `None` when granted, else the lease left (ms).
    fn try_lock(&mut self) -> io::Result<Option<u64>> {
        let lock = ["EVALSHA", &self.lock, "1", NAME, "30000", &self.owner];
        match self.conn.cmd(&lock)? {
            Reply::Bulk(None) => Ok(None),
            Reply::Int(ttl) => Ok(Some(ttl.max(1) as u64)),
            other => Err(io::Error::other(format!("lock: {other:?}"))),
        }
    }

    /// Waits for an unlock message, at most `wait`.
    fn wait_for_wake_up(&mut self, wait: Duration) -> io::Result<()> {
        self.sub.reader.get_ref().set_read_timeout(Some(wait))?;
        match self.sub.read() {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    fn unlock(&mut self) -> io::Result<()> {
        let unlock = [
            "EVALSHA",
            &self.unlock,
            "2",
            NAME,
            CHANNEL,
            "0",
            "30000",
            &self.owner,
        ];
        match self.conn.cmd(&unlock)? {
            Reply::Int(1) => Ok(()),
            other => Err(io::Error::other(format!("unlock: {other:?}"))),
        }
    }

    fn run(mut self, table: &Table, length: Duration, think: Duration) -> io::Result<Tally> {
        let mut tally = Tally::default();
        table.start.wait();
        let until = Instant::now() + length;
        while Instant::now() < until {
            let wanted = Instant::now();
            let mut waited = false;
            while let Some(ttl) = self.try_lock()? {
                waited = true;
                self.wait_for_wake_up(Duration::from_millis(ttl).min(MAX_WAIT))?;
            }
            let granted = Instant::now();
            assert!(
                !table.held.swap(true, Ordering::AcqRel),
                "two clients hold the lock"
            );
            tally.wait_us.push((granted - wanted).as_secs_f64() * 1e6);
            let last_unlock = *table.last_unlock.lock().expect("unpoisoned");
            if let Some(sent) = last_unlock.filter(|&sent| waited && sent > wanted) {
                tally.handoff_us.push((granted - sent).as_secs_f64() * 1e6);
            }
            thread::sleep(think);
            table.held.store(false, Ordering::Release);
            *table.last_unlock.lock().expect("unpoisoned") = Some(Instant::now());
            self.unlock()?;
            tally.acquisitions += 1;
            thread::sleep(think);
        }
        Ok(tally)
    }
}

struct Round {
    tally: Tally,
    secs: f64,
    cpu_secs: f64,
}

fn round(server: &Server, clients: usize, length: Duration, think: Duration) -> io::Result<Round> {
    let mut admin = Conn::open(server.addr)?;
    let (lock, unlock) = (sha(&mut admin, LOCK_LUA)?, sha(&mut admin, UNLOCK_LUA)?);
    let table = Arc::new(Table {
        start: Barrier::new(clients + 1),
        held: AtomicBool::new(false),
        last_unlock: Mutex::new(None),
    });
    let mut workers = Vec::new();
    for n in 0..clients {
        let client = Client::open(server.addr, n, &lock, &unlock)?;
        let table = table.clone();
        workers.push(thread::spawn(move || client.run(&table, length, think)));
    }
    let cpu_before = server.cpu_secs();
    table.start.wait();
    let started = Instant::now();
    let mut tally = Tally::default();
    for w in workers {
        let t = w.join().expect("client thread")?;
        tally.acquisitions += t.acquisitions;
        tally.handoff_us.extend(t.handoff_us);
        tally.wait_us.extend(t.wait_us);
    }
    Ok(Round {
        secs: started.elapsed().as_secs_f64(),
        cpu_secs: server.cpu_secs() - cpu_before,
        tally,
    })
}

/// One round's figures for one server, in the order they are printed.
const FIGURES: usize = 5;
/// Acquisitions/s.
const RATE: usize = 0;
/// Server CPU µs per acquisition.
const CPU: usize = 1;
const HANDOFF_P99: usize = 2;
/// Acquire-wait p99 (wanting → granted).
const WAIT_P99: usize = 3;
/// Hand-off µs per acquisition (what a zero-time hand-off would save).
const HANDOFF_MEAN: usize = 4;

fn main() {
    let clients = knob("RLOCKD_BENCH_CLIENTS", 16).max(2);
    let think = Duration::from_micros(knob("RLOCKD_BENCH_THINK_US", 1000) as u64);
    let rounds = knob("RLOCKD_BENCH_ROUNDS", 3).max(1);
    let length = Duration::from_secs(knob("RLOCKD_BENCH_SECONDS", 3).max(1) as u64);
    let servers = start_servers();
    let mut figures = vec![[const { Vec::new() }; FIGURES]; servers.len()];
    for r in 0..rounds {
        for (i, server) in servers.iter().enumerate() {
            let got = round(server, clients, length, think).expect("a bench round");
            let t = got.tally;
            let per_acquisition = |total: f64| total / t.acquisitions.max(1) as f64;
            let mut row = [0.0; FIGURES];
            row[RATE] = t.acquisitions as f64 / got.secs;
            row[CPU] = per_acquisition(got.cpu_secs * 1e6);
            row[HANDOFF_P99] = percentile(t.handoff_us.clone(), 0.99);
            row[WAIT_P99] = percentile(t.wait_us, 0.99);
            row[HANDOFF_MEAN] = per_acquisition(t.handoff_us.iter().sum());
            eprintln!(
                "round {}/{rounds} {:>6}: {:>6.0} acquisitions/s, {:>6.1} µs CPU each, hand-off p99 {:>6.0} µs, wait p99 {:>7.0} µs",
                r + 1,
                server.name,
                row[RATE],
                row[CPU],
                row[HANDOFF_P99],
                row[WAIT_P99]
            );
            for (all, value) in figures[i].iter_mut().zip(row) {
                all.push(value);
            }
        }
    }
    println!();
    println!(
        "{clients} clients on one lock, Redisson-style waits, {think:?} think (median of {rounds} rounds of {length:?})"
    );
    let medians: Vec<[f64; FIGURES]> = figures.into_iter().map(|f| f.map(median)).collect();
    for (server, m) in servers.iter().zip(&medians) {
        println!(
            "{:<8} {:>7.0} acquisitions/s   {:>6.1} µs CPU each   hand-off p99 {:>6.0} µs   wait p99 {:>7.0} µs",
            server.name, m[RATE], m[CPU], m[HANDOFF_P99], m[WAIT_P99]
        );
    }
    if let [redis, rlockd] = &medians[..] {
        let ratio = |k: usize| rlockd[k] / redis[k];
        // Each acquisition is a hold (the think time and the unlock's
        // round trip) plus a hand-off; a server whose hand-offs took no
        // time at all would still spend the holds.
        let cycle = 1e6 / redis[RATE];
        let redis_handoff_mean = redis[HANDOFF_MEAN];
        let ceiling = cycle / (cycle - redis_handoff_mean);
        println!(
            "rlockd / redis: acquisitions/s {:.2}, CPU per acquisition {:.2}, hand-off p99 {:.2}, wait p99 {:.2}",
            ratio(RATE),
            ratio(CPU),
            ratio(HANDOFF_P99),
            ratio(WAIT_P99)
        );
        println!(
            "bound: acquisitions/s at most {ceiling:.2} (redis-server's hand-off time, {redis_handoff_mean:.0} µs an acquisition, taken away)"
        );
        println!(
            "BENCH {{\"bench\":\"contention\",\"clients\":{clients},\"acquisitions_ratio\":{:.3},\"cpu_ratio\":{:.3},\"handoff_p99_ratio\":{:.3},\"wait_p99_ratio\":{:.3},\"acquisitions_ceiling\":{ceiling:.3}}}",
            ratio(RATE),
            ratio(CPU),
            ratio(HANDOFF_P99),
            ratio(WAIT_P99)
        );
    }
}
