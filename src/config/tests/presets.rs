//! The endpoint lists and the presets (SPEC §2 "Lists", §6): how variables,
//! options and `--mesh` add to the lists, and which settings win.

use super::*;

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
