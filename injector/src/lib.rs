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
//! | `inject` | which Pods and containers change, and the JSONPatch that changes them |
//! | `install` | how the binary reaches the job containers: init container or image volume |
//! | `sidecars` | the sidecar containers tandem knows and the settings they imply |
//! | `cli` | the command line and its variables, validated (64 on bad input) |
//! | `http` | one HTTP/1.1 request read within bounds, one response written |
//! | `deadline` | a socket whose reads and writes end by a deadline |
//! | `tls` | the certificate files and their reload on change |
//! | `server` | accepting, the connection cap, routing, shutdown on SIGTERM |
//! | `log` | stderr lines |
//! | `policy` | the same change as admission policies (`policy`), and their CEL |
//! | `yaml` | the YAML those are printed as |

#![warn(missing_docs)]

pub mod admission;
pub mod cli;
pub mod deadline;
pub mod entrypoint;
pub mod http;
pub mod inject;
pub mod install;
pub mod log;
pub mod policy;
pub mod registry;
pub mod server;
pub mod sidecars;
pub mod tls;
pub mod yaml;
