//! Fuzz target `linkerd_await`: the body is `bodies::linkerd_await`, which the
//! stable corpus replay (`tests/fuzz_replay.rs`) runs too.
#![no_main]

// One target uses one body of the shared file.
#[allow(dead_code)]
#[path = "../bodies.rs"]
mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::linkerd_await(data));
