//! Unit tests of `config::build` and its helpers: every SPEC §2 rule, table-driven.

use super::*;
use crate::cli::peers;
use crate::settings::{Check, JobContainers, PkillFallback};
use crate::value::url::{self, HttpUrl};
use std::collections::HashMap;

mod kinds;
mod on_exit;

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
            c.quit.keep_on_failure = true
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
        assert_eq!(c.quit.keep_on_failure, *expected, "{value:?}");
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
    assert!(c.quit.keep_on_failure);
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

#[test]
fn generic_quit_endpoints_are_comma_separated_with_blanks_trimmed() {
    let cases: &[(&str, &[&str])] = &[
        ("", &[]),
        ("http://127.0.0.1:1/a", &["http://127.0.0.1:1/a"]),
        (
            "http://127.0.0.1:1/a,http://127.0.0.1:2/b",
            &["http://127.0.0.1:1/a", "http://127.0.0.1:2/b"],
        ),
        (
            " http://127.0.0.1:1/a , ,http://127.0.0.1:2/b ,",
            &["http://127.0.0.1:1/a", "http://127.0.0.1:2/b"],
        ),
    ];
    for (value, expected) in cases {
        let expected: Vec<HttpUrl> = expected.iter().map(|u| url(u)).collect();
        let c = config("", &[("GENERIC_QUIT_ENDPOINTS", value)]);
        assert_eq!(c.quit.generic, expected, "GENERIC_QUIT_ENDPOINTS={value:?}");
        let c = config("", &[("TANDEM_READY_URLS", value)]);
        let checks: Vec<Check> = expected.into_iter().map(Check::Url).collect();
        assert_eq!(c.ready.checks, checks, "TANDEM_READY_URLS={value:?}");
    }
}

#[test]
fn list_options_replace_their_variable_and_repeat() {
    let env = [
        ("GENERIC_QUIT_ENDPOINTS", "http://127.0.0.1:9/env"),
        ("TANDEM_READY_URLS", "http://127.0.0.1:9/env"),
    ];
    let c = config(
        "--quit http://127.0.0.1:1/a --quit http://127.0.0.1:2/b,http://127.0.0.1:3/c \
         --ready http://127.0.0.1:4/r --ready http://127.0.0.1:5/r",
        &env,
    );
    assert_eq!(
        c.quit.generic,
        vec![
            url("http://127.0.0.1:1/a"),
            url("http://127.0.0.1:2/b"),
            url("http://127.0.0.1:3/c"),
        ]
    );
    assert_eq!(
        c.ready.checks,
        vec![
            Check::Url(url("http://127.0.0.1:4/r")),
            Check::Url(url("http://127.0.0.1:5/r")),
        ]
    );
}

#[test]
fn presets_add_to_the_lists_from_variables_and_options() {
    let from_env = config(
        "--mesh linkerd",
        &[
            ("GENERIC_QUIT_ENDPOINTS", "http://127.0.0.1:1/q"),
            ("TANDEM_READY_URLS", "http://127.0.0.1:1/r"),
        ],
    );
    let from_options = config(
        "--mesh linkerd --quit http://127.0.0.1:1/q --ready http://127.0.0.1:1/r",
        &[],
    );
    for c in [from_env, from_options] {
        assert_eq!(
            c.quit.generic,
            vec![url("http://127.0.0.1:1/q"), url(LINKERD_QUIT)]
        );
        assert_eq!(
            c.ready.checks,
            vec![
                Check::Url(url("http://127.0.0.1:1/r")),
                Check::Url(url(LINKERD_READY)),
            ]
        );
    }
}

