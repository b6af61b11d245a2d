//! The harness checks itself: running, timing out and signalling a command (with
//! `sh` instead of tandem), and the clean-up of earlier runs' temporary directories.

use super::{SIGTERM, remove_stale_temp_dirs, run, spawn, temp_dir, temp_pid, wait_until};
use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::time::Duration;

/// Bound on each wait of these tests, so none can hang.
const IO_TIMEOUT: Duration = Duration::from_secs(3);

#[test]
fn harness_run_captures_output_and_exit_code() {
    let out = run(
        Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]),
        IO_TIMEOUT,
    );
    assert_eq!(out.code, Some(3), "{}", out.dump());
    assert_eq!(out.stdout, b"out\n");
    assert_eq!(out.stderr, "err\n");
}

#[test]
#[should_panic(expected = "did not exit within")]
fn harness_run_kills_and_panics_on_timeout() {
    run(Command::new("sleep").arg("10"), Duration::from_millis(100));
}

#[test]
fn harness_signal_reaches_the_running_child() {
    let dir = temp_dir("signal");
    let marker = dir.join("started");
    let script = format!("touch {}; exec sleep 10", marker.display());
    let mut running = spawn(Command::new("sh").args(["-c", &script]));
    assert!(wait_until(IO_TIMEOUT, || marker.exists()));
    running.signal(SIGTERM);
    let out = running.wait(IO_TIMEOUT);
    assert_eq!(out.status.signal(), Some(SIGTERM), "{}", out.dump());
    assert!(out.elapsed < Duration::from_secs(5));
}

#[test]
fn temp_pid_reads_only_the_two_exact_patterns() {
    for (name, pid) in [
        ("tandem-tests-42", Some(42)),
        ("tandem-test-42-0-pilot-agent", Some(42)),
        ("tandem-test-42-17-x", Some(42)),
        ("tandem-tests-", None),
        ("tandem-tests-42x", None),
        ("tandem-tests-4-2", None),
        ("tandem-test-42-0", None),
        ("tandem-test-42-x-name", None),
        ("tandem-test--0-name", None),
        ("tandem-ci.log", None),
        ("other-tandem-tests-42", None),
        ("tandem-tests-99999999999999999999", None),
    ] {
        assert_eq!(temp_pid(name), pid, "{name}");
    }
}

#[test]
fn stale_temp_dirs_of_gone_processes_are_deleted_and_nothing_else() {
    let tmp = temp_dir("stale");
    let mut exited = Command::new("true").spawn().expect("spawn true");
    let gone = exited.id();
    exited.wait().expect("reap true");
    let me = std::process::id();
    let outside = temp_dir("outside");
    let made = |name: String| {
        let dir = tmp.join(name);
        fs::create_dir_all(dir.join("sub")).expect("make a directory");
        fs::write(dir.join("sub/file"), "x").expect("write a file");
        dir
    };
    let deleted = [
        made(format!("tandem-tests-{gone}")),
        made(format!("tandem-test-{gone}-3-pilot-agent")),
    ];
    let kept = [
        made(format!("tandem-tests-{me}")),
        made("tandem-tests-1".to_owned()),
        made(format!("tandem-test-{me}-0-x")),
        made(format!("other-tandem-tests-{gone}")),
        made(format!("tandem-tests-{gone}-x")),
    ];
    let link = tmp.join(format!("tandem-test-{gone}-4-link"));
    std::os::unix::fs::symlink(&outside, &link).expect("symlink");
    remove_stale_temp_dirs(&tmp);
    for dir in &deleted {
        assert!(!dir.exists(), "{} was kept", dir.display());
    }
    for dir in &kept {
        assert!(
            dir.join("sub/file").exists(),
            "{} was deleted",
            dir.display()
        );
    }
    assert!(
        link.is_symlink() && outside.exists(),
        "a symlink was followed"
    );
}
