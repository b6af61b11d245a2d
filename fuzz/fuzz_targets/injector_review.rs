//! Fuzz target `injector_review`: the body is `injector_bodies::review`, which the
//! injector's stable corpus replay (`injector/tests/fuzz_replay.rs`) runs too.
#![no_main]

#[path = "../injector_bodies.rs"]
mod injector_bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| injector_bodies::review(data));
