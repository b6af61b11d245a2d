//! The integration test crate: one binary for every integration test module, so the
//! suite links once. Add a `mod xyz;` line here for each new `tests/xyz.rs`.

mod fake;
/// Idle while the app runs: no wake-ups, at most two threads (SPEC §4).
mod idle;
/// PID 1 and subreaper reaping; exit when the direct child exits (SPEC §4).
mod reaping;
/// Relay of every catchable signal, group relay, signals while waiting (SPEC §3, §4).
mod signals;
mod support;
/// Ctrl-C and Ctrl-Z under a real pseudo-terminal (SPEC §4).
mod tty;
