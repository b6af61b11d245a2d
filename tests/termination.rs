//! The termination message (SPEC §7): one line, why tandem ended a run for a
//! reason of its own, in the file `kubectl describe pod` shows; never over the
//! app's own message, nothing when there is nothing to say.

use crate::support::{
    SIGTERM, Script, closed_port, run, spawn, start, tandem, tandem_at, temp_dir, wait_until,
};
use std::fs;
use std::path::PathBuf;
use std::time::Duration;

/// Kill timeout of every run.
const RUN_TIMEOUT: Duration = Duration::from_secs(20);

/// A path for a termination log that does not exist yet.
fn log_path(name: &str) -> PathBuf {
    temp_dir(name).join("termination-log")
}

fn read(path: &PathBuf) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The message is one line, newline-terminated, at most 4 KiB.
fn assert_one_line(text: &str) {
    assert!(
        text.ends_with('\n') && text.lines().count() == 1,
        "{text:?}"
    );
    assert!(text.len() <= 4096, "{}", text.len());
}

#[test]
fn not_ready_within_fail_timeout_says_which_sidecar_and_its_last_answer_without_credentials() {
    let envoy = start(Script::envoy().never_ready());
    let path = log_path("69");
    let url = envoy.url().replace("http://", "http://user:secret@");
    let out = run(
        tandem()
            .env("ENVOY_ADMIN_API", &url)
            .env("TANDEM_TERMINATION_LOG", &path)
            .args(["--fail-timeout", "400ms", "true"]),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(69), "{}", out.dump());
    let text = read(&path);
    assert_one_line(&text);
    assert!(text.contains("not ready within 400ms"), "{text}");
    assert!(text.contains("QUIT_WITHOUT_ENVOY_TIMEOUT"), "{text}");
    assert!(
        text.contains(&format!("envoy {}: 503", envoy.url())),
        "{text}"
    );
    assert!(!text.contains("secret"), "{text}");
}

#[test]
fn command_not_found_is_written() {
    let path = log_path("127");
    let out = run(
        tandem()
            .args(["--termination-log"])
            .arg(&path)
            .arg("tandem-test-no-such-command"),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(127), "{}", out.dump());
    let text = read(&path);
    assert_one_line(&text);
    assert!(
        text.contains("tandem-test-no-such-command: command not found"),
        "{text}"
    );
}

