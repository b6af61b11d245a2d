//! Turns the raw command line and the environment into a validated `Config`,
//! applying every rule of SPEC §2: option over variable, presets, precedence,
//! and "bad values are errors". No I/O: the environment is passed in as a lookup.

use std::ffi::OsString;
use std::time::Duration;

use crate::cli::Cli;
use crate::error::Error;
use crate::log::{self, Format, Level};
use crate::mesh::{self, Role};
use crate::values::{self, HttpUrl, Scheme};

/// Environment variables, each named once (SPEC §2 table).
pub(crate) mod var {
    pub(crate) const ENVOY_ADMIN_API: &str = "ENVOY_ADMIN_API";
    pub(crate) const START_WITHOUT_ENVOY: &str = "START_WITHOUT_ENVOY";
    pub(crate) const WAIT_FOR_ENVOY_TIMEOUT: &str = "WAIT_FOR_ENVOY_TIMEOUT";
    pub(crate) const QUIT_WITHOUT_ENVOY_TIMEOUT: &str = "QUIT_WITHOUT_ENVOY_TIMEOUT";
    pub(crate) const ISTIO_QUIT_API: &str = "ISTIO_QUIT_API";
    pub(crate) const ENVOY_KILL_API: &str = "ENVOY_KILL_API";
    pub(crate) const GENERIC_QUIT_ENDPOINTS: &str = "GENERIC_QUIT_ENDPOINTS";
    pub(crate) const GENERIC_QUIT_ONLY: &str = "GENERIC_QUIT_ONLY";
    pub(crate) const QUIT_REQUEST_TIMEOUT: &str = "QUIT_REQUEST_TIMEOUT";
    pub(crate) const NEVER_KILL_ISTIO: &str = "NEVER_KILL_ISTIO";
    pub(crate) const NEVER_KILL_ENVOY: &str = "NEVER_KILL_ENVOY";
    pub(crate) const NEVER_KILL_ISTIO_ON_FAILURE: &str = "NEVER_KILL_ISTIO_ON_FAILURE";
    pub(crate) const ALWAYS_KILL_ENVOY: &str = "ALWAYS_KILL_ENVOY";
    pub(crate) const SCUTTLE_LOGGING: &str = "SCUTTLE_LOGGING";
    pub(crate) const ENVOY_PREFLIGHT_LOGGING: &str = "ENVOY_PREFLIGHT_LOGGING";
    pub(crate) const TANDEM_LOG: &str = "TANDEM_LOG";
    pub(crate) const TANDEM_LOG_FORMAT: &str = "TANDEM_LOG_FORMAT";
    pub(crate) const TANDEM_READY_URLS: &str = "TANDEM_READY_URLS";
    pub(crate) const TANDEM_MESH: &str = "TANDEM_MESH";
    pub(crate) const TANDEM_POLL_MAX: &str = "TANDEM_POLL_MAX";
    pub(crate) const TANDEM_FORWARD_TO: &str = "TANDEM_FORWARD_TO";
}

/// Default bound on the whole quit phase.
const DEFAULT_QUIT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default upper bound on the interval between readiness polls.
const DEFAULT_POLL_MAX: Duration = Duration::from_millis(250);

/// One readiness check (SPEC §3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Check {
    /// Envoy admin: `/ready` is 200, or `/server_info` says `LIVE` where `/ready` is 404.
    Envoy(HttpUrl),
    /// Any URL answering 2xx.
    Url(HttpUrl),
}

/// Where relayed signals go (SPEC §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ForwardTo {
    /// The child process only. Default.
    Child,
    /// The child's whole process group.
    Group,
}

