//! Variables of scuttle (and its forks), envoy-preflight (and its forks) and
//! linkerd-await that no option names (SPEC §2): each is honoured, or accepted
//! with one warning that it has no effect; a bad value is an error (64).

use crate::support::{Script, run, start, tandem, tandem_at};
use std::time::Duration;

/// Kill timeout of every run.
const RUN_TIMEOUT: Duration = Duration::from_secs(20);

/// Valid and invalid values of each variable tandem accepts without acting on it.
const NO_EFFECT: &[(&str, &str, Option<&str>)] = &[
    ("SCUTTLE_IGNORE_SIGURG", "true", Some("sometimes")),
    ("BYPASS_SIGURG", "false", Some("2")),
    ("SCUTTLE_SLEEP_1", "5", Some("5s")),
    ("SCUTTLE_SLEEP_2", "0", Some("-1")),
    ("SCUTTLE_SLEEP_AFTER_SIGNAL", "10", Some("ten")),
    ("SEND_METRICS_ON_EXIT", "true", Some("please")),
    ("GET_METRICS_API", "http://127.0.0.1:15000/stats", None),
    (
        "PUSH_METRICS_API",
        "http://pushgateway:9091/metrics/job/x",
        None,
    ),
    ("USE_ISTIO_CONFIG", "true", Some("istio")),
    ("PKILL_PILOT", "true", Some("maybe")),
    ("ENVOY_ISTIO_SDS_WARMING_PROTECTION", "true", Some("on")),
    ("LINKERD_AWAIT_VERBOSE", "true", None),
];

#[test]
fn each_variable_without_effect_is_accepted_with_one_warning_naming_it() {
    for (var, good, _) in NO_EFFECT {
        let out = run(
            tandem().env(var, good).args(["sh", "-c", "exit 6"]),
            RUN_TIMEOUT,
        );
        assert_eq!(out.code, Some(6), "{var}\n{}", out.dump());
        let warnings: Vec<&str> = out
            .stderr
            .lines()
            .filter(|l| l.contains(" tandem: warning: "))
            .collect();
        assert_eq!(warnings.len(), 1, "{var}\n{}", out.dump());
        assert!(
            warnings[0].contains(&format!("{var}={good:?} has no effect")),
            "{var}\n{}",
            out.dump()
        );
    }
}

#[test]
fn each_variable_without_effect_rejects_a_bad_value_with_64() {
    for (var, _, bad) in NO_EFFECT {
        let Some(bad) = bad else { continue };
        let out = run(tandem().env(var, bad).arg("true"), RUN_TIMEOUT);
        assert_eq!(out.code, Some(64), "{var}={bad}\n{}", out.dump());
        assert!(
            out.stderr.contains(&format!("invalid {var} {bad:?}")),
            "{}",
            out.dump()
        );
    }
}

#[test]
fn linkerd_await_disabled_waits_for_nothing_stops_nothing_and_keeps_the_status() {
    for var in ["LINKERD_AWAIT_DISABLED", "LINKERD_DISABLED"] {
        for value in ["1", "true", "anything"] {
            let envoy = start(Script::envoy().never_ready());
            let generic = start(Script::generic());
            let out = run(
                tandem_at(&envoy)
                    .env(var, value)
                    .env("GENERIC_QUIT_ENDPOINTS", generic.url())
                    .args(["--mesh", "linkerd", "sh", "-c", "exit 9"]),
                RUN_TIMEOUT,
            );
            let dump = out.dump_with(&[&envoy, &generic]);
            assert_eq!(out.code, Some(9), "{var}={value}\n{dump}");
            assert!(envoy.requests().is_empty(), "{var}={value}\n{dump}");
            assert!(generic.requests().is_empty(), "{var}={value}\n{dump}");
        }
    }
    // Empty means unset, as for every variable.
    let envoy = start(Script::envoy());
    let out = run(
        tandem_at(&envoy)
            .env("LINKERD_AWAIT_DISABLED", "")
            .arg("true"),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(envoy.quit_requests(), 1, "{}", out.dump_with(&[&envoy]));
}

#[test]
fn generic_ready_endpoints_are_waited_for_beside_tandem_ready_urls() {
    let a = start(Script::generic().ready_after(Duration::from_millis(200)));
    let b = start(Script::generic().ready_after(Duration::from_millis(400)));
    let c = start(Script::generic());
    let out = run(
        tandem()
            .env("TANDEM_READY_URLS", format!("{}/a", a.url()))
            .env(
                "GENERIC_READY_ENDPOINTS",
                format!("{}/b , {}/c", b.url(), c.url()),
            )
            .arg("true"),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[&a, &b, &c]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert!(a.count("GET", "/a") >= 2, "{dump}");
    assert!(b.count("GET", "/b") >= 2, "{dump}");
    assert_eq!(c.count("GET", "/c"), 1, "{dump}");
    // --ready replaces TANDEM_READY_URLS, but the scuttle list still joins it.
    let out = run(
        tandem()
            .env("TANDEM_READY_URLS", "http://127.0.0.1:1/never")
            .env("GENERIC_READY_ENDPOINTS", format!("{}/c", c.url()))
            .args(["--ready", &format!("{}/a", a.url()), "true"]),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(c.count("GET", "/c"), 2, "{}", out.dump_with(&[&c]));
}

#[test]
fn bad_values_of_honoured_compat_variables_are_usage_errors() {
    for (var, bad) in [
        ("GENERIC_READY_ENDPOINTS", "127.0.0.1:1/ready"),
        ("ISTIO_FALLBACK_PKILL", "sometimes"),
        ("ALWAYS_KILL_ENVOY", "always"),
    ] {
        let out = run(tandem().env(var, bad).arg("true"), RUN_TIMEOUT);
        assert_eq!(out.code, Some(64), "{var}={bad}\n{}", out.dump());
        assert!(out.stderr.contains(var), "{}", out.dump());
    }
}

#[test]
fn an_unknown_tandem_variable_gets_one_warning_with_the_name_it_probably_meant() {
    let envoy = start(Script::envoy());
    let out = run(
        tandem_at(&envoy)
            .env("TANDEM_MESHH", "istio")
            .args(["sh", "-c", "exit 5"]),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(5), "the run goes on\n{}", out.dump());
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains(" tandem: warning: "))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", out.dump());
    assert!(
        warnings[0].ends_with(
            "warning: unknown variable TANDEM_MESHH has no effect: did you mean TANDEM_MESH?"
        ),
        "{}",
        out.dump()
    );
}

#[test]
fn tandem_variables_that_are_known_never_warn() {
    let shared = crate::support::temp_dir("known-vars");
    let out = run(
        tandem()
            .env("TANDEM_LOG", "info")
            .env("TANDEM_LOG_FORMAT", "text")
            .env("TANDEM_READY_URLS", "")
            .env("TANDEM_MESH", "")
            .env("TANDEM_POLL_MAX", "50ms")
            .env("TANDEM_FORWARD_TO", "child")
            .env("TANDEM_TERMINATION_LOG", "off")
            .env("TANDEM_JOB_CONTAINERS", "only")
            .env("TANDEM_CONTAINER_NAME", "only")
            .env("TANDEM_SHARED_DIR", &shared)
            // Set around tandem: the test harness, tandem-injector's own settings.
            .env("TANDEM_TEST_ENVOY", "/envoy")
            .env("TANDEM_INJECTOR_IMAGE", "example/tandem:1")
            .args(["sh", "-c", "exit 0"]),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(!out.stderr.contains("warning"), "{}", out.dump());
}
