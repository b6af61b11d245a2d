//! Waiting for readiness, seen from outside (SPEC §3, §2): the app starts only once
//! every sidecar is ready and soon after; old Envoys are read through
//! `/server_info`; the wait and fail timeouts, `START_WITHOUT_ENVOY`, and the
//! progress lines. Presets use fixed ports that may be taken on a shared machine,
//! so they are left to the unit tests of `config`.
//!
//! The app records its start with `date +%s%N` (wall clock); the fake's
//! `Instant`s are converted to the same clock, which is exact to microseconds
//! over the few seconds a test lasts.

use crate::support::{
    FakeAdmin, Out, RUN_TIMEOUT, Req, Script, run, spawn, start, tandem, tandem_at, temp_dir,
    wait_until,
};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Slack on "about that long": the machine is shared and busy.
const SLACK: Duration = Duration::from_secs(4);

/// Nanoseconds since the epoch, the unit of `date +%s%N`.
fn wall_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos()
}

/// `at` (in the past) on the wall clock, in nanoseconds since the epoch.
fn wall_ns_of(at: Instant) -> u128 {
    let (now, now_ns) = (Instant::now(), wall_ns());
    now_ns - now.saturating_duration_since(at).as_nanos()
}

/// Runs `cmd` with an app that writes its start time to a new file and exits
/// with `code`; returns the output and that file's path (absent if it never ran).
fn run_timed(cmd: &mut Command, code: i32) -> (Out, PathBuf) {
    let stamp = temp_dir("timed-app").join("started");
    cmd.args(["sh", "-c", "date +%s%N > \"$1\"; exit \"$2\"", "sh"])
        .arg(&stamp)
        .arg(code.to_string());
    (run(cmd, RUN_TIMEOUT), stamp)
}

/// The app's start time written by [`run_timed`]; panics with `out` if it never ran.
fn started_at(stamp: &Path, out: &Out, fakes: &[&FakeAdmin]) -> u128 {
    let text = std::fs::read_to_string(stamp)
        .unwrap_or_else(|e| panic!("the app did not run ({e})\n{}", out.dump_with(fakes)));
    text.trim()
        .parse()
        .unwrap_or_else(|e| panic!("bad stamp {text:?} ({e}): is `date` GNU date?"))
}

/// The first request to `path` that was answered `status`.
fn first_answer(fake: &FakeAdmin, path: &str, status: u16) -> Option<Req> {
    fake.requests()
        .into_iter()
        .find(|req| req.path == path && req.status == Some(status))
}

/// Asserts that the app, started at `app` (wall clock), started after each
/// `(fake, path)` of `checks` first answered 200.
fn assert_started_after_each_200(app: u128, checks: &[(&FakeAdmin, String)], out: &Out) {
    let all: Vec<&FakeAdmin> = checks.iter().map(|(fake, _)| *fake).collect();
    for (fake, path) in checks {
        let ok = first_answer(fake, path, 200)
            .unwrap_or_else(|| panic!("{path} never answered 200\n{}", out.dump_with(&all)));
        assert!(
            app > wall_ns_of(ok.at),
            "the app started before {path} was ready\n{}",
            out.dump_with(&all)
        );
    }
}

fn ms(ns: u128) -> f64 {
    ns as f64 / 1e6
}

#[test]
fn app_never_starts_before_the_sidecar_is_ready() {
    let fake = start(Script::envoy().ready_after(Duration::from_millis(700)));
    let (out, stamp) = run_timed(&mut tandem_at(&fake), 0);
    assert_eq!(out.code, Some(0), "{}", out.dump_with(&[&fake]));
    let app = started_at(&stamp, &out, &[&fake]);
    let ok = first_answer(&fake, "/ready", 200)
        .unwrap_or_else(|| panic!("no 200 from /ready\n{}", out.dump_with(&[&fake])));
    assert!(
        first_answer(&fake, "/ready", 503).is_some(),
        "tandem never saw the sidecar unready\n{}",
        out.dump_with(&[&fake])
    );
    let ready = fake.became_ready_at().expect("fake is ready");
    assert!(
        app > wall_ns_of(ready) && app > wall_ns_of(ok.at),
        "the app started {:.1} ms after the first 200 (negative: before)\n{}",
        ms(app) - ms(wall_ns_of(ok.at)),
        out.dump_with(&[&fake])
    );
}

#[test]
fn old_envoy_without_ready_is_read_through_server_info_live() {
    let fake = start(Script::old_envoy().ready_after(Duration::from_millis(400)));
    let (out, stamp) = run_timed(&mut tandem_at(&fake), 0);
    assert_eq!(out.code, Some(0), "{}", out.dump_with(&[&fake]));
    assert!(
        first_answer(&fake, "/ready", 404).is_some(),
        "{}",
        out.dump_with(&[&fake])
    );
    let ready = fake.became_ready_at().expect("fake is ready");
    let live = fake
        .requests()
        .into_iter()
        .find(|req| req.path == "/server_info" && req.at >= ready)
        .unwrap_or_else(|| panic!("no /server_info once LIVE\n{}", out.dump_with(&[&fake])));
    let app = started_at(&stamp, &out, &[&fake]);
    assert!(
        app > wall_ns_of(live.at),
        "the app started before /server_info said LIVE\n{}",
        out.dump_with(&[&fake])
    );
}

