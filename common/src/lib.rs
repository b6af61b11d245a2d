//! What tandem (the wrapper) and tandem-injector (its webhook and its admission
//! policy) must agree on, in one place both depend on: the sidecars tandem knows,
//! Go's duration syntax, the `TANDEM_` variables the injector writes and the
//! wrapper reads, and the Pod layout the injector writes and the wrapper runs in.
//!
//! `std` only: the wrapper's dependency count grows by this crate alone, and the
//! injector links none of the wrapper's crates through it.
//!
//! | module | owns |
//! |---|---|
//! | `sidecars` | the sidecar table: preset, container, endpoints, the "off" answers (SPEC §6) |
//! | `exit_codes` | sets of exit statuses: `TANDEM_KEEP_ON_EXIT`'s grammar and canonical writing (SPEC §2, §10) |
//! | `duration` | Go's durations as both programs read them (SPEC §2) |
//! | `calendar` | a UTC date as days since the epoch, no date library |
//! | `help` | `--help` within 80 columns, options' text wrapped alike |
//! | `vars` | the `TANDEM_` variables the injector sets in a job container (SPEC §2, §9, §10) |
//! | `layout` | the Pod layout and keys: label, annotations, names, directories (SPEC §10) |
//! | `unwind_tables` | for the build scripts of tandem and its bench probe: a release binary linked without unwind tables, both alike |

#![warn(missing_docs)]

pub mod calendar;
pub mod duration;
pub mod exit_codes;
pub mod help;
pub mod layout;
pub mod sidecars;
pub mod unwind_tables;
pub mod vars;
