//! tandem against the real Envoy (the binary in `TANDEM_TEST_ENVOY`, pinned by
//! `make envoy`): every conversation the fake sidecar imitates, held once with the
//! server users run. Each Envoy gets a bootstrap of its own, its admin and
//! listeners on loopback (ephemeral ports, except the fixed ports of `--mesh envoy`
//! and of the Istio layout), and an admin access log from which the tests read
//! every request tandem sent it. Most scenarios run on `127.0.0.1` and on `[::1]`.
//!
//! Without `TANDEM_TEST_ENVOY` (or without IPv6, or with a fixed port taken) a
//! test prints why it skips; under `CI=true` it fails instead.

use crate::support::envoy::{self, Bootstrap, Envoy, Family, PilotAgent};
use crate::support::{
    Out, SIGTERM, fixed_ports_turn, prereq, run, spawn, tandem, temp_dir, wait_until,
};
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::Duration;

/// Hang guard of every tandem run.
const RUN_TIMEOUT: Duration = Duration::from_secs(30);
/// Hang guard on Envoy exiting once it was told to quit.
const EXIT_TIMEOUT: Duration = Duration::from_secs(15);
/// How long tandem is left polling an Envoy that is not there yet, or not
/// ready, before the test looks: not a bound on anything, only time to poll.
const POLLING_TIME: Duration = Duration::from_millis(500);
/// `--fail-timeout` / `--wait-timeout` against an Envoy that never turns ready.
const GIVE_UP_AFTER: &str = "1s";

/// The Envoy binary and, for `family`, whether its loopback works; `None` after
/// printing why the test skips (a failure under `CI=true`).
fn prerequisites(family: Family) -> Option<PathBuf> {
    let binary = envoy::binary()
        .map_err(|why| prereq::skip("the pinned Envoy", &why))
        .ok()?;
    family
        .usable()
        .map_err(|why| prereq::skip("a loopback of this address family", &why))
        .ok()?;
    Some(binary)
}

/// `tandem` aimed at `envoy`'s admin, as a Job's container sets it.
fn tandem_at(envoy: &Envoy) -> Command {
    let mut cmd = tandem();
    cmd.env("ENVOY_ADMIN_API", envoy.admin_url());
    cmd
}

/// Appends an app that creates `marker` and exits with `code`.
fn app_marking(cmd: &mut Command, marker: &Path, code: i32) {
    cmd.args(["sh", "-c", ": > \"$1\"; exit \"$2\"", "sh"])
        .arg(marker)
        .arg(code.to_string());
}

/// tandem's run and Envoy's side of it, for assertion messages.
fn dump(out: &Out, envoy: &Envoy) -> String {
    out.dump() + &envoy.dump()
}

/// Asserts that Envoy exits cleanly, having had exactly one `POST /quitquitquit`
/// from tandem.
fn assert_quit_once(envoy: &mut Envoy, out: &Out) {
    let status = envoy.wait_exit(EXIT_TIMEOUT);
    assert!(
        status.is_some_and(|s| s.success()),
        "Envoy did not exit cleanly after the quit\n{}",
        dump(out, envoy)
    );
    assert_eq!(
        envoy.count("POST", "/quitquitquit", Some(200)),
        1,
        "tandem quit Envoy once\n{}",
        dump(out, envoy)
    );
}

/// Asserts that tandem's `GET /ready` got `status` from Envoy at least `times`
/// times (read the log after Envoy has exited).
fn assert_polled(envoy: &Envoy, out: &Out, status: u16, times: usize) {
    assert!(
        envoy.count("GET", "/ready", Some(status)) >= times,
        "tandem's GET /ready got {status} from Envoy fewer than {times} times\n{}",
        dump(out, envoy)
    );
}

/// Asserts that tandem sent Envoy no `method path` request.
fn assert_never_sent(envoy: &Envoy, out: &Out, method: &str, path: &str) {
    assert_eq!(
        envoy.count(method, path, None),
        0,
        "tandem sent Envoy {method} {path}\n{}",
        dump(out, envoy)
    );
}

