//! Fuzz target `injector_review`: the body is `tandem_injector::fuzz_bodies::review`, which the
//! injector's stable corpus replay (`injector/tests/fuzz_replay.rs`) runs too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tandem_injector::fuzz_bodies::review(data));
