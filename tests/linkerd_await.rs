//! tandem invoked as `linkerd-await` (SPEC §2): linkerd-await's command line with
//! its meaning, through a symlink of that name, against a fake Linkerd proxy.

use crate::support::{FakeAdmin, Out, Script, app_touching, run, start, tandem_named, temp_dir};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// Kill timeout of every run.
const RUN_TIMEOUT: Duration = Duration::from_secs(20);

/// A `linkerd-await` that is this build's tandem, with a clean environment.
fn linkerd_await() -> Command {
    tandem_named("linkerd-await")
}

fn port(fake: &FakeAdmin) -> String {
    fake.port().to_string()
}

fn dump(out: &Out, fake: &FakeAdmin) -> String {
    out.dump_with(&[fake])
}

#[test]
fn waits_for_ready_on_the_port_then_runs_the_command_without_shutdown() {
    let proxy = start(Script::linkerd().ready_after(Duration::from_millis(300)));
    let out = run(
        linkerd_await().args(["-p", &port(&proxy), "--", "sh", "-c", "exit 3"]),
        RUN_TIMEOUT,
    );
    let dump = dump(&out, &proxy);
    assert_eq!(out.code, Some(3), "{dump}");
    assert!(proxy.count("GET", "/ready") >= 2, "{dump}");
    assert!(proxy.became_ready_at().is_some(), "{dump}");
    assert_eq!(proxy.count("POST", "/shutdown"), 0, "{dump}");
}

#[test]
fn shutdown_posts_to_the_proxy_after_the_command_and_keeps_its_status() {
    let proxy = start(Script::linkerd());
    let out = run(
        linkerd_await().args(["--port", &port(&proxy), "-S", "--", "sh", "-c", "exit 4"]),
        RUN_TIMEOUT,
    );
    let dump = dump(&out, &proxy);
    assert_eq!(out.code, Some(4), "{dump}");
    assert_eq!(proxy.count("POST", "/shutdown"), 1, "{dump}");
}

#[test]
fn a_timeout_is_fatal_by_default_and_the_command_never_runs() {
    let proxy = start(Script::linkerd().never_ready());
    let marker: PathBuf = temp_dir("la-fatal").join("ran");
    let mut cmd = linkerd_await();
    cmd.args(["-p", &port(&proxy), "-t", "400ms", "--"]);
    app_touching(&mut cmd, &marker);
    let out = run(&mut cmd, RUN_TIMEOUT);
    let dump = dump(&out, &proxy);
    assert_eq!(out.code, Some(69), "{dump}");
    assert!(!marker.exists(), "the command ran\n{dump}");
}

#[test]
fn timeout_fatal_false_runs_the_command_anyway() {
    let proxy = start(Script::linkerd().never_ready());
    let out = run(
        linkerd_await().args([
            "-p",
            &port(&proxy),
            "--timeout=400ms",
            "--timeout-fatal=false",
            "sh",
            "-c",
            "exit 5",
        ]),
        RUN_TIMEOUT,
    );
    let dump = dump(&out, &proxy);
    assert_eq!(out.code, Some(5), "{dump}");
    assert!(out.stderr.contains("not ready within 400ms"), "{dump}");
}

#[test]
fn linkerd_await_disabled_runs_the_command_directly() {
    let proxy = start(Script::linkerd().never_ready());
    let out = run(
        linkerd_await().env("LINKERD_AWAIT_DISABLED", "yes").args([
            "-p",
            &port(&proxy),
            "-S",
            "-t",
            "1d",
            "sh",
            "-c",
            "exit 6",
        ]),
        RUN_TIMEOUT,
    );
    let dump = dump(&out, &proxy);
    assert_eq!(out.code, Some(6), "{dump}");
    assert!(proxy.requests().is_empty(), "{dump}");
}

#[test]
fn bad_arguments_exit_64_with_one_clear_line() {
    for args in [
        &["-p", "99999", "true"][..],
        &["-t", "1.5x", "true"],
        &["--timeout-fatal=perhaps", "true"],
        &["--shutdown"],
        &["--uri", "http://x", "true"],
    ] {
        let out = run(linkerd_await().args(args), RUN_TIMEOUT);
        assert_eq!(out.code, Some(64), "{args:?}\n{}", out.dump());
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}\n{}", out.dump());
        assert!(
            lines[0].contains("error: linkerd-await: "),
            "{}",
            out.dump()
        );
    }
}
