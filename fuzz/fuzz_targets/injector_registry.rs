//! Fuzz target `injector_registry`: the body is `injector_bodies::registry`, which the
//! injector's stable corpus replay (`injector/tests/fuzz_replay.rs`) runs too.
#![no_main]

#[path = "../injector_bodies.rs"]
mod injector_bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| injector_bodies::registry(data));
