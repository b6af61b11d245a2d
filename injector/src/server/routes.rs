//! What each path answers: `POST /mutate`, `/mutate/namespace` and
//! `/mutate/namespace/audit` (a review, logged and counted), `GET /healthz` (503 while draining) and `GET /metrics`;
//! anything else is a 404 or 405 with a one-line reason.

use std::net::SocketAddr;
use std::time::Instant;

use super::http::{self, Request, Status};
use crate::admission;
use crate::inject::Scope;
use crate::inject::delivery::Install;
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
    let get = request.method == "GET";
    match (request.path.as_str(), Scope::from_path(&request.path)) {
        ("/healthz", _) if get => health(draining),
        ("/metrics", _) if get => (
            http::OK,
            metrics::CONTENT_TYPE,
            metrics::render().into_bytes(),
        ),
        ("/healthz" | "/metrics", _) => {
            let text = format!("GET {}\n", request.path);
            (http::METHOD_NOT_ALLOWED, "text/plain", text.into_bytes())
        }
        (_, Some(_)) if request.method != "POST" => {
            let text = format!("tandem-injector: {} takes POST\n", request.path);
            (http::METHOD_NOT_ALLOWED, "text/plain", text.into_bytes())
        }
        (_, Some(scope)) => review(request, install, scope, registry, peer),
        (_, None) => {
            let text = "tandem-injector: no such path: POST /mutate, /mutate/namespace or \
                        /mutate/namespace/audit, GET /healthz or /metrics\n";
            (http::NOT_FOUND, "text/plain", text.as_bytes().to_vec())
        }
    }
}

/// `GET /healthz`: 503 once SIGTERM came, so the Service stops sending here.
fn health(draining: bool) -> (Status, &'static str, Vec<u8>) {
    if draining {
        let text = b"draining: this replica is stopping\n".to_vec();
        (http::UNAVAILABLE, "text/plain", text)
    } else {
        (http::OK, "text/plain", b"ok\n".to_vec())
    }
}

/// A review on the route `scope`: answered, logged and counted.
fn review(
    request: &Request,
    install: &Install,
    scope: Scope,
    registry: &Registry,
    peer: SocketAddr,
) -> (Status, &'static str, Vec<u8>) {
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
