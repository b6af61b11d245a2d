//! `tandem --version` names the package version and the commit the binary was built
//! from (build.rs): the checkout's HEAD, marked `-dirty` when tracked files differ.

use crate::support::{RUN_TIMEOUT, prereq, run, tandem};
use std::path::Path;
use std::process::Command;

/// The commit named in `tandem VERSION (commit COMMIT)`, after checking the rest of
/// the line and that nothing went to stderr.
fn printed_commit() -> String {
    let out = run(tandem().arg("--version"), RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(out.stderr.is_empty(), "{}", out.dump());
    let stdout = out.stdout_str();
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
        // CI always runs in a clone, so there this fails instead.
        let dir = env!("CARGO_MANIFEST_DIR");
        prereq::skip(
            "a git checkout",
            &format!("`git rev-parse HEAD` fails in {dir}"),
        );
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
