//! The one route table: for each flavor, what a request means (probe, quit or
//! other) and the answer a real sidecar of that kind gives, plus [`Response`], the
//! answer any route or a script's own route sends.

use crate::script::Script;

/// Which sidecar admin API the fake imitates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// Envoy admin: `GET /ready`, `GET /server_info`, `POST /quitquitquit`.
    Envoy,
    /// An Envoy older than `/ready`: `GET /ready` is `404`, so clients must read
    /// `state` from `GET /server_info` (SPEC §3).
    OldEnvoy,
    /// Istio's pilot-agent: `GET /healthz/ready`, `POST /quitquitquit`.
    PilotAgent,
    /// linkerd2-proxy admin: `GET /ready`, `GET /live`, `POST /shutdown`.
    Linkerd,
    /// Any helper: every `GET` is a readiness probe, every `POST` is a quit.
    Generic,
}

/// Every flavor, in the order of their names in usage texts.
const FLAVORS: [Flavor; 5] = [
    Flavor::Envoy,
    Flavor::OldEnvoy,
    Flavor::PilotAgent,
    Flavor::Linkerd,
    Flavor::Generic,
];

impl Flavor {
    /// The name used on the example's command line (`old-envoy`, …).
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Envoy => "envoy",
            Flavor::OldEnvoy => "old-envoy",
            Flavor::PilotAgent => "pilot-agent",
            Flavor::Linkerd => "linkerd",
            Flavor::Generic => "generic",
        }
    }

    /// Parses a name produced by [`Flavor::name`].
    pub fn parse(name: &str) -> Option<Flavor> {
        FLAVORS.into_iter().find(|flavor| flavor.name() == name)
    }
}

/// What a request means to the flavor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A readiness probe: counted for `ready_after_polls`.
    Probe,
    /// A quit request: logged as such, and ends the fake with `exit_on_quit`.
    Quit,
    Other,
}

/// One row of [`ROUTES`]: requests it matches, what they mean, how they are answered.
struct Route {
    flavors: &'static [Flavor],
    /// `None` matches any method.
    method: Option<&'static str>,
    /// `None` matches any path.
    path: Option<&'static str>,
    kind: Kind,
    /// The answer, given whether the fake is ready now and the script.
    answer: fn(bool, &Script) -> Response,
}

use Flavor::{Envoy, Generic, Linkerd, OldEnvoy, PilotAgent};

/// Envoy and the APIs that share its `/quitquitquit`.
const QUITQUITQUIT: &[Flavor] = &[Envoy, OldEnvoy, PilotAgent];

/// The routes of every flavor, first match wins; what no row matches is a `404`.
/// Each answer is what the real sidecar sends, as far as tandem reads it.
const ROUTES: &[Route] = &[
    Route {
        flavors: &[Envoy],
        method: Some("GET"),
        path: Some("/ready"),
        kind: Kind::Probe,
        answer: |ready, _| match ready {
            true => Response::text(200, "LIVE\n"),
            false => Response::text(503, "PRE_INITIALIZING\n"),
        },
    },
    // Envoy answers /server_info in every state; only the field changes.
    Route {
        flavors: &[Envoy, OldEnvoy],
        method: Some("GET"),
        path: Some("/server_info"),
        kind: Kind::Probe,
        answer: |ready, _| {
            let state = if ready { "LIVE" } else { "PRE_INITIALIZING" };
            Response::json(
                200,
                &format!(
                    "{{\"version\":\"fake/1.0\",\"state\":\"{state}\",\"hot_restart_version\":\"fake\",\"command_line_options\":{{}}}}\n"
                ),
            )
        },
    },
    Route {
        flavors: QUITQUITQUIT,
        method: Some("POST"),
        path: Some("/quitquitquit"),
        kind: Kind::Quit,
        answer: |_, _| Response::text(200, "OK\n"),
    },
    // Envoy refuses state-changing admin paths on GET.
    Route {
        flavors: QUITQUITQUIT,
        method: None,
        path: Some("/quitquitquit"),
        kind: Kind::Other,
        answer: |_, _| Response::text(405, "method not allowed, use POST\n"),
    },
    Route {
        flavors: &[PilotAgent],
        method: Some("GET"),
        path: Some("/healthz/ready"),
        kind: Kind::Probe,
        answer: |ready, _| Response::text(if ready { 200 } else { 503 }, ""),
    },
    Route {
        flavors: &[Linkerd],
        method: Some("GET"),
        path: Some("/ready"),
        kind: Kind::Probe,
        answer: |ready, _| match ready {
            true => Response::text(200, "ready\n"),
            false => Response::text(503, "not ready\n"),
        },
    },
    Route {
        flavors: &[Linkerd],
        method: Some("GET"),
        path: Some("/live"),
        kind: Kind::Other,
        answer: |_, _| Response::text(200, "live\n"),
    },
    // linkerd2-proxy hides /shutdown unless the endpoint is enabled.
    Route {
        flavors: &[Linkerd],
        method: Some("POST"),
        path: Some("/shutdown"),
        kind: Kind::Quit,
        answer: |_, script| match script.shutdown_enabled {
            true => Response::text(200, "shutdown\n"),
            false => Response::text(404, "not found\n"),
        },
    },
    Route {
        flavors: &[Generic],
        method: Some("GET"),
        path: None,
        kind: Kind::Probe,
        answer: |ready, _| match ready {
            true => Response::text(200, "ok\n"),
            false => Response::text(503, "not ready\n"),
        },
    },
    Route {
        flavors: &[Generic],
        method: Some("POST"),
        path: None,
        kind: Kind::Quit,
        answer: |_, _| Response::text(200, "ok\n"),
    },
    // A helper that stores what is PUT (an object-store gateway): where `make
    // pods`' --on-exit program uploads the job's output.
    Route {
        flavors: &[Generic],
        method: Some("PUT"),
        path: None,
        kind: Kind::Other,
        answer: |_, _| Response::text(201, "stored\n"),
    },
    Route {
        flavors: &[Generic],
        method: None,
        path: None,
        kind: Kind::Other,
        answer: |_, _| Response::text(405, "method not allowed\n"),
    },
];

