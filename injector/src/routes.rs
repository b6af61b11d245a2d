//! What each path answers: `POST /mutate`, `/mutate/namespace` and
//! `/mutate/namespace/audit` (a review, logged and counted), `GET /healthz` (503 while draining) and `GET /metrics`;
//! anything else is a 404 or 405 with a one-line reason.

use std::net::SocketAddr;
use std::time::Instant;

use crate::admission;
use crate::http::{self, Request, Status};
use crate::inject::Scope;
use crate::install::Install;
use crate::metrics::{self, Counter};
use crate::registry::Registry;
use crate::say;

/// The answer to one request from `peer`: status, content type, body.
/// `install` is the tandem image and its route into the Pods; `registry`
/// reads the images of job containers without `command` (within its
/// deadline); `draining`: SIGTERM came.
pub fn answer(
    request: &Request,
    install: &Install,
    registry: &Registry,
    draining: bool,
    peer: SocketAddr,
) -> (Status, &'static str, Vec<u8>) {
    let scope = match request.path.as_str() {
        "/healthz" if request.method == "GET" => {
            return if draining {
                let text = b"draining: this replica is stopping\n".to_vec();
                (http::UNAVAILABLE, "text/plain", text)
            } else {
                (http::OK, "text/plain", b"ok\n".to_vec())
            };
        }
        "/metrics" if request.method == "GET" => {
            return (
                http::OK,
                metrics::CONTENT_TYPE,
                metrics::render().into_bytes(),
            );
        }
        "/mutate" => Scope::Label,
        "/mutate/namespace" => Scope::Namespace,
        "/mutate/namespace/audit" => Scope::NamespaceAudit,
        "/healthz" | "/metrics" => {
            let text = format!("GET {}\n", request.path);
            return (http::METHOD_NOT_ALLOWED, "text/plain", text.into_bytes());
        }
        _ => {
            let text = "tandem-injector: no such path: POST /mutate, /mutate/namespace or \
                        /mutate/namespace/audit, GET /healthz or /metrics\n";
            return (http::NOT_FOUND, "text/plain", text.as_bytes().to_vec());
        }
    };
    if request.method != "POST" {
        let text = format!("tandem-injector: {} takes POST\n", request.path);
        return (http::METHOD_NOT_ALLOWED, "text/plain", text.into_bytes());
    }
    let deadline = Instant::now() + registry.deadline;
    match admission::answer_looking(&request.body, install, scope, registry, deadline) {
        Ok(answer) => {
            say!("{}", answer.summary);
            metrics::count(match &answer.report {
                Some(report) if report.audit => Counter::ReviewAudited,
                _ if answer.changed => Counter::ReviewChanged,
                _ => Counter::ReviewUnchanged,
            });
            if let Some(report) = &answer.report {
                report.count();
            }
            (http::OK, "application/json", answer.body)
        }
        Err(reason) => {
            metrics::count(Counter::ErrorBadReview);
            say!("warning: {peer}: 400: {reason}");
            let text = format!("tandem-injector: {reason}\n");
            (http::BAD_REQUEST, "text/plain", text.into_bytes())
        }
    }
}
