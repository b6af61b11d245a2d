//! The integration test crate: one binary for every integration test module, so the
//! suite links once. Add a `mod xyz;` line here for each new `tests/xyz.rs`.

mod fake;
mod quit;
mod support;
