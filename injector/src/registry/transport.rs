//! The registry client's HTTP side: one agent (Mozilla's roots and
//! `--registry-ca`, no redirects of its own, no proxy from the environment,
//! every name resolved through the address rule of [`super::reach`]), one GET
//! within the lookup's deadline, its body read up to a limit, and what a
//! transport error means as a [`Failure`].

use std::sync::Arc;
use std::time::Instant;

use ureq::tls::{Certificate, RootCerts, TlsConfig, TlsProvider};
use ureq::unversioned::transport::DefaultConnector;
use ureq::{Agent, Body};

use super::allow::Allow;
use super::failure::Failure;
use super::reach::{Guard, Refused};

/// The agent every registry request goes through.
pub fn agent(extra_roots: &[Vec<u8>], allow: Arc<Allow>) -> Agent {
    let roots: Vec<Certificate<'static>> = webpki_root_certs::TLS_SERVER_ROOT_CERTS
        .iter()
        .map(|c| Certificate::from_der(c.as_ref()).to_owned())
        .chain(
            extra_roots
                .iter()
                .map(|der| Certificate::from_der(der).to_owned()),
        )
        .collect();
    let tls = TlsConfig::builder()
        .provider(TlsProvider::Rustls)
        .root_certs(RootCerts::Specific(Arc::new(roots)))
        .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .build();
    // A proxy would resolve and connect on the injector's behalf, out of the
    // address rule's sight: none is taken from the environment.
    let config = Agent::config_builder()
        .tls_config(tls)
        .proxy(None)
        .https_only(true)
        .max_redirects(0)
        .http_status_as_error(false)
        .user_agent(concat!("tandem-injector/", env!("CARGO_PKG_VERSION")))
        .build();
    Agent::with_parts(config, DefaultConnector::default(), Guard::new(allow))
}

/// GETs `url` with this query and these headers, within `deadline`: the
/// response, any status.
pub fn get(
    agent: &Agent,
    url: &str,
    query: &[(&str, &str)],
    headers: &[(&str, &str)],
    deadline: Instant,
) -> Result<ureq::http::Response<Body>, Failure> {
    let remaining = deadline.saturating_duration_since(Instant::now());
    if remaining.is_zero() {
        return Err(Failure::Timeout);
    }
    let mut request = agent
        .get(url)
        .config()
        .timeout_global(Some(remaining))
        .build()
        .query_pairs(query.iter().copied());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.call().map_err(|e| failure(url, e))
}

/// The body of `response` from `url`, at most `limit` bytes.
pub fn read(
    url: &str,
    response: &mut ureq::http::Response<Body>,
    limit: u64,
) -> Result<Vec<u8>, Failure> {
    response
        .body_mut()
        .with_config()
        .limit(limit)
        .read_to_vec()
        .map_err(|e| failure(url, e))
}

/// The failure for a transport error on `url`.
fn failure(url: &str, error: ureq::Error) -> Failure {
    let tls = |e: &(dyn std::error::Error + 'static)| e.is::<rustls::Error>();
    match error {
        ureq::Error::Timeout(_) => Failure::Timeout,
        ureq::Error::Io(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
            ) =>
        {
            Failure::Timeout
        }
        ureq::Error::Io(e) if e.get_ref().is_some_and(|inner| tls(inner)) => {
            Failure::Tls(format!("{url}: {e}"))
        }
        ureq::Error::Other(e) if e.is::<Refused>() => Failure::NotAllowed(e.to_string()),
        ureq::Error::BodyExceedsLimit(limit) => {
            Failure::Malformed(format!("{url} answered more than {limit} bytes"))
        }
        e @ (ureq::Error::Rustls(_)
        | ureq::Error::Tls(_)
        | ureq::Error::Pem(_)
        | ureq::Error::TlsRequired) => Failure::Tls(format!("{url}: {e}")),
        other => Failure::Unreachable(format!("{url}: {other}")),
    }
}
