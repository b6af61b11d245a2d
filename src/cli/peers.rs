//! The peers' variables that have no option of their own (scuttle and its forks,
//! envoy-preflight, linkerd-await, docker-compose-wait), as tables of names beside
//! the option table: the ones tandem honours, and the ones it validates and warns
//! about (SPEC §2: none is silently ignored). `--help` lists them from here;
//! `config::peers` reads them.

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
