//! The configuration (SPEC §2): the raw command line (`cli`) and the environment
//! turned into a validated `Config` by every rule: option over variable, presets,
//! precedence, and "bad values are errors". `build` does no I/O (the environment
//! is a lookup, for tests and fuzzers); `read` is the process's, and sets up the log.
//!
//! Each setting is read through its row of the option table (`cli::options`) by
//! `sources`, which also shapes every bad-value message; `endpoints` gathers the
//! sidecar URLs and fills in the `--mesh` presets (`sidecars`); `job_containers` the three
//! settings of several job containers; `peers` reads the peers' variables that
//! have no option (`cli::peers` names them); `typos` the `TANDEM_` variables
//! tandem does not know. The values' own parsers are below, in `value`; the
//! validated types the phases read, in `settings`.

mod check;
mod endpoints;
mod job_containers;
mod peers;
mod sources;
mod typos;

use std::ffi::OsString;
use std::time::Duration;

use log::LevelFilter;
use tandem_common::exit_codes::{EXPECTED, ExitCodes};

use crate::cli::peers::LINKERD_DISABLED;
use crate::cli::{Cli, options};
use crate::exit::{Error, invalid};
use crate::logger::{self, Format};
use crate::settings::{Config, ForwardTo, OnExit, QuitConfig, ReadyConfig};
use crate::termination_message;
use crate::value::{duration, words};
use endpoints::Endpoints;
use sources::{Sources, parse_with};

/// Default bound on the whole quit phase.
const DEFAULT_QUIT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default upper bound on the interval between readiness polls: the app starts
/// within one interval plus a round trip and a spawn of the sidecar turning ready,
/// half an interval on average. 85 ms keeps that within SPEC §3's 100 ms (p99) and
/// the 50 ms median BENCHMARKS.md holds it to, at about 12 polls a second over one
/// kept-alive connection. (100 ms would be 10 a second but a 50 ms median before the
/// round trip and the spawn: no interval meets both exactly.)
const DEFAULT_POLL_MAX: Duration = Duration::from_millis(85);
/// Default bound on the `--on-exit` program's run (SPEC §11).
const DEFAULT_ON_EXIT_TIMEOUT: Duration = Duration::from_secs(30);
/// The fail timeout's own setting, as its lines name it.
const FAIL_TIMEOUT_SETTING: &str = "--fail-timeout/QUIT_WITHOUT_ENVOY_TIMEOUT";

