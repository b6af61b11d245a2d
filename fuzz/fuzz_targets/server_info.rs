//! Fuzz target `server_info`: the body is `tandem::fuzz_bodies::server_info`, which the stable corpus replay
//! (`tests/fuzz_replay.rs`) runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tandem::fuzz_bodies::server_info(data));
