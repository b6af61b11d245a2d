//! The integration test crate: one binary for every integration test module, so the
//! suite links once. Add a `mod xyz;` line here for each new `tests/xyz.rs`.

mod cli;
mod fake;
mod hostile;
mod lifecycle;
mod logs;
mod ready;
mod support;
