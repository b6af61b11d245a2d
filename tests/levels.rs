//! Which lines show at which level (SPEC §8): silence without sidecars, a failed
//! quit as an error, warnings that quote their value, ureq's records at debug.

use crate::support::{Script, closed_port, run, start, tandem, tandem_at};
use std::time::Duration;

/// Kill timeout of every run.
const RUN_TIMEOUT: Duration = Duration::from_secs(20);

#[test]
fn no_sidecar_and_nothing_wrong_writes_nothing_at_the_default_level() {
    for app in [["sh", "-c", "exit 0"], ["sh", "-c", "exit 7"]] {
        let out = run(tandem().args(app), RUN_TIMEOUT);
        assert!(out.stderr.is_empty(), "{}", out.dump());
    }
    // At debug the end of the app is still there to see.
    let out = run(tandem().env("TANDEM_LOG", "debug").arg("true"), RUN_TIMEOUT);
    assert!(
        out.stderr.contains("the app exited with 0"),
        "{}",
        out.dump()
    );
}

#[test]
fn a_failed_quit_is_an_error_that_shows_at_tandem_log_error() {
    let closed = format!("http://127.0.0.1:{}/quit", closed_port());
    let out = run(
        tandem()
            .env("TANDEM_LOG", "error")
            .env("GENERIC_QUIT_ENDPOINTS", &closed)
            .arg("true"),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{}", out.dump());
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "only the error\n{}", out.dump());
    assert!(
        lines[0].contains(" tandem: error: quit POST") && lines[0].contains("refused"),
        "{}",
        out.dump()
    );
    let out = run(
        tandem()
            .env("TANDEM_LOG", "off")
            .env("GENERIC_QUIT_ENDPOINTS", &closed)
            .arg("true"),
        RUN_TIMEOUT,
    );
    assert!(out.stderr.is_empty(), "{}", out.dump());
}

#[test]
fn an_abandoned_wait_quotes_the_timeout_it_waited() {
    let envoy = start(Script::envoy().never_ready());
    let out = run(
        tandem_at(&envoy)
            .env("WAIT_FOR_ENVOY_TIMEOUT", "300ms")
            .env("TANDEM_LOG", "warn")
            .arg("true"),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(
        out.stderr
            .contains("warning: sidecars not ready within 300ms (--wait-timeout"),
        "{}",
        out.dump()
    );
    let out = run(
        tandem_at(&envoy)
            .args(["--fail-timeout", "1.5s", "true"])
            .env("TANDEM_LOG", "error"),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(69), "{}", out.dump());
    assert!(
        out.stderr
            .contains("error: sidecars not ready within 1.5s (--fail-timeout"),
        "{}",
        out.dump()
    );
}

#[test]
fn ureq_records_reach_the_log_at_debug_only() {
    let envoy = start(Script::envoy());
    let out = run(
        tandem_at(&envoy).env("TANDEM_LOG", "debug").arg("true"),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(
        out.stderr.lines().any(|l| l.contains(" tandem: ureq")),
        "no ureq record\n{}",
        out.dump()
    );
    let out = run(tandem_at(&envoy).arg("true"), RUN_TIMEOUT);
    assert!(!out.stderr.contains(" tandem: ureq"), "{}", out.dump());
}

#[test]
fn ureq_records_in_json_are_debug_objects_with_their_target() {
    let envoy = start(Script::envoy());
    let out = run(
        tandem_at(&envoy).args(["--log", "debug", "--log-format", "json", "true"]),
        RUN_TIMEOUT,
    );
    assert!(
        out.stderr
            .lines()
            .any(|l| l.contains("\"level\":\"debug\"") && l.contains("\"target\":\"ureq")),
        "{}",
        out.dump()
    );
}
