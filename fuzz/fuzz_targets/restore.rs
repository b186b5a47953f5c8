//! The DUMP / FUNCTION DUMP payload readers on arbitrary bytes (also read
//! as a value's body under a valid checksum): no panic, and whatever is
//! read dumps back to what reads the same.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    rlockd::fuzzing::restore(data);
});
