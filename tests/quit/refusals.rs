//! A quit the sidecar refused (SPEC §5.3): Istio/Envoy answering anything but
//! 2xx did not agree to stop, so the quit failed: an error line with what to
//! check, the termination message (SPEC §7). A generic endpoint's non-2xx answer
//! still counts as sent, as a warning.

use super::posts;
use crate::support::{
    Out, RUN_TIMEOUT, Script, no_real_pilot_agent, run, start, tandem, tandem_at, temp_dir,
};
use std::fs;
use std::path::PathBuf;
use std::process::Command;

/// Runs `cmd` (the app `true` appended) with a termination log; returns the output
/// and what the log holds ("" when nothing was written).
fn run_telling(cmd: &mut Command, name: &str) -> (Out, String) {
    let path: PathBuf = temp_dir(name).join("termination-log");
    let out = run(
        cmd.env("TANDEM_TERMINATION_LOG", &path).arg("true"),
        RUN_TIMEOUT,
    );
    let told = fs::read_to_string(&path).unwrap_or_default();
    (out, told)
}

/// Checks that the quit of `url` answered `status` was a failed quit of `who`:
/// the app's status kept, the error line, the termination message naming it.
fn assert_refused(out: &Out, told: &str, url: &str, status: u16, who: &str, dump: &str) {
    assert_eq!(out.code, Some(0), "the app's status stays\n{dump}");
    let line = format!("error: quit POST {url}: {status} (not 2xx: {who} did not agree to stop");
    assert!(out.stderr.contains(&line), "expected {line:?}\n{dump}");
    assert!(
        told.contains(&format!("{url}: {status}")),
        "the termination message says which quit failed: {told:?}\n{dump}"
    );
}

/// A tandem quitting Istio through a pilot-agent that answers its quit with
/// `status`; returns the output, the termination message, the quit URL and a dump.
fn quit_refused_by_pilot_agent(status: u16) -> (Out, String, String, String) {
    let envoy = start(Script::envoy());
    let pilot = start(Script::pilot_agent().status_override("/quitquitquit", status));
    let (out, told) = run_telling(
        tandem_at(&envoy).env("ISTIO_QUIT_API", pilot.url()),
        "pilot-refused",
    );
    let dump = out.dump_with(&[&envoy, &pilot]);
    assert_eq!(posts(&pilot, "/quitquitquit"), 1, "{dump}");
    (out, told, format!("{}/quitquitquit", pilot.url()), dump)
}

#[test]
fn pilot_agent_answering_500_or_503_is_a_failed_quit() {
    for status in [500, 503] {
        let (out, told, url, dump) = quit_refused_by_pilot_agent(status);
        assert_refused(&out, &told, &url, status, "pilot-agent", &dump);
    }
}

#[test]
fn pilot_agent_404_names_the_port_to_check() {
    let (out, _, _, dump) = quit_refused_by_pilot_agent(404);
    let hint = "did not agree to stop; is ISTIO_QUIT_API pilot-agent's status port (15020)";
    assert!(out.stderr.contains(hint), "{dump}");
}

#[test]
fn envoy_kill_api_answering_503_is_a_failed_quit() {
    let envoy = start(Script::envoy());
    let kill = start(Script::generic().status_override("/kill", 503));
    let url = format!("{}/kill", kill.url());
    let (out, told) = run_telling(
        tandem_at(&envoy).env("ENVOY_KILL_API", &url),
        "envoy-kill-503",
    );
    let dump = out.dump_with(&[&envoy, &kill]);
    assert_refused(&out, &told, &url, 503, "Envoy", &dump);
}

#[test]
fn envoy_admin_answering_500_is_a_failed_quit() {
    if !no_real_pilot_agent() {
        return;
    }
    let envoy = start(Script::envoy().status_override("/quitquitquit", 500));
    let (out, told) = run_telling(&mut tandem_at(&envoy), "envoy-admin-500");
    let dump = out.dump_with(&[&envoy]);
    let url = format!("{}/quitquitquit", envoy.url());
    assert_refused(&out, &told, &url, 500, "Envoy", &dump);
}

#[test]
fn a_generic_endpoints_non_2xx_answer_counts_as_sent_with_a_warning() {
    for status in [500, 503] {
        let endpoint = start(Script::generic().status_override("/quit", status));
        let (out, told) = run_telling(
            tandem().env("GENERIC_QUIT_ENDPOINTS", format!("{}/quit", endpoint.url())),
            "generic-5xx",
        );
        let dump = out.dump_with(&[&endpoint]);
        assert_eq!(out.code, Some(0), "{dump}");
        let line = format!("warning: quit POST {}/quit: {status}", endpoint.url());
        assert!(out.stderr.contains(&line), "expected {line:?}\n{dump}");
        assert!(!out.stderr.contains("error"), "{dump}");
        assert_eq!(told, "", "counted as sent: nothing to tell\n{dump}");
    }
}
