//! What the configuration's tests share: a fake environment, building a
//! `Config` from a command line and that environment (or the usage error it
//! gives), the defaults, and the sidecars' default URLs.

use super::*;

pub(super) const SEC: Duration = Duration::from_secs(1);

/// A fake environment: variable names and values.
pub(super) type Env<'a> = &'a [(&'a str, &'a str)];

/// Builds a `Config` from a command line (no program name) and a fake environment.
pub(super) fn build_from(args: &str, env: Env) -> Result<Config, Error> {
    let cli = crate::cli::parse(args.split_whitespace().map(OsString::from))
        .unwrap_or_else(|e| panic!("{args:?} does not parse: {e}"));
    let vars: HashMap<String, OsString> = env
        .iter()
        .map(|(k, v)| (k.to_string(), OsString::from(v)))
        .collect();
    build(&cli, &|name| vars.get(name).cloned())
}

/// Every variable tandem reads, from the option table.
pub(super) fn all_variables() -> Vec<&'static str> {
    options::OPTIONS
        .iter()
        .flat_map(|spec| spec.vars.iter().copied())
        .chain([peers::ALWAYS_KILL_ENVOY])
        .collect()
}

pub(super) fn config(args: &str, env: Env) -> Config {
    build_from(args, env).unwrap_or_else(|e| panic!("{args:?} {env:?}: {e}"))
}

pub(super) fn usage_error(args: &str, env: Env) -> String {
    match build_from(args, env) {
        Err(Error::Usage(msg)) => msg,
        other => panic!("{args:?} {env:?}: expected a usage error, got {other:?}"),
    }
}

pub(super) fn url(s: &str) -> HttpUrl {
    HttpUrl::parse(s).unwrap()
}

pub(super) fn defaults() -> Config {
    Config {
        ready: ReadyConfig {
            checks: vec![],
            wait: true,
            wait_timeout: None,
            fail_timeout: None,
            fail_timeout_setting: "--fail-timeout/QUIT_WITHOUT_ENVOY_TIMEOUT",
            poll_max: Duration::from_millis(85),
        },
        quit: QuitConfig {
            timeout: Some(5 * SEC),
            ..QuitConfig::default()
        },
        forward_to: ForwardTo::Child,
        log_level: LevelFilter::Info,
        log_format: Format::Text,
        termination_log: crate::termination_message::Target::Kubernetes,
        warnings: vec![],
        disabled_by: None,
        on_exit: None,
    }
}

/// One variable (or option) and the one change it makes to the defaults.
pub(super) type Effect = fn(&mut Config);

pub(super) const ADMIN: &str = "http://127.0.0.1:15000";
pub(super) const ISTIO_READY: &str = "http://127.0.0.1:15021/healthz/ready";
pub(super) const ISTIO_QUIT: &str = "http://127.0.0.1:15020";
pub(super) const ENVOY_ADMIN: &str = "http://127.0.0.1:9901";
pub(super) const LINKERD_READY: &str = "http://127.0.0.1:4191/ready";
pub(super) const LINKERD_QUIT: &str = "http://127.0.0.1:4191/shutdown";
pub(super) const CLOUDSQL_READY: &str = "http://127.0.0.1:9090/startup";
pub(super) const CLOUDSQL_QUIT: &str = "http://127.0.0.1:9091/quitquitquit";
