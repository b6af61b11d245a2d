//! Unit tests of `config::build` and its helpers: every SPEC §2 rule, table-driven.

use super::*;
use crate::cli::peers;
use crate::settings::{Check, JobContainers, PkillFallback};
use crate::value::url::{self, HttpUrl};
use std::collections::HashMap;

mod bad_values;
mod keep_on_exit;
mod kinds;
mod on_exit;
mod presets;
mod random_and_jobs;

const SEC: Duration = Duration::from_secs(1);

/// A fake environment: variable names and values.
type Env<'a> = &'a [(&'a str, &'a str)];

/// Builds a `Config` from a command line (no program name) and a fake environment.
fn build_from(args: &str, env: Env) -> Result<Config, Error> {
    let cli = crate::cli::parse(args.split_whitespace().map(OsString::from))
        .unwrap_or_else(|e| panic!("{args:?} does not parse: {e}"));
    let vars: HashMap<String, OsString> = env
        .iter()
        .map(|(k, v)| (k.to_string(), OsString::from(v)))
        .collect();
    build(&cli, &|name| vars.get(name).cloned())
}

/// Every variable tandem reads, from the option table.
fn all_variables() -> Vec<&'static str> {
    options::OPTIONS
        .iter()
        .flat_map(|spec| spec.vars.iter().copied())
        .chain([peers::ALWAYS_KILL_ENVOY])
        .collect()
}

fn config(args: &str, env: Env) -> Config {
    build_from(args, env).unwrap_or_else(|e| panic!("{args:?} {env:?}: {e}"))
}

fn usage_error(args: &str, env: Env) -> String {
    match build_from(args, env) {
        Err(Error::Usage(msg)) => msg,
        other => panic!("{args:?} {env:?}: expected a usage error, got {other:?}"),
    }
}

fn url(s: &str) -> HttpUrl {
    HttpUrl::parse(s).unwrap()
}

