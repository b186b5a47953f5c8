//! Arbitrary requests (inline or RESP) run through command dispatch, from
//! an empty server for every input.
#![no_main]

use std::sync::{LazyLock, Mutex};

use libfuzzer_sys::fuzz_target;
use rlockd::fuzzing::Harness;

static HARNESS: LazyLock<Mutex<Harness>> = LazyLock::new(Default::default);

fuzz_target!(|data: &[u8]| {
    let mut harness = HARNESS.lock().unwrap_or_else(|e| e.into_inner());
    harness.reset();
    harness.run_stream(data);
});
