//! Restart in place (SPEC §5 "Restart in place", §2 `--keep-on-exit`): when the
//! status tandem exits with is one the kubelet runs the container again on,
//! nothing is stopped and one info line says why; any other status stops the
//! sidecars as before. Whatever gives the status: the app's code, a signal's
//! 128 + N, tandem's own 127 or 69.

use super::{Env, envoy_and_generic, run_with_policy};
use crate::support::{RUN_TIMEOUT, Script, no_real_pilot_agent, run, tandem, temp_dir};

/// The info line of a kept status.
fn kept_line(status: u8, set: &str) -> String {
    format!(
        "the kubelet restarts this container on exit {status} (--keep-on-exit {set}): keeping the sidecars"
    )
}

/// Runs an app that exits `code` with `env` and `args`; asserts tandem exits with
/// it, each sidecar got `quits` quit requests (0 or 1), and tandem said it keeps
/// them, with `line` when given, exactly when it sent none.
fn assert_quits(code: i32, env: Env, args: &[&str], quits: usize, line: Option<&str>) {
    let run = run_with_policy(code, env, args);
    let case = format!("exit {code} {env:?} {args:?}\n{}", run.dump);
    assert_eq!(run.out.code, Some(code), "{case}");
    let sent = (run.admin_quits(), run.generic_quits());
    assert_eq!(sent, (quits, quits), "{case}");
    let said = run
        .out
        .stderr
        .contains(line.unwrap_or(": keeping the sidecars"));
    assert_eq!(said, quits == 0, "{case}");
}

#[test]
fn a_status_in_the_set_stops_nothing_and_says_why() {
    let variants: [(Env, &[&str], &str); 3] = [
        (&[("TANDEM_KEEP_ON_EXIT", "3")], &[], "3"),
        (&[], &["--keep-on-exit", "3"], "3"),
        (
            &[("TANDEM_KEEP_ON_EXIT", "0")],
            &["--keep-on-exit", "5,1-4,42"],
            "1-5,42",
        ),
    ];
    for (env, args, set) in variants {
        assert_quits(3, env, args, 0, Some(&kept_line(3, set)));
    }
}

#[test]
fn a_status_outside_the_set_stops_the_sidecars_as_before() {
    if !no_real_pilot_agent() {
        return;
    }
    for code in [0, 4, 255] {
        for set in ["3,42-43", ""] {
            assert_quits(code, &[("TANDEM_KEEP_ON_EXIT", set)], &[], 1, None);
        }
    }
}

#[test]
fn never_kill_istio_on_failure_is_the_set_1_to_255() {
    if !no_real_pilot_agent() {
        return;
    }
    for (code, quits) in [(0, 1), (1, 0), (255, 0)] {
        let line = kept_line(code as u8, "1-255");
        for env in [
            &[("NEVER_KILL_ISTIO_ON_FAILURE", "true")][..],
            &[("TANDEM_KEEP_ON_EXIT", "1-255")],
        ] {
            assert_quits(code, env, &[], quits, Some(&line));
        }
    }
}

#[test]
fn a_signal_status_is_128_plus_n_and_kept_when_in_the_set() {
    if !no_real_pilot_agent() {
        return;
    }
    for (set, quits) in [("143", 0), ("1-142,144-255", 1)] {
        let (mut cmd, envoy, generic) = envoy_and_generic(Script::envoy());
        cmd.env("TANDEM_KEEP_ON_EXIT", set)
            .args(["sh", "-c", "kill -TERM $$"]);
        let out = run(&mut cmd, RUN_TIMEOUT);
        let dump = out.dump_with(&[&envoy, &generic]);
        assert_eq!(out.code, Some(143), "{set}\n{dump}");
        assert_eq!(envoy.quit_requests(), quits, "{set}\n{dump}");
        assert_eq!(generic.requests().len(), quits, "{set}\n{dump}");
        assert_eq!(
            out.stderr.contains(&kept_line(143, set)),
            quits == 0,
            "{set}\n{dump}"
        );
    }
}

#[test]
fn tandems_own_statuses_are_kept_too() {
    // 127: the command is not there; 69: the sidecar was never ready.
    let (mut cmd, envoy, generic) = envoy_and_generic(Script::envoy());
    cmd.env("TANDEM_KEEP_ON_EXIT", "127")
        .arg(temp_dir("keep-127").join("no-such-app"));
    let out = run(&mut cmd, RUN_TIMEOUT);
    let dump = out.dump_with(&[&envoy, &generic]);
    assert_eq!(out.code, Some(127), "{dump}");
    assert_eq!(
        (envoy.quit_requests(), generic.requests().len()),
        (0, 0),
        "{dump}"
    );
    assert!(out.stderr.contains(&kept_line(127, "127")), "{dump}");

    let (mut cmd, envoy, generic) = envoy_and_generic(Script::envoy().never_ready());
    cmd.args(["--keep-on-exit", "69", "--fail-timeout", "200ms", "true"]);
    let out = run(&mut cmd, RUN_TIMEOUT);
    let dump = out.dump_with(&[&envoy, &generic]);
    assert_eq!(out.code, Some(69), "{dump}");
    assert_eq!(envoy.quit_requests(), 0, "{dump}");
    assert_eq!(generic.requests().len(), 0, "{dump}");
    assert!(out.stderr.contains(&kept_line(69, "69")), "{dump}");
}

#[test]
fn on_exit_still_runs_on_a_kept_status() {
    let marker = temp_dir("keep-on-exit-hook").join("hook");
    let hook = format!("sh -c 'echo $TANDEM_EXIT_CODE > {}'", marker.display());
    let run = run_with_policy(3, &[("TANDEM_KEEP_ON_EXIT", "3")], &["--on-exit", &hook]);
    assert_eq!(run.out.code, Some(3), "{}", run.dump);
    assert_eq!(
        (run.admin_quits(), run.generic_quits()),
        (0, 0),
        "{}",
        run.dump
    );
    let said = std::fs::read_to_string(&marker).unwrap_or_default();
    assert_eq!(
        said.trim(),
        "3",
        "the hook ran with the status\n{}",
        run.dump
    );
}

#[test]
fn without_a_sidecar_a_kept_status_says_nothing() {
    let out = run(
        tandem()
            .env("TANDEM_KEEP_ON_EXIT", "3")
            .args(["sh", "-c", "exit 3"]),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(3), "{}", out.dump());
    assert_eq!(
        out.stderr,
        "",
        "local development stays quiet\n{}",
        out.dump()
    );
}
