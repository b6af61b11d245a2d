//! Where a sidecar is reached: its endpoints on loopback, what tandem waits
//! on there (SPEC §3) and how it tells the sidecar to quit (SPEC §5).

/// What every endpoint's URL starts with, its port after it: every sidecar
/// tandem knows listens on loopback.
pub const HOST: &str = "http://127.0.0.1:";

/// One of a sidecar's HTTP endpoints on loopback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    /// Its default port.
    pub port: u16,
    /// Its path, from `/`; empty for a base URL that tandem adds the path to.
    pub path: &'static str,
}

impl Endpoint {
    /// Its URL, on `port` when one replaces the default (the row's `port_var`).
    pub fn url(&self, port: Option<u16>) -> String {
        format!("{HOST}{}{}", port.unwrap_or(self.port), self.path)
    }
}

/// What tandem waits on before it starts the app (SPEC §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ready {
    /// Nothing: the sidecar is ready before the job container starts.
    Nothing,
    /// A `GET` that answers 2xx when the sidecar is ready.
    Get(Endpoint),
    /// Envoy's admin base: tandem reads its server state there, and Envoy's
    /// own quit follows from it.
    EnvoyAdmin(Endpoint),
}

/// How tandem tells the sidecar to quit (SPEC §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quit {
    /// A `POST` to this endpoint (any sidecar's own quit).
    Post(Endpoint),
    /// pilot-agent's base: tandem POSTs its `/quitquitquit`, which stops Envoy too.
    PilotAgent(Endpoint),
    /// Envoy's admin `/quitquitquit`: tandem POSTs it at the admin base it
    /// waited on ([`Ready::EnvoyAdmin`]).
    EnvoyAdmin(Endpoint),
}

impl Ready {
    /// The endpoint tandem checks, whatever it checks there.
    pub fn endpoint(&self) -> Option<&Endpoint> {
        match self {
            Ready::Nothing => None,
            Ready::Get(e) | Ready::EnvoyAdmin(e) => Some(e),
        }
    }
}

impl Quit {
    /// The endpoint tandem POSTs to, or the base it adds the quit path to.
    pub fn endpoint(&self) -> &Endpoint {
        match self {
            Quit::Post(e) | Quit::PilotAgent(e) | Quit::EnvoyAdmin(e) => e,
        }
    }
}
