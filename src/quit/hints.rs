//! The quit phase's log lines: one a request, an error for a quit that failed,
//! with what the user sets when a known sidecar refuses (SPEC §5.3, §6, §8).

use crate::http;
use log::Level;

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
pub(super) fn log_result(
    url: &str,
    whose: Whose,
    result: &Result<u16, http::Failure>,
) -> Option<String> {
    let shown = crate::value::url::redact(url);
    let (line, level) = match result {
        Ok(status) if (200..300).contains(status) => {
            (format!("quit POST {shown}: {status}"), Level::Info)
        }
        Ok(status) => match (whose, not_enabled_hint(url, *status)) {
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
        Err(failure) => {
            let mut line = format!("quit POST {shown} failed: {}", failure.what);
            if let Some(hint) = refused_hint(url, failure) {
                line.push_str(" (");
                line.push_str(hint);
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

/// What the user sets when a known sidecar answers its quit with "not enabled"
/// (SPEC §6): the Pod annotation, in the user's terms.
fn not_enabled_hint(url: &str, status: u16) -> Option<&'static str> {
    let path = path_of(url);
    if status == 404 && path == "/shutdown" {
        Some(
            "Linkerd's /shutdown is off: set the Pod annotation \
             config.linkerd.io/proxy-admin-shutdown: enabled \
             (it sets the proxy's LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED=true)",
        )
    } else if matches!(status, 404 | 405) && path == "/agent/v1/quit" {
        Some(
            "Vault Agent's quit endpoint is off: set the Pod annotation \
             vault.hashicorp.com/agent-enable-quit: \"true\"",
        )
    } else {
        None
    }
}

/// Cloud SQL Auth Proxy serves `/quitquitquit` on its admin port 9091 only when
/// started with `--quitquitquit` (SPEC §6).
fn refused_hint(url: &str, failure: &http::Failure) -> Option<&'static str> {
    let cloudsql = crate::value::url::HttpUrl::parse(url)
        .is_ok_and(|u| u.port == 9091 && path_of(url) == "/quitquitquit");
    (cloudsql && failure.no_connection)
        .then_some("nothing listens on 9091: start the Cloud SQL Auth Proxy with --quitquitquit")
}

/// The path of a URL, without query or fragment: `/shutdown`.
fn path_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = rest.find('/').map_or("", |i| &rest[i..]);
    path.split(['?', '#']).next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_2xx_answer_fails_the_istio_envoy_quit_and_not_a_generic_one() {
        let url = "http://127.0.0.1:15020/quitquitquit";
        for status in [500, 503, 404, 302, 403] {
            for whose in [Whose::PilotAgent, Whose::EnvoyKill, Whose::EnvoyAdmin] {
                let line = log_result(url, whose, &Ok(status)).unwrap_or_default();
                assert!(
                    line.contains(&format!(": {status} (not 2xx: ")),
                    "{whose:?} {line}"
                );
            }
            assert_eq!(log_result(url, Whose::Generic, &Ok(status)), None);
        }
        for whose in [Whose::Generic, Whose::PilotAgent, Whose::EnvoyAdmin] {
            assert_eq!(log_result(url, whose, &Ok(200)), None);
            assert_eq!(log_result(url, whose, &Ok(204)), None);
        }
        let line = log_result(url, Whose::PilotAgent, &Ok(404)).unwrap_or_default();
        assert!(line.contains("status port (15020)"), "{line}");
    }

    #[test]
    fn hints_name_what_the_user_sets_for_known_sidecars_only() {
        let hint = |url, status| not_enabled_hint(url, status).unwrap_or("");
        assert!(hint("http://127.0.0.1:4191/shutdown", 404).contains("proxy-admin-shutdown"));
        assert!(hint("http://127.0.0.1:8200/agent/v1/quit", 405).contains("agent-enable-quit"));
        assert!(hint("http://127.0.0.1:8200/agent/v1/quit?x", 404).contains("agent-enable-quit"));
        assert_eq!(
            not_enabled_hint("http://127.0.0.1:4191/shutdown", 200),
            None
        );
        assert_eq!(
            not_enabled_hint("http://127.0.0.1:4191/shutdown", 405),
            None
        );
        assert_eq!(not_enabled_hint("http://127.0.0.1:1/quit", 404), None);
        let refused = http::Failure {
            what: "connection refused".into(),
            no_connection: true,
        };
        assert!(refused_hint("http://127.0.0.1:9091/quitquitquit", &refused).is_some());
        assert_eq!(
            refused_hint("http://127.0.0.1:9092/quitquitquit", &refused),
            None
        );
        let timed_out = http::Failure {
            what: "timed out".into(),
            no_connection: false,
        };
        assert_eq!(
            refused_hint("http://127.0.0.1:9091/quitquitquit", &timed_out),
            None
        );
    }
}
