//! Never, generic-only and failure policies (SPEC §5.1, §2), and the quits after
//! an abandoned wait: SIGTERM while waiting, `--fail-timeout` (SPEC §3, §5).

use super::{Env, envoy_and_generic, posts, quit_lines, run_with_policy};
use crate::support::{
    FakeAdmin, Out, RUN_TIMEOUT, SIGTERM, Script, app_touching, no_real_pilot_agent, run, spawn,
    start, tandem_at, temp_dir,
};
use std::path::PathBuf;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------
// Never, generic-only and failure policies (SPEC §5.1, §2)
// ---------------------------------------------------------------------------

/// Runs [`run_with_policy`] (exit 0) with `env` and `args`; asserts the admin
/// gets no quit, the generic endpoint gets one, and the log says why.
fn assert_admin_kept_generic_sent(env: Env, args: &[&str]) {
    let run = run_with_policy(0, env, args);
    let (out, dump) = (&run.out, &run.dump);
    let case = format!("{env:?} {args:?}");
    assert_eq!(out.code, Some(0), "{case}\n{dump}");
    assert_eq!(run.admin_quits(), 0, "{case}: admin kept\n{dump}");
    assert_eq!(
        posts(&run.generic, "/quit"),
        1,
        "{case}: generic sent\n{dump}"
    );
    assert!(
        out.stderr.contains("leaving Istio/Envoy running"),
        "{case}: the log says why\n{dump}"
    );
}

#[test]
fn never_kill_istio_true_leaves_the_admin_alone() {
    assert_admin_kept_generic_sent(&[("NEVER_KILL_ISTIO", "true")], &[]);
}

#[test]
fn never_kill_envoy_true_leaves_the_admin_alone() {
    assert_admin_kept_generic_sent(&[("NEVER_KILL_ENVOY", "TRUE")], &[]);
}

#[test]
fn never_quit_option_leaves_the_admin_alone() {
    assert_admin_kept_generic_sent(&[], &["--never-quit"]);
}

#[test]
fn generic_quit_only_posts_only_the_generic_endpoints() {
    assert_admin_kept_generic_sent(&[("GENERIC_QUIT_ONLY", "true")], &[]);
}

#[test]
fn generic_quit_only_option_posts_only_the_generic_endpoints() {
    assert_admin_kept_generic_sent(&[], &["--generic-quit-only"]);
}