#[test]
fn each_preset_contributes_its_endpoints() {
    let cases: &[(&str, Effect)] = &[
        ("istio", |c| {
            c.ready.checks = vec![Check::Url(url(ISTIO_READY))];
            c.quit.istio_quit = Some(url(ISTIO_QUIT));
            c.quit.envoy_configured = true;
        }),
        ("envoy", |c| {
            c.ready.checks = vec![Check::Envoy(url(ENVOY_ADMIN))];
            c.quit.admin = Some(url(ENVOY_ADMIN));
            c.quit.envoy_configured = true;
        }),
        ("linkerd", |c| {
            c.ready.checks = vec![Check::Url(url(LINKERD_READY))];
            c.quit.generic = vec![url(LINKERD_QUIT)];
        }),
        ("cloudsql", |c| {
            c.ready.checks = vec![Check::Url(url(CLOUDSQL_READY))];
            c.quit.generic = vec![url(CLOUDSQL_QUIT)];
        }),
        ("istio,cloudsql", |c| {
            c.ready.checks = vec![
                Check::Url(url(ISTIO_READY)),
                Check::Url(url(CLOUDSQL_READY)),
            ];
            c.quit.istio_quit = Some(url(ISTIO_QUIT));
            c.quit.generic = vec![url(CLOUDSQL_QUIT)];
            c.quit.envoy_configured = true;
        }),
        ("dapr", |c| {
            c.ready.checks = vec![Check::Url(url(
                "http://127.0.0.1:3500/v1.0/healthz/outbound",
            ))];
            c.quit.generic = vec![url("http://127.0.0.1:3500/v1.0/shutdown")];
        }),
        ("vault", |c| {
            c.quit.generic = vec![url("http://127.0.0.1:8200/agent/v1/quit")];
        }),
        ("ISTIO", |c| {
            c.ready.checks = vec![Check::Url(url(ISTIO_READY))];
            c.quit.istio_quit = Some(url(ISTIO_QUIT));
            c.quit.envoy_configured = true;
        }),
    ];
    for (names, effect) in cases {
        let mut expected = defaults();
        effect(&mut expected);
        let option = config(&format!("--mesh {names}"), &[]);
        assert_eq!(option, expected, "--mesh {names}");
        assert_eq!(config("", &[("TANDEM_MESH", names)]), expected, "{names}");
        let spaced = names.replace(',', " , ");
        let c = config("", &[("TANDEM_MESH", &spaced)]);
        assert_eq!(c, expected, "TANDEM_MESH={spaced:?}");
        let repeated = names.replace(',', " --mesh ");
        let c = config(&format!("--mesh {repeated}"), &[]);
        assert_eq!(c, expected, "--mesh {repeated}");
    }
}

#[test]
fn dapr_http_port_moves_both_dapr_urls() {
    let c = config("--mesh dapr", &[("DAPR_HTTP_PORT", " 3600 ")]);
    assert_eq!(
        c.ready.checks,
        [Check::Url(url(
            "http://127.0.0.1:3600/v1.0/healthz/outbound"
        ))]
    );
    assert_eq!(c.quit.generic, [url("http://127.0.0.1:3600/v1.0/shutdown")]);
}

#[test]
fn explicit_settings_override_the_presets() {
    let c = config("--mesh istio", &[("ISTIO_QUIT_API", "http://localhost:1")]);
    assert_eq!(c.quit.istio_quit, Some(url("http://localhost:1")));

    let c = config("--mesh istio --istio-quit http://localhost:2", &[]);
    assert_eq!(c.quit.istio_quit, Some(url("http://localhost:2")));

    let c = config("--mesh envoy", &[("ENVOY_ADMIN_API", "http://127.0.0.1:1")]);
    assert_eq!(c.quit.admin, Some(url("http://127.0.0.1:1")));
    assert_eq!(
        c.ready.checks,
        vec![Check::Envoy(url("http://127.0.0.1:1"))]
    );

    let c = config("--mesh envoy --admin http://127.0.0.1:2", &[]);
    assert_eq!(c.quit.admin, Some(url("http://127.0.0.1:2")));
    assert_eq!(
        c.ready.checks,
        vec![Check::Envoy(url("http://127.0.0.1:2"))]
    );

    let c = config(
        "--mesh envoy",
        &[("ENVOY_KILL_API", "http://127.0.0.1:3/k")],
    );
    assert_eq!(c.quit.envoy_quit, Some(url("http://127.0.0.1:3/k")));
    assert_eq!(c.quit.admin, Some(url(ENVOY_ADMIN)));
}

#[test]
fn istio_preset_with_an_admin_url_adds_the_envoy_check() {
    let c = config("--mesh istio", &[("ENVOY_ADMIN_API", ADMIN)]);
    assert_eq!(
        c.ready.checks,
        vec![Check::Envoy(url(ADMIN)), Check::Url(url(ISTIO_READY))]
    );
    assert_eq!(c.quit.admin, Some(url(ADMIN)));
    assert_eq!(c.quit.istio_quit, Some(url(ISTIO_QUIT)));
    assert!(c.quit.envoy_configured);
}

