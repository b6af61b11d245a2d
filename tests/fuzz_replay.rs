//! The fuzz corpora on stable Rust: every committed seed and crash reproducer in
//! `fuzz/seeds/TARGET/` goes through the same body the fuzzer runs
//! (`src/fuzz_bodies.rs`), so a fixed crash stays fixed without nightly.

use std::fs;
use std::path::PathBuf;

use tandem::fuzz_bodies as bodies;

/// Feeds each file of `fuzz/seeds/TARGET` to `body`; a missing or empty folder
/// fails, so a renamed target cannot silently replay nothing.
fn replay(target: &str, body: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target);
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a readable seed folder").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: no seeds", dir.display());
    for file in files {
        let data = fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        eprintln!("replaying {}", file.display());
        body(&data);
    }
}

#[test]
fn durations_replay_clean() {
    replay("duration", bodies::duration);
}

#[test]
fn booleans_replay_clean() {
    replay("boolean", bodies::boolean);
}

#[test]
fn urls_and_locality_replay_clean() {
    replay("url", bodies::url);
}

#[test]
fn server_info_bodies_replay_clean() {
    replay("server_info", bodies::server_info);
}

#[test]
fn http_answers_replay_clean() {
    replay("http_answer", bodies::http_answer);
}

#[test]
fn configurations_replay_clean() {
    replay("config", bodies::config);
}

#[test]
fn linkerd_await_command_lines_replay_clean() {
    replay("linkerd_await", bodies::linkerd_await);
}

#[test]
fn compose_wait_usages_replay_clean() {
    replay("compose_wait", bodies::compose_wait);
}

#[test]
fn command_lines_split_the_same_after_quoting() {
    replay("words", bodies::words);
}

#[test]
fn keep_on_exit_sets_round_trip() {
    replay("keep_on_exit", bodies::keep_on_exit);
}