#[test]
fn generic_quit_only_leaves_istio_quit_api_alone() {
    let envoy = start(Script::envoy());
    let pilot = start(Script::pilot_agent());
    let generic = start(Script::generic());
    let out = run(
        tandem_at(&envoy)
            .env("ISTIO_QUIT_API", pilot.url())
            .env("GENERIC_QUIT_ENDPOINTS", format!("{}/quit", generic.url()))
            .env("GENERIC_QUIT_ONLY", "yes")
            .arg("true"),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[&envoy, &pilot, &generic]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert_eq!(pilot.quit_requests(), 0, "{dump}");
    assert_eq!(envoy.quit_requests(), 0, "{dump}");
    assert_eq!(posts(&generic, "/quit"), 1, "{dump}");
}

#[test]
fn keep_on_failure_after_a_failed_app_stops_nothing_not_even_generic() {
    // The variable and the option.
    let variants: [(Env, &[&str]); 2] = [
        (&[("NEVER_KILL_ISTIO_ON_FAILURE", "true")], &[]),
        (&[], &["--keep-on-failure"]),
    ];
    for (env, args) in variants {
        let run = run_with_policy(1, env, args);
        let (out, dump) = (&run.out, &run.dump);
        assert_eq!(out.code, Some(1), "{env:?} {args:?}\n{dump}");
        assert_eq!(run.admin_quits(), 0, "{env:?} {args:?}: admin kept\n{dump}");
        assert_eq!(
            run.generic_quits(),
            0,
            "{env:?} {args:?}: generic kept too\n{dump}"
        );
        assert!(quit_lines(out).is_empty(), "{env:?} {args:?}\n{dump}");
    }
}

#[test]
fn keep_on_failure_after_success_sends_every_quit() {
    if !no_real_pilot_agent() {
        return;
    }
    let run = run_with_policy(0, &[("NEVER_KILL_ISTIO_ON_FAILURE", "true")], &[]);
    assert_eq!(run.out.code, Some(0), "{}", run.dump);
    assert_eq!(run.admin_quits(), 1, "{}", run.dump);
    assert_eq!(run.generic_quits(), 1, "{}", run.dump);
}

#[test]
fn keep_on_failure_beats_always_kill_envoy() {
    let run = run_with_policy(
        1,
        &[
            ("NEVER_KILL_ISTIO_ON_FAILURE", "true"),
            ("ALWAYS_KILL_ENVOY", "true"),
        ],
        &[],
    );
    assert_eq!(run.out.code, Some(1), "{}", run.dump);
    assert_eq!(run.admin_quits(), 0, "{}", run.dump);
    assert_eq!(run.generic_quits(), 0, "{}", run.dump);
}

#[test]
fn failed_app_still_stops_the_sidecars_by_default() {
    if !no_real_pilot_agent() {
        return;
    }
    let run = run_with_policy(42, &[("ALWAYS_KILL_ENVOY", "true")], &[]);
    assert_eq!(run.out.code, Some(42), "{}", run.dump);
    assert_eq!(run.admin_quits(), 1, "{}", run.dump);
    assert_eq!(run.generic_quits(), 1, "{}", run.dump);
}

// ---------------------------------------------------------------------------
// Quits after an abandoned wait (SPEC §3, §5)
// ---------------------------------------------------------------------------

/// Starts tandem waiting for a never-ready Envoy with one generic endpoint and
/// `env`, sends SIGTERM after the first `/ready` poll, and checks what followed.
fn sigterm_while_waiting(env: Env) -> (Out, FakeAdmin, FakeAdmin, PathBuf) {
    let (mut cmd, envoy, generic) = envoy_and_generic(Script::envoy().never_ready());
    let marker = temp_dir("sigterm-wait").join("app-started");
    cmd.envs(env.iter().copied());
    app_touching(&mut cmd, &marker);
    let mut running = spawn(&mut cmd);
    assert!(
        envoy.wait_for_request("GET", "/ready", Duration::from_secs(10)),
        "tandem never polled /ready\n{}",
        envoy.dump()
    );
    let signalled = Instant::now();
    running.signal(SIGTERM);
    let out = running.wait(RUN_TIMEOUT);
    let ended = signalled.elapsed();
    assert!(
        ended < Duration::from_secs(2),
        "tandem must exit about at once after SIGTERM: took {ended:?}\n{}",
        out.dump_with(&[&envoy, &generic])
    );
    (out, envoy, generic, marker)
}

#[test]
fn sigterm_while_waiting_quits_sidecars_and_exits_143() {
    if !no_real_pilot_agent() {
        return;
    }
    let (out, envoy, generic, marker) = sigterm_while_waiting(&[]);
    let dump = out.dump_with(&[&envoy, &generic]);
    assert_eq!(out.code, Some(143), "{dump}");
    assert!(!marker.exists(), "the app must never start\n{dump}");
    assert_eq!(posts(&generic, "/quit"), 1, "{dump}");
    assert_eq!(posts(&envoy, "/quitquitquit"), 1, "{dump}");
}

#[test]
fn sigterm_while_waiting_with_keep_on_failure_sends_nothing() {
    let (out, envoy, generic, marker) =
        sigterm_while_waiting(&[("NEVER_KILL_ISTIO_ON_FAILURE", "true")]);
    let dump = out.dump_with(&[&envoy, &generic]);
    assert_eq!(out.code, Some(143), "{dump}");
    assert!(!marker.exists(), "the app must never start\n{dump}");
    assert_eq!(generic.requests().len(), 0, "{dump}");
    assert_eq!(envoy.quit_requests(), 0, "{dump}");
}

#[test]
fn fail_timeout_exits_69_and_sends_the_quits() {
    if !no_real_pilot_agent() {
        return;
    }
    let (mut cmd, envoy, generic) = envoy_and_generic(Script::envoy().never_ready());
    let marker = temp_dir("fail-timeout").join("app-started");
    cmd.args(["--fail-timeout", "300ms"]);
    app_touching(&mut cmd, &marker);
    let out = run(&mut cmd, RUN_TIMEOUT);
    let dump = out.dump_with(&[&envoy, &generic]);
    assert_eq!(out.code, Some(69), "{dump}");
    assert!(!marker.exists(), "the app must never start\n{dump}");
    assert_eq!(posts(&envoy, "/quitquitquit"), 1, "{dump}");
    assert_eq!(posts(&generic, "/quit"), 1, "{dump}");
}
