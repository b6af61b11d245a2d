//! Idle (SPEC §4): while the app runs, tandem does no work (no timers, no polling,
//! no wake-ups) and has at most two threads.

use crate::support::{
    REACT, spawn, status_field, tandem, task_status_number, temp_dir, wait_until,
};
use std::fs;
use std::thread;
use std::time::Duration;

/// How long tandem is watched while the app sleeps.
const WINDOW: Duration = Duration::from_secs(3);
/// Context switches allowed in the window: "near zero", not zero, so a stray
/// page fault or scheduler migration on a loaded box does not fail the test.
const MAX_SWITCHES: u64 = 2;

/// Voluntary plus involuntary context switches of every thread of `pid`.
fn context_switches(pid: i32) -> u64 {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|task| task.file_name().to_str()?.parse::<i32>().ok())
        .map(|tid| {
            let field = |name| task_status_number(pid, tid, name).unwrap_or(0);
            field("voluntary_ctxt_switches") + field("nonvoluntary_ctxt_switches")
        })
        .sum()
}

#[test]
fn tandem_sleeps_with_at_most_two_threads_while_the_app_runs() {
    let dir = temp_dir("idle");
    let marker = dir.join("started");
    let mut cmd = tandem();
    cmd.args(["sh", "-c", "touch \"$0\"; exec sleep 30"])
        .arg(&marker);
    let mut app = spawn(&mut cmd);
    let pid = app.pid();
    assert!(
        wait_until(REACT, || marker.exists()),
        "the app did not start\n{}",
        app.stderr_so_far()
    );
    // Let the spawn's last steps (logging, the switch to `waitid`) settle: the
    // count must stop moving for a moment before the window starts.
    let mut last = context_switches(pid);
    let settled = wait_until(REACT, || {
        thread::sleep(Duration::from_millis(100));
        let now = context_switches(pid);
        std::mem::replace(&mut last, now) == now
    });
    assert!(settled, "tandem never went quiet: {last} switches so far");
    let before = context_switches(pid);
    thread::sleep(WINDOW);
    let after = context_switches(pid);
    let threads = status_field(pid, "Threads");
    assert!(app.is_running(), "the app ended before the window did");
    assert!(
        after - before <= MAX_SWITCHES,
        "tandem woke up {} times in {WINDOW:?}",
        after - before
    );
    let threads: u32 = threads.and_then(|t| t.parse().ok()).unwrap_or(0);
    assert!(
        (1..=2).contains(&threads),
        "tandem has {threads} threads while the app runs"
    );
    // SIGTERM is relayed to the sleep, which ends the run with 128 + 15.
    app.signal(libc::SIGTERM);
    let out = app.wait(REACT);
    assert_eq!(out.code, Some(143), "{}", out.dump());
}