#[test]
fn envoy_configured_needs_an_admin_url_or_an_istio_or_envoy_preset() {
    let cases: &[(&str, Env, bool)] = &[
        ("", &[], false),
        ("--admin http://127.0.0.1:15000", &[], true),
        ("", &[("ENVOY_ADMIN_API", "http://10.0.0.1:15000")], true),
        ("--mesh istio", &[], true),
        ("--mesh envoy", &[], true),
        ("--mesh linkerd", &[], false),
        ("--mesh cloudsql", &[], false),
        ("--mesh linkerd,cloudsql", &[], false),
        ("--mesh cloudsql,istio", &[], true),
        ("", &[("ISTIO_QUIT_API", ISTIO_QUIT)], false),
        ("", &[("ENVOY_KILL_API", "http://127.0.0.1:1/k")], false),
        ("--quit http://127.0.0.1:1/q", &[], false),
    ];
    for (args, env, expected) in cases {
        assert_eq!(
            config(args, env).quit.envoy_configured,
            *expected,
            "{args} {env:?}"
        );
    }
}

#[test]
fn forward_to_is_child_or_group() {
    let cases: &[(&str, Env, ForwardTo)] = &[
        ("", &[], ForwardTo::Child),
        ("", &[("TANDEM_FORWARD_TO", "child")], ForwardTo::Child),
        ("", &[("TANDEM_FORWARD_TO", "group")], ForwardTo::Group),
        ("", &[("TANDEM_FORWARD_TO", "GROUP")], ForwardTo::Group),
        ("--forward-to group", &[], ForwardTo::Group),
        ("--forward-to child", &[], ForwardTo::Child),
    ];
    for (args, env, expected) in cases {
        assert_eq!(config(args, env).forward_to, *expected, "{args} {env:?}");
    }
}

#[cfg(not(feature = "rustls"))]
#[test]
fn https_url_is_an_error_without_tls() {
    let https = "https://127.0.0.1:15000";
    let cases: &[(&str, Env, &str)] = &[
        ("", &[("ENVOY_ADMIN_API", https)], "ENVOY_ADMIN_API"),
        ("--admin https://127.0.0.1:15000", &[], "--admin"),
        ("", &[("ISTIO_QUIT_API", https)], "ISTIO_QUIT_API"),
        ("", &[("ENVOY_KILL_API", https)], "ENVOY_KILL_API"),
        ("--quit https://127.0.0.1:15000", &[], "--quit"),
        ("", &[("TANDEM_READY_URLS", https)], "TANDEM_READY_URLS"),
    ];
    for (args, env, name) in cases {
        let msg = usage_error(args, env);
        assert!(msg.contains(name) && msg.contains(https), "{msg}");
        assert!(msg.contains("rustls"), "{msg}");
    }
}

#[test]
fn every_bad_value_is_a_usage_error_naming_the_setting_and_the_value() {
    let cases: &[(&str, &str)] = &[
        ("WAIT_FOR_ENVOY_TIMEOUT", "5x"),
        ("WAIT_FOR_ENVOY_TIMEOUT", "-1s"),
        ("QUIT_WITHOUT_ENVOY_TIMEOUT", "10"),
        ("QUIT_REQUEST_TIMEOUT", "soon"),
        ("TANDEM_POLL_MAX", "1.5"),
        ("START_WITHOUT_ENVOY", "maybe"),
        ("GENERIC_QUIT_ONLY", "on"),
        ("NEVER_KILL_ISTIO", "2"),
        ("NEVER_KILL_ENVOY", "nope"),
        ("NEVER_KILL_ISTIO_ON_FAILURE", "y"),
        ("ALWAYS_KILL_ENVOY", "always"),
        ("ENVOY_ADMIN_API", "ftp://127.0.0.1:15000"),
        ("ENVOY_ADMIN_API", "127.0.0.1:15000"),
        ("ENVOY_ADMIN_API", "http://"),
        ("ENVOY_ADMIN_API", "http://:15000"),
        ("ENVOY_ADMIN_API", "http://127.0.0.1:0"),
        ("ENVOY_ADMIN_API", "http://127.0.0.1:65536"),
        ("ISTIO_QUIT_API", "http://127.0.0.1:port"),
        ("ENVOY_KILL_API", "tcp://127.0.0.1:1"),
        ("GENERIC_QUIT_ENDPOINTS", "ftp://127.0.0.1:1"),
        ("TANDEM_READY_URLS", "http://127.0.0.1:0/ready"),
        ("TANDEM_MESH", "consul"),
        ("TANDEM_LOG", "loud"),
        ("ENVOY_PREFLIGHT_LOGGING", "verbose"),
        ("SCUTTLE_LOGGING", "2"),
        ("TANDEM_LOG_FORMAT", "xml"),
        ("TANDEM_FORWARD_TO", "parent"),
    ];
    for (name, value) in cases {
        let msg = usage_error("", &[(name, value)]);
        let head = format!("invalid {name} {value:?}: expected ");
        assert!(msg.starts_with(&head), "{name}={value:?}: {msg}");
    }

    let options: &[(&str, &str)] = &[
        ("--wait-timeout", "5x"),
        ("--fail-timeout", "-2s"),
        ("--quit-timeout", "1d"),
        ("--poll-max", "fast"),
        ("--admin", "ftp://127.0.0.1:15000"),
        ("--admin", "http://127.0.0.1:65536"),
        ("--istio-quit", "http://127.0.0.1:0"),
        ("--envoy-quit", "localhost:9901/quitquitquit"),
        ("--quit", "ws://127.0.0.1:1"),
        ("--ready", "http:///ready"),
        ("--mesh", "consul"),
        ("--log", "loud"),
        ("--log-format", "xml"),
        ("--forward-to", "parent"),
    ];
    for (option, value) in options {
        let msg = usage_error(&format!("{option} {value}"), &[]);
        let head = format!("invalid {option} {value:?}: expected ");
        assert!(msg.starts_with(&head), "{option} {value:?}: {msg}");
    }
}

