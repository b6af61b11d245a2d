//! tandem-injector: a Kubernetes mutating admission webhook that puts tandem into
//! the Pods of opted-in Jobs (SPEC §10), so no Job or CronJob spec is edited by
//! hand. `main.rs` tells the story; the modules below are its parts, public so the
//! fuzz target, the tests and the benchmark call the same code.
//!
//! | module | owns |
//! |---|---|
//! | `admission` | an `AdmissionReview` body in, the response body out |
//! | `entrypoint` | a container without `command`: Kubernetes' command/args rule, the annotation |
//! | `registry` | the image's configuration from its registry, cached |
//! | `inject` | which Pods and containers change, and the JSONPatch that changes them (`inject/`: scope, pod, command, env, patch) |
//! | `words` | a JSON list of strings: a command, args, an image's Entrypoint and Cmd |
//! | `install` | how the binary reaches the job containers: init container or image volume |
//! | `report` | what a review did to a Pod: the annotation, warnings, log line, counts |
//! | `sidecars` | the sidecars tandem knows: the wrapper's own table (`src/sidecars.rs`), compiled here too |
//! | `cli` | the command line and its variables, validated (64 on bad input; `cli/`: options, values) |
//! | `http` | one HTTP/1.1 request read within bounds, one response written |
//! | `deadline` | a socket whose reads and writes end by a deadline |
//! | `duration` | Go's durations: the wrapper's `src/value/duration.rs`, compiled here too |
//! | `tls` | the certificate files and their reload on change |
//! | `routes` | what each path answers; a review logged and counted |
//! | `server` | accepting, the connection cap, time limits, the drain on SIGTERM (`server/`: connection, poll) |
//! | `metrics` | the counters and the latency histogram of `GET /metrics` |
//! | `log` | stderr lines |
//! | `audit` | `tandem-injector audit`: a List of Pods in, the stuck ones and what injection would do out (`audit/`: list, stuck, would, render, command) |
//! | `policy` | the same change as admission policies (`policy`), and their CEL |
//! | `yaml` | the YAML those are printed as |

#![warn(missing_docs)]

pub mod admission;
pub mod audit;
pub mod cli;
pub mod deadline;
// Go's durations as the wrapper reads them (SPEC §2), a file of `std` only;
// its whole seconds (`parse_seconds`) are the wrapper's alone.
#[allow(dead_code)]
#[path = "../../src/value/duration.rs"]
pub mod duration;
pub mod entrypoint;
pub mod http;
pub mod inject;
pub mod install;
pub mod log;
pub mod metrics;
pub mod policy;
pub mod registry;
pub mod report;
pub mod routes;
pub mod server;
// The one table of sidecars, shared with the wrapper: a file of `std` only, so
// the injector links none of the wrapper's crates (ureq, lexopt, signal code).
#[path = "../../src/sidecars.rs"]
pub mod sidecars;
pub mod tls;
pub mod words;
pub mod yaml;
