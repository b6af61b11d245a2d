//! A signal storm (SPEC §4): 10,000 mixed signals at tandem while the app runs.
//! tandem neither crashes nor leaks (its fds and threads stay as they were), the
//! app gets every kind of signal sent (SIGCONT and SIGTSTP cancel each other, so
//! one of those two), and a final SIGTERM ends it with 143. The relay merges
//! signals that arrive together, real-time ones included, so counts are not
//! compared with what was sent.

use crate::support::{
    REACT, RUN_TIMEOUT, SIGTERM, fd_count, kill, python, spawn, status_number, tandem, temp_dir,
    wait_until,
};
use std::fs;
use std::path::Path;

/// How many signals the storm sends.
const STORM: usize = 10_000;

/// The counting app: it counts each signal given as an argument (a Python
/// handler runs once for signals that arrive together, so counts are lower
/// bounds), announces itself in `DIR/ready`, and every 50 ms rewrites
/// `DIR/counts` (`sig count` lines; a wake-up per signal would miss those that
/// arrive while it writes). Python runs pending handlers in signal-number order,
/// so a SIGTERM that came once `DIR/stop` exists is acted on after them all, at
/// the next write: the counts are written, then it dies by that SIGTERM.
const COUNTER: &str = r#"
import os, signal, sys, time
d, sigs = sys.argv[1], [int(s) for s in sys.argv[2:]]
counts = dict((s, 0) for s in sigs)
stopping = False
def on_signal(n, _):
    global stopping
    counts[n] += 1
    if n == signal.SIGTERM and os.path.exists(os.path.join(d, 'stop')):
        stopping = True
def write_counts():
    with open(os.path.join(d, 'counts.tmp'), 'w') as f:
        for s in sigs:
            f.write('%d %d\n' % (s, counts[s]))
    os.rename(os.path.join(d, 'counts.tmp'), os.path.join(d, 'counts'))
for s in sigs:
    signal.signal(s, on_signal)
with open(os.path.join(d, 'ready.tmp'), 'w') as f:
    f.write(str(os.getpid()))
os.rename(os.path.join(d, 'ready.tmp'), os.path.join(d, 'ready'))
while True:
    time.sleep(0.05)
    write_counts()
    if stopping:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
"#;

/// The storm's mix: the terminating signals, job control, the usual app signals
/// and three real-time ones (queued, not merged, by the kernel).
fn mix() -> Vec<i32> {
    vec![
        libc::SIGHUP,
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGTERM,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
        libc::SIGWINCH,
        libc::SIGCONT,
        libc::SIGTSTP,
        libc::SIGURG,
        libc::SIGPROF,
        libc::SIGRTMIN(),
        libc::SIGRTMIN() + 3,
        libc::SIGRTMAX(),
    ]
}

/// `(fds, threads)` of `pid`.
fn footprint(pid: i32) -> (Option<usize>, Option<u64>) {
    (fd_count(pid), status_number(pid, "Threads"))
}

/// `sig count` lines of the app's `counts` file.
fn read_counts(dir: &Path) -> Vec<(i32, u64)> {
    fs::read_to_string(dir.join("counts"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (sig, n) = l.split_once(' ')?;
            Some((sig.parse().ok()?, n.parse().ok()?))
        })
        .collect()
}

#[test]
fn ten_thousand_mixed_signals_reach_the_app_without_crash_or_leak() {
    let Some(python) = python() else { return };
    let dir = temp_dir("storm");
    let sigs = mix();
    let mut cmd = tandem();
    cmd.arg(&python)
        .args(["-c", COUNTER])
        .arg(&dir)
        .args(sigs.iter().map(i32::to_string));
    let mut app = spawn(&mut cmd);
    let ready = wait_until(REACT, || dir.join("ready").exists());
    assert!(ready, "the app did not start\n{}", app.stderr_so_far());
    let pid = app.pid();
    let before = footprint(pid);

    // A fixed shuffle: sig i of the storm is mix[(i * 7 + i / 15) % len].
    for i in 0..STORM {
        let sig = sigs[(i * 7 + i / sigs.len()) % sigs.len()];
        kill(pid, sig);
    }
    assert!(
        app.is_running(),
        "tandem ended during the storm\n{}",
        app.stderr_so_far()
    );
    // The relay may still be working through the storm; its footprint settles back.
    let mut after = footprint(pid);
    let settled = wait_until(REACT, || {
        after = footprint(pid);
        after == before
    });
    assert!(
        settled,
        "tandem's (fds, threads) went from {before:?} to {after:?}\n{}",
        app.stderr_so_far()
    );

    // The app may be far behind under load: wait (with a hang guard) until each
    // kind has reached it, then end it.
    let pair = [libc::SIGCONT, libc::SIGTSTP];
    let count = |counts: &[(i32, u64)], sig: i32| {
        counts
            .iter()
            .find(|(s, _)| *s == sig)
            .map_or(0, |(_, n)| *n)
    };
    let all_arrived = |counts: &[(i32, u64)]| {
        counts.len() == sigs.len()
            && counts.iter().all(|(s, n)| pair.contains(s) || *n >= 1)
            && count(counts, libc::SIGCONT) + count(counts, libc::SIGTSTP) >= 1
    };
    let mut seen = Vec::new();
    let arrived = wait_until(REACT, || {
        seen = read_counts(&dir);
        all_arrived(&seen)
    });
    fs::write(dir.join("stop"), "").expect("write stop");
    app.signal(SIGTERM);
    let out = app.wait(RUN_TIMEOUT);
    assert_eq!(out.code, Some(128 + SIGTERM), "{}", out.dump());
    let counts = read_counts(&dir);
    // Generating a stop signal discards a pending SIGCONT and SIGCONT discards a
    // pending stop signal (POSIX; at tandem and at the app alike), so of that
    // pair only one is sure to arrive. Every other kind must.
    assert!(
        arrived && all_arrived(&counts),
        "not every kind reached the app within {REACT:?}: {seen:?}, at the end {counts:?}\n{}",
        out.dump()
    );
    let total: u64 = counts.iter().map(|(_, n)| n).sum();
    eprintln!("storm: {STORM} signals sent, the app's handlers ran {total} times: {counts:?}");
}
