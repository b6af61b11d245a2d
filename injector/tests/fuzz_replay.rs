//! The injector's fuzz corpora on stable Rust: every committed seed and crash
//! reproducer in `fuzz/seeds/injector_*/` goes through the body its fuzzer
//! runs (`injector/src/fuzz_bodies.rs`), so a fixed crash stays fixed without
//! nightly. (The wrapper's targets replay in the root crate's tests.)

use std::fs;
use std::path::PathBuf;

use tandem_injector::fuzz_bodies as bodies;

/// Replays every file of `fuzz/seeds/TARGET` through `body`.
fn replay(target: &str, at_least: usize, body: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/seeds")
        .join(target);
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a readable seed folder").path())
        .collect();
    files.sort();
    assert!(files.len() >= at_least, "{}: too few seeds", dir.display());
    for file in files {
        let data = fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        eprintln!("replaying {}", file.display());
        body(&data);
    }
}

#[test]
fn reviews_replay_clean() {
    replay("injector_review", 10, bodies::review);
}

#[test]
fn registry_documents_replay_clean() {
    replay("injector_registry", 10, bodies::registry);
}

#[test]
fn allow_lists_replay_clean() {
    replay("injector_allow", 8, bodies::allow);
}

#[test]
fn challenges_replay_clean() {
    replay("injector_challenge", 8, bodies::challenge);
}

#[test]
fn audit_lists_replay_clean() {
    replay("injector_audit", 8, bodies::audit_list);
}
