//! The readiness kinds beside HTTP (SPEC §3) and docker-compose-wait's variables
//! (SPEC §2) in the configuration: where each check comes from, every bad value,
//! and what each `WAIT_*` variable does or warns about.

use super::*;
use crate::cli::compose_wait;

fn tcp(host: &str, port: u16) -> Check {
    Check::Tcp {
        host: host.into(),
        port,
    }
}

fn file(path: &str) -> Check {
    Check::File(path.into())
}

/// The configuration of tandem invoked as `wait` with `args` and `env`.
fn as_wait(args: &[&str], env: Env) -> Result<Config, Error> {
    let lookup = |name: &str| {
        env.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| OsString::from(v))
    };
    let cli = compose_wait::parse(args.iter().map(OsString::from), &lookup)?;
    build(&cli, &lookup)
}

#[test]
fn every_kind_mixes_with_http_and_the_presets_in_order() {
    let c = config(
        "--ready tcp://db:5432,http://127.0.0.1:1/up --ready unix:///run/a.sock \
         --ready file:///vault/secrets/db --mesh linkerd",
        &[("GENERIC_READY_ENDPOINTS", "tcp://[::1]:6379")],
    );
    assert_eq!(
        c.ready.checks,
        [
            tcp("db", 5432),
            Check::Url(url("http://127.0.0.1:1/up")),
            Check::Unix("/run/a.sock".into()),
            file("/vault/secrets/db"),
            tcp("[::1]", 6379),
            Check::Url(url(LINKERD_READY)),
        ]
    );
    let c = config(
        "",
        &[("TANDEM_READY_URLS", " file:///f , tcp://127.0.0.1:1 ")],
    );
    assert_eq!(c.ready.checks, [file("/f"), tcp("127.0.0.1", 1)]);
}

#[test]
fn every_bad_check_exits_64_naming_the_setting_with_the_fix_where_obvious() {
    let cases: &[(&str, Option<&str>)] = &[
        ("postgres:5432", Some("tcp://postgres:5432")),
        ("/vault/secrets/db", Some("file:///vault/secrets/db")),
        ("/run/dapr.sock", Some("unix:///run/dapr.sock")),
        ("file://vault/secrets/db", Some("file:///vault/secrets/db")),
        ("unix://run/x.sock", Some("unix:///run/x.sock")),
        ("localhost:4191/ready", Some("http://localhost:4191/ready")),
        ("ftp://db:21", None),
        ("redis://db:6379", None),
        ("tcp://db", None),
        ("tcp://db:", None),
        ("tcp://db:0", None),
        ("tcp://db:65536", None),
        ("tcp://:5432", None),
        ("tcp://user:hunter2@db:5432", None),
        ("unix://", None),
        ("file://", None),
        ("postgres", None),
    ];
    for (value, fix) in cases {
        for (args, env) in [
            (format!("--ready {value}"), vec![]),
            (String::new(), vec![("TANDEM_READY_URLS", *value)]),
            (String::new(), vec![("GENERIC_READY_ENDPOINTS", *value)]),
        ] {
            let name = env.first().map_or("--ready", |(name, _)| name);
            let msg = usage_error(&args, &env);
            let shown = crate::value::url::redact(value);
            assert!(
                msg.starts_with(&format!("invalid {name} {shown:?}: expected ")),
                "{name}={value}: {msg}"
            );
            assert!(!msg.contains("hunter2"), "{msg}");
            match fix {
                Some(fix) => assert!(msg.ends_with(&format!("(did you mean {fix}?)")), "{msg}"),
                None => assert!(!msg.contains("did you mean"), "{msg}"),
            }
        }
    }
}

#[test]
fn wait_hosts_and_wait_paths_add_checks_whatever_replaced_tandem_ready_urls() {
    let env: Env = &[
        ("TANDEM_READY_URLS", "tcp://never:1"),
        ("WAIT_HOSTS", "postgres:5432, mysql:3306,[::1]:27017"),
        ("WAIT_PATHS", "/run/flag, data/ready"),
    ];
    let c = config("--ready file:///a", env);
    assert_eq!(
        c.ready.checks,
        [
            file("/a"),
            tcp("postgres", 5432),
            tcp("mysql", 3306),
            tcp("[::1]", 27017),
            file("/run/flag"),
            file("data/ready"),
        ]
    );
    for bad in [
        "postgres",
        "postgres:0",
        "tcp://postgres:5432",
        "pg:5432/db",
    ] {
        let msg = usage_error("", &[("WAIT_HOSTS", &format!("ok:1,{bad}"))]);
        assert!(
            msg.starts_with(&format!("invalid WAIT_HOSTS {bad:?}: expected HOST:PORT")),
            "{msg}"
        );
    }
}

