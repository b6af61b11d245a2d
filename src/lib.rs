//! tandem's library: every step of the lifecycle that `main.rs` tells, one module
//! each (ARCHITECTURE.md says which owns what). The binary is `main.rs`; the
//! library exists so tests, fuzzers and docs can read the option table and the
//! parsers directly.

#![warn(missing_docs)]
// An unsafe block holds the one call it needs, so its SAFETY comment covers it all.
// (For src only until tests/ and examples/ follow; then it moves to Cargo.toml.)
#![deny(clippy::multiple_unsafe_ops_per_block)]

pub mod child;
pub mod cli;
pub mod clock;
pub mod config;
pub mod deadline;
pub mod event;
pub mod exit;
// The fuzz targets' bodies, for the fuzzers and the stable replay alike.
#[doc(hidden)]
pub mod fuzz_bodies;
pub mod http;
pub mod install;
pub mod kill;
pub mod logger;
pub mod on_exit;
pub mod quit;
pub mod ready;
pub mod reap;
pub mod resolve;
pub mod settings;
pub mod siblings;
/// The sidecars tandem knows (SPEC §6): the table the injector reads too, in `tandem-common`.
pub use tandem_common::sidecars;
pub mod signals;
pub mod terminal;
pub mod termination_message;
pub mod value;
