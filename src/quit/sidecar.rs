//! Stopping Istio/Envoy by the route the plan chose (SPEC §5.2): a POST on a
//! thread of its own within the deadline, and pilot-agent's SIGINT fallback.

use std::time::{Duration, Instant};

use ureq::Agent;

use super::fanout::{no_answer, post_one};
use super::hints::{Whose, log_result};
use super::pilot_agent;
use crate::deadline::run_by;
use crate::settings::PkillFallback;
use crate::value::url::HttpUrl;

/// Time kept after a failed pilot-agent POST for the SIGINT fallback (a `/proc`
/// scan and a `kill`), at most a tenth of what is left.
const FALLBACK_RESERVE: Duration = Duration::from_millis(20);

/// How Istio/Envoy gets stopped (SPEC §5.2, first match wins).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum SidecarStop {
    /// POST to pilot-agent (`ISTIO_QUIT_API`, the istio preset, or 15000 → 15020);
    /// if it cannot connect, SIGINT a visible pilot-agent.
    PilotAgent(HttpUrl),
    /// POST `ENVOY_KILL_API` as given.
    EnvoyKill(HttpUrl),
    /// SIGINT a visible pilot-agent (Istio with its admin on another port), else
    /// POST this plain Envoy admin's `/quitquitquit`.
    SignalElseAdmin(HttpUrl),
}

/// Runs [`stop_sidecar`] on a thread of its own (when there is a deadline) and
/// waits for it until `deadline` at most: the deadline is the main thread's to
/// keep, to the millisecond, whatever a request's socket timeout or a long
/// `/proc` scan would add. A stop still running then is abandoned with the
/// process. Returns the failure line.
pub(super) fn stop_sidecar_by(
    agent: &Agent,
    stop: &SidecarStop,
    fallback: PkillFallback,
    deadline: Option<Instant>,
    stopping: bool,
) -> Option<String> {
    // pilot-agent's SIGINT fallback follows a failed POST: the POST ends a little
    // before the deadline, so the fallback still happens within it.
    let post_deadline = match (stop, fallback, deadline) {
        (
            SidecarStop::PilotAgent(_),
            PkillFallback::OnRefused | PkillFallback::OnAnyFailure,
            Some(d),
        ) => {
            let left = d.saturating_duration_since(Instant::now());
            Some(d - (left / 10).min(FALLBACK_RESERVE))
        }
        _ => deadline,
    };
    let (agent, owned) = (agent.clone(), stop.clone());
    let quit = move || stop_sidecar(&agent, &owned, fallback, post_deadline, stopping);
    match run_by("quit", deadline, quit) {
        Some(failed) => failed,
        None => log_result(stop.url(), stop.whose(), &Err(no_answer()), stopping),
    }
}

impl SidecarStop {
    /// Whose quit this route's POST is.
    fn whose(&self) -> Whose {
        match self {
            SidecarStop::PilotAgent(_) => Whose::PilotAgent,
            SidecarStop::EnvoyKill(_) => Whose::EnvoyKill,
            SidecarStop::SignalElseAdmin(_) => Whose::EnvoyAdmin,
        }
    }

    /// The URL this route POSTs to (or falls back to).
    fn url(&self) -> &HttpUrl {
        match self {
            SidecarStop::PilotAgent(url)
            | SidecarStop::EnvoyKill(url)
            | SidecarStop::SignalElseAdmin(url) => url,
        }
    }
}

/// Istio/Envoy's quit through the route `plan` chose (SPEC §5.2); the failure
/// line when it failed: no answer, or any answer but 2xx (SPEC §5.3). After a
/// pilot-agent POST that got no connection, or that failed in any way with
/// `ISTIO_FALLBACK_PKILL=true`, a visible pilot-agent gets SIGINT.
fn stop_sidecar(
    agent: &Agent,
    stop: &SidecarStop,
    fallback: PkillFallback,
    deadline: Option<Instant>,
    stopping: bool,
) -> Option<String> {
    let whose = stop.whose();
    match stop {
        SidecarStop::EnvoyKill(url) => post_one(agent, url, whose, deadline, stopping)
            .err()
            .map(|(line, _)| line),
        SidecarStop::PilotAgent(url) => {
            let (failed, no_connection) = post_one(agent, url, whose, deadline, stopping).err()?;
            let signal = match fallback {
                PkillFallback::OnRefused => no_connection,
                PkillFallback::OnAnyFailure => true,
                PkillFallback::Never => false,
            };
            // A pilot-agent that got the signal is stopped after all.
            (!(signal && pilot_agent::interrupt_all())).then_some(failed)
        }
        SidecarStop::SignalElseAdmin(url) => {
            if fallback != PkillFallback::Never && pilot_agent::interrupt_all() {
                None
            } else {
                post_one(agent, url, whose, deadline, stopping)
                    .err()
                    .map(|(line, _)| line)
            }
        }
    }
}
