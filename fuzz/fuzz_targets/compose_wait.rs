//! Fuzz target `compose_wait`: the body is `tandem::fuzz_bodies::compose_wait`, which the
//! stable corpus replay (`tests/fuzz_replay.rs`) runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tandem::fuzz_bodies::compose_wait(data));
