//! Admin ports that misbehave (SPEC §3: "never hangs tandem and never makes it
//! use unbounded memory"): one that hangs, resets, answers garbage, sends an
//! endless body, trickles, or answers too slowly. With `--fail-timeout 3s` tandem
//! gives up with 69 in about that time (plus the bounded quit phase), and its
//! memory stays small while it polls.

use crate::support::{
    FakeAdmin, Fault, Out, RUN_TIMEOUT, Running, Script, app_touching, spawn, start, status_number,
    tandem_at, temp_dir, wait_until,
};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The `--fail-timeout` of these runs.
const FAIL_TIMEOUT: Duration = Duration::from_secs(3);
/// The `--quit-timeout` of these runs: the quit goes to the same faulty port.
const QUIT_TIMEOUT: Duration = Duration::from_millis(500);
/// Slack on "about that long": the machine is shared and busy.
const SLACK: Duration = Duration::from_secs(4);
/// How long tandem polls a hostile port before its memory is measured.
const EXPOSURE: Duration = Duration::from_secs(2);
/// Bound on tandem's peak resident memory (a debug build idles around 2–4 MiB).
const MAX_RSS_KIB: u64 = 8 * 1024;

/// tandem waiting on `fake` with the fail and quit timeouts above, with an app
/// that would leave a marker; returns the command and the marker's path.
fn against(fake: &FakeAdmin, fail_timeout: Duration) -> (Command, PathBuf) {
    let marker = temp_dir("hostile").join("started");
    let mut cmd = tandem_at(fake);
    cmd.arg("--fail-timeout")
        .arg(format!("{}ms", fail_timeout.as_millis()))
        .arg("--quit-timeout")
        .arg(format!("{}ms", QUIT_TIMEOUT.as_millis()));
    app_touching(&mut cmd, &marker);
    (cmd, marker)
}

/// Asserts the run gave up with 69 in about `fail_timeout` and never started the app.
fn assert_gave_up(out: &Out, fake: &FakeAdmin, marker: &Path, fail_timeout: Duration) {
    assert_eq!(out.code, Some(69), "{}", out.dump_with(&[fake]));
    assert!(!marker.exists(), "the app was started\n{}", out.dump());
    let bound = fail_timeout + QUIT_TIMEOUT + SLACK;
    assert!(
        out.elapsed >= fail_timeout && out.elapsed < bound,
        "took {:?}, expected about {fail_timeout:?}\n{}",
        out.elapsed,
        out.dump_with(&[fake])
    );
}

/// `VmHWM` and `VmRSS` of `pid` in KiB, or `None` once it has exited.
fn memory_kib(pid: i32) -> Option<(u64, u64)> {
    Some((status_number(pid, "VmHWM")?, status_number(pid, "VmRSS")?))
}

/// Lets `running` poll `fake` for [`EXPOSURE`], then asserts its peak memory is small.
fn assert_memory_stays_small(running: &Running, fake: &FakeAdmin, spawned: Instant) {
    // Not a synchronization: the exposure itself is what is tested.
    let exposed = wait_until(EXPOSURE + SLACK, || {
        spawned.elapsed() >= EXPOSURE && fake.requests().len() >= 2
    });
    let memory = memory_kib(running.pid());
    let stderr = running.stderr_so_far();
    assert!(exposed, "tandem polled too little\n{stderr}{}", fake.dump());
    let (peak, now) = memory.unwrap_or_else(|| panic!("tandem is gone\n{stderr}"));
    assert!(
        peak < MAX_RSS_KIB && now < MAX_RSS_KIB,
        "VmHWM {peak} KiB, VmRSS {now} KiB: over {MAX_RSS_KIB} KiB\n{stderr}{}",
        fake.dump()
    );
}

/// Runs tandem against `script` and asserts it gives up in time.
fn assert_survives(script: Script, fail_timeout: Duration) -> FakeAdmin {
    let fake = start(script);
    let (mut cmd, marker) = against(&fake, fail_timeout);
    let out = spawn(&mut cmd).wait(RUN_TIMEOUT);
    assert_gave_up(&out, &fake, &marker, fail_timeout);
    fake
}

