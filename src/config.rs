//! Turns the raw command line and the environment into a validated `Config`,
//! applying every rule of SPEC §2: option over variable, presets, precedence,
//! and "bad values are errors". No I/O: the environment is passed in as a lookup.
//! Each setting is read through its row of the `options` table, which names the
//! option and its variables.

use std::ffi::OsString;
use std::time::Duration;

use crate::cli::Cli;
use crate::error::Error;
use crate::log::{self, Format, Level};
use crate::mesh::{self, Preset, Role};
use crate::options::{self, Spec};
use crate::termination;
use crate::values::{self, HttpUrl, Scheme};

/// Default bound on the whole quit phase.
const DEFAULT_QUIT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default upper bound on the interval between readiness polls.
const DEFAULT_POLL_MAX: Duration = Duration::from_millis(250);

/// One readiness check (SPEC §3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// Envoy admin: `/ready` is 200, or `/server_info` says `LIVE` where `/ready` is 404.
    Envoy(HttpUrl),
    /// Any URL answering 2xx.
    Url(HttpUrl),
}

/// Where relayed signals go (SPEC §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForwardTo {
    /// The child process only. Default.
    Child,
    /// The child's whole process group.
    Group,
}

/// When a visible `pilot-agent` gets SIGINT instead of (or after) the Istio
/// quit request (SPEC §2 `ISTIO_FALLBACK_PKILL`, §5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PkillFallback {
    /// When the request could not connect. Default.
    #[default]
    OnRefused,
    /// Whenever the request failed (`ISTIO_FALLBACK_PKILL=true`).
    OnAnyFailure,
    /// Never (`ISTIO_FALLBACK_PKILL=false`).
    Never,
}

/// Everything the quit phase needs (SPEC §5).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QuitConfig {
    /// Generic endpoints, POSTed concurrently first. Default: none.
    pub generic: Vec<HttpUrl>,
    /// Envoy admin URL, from `ENVOY_ADMIN_API` or the envoy preset. Default: none.
    pub admin: Option<HttpUrl>,
    /// pilot-agent base URL (`ISTIO_QUIT_API` or the istio preset). Default: none.
    pub istio_quit: Option<HttpUrl>,
    /// Full URL that stops plain Envoy (`ENVOY_KILL_API`). Default: none.
    pub envoy_quit: Option<HttpUrl>,
    /// Istio/Envoy is there to stop: an admin URL or an istio/envoy preset is
    /// configured (`ISTIO_QUIT_API` alone is not enough, as in scuttle). Default: false.
    pub envoy_configured: bool,
    /// Only POST the generic endpoints. Default: false.
    pub generic_only: bool,
    /// Never stop Istio/Envoy. Default: false.
    pub never_quit: bool,
    /// Stop nothing after a failed run. Default: false.
    pub keep_on_failure: bool,
    /// Bound on the whole phase; `None` (set as `0`) waits as long as the endpoints take. Default: 5 s.
    pub timeout: Option<Duration>,
    /// When pilot-agent gets SIGINT. Default: when its quit request is refused.
    pub pkill_fallback: PkillFallback,
}

/// Everything the readiness phase needs (SPEC §3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyConfig {
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
}

/// The validated configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The readiness phase.
    pub ready: ReadyConfig,
    /// The quit phase.
    pub quit: QuitConfig,
    /// Signal relay target. Default: child.
    pub forward_to: ForwardTo,
    /// Log level. Default: info.
    pub log_level: Level,
    /// Log line format. Default: text.
    pub log_format: Format,
    /// Where the termination message goes. Default: `/dev/termination-log` if writable.
    pub termination_log: termination::Target,
    /// Warnings about settings that are valid but have no effect, to log once
    /// the log is set up. Default: none.
    pub warnings: Vec<String>,
    /// The linkerd-await variable that turned waiting and stopping off. Default: none.
    pub disabled_by: Option<&'static str>,
}

impl Config {
    /// True when any sidecar is waited for or stopped.
    pub fn has_sidecars(&self) -> bool {
        !self.ready.checks.is_empty() || !self.quit.generic.is_empty() || self.quit.envoy_configured
    }
}

