//! Fuzz target `server_info`: the body is `bodies::server_info`, which the stable corpus replay
//! (`tests/fuzz_replay.rs`) runs too.
#![no_main]

// One target uses one body of the shared file.
#[allow(dead_code)]
#[path = "../bodies.rs"]
mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::server_info(data));
