//! The peers' variables without an option of their own (scuttle and its forks,
//! envoy-preflight, linkerd-await): the ones tandem honours, the ones it
//! validates and warns about, and reading both (SPEC §2: none is silently
//! ignored). `--help` lists them from the tables here.

use super::PkillFallback;
use super::sources::{Sources, parse_with};
use super::{boolean, duration, url};
use crate::exit::Error;

/// Accepted for compatibility and validated, but no option sets it (SPEC §2).
pub const ALWAYS_KILL_ENVOY: &str = "ALWAYS_KILL_ENVOY";
/// linkerd-await's switches: any non-empty value waits for nothing, stops nothing.
pub const LINKERD_DISABLED: &[&str] = &["LINKERD_AWAIT_DISABLED", "LINKERD_DISABLED"];
/// scuttle: more readiness URLs, merged with `TANDEM_READY_URLS`.
pub const GENERIC_READY_ENDPOINTS: &str = "GENERIC_READY_ENDPOINTS";
/// scuttle: when pilot-agent gets SIGINT after a failed Istio quit.
pub const ISTIO_FALLBACK_PKILL: &str = "ISTIO_FALLBACK_PKILL";

/// What a variable without a meaning in tandem must hold to be accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A boolean (tandem's superset of `true`/`false`).
    Bool,
    /// Whole seconds, 0 or more (scuttle's `strconv.Atoi`).
    Seconds,
    /// Anything.
    Text,
}

/// A variable that scuttle, envoy-preflight, linkerd-await or one of their forks
/// reads and that has no effect in tandem: validated, then warned about once
/// (SPEC §2: none is silently ignored).
#[derive(Debug, PartialEq, Eq)]
pub struct NoEffect {
    /// The variable.
    pub var: &'static str,
    /// What its value must look like.
    pub shape: Shape,
    /// Why tandem does without it, for the warning.
    pub why: &'static str,
}

/// Every variable of the peers that tandem accepts without acting on it.
pub const NO_EFFECT: &[NoEffect] = &[
    NoEffect {
        var: "SCUTTLE_IGNORE_SIGURG",
        shape: Shape::Bool,
        why: "tandem relays SIGURG like every other signal, and never gets its own",
    },
    NoEffect {
        var: "BYPASS_SIGURG",
        shape: Shape::Bool,
        why: "tandem relays SIGURG like every other signal, and never gets its own",
    },
    NoEffect {
        var: "SCUTTLE_SLEEP_1",
        shape: Shape::Seconds,
        why: "tandem waits for readiness and quits in order, with no fixed sleeps",
    },
    NoEffect {
        var: "SCUTTLE_SLEEP_2",
        shape: Shape::Seconds,
        why: "tandem waits for readiness and quits in order, with no fixed sleeps",
    },
    NoEffect {
        var: "SCUTTLE_SLEEP_AFTER_SIGNAL",
        shape: Shape::Seconds,
        why: "tandem waits for the app to exit after relaying a signal, with no fixed sleep",
    },
    NoEffect {
        var: "SEND_METRICS_ON_EXIT",
        shape: Shape::Bool,
        why: "tandem does not push Envoy metrics",
    },
    NoEffect {
        var: "GET_METRICS_API",
        shape: Shape::Text,
        why: "tandem does not push Envoy metrics",
    },
    NoEffect {
        var: "PUSH_METRICS_API",
        shape: Shape::Text,
        why: "tandem does not push Envoy metrics",
    },
    NoEffect {
        var: "USE_ISTIO_CONFIG",
        shape: Shape::Bool,
        why: "tandem quits Istio through pilot-agent when the admin port is 15000, or with --mesh istio",
    },
    NoEffect {
        var: "PKILL_PILOT",
        shape: Shape::Bool,
        why: "tandem signals a visible pilot-agent itself (see ISTIO_FALLBACK_PKILL)",
    },
    NoEffect {
        var: "LINKERD_AWAIT_VERBOSE",
        shape: Shape::Text,
        why: "tandem says at info level when LINKERD_AWAIT_DISABLED turns it off",
    },
    NoEffect {
        var: "ENVOY_ISTIO_SDS_WARMING_PROTECTION",
        shape: Shape::Bool,
        why: "tandem waits for Envoy's /ready (or LIVE), not for its certificates",
    },
];

/// The peers' variables that tandem honours without an option of their own.
pub const HONOURED: &[&str] = &[
    ALWAYS_KILL_ENVOY,
    "LINKERD_AWAIT_DISABLED",
    "LINKERD_DISABLED",
    GENERIC_READY_ENDPOINTS,
    ISTIO_FALLBACK_PKILL,
    "DAPR_HTTP_PORT",
];

/// When pilot-agent gets SIGINT (`ISTIO_FALLBACK_PKILL`). `ALWAYS_KILL_ENVOY` is
/// validated first, for compatibility only: stopping after a failure is already
/// the default, and NEVER_KILL_ISTIO_ON_FAILURE wins over it (SPEC §2).
pub(super) fn pkill_fallback(src: &Sources) -> Result<PkillFallback, Error> {
    src.flag_vars(&[ALWAYS_KILL_ENVOY])?;
    Ok(match src.var(&[ISTIO_FALLBACK_PKILL])? {
        None => PkillFallback::OnRefused,
        Some(found) if parse_with(&found, boolean::parse)? => PkillFallback::OnAnyFailure,
        Some(_) => PkillFallback::Never,
    })
}

/// One warning for each peer variable that is set and has no effect in tandem;
/// a bad value is still an error (SPEC §2).
pub(super) fn no_effect_warnings(src: &Sources) -> Result<Vec<String>, Error> {
    let mut warnings = Vec::new();
    for item in NO_EFFECT {
        let Some(found) = src.var(&[item.var])? else {
            continue;
        };
        match item.shape {
            Shape::Bool => {
                parse_with(&found, boolean::parse)?;
            }
            Shape::Seconds => {
                parse_with(&found, duration::parse_seconds)?;
            }
            Shape::Text => {}
        }
        let shown = url::redact(&found.value);
        warnings.push(format!(
            "{}={shown:?} has no effect: {}",
            item.var, item.why
        ));
    }
    Ok(warnings)
}