#[test]
fn wait_timeout_is_a_fail_timeout_in_seconds_below_tandems_own() {
    let fail = |env: Env| {
        let c = config("", env);
        (c.ready.fail_timeout, c.ready.fail_timeout_setting)
    };
    let own = "--fail-timeout/QUIT_WITHOUT_ENVOY_TIMEOUT";
    assert_eq!(fail(&[]), (None, own));
    assert_eq!(
        fail(&[("WAIT_TIMEOUT", "20")]),
        (Some(20 * SEC), "WAIT_TIMEOUT")
    );
    assert_eq!(
        fail(&[("WAIT_HOSTS_TIMEOUT", "7")]),
        (Some(7 * SEC), "WAIT_HOSTS_TIMEOUT")
    );
    assert_eq!(
        fail(&[("WAIT_HOSTS_TIMEOUT", "7"), ("WAIT_TIMEOUT", "9")]),
        (Some(9 * SEC), "WAIT_TIMEOUT")
    );
    assert_eq!(
        fail(&[("WAIT_TIMEOUT", "9"), ("QUIT_WITHOUT_ENVOY_TIMEOUT", "1s")]),
        (Some(SEC), own)
    );
    let msg = usage_error("", &[("WAIT_TIMEOUT", "30s")]);
    assert!(msg.ends_with("(did you mean 30?)"), "{msg}");
    // Zero is no timeout, as every timeout of tandem's.
    assert_eq!(fail(&[("WAIT_TIMEOUT", "0")]).0, None);
    let c = config("--fail-timeout 2s", &[("WAIT_TIMEOUT", "9")]);
    assert_eq!(c.ready.fail_timeout, Some(2 * SEC));
    for bad in ["30s", "-1", "1.5", "soon"] {
        for var in ["WAIT_TIMEOUT", "WAIT_HOSTS_TIMEOUT"] {
            let msg = usage_error("", &[(var, bad)]);
            assert!(
                msg.starts_with(&format!("invalid {var} {bad:?}: expected whole seconds")),
                "{msg}"
            );
        }
    }
}

#[test]
fn under_the_name_wait_the_fail_timeout_defaults_to_30_seconds() {
    let c = as_wait(&[], &[]).unwrap();
    assert_eq!(c.ready.fail_timeout, Some(30 * SEC));
    assert_eq!(
        c.ready.fail_timeout_setting,
        "WAIT_TIMEOUT, docker-compose-wait's default"
    );
    let c = as_wait(&[], &[("WAIT_TIMEOUT", "0")]).unwrap();
    assert_eq!(c.ready.fail_timeout, None);
    let c = as_wait(&["app"], &[("QUIT_WITHOUT_ENVOY_TIMEOUT", "5s")]).unwrap();
    assert_eq!(c.ready.fail_timeout, Some(5 * SEC));
    // Under tandem's name, tandem's default: no timeout.
    assert_eq!(config("app", &[]).ready.fail_timeout, None);
}

#[test]
fn wait_sleep_interval_caps_the_polls_unless_tandems_own_is_set() {
    let poll = |args: &str, env: Env| config(args, env).ready.poll_max;
    assert_eq!(poll("", &[("WAIT_SLEEP_INTERVAL", "2")]), 2 * SEC);
    assert_eq!(
        poll("", &[("WAIT_SLEEP_INTERVAL", "0")]),
        Duration::from_millis(85)
    );
    assert_eq!(
        poll(
            "",
            &[("WAIT_SLEEP_INTERVAL", "2"), ("TANDEM_POLL_MAX", "10ms")]
        ),
        Duration::from_millis(10)
    );
    assert_eq!(
        poll("--poll-max 20ms", &[("WAIT_SLEEP_INTERVAL", "2")]),
        Duration::from_millis(20)
    );
    let msg = usage_error("", &[("WAIT_SLEEP_INTERVAL", "1s")]);
    assert!(
        msg.starts_with("invalid WAIT_SLEEP_INTERVAL \"1s\""),
        "{msg}"
    );
}

#[test]
fn wait_logger_level_is_the_last_log_variable() {
    let level = |env: Env| config("", env).log_level;
    assert_eq!(level(&[("WAIT_LOGGER_LEVEL", "off")]), LevelFilter::Off);
    assert_eq!(level(&[("WAIT_LOGGER_LEVEL", "debug")]), LevelFilter::Debug);
    assert_eq!(
        level(&[("WAIT_LOGGER_LEVEL", "debug"), ("SCUTTLE_LOGGING", "false")]),
        LevelFilter::Warn
    );
    let msg = usage_error("", &[("WAIT_LOGGER_LEVEL", "loud")]);
    assert!(
        msg.starts_with("invalid WAIT_LOGGER_LEVEL \"loud\""),
        "{msg}"
    );
}

#[test]
fn docker_compose_waits_sleeps_are_accepted_with_one_warning_each() {
    for var in [
        "WAIT_BEFORE",
        "WAIT_BEFORE_HOSTS",
        "WAIT_AFTER",
        "WAIT_AFTER_HOSTS",
        "WAIT_HOST_CONNECT_TIMEOUT",
    ] {
        let c = config("", &[(var, "5")]);
        assert_eq!(c.warnings.len(), 1, "{var}: {:?}", c.warnings);
        assert!(
            c.warnings[0].starts_with(&format!("{var}=\"5\" has no effect: ")),
            "{:?}",
            c.warnings
        );
        let msg = usage_error("", &[(var, "5s")]);
        assert!(msg.starts_with(&format!("invalid {var} \"5s\"")), "{msg}");
    }
}

#[test]
fn wait_command_is_the_command_only_under_the_name_wait() {
    let env: Env = &[("WAIT_COMMAND", "/app --password=secret")];
    let c = config("true", env);
    assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    assert!(c.warnings[0].starts_with("WAIT_COMMAND has no effect: "));
    assert!(!c.warnings[0].contains("secret"), "{:?}", c.warnings);
    assert!(as_wait(&[], env).unwrap().warnings.is_empty());
}
