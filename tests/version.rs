//! `tandem --version` names the package version and the commit the binary was built
//! from (build.rs): the checkout's HEAD, marked `-dirty` when tracked files differ.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// Hang guard only: `--version` returns at once.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// Runs `tandem --version` and returns its output, killing it past the hang guard.
fn version_output() -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tandem"))
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tandem --version");
    let start = Instant::now();
    while child.try_wait().expect("poll tandem").is_none() {
        if start.elapsed() > HANG_GUARD {
            let _ = child.kill();
            panic!("tandem --version still running after {HANG_GUARD:?}");
        }
        sleep(Duration::from_millis(10));
    }
    child.wait_with_output().expect("collect tandem's output")
}

/// The commit named in `tandem VERSION (commit COMMIT)`, after checking the rest of
/// the line and that nothing went to stderr.
fn printed_commit() -> String {
    let out = version_output();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}, stderr: {stderr}",
        out.status
    );
    assert!(stderr.is_empty(), "stderr: {stderr}");
    let prefix = format!("tandem {} (commit ", env!("CARGO_PKG_VERSION"));
    let commit = stdout
        .strip_prefix(&prefix)
        .and_then(|rest| rest.strip_suffix(")\n"))
        .unwrap_or_else(|| panic!("expected {prefix}COMMIT)\\n, got {stdout:?}"));
    commit.to_owned()
}

/// A git command's trimmed stdout in the crate's directory, or None without git or a
/// checkout.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")))
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

#[test]
fn version_names_the_package_version_and_a_commit() {
    let commit = printed_commit();
    let id = commit.strip_suffix("-dirty").unwrap_or(&commit);
    let is_id = (7..=40).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit());
    assert!(
        is_id || commit == "unknown",
        "commit {commit:?} is neither a hex commit id (optionally -dirty) nor `unknown`"
    );
}

#[test]
fn version_names_the_checkouts_head_and_whether_it_is_dirty() {
    let Some(head) = git(&["rev-parse", "HEAD"]) else {
        // A missing prerequisite fails in CI, which always runs in a clone.
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but `git rev-parse HEAD` fails in {}",
            env!("CARGO_MANIFEST_DIR")
        );
        eprintln!("skipped: not a git checkout, or no git");
        return;
    };
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|status| !status.is_empty());
    let commit = printed_commit();
    let id = commit.strip_suffix("-dirty").unwrap_or(&commit);
    assert!(
        id.len() >= 7 && head.starts_with(id),
        "tandem names commit {commit:?}, the checkout's HEAD is {head}"
    );
    assert_eq!(
        commit.ends_with("-dirty"),
        dirty,
        "tandem names {commit:?}; tracked files differ from HEAD: {dirty}"
    );
}
