//! What a test needs from the machine (root and `unshare` for a PID namespace,
//! `python3`, a free fixed port, no real pilot-agent in sight), and the one
//! [`skip`] helper for when it is missing (`fake_sidecar::skips`, shared with
//! the injector's tests).

use super::{FakeAdmin, Script};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub use fake_sidecar::skips::skip_in;

/// The calling test gives up because `prerequisite` is missing (fails under
/// `CI=true`): `fake_sidecar::skips::skip` with this build's records file.
pub fn skip(prerequisite: &str, why: &str) {
    fake_sidecar::skips::skip(Path::new(env!("CARGO_TARGET_TMPDIR")), prerequisite, why);
}

/// Whether tandem can run as PID 1 of a new PID namespace here (root and a
/// working `unshare`, with an `env` that has `--default-signal`); if not, calls
/// [`skip`] and returns `false`.
pub fn pid_namespace_available() -> bool {
    static PROBE: OnceLock<Option<String>> = OnceLock::new();
    let missing = PROBE.get_or_init(|| {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Some("not root: a new PID namespace needs CAP_SYS_ADMIN".into());
        }
        let probe = [
            "--pid",
            "--fork",
            "--mount-proc",
            "env",
            "--default-signal=INT",
            "true",
        ];
        match Command::new("unshare").args(probe).output() {
            Err(err) => Some(format!("cannot run unshare: {err}")),
            Ok(out) if !out.status.success() => Some(format!(
                "`unshare {}` failed ({}): {}",
                probe.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Ok(_) => None,
        }
    });
    match missing {
        Some(why) => {
            skip("root and unshare (a new PID namespace)", why);
            false
        }
        None => true,
    }
}

/// The real `python3` executable (resolved once, so it runs with an empty
/// environment); `None` after [`skip`] when it is missing.
pub fn python() -> Option<PathBuf> {
    static PYTHON: OnceLock<Option<PathBuf>> = OnceLock::new();
    let found = PYTHON.get_or_init(|| {
        let out = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .ok()?;
        let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
        (out.status.success() && path.is_absolute()).then_some(path)
    });
    if found.is_none() {
        skip(
            "python3",
            "not installed; the recorder app is a Python script",
        );
    }
    found.clone()
}

/// Fakes on the given fixed loopback ports; `None` after [`skip`] when one is
/// taken. Hold [`super::fixed_ports_turn`] while they run.
pub fn on_fixed_ports(wanted: Vec<(u16, Script)>) -> Option<Vec<FakeAdmin>> {
    let mut fakes = Vec::new();
    for (port, script) in wanted {
        match FakeAdmin::start_on(("127.0.0.1", port), script) {
            Ok(fake) => fakes.push(fake),
            Err(err) => {
                skip(&format!("a free 127.0.0.1:{port}"), &err.to_string());
                return None;
            }
        }
    }
    Some(fakes)
}

/// Whether no real `pilot-agent` shares this test's PID namespace; if one does,
/// calls [`skip`] and returns `false`. tandem would SIGINT it instead of POSTing a
/// plain Envoy admin (SPEC §5.2). A process that vanished between the two reads
/// is not counted; an unreadable namespace counts as shared, as tandem counts it.
pub fn no_real_pilot_agent() -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    let mine = std::fs::read_link("/proc/self/ns/pid").ok();
    let visible = entries.filter_map(Result::ok).any(|entry| {
        let path = entry.path();
        std::fs::read_to_string(path.join("comm"))
            .is_ok_and(|comm| comm.trim_end() == "pilot-agent")
            && match std::fs::read_link(path.join("ns/pid")) {
                Ok(theirs) => Some(theirs) == mine,
                Err(err) => err.kind() != std::io::ErrorKind::NotFound,
            }
    });
    if visible {
        skip(
            "no process named pilot-agent in this PID namespace",
            "tandem would SIGINT it instead of POSTing the Envoy admin (SPEC §5.2)",
        );
    }
    !visible
}

#[test]
fn a_skip_under_ci_fails_naming_the_prerequisite_and_records_nothing() {
    let records = super::temp_dir("skip-ci").join("skips.log");
    let failure = skip_in(true, &records, "t::x", "python3", "not installed")
        .expect_err("under CI a skip is a failure");
    assert!(
        failure.contains("t::x") && failure.contains("python3") && failure.contains("CI"),
        "{failure}"
    );
    assert!(!records.exists(), "a failure is not a skip record");
}

#[test]
fn a_skip_outside_ci_appends_one_record_per_call() {
    let records = super::temp_dir("skip-local").join("sub/skips.log");
    skip_in(false, &records, "t::a", "python3", "not\tinstalled").expect("recorded");
    skip_in(false, &records, "t::b", "a free 127.0.0.1:9901", "in use").expect("recorded");
    let text = std::fs::read_to_string(&records).expect("records written");
    let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0][0].starts_with("t::a ["), "{text}");
    assert_eq!(lines[0][1..], ["python3", "not installed"], "{text}");
    assert_eq!(lines[1][1..], ["a free 127.0.0.1:9901", "in use"], "{text}");
}

/// Calls the real [`skip`]; ignored, so it runs only as the child of
/// [`under_ci_true_a_skip_fails_the_test_naming_the_prerequisite`].
#[test]
#[ignore = "run by under_ci_true_a_skip_fails_the_test_naming_the_prerequisite"]
fn skips_on_purpose() {
    skip("a prerequisite missing on purpose", "this test only skips");
}

#[test]
fn under_ci_true_a_skip_fails_the_test_naming_the_prerequisite() {
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = Command::new(exe)
        .args(["--ignored", "--exact", "support::prereq::skips_on_purpose"])
        .env("CI", "true")
        .output()
        .expect("run the test binary");
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the skip passed under CI\n{text}");
    assert!(
        text.contains("1 failed")
            && text.contains(
                "missing prerequisite in CI (CI=true): a prerequisite missing on purpose"
            ),
        "{text}"
    );
}
