//! EVAL of scripts written from the input by a small grammar (or, for an
//! input starting with `#`, the input itself), from an empty server.
#![no_main]

use std::sync::{LazyLock, Mutex};

use libfuzzer_sys::fuzz_target;
use rlockd::fuzzing::{Harness, generate_script};

static HARNESS: LazyLock<Mutex<Harness>> = LazyLock::new(Default::default);

fuzz_target!(|data: &[u8]| {
    let script = generate_script(data);
    let mut harness = HARNESS.lock().unwrap_or_else(|e| e.into_inner());
    harness.reset();
    harness.eval(&script);
});
