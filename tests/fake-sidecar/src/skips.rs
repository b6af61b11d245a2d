//! The one [`skip`] helper for when a test's prerequisite is missing: under
//! `CI=true` it fails the test with a line naming it; elsewhere the test says
//! why it skips and records it, and `make test` ends with a count of those
//! records (`.ci/skips.sh`). In this crate so the wrapper's tests and the
//! injector's share it; each passes its own `CARGO_TARGET_TMPDIR`, which only
//! a test target's build is given.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

/// File of skip records under `tmpdir` (a test build's `CARGO_TARGET_TMPDIR`),
/// one `TEST<TAB>PREREQUISITE<TAB>REASON` line each; `make test` empties it
/// first and summarizes it last.
pub fn skips_file(tmpdir: &Path) -> PathBuf {
    tmpdir.join("skips.log")
}

/// The calling test gives up because `prerequisite` is missing (`why` says how it
/// is missing). Under `CI=true` this panics, so the test fails naming it;
/// otherwise it prints a `skipped:` line, records it, and the test returns.
/// `tmpdir` is the test build's `CARGO_TARGET_TMPDIR`.
pub fn skip(tmpdir: &Path, prerequisite: &str, why: &str) {
    let ci = std::env::var_os("CI").is_some_and(|ci| ci == "true");
    let test = std::thread::current()
        .name()
        .unwrap_or("an unnamed test")
        .to_owned();
    if let Err(failure) = skip_in(ci, &skips_file(tmpdir), &test, prerequisite, why) {
        panic!("{failure}");
    }
}

/// [`skip`] with its inputs explicit, for its own tests: `Err` with the failure
/// line under CI, else prints and appends the record to `records` (a record that
/// cannot be written is said, not fatal).
pub fn skip_in(
    ci: bool,
    records: &Path,
    test: &str,
    prerequisite: &str,
    why: &str,
) -> Result<(), String> {
    if ci {
        return Err(format!(
            "{test}: missing prerequisite in CI (CI=true): {prerequisite}: {why}"
        ));
    }
    // The same test runs on glibc and on musl (`make test-musl`); say which.
    let libc = if cfg!(target_env = "musl") {
        "musl"
    } else {
        "gnu"
    };
    eprintln!("skipped: {test}: needs {prerequisite}: {why}");
    let line = format!(
        "{test} [{libc}]\t{prerequisite}\t{}\n",
        why.replace(['\t', '\n'], " ")
    );
    if let Some(dir) = records.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    // One write of one short line to an O_APPEND file: concurrent tests' lines
    // never interleave.
    let written = OpenOptions::new()
        .create(true)
        .append(true)
        .open(records)
        .and_then(|mut file| file.write_all(line.as_bytes()));
    // A machine where the test cannot write under target/ still skips; the
    // summary just misses this one, and says nothing wrong.
    if let Err(err) = written {
        eprintln!(
            "skipped: {test}: not recorded in {}: {err}",
            records.display()
        );
    }
    Ok(())
}