/// A value found for a setting, with the name it was found under (for errors).
struct Found {
    name: &'static str,
    value: String,
}

/// Reads settings from the command line first, then the environment.
struct Sources<'a> {
    cli: &'a Cli,
    env: &'a dyn Fn(&str) -> Option<OsString>,
}

impl Sources<'_> {
    /// The option's value if given, else the first non-empty variable of its row.
    fn get(&self, spec: &'static Spec) -> Result<Option<Found>, Error> {
        match self.cli.value(spec) {
            Some(v) => text(spec.name, v).map(Some),
            None => self.var(spec.vars),
        }
    }

    /// The first non-empty variable of `vars`.
    fn var(&self, vars: &[&'static str]) -> Result<Option<Found>, Error> {
        for &name in vars {
            if let Some(v) = (self.env)(name).filter(|v| !v.is_empty()) {
                return text(name, &v).map(Some);
            }
        }
        Ok(None)
    }

    /// The setting parsed by `parse`, if given at all.
    fn parsed<T>(
        &self,
        spec: &'static Spec,
        parse: fn(&str) -> Result<T, &'static str>,
    ) -> Result<Option<T>, Error> {
        match self.get(spec)? {
            Some(found) => parse_with(&found, parse).map(Some),
            None => Ok(None),
        }
    }

    /// A boolean setting: a given flag is true, else any of its variables, else false.
    fn flag(&self, spec: &'static Spec) -> Result<bool, Error> {
        if self.cli.flag(spec) {
            return Ok(true);
        }
        self.flag_vars(spec.vars)
    }

    /// True when any of `vars` is set to true; every one set must be a boolean.
    fn flag_vars(&self, vars: &[&'static str]) -> Result<bool, Error> {
        let mut any = false;
        for &name in vars {
            if let Some(found) = self.var(&[name])? {
                any |= parse_with(&found, values::parse_bool)?;
            }
        }
        Ok(any)
    }

    fn url(&self, spec: &'static Spec) -> Result<Option<HttpUrl>, Error> {
        match self.get(spec)? {
            Some(found) => parse_url(&found, &found.value).map(Some),
            None => Ok(None),
        }
    }

    /// The items of a list setting: the options replace the variable (SPEC §2, "Lists").
    fn list(&self, spec: &'static Spec) -> Result<Vec<Found>, Error> {
        let given: Vec<&OsString> = self.cli.values(spec).collect();
        if given.is_empty() {
            return Ok(self.var(spec.vars)?.into_iter().collect());
        }
        given.into_iter().map(|v| text(spec.name, v)).collect()
    }

    /// A URL list, each value split at commas.
    fn url_list(&self, spec: &'static Spec) -> Result<Vec<HttpUrl>, Error> {
        let mut urls = Vec::new();
        for found in &self.list(spec)? {
            for item in values::split_list(&found.value) {
                urls.push(parse_url(found, item)?);
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
    parse(&found.value).map_err(|expected| invalid_fixable(found.name, &found.value, expected))
}

/// [`invalid`], naming the corrected value where the fix is obvious.
fn invalid_fixable(name: &str, value: &str, expected: &str) -> Error {
    match values::likely_fix(value, expected) {
        Some(fix) => invalid(name, value, &format!("{expected} (did you mean {fix}?)")),
        None => invalid(name, value, expected),
    }
}

fn parse_url(found: &Found, item: &str) -> Result<HttpUrl, Error> {
    // Even a bad URL may carry a password: the error line shows it redacted (SPEC §8).
    let shown = values::redact(item);
    let url =
        HttpUrl::parse(item).map_err(|expected| invalid_fixable(found.name, &shown, expected))?;
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
pub fn log_format_hint(cli: &Cli, env: &dyn Fn(&str) -> Option<OsString>) -> Format {
    let src = Sources { cli, env };
    src.parsed(&options::LOG_FORMAT, log::parse_format)
        .ok()
        .flatten()
        .unwrap_or(Format::Text)
}

/// The termination log as configured, or the default where it is missing or
/// invalid, for failures before (or of) the configuration. Without a command
/// line (it did not parse) only the variable counts.
pub fn termination_log_hint(
    cli: Option<&Cli>,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> termination::Target {
    let empty;
    let cli = match cli {
        Some(cli) => cli,
        None => {
            empty = Cli::empty();
            &empty
        }
    };
    let src = Sources { cli, env };
    src.parsed(&options::TERMINATION_LOG, termination::parse)
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Builds the configuration from the command line and an environment lookup (SPEC §2).
pub fn build(cli: &Cli, env: &dyn Fn(&str) -> Option<OsString>) -> Result<Config, Error> {
    let src = Sources { cli, env };
    let log_level = src.parsed(&options::LOG, log::parse_level)?;
    let log_format = src.parsed(&options::LOG_FORMAT, log::parse_format)?;
    let termination_log = src.parsed(&options::TERMINATION_LOG, termination::parse)?;
    let endpoints = Endpoints::read(&src)?;
    let no_wait = src.flag(&options::NO_WAIT)?;
    let wait_timeout = src.parsed(&options::WAIT_TIMEOUT, values::parse_duration)?;
    let fail_timeout = src.parsed(&options::FAIL_TIMEOUT, values::parse_duration)?;
    let quit_timeout = src.parsed(&options::QUIT_TIMEOUT, values::parse_duration)?;
    let poll_max = poll_max(&src)?;
    let forward_to = forward_to(&src)?;
    let generic_only = src.flag(&options::GENERIC_QUIT_ONLY)?;
    let never_quit = src.flag(&options::NEVER_QUIT)?;
    let keep_on_failure = src.flag(&options::KEEP_ON_FAILURE)?;
    // Validated for compatibility only: stopping after a failure is already the default,
    // and NEVER_KILL_ISTIO_ON_FAILURE wins over it (SPEC §2).
    src.flag_vars(&[options::ALWAYS_KILL_ENVOY])?;
    let pkill_fallback = match src.var(&[options::ISTIO_FALLBACK_PKILL])? {
        None => PkillFallback::OnRefused,
        Some(found) if parse_with(&found, values::parse_bool)? => PkillFallback::OnAnyFailure,
        Some(_) => PkillFallback::Never,
    };
    let warnings = no_effect_warnings(&src)?;
    // linkerd-await's switch: run the app as if tandem were not there.
    let disabled = src.var(options::LINKERD_DISABLED)?;

    let mut checks: Vec<Check> = endpoints.admin.iter().cloned().map(Check::Envoy).collect();
    checks.extend(endpoints.ready.into_iter().map(Check::Url));
    let mut quit = QuitConfig {
        generic: endpoints.generic,
        admin: endpoints.admin,
        istio_quit: endpoints.istio_quit,
        envoy_quit: endpoints.envoy_quit,
        envoy_configured: endpoints.envoy_configured,
        generic_only,
        never_quit,
        keep_on_failure,
        timeout: match quit_timeout {
            None => Some(DEFAULT_QUIT_TIMEOUT),
            Some(d) => (!d.is_zero()).then_some(d),
        },
        pkill_fallback,
    };
    if disabled.is_some() {
        checks.clear();
        quit = QuitConfig {
            timeout: quit.timeout,
            ..QuitConfig::default()
        };
    }
    // A zero timeout means "no timeout", as in scuttle.
    let nonzero = |d: Option<Duration>| d.filter(|d| !d.is_zero());
    Ok(Config {
        ready: ReadyConfig {
            checks,
            wait: !no_wait,
            wait_timeout: nonzero(wait_timeout),
            fail_timeout: nonzero(fail_timeout),
            poll_max,
        },
        quit,
        forward_to,
        log_level: log_level.unwrap_or(Level::Info),
        log_format: log_format.unwrap_or(Format::Text),
        termination_log: termination_log.unwrap_or_default(),
        warnings,
        disabled_by: disabled.map(|found| found.name),
    })
}

/// The sidecar URLs as set, with the `--mesh` presets filled in.
struct Endpoints {
    admin: Option<HttpUrl>,
    istio_quit: Option<HttpUrl>,
    envoy_quit: Option<HttpUrl>,
    ready: Vec<HttpUrl>,
    generic: Vec<HttpUrl>,
    envoy_configured: bool,
}

impl Endpoints {
    fn read(src: &Sources) -> Result<Endpoints, Error> {
        let admin = src.url(&options::ADMIN)?;
        let mut endpoints = Endpoints {
            envoy_configured: admin.is_some(),
            admin,
            istio_quit: src.url(&options::ISTIO_QUIT)?,
            envoy_quit: src.url(&options::ENVOY_QUIT)?,
            ready: src.url_list(&options::READY)?,
            generic: src.url_list(&options::QUIT)?,
        };
        // scuttle forks' list joins ours whatever replaced TANDEM_READY_URLS.
        if let Some(found) = src.var(&[options::GENERIC_READY_ENDPOINTS])? {
            for item in values::split_list(&found.value) {
                endpoints.ready.push(parse_url(&found, item)?);
            }
        }
        for found in &src.list(&options::MESH)? {
            for name in values::split_list(&found.value) {
                let preset = mesh::find(name).ok_or_else(|| {
                    invalid(found.name, name, &format!("a preset: {}", mesh::NAMES))
                })?;
                endpoints.add(preset, src)?;
            }
        }
        Ok(endpoints)
    }

    /// A preset only fills in what was not set explicitly (SPEC §2, §6).
    fn add(&mut self, preset: &Preset, src: &Sources) -> Result<(), Error> {
        let port = match preset.port_var {
            Some(var) => match src.var(&[var])? {
                Some(found) => Some(parse_with(&found, values::parse_port_number)?),
                None => None,
            },
            None => None,
        };
        let url = |s: &str| {
            let parsed = HttpUrl::parse(s)
                .map_err(|e| Error::Usage(format!("preset {}: {e}", preset.name)))?;
            Ok::<HttpUrl, Error>(match port {
                // Preset URLs are `http://127.0.0.1:PORT/path`: swap the port only.
                Some(p) => HttpUrl {
                    raw: s.replacen(&format!(":{}", parsed.port), &format!(":{p}"), 1),
                    port: p,
                    ..parsed
                },
                None => parsed,
            })
        };
        let ready = preset.ready.map(url).transpose()?;
        match preset.role {
            Role::Istio => {
                self.envoy_configured = true;
                self.ready.extend(ready);
                if self.istio_quit.is_none() {
                    self.istio_quit = Some(url(preset.quit)?);
                }
            }
            Role::Envoy => {
                self.envoy_configured = true;
                if self.admin.is_none() {
                    self.admin = ready;
                }
            }
            Role::Generic => {
                self.ready.extend(ready);
                self.generic.push(url(preset.quit)?);
            }
        }
        Ok(())
    }
}

/// One warning for each peer variable that is set and has no effect in tandem;
/// a bad value is still an error (SPEC §2).
fn no_effect_warnings(src: &Sources) -> Result<Vec<String>, Error> {
    let mut warnings = Vec::new();
    for item in options::NO_EFFECT {
        let Some(found) = src.var(&[item.var])? else {
            continue;
        };
        match item.shape {
            options::Shape::Bool => {
                parse_with(&found, values::parse_bool)?;
            }
            options::Shape::Seconds => {
                parse_with(&found, values::parse_seconds)?;
            }
            options::Shape::Text => {}
        }
        let shown = values::redact(&found.value);
        warnings.push(format!(
            "{}={shown:?} has no effect: {}",
            item.var, item.why
        ));
    }
    Ok(warnings)
}

fn poll_max(src: &Sources) -> Result<Duration, Error> {
    let Some(found) = src.get(&options::POLL_MAX)? else {
        return Ok(DEFAULT_POLL_MAX);
    };
    let d = parse_with(&found, values::parse_duration)?;
    if d.is_zero() {
        return Err(invalid(
            found.name,
            &found.value,
            "a duration greater than zero",
        ));
    }
    Ok(d)
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
