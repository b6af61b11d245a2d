//! What every connection of the server shares: the TLS configuration, the
//! injection's settings, the limits, the stop and closing sockets, the count
//! of open connections.

use std::os::unix::net::UnixStream;
use std::sync::{Arc, Condvar, Mutex};

use rustls::ServerConfig;

use super::limits::Limits;
use super::poll::readable;
use crate::inject::delivery::Install;
use crate::registry::Registry;

/// What every connection shares.
pub(super) struct Shared {
    pub(super) tls: Arc<ServerConfig>,
    pub(super) install: Install,
    pub(super) registry: Arc<Registry>,
    pub(super) limits: Limits,
    /// Readable once SIGTERM came: draining.
    pub(super) stop: UnixStream,
    /// Readable (its peer closed) once the drain is over: idle connections end.
    pub(super) closing: UnixStream,
    pub(super) open: Mutex<usize>,
    pub(super) closed: Condvar,
}

impl Shared {
    /// SIGTERM came.
    pub(super) fn draining(&self) -> bool {
        readable(&self.stop)
    }
}