/// Everything the quit phase needs (SPEC §5).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct QuitConfig {
    /// Generic endpoints, POSTed concurrently first. Default: none.
    pub generic: Vec<HttpUrl>,
    /// Envoy admin URL, from `ENVOY_ADMIN_API` or the envoy preset. Default: none.
    pub admin: Option<HttpUrl>,
    /// pilot-agent base URL (`ISTIO_QUIT_API` or the istio preset). Default: none.
    pub istio_quit: Option<HttpUrl>,
    /// Full URL that stops plain Envoy (`ENVOY_KILL_API`). Default: none.
    pub envoy_quit: Option<HttpUrl>,
    /// An admin URL or an istio/envoy preset is configured. Default: false.
    pub has_mesh: bool,
    /// Only POST the generic endpoints. Default: false.
    pub generic_only: bool,
    /// Never stop Istio/Envoy. Default: false.
    pub never_quit: bool,
    /// Stop nothing after a failed run. Default: false.
    pub keep_on_failure: bool,
    /// Bound on the whole phase; `None` (set as `0`) waits as long as the endpoints take. Default: 5 s.
    pub timeout: Option<Duration>,
}

/// The validated configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Config {
    /// Readiness checks; all must pass. Default: none.
    pub checks: Vec<Check>,
    /// Wait for the checks at all (`START_WITHOUT_ENVOY` unset). Default: true.
    pub wait: bool,
    /// Start anyway after this long. Default: none (wait forever).
    pub wait_timeout: Option<Duration>,
    /// Exit 69 after this long; beats `wait_timeout`. Default: none.
    pub fail_timeout: Option<Duration>,
    /// Longest interval between polls. Default: 250 ms.
    pub poll_max: Duration,
    /// The quit phase.
    pub quit: QuitConfig,
    /// Signal relay target. Default: child.
    pub forward_to: ForwardTo,
    /// Log level. Default: info.
    pub log_level: Level,
    /// Log line format. Default: text.
    pub log_format: Format,
}

/// A value found for a setting, with the name it was found under (for errors).
struct Found {
    name: &'static str,
    value: String,
}

/// Reads settings from the command line first, then the environment.
struct Sources<'a> {
    env: &'a dyn Fn(&str) -> Option<OsString>,
}

