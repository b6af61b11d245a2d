//! Bad values (SPEC §2): each is a usage error naming its setting and the
//! value; `--forward-to`, https without TLS, non-UTF-8 variables.

use super::*;

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
