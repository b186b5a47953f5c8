//! Arbitrary bytes loaded as `dump.rdb` (the loader start-up and DEBUG
//! RELOAD use) into an emptied server: refused or loaded, never a panic;
//! what loads saves and loads back to the same keys.
#![no_main]

use std::sync::{LazyLock, Mutex};

use libfuzzer_sys::fuzz_target;
use rlockd::fuzzing::Harness;

static HARNESS: LazyLock<Mutex<Harness>> = LazyLock::new(Default::default);

fuzz_target!(|data: &[u8]| {
    let mut harness = HARNESS.lock().unwrap_or_else(|e| e.into_inner());
    harness.load_rdb(data);
});
