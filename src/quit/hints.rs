//! The quit phase's log lines: one a request, an error for a quit that failed,
//! with what the user sets when a known sidecar refuses (SPEC §5.3, §6, §8): the
//! sidecar's row in `sidecars` says what its answers mean.

use log::Level;

use crate::http;
use crate::sidecars::{self, Answer};
use crate::value::url::HttpUrl;

/// Whose quit a result answers: what a non-2xx answer means depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Whose {
    /// A generic endpoint: any answer counts as sent (scuttle's rule), but a known
    /// sidecar's "not enabled".
    Generic,
    /// pilot-agent's `/quitquitquit`.
    PilotAgent,
    /// `ENVOY_KILL_API`, POSTed as given.
    EnvoyKill,
    /// Envoy's own admin `/quitquitquit`.
    EnvoyAdmin,
}

/// Logs one quit result and returns its line when the quit failed: no answer, a
/// known sidecar's "not enabled", or Istio/Envoy answering anything but 2xx (it
/// did not agree to stop). A failed quit is an error, since the Pod will not
/// complete (SPEC §8); a generic endpoint's non-2xx answer is a warning.
/// When the Pod is `stopping` (tandem got SIGTERM first), a sidecar that
/// refuses the connection or hangs up is already stopping: said at info level,
/// not a failure (SPEC §5.3).
pub(super) fn log_result(
    url: &HttpUrl,
    whose: Whose,
    result: &Result<u16, http::Failure>,
    stopping: bool,
) -> Option<String> {
    let shown = url.redacted();
    // A known sidecar's row says which answers mean its endpoint is off.
    let known = sidecars::by_quit(url.path(), url.port);
    let off_hint = |answer| known.and_then(|s| s.off_hint(answer));
    let (line, level) = match result {
        Ok(status) if (200..300).contains(status) => {
            (format!("quit POST {shown}: {status}"), Level::Info)
        }
        Ok(status) => match (whose, off_hint(Answer::Status(*status))) {
            (Whose::Generic, Some(hint)) => (
                format!("quit POST {shown}: {status} ({hint})"),
                Level::Error,
            ),
            (Whose::Generic, None) => (format!("quit POST {shown}: {status}"), Level::Warn),
            (sidecar, _) => (
                format!(
                    "quit POST {shown}: {status} ({})",
                    refusal(sidecar, *status)
                ),
                Level::Error,
            ),
        },
        Err(failure) if stopping && failure.peer_gone() => (
            format!(
                "quit POST {shown}: {}: the sidecar is already stopping: the Pod is terminating",
                failure.what
            ),
            Level::Info,
        ),
        Err(failure) => {
            let mut line = format!("quit POST {shown} failed: {}", failure.what);
            let refused = failure.no_connection.then_some(Answer::NoConnection);
            if let Some(hint) = refused.and_then(off_hint) {
                line.push_str(" (");
                line.push_str(&hint);
                line.push(')');
            }
            (line, Level::Error)
        }
    };
    match result {
        Ok(status) => log::log!(level, url = shown.as_str(), status = *status; "{line}"),
        Err(failure) => {
            log::log!(level, url = shown.as_str(), error = failure.what.as_str(); "{line}")
        }
    }
    (level == Level::Error).then_some(line)
}

/// What a non-2xx answer to Istio/Envoy's quit means, with what to check where
/// the answer says it (pilot-agent refuses a request from off the Pod with 403;
/// 404 means nothing serves `/quitquitquit` at that address).
fn refusal(whose: Whose, status: u16) -> String {
    let (who, hint) = match (whose, status) {
        (Whose::PilotAgent, 403) => (
            "pilot-agent",
            "; it takes /quitquitquit only from localhost: ISTIO_QUIT_API must be a loopback URL",
        ),
        (Whose::PilotAgent, 404) => (
            "pilot-agent",
            "; is ISTIO_QUIT_API pilot-agent's status port (15020), not 15021 or 15000?",
        ),
        (Whose::PilotAgent, _) => ("pilot-agent", ""),
        (Whose::EnvoyKill, 404) => (
            "Envoy",
            "; ENVOY_KILL_API is POSTed as given: the admin URL with /quitquitquit",
        ),
        (Whose::EnvoyAdmin, 404) => ("Envoy", "; is ENVOY_ADMIN_API Envoy's admin address?"),
        _ => ("Envoy", ""),
    };
    format!("not 2xx: {who} did not agree to stop{hint}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> HttpUrl {
        HttpUrl::parse(s).unwrap()
    }

    #[test]
    fn a_non_2xx_answer_fails_the_istio_envoy_quit_and_not_a_generic_one() {
        let url = url("http://127.0.0.1:15020/quitquitquit");
        for status in [500, 503, 404, 302, 403] {
            for whose in [Whose::PilotAgent, Whose::EnvoyKill, Whose::EnvoyAdmin] {
                let line = log_result(&url, whose, &Ok(status), false).unwrap_or_default();
                assert!(
                    line.contains(&format!(": {status} (not 2xx: ")),
                    "{whose:?} {line}"
                );
            }
            assert_eq!(log_result(&url, Whose::Generic, &Ok(status), false), None);
        }
        for whose in [Whose::Generic, Whose::PilotAgent, Whose::EnvoyAdmin] {
            assert_eq!(log_result(&url, whose, &Ok(200), false), None);
            assert_eq!(log_result(&url, whose, &Ok(204), false), None);
        }
        let line = log_result(&url, Whose::PilotAgent, &Ok(404), false).unwrap_or_default();
        assert!(line.contains("status port (15020)"), "{line}");
    }

    #[test]
    fn hints_name_what_the_user_sets_for_known_sidecars_only() {
        let line = |s: &str, status| log_result(&url(s), Whose::Generic, &Ok(status), false);
        let hint = |s: &str, status| line(s, status).unwrap_or_default();
        assert!(hint("http://127.0.0.1:4191/shutdown", 404).contains("proxy-admin-shutdown"));
        assert!(hint("http://127.0.0.1:8200/agent/v1/quit", 405).contains("agent-enable-quit"));
        assert!(hint("http://127.0.0.1:8200/agent/v1/quit?x", 404).contains("agent-enable-quit"));
        assert_eq!(line("http://127.0.0.1:4191/shutdown", 200), None);
        assert_eq!(line("http://127.0.0.1:4191/shutdown", 405), None);
        assert_eq!(line("http://127.0.0.1:1/quit", 404), None);
        let refused = http::Failure {
            what: "connection refused".into(),
            no_connection: true,
            closed: false,
        };
        let failed = |s: &str, failure: &http::Failure| {
            log_result(&url(s), Whose::Generic, &Err(failure.clone()), false).unwrap_or_default()
        };
        assert!(failed("http://127.0.0.1:9091/quitquitquit", &refused).contains("--quitquitquit"));
        assert!(!failed("http://127.0.0.1:9092/quitquitquit", &refused).contains("--quitquitquit"));
        let timed_out = http::Failure {
            what: "timed out".into(),
            no_connection: false,
            closed: false,
        };
        assert!(
            !failed("http://127.0.0.1:9091/quitquitquit", &timed_out).contains("--quitquitquit")
        );
    }
}