/// The process's environment, as `read` and the hints look variables up.
fn env(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// The configuration of this process, from `cli` and the environment, with the
/// log and the termination message set up by it (until then, errors are logged
/// in the format asked for); the start-up warnings follow (SPEC §2, §7, §8).
pub fn read(cli: &Cli) -> Result<Config, Error> {
    logger::set(LevelFilter::Info, log_format_hint(cli, &env));
    let cfg = build(cli, &env)?;
    logger::set(cfg.log_level, cfg.log_format);
    termination_message::set(cfg.termination_log.clone());
    let names = std::env::vars_os().map(|(name, _)| name);
    for warning in cfg.warnings.iter().cloned().chain(typos::warnings(names)) {
        log::warn!("{warning}");
    }
    if let Some(var) = cfg.disabled_by {
        log::info!("{var} is set: waiting for nothing and stopping nothing");
    }
    Ok(cfg)
}

/// The log format as configured, or text where it is missing or invalid: an error
/// in any other setting is then reported in the format the user asked for.
pub fn log_format_hint(cli: &Cli, env: &dyn Fn(&str) -> Option<OsString>) -> Format {
    let src = Sources { cli, env };
    src.parsed(&options::LOG_FORMAT, logger::parse_format)
        .ok()
        .flatten()
        .unwrap_or(Format::Text)
}

/// Tells failures before (or of) the configuration where the termination log is
/// configured, or at the default where it is missing or invalid (SPEC §7).
/// Without a command line (it did not parse) only the variable counts.
pub fn tell_failures_early(cli: Option<&Cli>) {
    termination_message::set(termination_log_hint(cli, &env));
}

/// The termination log as configured, or the default where it is missing or
/// invalid; only the variable without a command line.
fn termination_log_hint(
    cli: Option<&Cli>,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> termination_message::Target {
    let empty;
    let cli = match cli {
        Some(cli) => cli,
        None => {
            empty = Cli::empty();
            &empty
        }
    };
    let src = Sources { cli, env };
    src.parsed(&options::TERMINATION_LOG, termination_message::parse)
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Builds the configuration from the command line and an environment lookup (SPEC §2).
pub fn build(cli: &Cli, env: &dyn Fn(&str) -> Option<OsString>) -> Result<Config, Error> {
    let src = Sources { cli, env };
    let log_level = src.parsed(&options::LOG, logger::parse_level)?;
    let log_format = src.parsed(&options::LOG_FORMAT, logger::parse_format)?;
    let termination_log = src.parsed(&options::TERMINATION_LOG, termination_message::parse)?;
    let mut endpoints = Endpoints::read(&src)?;
    let no_wait = src.flag(&options::NO_WAIT)?;
    let wait_timeout = src.parsed(&options::WAIT_TIMEOUT, duration::parse)?;
    let (fail_timeout, fail_timeout_setting) =
        match src.parsed(&options::FAIL_TIMEOUT, duration::parse)? {
            Some(d) => (Some(d), FAIL_TIMEOUT_SETTING),
            None => match peers::wait_timeout(&src)? {
                Some((d, setting)) => (Some(d), setting),
                None => (None, FAIL_TIMEOUT_SETTING),
            },
        };
    let quit_timeout = src.parsed(&options::QUIT_TIMEOUT, duration::parse)?;
    let poll_max = poll_max(&src)?;
    let forward_to = forward_to(&src)?;
    let on_exit = on_exit(&src)?;
    let mut checks = endpoints.checks();
    let mut quit = quit_config(&src, endpoints, quit_timeout)?;
    let warnings = peers::no_effect_warnings(&src)?;
    // linkerd-await's switch: run the app as if tandem were not there.
    let disabled = src.var(LINKERD_DISABLED)?;
    if disabled.is_some() {
        checks.clear();
        quit = QuitConfig {
            timeout: quit.timeout,
            ..QuitConfig::default()
        };
    }
    Ok(Config {
        ready: ReadyConfig {
            checks,
            wait: !no_wait,
            wait_timeout: nonzero(wait_timeout),
            fail_timeout: nonzero(fail_timeout),
            fail_timeout_setting,
            poll_max,
        },
        quit,
        forward_to,
        log_level: log_level.unwrap_or(LevelFilter::Info),
        log_format: log_format.unwrap_or(Format::Text),
        termination_log: termination_log.unwrap_or_default(),
        warnings,
        disabled_by: disabled.map(|found| found.name),
        on_exit,
    })
}

/// A zero timeout means "no timeout", as in scuttle.
fn nonzero(d: Option<Duration>) -> Option<Duration> {
    d.filter(|d| !d.is_zero())
}

/// The quit phase's settings: what `endpoints` found and the switches that keep
/// sidecars running, read after the readiness settings (so a bad value in both is
/// reported as before).
fn quit_config(
    src: &Sources,
    endpoints: Endpoints,
    quit_timeout: Option<Duration>,
) -> Result<QuitConfig, Error> {
    Ok(QuitConfig {
        generic_only: src.flag(&options::GENERIC_QUIT_ONLY)?,
        never_quit: src.flag(&options::NEVER_QUIT)?,
        keep_on_exit: keep_on_exit(src)?,
        pkill_fallback: peers::pkill_fallback(src)?,
        job_containers: job_containers::read(src)?,
        generic: endpoints.generic,
        admin: endpoints.admin,
        istio_quit: endpoints.istio_quit,
        envoy_quit: endpoints.envoy_quit,
        envoy_configured: endpoints.envoy_configured,
        timeout: match quit_timeout {
            None => Some(DEFAULT_QUIT_TIMEOUT),
            Some(d) => nonzero(Some(d)),
        },
    })
}

/// The statuses to keep the sidecars on: `--keep-on-exit`, with every failure
/// added by `--keep-on-failure` (both given: either one's statuses).
fn keep_on_exit(src: &Sources) -> Result<ExitCodes, Error> {
    let given = match src.get(&options::KEEP_ON_EXIT)? {
        Some(found) => ExitCodes::parse(&found.value)
            .map_err(|why| invalid(found.name, &found.value, &format!("{EXPECTED} ({why})")))?,
        None => ExitCodes::NONE,
    };
    if src.flag(&options::KEEP_ON_FAILURE)? {
        return Ok(given.union(ExitCodes::FAILURES));
    }
    Ok(given)
}

fn poll_max(src: &Sources) -> Result<Duration, Error> {
    let Some(found) = src.get(&options::POLL_MAX)? else {
        return Ok(peers::sleep_interval(src)?.unwrap_or(DEFAULT_POLL_MAX));
    };
    let d = parse_with(&found, duration::parse)?;
    if d.is_zero() {
        return Err(invalid(
            found.name,
            &found.value,
            "a duration greater than zero",
        ));
    }
    Ok(d)
}

/// `--on-exit` and its timeout; the timeout is checked even without a program.
/// An empty `TANDEM_ON_EXIT` is unset; an option or variable with no words is bad.
fn on_exit(src: &Sources) -> Result<Option<OnExit>, Error> {
    let timeout = src.parsed(&options::ON_EXIT_TIMEOUT, duration::parse)?;
    let Some(found) = src.get(&options::ON_EXIT)? else {
        return Ok(None);
    };
    let words = parse_with(&found, words::split)?;
    if words.is_empty() {
        return Err(invalid(found.name, &found.value, "a command"));
    }
    Ok(Some(OnExit {
        words,
        timeout: nonzero(Some(timeout.unwrap_or(DEFAULT_ON_EXIT_TIMEOUT))),
    }))
}

fn forward_to(src: &Sources) -> Result<ForwardTo, Error> {
    let Some(found) = src.get(&options::FORWARD_TO)? else {
        return Ok(ForwardTo::Child);
    };
    match found.value.to_ascii_lowercase().as_str() {
        "child" => Ok(ForwardTo::Child),
        "group" => Ok(ForwardTo::Group),
        _ => Err(invalid(found.name, &found.value, "child or group")),
    }
}

#[cfg(test)]
mod tests;