/// Like [`assert_survives`], and measures memory while tandem polls.
fn assert_survives_in_small_memory(script: Script) -> FakeAdmin {
    let fake = start(script);
    let (mut cmd, marker) = against(&fake, FAIL_TIMEOUT);
    let spawned = Instant::now();
    let running = spawn(&mut cmd);
    assert_memory_stays_small(&running, &fake, spawned);
    let out = running.wait(RUN_TIMEOUT);
    assert_gave_up(&out, &fake, &marker, FAIL_TIMEOUT);
    fake
}

#[test]
fn hanging_admin_never_hangs_tandem() {
    let fake = assert_survives(Script::envoy().fault(Fault::Hang), FAIL_TIMEOUT);
    assert!(fake.count("GET", "/ready") >= 2, "{}", fake.dump());
}

#[test]
fn resetting_admin_never_hangs_tandem() {
    assert_survives(Script::envoy().fault(Fault::Reset), FAIL_TIMEOUT);
}

#[test]
fn garbage_answers_neither_hang_tandem_nor_grow_its_memory() {
    assert_survives_in_small_memory(Script::envoy().fault(Fault::Garbage));
}

#[test]
fn endless_body_with_200_counts_as_ready_without_hanging_or_growing() {
    // `/ready` is ready on 200 (SPEC §3) whatever follows; tandem must not read on.
    let fake = start(Script::envoy().fault(Fault::EndlessBody));
    let dir = temp_dir("endless-ready");
    let peak = dir.join("peak");
    let mut cmd = tandem_at(&fake);
    cmd.arg("--quit-timeout")
        .arg(format!("{}ms", QUIT_TIMEOUT.as_millis()))
        // The app reads tandem's (its parent's) peak memory after the wait.
        .args(["sh", "-c", "grep VmHWM /proc/$PPID/status > \"$1\"", "sh"])
        .arg(&peak);
    let out = spawn(&mut cmd).wait(RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump_with(&[&fake]));
    assert!(
        out.elapsed < QUIT_TIMEOUT + SLACK,
        "took {:?}\n{}",
        out.elapsed,
        out.dump_with(&[&fake])
    );
    let line = std::fs::read_to_string(&peak).unwrap_or_default();
    let kib: u64 = line
        .trim()
        .strip_prefix("VmHWM:")
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .and_then(|kib| kib.trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in {line:?}\n{}", out.dump()));
    assert!(kib < MAX_RSS_KIB, "VmHWM {kib} KiB\n{}", out.dump());
}

#[test]
fn trickling_admin_never_hangs_tandem() {
    assert_survives(Script::envoy().fault(Fault::Trickle), FAIL_TIMEOUT);
}

#[test]
fn answers_slower_than_the_request_timeout_are_not_ready() {
    // Ready at once, but every answer comes after the 1 s per-request timeout.
    let fake = assert_survives(
        Script::envoy().delay(Duration::from_millis(1500)),
        Duration::from_secs(2),
    );
    assert!(fake.count("GET", "/ready") >= 1, "{}", fake.dump());
}

#[test]
fn hanging_ready_does_not_fall_back_to_server_info() {
    // Only a 404 from /ready means "an Envoy before /ready" (SPEC §3); a hang is
    // just "not yet", even though /server_info would say LIVE.
    let fake = assert_survives(
        Script::envoy().fault_on("/ready", Fault::Hang),
        Duration::from_millis(1500),
    );
    assert_eq!(fake.count("GET", "/server_info"), 0, "{}", fake.dump());
}

#[test]
fn endless_server_info_after_a_404_ready_stays_small() {
    let fake = assert_survives_in_small_memory(
        Script::envoy()
            .status_override("/ready", 404)
            .fault_on("/server_info", Fault::EndlessBody),
    );
    assert!(fake.count("GET", "/server_info") >= 1, "{}", fake.dump());
}

#[test]
fn garbage_server_info_after_a_404_ready_is_not_ready() {
    let fake = assert_survives(
        Script::envoy()
            .status_override("/ready", 404)
            .fault_on("/server_info", Fault::Garbage),
        Duration::from_millis(1500),
    );
    assert!(fake.count("GET", "/server_info") >= 1, "{}", fake.dump());
}