#[test]
fn bad_item_in_a_list_is_named_with_its_setting() {
    let cases: &[(&str, Env, &str, &str)] = &[
        (
            "",
            &[("GENERIC_QUIT_ENDPOINTS", "http://127.0.0.1:1/a, ftp://b")],
            "GENERIC_QUIT_ENDPOINTS",
            "ftp://b",
        ),
        (
            "--quit http://127.0.0.1:1/a,http://b:0",
            &[],
            "--quit",
            "http://b:0",
        ),
        (
            "",
            &[("TANDEM_MESH", "istio,consul")],
            "TANDEM_MESH",
            "consul",
        ),
        ("--mesh istio --mesh kuma", &[], "--mesh", "kuma"),
    ];
    for (args, env, name, value) in cases {
        let msg = usage_error(args, env);
        assert!(
            msg.starts_with(&format!("invalid {name} {value:?}: expected ")),
            "{args} {env:?}: {msg}"
        );
    }
}

#[test]
fn non_utf8_variable_is_a_usage_error_naming_it() {
    use std::os::unix::ffi::OsStringExt;
    let cli = crate::cli::parse(Vec::<OsString>::new()).unwrap();
    let env = |name: &str| {
        (name == "ENVOY_ADMIN_API").then(|| OsString::from_vec(b"http://\xff".to_vec()))
    };
    match build(&cli, &env) {
        Err(Error::Usage(msg)) => assert!(msg.contains("ENVOY_ADMIN_API"), "{msg}"),
        other => panic!("expected a usage error, got {other:?}"),
    }
}

/// A small deterministic generator (xorshift), so the property tests below need
/// no crate and fail the same way every time.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[(self.next() % from.len() as u64) as usize]
    }

    /// Up to 12 pieces of URL, duration, list and multibyte text.
    fn text(&mut self) -> String {
        const PIECES: &[&str] = &[
            "http://",
            "https://",
            "ftp://",
            "127.0.0.1",
            "[::1]",
            "[",
            "]",
            "localhost",
            ":",
            "0",
            "1",
            "65535",
            "65536",
            "@",
            "user:pw@",
            "/",
            "?",
            "#",
            ",",
            " ",
            "%",
            "s",
            "ms",
            "µs",
            "h",
            ".",
            "-",
            "+",
            "true",
            "no",
            "istio",
            "linkerd",
            "é",
            "\u{0}",
            "\n",
            "group",
            "json",
        ];
        let n = self.next() % 13;
        (0..n).map(|_| self.pick(PIECES)).collect()
    }
}

#[test]
fn no_input_makes_the_configuration_panic() {
    let mut noise = Noise(0x9e37_79b9_7f4a_7c15);
    let names = all_variables();
    let options: Vec<&str> = options::OPTIONS
        .iter()
        .map(|spec| spec.name)
        .filter(|name| !["--help", "--version"].contains(name))
        .chain(["--bogus", "--"])
        .collect();
    for _ in 0..20_000 {
        let mut vars = HashMap::new();
        for _ in 0..noise.next() % 4 {
            vars.insert(noise.pick(&names).to_string(), noise.text());
        }
        let mut args: Vec<String> = Vec::new();
        for _ in 0..noise.next() % 3 {
            args.push(noise.pick(&options).to_string());
            args.push(noise.text());
        }
        args.push("true".into());
        let env = |name: &str| vars.get(name).map(OsString::from);
        if let Ok(cli) = crate::cli::parse(args.iter().map(OsString::from)) {
            let _ = build(&cli, &env);
            let _ = log_format_hint(&cli, &env);
        }
    }
}

