//! The app that `make bench` runs under tandem (and directly, as the floor); its
//! static release build is also the size floor: std and a few libc calls, nothing else.
//!
//! ```text
//! bench-probe OUT exit          record "start NS" and "exit NS", then _exit(0)
//! bench-probe OUT signal        record "start NS", wait for SIGTERM, record "signal NS"
//! bench-probe OUT sleep SECS    record "start NS", sleep, record "exit NS"
//! ```
//!
//! NS is `CLOCK_MONOTONIC` in nanoseconds, the clock the fake sidecar and the
//! harness use, so the three processes' timestamps compare directly. "start" is
//! read first thing in `main`; "exit" right before `_exit`; "signal" inside the
//! SIGTERM handler itself (`clock_gettime` is async-signal-safe). OUT is opened
//! for appending, and each line goes out in a single `write`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// When the SIGTERM handler ran (0: not yet).
static SIGNALLED_AT: AtomicU64 = AtomicU64::new(0);

/// Safety net for `signal` mode: the probe dies of SIGALRM if nothing comes.
const SIGNAL_WAIT_LIMIT_SECS: u32 = 30;

fn main() {
    let start = mono_ns();
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: bench-probe OUT exit|signal|sleep [SECS]");
        std::process::exit(64);
    }
    let mut out = match OpenOptions::new().create(true).append(true).open(&args[1]) {
        Ok(file) => file,
        Err(err) => {
            eprintln!("bench-probe: cannot open {}: {err}", args[1]);
            std::process::exit(66);
        }
    };
    match args[2].as_str() {
        "exit" => {
            record(&mut out, "start", start);
            record(&mut out, "exit", mono_ns());
        }
        "signal" => {
            arm_sigterm();
            // The harness sends SIGTERM only after it has read this line, so the
            // handler is always in place by then.
            record(&mut out, "start", start);
            // SAFETY: alarm only schedules SIGALRM for this process.
            unsafe { libc::alarm(SIGNAL_WAIT_LIMIT_SECS) };
            while SIGNALLED_AT.load(Ordering::SeqCst) == 0 {
                // SAFETY: pause blocks until a signal handler has run.
                unsafe { libc::pause() };
            }
            record(&mut out, "signal", SIGNALLED_AT.load(Ordering::SeqCst));
        }
        "sleep" => {
            record(&mut out, "start", start);
            let secs: f64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(5.0);
            std::thread::sleep(Duration::from_secs_f64(secs));
            record(&mut out, "exit", mono_ns());
        }
        other => {
            eprintln!("bench-probe: unknown mode {other:?}");
            std::process::exit(64);
        }
    }
    // SAFETY: _exit ends the process at once; every record is already written.
    unsafe { libc::_exit(0) };
}

/// Writes `KEY NS\n` with one `write` call.
fn record(out: &mut File, key: &str, ns: u64) {
    let line = format!("{key} {ns}\n");
    if let Err(err) = out.write_all(line.as_bytes()) {
        eprintln!("bench-probe: cannot record {key}: {err}");
        std::process::exit(74);
    }
}

extern "C" fn on_sigterm(_: libc::c_int) {
    // Only async-signal-safe work here: one clock read and one atomic store.
    SIGNALLED_AT.store(mono_ns(), Ordering::SeqCst);
}

fn arm_sigterm() {
    // SAFETY: a zeroed sigaction is valid (empty mask, no flags); the handler
    // does only async-signal-safe work.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigterm as *const () as libc::sighandler_t;
        if libc::sigaction(libc::SIGTERM, &action, std::ptr::null_mut()) != 0 {
            eprintln!("bench-probe: cannot install the SIGTERM handler");
            std::process::exit(71);
        }
    }
}

/// `CLOCK_MONOTONIC` now, in nanoseconds.
fn mono_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec and CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}
