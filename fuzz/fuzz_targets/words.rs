//! Fuzz target `words`: the body is `bodies::words`, which the
//! stable corpus replay (`tests/fuzz_replay.rs`) runs too.
#![no_main]

// One target uses one body of the shared file.
#[allow(dead_code)]
#[path = "../bodies.rs"]
mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::words(data));