impl Sources<'_> {
    /// The option's value if given, else the first non-empty variable of `vars`.
    fn get(
        &self,
        option: Option<&OsString>,
        option_name: &'static str,
        vars: &[&'static str],
    ) -> Result<Option<Found>, Error> {
        if let Some(v) = option {
            return text(option_name, v).map(Some);
        }
        for &name in vars {
            if let Some(v) = (self.env)(name).filter(|v| !v.is_empty()) {
                return text(name, &v).map(Some);
            }
        }
        Ok(None)
    }

    /// A boolean setting: a given flag is true, else the variables, else false.
    fn flag(&self, given: bool, vars: &[&'static str]) -> Result<bool, Error> {
        if given {
            return Ok(true);
        }
        let mut any = false;
        for &name in vars {
            if let Some(found) = self.get(None, "", &[name])? {
                any |= parse_with(&found, values::parse_bool)?;
            }
        }
        Ok(any)
    }

    fn duration(
        &self,
        option: Option<&OsString>,
        option_name: &'static str,
        var: &'static str,
    ) -> Result<Option<Duration>, Error> {
        match self.get(option, option_name, &[var])? {
            Some(found) => parse_with(&found, values::parse_duration).map(Some),
            None => Ok(None),
        }
    }

    fn url(
        &self,
        option: Option<&OsString>,
        option_name: &'static str,
        var: &'static str,
    ) -> Result<Option<HttpUrl>, Error> {
        match self.get(option, option_name, &[var])? {
            Some(found) => parse_url(&found, &found.value).map(Some),
            None => Ok(None),
        }
    }

    /// A URL list: the options replace the variable (SPEC §2, "Lists").
    fn url_list(
        &self,
        options: &[OsString],
        option_name: &'static str,
        var: &'static str,
    ) -> Result<Vec<HttpUrl>, Error> {
        let mut found = Vec::new();
        if options.is_empty() {
            found.extend(self.get(None, option_name, &[var])?);
        } else {
            for v in options {
                found.push(text(option_name, v)?);
            }
        }
        let mut urls = Vec::new();
        for f in &found {
            for item in values::split_list(&f.value) {
                urls.push(parse_url(f, item)?);
            }
        }
        Ok(urls)
    }
}

fn text(name: &'static str, value: &OsString) -> Result<Found, Error> {
    match value.to_str() {
        Some(s) => Ok(Found {
            name,
            value: s.to_string(),
        }),
        None => Err(invalid(name, &value.to_string_lossy(), "UTF-8 text")),
    }
}

/// The one shape of every bad-value message (SPEC §2).
fn invalid(name: &str, value: &str, expected: &str) -> Error {
    Error::Usage(format!("invalid {name} {value:?}: expected {expected}"))
}

fn parse_with<T>(found: &Found, parse: fn(&str) -> Result<T, &'static str>) -> Result<T, Error> {
    parse(&found.value).map_err(|expected| invalid(found.name, &found.value, expected))
}

fn parse_url(found: &Found, item: &str) -> Result<HttpUrl, Error> {
    // Even a bad URL may carry a password: the error line shows it redacted (SPEC §8).
    let shown = values::redact(item);
    let url = HttpUrl::parse(item).map_err(|expected| invalid(found.name, &shown, expected))?;
    if url.scheme == Scheme::Https && !cfg!(feature = "rustls") {
        return Err(invalid(
            found.name,
            &shown,
            "an http:// URL: this build has no TLS (build with `--features rustls` for https://)",
        ));
    }
    Ok(url)
}

/// The log format as configured, or text where it is missing or invalid: an error
/// in any other setting is then reported in the format the user asked for.
pub(crate) fn log_format_hint(cli: &Cli, env: &dyn Fn(&str) -> Option<OsString>) -> Format {
    let src = Sources { env };
    src.get(
        cli.log_format.as_ref(),
        "--log-format",
        &[var::TANDEM_LOG_FORMAT],
    )
    .ok()
    .flatten()
    .and_then(|found| log::parse_format(&found.value).ok())
    .unwrap_or(Format::Text)
}

/// Builds the configuration from the command line and an environment lookup (SPEC §2).
pub(crate) fn build(cli: &Cli, env: &dyn Fn(&str) -> Option<OsString>) -> Result<Config, Error> {
    use var::*;
    let src = Sources { env };

    let log_level = match src.get(
        cli.log.as_ref(),
        "--log",
        &[TANDEM_LOG, ENVOY_PREFLIGHT_LOGGING, SCUTTLE_LOGGING],
    )? {
        Some(found) => parse_with(&found, log::parse_level)?,
        None => Level::Info,
    };
    let log_format = match src.get(
        cli.log_format.as_ref(),
        "--log-format",
        &[TANDEM_LOG_FORMAT],
    )? {
        Some(found) => parse_with(&found, log::parse_format)?,
        None => Format::Text,
    };

    let mut admin = src.url(cli.admin.as_ref(), "--admin", ENVOY_ADMIN_API)?;
    let mut istio_quit = src.url(cli.istio_quit.as_ref(), "--istio-quit", ISTIO_QUIT_API)?;
    let envoy_quit = src.url(cli.envoy_quit.as_ref(), "--envoy-quit", ENVOY_KILL_API)?;
    let mut ready = src.url_list(&cli.ready, "--ready", TANDEM_READY_URLS)?;
    let mut generic = src.url_list(&cli.quit, "--quit", GENERIC_QUIT_ENDPOINTS)?;

    // Presets only fill in what was not set explicitly (SPEC §2, §6).
    let mut has_mesh = admin.is_some();
    let mesh_found = if cli.mesh.is_empty() {
        src.get(None, "--mesh", &[TANDEM_MESH])?
            .into_iter()
            .collect()
    } else {
        cli.mesh
            .iter()
            .map(|m| text("--mesh", m))
            .collect::<Result<Vec<_>, _>>()?
    };
    for found in &mesh_found {
        for name in values::split_list(&found.value) {
            let preset = mesh::find(name).ok_or_else(|| {
                invalid(
                    found.name,
                    name,
                    "a preset: istio, envoy, linkerd or cloudsql",
                )
            })?;
            let url = |s: &str| {
                HttpUrl::parse(s).map_err(|e| Error::Usage(format!("preset {}: {e}", preset.name)))
            };
            match preset.role {
                Role::Istio => {
                    has_mesh = true;
                    ready.push(url(preset.ready)?);
                    if istio_quit.is_none() {
                        istio_quit = Some(url(preset.quit)?);
                    }
                }
                Role::Envoy => {
                    has_mesh = true;
                    if admin.is_none() {
                        admin = Some(url(preset.ready)?);
                    }
                }
                Role::Generic => {
                    ready.push(url(preset.ready)?);
                    generic.push(url(preset.quit)?);
                }
            }
        }
    }

    let mut checks: Vec<Check> = admin.iter().cloned().map(Check::Envoy).collect();
    checks.extend(ready.into_iter().map(Check::Url));

    let no_wait = src.flag(cli.no_wait, &[START_WITHOUT_ENVOY])?;
    let wait_timeout = src.duration(
        cli.wait_timeout.as_ref(),
        "--wait-timeout",
        WAIT_FOR_ENVOY_TIMEOUT,
    )?;
    let fail_timeout = src.duration(
        cli.fail_timeout.as_ref(),
        "--fail-timeout",
        QUIT_WITHOUT_ENVOY_TIMEOUT,
    )?;
    let quit_timeout = src.duration(
        cli.quit_timeout.as_ref(),
        "--quit-timeout",
        QUIT_REQUEST_TIMEOUT,
    )?;
    let poll_max = match src.get(cli.poll_max.as_ref(), "--poll-max", &[TANDEM_POLL_MAX])? {
        Some(found) => {
            let d = parse_with(&found, values::parse_duration)?;
            if d.is_zero() {
                return Err(invalid(
                    found.name,
                    &found.value,
                    "a duration greater than zero",
                ));
            }
            d
        }
        None => DEFAULT_POLL_MAX,
    };
    let forward_to = match src.get(
        cli.forward_to.as_ref(),
        "--forward-to",
        &[TANDEM_FORWARD_TO],
    )? {
        None => ForwardTo::Child,
        Some(found) => match found.value.to_ascii_lowercase().as_str() {
            "child" => ForwardTo::Child,
            "group" => ForwardTo::Group,
            _ => return Err(invalid(found.name, &found.value, "child or group")),
        },
    };
    let generic_only = src.flag(cli.generic_quit_only, &[GENERIC_QUIT_ONLY])?;
    let never_quit = src.flag(cli.never_quit, &[NEVER_KILL_ISTIO, NEVER_KILL_ENVOY])?;
    let keep_on_failure = src.flag(cli.keep_on_failure, &[NEVER_KILL_ISTIO_ON_FAILURE])?;
    // Validated for compatibility only: stopping after a failure is already the default,
    // and NEVER_KILL_ISTIO_ON_FAILURE wins over it (SPEC §2).
    src.flag(false, &[ALWAYS_KILL_ENVOY])?;

    Ok(Config {
        checks,
        wait: !no_wait,
        // A zero timeout means "no timeout", as in scuttle.
        wait_timeout: wait_timeout.filter(|d| !d.is_zero()),
        fail_timeout: fail_timeout.filter(|d| !d.is_zero()),
        poll_max,
        quit: QuitConfig {
            generic,
            admin,
            istio_quit,
            envoy_quit,
            has_mesh,
            generic_only,
            never_quit,
            keep_on_failure,
            timeout: match quit_timeout {
                None => Some(DEFAULT_QUIT_TIMEOUT),
                Some(d) if d.is_zero() => None,
                Some(d) => Some(d),
            },
        },
        forward_to,
        log_level,
        log_format,
    })
}

#[cfg(test)]
mod tests;
