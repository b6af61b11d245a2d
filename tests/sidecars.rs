//! The dapr, vault and cloudsql presets (SPEC §6) and the hints a known sidecar's
//! answer earns (SPEC §5.3, §6): against fakes on the presets' fixed ports, and
//! on an ephemeral port where a variable moves the preset (`DAPR_HTTP_PORT`).
//! A fixed port that is taken skips the test (support's one skip: a failure
//! under `CI=true`).

use crate::support::{
    FakeAdmin, Out, Script, closed_port, fixed_ports_turn, on_fixed_ports, run, start, tandem,
};
use std::time::Duration;

/// Kill timeout of every run.
const RUN_TIMEOUT: Duration = Duration::from_secs(20);

fn dump(out: &Out, fakes: &[&FakeAdmin]) -> String {
    out.dump_with(fakes)
}

/// daprd: `/v1.0/healthz/outbound` answers 204 once ready, `/v1.0/shutdown` 204.
fn daprd() -> Script {
    Script::generic()
        .ready_after(Duration::from_millis(300))
        .status_override("/v1.0/shutdown", 204)
}

#[test]
fn dapr_preset_waits_for_outbound_health_and_shuts_daprd_down_on_3500() {
    let _turn = fixed_ports_turn();
    let Some(fakes) = on_fixed_ports(vec![(3500, daprd())]) else {
        return;
    };
    let out = run(
        tandem().args(["--mesh", "dapr", "sh", "-c", "exit 5"]),
        RUN_TIMEOUT,
    );
    let dump = dump(&out, &[&fakes[0]]);
    assert_eq!(out.code, Some(5), "{dump}");
    assert!(
        fakes[0].count("GET", "/v1.0/healthz/outbound") >= 2,
        "{dump}"
    );
    assert!(fakes[0].became_ready_at().is_some(), "{dump}");
    assert_eq!(fakes[0].count("POST", "/v1.0/shutdown"), 1, "{dump}");
    assert!(out.stderr.contains("/v1.0/shutdown: 204"), "{dump}");
}

