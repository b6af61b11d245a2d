//! The readiness kinds beside HTTP (SPEC §3), against real listeners, real unix
//! sockets and real files: a port that opens late (IPv4 and IPv6), a socket that
//! appears late, a stale socket file, a file another process writes; each
//! connection closed at once with nothing sent; mixed with HTTP; the timeouts,
//! `--wait-only`, the progress line and the termination message naming each
//! check; and every bad value refused before anything is contacted.

use crate::support::{
    HELD_OPEN, LatePort, Out, RUN_TIMEOUT, Script, accepted, app_touching, prereq::skip, run,
    spawn, start, tandem, temp_dir, unix_listener, wait_until,
};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

/// How long each late listener or file waits before it appears.
const LATE: Duration = Duration::from_millis(400);

/// Runs `cmd` with an app that creates `marker`.
fn run_with_app(cmd: &mut Command, marker: &Path) -> Out {
    app_touching(cmd, marker);
    run(cmd, RUN_TIMEOUT)
}

/// The moment `path` was last modified, as an `Instant` of this process.
fn modified_at(path: &Path) -> Instant {
    let age = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .map(|t| t.elapsed().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Instant::now() - age
}

/// Appends an app that creates `marker`, then outlives a connection left open
/// ([`HELD_OPEN`]), so a connection tandem did not close is seen as such.
fn app_touching_then_staying(cmd: &mut Command, marker: &Path) {
    let stay = format!(": > \"$1\"; sleep {}", (HELD_OPEN * 2).as_secs_f32());
    cmd.args(["sh", "-c", &stay, "sh"]).arg(marker);
}

/// Asserts the listener saw exactly one connection, once it listened (`since`),
/// closed with nothing sent.
fn assert_one_silent_connection(seen: &[crate::support::Accepted], since: Instant, out: &Out) {
    assert_eq!(seen.len(), 1, "{seen:?}\n{}", out.dump());
    assert!(seen[0].at >= since, "{seen:?}\n{}", out.dump());
    assert_eq!(
        seen[0].bytes_before_close,
        Some(0),
        "tandem sent bytes or left the connection open\n{}",
        out.dump()
    );
}

#[test]
fn a_tcp_port_that_opens_late_starts_the_app_after_one_silent_connection() {
    let mut port = LatePort::v4();
    let marker = temp_dir("tcp-late").join("app-ran");
    let url = format!("tcp://127.0.0.1:{}", port.port());
    let mut cmd = tandem();
    cmd.args(["--ready", &url]);
    app_touching_then_staying(&mut cmd, &marker);
    let running = spawn(&mut cmd);
    thread::sleep(LATE);
    assert!(!marker.exists(), "the app started before the port opened");
    let opened = Instant::now();
    port.listen();
    let out = running.wait(RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(marker.exists(), "{}", out.dump());
    assert!(
        modified_at(&marker) >= opened - Duration::from_millis(20),
        "{}",
        out.dump()
    );
    wait_until(Duration::from_secs(5), || !accepted(&port.log).is_empty());
    assert_one_silent_connection(&accepted(&port.log), opened, &out);
    assert!(
        out.stderr.contains(&format!("waiting for {url}")),
        "{}",
        out.dump()
    );
}

#[test]
fn an_ipv6_port_is_waited_for_in_brackets() {
    let mut port = match LatePort::v6() {
        Ok(port) => port,
        Err(e) => return skip("an IPv6 loopback (::1)", &e.to_string()),
    };
    let listening = Instant::now();
    port.listen();
    let marker = temp_dir("tcp-v6").join("app-ran");
    let url = format!("tcp://[::1]:{}", port.port());
    let mut cmd = tandem();
    cmd.env("TANDEM_READY_URLS", &url);
    app_touching_then_staying(&mut cmd, &marker);
    let out = run(&mut cmd, RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(marker.exists(), "{}", out.dump());
    wait_until(Duration::from_secs(5), || !accepted(&port.log).is_empty());
    assert_one_silent_connection(&accepted(&port.log), listening, &out);
}

#[test]
fn a_unix_socket_that_appears_late_starts_the_app_after_one_silent_connection() {
    let dir = temp_dir("unix-late");
    let socket = dir.join("sidecar.sock");
    let marker = dir.join("app-ran");
    let mut cmd = tandem();
    cmd.arg("--ready")
        .arg(format!("unix://{}", socket.display()));
    app_touching(&mut cmd, &marker);
    let running = spawn(&mut cmd);
    thread::sleep(LATE);
    assert!(
        !marker.exists(),
        "the app started before the socket existed"
    );
    let bound = Instant::now();
    let log = unix_listener(&socket);
    let out = running.wait(RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(
        modified_at(&marker) >= bound - Duration::from_millis(20),
        "{}",
        out.dump()
    );
    wait_until(Duration::from_secs(5), || !accepted(&log).is_empty());
    assert_one_silent_connection(&accepted(&log), bound, &out);
}

#[test]
fn a_stale_socket_file_is_not_ready() {
    let dir = temp_dir("unix-stale");
    let socket = dir.join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&socket).expect("bind"));
    assert!(
        socket.exists(),
        "the socket file stays after its listener closed"
    );
    let marker = dir.join("app-ran");
    let url = format!("unix://{}", socket.display());
    let out = run_with_app(
        tandem().args(["--ready", &url, "--fail-timeout", "2500ms"]),
        &marker,
    );
    assert_eq!(out.code, Some(69), "{}", out.dump());
    assert!(!marker.exists(), "{}", out.dump());
    assert!(
        out.stderr.contains(&format!("{url}: refused")),
        "the progress line should name the socket and `refused`\n{}",
        out.dump()
    );
}

#[test]
fn a_file_written_later_by_another_process_starts_the_app() {
    let dir = temp_dir("file-late");
    let flag = dir.join("secrets").join("db");
    let marker = dir.join("app-ran");
    let mut cmd = tandem();
    cmd.arg("--ready").arg(format!("file://{}", flag.display()));
    app_touching(&mut cmd, &marker);
    let running = spawn(&mut cmd);
    // Another process makes the directory, then the file, as a sidecar would.
    let writer = Command::new("sh")
        .args([
            "-c",
            "sleep 0.4; mkdir -p \"${1%/*}\"; echo secret > \"$1\"",
            "sh",
        ])
        .arg(&flag)
        .status()
        .expect("run the writer");
    assert!(writer.success());
    let out = running.wait(RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(
        modified_at(&marker) >= modified_at(&flag),
        "the app started before the file was written\n{}",
        out.dump()
    );
}

#[test]
fn every_kind_and_http_together_must_all_be_ready() {
    let dir = temp_dir("mixed");
    let http = start(Script::generic().ready_after(Duration::from_millis(200)));
    let mut port = LatePort::v4();
    let socket = dir.join("s.sock");
    let flag = dir.join("flag");
    let marker = dir.join("app-ran");
    let mut cmd = tandem();
    cmd.arg("--ready")
        .arg(format!("{}/up,tcp://localhost:{}", http.url(), port.port()))
        .arg("--ready")
        .arg(format!("unix://{}", socket.display()))
        .env(
            "GENERIC_READY_ENDPOINTS",
            format!("file://{}", flag.display()),
        );
    app_touching(&mut cmd, &marker);
    let running = spawn(&mut cmd);
    thread::sleep(LATE);
    port.listen();
    let _socket_log = unix_listener(&socket);
    thread::sleep(LATE);
    assert!(!marker.exists(), "the app started before the file existed");
    let written = Instant::now();
    std::fs::write(&flag, "").expect("write the flag");
    let out = running.wait(RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump_with(&[&http]));
    assert!(
        modified_at(&marker) >= written - Duration::from_millis(20),
        "{}",
        out.dump()
    );
    assert!(http.count("GET", "/up") >= 1, "{}", out.dump_with(&[&http]));
    assert_eq!(accepted(&port.log).len(), 1, "{}", out.dump());
}

#[test]
fn progress_and_the_termination_message_name_each_check_and_its_last_result() {
    let dir = temp_dir("progress");
    let port = LatePort::v4();
    let flag = dir.join("never");
    let socket = dir.join("never.sock");
    let log = dir.join("termination-log");
    let tcp = format!("tcp://127.0.0.1:{}", port.port());
    let file = format!("file://{}", flag.display());
    let unix = format!("unix://{}", socket.display());
    let out = run(
        tandem()
            .env("TANDEM_TERMINATION_LOG", &log)
            .env("TANDEM_READY_URLS", format!("{tcp},{file},{unix}"))
            .args(["--wait-only", "--fail-timeout", "2500ms"]),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(69), "{}", out.dump());
    let wanted = format!("{tcp}: refused, {file}: missing, {unix}: missing");
    let progress = out
        .stderr
        .lines()
        .find(|line| line.contains("still waiting"))
        .unwrap_or_else(|| panic!("no progress line\n{}", out.dump()));
    assert!(progress.contains(&wanted), "{progress}\n{}", out.dump());
    let message = std::fs::read_to_string(&log).expect("the termination message");
    assert!(
        message.contains("not ready within 2.5s (--fail-timeout/QUIT_WITHOUT_ENVOY_TIMEOUT)")
            && message.contains(&wanted),
        "{message}"
    );
}

#[test]
fn wait_only_exits_0_once_a_file_exists_and_the_wait_timeout_runs_the_app_anyway() {
    let dir = temp_dir("wait-only");
    let flag = dir.join("flag");
    std::fs::write(&flag, "").expect("write the flag");
    let out = run(
        tandem()
            .arg("--ready")
            .arg(format!("file://{}", flag.display()))
            .arg("--wait-only"),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{}", out.dump());

    let port = LatePort::v4();
    let marker = dir.join("app-ran");
    let out = run_with_app(
        tandem().args([
            "--ready",
            &format!("tcp://127.0.0.1:{}", port.port()),
            "--wait-timeout",
            "500ms",
        ]),
        &marker,
    );
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(marker.exists(), "{}", out.dump());
    assert!(
        out.stderr.contains("not ready within 500ms"),
        "{}",
        out.dump()
    );
}

#[test]
fn every_bad_value_exits_64_before_anything_is_contacted_or_started() {
    let cases: &[(&str, Option<&str>)] = &[
        ("postgres:5432", Some("tcp://postgres:5432")),
        ("/vault/secrets/db", Some("file:///vault/secrets/db")),
        ("file://vault/secrets/db", Some("file:///vault/secrets/db")),
        ("redis://127.0.0.1:6379", None),
        ("tcp://127.0.0.1", None),
        ("tcp://127.0.0.1:0", None),
        ("tcp://127.0.0.1:65536", None),
        ("unix://run/dapr.sock", Some("unix:///run/dapr.sock")),
        ("unix://", None),
        ("file://", None),
    ];
    let mut port = LatePort::v4();
    port.listen();
    let good = format!("tcp://127.0.0.1:{}", port.port());
    for (bad, fix) in cases {
        for via_variable in [false, true] {
            let marker: PathBuf = temp_dir("bad-kind").join("app-ran");
            let mut cmd = tandem();
            let name = if via_variable {
                cmd.env("TANDEM_READY_URLS", format!("{good},{bad}"));
                "TANDEM_READY_URLS"
            } else {
                cmd.args(["--ready", &good, "--ready", bad]);
                "--ready"
            };
            let out = run_with_app(&mut cmd, &marker);
            assert_eq!(out.code, Some(64), "{bad}\n{}", out.dump());
            assert!(!marker.exists(), "{bad}: the app ran\n{}", out.dump());
            let lines: Vec<&str> = out.stderr.lines().collect();
            assert_eq!(lines.len(), 1, "{bad}\n{}", out.dump());
            assert!(
                lines[0].contains(&format!("error: invalid {name} {bad:?}: expected ")),
                "{}",
                out.dump()
            );
            if let Some(fix) = fix {
                assert!(
                    lines[0].contains(&format!("did you mean {fix}?")),
                    "{}",
                    out.dump()
                );
            }
        }
    }
    thread::sleep(Duration::from_millis(100));
    assert!(
        accepted(&port.log).is_empty(),
        "a valid check was contacted before the bad value was refused"
    );
}