fn envoy_started_after_tandem(family: Family) {
    let Some(binary) = prerequisites(family) else {
        return;
    };
    let dir = temp_dir("envoy-late");
    let marker = dir.join("app-ran");
    let port = family.free_port();
    let mut cmd = tandem();
    // The app marks its start, asks Envoy's /ready itself (as the test harness, so
    // Envoy's log tells it from tandem's polls) and prints the status line: Envoy
    // was ready when the app started, since a LIVE Envoy stays LIVE.
    cmd.env("ENVOY_ADMIN_API", family.url(port)).args([
        "bash",
        "-c",
        ": > \"$1\"; exec 3<>\"/dev/tcp/$2/$3\" || exit 1
         printf 'GET /ready HTTP/1.1\\r\\nHost: envoy\\r\\nUser-Agent: %s\\r\\nConnection: close\\r\\n\\r\\n' \"$4\" >&3
         head -n 1 <&3 | tr -d '\\r'; exit 7",
        "bash",
        &marker.display().to_string(),
        &family.ip().to_string(),
        &port.to_string(),
        envoy::HARNESS_AGENT,
    ]);
    let running = spawn(&mut cmd);
    thread::sleep(POLLING_TIME);
    assert!(
        !marker.exists(),
        "the app started with no Envoy listening\n{}",
        running.wait(RUN_TIMEOUT).dump()
    );
    let mut envoy = Envoy::spawn(&binary, &dir, &Bootstrap::new(family).admin_port(port));
    let out = running.wait(RUN_TIMEOUT);
    assert_eq!(
        out.code,
        Some(7),
        "the app's code is kept\n{}",
        dump(&out, &envoy)
    );
    assert!(marker.exists(), "the app ran\n{}", dump(&out, &envoy));
    assert_eq!(
        out.stdout_str(),
        "HTTP/1.1 200 OK\n",
        "Envoy's /ready was 200 when the app started\n{}",
        dump(&out, &envoy)
    );
    assert_quit_once(&mut envoy, &out);
    assert_polled(&envoy, &out, 200, 1);
}

#[test]
fn envoy_started_after_tandem_gates_the_app_and_is_quit_ipv4() {
    envoy_started_after_tandem(Family::V4);
}

#[test]
fn envoy_started_after_tandem_gates_the_app_and_is_quit_ipv6() {
    envoy_started_after_tandem(Family::V6);
}

/// A TCP server on `family`'s loopback that answers the first line of one
/// connection with `pong LINE`; the thread returns what it read.
fn upstream(family: Family) -> (SocketAddr, thread::JoinHandle<String>) {
    let listener = TcpListener::bind((family.ip(), 0)).expect("bind the upstream");
    let addr = listener.local_addr().expect("upstream address");
    let server = thread::spawn(move || {
        let Ok((stream, _)) = listener.accept() else {
            return String::new();
        };
        let _ = stream.set_read_timeout(Some(RUN_TIMEOUT));
        let mut line = String::new();
        let mut reader = BufReader::new(&stream);
        if reader.read_line(&mut line).is_err() {
            return String::new();
        }
        let mut stream = &stream;
        let _ = write!(stream, "pong {line}");
        line
    });
    (addr, server)
}

