//! Replays the fuzz corpus (fuzz/corpus/<target>/) through the entry
//! points the fuzz targets use, so every input the fuzzers kept, and every
//! finding's regression input, runs in the ordinary test suite. A panic or
//! a crash here is a finding that came back.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rlockd::fuzzing::{Harness, generate_script, parse, restore};
use rlockd::protocol::Reply;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("corpus entry").path())
        .collect();
    files.sort();
    let inputs: Vec<_> = files
        .into_iter()
        .map(|path| {
            let data = std::fs::read(&path).expect("corpus file");
            (path, data)
        })
        .collect();
    assert!(inputs.len() >= 10, "{target}: corpus missing");
    inputs
}

/// Runs every input of `target`, naming the one being run if it panics.
fn replay(target: &str, mut run: impl FnMut(&[u8])) {
    let started = Instant::now();
    for (path, data) in corpus(target) {
        eprintln!("{}", path.display());
        run(&data);
    }
    eprintln!("{target}: corpus replayed in {:?}", started.elapsed());
}

#[test]
fn parse_corpus() {
    replay("parse", |data| {
        if let Some((&chunk, stream)) = data.split_first() {
            parse(stream, usize::from(chunk));
        }
    });
}

#[test]
fn dispatch_corpus() {
    let mut harness = Harness::new();
    replay("dispatch", |data| {
        harness.reset();
        harness.run_stream(data);
    });
}

#[test]
fn restore_corpus() {
    replay("restore", restore);
}

/// The seeds are real files from rlockd and redis-server 7.0.15: a loader
/// that refused them all would test nothing past the header.
#[test]
fn rdb_corpus() {
    let mut harness = Harness::new();
    let mut taken = 0;
    replay("rdb", |data| taken += harness.load_rdb(data));
    assert!(taken >= 20, "only {taken} loads took a corpus file");
}

/// A fuzzer's work without the fuzzer, for a machine without nightly
/// Rust: each corpus file loaded with random damage (bytes changed,
/// inserted, removed, runs copied from elsewhere in it) for
/// `RLOCKD_FUZZ_SECS` seconds, from `RLOCKD_FUZZ_SEED` (nonzero) if set.
/// Ignored in the suite; run with
/// `RLOCKD_FUZZ_SECS=300 cargo test --test fuzz_corpus -- --ignored`.
#[test]
#[ignore]
fn rdb_mutations() {
    let secs = std::env::var("RLOCKD_FUZZ_SECS").map_or(10, |s| s.parse().expect("seconds"));
    let until = Instant::now() + Duration::from_secs(secs);
    let seeds = corpus("rdb");
    let mut harness = Harness::new();
    let mut state = std::env::var("RLOCKD_FUZZ_SEED")
        .map_or(0x2545_f491_4f6c_dd1d_u64, |s| s.parse().expect("a seed"));
    let mut next = move |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % bound.max(1) as u64) as usize
    };
    let (mut runs, mut taken) = (0u64, 0);
    while Instant::now() < until {
        let (_, seed) = &seeds[next(seeds.len())];
        let mut data = seed.clone();
        for _ in 0..=next(4) {
            let at = next(data.len());
            match next(4) {
                0 if !data.is_empty() => data[at] = next(256) as u8,
                1 => data.insert(at, next(256) as u8),
                2 if !data.is_empty() => drop(data.remove(at)),
                _ => {
                    let from = next(data.len());
                    let run: Vec<u8> = data[from..].iter().take(next(16)).copied().collect();
                    data.splice(at..at, run);
                }
            }
        }
        let load = std::panic::AssertUnwindSafe(|| harness.load_rdb(&data));
        match std::panic::catch_unwind(load) {
            Ok(n) => taken += n,
            Err(_) => panic!("a finding, as a corpus file's bytes: {data:?}"),
        }
        runs += 1;
    }
    eprintln!("{runs} damaged files, {taken} loads took one");
}

#[test]
fn eval_corpus() {
    let mut harness = Harness::new();
    replay("eval", |data| {
        harness.reset();
        harness.eval(&generate_script(data));
    });
}

fn args(line: &str) -> Vec<Bytes> {
    line.split(' ')
        .map(|a| Bytes::copy_from_slice(a.as_bytes()))
        .collect()
}

/// The harness answers as a server would: replays would prove nothing if
/// every request failed before reaching its command.
#[test]
fn harness_runs_real_commands() {
    let mut harness = Harness::new();
    harness.reset();
    let replies = harness.run_stream(b"SET k v\r\nGET k\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n");
    assert_eq!(
        replies,
        [
            Reply::OK,
            Reply::Bulk(Bytes::from_static(b"v")),
            Reply::Bulk(Bytes::from_static(b"hi"))
        ]
    );
    assert_eq!(harness.eval("return 1 + 1"), Some(Reply::Int(2)));
    harness.reset();
    assert_eq!(harness.run(&args("GET k")), Some(Reply::Nil));
    assert_eq!(harness.run(&args("QUIT")), Some(Reply::OK));
    assert_eq!(harness.run(&args("PING")), None, "the connection closed");
}

/// A blocking command answers at once, as after its timeout, and a script
/// that loops is stopped: a fuzz input never waits.
#[test]
fn harness_never_waits() {
    let mut harness = Harness::new();
    harness.reset();
    let started = Instant::now();
    assert_eq!(harness.run(&args("BLPOP l 0")), Some(Reply::NilArray));
    assert_eq!(harness.run(&args("RPUSH l a")), Some(Reply::Int(1)));
    let Some(Reply::Error(e)) = harness.eval("while true do end") else {
        panic!("a looping script must be killed");
    };
    assert!(e.to_string().contains("SCRIPT KILL"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// Generated scripts are valid Lua in the main: a grammar that mostly
/// wrote syntax errors would fuzz nothing but the compiler.
#[test]
fn generated_scripts_compile() {
    let mut harness = Harness::new();
    let mut compiled = 0;
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    for _ in 0..200 {
        let data: Vec<u8> = (0..64)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let mut data = data;
        if data[0] == b'#' {
            data[0] = 0; // not the verbatim-source form
        }
        let script = generate_script(&data);
        let load = [
            Bytes::from_static(b"SCRIPT"),
            "LOAD".into(),
            script.clone().into(),
        ];
        harness.reset();
        match harness.run(&load) {
            Some(Reply::Bulk(_)) => compiled += 1,
            other => eprintln!("{script}\n{other:?}"),
        }
    }
    assert!(
        compiled >= 190,
        "only {compiled} of 200 generated scripts compile"
    );
}