fn defaults() -> Config {
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
type Effect = fn(&mut Config);

const ADMIN: &str = "http://127.0.0.1:15000";
const ISTIO_READY: &str = "http://127.0.0.1:15021/healthz/ready";
const ISTIO_QUIT: &str = "http://127.0.0.1:15020";
const ENVOY_ADMIN: &str = "http://127.0.0.1:9901";
const LINKERD_READY: &str = "http://127.0.0.1:4191/ready";
const LINKERD_QUIT: &str = "http://127.0.0.1:4191/shutdown";
const CLOUDSQL_READY: &str = "http://127.0.0.1:9090/startup";
const CLOUDSQL_QUIT: &str = "http://127.0.0.1:9091/quitquitquit";

#[test]
fn nothing_set_gives_the_defaults() {
    assert_eq!(config("", &[]), defaults());
    assert_eq!(config("sh -c true", &[]), defaults());
}

#[test]
fn every_variable_is_read_and_has_its_effect() {
    let cases: &[(&str, &str, Effect)] = &[
        ("ENVOY_ADMIN_API", ADMIN, |c| {
            c.ready.checks = vec![Check::Envoy(url(ADMIN))];
            c.quit.admin = Some(url(ADMIN));
            c.quit.envoy_configured = true;
        }),
        ("START_WITHOUT_ENVOY", "true", |c| c.ready.wait = false),
        ("WAIT_FOR_ENVOY_TIMEOUT", "30s", |c| {
            c.ready.wait_timeout = Some(30 * SEC)
        }),
        ("QUIT_WITHOUT_ENVOY_TIMEOUT", "1m", |c| {
            c.ready.fail_timeout = Some(60 * SEC)
        }),
        ("ISTIO_QUIT_API", ISTIO_QUIT, |c| {
            c.quit.istio_quit = Some(url(ISTIO_QUIT))
        }),
        ("ENVOY_KILL_API", "http://127.0.0.1:9901/kill", |c| {
            c.quit.envoy_quit = Some(url("http://127.0.0.1:9901/kill"))
        }),
        ("GENERIC_QUIT_ENDPOINTS", "http://127.0.0.1:8080/q", |c| {
            c.quit.generic = vec![url("http://127.0.0.1:8080/q")]
        }),
        ("GENERIC_QUIT_ONLY", "true", |c| c.quit.generic_only = true),
        ("QUIT_REQUEST_TIMEOUT", "2s", |c| {
            c.quit.timeout = Some(2 * SEC)
        }),
        ("NEVER_KILL_ISTIO", "true", |c| c.quit.never_quit = true),
        ("NEVER_KILL_ENVOY", "true", |c| c.quit.never_quit = true),
        ("NEVER_KILL_ISTIO_ON_FAILURE", "true", |c| {
            c.quit.keep_on_exit = ExitCodes::FAILURES
        }),
        ("TANDEM_KEEP_ON_EXIT", "3,42-43", |c| {
            c.quit.keep_on_exit = ExitCodes::parse("3,42,43").unwrap()
        }),
        // Stopping after a failure is already the default: accepted, no change.
        ("ALWAYS_KILL_ENVOY", "true", |_| {}),
        ("ISTIO_FALLBACK_PKILL", "true", |c| {
            c.quit.pkill_fallback = PkillFallback::OnAnyFailure
        }),
        ("ISTIO_FALLBACK_PKILL", "false", |c| {
            c.quit.pkill_fallback = PkillFallback::Never
        }),
        ("GENERIC_READY_ENDPOINTS", "http://127.0.0.1:8080/g", |c| {
            c.ready.checks = vec![Check::Url(url("http://127.0.0.1:8080/g"))]
        }),
        ("LINKERD_AWAIT_DISABLED", "x", |c| {
            c.disabled_by = Some("LINKERD_AWAIT_DISABLED")
        }),
        ("LINKERD_DISABLED", "1", |c| {
            c.disabled_by = Some("LINKERD_DISABLED")
        }),
        ("SCUTTLE_SLEEP_1", "3", |c| {
            c.warnings = vec![format!(
                "SCUTTLE_SLEEP_1=\"3\" has no effect: {}",
                peers::NO_EFFECT[2].why
            )]
        }),
        ("TANDEM_TERMINATION_LOG", "off", |c| {
            c.termination_log = crate::termination_message::Target::Off
        }),
        ("SCUTTLE_LOGGING", "false", |c| {
            c.log_level = LevelFilter::Warn
        }),
        ("ENVOY_PREFLIGHT_LOGGING", "false", |c| {
            c.log_level = LevelFilter::Warn
        }),
        ("TANDEM_LOG", "debug", |c| c.log_level = LevelFilter::Debug),
        ("TANDEM_LOG_FORMAT", "json", |c| c.log_format = Format::Json),
        ("TANDEM_READY_URLS", "http://127.0.0.1:8080/up", |c| {
            c.ready.checks = vec![Check::Url(url("http://127.0.0.1:8080/up"))]
        }),
        ("TANDEM_MESH", "linkerd", |c| {
            c.ready.checks = vec![Check::Url(url(LINKERD_READY))];
            c.quit.generic = vec![url(LINKERD_QUIT)];
        }),
        ("TANDEM_POLL_MAX", "1s", |c| c.ready.poll_max = SEC),
        ("TANDEM_FORWARD_TO", "group", |c| {
            c.forward_to = ForwardTo::Group
        }),
        ("TANDEM_ON_EXIT", "upload", |c| {
            c.on_exit = Some(OnExit {
                words: vec!["upload".into()],
                timeout: Some(30 * SEC),
            })
        }),
        // Checked without a program too; with none, it has nothing to bound.
        ("TANDEM_ON_EXIT_TIMEOUT", "1m", |_| {}),
    ];
    for (name, value, effect) in cases {
        let mut expected = defaults();
        effect(&mut expected);
        assert_eq!(config("", &[(name, value)]), expected, "{name}={value}");
    }
}

#[test]
fn every_option_has_the_effect_of_its_variable() {
    let cases: &[(&str, &str, &str)] = &[
        ("--admin", "ENVOY_ADMIN_API", ADMIN),
        ("--no-wait", "START_WITHOUT_ENVOY", "true"),
        ("--wait-timeout", "WAIT_FOR_ENVOY_TIMEOUT", "30s"),
        ("--fail-timeout", "QUIT_WITHOUT_ENVOY_TIMEOUT", "1m"),
        ("--istio-quit", "ISTIO_QUIT_API", ISTIO_QUIT),
        ("--envoy-quit", "ENVOY_KILL_API", "http://127.0.0.1:1/k"),
        ("--quit", "GENERIC_QUIT_ENDPOINTS", "http://127.0.0.1:1/q"),
        ("--generic-quit-only", "GENERIC_QUIT_ONLY", "true"),
        ("--quit-timeout", "QUIT_REQUEST_TIMEOUT", "2s"),
        ("--never-quit", "NEVER_KILL_ISTIO", "true"),
        ("--never-quit", "NEVER_KILL_ENVOY", "true"),
        ("--keep-on-failure", "NEVER_KILL_ISTIO_ON_FAILURE", "true"),
        ("--keep-on-exit", "TANDEM_KEEP_ON_EXIT", "0-255"),
        ("--log", "TANDEM_LOG", "debug"),
        ("--log", "ENVOY_PREFLIGHT_LOGGING", "false"),
        ("--log", "SCUTTLE_LOGGING", "false"),
        ("--log-format", "TANDEM_LOG_FORMAT", "json"),
        ("--ready", "TANDEM_READY_URLS", "http://127.0.0.1:1/up"),
        ("--mesh", "TANDEM_MESH", "istio"),
        ("--poll-max", "TANDEM_POLL_MAX", "1s"),
        ("--forward-to", "TANDEM_FORWARD_TO", "group"),
        ("--on-exit", "TANDEM_ON_EXIT", "upload"),
    ];
    for (option, name, value) in cases {
        let args = if *value == "true" && !option.ends_with("log") {
            option.to_string()
        } else {
            format!("{option} {value}")
        };
        let from_option = config(&args, &[]);
        assert_ne!(from_option, defaults(), "{args}");
        assert_eq!(from_option, config("", &[(name, value)]), "{args}");
    }
}

#[test]
fn option_overrides_its_variable() {
    let cases: &[(&str, &str, &str)] = &[
        ("--admin http://127.0.0.1:1", "ENVOY_ADMIN_API", ADMIN),
        ("--no-wait", "START_WITHOUT_ENVOY", "false"),
        ("--wait-timeout 1s", "WAIT_FOR_ENVOY_TIMEOUT", "30s"),
        ("--wait-timeout 0", "WAIT_FOR_ENVOY_TIMEOUT", "30s"),
        ("--fail-timeout 1s", "QUIT_WITHOUT_ENVOY_TIMEOUT", "1m"),
        (
            "--istio-quit http://127.0.0.1:1",
            "ISTIO_QUIT_API",
            ISTIO_QUIT,
        ),
        (
            "--envoy-quit http://127.0.0.1:1/k",
            "ENVOY_KILL_API",
            "http://127.0.0.1:2/k",
        ),
        (
            "--quit http://127.0.0.1:1/q",
            "GENERIC_QUIT_ENDPOINTS",
            "http://127.0.0.1:2/q,http://127.0.0.1:3/q",
        ),
        ("--generic-quit-only", "GENERIC_QUIT_ONLY", "false"),
        ("--quit-timeout 1s", "QUIT_REQUEST_TIMEOUT", "2s"),
        ("--quit-timeout 0", "QUIT_REQUEST_TIMEOUT", "2s"),
        ("--never-quit", "NEVER_KILL_ISTIO", "false"),
        ("--never-quit", "NEVER_KILL_ENVOY", "no"),
        ("--keep-on-failure", "NEVER_KILL_ISTIO_ON_FAILURE", "0"),
        ("--keep-on-exit 3", "TANDEM_KEEP_ON_EXIT", "1-255"),
        ("--log error", "TANDEM_LOG", "debug"),
        ("--log-format text", "TANDEM_LOG_FORMAT", "json"),
        (
            "--ready http://127.0.0.1:1/up",
            "TANDEM_READY_URLS",
            "http://127.0.0.1:2/up",
        ),
        ("--mesh linkerd", "TANDEM_MESH", "istio"),
        ("--poll-max 1s", "TANDEM_POLL_MAX", "2s"),
        ("--forward-to child", "TANDEM_FORWARD_TO", "group"),
    ];
    for (args, name, value) in cases {
        let both = config(args, &[(name, value)]);
        assert_eq!(both, config(args, &[]), "{args} over {name}={value}");
        assert_ne!(
            config("", &[(name, value)]),
            config(args, &[]),
            "{args} and {name}={value} should differ on their own"
        );
    }
}

#[test]
fn booleans_accept_every_spelling_and_empty_means_unset() {
    let cases: &[(&str, bool)] = &[
        ("true", true),
        ("TRUE", true),
        ("True", true),
        ("1", true),
        ("yes", true),
        ("YES", true),
        ("false", false),
        ("FALSE", false),
        ("0", false),
        ("no", false),
        ("", false),
    ];
    for (value, expected) in cases {
        let c = config("", &[("START_WITHOUT_ENVOY", value)]);
        assert_eq!(c.ready.wait, !expected, "START_WITHOUT_ENVOY={value:?}");
        let c = config("", &[("GENERIC_QUIT_ONLY", value)]);
        assert_eq!(
            c.quit.generic_only, *expected,
            "GENERIC_QUIT_ONLY={value:?}"
        );
        let c = config("", &[("NEVER_KILL_ISTIO", value)]);
        assert_eq!(c.quit.never_quit, *expected, "NEVER_KILL_ISTIO={value:?}");
        let c = config("", &[("NEVER_KILL_ISTIO_ON_FAILURE", value)]);
        let kept = c.quit.keep_on_exit == ExitCodes::FAILURES;
        assert_eq!(kept, *expected, "{value:?}");
    }
}

#[test]
fn every_empty_variable_means_unset() {
    let names = all_variables();
    let all_empty: Vec<(&str, &str)> = names.iter().map(|n| (*n, "")).collect();
    assert_eq!(config("", &all_empty), defaults());
}

#[test]
fn either_never_kill_variable_sets_never_quit() {
    let cases: &[(&str, &str, bool)] = &[
        ("false", "false", false),
        ("true", "false", true),
        ("false", "true", true),
        ("", "yes", true),
        ("true", "true", true),
    ];
    for (istio, envoy, expected) in cases {
        let c = config(
            "",
            &[("NEVER_KILL_ISTIO", istio), ("NEVER_KILL_ENVOY", envoy)],
        );
        assert_eq!(c.quit.never_quit, *expected, "{istio:?} {envoy:?}");
    }
}

#[test]
fn never_kill_on_failure_beats_always_kill_envoy() {
    let c = config(
        "",
        &[
            ("NEVER_KILL_ISTIO_ON_FAILURE", "true"),
            ("ALWAYS_KILL_ENVOY", "true"),
        ],
    );
    assert_eq!(c.quit.keep_on_exit, ExitCodes::FAILURES);
}

#[test]
fn durations_use_go_syntax() {
    let cases: &[(&str, Duration)] = &[
        ("300ms", Duration::from_millis(300)),
        ("1.5s", Duration::from_millis(1500)),
        ("2m30s", 150 * SEC),
        ("1h", 3600 * SEC),
        ("10us", Duration::from_micros(10)),
        ("10µs", Duration::from_micros(10)),
    ];
    for (value, expected) in cases {
        let c = config("", &[("WAIT_FOR_ENVOY_TIMEOUT", value)]);
        assert_eq!(c.ready.wait_timeout, Some(*expected), "{value}");
        let c = config(&format!("--fail-timeout {value}"), &[]);
        assert_eq!(c.ready.fail_timeout, Some(*expected), "{value}");
        let c = config("", &[("QUIT_REQUEST_TIMEOUT", value)]);
        assert_eq!(c.quit.timeout, Some(*expected), "{value}");
        let c = config("", &[("TANDEM_POLL_MAX", value)]);
        assert_eq!(c.ready.poll_max, *expected, "{value}");
    }
}

#[test]
fn zero_timeout_means_no_timeout() {
    for zero in ["0", "0s", "0ms"] {
        let c = config(
            "",
            &[
                ("WAIT_FOR_ENVOY_TIMEOUT", zero),
                ("QUIT_WITHOUT_ENVOY_TIMEOUT", zero),
                ("QUIT_REQUEST_TIMEOUT", zero),
            ],
        );
        assert_eq!(c.ready.wait_timeout, None, "{zero}");
        assert_eq!(c.ready.fail_timeout, None, "{zero}");
        assert_eq!(c.quit.timeout, None, "{zero}");
        let args = format!("--wait-timeout {zero} --fail-timeout {zero} --quit-timeout {zero}");
        let c = config(&args, &[]);
        assert_eq!(
            (c.ready.wait_timeout, c.ready.fail_timeout, c.quit.timeout),
            (None, None, None),
            "{args}"
        );
    }
}

#[test]
fn quit_timeout_defaults_to_five_seconds() {
    assert_eq!(config("", &[]).quit.timeout, Some(5 * SEC));
    let c = config("", &[("QUIT_REQUEST_TIMEOUT", "")]);
    assert_eq!(c.quit.timeout, Some(5 * SEC));
}

#[test]
fn poll_max_of_zero_is_an_error() {
    for (args, env, name) in [
        ("", &[("TANDEM_POLL_MAX", "0")][..], "TANDEM_POLL_MAX"),
        ("", &[("TANDEM_POLL_MAX", "0s")][..], "TANDEM_POLL_MAX"),
        ("--poll-max 0", &[][..], "--poll-max"),
    ] {
        let msg = usage_error(args, env);
        assert!(msg.contains(name), "{msg}");
        assert!(msg.contains("greater than zero"), "{msg}");
    }
}

#[test]
fn fail_timeout_and_wait_timeout_are_both_kept() {
    let c = config(
        "",
        &[
            ("WAIT_FOR_ENVOY_TIMEOUT", "10s"),
            ("QUIT_WITHOUT_ENVOY_TIMEOUT", "20s"),
        ],
    );
    assert_eq!(c.ready.wait_timeout, Some(10 * SEC));
    assert_eq!(c.ready.fail_timeout, Some(20 * SEC));
    let c = config("--wait-timeout 3s --fail-timeout 4s --no-wait", &[]);
    assert_eq!(
        (c.ready.wait_timeout, c.ready.fail_timeout),
        (Some(3 * SEC), Some(4 * SEC))
    );
    assert!(!c.ready.wait);
}

#[test]
fn logging_precedence_is_option_then_tandem_then_preflight_then_scuttle() {
    use LevelFilter::*;
    let cases: &[(&str, &str, &str, &str, LevelFilter)] = &[
        // (--log, TANDEM_LOG, ENVOY_PREFLIGHT_LOGGING, SCUTTLE_LOGGING, expected)
        ("", "", "", "", Info),
        ("", "", "", "true", Info),
        ("", "", "", "false", Warn),
        ("", "", "false", "true", Warn),
        ("", "", "true", "false", Info),
        ("", "error", "true", "false", Error),
        ("", "off", "", "", Off),
        ("debug", "error", "false", "false", Debug),
        ("false", "debug", "", "", Warn),
        ("true", "off", "", "", Info),
        ("", "", "", "1", Info),
        ("", "", "", "no", Warn),
        ("", "WARN", "", "", Warn),
    ];
    for (option, tandem, preflight, scuttle, expected) in cases {
        let args = if option.is_empty() {
            String::new()
        } else {
            format!("--log {option}")
        };
        let c = config(
            &args,
            &[
                ("TANDEM_LOG", tandem),
                ("ENVOY_PREFLIGHT_LOGGING", preflight),
                ("SCUTTLE_LOGGING", scuttle),
            ],
        );
        assert_eq!(
            c.log_level, *expected,
            "--log {option:?} TANDEM_LOG={tandem:?} \
             ENVOY_PREFLIGHT_LOGGING={preflight:?} SCUTTLE_LOGGING={scuttle:?}"
        );
    }
}

#[test]
fn log_format_is_text_or_json() {
    let cases: &[(&str, Format)] = &[
        ("", Format::Text),
        ("text", Format::Text),
        ("json", Format::Json),
        ("JSON", Format::Json),
    ];
    for (value, expected) in cases {
        let c = config("", &[("TANDEM_LOG_FORMAT", value)]);
        assert_eq!(c.log_format, *expected, "{value:?}");
    }
}
