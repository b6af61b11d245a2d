//! The `--mesh` presets against fakes on their fixed ports (SPEC §6): what each
//! preset waits for, what it quits, how presets combine, and that an explicit
//! setting replaces a preset's. Each test needs its ports free on 127.0.0.1; when
//! one is taken (a real sidecar, another program) the test skips (`support::skip`).

use crate::support::{
    FakeAdmin, Out, RUN_TIMEOUT, Script, fixed_ports_turn, on_fixed_ports, run, start, tandem,
};
use std::time::Duration;

fn count(fake: &FakeAdmin, method: &str, path: &str) -> usize {
    fake.count(method, path)
}

fn dump(out: &Out, fakes: &[FakeAdmin]) -> String {
    out.dump_with(&fakes.iter().collect::<Vec<_>>())
}

#[test]
fn istio_preset_waits_for_15021_and_quits_pilot_agent_on_15020() {
    let _turn = fixed_ports_turn();
    let Some(fakes) = on_fixed_ports(vec![
        (
            15021,
            Script::pilot_agent().ready_after(Duration::from_millis(300)),
        ),
        (15020, Script::pilot_agent()),
    ]) else {
        return;
    };
    let out = run(
        tandem().args(["--mesh", "istio", "sh", "-c", "exit 4"]),
        RUN_TIMEOUT,
    );
    let dump = dump(&out, &fakes);
    assert_eq!(out.code, Some(4), "{dump}");
    assert!(
        count(&fakes[0], "GET", "/healthz/ready") >= 2,
        "waited on 15021\n{dump}"
    );
    assert!(fakes[0].became_ready_at().is_some(), "{dump}");
    assert_eq!(
        count(&fakes[1], "POST", "/quitquitquit"),
        1,
        "quit on 15020\n{dump}"
    );
    assert_eq!(count(&fakes[0], "POST", "/quitquitquit"), 0, "{dump}");
}

#[test]
fn envoy_preset_waits_for_and_quits_the_admin_on_9901() {
    let _turn = fixed_ports_turn();
    let Some(fakes) = on_fixed_ports(vec![(
        9901,
        Script::envoy().ready_after(Duration::from_millis(200)),
    )]) else {
        return;
    };
    let out = run(tandem().args(["--mesh", "envoy", "true"]), RUN_TIMEOUT);
    let dump = dump(&out, &fakes);
    assert_eq!(out.code, Some(0), "{dump}");
    assert!(count(&fakes[0], "GET", "/ready") >= 2, "{dump}");
    assert_eq!(count(&fakes[0], "POST", "/quitquitquit"), 1, "{dump}");
}

#[test]
fn linkerd_and_cloudsql_presets_combine_and_both_are_quit_after_a_failure() {
    let _turn = fixed_ports_turn();
    let Some(fakes) = on_fixed_ports(vec![
        (
            4191,
            Script::linkerd().ready_after(Duration::from_millis(200)),
        ),
        (
            9090,
            Script::generic().ready_after(Duration::from_millis(400)),
        ),
        (9091, Script::generic()),
    ]) else {
        return;
    };
    let out = run(
        tandem()
            .env("TANDEM_MESH", "linkerd, cloudsql")
            .args(["sh", "-c", "exit 3"]),
        RUN_TIMEOUT,
    );
    let dump = dump(&out, &fakes);
    assert_eq!(out.code, Some(3), "{dump}");
    assert!(count(&fakes[0], "GET", "/ready") >= 2, "{dump}");
    assert!(count(&fakes[1], "GET", "/startup") >= 2, "{dump}");
    assert_eq!(count(&fakes[0], "POST", "/shutdown"), 1, "{dump}");
    assert_eq!(count(&fakes[2], "POST", "/quitquitquit"), 1, "{dump}");
}

#[test]
fn explicit_istio_quit_api_replaces_the_istio_preset_quit() {
    let _turn = fixed_ports_turn();
    let Some(fakes) = on_fixed_ports(vec![
        (15021, Script::pilot_agent()),
        (15020, Script::pilot_agent()),
    ]) else {
        return;
    };
    let elsewhere = start(Script::pilot_agent());
    let out = run(
        tandem()
            .env("ISTIO_QUIT_API", elsewhere.url())
            .args(["--mesh", "istio", "true"]),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[&fakes[0], &fakes[1], &elsewhere]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert_eq!(count(&elsewhere, "POST", "/quitquitquit"), 1, "{dump}");
    assert_eq!(count(&fakes[1], "POST", "/quitquitquit"), 0, "{dump}");
}
