//! Fuzz target `keep_on_exit`: the body is `tandem::fuzz_bodies::keep_on_exit`,
//! which the stable corpus replay (`tests/fuzz_replay.rs`) runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tandem::fuzz_bodies::keep_on_exit(data));