fn app_traffic_goes_through_envoy(family: Family) {
    let Some(binary) = prerequisites(family) else {
        return;
    };
    let (upstream_addr, upstream) = upstream(family);
    let dir = temp_dir("envoy-traffic");
    let mut envoy = Envoy::start(
        &binary,
        &dir,
        &Bootstrap::new(family).proxy_to(upstream_addr),
    );
    let listener = SocketAddr::new(family.ip(), envoy.listener_port());
    // The app knows only Envoy's listener; bash opens it with /dev/tcp.
    let out = run(
        tandem_at(&envoy).args([
            "bash",
            "-c",
            "exec 3<>\"/dev/tcp/$1/$2\" && echo ping >&3 && read -r answer <&3 && echo \"$answer\"",
            "bash",
            &listener.ip().to_string(),
            &listener.port().to_string(),
        ]),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{}", dump(&out, &envoy));
    assert_eq!(
        out.stdout_str(),
        "pong ping\n",
        "the upstream's answer came back through Envoy\n{}",
        dump(&out, &envoy)
    );
    assert_eq!(
        upstream.join().expect("upstream thread"),
        "ping\n",
        "the upstream got the app's line\n{}",
        dump(&out, &envoy)
    );
    assert_quit_once(&mut envoy, &out);
}

#[test]
fn app_traffic_goes_through_envoys_listener_to_the_upstream_ipv4() {
    app_traffic_goes_through_envoy(Family::V4);
}

#[test]
fn app_traffic_goes_through_envoys_listener_to_the_upstream_ipv6() {
    app_traffic_goes_through_envoy(Family::V6);
}

/// An Envoy that stays `INITIALIZING`; asserts it answers `/ready` with 503.
fn never_ready_envoy(binary: &Path, dir: &Path, family: Family) -> Envoy {
    let envoy = Envoy::start(binary, dir, &Bootstrap::new(family).never_ready());
    let status = envoy.ready_status();
    assert!(
        matches!(status, Ok(503)),
        "an Envoy waiting for its xDS server answers /ready with 503, got {status:?}\n{}",
        envoy.dump()
    );
    envoy
}

/// tandem giving up on an Envoy that never initializes after `flag`
/// [`GIVE_UP_AFTER`]: it exits `code`, the app ran or not as `app_runs` says, and
/// Envoy was told to quit either way.
fn give_up_on_never_ready(family: Family, flag: &str, code: i32, app_runs: bool) {
    let Some(binary) = prerequisites(family) else {
        return;
    };
    let dir = temp_dir("envoy-give-up");
    let marker = dir.join("app-ran");
    let mut envoy = never_ready_envoy(&binary, &dir, family);
    let mut cmd = tandem_at(&envoy);
    cmd.args([flag, GIVE_UP_AFTER]);
    app_marking(&mut cmd, &marker, 5);
    let out = run(&mut cmd, RUN_TIMEOUT);
    assert_eq!(out.code, Some(code), "{}", dump(&out, &envoy));
    assert_eq!(
        marker.exists(),
        app_runs,
        "whether the app ran\n{}",
        dump(&out, &envoy)
    );
    assert_quit_once(&mut envoy, &out);
    assert_polled(&envoy, &out, 503, 2);
    assert_eq!(
        envoy.count("GET", "/ready", Some(200)),
        0,
        "Envoy never initialized\n{}",
        dump(&out, &envoy)
    );
}

#[test]
fn never_initializing_envoy_with_fail_timeout_exits_69_and_quits_it_ipv4() {
    give_up_on_never_ready(Family::V4, "--fail-timeout", 69, false);
}

#[test]
fn never_initializing_envoy_with_fail_timeout_exits_69_and_quits_it_ipv6() {
    give_up_on_never_ready(Family::V6, "--fail-timeout", 69, false);
}

#[test]
fn never_initializing_envoy_with_wait_timeout_starts_the_app_anyway_ipv4() {
    give_up_on_never_ready(Family::V4, "--wait-timeout", 5, true);
}

#[test]
fn never_initializing_envoy_with_wait_timeout_starts_the_app_anyway_ipv6() {
    give_up_on_never_ready(Family::V6, "--wait-timeout", 5, true);
}

fn sigterm_while_waiting(family: Family) {
    let Some(binary) = prerequisites(family) else {
        return;
    };
    let dir = temp_dir("envoy-sigterm-wait");
    let marker = dir.join("app-ran");
    let mut envoy = never_ready_envoy(&binary, &dir, family);
    let mut cmd = tandem_at(&envoy);
    app_marking(&mut cmd, &marker, 0);
    let mut running = spawn(&mut cmd);
    // The access log reaches the disk every 50 ms: a 503 there proves tandem is
    // polling this Envoy.
    let polled = wait_until(RUN_TIMEOUT, || envoy.count("GET", "/ready", Some(503)) >= 2);
    assert!(polled, "tandem never polled Envoy\n{}", envoy.dump());
    running.signal(SIGTERM);
    let out = running.wait(RUN_TIMEOUT);
    assert_eq!(out.code, Some(128 + SIGTERM), "{}", dump(&out, &envoy));
    assert!(
        !marker.exists(),
        "the app never started\n{}",
        dump(&out, &envoy)
    );
    assert_quit_once(&mut envoy, &out);
}

#[test]
fn sigterm_while_waiting_for_envoy_quits_it_and_exits_143_ipv4() {
    sigterm_while_waiting(Family::V4);
}

#[test]
fn sigterm_while_waiting_for_envoy_quits_it_and_exits_143_ipv6() {
    sigterm_while_waiting(Family::V6);
}

fn signal_relayed_while_app_runs(family: Family) {
    let Some(binary) = prerequisites(family) else {
        return;
    };
    let dir = temp_dir("envoy-relay");
    let marker = dir.join("app-running");
    let mut envoy = Envoy::start(&binary, &dir, &Bootstrap::new(family));
    let mut running = spawn(tandem_at(&envoy).args([
        "sh",
        "-c",
        "trap 'echo got TERM; exit 3' TERM; : > \"$1\"; while :; do sleep 0.05; done",
        "sh",
        &marker.display().to_string(),
    ]));
    assert!(
        wait_until(RUN_TIMEOUT, || marker.exists()),
        "the app never started\n{}",
        envoy.dump()
    );
    assert!(
        envoy.is_running(),
        "Envoy runs beside the app\n{}",
        envoy.dump()
    );
    running.signal(SIGTERM);
    let out = running.wait(RUN_TIMEOUT);
    assert_eq!(
        out.code,
        Some(3),
        "the app's trap ran\n{}",
        dump(&out, &envoy)
    );
    assert_eq!(out.stdout_str(), "got TERM\n", "{}", dump(&out, &envoy));
    assert_quit_once(&mut envoy, &out);
}

#[test]
fn signal_is_relayed_to_the_app_while_envoy_runs_ipv4() {
    signal_relayed_while_app_runs(Family::V4);
}

#[test]
fn signal_is_relayed_to_the_app_while_envoy_runs_ipv6() {
    signal_relayed_while_app_runs(Family::V6);
}

/// Whether `port` is free on `family`'s loopback; reports it through
/// [`prereq::skip`] when it is not.
fn fixed_port_free(family: Family, port: u16) -> bool {
    match TcpListener::bind((family.ip(), port)) {
        Ok(_) => true,
        Err(err) => {
            let addr = SocketAddr::new(family.ip(), port);
            prereq::skip(&format!("a free {addr}"), &err.to_string());
            false
        }
    }
}

#[test]
fn mesh_envoy_waits_for_and_quits_the_real_envoy_on_9901() {
    let Some(binary) = prerequisites(Family::V4) else {
        return;
    };
    let _turn = fixed_ports_turn();
    if !fixed_port_free(Family::V4, 9901) {
        return;
    }
    let dir = temp_dir("envoy-mesh");
    let mut envoy = Envoy::start(&binary, &dir, &Bootstrap::new(Family::V4).admin_port(9901));
    let out = run(
        tandem().args(["--mesh", "envoy", "sh", "-c", "exit 4"]),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(4), "{}", dump(&out, &envoy));
    assert_quit_once(&mut envoy, &out);
    assert_polled(&envoy, &out, 200, 1);
}

/// `--wait-only` against a ready Envoy or one that never initializes (with
/// `--fail-timeout`): exit `code`, and Envoy left running with no quit sent.
fn wait_only(family: Family, ready: bool, code: i32) {
    let Some(binary) = prerequisites(family) else {
        return;
    };
    let dir = temp_dir("envoy-wait-only");
    let mut envoy = if ready {
        Envoy::start(&binary, &dir, &Bootstrap::new(family))
    } else {
        never_ready_envoy(&binary, &dir, family)
    };
    let out = run(
        tandem_at(&envoy).args(["--wait-only", "--fail-timeout", GIVE_UP_AFTER]),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(code), "{}", dump(&out, &envoy));
    assert!(
        envoy.is_running(),
        "Envoy is left running\n{}",
        dump(&out, &envoy)
    );
    // Stopping Envoy writes out the whole access log.
    envoy.stop();
    if ready {
        assert_polled(&envoy, &out, 200, 1);
    } else {
        assert_polled(&envoy, &out, 503, 2);
    }
    assert_never_sent(&envoy, &out, "POST", "/quitquitquit");
}

#[test]
fn wait_only_exits_0_when_envoy_is_ready_and_leaves_it_running_ipv4() {
    wait_only(Family::V4, true, 0);
}

#[test]
fn wait_only_exits_69_on_fail_timeout_and_never_quits_envoy_ipv6() {
    wait_only(Family::V6, false, 69);
}

fn quit_only(family: Family) {
    let Some(binary) = prerequisites(family) else {
        return;
    };
    let dir = temp_dir("envoy-quit-only");
    let mut envoy = Envoy::start(&binary, &dir, &Bootstrap::new(family));
    let out = run(tandem_at(&envoy).arg("--quit-only"), RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", dump(&out, &envoy));
    assert_quit_once(&mut envoy, &out);
    assert_never_sent(&envoy, &out, "GET", "/ready");
}

#[test]
fn quit_only_stops_the_real_envoy_at_once_ipv4() {
    quit_only(Family::V4);
}

#[test]
fn quit_only_stops_the_real_envoy_at_once_ipv6() {
    quit_only(Family::V6);
}

/// Istio's ports: Envoy's admin on 15000, pilot-agent on 15020.
const ISTIO_ADMIN: u16 = 15000;
const ISTIO_AGENT: u16 = 15020;

fn istio_layout(family: Family) {
    let Some(binary) = prerequisites(family) else {
        return;
    };
    let _turn = fixed_ports_turn();
    if !fixed_port_free(family, ISTIO_ADMIN) || !fixed_port_free(family, ISTIO_AGENT) {
        return;
    }
    let dir = temp_dir("envoy-istio");
    let mut envoy = Envoy::start(
        &binary,
        &dir,
        &Bootstrap::new(family).admin_port(ISTIO_ADMIN),
    );
    let agent = PilotAgent::start(SocketAddr::new(family.ip(), ISTIO_AGENT), envoy.pid())
        .expect("the stand-in pilot-agent listens on 15020");
    let out = run(tandem_at(&envoy).args(["sh", "-c", "exit 6"]), RUN_TIMEOUT);
    let dump = |envoy: &Envoy| {
        format!(
            "{}pilot-agent got: {:?}\n",
            dump(&out, envoy),
            agent.requests()
        )
    };
    assert_eq!(out.code, Some(6), "{}", dump(&envoy));
    assert_eq!(
        agent.requests(),
        ["POST /quitquitquit"],
        "tandem quit Istio through pilot-agent on 15020\n{}",
        dump(&envoy)
    );
    let status = envoy.wait_exit(EXIT_TIMEOUT);
    assert!(
        status.is_some_and(|s| s.success()),
        "pilot-agent stopped Envoy\n{}",
        dump(&envoy)
    );
    assert!(
        envoy.count("GET", "/ready", Some(200)) >= 1,
        "tandem waited for Envoy's own /ready on 15000\n{}",
        dump(&envoy)
    );
    let posts: Vec<_> = envoy
        .admin_requests()
        .into_iter()
        .filter(|req| req.method == "POST")
        .collect();
    assert!(
        posts.is_empty(),
        "tandem never posts to Envoy's own admin in the Istio layout: {posts:?}\n{}",
        dump(&envoy)
    );
}

#[test]
fn istio_layout_quits_through_pilot_agent_never_envoys_own_admin_ipv4() {
    istio_layout(Family::V4);
}

#[test]
fn istio_layout_quits_through_pilot_agent_never_envoys_own_admin_ipv6() {
    istio_layout(Family::V6);
}
