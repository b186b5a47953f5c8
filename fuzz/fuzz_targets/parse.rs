//! The request parser on arbitrary bytes: it must never panic, and how
//! the bytes are split into reads must not change what it parses. The
//! first byte picks the read size.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some((&chunk, stream)) = data.split_first() {
        rlockd::fuzzing::parse(stream, usize::from(chunk));
    }
});
