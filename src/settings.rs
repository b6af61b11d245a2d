//! What the configuration is once validated (SPEC §2): the settings each phase
//! reads, their defaults in each field's doc. `config::build` makes them; the
//! phases read them without knowing how they were set (no arrow from a phase
//! reaches up into `cli` or `config`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use log::LevelFilter;
use tandem_common::exit_codes::ExitCodes;

use crate::logger::Format;
use crate::termination_message;
use crate::value::url::HttpUrl;

/// One readiness check (SPEC §3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// Envoy admin: `/ready` is 200, or `/server_info` says `LIVE` where `/ready` is 404.
    Envoy(HttpUrl),
    /// Any URL answering 2xx.
    Url(HttpUrl),
    /// `tcp://HOST:PORT`: a TCP connection is accepted (then closed, nothing sent).
    Tcp {
        /// As in a URL: an IPv6 literal keeps its brackets (`[::1]`).
        host: String,
        /// 1 to 65535.
        port: u16,
    },
    /// `unix:///PATH`: a connection to the socket is accepted.
    Unix(PathBuf),
    /// `file:///PATH`: the file (or directory) exists.
    File(PathBuf),
}

impl Check {
    /// The check as the log and the termination message name it; no credentials.
    pub fn name(&self) -> String {
        match self {
            Check::Envoy(admin) => format!("envoy {}", admin.redacted()),
            Check::Url(url) => url.redacted(),
            Check::Tcp { host, port } => format!("tcp://{host}:{port}"),
            Check::Unix(path) => format!("unix://{}", path.display()),
            Check::File(path) => file_name(path),
        }
    }
}

/// `file:///PATH`; a relative path (docker-compose-wait's `WAIT_PATHS` allow one)
/// as `file:PATH`, which no one reads as absolute.
fn file_name(path: &Path) -> String {
    if path.is_absolute() {
        format!("file://{}", path.display())
    } else {
        format!("file:{}", path.display())
    }
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
    /// The exit statuses after which the kubelet runs this container again, so
    /// nothing is stopped (SPEC §5 "Restart in place"). Default: none.
    pub keep_on_exit: ExitCodes,
    /// Bound on the whole phase; `None` (set as `0`) waits as long as the endpoints take. Default: 5 s.
    pub timeout: Option<Duration>,
    /// When pilot-agent gets SIGINT. Default: when its quit request is refused.
    pub pkill_fallback: PkillFallback,
    /// The Pod's job containers, when several share the sidecars (SPEC §9): only
    /// the last to finish stops them. Default: none (this one alone).
    pub job_containers: Option<JobContainers>,
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
    /// The setting `fail_timeout` came from, as its lines name it. Default:
    /// `--fail-timeout/QUIT_WITHOUT_ENVOY_TIMEOUT`.
    pub fail_timeout_setting: &'static str,
    /// Longest interval between polls. Default: 85 ms.
    pub poll_max: Duration,
}

/// The program to run after the app, before the quit requests (SPEC §11).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnExit {
    /// The program, then its arguments: at least one word.
    pub words: Vec<String>,
    /// Bound on its run; `None` (set as `0`) waits as long as it takes. Default: 30 s.
    pub timeout: Option<Duration>,
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
    pub log_level: LevelFilter,
    /// Log line format. Default: text.
    pub log_format: Format,
    /// Where the termination message goes. Default: `/dev/termination-log` if writable.
    pub termination_log: termination_message::Target,
    /// Warnings about settings that are valid but have no effect, to log once
    /// the log is set up. Default: none.
    pub warnings: Vec<String>,
    /// The linkerd-await variable that turned waiting and stopping off. Default: none.
    pub disabled_by: Option<&'static str>,
    /// The program to run after the app. Default: none.
    pub on_exit: Option<OnExit>,
}

impl Config {
    /// True when any sidecar is waited for or stopped.
    pub fn has_sidecars(&self) -> bool {
        !self.ready.checks.is_empty() || self.quit.has_sidecars()
    }
}

impl QuitConfig {
    /// True when any sidecar is there to stop.
    pub fn has_sidecars(&self) -> bool {
        !self.generic.is_empty() || self.envoy_configured
    }
}

/// The job containers of the Pod and this one's place among them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobContainers {
    /// Every job container under tandem, this one included, in the order given.
    pub all: Vec<String>,
    /// This container's name.
    pub me: String,
    /// The option or variable that named `me`, for a name another tandem holds.
    pub me_from: &'static str,
    /// The directory they share.
    pub dir: PathBuf,
    /// The option or variable that named `dir`, for a failure to use it.
    pub dir_from: &'static str,
}
