//! Fuzz target `config`: the body is `tandem::fuzz_bodies::config`, which the stable corpus replay
//! (`tests/fuzz_replay.rs`) runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tandem::fuzz_bodies::config(data));
