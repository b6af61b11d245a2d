//! Fuzz target `injector_allow`: the body is `injector_bodies::allow`, which the
//! injector's stable corpus replay (`injector/tests/fuzz_replay.rs`) runs too.
#![no_main]

#[path = "../injector_bodies.rs"]
mod injector_bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| injector_bodies::allow(data));