#[test]
fn dapr_http_port_moves_the_dapr_preset() {
    let daprd = start(daprd());
    let out = run(
        tandem()
            .env("TANDEM_MESH", "dapr")
            .env("DAPR_HTTP_PORT", daprd.port().to_string())
            .arg("true"),
        RUN_TIMEOUT,
    );
    let dump = dump(&out, &[&daprd]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert!(daprd.count("GET", "/v1.0/healthz/outbound") >= 2, "{dump}");
    assert_eq!(daprd.count("POST", "/v1.0/shutdown"), 1, "{dump}");
}

#[test]
fn a_bad_dapr_http_port_is_a_usage_error() {
    for bad in ["0", "65536", "35OO", "-1"] {
        let out = run(
            tandem()
                .env("DAPR_HTTP_PORT", bad)
                .args(["--mesh", "dapr", "true"]),
            RUN_TIMEOUT,
        );
        assert_eq!(out.code, Some(64), "{}", out.dump());
        assert!(out.stderr.contains("DAPR_HTTP_PORT"), "{}", out.dump());
    }
    // Without the dapr preset the variable is the injector's business, not ours.
    let out = run(tandem().env("DAPR_HTTP_PORT", "x").arg("true"), RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump());
}

#[test]
fn vault_preset_waits_for_nothing_and_quits_the_agent_on_8200() {
    let _turn = fixed_ports_turn();
    let Some(fakes) = on_fixed_ports(vec![(8200, Script::generic().never_ready())]) else {
        return;
    };
    let out = run(tandem().args(["--mesh", "vault", "true"]), RUN_TIMEOUT);
    let dump = dump(&out, &[&fakes[0]]);
    assert_eq!(out.code, Some(0), "{dump}");
    let gets = fakes[0]
        .requests()
        .iter()
        .filter(|r| r.method == "GET")
        .count();
    assert_eq!(gets, 0, "no readiness check for vault\n{dump}");
    assert_eq!(fakes[0].count("POST", "/agent/v1/quit"), 1, "{dump}");
}

#[test]
fn cloudsql_preset_waits_on_startup_not_readiness() {
    let _turn = fixed_ports_turn();
    let Some(fakes) = on_fixed_ports(vec![
        (
            9090,
            Script::generic()
                .ready_after(Duration::from_millis(200))
                .status_override("/readiness", 503),
        ),
        (9091, Script::generic()),
    ]) else {
        return;
    };
    let out = run(tandem().args(["--mesh", "cloudsql", "true"]), RUN_TIMEOUT);
    let dump = dump(&out, &[&fakes[0], &fakes[1]]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert!(fakes[0].count("GET", "/startup") >= 2, "{dump}");
    assert_eq!(fakes[0].count("GET", "/readiness"), 0, "{dump}");
    assert_eq!(fakes[1].count("POST", "/quitquitquit"), 1, "{dump}");
}

#[test]
fn linkerd_404_on_shutdown_names_the_pod_annotation_even_at_error_level() {
    let linkerd = start(Script::linkerd().shutdown_enabled(false));
    let out = run(
        tandem()
            .env(
                "GENERIC_QUIT_ENDPOINTS",
                format!("{}/shutdown", linkerd.url()),
            )
            .env("TANDEM_LOG", "error")
            .arg("true"),
        RUN_TIMEOUT,
    );
    let dump = dump(&out, &[&linkerd]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert!(
        out.stderr.contains("error: quit POST")
            && out
                .stderr
                .contains("config.linkerd.io/proxy-admin-shutdown: enabled"),
        "{dump}"
    );
    // The proxy's own setting too, for a proxy run outside the injector (SPEC §5.3).
    assert!(
        out.stderr
            .contains("LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED=true"),
        "{dump}"
    );
    let shutdowns = linkerd
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path == "/shutdown")
        .count();
    assert_eq!(shutdowns, 1, "{dump}");
}

#[test]
fn vault_404_or_405_on_quit_names_the_pod_annotation() {
    for status in [404, 405] {
        let vault = start(Script::generic().status_override("/agent/v1/quit", status));
        let out = run(
            tandem()
                .args(["--quit", &format!("{}/agent/v1/quit", vault.url())])
                .arg("true"),
            RUN_TIMEOUT,
        );
        let dump = dump(&out, &[&vault]);
        assert_eq!(out.code, Some(0), "{dump}");
        assert!(
            out.stderr
                .contains("vault.hashicorp.com/agent-enable-quit: \"true\""),
            "{status}\n{dump}"
        );
    }
}

#[test]
fn a_refused_cloudsql_quit_on_9091_names_the_quitquitquit_flag() {
    let _turn = fixed_ports_turn();
    // Bound and released at once: proves nothing listens on 9091 for this test.
    let Some(probe) = on_fixed_ports(vec![(9091, Script::generic())]) else {
        return;
    };
    drop(probe);
    let out = run(
        tandem()
            .args(["--quit", "http://127.0.0.1:9091/quitquitquit"])
            .args(["--quit-timeout", "300ms"])
            .arg("true"),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(
        out.stderr.contains("--quitquitquit") && out.stderr.contains("error: "),
        "{}",
        out.dump()
    );
    // Another port refusing is no Cloud SQL proxy: no flag to suggest.
    let closed = format!("http://127.0.0.1:{}/quitquitquit", closed_port());
    let out = run(
        tandem().args(["--quit", &closed, "--quit-timeout", "300ms", "true"]),
        RUN_TIMEOUT,
    );
    assert!(!out.stderr.contains("--quitquitquit"), "{}", out.dump());
}

#[test]
fn an_admin_url_answering_404_is_called_the_wrong_url_in_the_progress_line() {
    let envoy = start(Script::envoy());
    let out = run(
        tandem()
            .env("ENVOY_ADMIN_API", format!("{}/admin", envoy.url()))
            .env("WAIT_FOR_ENVOY_TIMEOUT", "2500ms")
            .arg("true"),
        RUN_TIMEOUT,
    );
    let dump = dump(&out, &[&envoy]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert!(envoy.count("GET", "/admin/server_info") >= 3, "{dump}");
    let progress = out
        .stderr
        .lines()
        .find(|l| l.contains("still waiting"))
        .unwrap_or_else(|| panic!("no progress line\n{dump}"));
    assert!(
        progress.contains("probably the wrong URL or port") && progress.contains("ENVOY_ADMIN_API"),
        "{dump}"
    );
}

#[test]
fn a_sidecar_still_starting_is_not_called_the_wrong_url() {
    let envoy = start(Script::envoy().never_ready());
    let out = run(
        tandem_at_ready_timeout(&envoy.url()).arg("true"),
        RUN_TIMEOUT,
    );
    let dump = dump(&out, &[&envoy]);
    assert!(out.stderr.contains("still waiting"), "{dump}");
    assert!(!out.stderr.contains("wrong URL"), "{dump}");
}

fn tandem_at_ready_timeout(url: &str) -> std::process::Command {
    let mut cmd = tandem();
    cmd.env("ENVOY_ADMIN_API", url)
        .env("WAIT_FOR_ENVOY_TIMEOUT", "2500ms");
    cmd
}
