//! The quit requests: concurrent POSTs to the generic endpoints, each logged as it
//! answers (SPEC §5.3), and one request bounded by the quit deadline.

use std::thread;
use std::time::{Duration, Instant};

use ureq::Agent;

use super::hints::{Whose, log_result};
use crate::deadline::{Jobs, run_by};
use crate::http;
use crate::value::url::HttpUrl;

/// Concurrent POSTs, one thread each, whose results are logged as they arrive;
/// each URL still unanswered at the end gets its own line too (SPEC §5.3).
pub(super) struct Fanout<'a> {
    urls: &'a [HttpUrl],
    /// tandem got SIGTERM before the quit phase (SPEC §5.3).
    stopping: bool,
    requests: Jobs<Result<u16, http::Failure>>,
    /// The first failure line, for the termination log.
    pub(super) failed: Option<String>,
}

impl<'a> Fanout<'a> {
    pub(super) fn start(
        agent: &Agent,
        urls: &'a [HttpUrl],
        deadline: Option<Instant>,
        stopping: bool,
    ) -> Fanout<'a> {
        let requests = urls.iter().map(|url| {
            let (agent, url) = (agent.clone(), url.raw.clone());
            // A sidecar that stops with the Pod will not start listening again.
            move || match stopping {
                true => request(&agent, &url, deadline),
                false => request_until_listening(&agent, &url, deadline),
            }
        });
        let (requests, not_started) = Jobs::start("quit", requests);
        for (_, e) in not_started {
            log::error!("cannot start a quit request: {e}");
        }
        Fanout {
            urls,
            stopping,
            requests,
            failed: None,
        }
    }

    /// Logs answers until all are in or `until` passes (`None`: until all are in).
    pub(super) fn collect(&mut self, until: Option<Instant>) {
        while let Some((i, result)) = self.requests.next_by(until) {
            let failed = log_result(&self.urls[i], Whose::Generic, &result, self.stopping);
            self.failed = self.failed.take().or(failed);
        }
    }

    /// Logs every URL that never answered.
    pub(super) fn give_up(&mut self) {
        for i in self.requests.unanswered() {
            let no = Err(no_answer());
            let failed = log_result(&self.urls[i], Whose::Generic, &no, self.stopping);
            self.failed = self.failed.take().or(failed);
        }
    }
}

/// Why a request that was cut off by the quit deadline has no answer.
pub(super) fn no_answer() -> http::Failure {
    http::Failure {
        what: "no answer by the quit deadline".into(),
        no_connection: false,
        closed: false,
    }
}

/// One quit request to `whose`, logged; `Err` holds the failure line and whether
/// no connection could be made.
pub(super) fn post_one(
    agent: &Agent,
    url: &HttpUrl,
    whose: Whose,
    deadline: Option<Instant>,
    stopping: bool,
) -> Result<(), (String, bool)> {
    let result = request_by(agent, &url.raw, deadline);
    let no_connection = result.as_ref().is_err_and(|f| f.no_connection);
    match log_result(url, whose, &result, stopping) {
        Some(failed) => Err((failed, no_connection)),
        None => Ok(()),
    }
}

/// [`request`], its answer awaited until `deadline` at most: ureq's own timeout
/// can end tens of milliseconds late, and pilot-agent's fallback must still fit
/// in the quit bound after it.
fn request_by(agent: &Agent, url: &str, deadline: Option<Instant>) -> Result<u16, http::Failure> {
    let (agent, url) = (agent.clone(), url.to_owned());
    run_by("quit", deadline, move || request(&agent, &url, deadline))
        .unwrap_or_else(|| Err(no_answer()))
}

/// How long a refused generic endpoint is retried when the quit phase has no
/// deadline (`QUIT_REQUEST_TIMEOUT=0`): as long as the default bound.
const REFUSED_RETRY_WITHOUT_DEADLINE: Duration = Duration::from_secs(5);
/// The first pause before retrying a refused connection; it doubles up to the cap.
const REFUSED_RETRY_FIRST: Duration = Duration::from_millis(20);
const REFUSED_RETRY_CAP: Duration = Duration::from_millis(200);

/// [`request`], retrying while no connection can be made, until `deadline`. A
/// sidecar without a readiness check (Vault Agent: nothing to wait for) starts
/// beside the app; a short job can end before it listens, and a quit lost to
/// that would keep the Pod up for good. A sidecar that never listens costs the
/// quit phase its bound, then fails as before.
fn request_until_listening(
    agent: &Agent,
    url: &str,
    deadline: Option<Instant>,
) -> Result<u16, http::Failure> {
    let until = deadline.unwrap_or_else(|| Instant::now() + REFUSED_RETRY_WITHOUT_DEADLINE);
    let mut pause = REFUSED_RETRY_FIRST;
    loop {
        let result = request(agent, url, deadline);
        let refused = result.as_ref().is_err_and(|f| f.no_connection);
        if !refused || until.saturating_duration_since(Instant::now()) <= pause {
            return result;
        }
        thread::sleep(pause);
        pause = (pause * 2).min(REFUSED_RETRY_CAP);
    }
}

/// One quit request within what is left before `deadline`, not logged.
fn request(agent: &Agent, url: &str, deadline: Option<Instant>) -> Result<u16, http::Failure> {
    match deadline.map(|d| d.saturating_duration_since(Instant::now())) {
        Some(left) if left.is_zero() => Err(http::Failure {
            what: "no time left before the quit deadline".into(),
            no_connection: false,
            closed: false,
        }),
        left => http::post_empty(agent, url, left),
    }
}
