//! Fuzz target `injector_audit`: the body is `injector_bodies::audit_list`, which the
//! injector's stable corpus replay (`injector/tests/fuzz_replay.rs`) runs too.
#![no_main]

#[path = "../injector_bodies.rs"]
mod injector_bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| injector_bodies::audit_list(data));