/// The termination message of `tandem true` with one generic quit endpoint,
/// `url`, that never answers; the run itself succeeds.
fn message_after_a_failed_quit(name: &str, url: &str) -> String {
    let path = log_path(name);
    let out = run(
        tandem()
            .env("TANDEM_TERMINATION_LOG", &path)
            .env("GENERIC_QUIT_ENDPOINTS", url)
            .env("QUIT_REQUEST_TIMEOUT", "300ms")
            .arg("true"),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{}", out.dump());
    let text = read(&path);
    assert_one_line(&text);
    text
}

#[test]
fn a_failed_quit_is_written_even_after_a_successful_app() {
    let closed = format!("http://127.0.0.1:{}/quit", closed_port());
    let text = message_after_a_failed_quit("quit", &closed);
    assert!(
        text.contains(&format!("quit POST {closed} failed")),
        "{text}"
    );
}

/// The `@` of this URL is in its query, so tandem contacts localhost on
/// the closed port; the message names that URL as given, never 127.0.0.1 on the
/// other port, a host tandem never asked.
#[test]
fn a_failed_quit_names_the_host_contacted_not_one_after_an_at_in_the_query() {
    let url = format!(
        "http://localhost:{}?@127.0.0.1:{}/x",
        closed_port(),
        closed_port()
    );
    let text = message_after_a_failed_quit("query-at", &url);
    assert!(text.contains(&format!("quit POST {url} failed")), "{text}");
    assert!(!text.contains("http://127.0.0.1"), "{text}");
}

#[test]
fn a_failed_app_leaves_the_file_to_the_log_tail_even_when_a_quit_failed() {
    // FallbackToLogsOnError shows the log's tail only while the file is empty.
    let closed = format!("http://127.0.0.1:{}/quit", closed_port());
    for (app, code) in [("exit 3", 3), ("kill -KILL $$", 128 + 9)] {
        let path = log_path("app-failed");
        let out = run(
            tandem()
                .env("TANDEM_TERMINATION_LOG", &path)
                .env("GENERIC_QUIT_ENDPOINTS", &closed)
                .env("QUIT_REQUEST_TIMEOUT", "300ms")
                .args(["sh", "-c", app]),
            RUN_TIMEOUT,
        );
        assert_eq!(out.code, Some(code), "{}", out.dump());
        assert!(
            out.stderr.contains(&format!("quit POST {closed} failed")),
            "the failure is still an error line in the log\n{}",
            out.dump()
        );
        assert!(!path.exists(), "{app}: {:?}", fs::read_to_string(&path));
    }
}

#[test]
fn a_bad_value_is_written_with_exit_64() {
    let path = log_path("64");
    let out = run(
        tandem()
            .env("TANDEM_TERMINATION_LOG", &path)
            .env("WAIT_FOR_ENVOY_TIMEOUT", "soon")
            .arg("true"),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(64), "{}", out.dump());
    let text = read(&path);
    assert!(
        text.contains("invalid WAIT_FOR_ENVOY_TIMEOUT \"soon\""),
        "{text}"
    );
    // A bad option: the command line did not parse, the variable still counts.
    let path = log_path("64-option");
    let out = run(
        tandem()
            .env("TANDEM_TERMINATION_LOG", &path)
            .args(["--bogus", "true"]),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(64), "{}", out.dump());
    assert!(read(&path).contains("--bogus"), "{}", out.dump());
}

#[test]
fn a_signal_before_the_app_started_is_written() {
    let envoy = start(Script::envoy().never_ready());
    let path = log_path("signal");
    let mut running = spawn(
        tandem_at(&envoy)
            .env("TANDEM_TERMINATION_LOG", &path)
            .arg("true"),
    );
    assert!(
        wait_until(Duration::from_secs(10), || envoy.count("GET", "/ready") > 0),
        "tandem never polled"
    );
    running.signal(SIGTERM);
    let out = running.wait(RUN_TIMEOUT);
    assert_eq!(out.code, Some(128 + SIGTERM), "{}", out.dump());
    let text = read(&path);
    assert!(
        text.contains("signal 15") && text.contains("never started"),
        "{text}"
    );
}

#[test]
fn the_apps_own_message_is_never_overwritten() {
    let path = log_path("app-wins");
    fs::write(&path, "the app's own reason\n").unwrap();
    let out = run(
        tandem()
            .env("TANDEM_TERMINATION_LOG", &path)
            .arg("tandem-test-no-such-command"),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(127), "{}", out.dump());
    assert_eq!(read(&path), "the app's own reason\n");
}

#[test]
fn off_writes_nothing() {
    let path = log_path("off");
    let out = run(
        tandem().env("TANDEM_TERMINATION_LOG", &path).args([
            "--termination-log",
            "off",
            "tandem-test-no-such-command",
        ]),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(127), "{}", out.dump());
    assert!(!path.exists(), "the option overrides the variable");
}

#[test]
fn a_clean_run_leaves_the_file_empty() {
    let envoy = start(Script::envoy());
    let path = log_path("clean");
    fs::write(&path, "").unwrap();
    for app in [["sh", "-c", "exit 0"], ["sh", "-c", "exit 3"]] {
        let out = run(
            tandem_at(&envoy)
                .env("TANDEM_TERMINATION_LOG", &path)
                .args(app),
            RUN_TIMEOUT,
        );
        assert!(out.code == Some(0) || out.code == Some(3), "{}", out.dump());
        assert_eq!(read(&path), "", "the app's own status needs no message");
    }
}

#[test]
fn a_failed_install_and_a_command_that_cannot_run_are_written() {
    let dir = temp_dir("73");
    let path = dir.join("termination-log");
    let not_a_dir = dir.join("file");
    fs::write(&not_a_dir, "").unwrap();
    let out = run(
        tandem()
            .env("TANDEM_TERMINATION_LOG", &path)
            .arg("--install-to")
            .arg(&not_a_dir),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(73), "{}", out.dump());
    assert!(read(&path).contains("--install-to"), "{}", out.dump());

    let path = log_path("126");
    let out = run(
        tandem().env("TANDEM_TERMINATION_LOG", &path).arg(&dir),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(126), "{}", out.dump());
    let text = read(&path);
    assert_one_line(&text);
    assert!(text.contains("cannot execute"), "{text}");
}
