//! Build script, two jobs: it records the commit tandem is built from for
//! `tandem --version`, and it leaves the unwind tables out of a binary that can never
//! unwind (see `drop_unwind_tables`).
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
    drop_unwind_tables();
}

/// The linker script for `drop_unwind_tables`: `INSERT` keeps the linker's own layout
/// and only adds the discard, so every other section lands where it always does.
const DISCARD_UNWIND_TABLES: &str = "\
SECTIONS {
  /DISCARD/ : { *(.eh_frame) *(.eh_frame_hdr) *(.gcc_except_table*) }
} INSERT AFTER .text;
";

/// The release profile sets `panic = "abort"`, so nothing in its binary unwinds: a panic
/// prints its message and aborts. The DWARF unwind tables are then only read to print
/// a `RUST_BACKTRACE` trace, which a stripped binary cannot name anyway, and they are
/// ~93 KiB of the static binary: std's precompiled code carries them whatever
/// `-C force-unwind-tables` says, so they are dropped at link time. Only the binary
/// and the examples of a release build get this (so `make bench`'s std-only floor is
/// linked the same way), and only on Linux (ELF, GNU ld or lld): tests keep
/// unwinding, and a debug build is untouched. (Cargo does not tell a build script the
/// profile's panic strategy, `CARGO_CFG_PANIC` says the target's default, so this
/// keys on the profile that sets it.)
fn drop_unwind_tables() {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("PROFILE") != "release" || var("CARGO_CFG_TARGET_OS") != "linux" {
        return;
    }
    let script = PathBuf::from(var("OUT_DIR")).join("discard-unwind-tables.ld");
    if std::fs::write(&script, DISCARD_UNWIND_TABLES).is_err() {
        // A full disk: the build goes on with the tables, a bigger binary and no harm.
        println!("cargo:warning=could not write {}", script.display());
        return;
    }
    // rust-lld (what .cargo/config.toml sets for the musl targets) takes linker flags
    // as they are; a C compiler driver (cc, musl-gcc) needs them behind -Wl.
    let linker = var("RUSTC_LINKER");
    let direct = linker.ends_with("rust-lld") || linker.ends_with("ld.lld");
    let args = [
        format!("-T{}", script.display()),
        "--no-eh-frame-hdr".to_owned(),
    ];
    for arg in args {
        let arg = if direct { arg } else { format!("-Wl,{arg}") };
        println!("cargo:rustc-link-arg-bins={arg}");
        println!("cargo:rustc-link-arg-examples={arg}");
    }
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
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
