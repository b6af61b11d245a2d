//! The unwind tables left out of a release binary at link time: for two build
//! scripts, tandem's (`build.rs`) and the bench probe's
//! (`benches/probe/build.rs`), which take this crate as a build dependency, so
//! the size floor is linked as tandem is.

use std::path::PathBuf;

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
/// `-C force-unwind-tables` says, so they are dropped at link time. Only the binaries
/// of a release build get this (tandem's, and the bench probe's so that `make bench`'s
/// std-only floor is linked the same way), and only on Linux (ELF, GNU ld or lld):
/// tests and benchmarks keep unwinding, and a debug build is untouched. (Cargo does
/// not tell a build script the profile's panic strategy, `CARGO_CFG_PANIC` says the
/// target's default, so this keys on the profile that sets it.)
pub fn drop_unwind_tables() {
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
    }
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
}
