//! Fuzz target `words`: the body is `tandem::fuzz_bodies::words`, which the
//! stable corpus replay (`tests/fuzz_replay.rs`) runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tandem::fuzz_bodies::words(data));