/// The row of [`ROUTES`] for a request, if any.
fn route(flavor: Flavor, method: &str, path: &str) -> Option<&'static Route> {
    ROUTES.iter().find(|route| {
        route.flavors.contains(&flavor)
            && route.method.is_none_or(|m| m == method)
            && route.path.is_none_or(|p| p == path)
    })
}

/// What `method path` means to `flavor`, before readiness is considered.
pub(crate) fn kind(flavor: Flavor, method: &str, path: &str) -> Kind {
    route(flavor, method, path).map_or(Kind::Other, |route| route.kind)
}

/// The answer of `script`'s flavor to `method path` when the fake is `ready`.
pub(crate) fn answer(script: &Script, method: &str, path: &str, ready: bool) -> Response {
    match route(script.flavor, method, path) {
        Some(route) => (route.answer)(ready, script),
        None => Response::text(404, "not found\n"),
    }
}

/// A complete, well-formed answer: any status, header fields and body. The fake
/// adds `Content-Length` and `Connection` itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// Sent in order, after the status line (e.g. `Location`, `Content-Type`).
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// `status` with a `text/plain` `body`.
    pub fn text(status: u16, body: &str) -> Response {
        Response::new(status)
            .header("Content-Type", "text/plain; charset=utf-8")
            .body(body)
    }

    /// `status` with an `application/json` `body`.
    pub fn json(status: u16, body: &str) -> Response {
        Response::new(status)
            .header("Content-Type", "application/json")
            .body(body)
    }

    /// `status` with no header fields and an empty body.
    pub fn new(status: u16) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// Adds a header field.
    pub fn header(mut self, name: &str, value: &str) -> Response {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Replaces the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Response {
        self.body = body.into();
        self
    }

    /// The bytes on the wire, with `Content-Length` and `Connection` added.
    pub(crate) fn bytes(&self, keep_alive: bool) -> Vec<u8> {
        let connection = if keep_alive { "keep-alive" } else { "close" };
        let mut head = format!("HTTP/1.1 {} {}\r\n", self.status, reason(self.status));
        for (name, value) in &self.headers {
            head += &format!("{name}: {value}\r\n");
        }
        head += &format!(
            "Content-Length: {}\r\nConnection: {connection}\r\n\r\n",
            self.body.len()
        );
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(&self.body);
        bytes
    }
}

/// The reason phrase of `status` (clients ignore it; it keeps logs readable).
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        302 => "Found",
        307 => "Temporary Redirect",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flavor_name_parses_back() {
        for flavor in FLAVORS {
            assert_eq!(Flavor::parse(flavor.name()), Some(flavor));
        }
        assert_eq!(Flavor::parse("istio"), None);
    }

    #[test]
    fn quit_paths_are_quits_and_probes_are_probes() {
        for (flavor, method, path, expected) in [
            (Envoy, "GET", "/ready", Kind::Probe),
            (Envoy, "POST", "/quitquitquit", Kind::Quit),
            (Envoy, "GET", "/quitquitquit", Kind::Other),
            (OldEnvoy, "GET", "/ready", Kind::Other),
            (OldEnvoy, "GET", "/server_info", Kind::Probe),
            (PilotAgent, "GET", "/healthz/ready", Kind::Probe),
            (Linkerd, "POST", "/shutdown", Kind::Quit),
            (Linkerd, "GET", "/live", Kind::Other),
            (Generic, "GET", "/anything", Kind::Probe),
            (Generic, "POST", "/anything", Kind::Quit),
            (Generic, "PUT", "/anything", Kind::Other),
        ] {
            assert_eq!(
                kind(flavor, method, path),
                expected,
                "{flavor:?} {method} {path}"
            );
        }
    }

    #[test]
    fn response_bytes_carry_every_header_and_the_body() {
        let bytes = Response::new(302)
            .header("Location", "http://x/")
            .body("hi")
            .bytes(false);
        assert_eq!(
            String::from_utf8(bytes).expect("ASCII"),
            "HTTP/1.1 302 Found\r\nLocation: http://x/\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi"
        );
    }
}
