//! What the fake answers: a [`Script`] of flavor, readiness timing, delay, the
//! script's own routes and [`Fault`]s.

use crate::routes::{Flavor, Response};
use crate::server::Req;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A misbehaviour the fake shows instead of a proper answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Read the request and never answer; the socket stays open until the peer
    /// closes it or the fake is dropped.
    Hang,
    /// Read the request, then close with a TCP RST (`SO_LINGER` set to 0 through
    /// `setsockopt`, since `TcpStream::set_linger` is unstable).
    Reset,
    /// Answer with 64 KiB of non-HTTP bytes, then close.
    Garbage,
    /// Answer `200` with `Content-Length: 1000000000000` and write body bytes as
    /// fast as the peer reads, until it goes away or the fake is dropped.
    EndlessBody,
    /// Send a valid `200` response one byte every 200 ms, then close.
    Trickle,
}

impl Fault {
    /// The name used on the example's command line (`hang`, `endless`, …).
    pub fn name(self) -> &'static str {
        match self {
            Fault::Hang => "hang",
            Fault::Reset => "reset",
            Fault::Garbage => "garbage",
            Fault::EndlessBody => "endless",
            Fault::Trickle => "trickle",
        }
    }

    /// Parses a name produced by [`Fault::name`].
    pub fn parse(name: &str) -> Option<Fault> {
        [
            Fault::Hang,
            Fault::Reset,
            Fault::Garbage,
            Fault::EndlessBody,
            Fault::Trickle,
        ]
        .into_iter()
        .find(|fault| fault.name() == name)
    }
}

/// Called for every parsed request, after it is logged and before it is answered.
pub type OnRequest = Arc<dyn Fn(&Req) + Send + Sync>;

/// What the fake answers. Build with [`Script::new`] (or a flavor shortcut) and the
/// builder methods; every field is public for tests that prefer a struct literal.
#[derive(Clone)]
pub struct Script {
    /// Which admin API to imitate. Default: [`Flavor::Envoy`].
    pub flavor: Flavor,
    /// Time from start until readiness probes succeed; `None` never. Default: ready at once.
    pub ready_after: Option<Duration>,
    /// When set, the first N readiness probes fail and later ones succeed
    /// (`ready_after` is then ignored). Default: `None`.
    pub ready_after_polls: Option<u32>,
    /// Pause before every answer (also before a faulty one). Default: none.
    pub delay: Duration,
    /// The script's own routes: a fixed response per path (query string
    /// excluded), for every method, whatever the flavor says. Default: none.
    pub responses: Vec<(String, Response)>,
    /// Misbehaviours: `(None, f)` applies to every path, `(Some(p), f)` to path `p`.
    /// The first match wins. Default: none.
    pub faults: Vec<(Option<String>, Fault)>,
    /// Linkerd only: whether `POST /shutdown` is enabled. Default: `true`.
    pub shutdown_enabled: bool,
    /// Stop serving right after a quit request was answered with 2xx. Default: `false`.
    pub exit_on_quit: bool,
    /// Hook for each request (the example logs with it). Default: none.
    pub on_request: Option<OnRequest>,
}

impl Default for Script {
    fn default() -> Script {
        Script::new(Flavor::Envoy)
    }
}

impl fmt::Debug for Script {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Script")
            .field("flavor", &self.flavor)
            .field("ready_after", &self.ready_after)
            .field("ready_after_polls", &self.ready_after_polls)
            .field("delay", &self.delay)
            .field("responses", &self.responses)
            .field("faults", &self.faults)
            .field("shutdown_enabled", &self.shutdown_enabled)
            .field("exit_on_quit", &self.exit_on_quit)
            .field("on_request", &self.on_request.is_some())
            .finish()
    }
}

impl Script {
    /// A script for `flavor` that is ready at once and answers normally.
    pub fn new(flavor: Flavor) -> Script {
        Script {
            flavor,
            ready_after: Some(Duration::ZERO),
            ready_after_polls: None,
            delay: Duration::ZERO,
            responses: Vec::new(),
            faults: Vec::new(),
            shutdown_enabled: true,
            exit_on_quit: false,
            on_request: None,
        }
    }

    /// `Script::new(Flavor::Envoy)`.
    pub fn envoy() -> Script {
        Script::new(Flavor::Envoy)
    }

    /// `Script::new(Flavor::OldEnvoy)`.
    pub fn old_envoy() -> Script {
        Script::new(Flavor::OldEnvoy)
    }

    /// `Script::new(Flavor::PilotAgent)`.
    pub fn pilot_agent() -> Script {
        Script::new(Flavor::PilotAgent)
    }

    /// `Script::new(Flavor::Linkerd)`.
    pub fn linkerd() -> Script {
        Script::new(Flavor::Linkerd)
    }

    /// `Script::new(Flavor::Generic)`.
    pub fn generic() -> Script {
        Script::new(Flavor::Generic)
    }

    /// Readiness probes fail until `after` has passed since start.
    pub fn ready_after(mut self, after: Duration) -> Script {
        self.ready_after = Some(after);
        self
    }

    /// Readiness probes fail until [`FakeAdmin::make_ready`](crate::FakeAdmin::make_ready) is called.
    pub fn never_ready(mut self) -> Script {
        self.ready_after = None;
        self
    }

    /// The first `polls` readiness probes fail ("503 × n, then 200").
    pub fn ready_after_polls(mut self, polls: u32) -> Script {
        self.ready_after_polls = Some(polls);
        self
    }

    /// Every answer is sent `delay` after its request was read.
    pub fn delay(mut self, delay: Duration) -> Script {
        self.delay = delay;
        self
    }

    /// `path` always answers `status` (any method), whatever the flavor says.
    pub fn status_override(self, path: &str, status: u16) -> Script {
        self.respond(path, Response::text(status, &format!("status {status}\n")))
    }

    /// `path` always answers `response` (any method): any status, header fields
    /// and body, e.g. a redirect.
    pub fn respond(mut self, path: &str, response: Response) -> Script {
        self.responses.push((path.to_owned(), response));
        self
    }

    /// Every request gets `fault` instead of an answer.
    pub fn fault(mut self, fault: Fault) -> Script {
        self.faults.push((None, fault));
        self
    }

    /// Requests for `path` get `fault`; other paths answer normally.
    pub fn fault_on(mut self, path: &str, fault: Fault) -> Script {
        self.faults.push((Some(path.to_owned()), fault));
        self
    }

    /// Linkerd: whether `POST /shutdown` answers 200 (enabled) or 404.
    pub fn shutdown_enabled(mut self, enabled: bool) -> Script {
        self.shutdown_enabled = enabled;
        self
    }

    /// Stop serving after answering a quit request with 2xx
    /// (see [`FakeAdmin::wait_until_stopped`](crate::FakeAdmin::wait_until_stopped)).
    pub fn exit_on_quit(mut self, exit: bool) -> Script {
        self.exit_on_quit = exit;
        self
    }

    /// Calls `hook` for each request, after logging it and before answering.
    pub fn on_request(mut self, hook: impl Fn(&Req) + Send + Sync + 'static) -> Script {
        self.on_request = Some(Arc::new(hook));
        self
    }

    pub(crate) fn fault_for(&self, path: &str) -> Option<Fault> {
        self.faults
            .iter()
            .find(|(only, _)| only.as_deref().is_none_or(|only| only == path))
            .map(|&(_, fault)| fault)
    }

    /// The script's own response for `path`, if it has one.
    pub(crate) fn response_for(&self, path: &str) -> Option<&Response> {
        self.responses
            .iter()
            .find(|(only, _)| only == path)
            .map(|(_, response)| response)
    }
}
