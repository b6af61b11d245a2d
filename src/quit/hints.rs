//! The quit phase's log lines: one a request, an error for a quit that failed,
//! with what the user sets when a known sidecar refuses (SPEC §6, §8).

use crate::http;
use log::Level;

/// Logs one quit result; a failed quit (no answer, or a known sidecar's "not
/// enabled") is an error, since the Pod will not complete (SPEC §8), and its
/// line is returned.
pub(super) fn log_result(url: &str, result: &Result<u16, http::Failure>) -> Option<String> {
    let shown = crate::config::url::redact(url);
    let (line, failed) = match result {
        Ok(status) => match not_enabled_hint(url, *status) {
            Some(hint) => (format!("quit POST {shown}: {status} ({hint})"), true),
            None => (format!("quit POST {shown}: {status}"), false),
        },
        Err(failure) => {
            let mut line = format!("quit POST {shown} failed: {}", failure.what);
            if let Some(hint) = refused_hint(url, failure) {
                line.push_str(" (");
                line.push_str(hint);
                line.push(')');
            }
            (line, true)
        }
    };
    let level = if failed { Level::Error } else { Level::Info };
    match result {
        Ok(status) => log::log!(level, url = shown.as_str(), status = *status; "{line}"),
        Err(failure) => {
            log::log!(level, url = shown.as_str(), error = failure.what.as_str(); "{line}")
        }
    }
    failed.then_some(line)
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
    let cloudsql = crate::config::url::HttpUrl::parse(url)
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
