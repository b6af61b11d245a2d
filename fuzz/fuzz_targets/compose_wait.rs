//! Fuzz target `compose_wait`: the body is `bodies::compose_wait`, which the
//! stable corpus replay (`tests/fuzz_replay.rs`) runs too.
#![no_main]

// One target uses one body of the shared file.
#[allow(dead_code)]
#[path = "../bodies.rs"]
mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::compose_wait(data));
