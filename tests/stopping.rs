//! When the Pod is stopping (SPEC §5.3): the kubelet sends SIGTERM to every
//! container at once, so a sidecar may be gone, or hang up, before tandem's
//! app has exited. A quit that finds it so after tandem itself got SIGTERM is
//! said at info level and is no failure: the app's status stands and nothing is
//! written to the termination log. An answer the sidecar does give is judged as
//! before, and without SIGTERM a refused quit is still a failure.

use crate::support::{
    FakeAdmin, Fault, Response, SIGTERM, Script, spawn, start, tandem_at, temp_dir, wait_until,
};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Kill timeout of every run.
const RUN_TIMEOUT: Duration = Duration::from_secs(20);

/// An app that marks `started`, then exits 0 on SIGTERM, as a well-behaved job
/// does, or once `stop` exists.
const APP: &str = "trap 'exit 0' TERM; : > \"$1\"; while [ ! -e \"$2\" ]; do sleep 0.05; done";

/// The termination log's text; empty when tandem never wrote it.
fn message(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_default()
}

/// What happens once the app runs.
#[derive(Clone, Copy, PartialEq)]
enum Then {
    /// The sidecar goes away, then tandem gets SIGTERM.
    SidecarGoneThenSigterm,
    /// tandem gets SIGTERM.
    Sigterm,
    /// The app ends by itself.
    AppEnds,
}

/// A run of [`APP`] under tandem, waiting for `envoy`; once the app runs,
/// `then` happens. Returns exit code, stderr and the termination log.
fn stopped_run(name: &str, envoy: FakeAdmin, then: Then) -> (Option<i32>, String, String) {
    let dir = temp_dir(name);
    let (started, log): (PathBuf, PathBuf) = (dir.join("started"), dir.join("termination-log"));
    let mut running = spawn(
        tandem_at(&envoy)
            .env("TANDEM_TERMINATION_LOG", &log)
            .env("QUIT_REQUEST_TIMEOUT", "2s")
            .args(["sh", "-c", APP, "app"])
            .arg(&started)
            .arg(dir.join("stop")),
    );
    assert!(
        wait_until(Duration::from_secs(10), || started.exists()),
        "the app never started: {}",
        running.stderr_so_far()
    );
    match then {
        Then::SidecarGoneThenSigterm => {
            drop(envoy);
            running.signal(SIGTERM);
        }
        Then::Sigterm => running.signal(SIGTERM),
        Then::AppEnds => fs::write(dir.join("stop"), "").unwrap(),
    }
    let out = running.wait(RUN_TIMEOUT);
    (out.code, out.stderr, message(&log))
}

#[test]
fn a_sidecar_gone_before_the_quit_is_already_stopping_after_sigterm() {
    let envoy = start(Script::envoy());
    let url = envoy.url();
    let (code, stderr, log) = stopped_run("stopping-gone", envoy, Then::SidecarGoneThenSigterm);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "quit POST {url}/quitquitquit: connection refused: the sidecar is already stopping"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("error"), "{stderr}");
    assert_eq!(log, "", "{stderr}");
}

#[test]
fn a_sidecar_that_hangs_up_on_the_quit_is_already_stopping_after_sigterm() {
    let envoy = start(Script::envoy().fault_on("/quitquitquit", Fault::Reset));
    let (code, stderr, log) = stopped_run("stopping-reset", envoy, Then::Sigterm);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("the sidecar is already stopping"),
        "{stderr}"
    );
    assert!(!stderr.contains("error"), "{stderr}");
    assert_eq!(log, "", "{stderr}");
}

#[test]
fn an_answer_after_sigterm_is_judged_as_before() {
    let envoy = start(Script::envoy().respond("/quitquitquit", Response::new(503)));
    let (code, stderr, log) = stopped_run("stopping-503", envoy, Then::Sigterm);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("already stopping"), "{stderr}");
    assert!(log.contains("/quitquitquit: 503"), "{log:?} {stderr}");
}

#[test]
fn without_sigterm_a_sidecar_that_hangs_up_is_still_a_failed_quit() {
    let envoy = start(Script::envoy().fault_on("/quitquitquit", Fault::Reset));
    let (code, stderr, log) = stopped_run("running-reset", envoy, Then::AppEnds);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("already stopping"), "{stderr}");
    assert!(log.contains("/quitquitquit failed"), "{log:?} {stderr}");
}
