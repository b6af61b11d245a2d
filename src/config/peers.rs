//! The peers' variables without an option of their own (scuttle and its forks,
//! envoy-preflight, linkerd-await, docker-compose-wait): the ones tandem honours,
//! the ones it validates and warns about, and reading both (SPEC §2: none is
//! silently ignored). `--help` lists them from the tables here.

use std::time::Duration;

use super::sources::{Found, Sources, invalid, parse_with};
use super::{Check, PkillFallback, check, list};
use super::{boolean, duration, url};
use crate::cli::{Cli, InvokedAs};
use crate::exit::Error;

/// Accepted for compatibility and validated, but no option sets it (SPEC §2).
pub const ALWAYS_KILL_ENVOY: &str = "ALWAYS_KILL_ENVOY";
/// linkerd-await's switches: any non-empty value waits for nothing, stops nothing.
pub const LINKERD_DISABLED: &[&str] = &["LINKERD_AWAIT_DISABLED", "LINKERD_DISABLED"];
/// scuttle: more readiness URLs, merged with `TANDEM_READY_URLS`.
pub const GENERIC_READY_ENDPOINTS: &str = "GENERIC_READY_ENDPOINTS";
/// scuttle: when pilot-agent gets SIGINT after a failed Istio quit.
pub const ISTIO_FALLBACK_PKILL: &str = "ISTIO_FALLBACK_PKILL";
/// docker-compose-wait: `HOST:PORT` items, each a `tcp://` check.
pub const WAIT_HOSTS: &str = "WAIT_HOSTS";
/// docker-compose-wait: paths, each a `file://` check (relative ones too).
pub const WAIT_PATHS: &str = "WAIT_PATHS";
/// docker-compose-wait: the fail timeout in whole seconds; its older name after it.
pub const WAIT_TIMEOUT: &[&str] = &["WAIT_TIMEOUT", "WAIT_HOSTS_TIMEOUT"];
/// docker-compose-wait: seconds between checks, the poll cap here.
pub const WAIT_SLEEP_INTERVAL: &str = "WAIT_SLEEP_INTERVAL";
/// docker-compose-wait: the command to run once ready (read under the name `wait`).
pub const WAIT_COMMAND: &str = "WAIT_COMMAND";
/// docker-compose-wait's fail timeout when `WAIT_TIMEOUT` is unset: under the
/// name `wait` only, where its usage is taken whole.
const WAIT_TIMEOUT_DEFAULT: Duration = Duration::from_secs(30);

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
    NoEffect {
        var: "WAIT_BEFORE",
        shape: Shape::Seconds,
        why: NO_SLEEPS,
    },
    NoEffect {
        var: "WAIT_BEFORE_HOSTS",
        shape: Shape::Seconds,
        why: NO_SLEEPS,
    },
    NoEffect {
        var: "WAIT_AFTER",
        shape: Shape::Seconds,
        why: NO_SLEEPS,
    },
    NoEffect {
        var: "WAIT_AFTER_HOSTS",
        shape: Shape::Seconds,
        why: NO_SLEEPS,
    },
    NoEffect {
        var: "WAIT_HOST_CONNECT_TIMEOUT",
        shape: Shape::Seconds,
        why: "each tcp:// connection attempt has tandem's 1s timeout and is retried at the next poll",
    },
];

/// Why docker-compose-wait's sleeps have no effect.
const NO_SLEEPS: &str = "tandem starts the app as soon as every check passes, with no fixed \
     sleeps: wait for what ready means (an http:// health check or a file:// flag)";

/// The peers' variables that tandem honours without an option of their own.
pub const HONOURED: &[&str] = &[
    ALWAYS_KILL_ENVOY,
    "LINKERD_AWAIT_DISABLED",
    "LINKERD_DISABLED",
    GENERIC_READY_ENDPOINTS,
    ISTIO_FALLBACK_PKILL,
    "DAPR_HTTP_PORT",
    WAIT_HOSTS,
    WAIT_PATHS,
    "WAIT_TIMEOUT",
    "WAIT_HOSTS_TIMEOUT",
    WAIT_SLEEP_INTERVAL,
    WAIT_COMMAND,
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

/// docker-compose-wait's checks: each `WAIT_HOSTS` item a `tcp://` check, each
/// `WAIT_PATHS` item a `file://` check, added to `--ready`'s whatever replaced
/// `TANDEM_READY_URLS` (as `GENERIC_READY_ENDPOINTS`).
pub(super) fn wait_checks(src: &Sources) -> Result<Vec<Check>, Error> {
    let mut checks = Vec::new();
    if let Some(found) = src.var(&[WAIT_HOSTS])? {
        for item in list::split(&found.value) {
            let tcp = check::parse_host_port(item)
                .map_err(|expected| invalid(found.name, &url::redact(item), expected))?;
            checks.push(tcp);
        }
    }
    if let Some(found) = src.var(&[WAIT_PATHS])? {
        checks.extend(list::split(&found.value).into_iter().map(check::parse_path));
    }
    Ok(checks)
}

/// The fail timeout from docker-compose-wait's `WAIT_TIMEOUT` (or its older name
/// `WAIT_HOSTS_TIMEOUT`), in whole seconds, with the setting it came from; under
/// the name `wait`, its default of 30 s when neither is set. `None` when nothing
/// sets it. (`--fail-timeout` and `QUIT_WITHOUT_ENVOY_TIMEOUT` win over these.)
pub(super) fn wait_timeout(src: &Sources) -> Result<Option<(Duration, &'static str)>, Error> {
    if let Some(found) = src.var(WAIT_TIMEOUT)? {
        let secs = parse_with(&found, duration::parse_seconds)?;
        return Ok(Some((Duration::from_secs(secs), found.name)));
    }
    Ok((src.cli.invoked_as == InvokedAs::Wait).then_some((
        WAIT_TIMEOUT_DEFAULT,
        "WAIT_TIMEOUT, docker-compose-wait's default",
    )))
}

/// The poll cap from docker-compose-wait's `WAIT_SLEEP_INTERVAL`, in whole
/// seconds; `0` (no pause there) leaves tandem's own cap, as unset does.
pub(super) fn sleep_interval(src: &Sources) -> Result<Option<Duration>, Error> {
    let Some(found) = src.var(&[WAIT_SLEEP_INTERVAL])? else {
        return Ok(None);
    };
    let secs = parse_with(&found, duration::parse_seconds)?;
    Ok((secs > 0).then(|| Duration::from_secs(secs)))
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
    warnings.extend(wait_command_warning(src.cli, src.var(&[WAIT_COMMAND])?));
    Ok(warnings)
}

/// `WAIT_COMMAND` is the command only under the name `wait`; under any other, one
/// warning (without the value: a command line may hold a password).
fn wait_command_warning(cli: &Cli, found: Option<Found>) -> Option<String> {
    let found = found.filter(|found| !found.value.trim().is_empty())?;
    (cli.invoked_as != InvokedAs::Wait).then(|| {
        format!(
            "{} has no effect: tandem runs the COMMAND of its command line \
             (invoked as wait, with no arguments, it runs {})",
            found.name, found.name
        )
    })
}
