//! Reading the peers' variables without an option of their own (scuttle and its
//! forks, envoy-preflight, linkerd-await, docker-compose-wait), named in the table
//! `cli::peers`: the ones tandem honours, and the ones it validates and warns
//! about (SPEC §2: none is silently ignored).

use std::time::Duration;

use super::check;
use super::sources::{Found, Sources, parse_with};
use crate::cli::peers::{
    ALWAYS_KILL_ENVOY, ISTIO_FALLBACK_PKILL, NO_EFFECT, Shape, WAIT_COMMAND, WAIT_HOSTS,
    WAIT_PATHS, WAIT_SLEEP_INTERVAL, WAIT_TIMEOUT,
};
use crate::cli::{Cli, InvokedAs};
use crate::exit::{Error, invalid};
use crate::settings::{Check, PkillFallback};
use crate::value::{boolean, duration, list, url};

/// docker-compose-wait's fail timeout when `WAIT_TIMEOUT` is unset: under the
/// name `wait` only, where its usage is taken whole.
const WAIT_TIMEOUT_DEFAULT: Duration = Duration::from_secs(30);

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
