//! `--keep-on-exit` / `TANDEM_KEEP_ON_EXIT` (SPEC §2): option over variable,
//! `NEVER_KILL_ISTIO_ON_FAILURE` as `1-255` added to it, bad values named.

use super::*;

fn keep(args: &str, env: Env) -> String {
    config(args, env).quit.keep_on_exit.to_string()
}

#[test]
fn the_option_wins_over_the_variable_and_an_empty_variable_is_unset() {
    let cases: &[(&str, Env, &str)] = &[
        ("", &[], ""),
        ("", &[("TANDEM_KEEP_ON_EXIT", "")], ""),
        ("", &[("TANDEM_KEEP_ON_EXIT", "43,42")], "42-43"),
        ("--keep-on-exit 3", &[], "3"),
        ("--keep-on-exit 3", &[("TANDEM_KEEP_ON_EXIT", "1-255")], "3"),
        (
            "--keep-on-exit 0-255",
            &[("TANDEM_KEEP_ON_EXIT", "7")],
            "0-255",
        ),
    ];
    for (args, env, expected) in cases {
        assert_eq!(keep(args, env), *expected, "{args} {env:?}");
    }
}

#[test]
fn keep_on_failure_is_every_failure_added_to_the_set() {
    let cases: &[(&str, Env, &str)] = &[
        ("", &[("NEVER_KILL_ISTIO_ON_FAILURE", "true")], "1-255"),
        ("--keep-on-failure", &[], "1-255"),
        ("", &[("NEVER_KILL_ISTIO_ON_FAILURE", "false")], ""),
        // Both given: the statuses of either.
        ("--keep-on-failure --keep-on-exit 0", &[], "0-255"),
        (
            "",
            &[
                ("NEVER_KILL_ISTIO_ON_FAILURE", "true"),
                ("TANDEM_KEEP_ON_EXIT", "3"),
            ],
            "1-255",
        ),
        // Stopping after a failure is already the default: no status added.
        ("", &[("ALWAYS_KILL_ENVOY", "true")], ""),
    ];
    for (args, env, expected) in cases {
        assert_eq!(keep(args, env), *expected, "{args} {env:?}");
    }
}

#[test]
fn a_bad_set_names_the_setting_the_value_and_what_is_expected() {
    let cases: &[(&str, Env, &str, &str)] = &[
        (
            "",
            &[("TANDEM_KEEP_ON_EXIT", "true")],
            "TANDEM_KEEP_ON_EXIT",
            "true",
        ),
        (
            "",
            &[("TANDEM_KEEP_ON_EXIT", "256")],
            "TANDEM_KEEP_ON_EXIT",
            "256",
        ),
        (
            "",
            &[("TANDEM_KEEP_ON_EXIT", "5-2")],
            "TANDEM_KEEP_ON_EXIT",
            "5-2",
        ),
        (
            "",
            &[("TANDEM_KEEP_ON_EXIT", "1,,2")],
            "TANDEM_KEEP_ON_EXIT",
            "1,,2",
        ),
        ("--keep-on-exit -1", &[], "--keep-on-exit", "-1"),
        ("--keep-on-exit , ", &[], "--keep-on-exit", ","),
    ];
    for (args, env, name, value) in cases {
        let msg = usage_error(args, env);
        let head = format!("invalid {name} {value:?}: expected {EXPECTED} (");
        assert!(msg.starts_with(&head), "{args} {env:?}: {msg}");
    }
}
