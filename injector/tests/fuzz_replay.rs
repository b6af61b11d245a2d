//! The injector's fuzz corpus on stable Rust: every committed seed and crash
//! reproducer in `fuzz/seeds/injector_review/` goes through the body the fuzzer
//! runs (`fuzz/injector_bodies.rs`), so a fixed crash stays fixed without
//! nightly. (The wrapper's targets replay in the root crate's tests.)

use std::fs;
use std::path::PathBuf;

#[path = "../../fuzz/injector_bodies.rs"]
mod injector_bodies;

#[test]
fn reviews_replay_clean() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/injector_review");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a readable seed folder").path())
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{}: too few seeds", dir.display());
    for file in files {
        let data = fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        eprintln!("replaying {}", file.display());
        injector_bodies::review(&data);
    }
}
