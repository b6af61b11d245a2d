//! tandem-injector: a Kubernetes mutating admission webhook that puts tandem into
//! the Pods of opted-in Jobs (SPEC §10), so no Job or CronJob spec is edited by
//! hand. `main.rs` tells the story; the modules below are its parts, public so the
//! fuzz target, the tests and the benchmark call the same code.
//!
//! | module | owns |
//! |---|---|
//! | `admission` | an `AdmissionReview` body in, the response body out |
//! | `inject` | which Pods and containers change, and the JSONPatch that changes them (`inject/`: scope, selectors, pod, command, entrypoint, env, patch, delivery, report) |
//! | `left_alone` | the containers their creator stops itself (Airflow's XCom container): never wrapped, waited for or quit |
//! | `layout` | the Pod layout and keys: label, annotations, names, directories (`tandem-common`'s, shared with the wrapper) |
//! | `registry` | the image's configuration from its registry, cached |
//! | `string_list` | a JSON list of strings: a command, args, an image's Entrypoint and Cmd |
//! | `sidecars` | the sidecars tandem knows: `tandem-common`'s table, the wrapper's too |
//! | `cli` | the command line and its variables, validated (64 on bad input; `cli/`: args, options, values, help) |
//! | `server` | accepting, the connection cap, time limits, the drain on SIGTERM (`server/`: connection, shared, limits, poll, routes, http, timed_stream, tls) |
//! | `duration` | Go's durations: `tandem-common`'s, as the wrapper reads them |
//! | `metrics` | the counters and the latency histogram of `GET /metrics` |
//! | `say` | stderr lines (`say!`) |
//! | `audit` | `tandem-injector audit`: a List of Pods in, the stuck ones and what injection would do out (`audit/`: list, stuck, would, render, command) |
//! | `policy` | the same change as admission policies (`policy`), and their CEL |
//! | `webhook` | the webhook's configuration (`webhook`) |
//! | `yaml` | the YAML those are printed as |

#![warn(missing_docs)]

pub mod admission;
pub mod audit;
pub mod cli;
// The fuzz targets' bodies, for the fuzzers and the stable replay alike.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzz_bodies;
pub use tandem_common::duration;
pub mod inject;
pub use tandem_common::layout;
pub mod left_alone;
pub mod metrics;
pub mod policy;
pub mod registry;
pub mod say;
pub mod server;
pub use tandem_common::sidecars;
pub mod string_list;
pub mod webhook;
pub mod yaml;

#[cfg(test)]
mod tests;
