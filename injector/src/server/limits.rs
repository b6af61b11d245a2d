//! The server's time limits: a request's, an idle connection's, the drain's.

use std::time::Duration;

/// A request is read and answered within this from its first byte; a new
/// connection's TLS handshake, within this from the accept (Go's client, the
/// API server's, dials and shakes hands at once).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// A kept-alive connection with no request for this long is closed: above the
/// 90 s the API server keeps an idle connection to a webhook, so it is always
/// the client that closes one, never the injector under a request in flight.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long reviews are still answered after SIGTERM (`--drain`).
pub const DRAIN: Duration = Duration::from_secs(10);
/// The server's time limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// A request's, from its first byte (and a handshake's, from the accept).
    pub request: Duration,
    /// A kept-alive connection's between requests.
    pub idle: Duration,
    /// The drain after SIGTERM.
    pub drain: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            request: REQUEST_TIMEOUT,
            idle: IDLE_TIMEOUT,
            drain: DRAIN,
        }
    }
}