#[test]
fn no_text_makes_url_handling_panic() {
    let mut noise = Noise(0x2545_f491_4f6c_dd1d);
    for _ in 0..50_000 {
        let text = noise.text();
        let _ = url::redact(&text);
        if let Ok(url) = HttpUrl::parse(&text) {
            let _ = (url.is_local(), url.join("/ready"), url.with_port(15020));
            let redacted = url.redacted();
            let rest = redacted.split_once("://").map_or("", |(_, rest)| rest);
            let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
            assert!(!authority.contains('@'), "{text:?} -> {redacted:?}");
        }
    }
}

/// The three settings of several job containers (SPEC §9), as variables.
const JOBS: Env = &[
    ("TANDEM_JOB_CONTAINERS", "migrate, report"),
    ("TANDEM_CONTAINER_NAME", "report"),
    ("TANDEM_SHARED_DIR", "/tandem-shared"),
];

#[test]
fn job_containers_come_from_the_three_variables_or_options() {
    let expected = JobContainers {
        all: vec!["migrate".into(), "report".into()],
        me: "report".into(),
        me_from: "TANDEM_CONTAINER_NAME",
        dir: "/tandem-shared".into(),
        dir_from: "TANDEM_SHARED_DIR",
    };
    assert_eq!(config("", JOBS).quit.job_containers, Some(expected));
    let from_options = config(
        "--job-containers migrate --job-containers report --container-name report \
         --shared-dir /tandem-shared",
        &[],
    );
    let jobs = from_options.quit.job_containers.expect("set by options");
    assert_eq!(
        (jobs.me_from, jobs.dir_from),
        ("--container-name", "--shared-dir")
    );
    assert_eq!(jobs.all, ["migrate", "report"]);
    // An option replaces its variable, list and all.
    let mixed = config("--job-containers a,b --container-name b", JOBS);
    let jobs = mixed.quit.job_containers.expect("set");
    assert_eq!(
        (jobs.all, jobs.me),
        (vec!["a".into(), "b".into()], "b".into())
    );
    assert_eq!(config("", &[]).quit.job_containers, None);
}

#[test]
fn job_containers_need_all_three_settings_and_valid_names() {
    let cases: &[(&str, Env, &str, &str)] = &[
        (
            "",
            &[("TANDEM_JOB_CONTAINERS", "a,b")],
            "invalid TANDEM_JOB_CONTAINERS \"a,b\": expected TANDEM_CONTAINER_NAME",
            "TANDEM_SHARED_DIR (--shared-dir) too",
        ),
        (
            "--shared-dir /x",
            &[],
            "invalid --shared-dir \"/x\": expected TANDEM_JOB_CONTAINERS",
            "TANDEM_CONTAINER_NAME (--container-name) too",
        ),
        (
            "",
            &[("TANDEM_CONTAINER_NAME", "a"), ("TANDEM_SHARED_DIR", "/x")],
            "invalid TANDEM_CONTAINER_NAME \"a\": expected TANDEM_JOB_CONTAINERS",
            "all three",
        ),
        (
            "--container-name c",
            &[
                ("TANDEM_JOB_CONTAINERS", "a,b"),
                ("TANDEM_SHARED_DIR", "/x"),
            ],
            "invalid --container-name \"c\": expected one of the names in TANDEM_JOB_CONTAINERS",
            "(a,b)",
        ),
        (
            "",
            &[
                ("TANDEM_JOB_CONTAINERS", "a,Report"),
                ("TANDEM_CONTAINER_NAME", "a"),
                ("TANDEM_SHARED_DIR", "/x"),
            ],
            "invalid TANDEM_JOB_CONTAINERS \"Report\": expected container names",
            "lowercase",
        ),
        (
            "--container-name a_b --job-containers a_b --shared-dir /x",
            &[],
            "invalid --job-containers \"a_b\": expected container names",
            "63 characters",
        ),
        (
            "",
            &[
                ("TANDEM_JOB_CONTAINERS", "a,b,a"),
                ("TANDEM_CONTAINER_NAME", "a"),
                ("TANDEM_SHARED_DIR", "/x"),
            ],
            "invalid TANDEM_JOB_CONTAINERS \"a,b,a\": expected each job container once",
            "a is listed twice",
        ),
    ];
    for (args, env, head, detail) in cases {
        let msg = usage_error(args, env);
        assert!(msg.starts_with(head), "{args} {env:?}: {msg}");
        assert!(msg.contains(detail), "{args} {env:?}: {msg}");
    }
}
