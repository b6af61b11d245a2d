//! Build script, two jobs: it records the commit tandem is built from for
//! `tandem --version`, and it leaves the unwind tables out of a binary that can never
//! unwind (`tandem_common::unwind_tables`, shared with the bench's probe).
//!
//! The commit: it sets `TANDEM_COMMIT` to the short commit id, with `-dirty` when tracked files
//! differ from it, or to `unknown`. The sources, in order:
//! 1. `.cargo_vcs_info.json`, which `cargo package` writes into the packaged crate, so
//!    `cargo install tandem-sidecar` still names the commit it was published from (it
//!    comes first because a packaged crate unpacked inside some other git checkout, as
//!    `cargo package` does under `target/package/`, must not take that checkout's HEAD);
//! 2. `git`, run in the crate's own directory, for a build from a clone;
//! 3. `unknown` otherwise (a source tarball, or no `git` program, as in the Docker
//!    build stage).
//!
//! A build script that fails to find git must not fail the build, so every error here
//! ends in `unknown` instead.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Length of the abbreviated id taken from `.cargo_vcs_info.json` (git's usual minimum).
const SHORT_LEN: usize = 7;

fn main() {
    record_commit();
    tandem_common::unwind_tables::drop_unwind_tables();
}

/// Sets `TANDEM_COMMIT` for `tandem --version`.
fn record_commit() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let vcs_info = dir.join(".cargo_vcs_info.json");
    let commit = if vcs_info.is_file() {
        println!("cargo:rerun-if-changed=.cargo_vcs_info.json");
        from_vcs_info(&vcs_info)
    } else {
        from_git(&dir)
    };
    let commit = commit.unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=TANDEM_COMMIT={commit}");
}

/// The commit recorded by `cargo package`: `{"git": {"sha1": "…", "dirty": true}, …}`.
/// A search for the two keys is enough for this one generated file and keeps the
/// build free of a JSON parser.
fn from_vcs_info(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let sha1 = string_after(&text, "\"sha1\"")?;
    if sha1.len() < SHORT_LEN || !sha1.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let dirty = text.contains("\"dirty\": true") || text.contains("\"dirty\":true");
    Some(format!(
        "{}{}",
        &sha1[..SHORT_LEN],
        if dirty { "-dirty" } else { "" }
    ))
}

/// The JSON string value that follows `key` and a colon.
fn string_after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let rest = &text[text.find(key)? + key.len()..];
    let rest = rest
        .trim_start()
        .strip_prefix(':')?
        .trim_start()
        .strip_prefix('"')?;
    Some(&rest[..rest.find('"')?])
}

/// `git rev-parse --short HEAD`, plus `-dirty` when a tracked file differs from HEAD.
/// Asks cargo to run this again when HEAD moves, the index changes or any tracked
/// top-level path is modified, so the mark follows the work tree.
fn from_git(dir: &Path) -> Option<String> {
    let commit = git(dir, &["rev-parse", "--short", "HEAD"])?;
    for name in ["HEAD", "index", "packed-refs"] {
        rerun_if_changed(dir, git(dir, &["rev-parse", "--git-path", name]));
    }
    if let Some(reference) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        rerun_if_changed(dir, git(dir, &["rev-parse", "--git-path", &reference]));
    }
    // Directories are scanned recursively by cargo; target/ is never tracked.
    let tracked = git(dir, &["ls-tree", "--name-only", "HEAD"]).unwrap_or_default();
    for path in tracked.lines() {
        println!("cargo:rerun-if-changed={path}");
    }
    let status = git(dir, &["status", "--porcelain", "--untracked-files=no"]);
    let dirty = status.is_some_and(|s| !s.is_empty());
    Some(format!("{commit}{}", if dirty { "-dirty" } else { "" }))
}

/// Watches a git file that exists: cargo would rerun the script on every build for a
/// missing one (a fresh clone has no packed-refs; a packed branch has no ref file).
fn rerun_if_changed(dir: &Path, path: Option<String>) {
    if let Some(path) = path.filter(|p| dir.join(p).exists()) {
        println!("cargo:rerun-if-changed={path}");
    }
}

/// One git command's trimmed stdout, or None when git is missing or fails (not a
/// checkout, or one owned by another user that git refuses to read).
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8(out.stdout).ok()?.trim().to_owned())
}