#[test]
fn old_envoy_that_is_not_live_is_not_ready() {
    let fake = start(Script::old_envoy().never_ready());
    let (out, stamp) = run_timed(tandem_at(&fake).args(["--fail-timeout", "600ms"]), 0);
    assert_eq!(out.code, Some(69), "{}", out.dump_with(&[&fake]));
    assert!(!stamp.exists(), "{}", out.dump());
    assert!(
        fake.count("GET", "/server_info") >= 1,
        "{}",
        out.dump_with(&[&fake])
    );
}

#[test]
fn every_ready_url_must_be_ready_and_the_slowest_decides() {
    let fakes = [
        start(Script::generic()),
        start(Script::generic().ready_after(Duration::from_millis(800))),
        start(Script::generic().ready_after(Duration::from_millis(300))),
    ];
    let checks: Vec<(&FakeAdmin, String)> = fakes
        .iter()
        .enumerate()
        .map(|(i, fake)| (fake, format!("/check{i}")))
        .collect();
    let mut cmd = tandem();
    for (fake, path) in &checks {
        cmd.arg("--ready").arg(format!("{}{path}", fake.url()));
    }
    let (out, stamp) = run_timed(&mut cmd, 0);
    let all: Vec<&FakeAdmin> = fakes.iter().collect();
    assert_eq!(out.code, Some(0), "{}", out.dump_with(&all));
    let app = started_at(&stamp, &out, &all);
    assert_started_after_each_200(app, &checks, &out);
}

#[test]
fn tandem_ready_urls_and_the_admin_must_all_be_ready() {
    let admin = start(Script::envoy().ready_after(Duration::from_millis(300)));
    let first = start(Script::generic().ready_after(Duration::from_millis(600)));
    let second = start(Script::generic());
    let mut cmd = tandem_at(&admin);
    cmd.env(
        "TANDEM_READY_URLS",
        format!(" {}/a , {}/b ,", first.url(), second.url()),
    );
    let (out, stamp) = run_timed(&mut cmd, 0);
    let all = [&admin, &first, &second];
    assert_eq!(out.code, Some(0), "{}", out.dump_with(&all));
    let app = started_at(&stamp, &out, &all);
    let checks = [(&admin, "/ready"), (&first, "/a"), (&second, "/b")]
        .map(|(fake, path)| (fake, path.to_owned()));
    assert_started_after_each_200(app, &checks, &out);
}

#[test]
fn wait_timeout_starts_the_app_anyway_with_a_warning() {
    let fake = start(Script::envoy().never_ready());
    let spawned = wall_ns();
    let (out, stamp) = run_timed(tandem_at(&fake).args(["--wait-timeout", "800ms"]), 5);
    assert_eq!(out.code, Some(5), "{}", out.dump_with(&[&fake]));
    let app = started_at(&stamp, &out, &[&fake]);
    let waited = Duration::from_nanos(u64::try_from(app - spawned).unwrap_or(u64::MAX));
    assert!(
        waited >= Duration::from_millis(800) && waited < Duration::from_millis(800) + SLACK,
        "the app started after {waited:?}, expected about 800ms\n{}",
        out.dump()
    );
    assert!(
        out.stderr
            .lines()
            .any(|line| line.contains("warning:") && line.contains("WAIT_FOR_ENVOY_TIMEOUT")),
        "no warning about the abandoned wait\n{}",
        out.dump()
    );
    assert_eq!(fake.quit_requests(), 1, "{}", out.dump_with(&[&fake]));
}

#[test]
fn fail_timeout_exits_69_without_starting_the_app_and_quits() {
    let fake = start(Script::envoy().never_ready());
    let (out, stamp) = run_timed(tandem_at(&fake).args(["--fail-timeout", "800ms"]), 0);
    assert_eq!(out.code, Some(69), "{}", out.dump_with(&[&fake]));
    assert!(!stamp.exists(), "the app was started\n{}", out.dump());
    assert!(
        out.elapsed >= Duration::from_millis(800)
            && out.elapsed < Duration::from_millis(800) + SLACK,
        "{}",
        out.dump()
    );
    assert_eq!(fake.quit_requests(), 1, "{}", out.dump_with(&[&fake]));
}

#[test]
fn fail_timeout_beats_wait_timeout() {
    let fake = start(Script::envoy().never_ready());
    let mut cmd = tandem_at(&fake);
    cmd.env("WAIT_FOR_ENVOY_TIMEOUT", "200ms")
        .env("QUIT_WITHOUT_ENVOY_TIMEOUT", "900ms");
    let (out, stamp) = run_timed(&mut cmd, 0);
    assert_eq!(out.code, Some(69), "{}", out.dump_with(&[&fake]));
    assert!(!stamp.exists(), "the app was started\n{}", out.dump());
    assert_eq!(fake.quit_requests(), 1, "{}", out.dump_with(&[&fake]));
}

