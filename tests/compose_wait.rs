//! docker-compose-wait's variables and usage (SPEC §2): invoked as `wait` through a
//! symlink of that name, tandem waits for `WAIT_HOSTS` and `WAIT_PATHS`, runs
//! `WAIT_COMMAND` or its arguments, or only waits (`/wait && app`); `WAIT_TIMEOUT`
//! fails the wait with 69, named; under tandem's own name the variables keep
//! their meaning and `WAIT_COMMAND` gets a warning.

use crate::support::{
    LatePort, RUN_TIMEOUT, run, spawn, tandem, tandem_named, temp_dir, wait_until,
};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

/// A `wait` that is this build's tandem, with a clean environment.
fn wait() -> Command {
    tandem_named("wait")
}

#[test]
fn without_arguments_it_waits_for_hosts_and_paths_then_exits_0() {
    let dir = temp_dir("cw-wait");
    let flag = dir.join("flag");
    let mut port = LatePort::v4();
    let mut running = spawn(
        wait()
            .env("WAIT_HOSTS", format!("127.0.0.1:{}", port.port()))
            .env("WAIT_PATHS", &flag),
    );
    thread::sleep(Duration::from_millis(300));
    port.listen();
    thread::sleep(Duration::from_millis(300));
    assert!(
        running.is_running(),
        "it stopped waiting before the file existed"
    );
    std::fs::write(&flag, "").expect("write the flag");
    let out = running.wait(RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(out.stderr.contains("sidecars ready"), "{}", out.dump());
}

#[test]
fn wait_command_runs_once_ready_split_as_a_shell_would() {
    let mut port = LatePort::v4();
    port.listen();
    let out = run(
        wait()
            .env("WAIT_HOSTS", format!("localhost:{}", port.port()))
            .env("WAIT_COMMAND", "sh -c 'exit \"$1\"' sh 7"),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(7), "{}", out.dump());
    assert!(!out.stderr.contains("warning"), "{}", out.dump());
}

#[test]
fn arguments_are_the_command_and_not_both_with_wait_command() {
    let out = run(wait().args(["sh", "-c", "exit 5"]), RUN_TIMEOUT);
    assert_eq!(out.code, Some(5), "{}", out.dump());
    let out = run(
        wait()
            .env("WAIT_COMMAND", "true")
            .args(["sh", "-c", "exit 5"]),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(64), "{}", out.dump());
    assert!(
        out.stderr
            .contains("wait: both arguments and WAIT_COMMAND name a command"),
        "{}",
        out.dump()
    );
    let out = run(wait().env("WAIT_COMMAND", "sh -c 'exit 3"), RUN_TIMEOUT);
    assert_eq!(out.code, Some(64), "{}", out.dump());
    assert!(
        out.stderr.contains("invalid WAIT_COMMAND"),
        "{}",
        out.dump()
    );
}

#[test]
fn wait_timeout_exits_69_naming_it_and_never_runs_the_command() {
    let dir = temp_dir("cw-timeout");
    let marker = dir.join("ran");
    let log = dir.join("termination-log");
    let port = LatePort::v4();
    let started = Instant::now();
    let out = run(
        wait()
            .env("WAIT_HOSTS", format!("127.0.0.1:{}", port.port()))
            .env("WAIT_TIMEOUT", "1")
            .env("TANDEM_TERMINATION_LOG", &log)
            .env("WAIT_COMMAND", format!("touch {}", marker.display())),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(69), "{}", out.dump());
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{}",
        out.dump()
    );
    assert!(!marker.exists(), "{}", out.dump());
    assert!(
        out.stderr.contains("not ready within 1.0s (WAIT_TIMEOUT)"),
        "{}",
        out.dump()
    );
    let message = std::fs::read_to_string(&log).expect("the termination message");
    assert!(
        message.contains(&format!("tcp://127.0.0.1:{}: refused", port.port())),
        "{message}"
    );
}

#[test]
fn under_tandems_name_the_variables_mean_the_same_and_wait_command_is_warned_about() {
    let mut port = LatePort::v4();
    let running = spawn(
        tandem()
            .env("WAIT_HOSTS", format!("127.0.0.1:{}", port.port()))
            .env("WAIT_COMMAND", "sh -c 'exit 9'")
            .env("WAIT_BEFORE", "3")
            .args(["sh", "-c", "exit 4"]),
    );
    assert!(
        wait_until(Duration::from_secs(10), || running
            .stderr_so_far()
            .contains("waiting for tcp://")),
        "{}",
        running.stderr_so_far()
    );
    port.listen();
    let out = running.wait(RUN_TIMEOUT);
    assert_eq!(out.code, Some(4), "{}", out.dump());
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains(" tandem: warning: "))
        .collect();
    assert_eq!(warnings.len(), 2, "{}", out.dump());
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("WAIT_BEFORE=\"3\" has no effect"))
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("WAIT_COMMAND has no effect"))
    );
}

#[test]
fn wait_logger_level_off_silences_it() {
    let out = run(
        wait()
            .env("WAIT_LOGGER_LEVEL", "off")
            .env("WAIT_TIMEOUT", "1")
            .env("WAIT_PATHS", "/nonexistent/tandem-test-path"),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(69), "{}", out.dump());
    assert_eq!(out.stderr, "", "{}", out.dump());
}
