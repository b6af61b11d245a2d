//! Fuzz target `linkerd_await`: the body is `tandem::fuzz_bodies::linkerd_await`, which the
//! stable corpus replay (`tests/fuzz_replay.rs`) runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tandem::fuzz_bodies::linkerd_await(data));