#[test]
fn start_without_envoy_starts_at_once_and_still_quits() {
    for (var, args) in [
        (Some(("START_WITHOUT_ENVOY", "true")), &[][..]),
        (Some(("START_WITHOUT_ENVOY", "YES")), &[][..]),
        (None, &["--no-wait"][..]),
    ] {
        let fake = start(Script::envoy().never_ready());
        let mut cmd = tandem_at(&fake);
        cmd
            // Ignored with START_WITHOUT_ENVOY (SPEC §2).
            .env("QUIT_WITHOUT_ENVOY_TIMEOUT", "1ms")
            .envs(var)
            .args(args);
        let (out, stamp) = run_timed(&mut cmd, 0);
        assert_eq!(out.code, Some(0), "{}", out.dump_with(&[&fake]));
        assert!(stamp.exists(), "{}", out.dump());
        assert_eq!(
            fake.count("GET", "/ready"),
            0,
            "tandem waited anyway\n{}",
            out.dump_with(&[&fake])
        );
        assert_eq!(fake.quit_requests(), 1, "{}", out.dump_with(&[&fake]));
    }
}

#[test]
fn app_starts_within_about_one_poll_max_of_readiness() {
    let fake = start(Script::envoy().ready_after(Duration::from_secs(2)));
    let (out, stamp) = run_timed(&mut tandem_at(&fake), 0);
    assert_eq!(out.code, Some(0), "{}", out.dump_with(&[&fake]));
    let requests = fake.requests();
    let first = requests.first().expect("at least one poll");
    assert!(
        first.at.saturating_duration_since(fake.started_at()) < Duration::from_secs(1),
        "polling did not start at once\n{}",
        out.dump_with(&[&fake])
    );
    // The default cap is 80 ms; 600 ms allows for a loaded machine, while an
    // uncapped ×1.5 backoff from 10 ms waits 865 ms between polls by 2 s.
    let longest = requests
        .windows(2)
        .map(|pair| pair[1].at.saturating_duration_since(pair[0].at))
        .max()
        .unwrap_or_default();
    assert!(
        longest < Duration::from_millis(600),
        "{longest:?} between two polls\n{}",
        out.dump_with(&[&fake])
    );
    let ready = wall_ns_of(fake.became_ready_at().expect("fake is ready"));
    let app = started_at(&stamp, &out, &[&fake]);
    // A 60 s backoff (scuttle's) would miss this by far.
    assert!(
        app > ready && app - ready < Duration::from_secs(1).as_nanos(),
        "the app started {:.0} ms after readiness\n{}",
        ms(app) - ms(ready),
        out.dump_with(&[&fake])
    );
}

#[test]
fn progress_is_logged_after_about_two_seconds_of_waiting() {
    let fake = start(Script::envoy().never_ready());
    let spawned = Instant::now();
    let running = spawn(tandem_at(&fake).arg("true"));
    let logged = wait_until(Duration::from_secs(10), || {
        running.stderr_so_far().contains("still waiting")
    });
    let seen = spawned.elapsed();
    let stderr = running.stderr_so_far();
    drop(running);
    assert!(logged, "no progress line\n{stderr}");
    assert!(
        seen >= Duration::from_millis(1950),
        "progress was logged after {seen:?}, before 2s\n{stderr}"
    );
    let first = stderr.lines().next().unwrap_or_default();
    assert!(
        first.contains("waiting for") && first.contains(&fake.url()),
        "the first line should say what is waited for\n{stderr}"
    );
    let progress = stderr
        .lines()
        .find(|line| line.contains("still waiting"))
        .unwrap_or_default();
    assert!(
        progress.contains("503") && progress.contains("polls"),
        "the progress line should give polls and the last answer\n{stderr}"
    );
}

#[test]
fn every_poll_of_a_wait_goes_over_one_kept_alive_connection() {
    let fake = start(Script::envoy().ready_after(Duration::from_millis(1500)));
    let (out, stamp) = run_timed(&mut tandem_at(&fake), 0);
    assert_eq!(out.code, Some(0), "{}", out.dump_with(&[&fake]));
    assert!(stamp.exists(), "{}", out.dump_with(&[&fake]));
    let polls: Vec<Req> = fake
        .requests()
        .into_iter()
        .filter(|req| req.path == "/ready")
        .collect();
    // 1.5 s of polling is well over ten polls, whatever the cap.
    assert!(
        polls.len() > 10,
        "{} polls\n{}",
        polls.len(),
        out.dump_with(&[&fake])
    );
    let first = polls[0].conn;
    assert!(
        polls.iter().all(|req| req.conn == first),
        "polls came over {:?}\n{}",
        polls.iter().map(|req| req.conn).collect::<Vec<_>>(),
        out.dump_with(&[&fake])
    );
}
