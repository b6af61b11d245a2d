//! The one HTTP client: ureq with no redirects, no proxy, status codes as values,
//! small buffers, a timeout on every request and a cap on every body read.

use std::io::{ErrorKind, Read};
use std::time::Duration;

use ureq::Agent;
use ureq::unversioned::transport::{Connector, TcpConnector, Transport};

use crate::resolve::LocalFirst;

/// Per-request timeout of readiness polls (SPEC §3).
pub const POLL_TIMEOUT: Duration = Duration::from_secs(1);
/// Largest body tandem reads (`/server_info`); the rest is never read.
const BODY_LIMIT: u64 = 64 * 1024;

/// Why a request got no status code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Short lowercase description for the log ("connection refused", "timed out").
    pub what: String,
    /// The TCP connection could not be made at all (SPEC §5.2 pilot-agent fallback).
    pub no_connection: bool,
    /// The connection was made, then closed or reset before an answer.
    pub closed: bool,
}

impl Failure {
    /// Nothing listens there any more, or it hung up without answering: what a
    /// sidecar that is itself stopping does (SPEC §5.3).
    pub fn peer_gone(&self) -> bool {
        self.no_connection || self.closed
    }
}

/// Builds the shared agent. Proxies from the environment are ignored on purpose:
/// the sidecar is on loopback and a Pod's `HTTP_PROXY` must not reroute it.
/// Names go through [`LocalFirst`] so `localhost` works in an image without
/// `/etc/hosts`.
pub fn agent() -> Agent {
    let config = Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .proxy(None)
        .timeout_global(Some(POLL_TIMEOUT))
        .user_agent(concat!("tandem/", env!("CARGO_PKG_VERSION")))
        .max_response_header_size(16 * 1024)
        .input_buffer_size(16 * 1024)
        .output_buffer_size(4 * 1024)
        .max_idle_connections(4)
        .max_idle_connections_per_host(1)
        .build();
    Agent::with_parts(config, connector(), LocalFirst::new())
}

/// A plain TCP connection, wrapped in TLS with the `rustls` feature. Not ureq's
/// default chain: its SOCKS warning and HTTP CONNECT proxy stages never apply
/// (`proxy(None)`).
#[cfg(not(feature = "rustls"))]
fn connector() -> impl Connector<(), Out = impl Transport> {
    TcpConnector::default()
}

#[cfg(feature = "rustls")]
fn connector() -> impl Connector<(), Out = impl Transport> {
    TcpConnector::default().chain(ureq::unversioned::transport::RustlsConnector::default())
}

/// Largest body `get_status` drains to keep its connection; a longer one is
/// dropped with the connection (Envoy's `/ready` says `LIVE`).
const DRAIN_LIMIT: u64 = 4 * 1024;

/// `GET url`: the status code. The body is read to its end and discarded, so
/// ureq returns the connection to the agent's pool and the next poll reuses it
/// (SPEC §3: one kept-alive connection a sidecar); a body that is too long or
/// breaks off only costs that connection, not the status already received.
pub fn get_status(agent: &Agent, url: &str) -> Result<u16, Failure> {
    let mut response = agent.get(url).call().map_err(|e| describe(&e))?;
    let status = response.status().as_u16();
    let mut body = response
        .body_mut()
        .with_config()
        .limit(DRAIN_LIMIT)
        .reader();
    // A small chunk, not `io::copy`'s buffer: an admin answer is a few bytes, and
    // a larger buffer would only grow the poller's stack.
    let mut chunk = [0u8; 512];
    loop {
        match body.read(&mut chunk) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    Ok(status)
}

/// `GET url`: the status code and at most 64 KiB of body as text.
pub fn get_text(agent: &Agent, url: &str) -> Result<(u16, String), Failure> {
    let mut response = agent.get(url).call().map_err(|e| describe(&e))?;
    let status = response.status().as_u16();
    let body = response
        .body_mut()
        .with_config()
        .limit(BODY_LIMIT)
        .read_to_string()
        .map_err(|e| describe(&e))?;
    Ok((status, body))
}

/// `POST url` with an empty body, bounded by `timeout` (`None`: unbounded).
pub fn post_empty(agent: &Agent, url: &str, timeout: Option<Duration>) -> Result<u16, Failure> {
    let response = agent
        .post(url)
        .config()
        .timeout_global(timeout)
        .build()
        .send_empty()
        .map_err(|e| describe(&e))?;
    Ok(response.status().as_u16())
}

fn describe(e: &ureq::Error) -> Failure {
    let closed = matches!(e, ureq::Error::Io(io) if matches!(
        io.kind(),
        ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::UnexpectedEof
            | ErrorKind::BrokenPipe
    ));
    let (what, no_connection) = match e {
        ureq::Error::Io(io) => match io.kind() {
            ErrorKind::ConnectionRefused => ("connection refused".to_string(), true),
            ErrorKind::ConnectionReset => ("connection reset".to_string(), false),
            ErrorKind::ConnectionAborted => ("connection aborted".to_string(), false),
            ErrorKind::UnexpectedEof => ("connection closed early".to_string(), false),
            ErrorKind::TimedOut => ("timed out".to_string(), false),
            _ => (io.to_string(), false),
        },
        ureq::Error::Timeout(_) => ("timed out".to_string(), false),
        ureq::Error::HostNotFound => ("host not found".to_string(), true),
        ureq::Error::ConnectionFailed => ("connection failed".to_string(), true),
        ureq::Error::BodyExceedsLimit(n) => (format!("body larger than {n} bytes"), false),
        ureq::Error::Protocol(_) | ureq::Error::LargeResponseHeader(..) => {
            ("not an HTTP answer".to_string(), false)
        }
        other => (other.to_string(), false),
    };
    Failure {
        what,
        no_connection,
        closed,
    }
}
