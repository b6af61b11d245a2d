//! Stopping the sidecars (SPEC §5), through the real binary against fakes on
//! loopback: which sidecar gets which quit request and when, generic endpoints
//! (concurrent, first, with or without Envoy), the `QUIT_REQUEST_TIMEOUT` bound,
//! the `NEVER_KILL_*` / `GENERIC_QUIT_ONLY` / failure policies, locality of the
//! admin URL, the 15000 → 15020 rule, logging of every result, no redirects, quits
//! after an abandoned wait, and the pilot-agent SIGINT fallback.
//!
//! tandem SIGINTs a visible process named `pilot-agent` instead of POSTing a plain
//! Envoy admin (SPEC §5.2), but skips one of another PID namespace. So the tests
//! that show such a process run their tandem and the fake together in a new PID
//! namespace ([`run_beside_pilot_agent`]): the tandems of concurrent tests, in
//! the test process's namespace, never see it, and this one sees no fake of theirs.

use crate::reaping::state;
use crate::support::{
    FakeAdmin, Fault, Out, Req, SIGTERM, Script, app_touching, closed_port, default_signals,
    fixed_ports_turn, read_retrying, run, spawn, start, tandem, tandem_at, tandem_at_url, temp_dir,
    wait_until,
};
use std::io::Write;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Kill timeout for runs that should take well under a second.
const RUN_TIMEOUT: Duration = Duration::from_secs(20);
/// Bound on socket reads and writes of [`RawServer`].
const RAW_IO_TIMEOUT: Duration = Duration::from_secs(5);

/// How many `POST path` requests `fake` received.
fn posts(fake: &FakeAdmin, path: &str) -> usize {
    fake.count("POST", path)
}

/// The first `POST path` request `fake` received.
fn first_post(fake: &FakeAdmin, path: &str) -> Option<Req> {
    fake.requests()
        .into_iter()
        .find(|req| req.method == "POST" && req.path == path)
}

/// Lines of tandem's stderr that log a quit request.
fn quit_lines(out: &Out) -> Vec<&str> {
    out.stderr
        .lines()
        .filter(|line| line.contains("quit POST"))
        .collect()
}

/// Environment variables for one run.
type Env<'a> = &'a [(&'a str, &'a str)];

/// A plain Envoy admin serving `script`, a generic endpoint, and a tandem with
/// `ENVOY_ADMIN_API` at the admin and `GENERIC_QUIT_ENDPOINTS` at the endpoint's
/// `/quit`; returns `(tandem, admin, endpoint)`.
fn envoy_and_generic(script: Script) -> (Command, FakeAdmin, FakeAdmin) {
    let envoy = start(script);
    let generic = start(Script::generic());
    let mut cmd = tandem_at(&envoy);
    cmd.env("GENERIC_QUIT_ENDPOINTS", format!("{}/quit", generic.url()));
    (cmd, envoy, generic)
}

/// A finished [`run_with_policy`] and its two fakes.
struct PolicyRun {
    out: Out,
    envoy: FakeAdmin,
    generic: FakeAdmin,
    /// The output and both fakes' logs, for assertion messages.
    dump: String,
}

impl PolicyRun {
    /// Quit requests the admin got, POST or GET.
    fn admin_quits(&self) -> usize {
        self.envoy.quit_requests() + self.envoy.count("GET", "/quitquitquit")
    }

    /// Requests the generic endpoint got: nothing polls it, so each is a quit.
    fn generic_quits(&self) -> usize {
        self.generic.requests().len()
    }
}

/// Runs `sh -c 'exit CODE'` with `env` and `args` against [`envoy_and_generic`]
/// of a plain Envoy that is ready at once.
fn run_with_policy(code: i32, env: Env, args: &[&str]) -> PolicyRun {
    let (mut cmd, envoy, generic) = envoy_and_generic(Script::envoy());
    cmd.envs(env.iter().copied())
        .args(args)
        .args(["sh", "-c", &format!("exit {code}")]);
    let out = run(&mut cmd, RUN_TIMEOUT);
    let dump = out.dump_with(&[&envoy, &generic]);
    PolicyRun {
        out,
        envoy,
        generic,
        dump,
    }
}

/// Whether a real `pilot-agent` shares this test's PID namespace, saying so: then
/// tandem would SIGINT it instead of POSTing a plain Envoy admin (SPEC §5.2), so a
/// test that expects that POST skips rather than signal it. The fakes of this
/// module live in nested PID namespaces, which tandem and this check skip; a
/// process that vanished between the two reads is not counted.
fn real_pilot_agent_visible(test: &str) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    let mine = std::fs::read_link("/proc/self/ns/pid").ok();
    let visible = entries.filter_map(Result::ok).any(|entry| {
        let path = entry.path();
        std::fs::read_to_string(path.join("comm"))
            .is_ok_and(|comm| comm.trim_end() == "pilot-agent")
            && match std::fs::read_link(path.join("ns/pid")) {
                Ok(theirs) => Some(theirs) == mine,
                // Unreadable, as tandem counts it: shared.
                Err(err) => err.kind() != std::io::ErrorKind::NotFound,
            }
    });
    if visible {
        eprintln!(
            "skipped {test}: a process named pilot-agent shares this PID namespace, and \
             tandem would SIGINT it instead of POSTing the Envoy admin (SPEC §5.2)"
        );
    }
    visible
}

/// An app that writes its pid to `marker`, then exits with `code`.
fn app_writing_pid(cmd: &mut Command, marker: &Path, code: i32) {
    cmd.args(["sh", "-c", "echo $$ > \"$1\"; exit \"$2\"", "sh"])
        .arg(marker)
        .arg(code.to_string());
}

// ---------------------------------------------------------------------------
// Which sidecar gets the quit (SPEC §5.2)
// ---------------------------------------------------------------------------

#[test]
fn plain_envoy_admin_gets_one_post_quitquitquit_after_the_app_exited() {
    if real_pilot_agent_visible("plain_envoy_admin_gets_one_post_quitquitquit_after_the_app_exited")
    {
        return;
    }
    let dir = temp_dir("plain-envoy");
    let marker = dir.join("app.pid");
    // At the moment the quit arrives: was the app already gone?
    let app_gone_at_quit: Arc<Mutex<Vec<Result<bool, String>>>> = Arc::default();
    let seen = Arc::clone(&app_gone_at_quit);
    let hook_marker = marker.clone();
    let envoy = start(Script::envoy().on_request(move |req| {
        if req.method == "POST" && req.quit {
            let gone = match std::fs::read_to_string(&hook_marker) {
                Ok(pid) => Ok(!Path::new(&format!("/proc/{}", pid.trim())).exists()),
                Err(err) => Err(format!("no pid marker yet: {err}")),
            };
            seen.lock().unwrap().push(gone);
        }
    }));
    assert_ne!(envoy.port(), 15000);
    let mut cmd = tandem_at(&envoy);
    app_writing_pid(&mut cmd, &marker, 0);
    let out = run(&mut cmd, RUN_TIMEOUT);

    assert_eq!(out.code, Some(0), "{}", out.dump_with(&[&envoy]));
    assert_eq!(
        posts(&envoy, "/quitquitquit"),
        1,
        "exactly one POST /quitquitquit\n{}",
        out.dump_with(&[&envoy])
    );
    assert_eq!(
        envoy.count("GET", "/quitquitquit"),
        0,
        "the quit must be a POST, never a GET\n{}",
        out.dump_with(&[&envoy])
    );
    assert_eq!(
        *app_gone_at_quit.lock().unwrap(),
        vec![Ok(true)],
        "the quit must arrive after the app exited\n{}",
        out.dump_with(&[&envoy])
    );
    let line = format!("quit POST {}/quitquitquit: 200", envoy.url());
    assert!(
        out.stderr.contains(&line),
        "expected {line:?} in stderr\n{}",
        out.dump_with(&[&envoy])
    );
}

#[test]
fn quit_request_is_a_post_with_an_empty_body_and_nothing_else() {
    if real_pilot_agent_visible("quit_request_is_a_post_with_an_empty_body_and_nothing_else") {
        return;
    }
    let admin = RawServer::start("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nOK\n");
    let out = run(
        tandem_at_url(&admin.url())
            .env("START_WITHOUT_ENVOY", "true")
            .arg("true"),
        RUN_TIMEOUT,
    );
    let requests = admin.requests();
    assert_eq!(out.code, Some(0), "{}{requests:#?}", out.dump());
    assert_eq!(
        requests.len(),
        1,
        "START_WITHOUT_ENVOY: only the quit\n{}{requests:#?}",
        out.dump()
    );
    let req = &requests[0];
    assert!(
        req.head.starts_with("POST /quitquitquit HTTP/1.1\r\n"),
        "{}{req:#?}",
        out.dump()
    );
    let lower = req.head.to_ascii_lowercase();
    assert!(
        !lower.contains("transfer-encoding"),
        "an empty body needs no chunking\n{}{req:#?}",
        out.dump()
    );
    assert!(
        !lower.contains("content-length:") || lower.contains("content-length: 0\r\n"),
        "body must be empty\n{}{req:#?}",
        out.dump()
    );
    assert!(req.body.is_empty(), "{}{req:#?}", out.dump());
}

#[test]
fn istio_quit_api_gets_post_quitquitquit_and_envoy_admin_gets_none() {
    let envoy = start(Script::envoy());
    let pilot = start(Script::pilot_agent());
    let out = run(
        tandem_at(&envoy)
            .env("ISTIO_QUIT_API", pilot.url())
            .arg("true"),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[&envoy, &pilot]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert_eq!(posts(&pilot, "/quitquitquit"), 1, "{dump}");
    assert_eq!(envoy.quit_requests(), 0, "{dump}");
    assert_eq!(envoy.count("GET", "/quitquitquit"), 0, "{dump}");
}

#[test]
fn envoy_kill_api_gets_a_post_to_its_exact_url() {
    let envoy = start(Script::envoy());
    let killer = start(Script::generic());
    let out = run(
        tandem_at(&envoy)
            .env(
                "ENVOY_KILL_API",
                format!("{}/custom/stop?now=1", killer.url()),
            )
            .arg("true"),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[&envoy, &killer]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert_eq!(posts(&killer, "/custom/stop?now=1"), 1, "{dump}");
    assert_eq!(killer.requests().len(), 1, "{dump}");
    assert_eq!(envoy.quit_requests(), 0, "{dump}");
}

#[test]
fn admin_on_port_15000_is_quit_through_pilot_agent_on_15020() {
    let _turn = fixed_ports_turn();
    let Ok(envoy) = FakeAdmin::start_on("127.0.0.1:15000", Script::envoy()) else {
        eprintln!(
            "skipping admin_on_port_15000_is_quit_through_pilot_agent_on_15020: \
             127.0.0.1:15000 is in use"
        );
        return;
    };
    let Ok(pilot) = FakeAdmin::start_on("127.0.0.1:15020", Script::pilot_agent()) else {
        eprintln!(
            "skipping admin_on_port_15000_is_quit_through_pilot_agent_on_15020: \
             127.0.0.1:15020 is in use"
        );
        return;
    };
    let out = run(
        tandem_at_url("http://127.0.0.1:15000").arg("true"),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[&envoy, &pilot]);
    assert_eq!(out.code, Some(0), "{dump}");
    // At least one: a concurrent test using the istio preset may also reach 15020.
    assert!(posts(&pilot, "/quitquitquit") >= 1, "{dump}");
    assert_eq!(
        posts(&envoy, "/quitquitquit"),
        0,
        "never quit Istio through Envoy's own 15000 (pilot-agent restarts it)\n{dump}"
    );
}

// ---------------------------------------------------------------------------
// Generic endpoints (SPEC §5.1, §5.2)
// ---------------------------------------------------------------------------

#[test]
fn generic_endpoints_without_admin_each_get_one_post_blanks_trimmed() {
    let fakes = [
        start(Script::generic()),
        start(Script::generic()),
        start(Script::generic()),
    ];
    let [a, b, c] = &fakes;
    let list = format!("{}/a, {}/b ,{}/c", a.url(), b.url(), c.url());
    let out = run(
        tandem()
            .env("GENERIC_QUIT_ENDPOINTS", list)
            .args(["sh", "-c", "exit 0"]),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[a, b, c]);
    assert_eq!(out.code, Some(0), "{dump}");
    for (fake, path) in [(a, "/a"), (b, "/b"), (c, "/c")] {
        assert_eq!(posts(fake, path), 1, "{path}\n{dump}");
        assert_eq!(
            fake.requests().len(),
            1,
            "{path}: nothing but the quit\n{dump}"
        );
    }
}

#[test]
fn generic_endpoints_are_posted_before_the_istio_quit() {
    // Each generic endpoint answers after 300 ms, so a sidecar quit sent after
    // their answers arrives at least that long after them.
    let delay = Duration::from_millis(300);
    let g1 = start(Script::generic().delay(delay));
    let g2 = start(Script::generic().delay(delay));
    let envoy = start(Script::envoy());
    let pilot = start(Script::pilot_agent());
    let out = run(
        tandem_at(&envoy)
            .env("ISTIO_QUIT_API", pilot.url())
            .env(
                "GENERIC_QUIT_ENDPOINTS",
                format!("{}/q1,{}/q2", g1.url(), g2.url()),
            )
            .arg("true"),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[&g1, &g2, &envoy, &pilot]);
    assert_eq!(out.code, Some(0), "{dump}");
    let istio = first_post(&pilot, "/quitquitquit").unwrap_or_else(|| panic!("{dump}"));
    for (fake, path) in [(&g1, "/q1"), (&g2, "/q2")] {
        let generic = first_post(fake, path).unwrap_or_else(|| panic!("{path}\n{dump}"));
        assert!(
            istio.at >= generic.at + delay,
            "the Istio quit must follow the answer of {path}: generic at {:?}, istio at {:?}\n{dump}",
            generic.at,
            istio.at
        );
    }
    assert_eq!(envoy.quit_requests(), 0, "{dump}");
}

#[test]
fn never_kill_istio_still_posts_generic_endpoints() {
    let run = run_with_policy(0, &[("NEVER_KILL_ISTIO", "true")], &[]);
    let dump = &run.dump;
    assert_eq!(run.out.code, Some(0), "{dump}");
    assert_eq!(posts(&run.generic, "/quit"), 1, "{dump}");
    assert_eq!(run.envoy.quit_requests(), 0, "{dump}");
}

#[test]
fn quit_options_replace_generic_quit_endpoints() {
    let from_env = start(Script::generic());
    let b = start(Script::generic());
    let c = start(Script::generic());
    let out = run(
        tandem()
            .env("GENERIC_QUIT_ENDPOINTS", format!("{}/env", from_env.url()))
            .arg("--quit")
            .arg(format!("{}/b", b.url()))
            .arg("--quit")
            .arg(format!("{}/c", c.url()))
            .arg("true"),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[&from_env, &b, &c]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert_eq!(posts(&b, "/b"), 1, "{dump}");
    assert_eq!(posts(&c, "/c"), 1, "{dump}");
    assert_eq!(
        from_env.requests().len(),
        0,
        "--quit replaces GENERIC_QUIT_ENDPOINTS\n{dump}"
    );
}

#[test]
fn generic_endpoints_are_posted_concurrently() {
    let second = Duration::from_secs(1);
    let fakes = [
        start(Script::generic().delay(second)),
        start(Script::generic().delay(second)),
        start(Script::generic().delay(second)),
    ];
    let [a, b, c] = &fakes;
    let list = format!("{}/a,{}/b,{}/c", a.url(), b.url(), c.url());
    let out = run(
        tandem().env("GENERIC_QUIT_ENDPOINTS", list).arg("true"),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[a, b, c]);
    assert_eq!(out.code, Some(0), "{dump}");
    let arrivals: Vec<Instant> = [(a, "/a"), (b, "/b"), (c, "/c")]
        .into_iter()
        .map(|(fake, path)| {
            first_post(fake, path)
                .unwrap_or_else(|| panic!("{path}\n{dump}"))
                .at
        })
        .collect();
    let first = *arrivals.iter().min().unwrap();
    let last = *arrivals.iter().max().unwrap();
    assert!(
        last - first < Duration::from_millis(800),
        "all three must be sent before any answer (1 s each): spread {:?}\n{dump}",
        last - first
    );
    // Sequential requests would take 3 s; concurrent ones a little over 1 s.
    assert!(
        out.elapsed < Duration::from_millis(1800),
        "took {:?}\n{dump}",
        out.elapsed
    );
    // The answers were awaited and logged, not abandoned.
    assert!(out.elapsed >= Duration::from_millis(900), "{dump}");
    assert_eq!(quit_lines(&out).len(), 3, "{dump}");
    assert!(
        quit_lines(&out).iter().all(|line| line.ends_with(": 200")),
        "{dump}"
    );
}

// ---------------------------------------------------------------------------
// The QUIT_REQUEST_TIMEOUT bound (SPEC §5.3)
// ---------------------------------------------------------------------------

#[test]
fn hanging_quit_endpoints_are_abandoned_at_quit_request_timeout() {
    let hang = start(Script::generic().fault(Fault::Hang));
    let slow = start(Script::generic().delay(Duration::from_secs(10)));
    let envoy = start(Script::envoy());
    let pilot = start(Script::pilot_agent().fault_on("/quitquitquit", Fault::Hang));
    let out = run(
        tandem_at(&envoy)
            .env("ISTIO_QUIT_API", pilot.url())
            .env(
                "GENERIC_QUIT_ENDPOINTS",
                format!("{}/hang,{}/slow", hang.url(), slow.url()),
            )
            .env("QUIT_REQUEST_TIMEOUT", "500ms")
            .args(["sh", "-c", "exit 7"]),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[&hang, &slow, &envoy, &pilot]);
    assert_eq!(out.code, Some(7), "the app's exit code\n{dump}");
    assert_eq!(posts(&hang, "/hang"), 1, "{dump}");
    assert_eq!(posts(&slow, "/slow"), 1, "{dump}");
    assert!(
        out.elapsed < Duration::from_millis(2500),
        "the whole quit phase is bounded by 500ms: took {:?}\n{dump}",
        out.elapsed
    );
}

#[test]
fn each_quit_request_unanswered_at_the_deadline_is_logged_by_url() {
    let hang = start(Script::generic().fault(Fault::Hang));
    let slow = start(Script::generic().delay(Duration::from_secs(10)));
    let ok = start(Script::generic());
    let list = format!("{}/hang,{}/slow,{}/ok", hang.url(), slow.url(), ok.url());
    let out = run(
        tandem()
            .env("GENERIC_QUIT_ENDPOINTS", list)
            .env("QUIT_REQUEST_TIMEOUT", "500ms")
            .arg("true"),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[&hang, &slow, &ok]);
    assert_eq!(out.code, Some(0), "{dump}");
    let lines = quit_lines(&out);
    assert_eq!(lines.len(), 3, "one line per request, no more\n{dump}");
    for url in [
        format!("{}/hang", hang.url()),
        format!("{}/slow", slow.url()),
    ] {
        let failed = format!("quit POST {url} failed: ");
        assert!(
            lines.iter().any(|line| line.contains(&failed)),
            "expected {failed:?}: the user must see which endpoint did not answer\n{dump}"
        );
    }
    let answered = format!("quit POST {}/ok: 200", ok.url());
    assert!(lines.iter().any(|line| line.ends_with(&answered)), "{dump}");
}

#[test]
fn a_hanging_generic_endpoint_leaves_time_for_the_istio_quit() {
    let hang = start(Script::generic().fault(Fault::Hang));
    let envoy = start(Script::envoy());
    let pilot = start(Script::pilot_agent());
    let out = run(
        tandem_at(&envoy)
            .env("ISTIO_QUIT_API", pilot.url())
            .env("GENERIC_QUIT_ENDPOINTS", format!("{}/hang", hang.url()))
            .env("QUIT_REQUEST_TIMEOUT", "1s")
            .args(["sh", "-c", "exit 5"]),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[&hang, &envoy, &pilot]);
    assert_eq!(out.code, Some(5), "{dump}");
    assert_eq!(
        posts(&pilot, "/quitquitquit"),
        1,
        "the sidecar must still be stopped, or the Pod never completes\n{dump}"
    );
    let line = format!("quit POST {}/quitquitquit: 200", pilot.url());
    assert!(
        quit_lines(&out).iter().any(|l| l.ends_with(&line)),
        "{dump}"
    );
    assert!(
        out.elapsed < Duration::from_millis(3000),
        "the whole phase stays bounded by 1s: took {:?}\n{dump}",
        out.elapsed
    );
}

#[test]
fn istio_quit_that_hangs_is_abandoned_at_quit_request_timeout() {
    let envoy = start(Script::envoy());
    let pilot = start(Script::pilot_agent().fault_on("/quitquitquit", Fault::Hang));
    let out = run(
        tandem_at(&envoy)
            .env("ISTIO_QUIT_API", pilot.url())
            .env("QUIT_REQUEST_TIMEOUT", "500ms")
            .args(["sh", "-c", "exit 3"]),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[&envoy, &pilot]);
    assert_eq!(out.code, Some(3), "{dump}");
    assert_eq!(posts(&pilot, "/quitquitquit"), 1, "{dump}");
    assert!(
        out.elapsed < Duration::from_millis(2500),
        "took {:?}\n{dump}",
        out.elapsed
    );
    assert!(
        quit_lines(&out).iter().any(|line| line.contains("failed")),
        "the timeout is logged as a failure\n{dump}"
    );
}

#[test]
fn quit_phase_is_bounded_by_five_seconds_by_default() {
    let hang = start(Script::generic().fault(Fault::Hang));
    let out = run(
        tandem()
            .env("GENERIC_QUIT_ENDPOINTS", format!("{}/hang", hang.url()))
            .args(["sh", "-c", "exit 5"]),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[&hang]);
    assert_eq!(out.code, Some(5), "{dump}");
    assert_eq!(posts(&hang, "/hang"), 1, "{dump}");
    assert!(
        out.elapsed >= Duration::from_secs(4) && out.elapsed <= Duration::from_secs(8),
        "default QUIT_REQUEST_TIMEOUT is 5s: took {:?}\n{dump}",
        out.elapsed
    );
}

// ---------------------------------------------------------------------------
// Never, generic-only and failure policies (SPEC §5.1, §2)
// ---------------------------------------------------------------------------

/// Runs [`run_with_policy`] (exit 0) with `env` and `args`; asserts the admin
/// gets no quit, the generic endpoint gets one, and the log says why.
fn assert_admin_kept_generic_sent(env: Env, args: &[&str]) {
    let run = run_with_policy(0, env, args);
    let (out, dump) = (&run.out, &run.dump);
    let case = format!("{env:?} {args:?}");
    assert_eq!(out.code, Some(0), "{case}\n{dump}");
    assert_eq!(run.admin_quits(), 0, "{case}: admin kept\n{dump}");
    assert_eq!(
        posts(&run.generic, "/quit"),
        1,
        "{case}: generic sent\n{dump}"
    );
    assert!(
        out.stderr.contains("leaving Istio/Envoy running"),
        "{case}: the log says why\n{dump}"
    );
}

#[test]
fn never_kill_istio_true_leaves_the_admin_alone() {
    assert_admin_kept_generic_sent(&[("NEVER_KILL_ISTIO", "true")], &[]);
}

#[test]
fn never_kill_envoy_true_leaves_the_admin_alone() {
    assert_admin_kept_generic_sent(&[("NEVER_KILL_ENVOY", "TRUE")], &[]);
}

#[test]
fn never_quit_option_leaves_the_admin_alone() {
    assert_admin_kept_generic_sent(&[], &["--never-quit"]);
}

#[test]
fn generic_quit_only_posts_only_the_generic_endpoints() {
    assert_admin_kept_generic_sent(&[("GENERIC_QUIT_ONLY", "true")], &[]);
}

#[test]
fn generic_quit_only_option_posts_only_the_generic_endpoints() {
    assert_admin_kept_generic_sent(&[], &["--generic-quit-only"]);
}

#[test]
fn generic_quit_only_leaves_istio_quit_api_alone() {
    let envoy = start(Script::envoy());
    let pilot = start(Script::pilot_agent());
    let generic = start(Script::generic());
    let out = run(
        tandem_at(&envoy)
            .env("ISTIO_QUIT_API", pilot.url())
            .env("GENERIC_QUIT_ENDPOINTS", format!("{}/quit", generic.url()))
            .env("GENERIC_QUIT_ONLY", "yes")
            .arg("true"),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[&envoy, &pilot, &generic]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert_eq!(pilot.quit_requests(), 0, "{dump}");
    assert_eq!(envoy.quit_requests(), 0, "{dump}");
    assert_eq!(posts(&generic, "/quit"), 1, "{dump}");
}

#[test]
fn keep_on_failure_after_a_failed_app_stops_nothing_not_even_generic() {
    // The variable and the option.
    let variants: [(Env, &[&str]); 2] = [
        (&[("NEVER_KILL_ISTIO_ON_FAILURE", "true")], &[]),
        (&[], &["--keep-on-failure"]),
    ];
    for (env, args) in variants {
        let run = run_with_policy(1, env, args);
        let (out, dump) = (&run.out, &run.dump);
        assert_eq!(out.code, Some(1), "{env:?} {args:?}\n{dump}");
        assert_eq!(run.admin_quits(), 0, "{env:?} {args:?}: admin kept\n{dump}");
        assert_eq!(
            run.generic_quits(),
            0,
            "{env:?} {args:?}: generic kept too\n{dump}"
        );
        assert!(quit_lines(out).is_empty(), "{env:?} {args:?}\n{dump}");
    }
}

#[test]
fn keep_on_failure_after_success_sends_every_quit() {
    if real_pilot_agent_visible("keep_on_failure_after_success_sends_every_quit") {
        return;
    }
    let run = run_with_policy(0, &[("NEVER_KILL_ISTIO_ON_FAILURE", "true")], &[]);
    assert_eq!(run.out.code, Some(0), "{}", run.dump);
    assert_eq!(run.admin_quits(), 1, "{}", run.dump);
    assert_eq!(run.generic_quits(), 1, "{}", run.dump);
}

#[test]
fn keep_on_failure_beats_always_kill_envoy() {
    let run = run_with_policy(
        1,
        &[
            ("NEVER_KILL_ISTIO_ON_FAILURE", "true"),
            ("ALWAYS_KILL_ENVOY", "true"),
        ],
        &[],
    );
    assert_eq!(run.out.code, Some(1), "{}", run.dump);
    assert_eq!(run.admin_quits(), 0, "{}", run.dump);
    assert_eq!(run.generic_quits(), 0, "{}", run.dump);
}

#[test]
fn failed_app_still_stops_the_sidecars_by_default() {
    if real_pilot_agent_visible("failed_app_still_stops_the_sidecars_by_default") {
        return;
    }
    let run = run_with_policy(42, &[("ALWAYS_KILL_ENVOY", "true")], &[]);
    assert_eq!(run.out.code, Some(42), "{}", run.dump);
    assert_eq!(run.admin_quits(), 1, "{}", run.dump);
    assert_eq!(run.generic_quits(), 1, "{}", run.dump);
}

// ---------------------------------------------------------------------------
// Locality of the admin URL (SPEC §5.1)
// ---------------------------------------------------------------------------

#[test]
fn non_local_admin_url_is_never_sent_a_quit() {
    // Nothing answers these names: the point is that no quit is even attempted,
    // while the generic endpoint proves the quit phase ran.
    for host in ["127.0.0.1.example.com", "127.0.0.2.example.invalid"] {
        let generic = start(Script::generic());
        let admin = format!("http://{host}:{}", closed_port());
        let out = run(
            tandem_at_url(&admin)
                .env("START_WITHOUT_ENVOY", "true")
                .env("GENERIC_QUIT_ENDPOINTS", format!("{}/quit", generic.url()))
                .arg("true"),
            RUN_TIMEOUT,
        );
        let dump = out.dump_with(&[&generic]);
        assert_eq!(out.code, Some(0), "{admin}\n{dump}");
        assert_eq!(posts(&generic, "/quit"), 1, "{admin}\n{dump}");
        let lines = quit_lines(&out);
        assert!(
            lines.iter().all(|line| !line.contains(host)),
            "{admin} is not local: no quit may be attempted\n{dump}"
        );
        assert_eq!(lines.len(), 1, "{admin}: only the generic quit\n{dump}");
        assert!(
            out.stderr.contains("not local"),
            "{admin}: the log says why\n{dump}"
        );
        assert!(
            out.elapsed < Duration::from_secs(3),
            "{admin}: took {:?}\n{dump}",
            out.elapsed
        );
    }
}

#[test]
fn localhost_admin_url_is_local_and_gets_the_quit() {
    if real_pilot_agent_visible("localhost_admin_url_is_local_and_gets_the_quit") {
        return;
    }
    let envoy = start(Script::envoy());
    let out = run(
        tandem_at_url(&format!("http://localhost:{}", envoy.port()))
            .env("START_WITHOUT_ENVOY", "true")
            .arg("true"),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[&envoy]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert_eq!(posts(&envoy, "/quitquitquit"), 1, "{dump}");
}

// ---------------------------------------------------------------------------
// Results, hints and redirects (SPEC §5.3)
// ---------------------------------------------------------------------------

#[test]
fn linkerd_shutdown_404_logs_how_to_enable_the_endpoint() {
    let linkerd = start(Script::linkerd().shutdown_enabled(false));
    let out = run(
        tandem()
            .env(
                "GENERIC_QUIT_ENDPOINTS",
                format!("{}/shutdown", linkerd.url()),
            )
            .arg("true"),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[&linkerd]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert_eq!(posts(&linkerd, "/shutdown"), 1, "{dump}");
    assert!(
        out.stderr
            .contains("LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED=true"),
        "{dump}"
    );
}

#[test]
fn every_quit_result_is_logged_with_its_status_or_error() {
    let ok = start(Script::generic());
    let broken = start(Script::generic().status_override("/broken", 500));
    let closed = format!("http://127.0.0.1:{}/closed", closed_port());
    let list = format!("{}/ok,{}/broken,{closed}", ok.url(), broken.url());
    let out = run(
        tandem().env("GENERIC_QUIT_ENDPOINTS", list).arg("true"),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[&ok, &broken]);
    assert_eq!(
        out.code,
        Some(0),
        "failed quits do not change the exit code\n{dump}"
    );
    let lines = quit_lines(&out);
    assert_eq!(lines.len(), 3, "one line per request\n{dump}");
    for expected in [
        format!("quit POST {}/ok: 200", ok.url()),
        format!("quit POST {}/broken: 500", broken.url()),
        format!("quit POST {closed} failed: connection refused"),
    ] {
        assert!(
            lines.iter().any(|line| line.ends_with(&expected)),
            "expected a line ending in {expected:?}\n{dump}"
        );
    }
}

#[test]
fn quit_requests_do_not_follow_redirects() {
    let target = start(Script::generic());
    let location = format!("{}/quitquitquit", target.url());
    let found = RawServer::start(&format!(
        "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n"
    ));
    let temporary = RawServer::start(&format!(
        "HTTP/1.1 307 Temporary Redirect\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n"
    ));
    let list = format!("{}/found,{}/temporary", found.url(), temporary.url());
    let out = run(
        tandem().env("GENERIC_QUIT_ENDPOINTS", list).arg("true"),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[&target]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert_eq!(found.requests().len(), 1, "{dump}");
    assert_eq!(temporary.requests().len(), 1, "{dump}");
    assert_eq!(
        target.requests().len(),
        0,
        "a redirect must not be followed\n{dump}"
    );
    for expected in [
        format!("quit POST {}/found: 302", found.url()),
        format!("quit POST {}/temporary: 307", temporary.url()),
    ] {
        assert!(
            out.stderr.contains(&expected),
            "expected {expected:?}: any status counts as sent\n{dump}"
        );
    }
}

// ---------------------------------------------------------------------------
// Quits after an abandoned wait (SPEC §3, §5)
// ---------------------------------------------------------------------------

/// Starts tandem waiting for a never-ready Envoy with one generic endpoint and
/// `env`, sends SIGTERM after the first `/ready` poll, and checks what followed.
fn sigterm_while_waiting(env: Env) -> (Out, FakeAdmin, FakeAdmin, PathBuf) {
    let (mut cmd, envoy, generic) = envoy_and_generic(Script::envoy().never_ready());
    let marker = temp_dir("sigterm-wait").join("app-started");
    cmd.envs(env.iter().copied());
    app_touching(&mut cmd, &marker);
    let mut running = spawn(&mut cmd);
    assert!(
        envoy.wait_for_request("GET", "/ready", Duration::from_secs(10)),
        "tandem never polled /ready\n{}",
        envoy.dump()
    );
    let signalled = Instant::now();
    running.signal(SIGTERM);
    let out = running.wait(RUN_TIMEOUT);
    let ended = signalled.elapsed();
    assert!(
        ended < Duration::from_secs(2),
        "tandem must exit about at once after SIGTERM: took {ended:?}\n{}",
        out.dump_with(&[&envoy, &generic])
    );
    (out, envoy, generic, marker)
}

#[test]
fn sigterm_while_waiting_quits_sidecars_and_exits_143() {
    if real_pilot_agent_visible("sigterm_while_waiting_quits_sidecars_and_exits_143") {
        return;
    }
    let (out, envoy, generic, marker) = sigterm_while_waiting(&[]);
    let dump = out.dump_with(&[&envoy, &generic]);
    assert_eq!(out.code, Some(143), "{dump}");
    assert!(!marker.exists(), "the app must never start\n{dump}");
    assert_eq!(posts(&generic, "/quit"), 1, "{dump}");
    assert_eq!(posts(&envoy, "/quitquitquit"), 1, "{dump}");
}

#[test]
fn sigterm_while_waiting_with_keep_on_failure_sends_nothing() {
    let (out, envoy, generic, marker) =
        sigterm_while_waiting(&[("NEVER_KILL_ISTIO_ON_FAILURE", "true")]);
    let dump = out.dump_with(&[&envoy, &generic]);
    assert_eq!(out.code, Some(143), "{dump}");
    assert!(!marker.exists(), "the app must never start\n{dump}");
    assert_eq!(generic.requests().len(), 0, "{dump}");
    assert_eq!(envoy.quit_requests(), 0, "{dump}");
}

#[test]
fn fail_timeout_exits_69_and_sends_the_quits() {
    if real_pilot_agent_visible("fail_timeout_exits_69_and_sends_the_quits") {
        return;
    }
    let (mut cmd, envoy, generic) = envoy_and_generic(Script::envoy().never_ready());
    let marker = temp_dir("fail-timeout").join("app-started");
    cmd.args(["--fail-timeout", "300ms"]);
    app_touching(&mut cmd, &marker);
    let out = run(&mut cmd, RUN_TIMEOUT);
    let dump = out.dump_with(&[&envoy, &generic]);
    assert_eq!(out.code, Some(69), "{dump}");
    assert!(!marker.exists(), "the app must never start\n{dump}");
    assert_eq!(posts(&envoy, "/quitquitquit"), 1, "{dump}");
    assert_eq!(posts(&generic, "/quit"), 1, "{dump}");
}

// ---------------------------------------------------------------------------
// pilot-agent SIGINT fallback (SPEC §5.2)
// ---------------------------------------------------------------------------

/// How a fake pilot-agent ended.
#[derive(Debug, PartialEq, Eq)]
enum AgentEnd {
    /// tandem sent it SIGINT.
    Interrupted,
    /// It was still running after tandem exited (the script then killed it).
    LeftRunning,
    /// Anything else: the exit status `wait` reported, or what the status file held.
    Other(String),
}

/// Run by `sh` as PID 1 of a new PID namespace, with `DIR TANDEM ARGS…`: starts
/// `DIR/pilot-agent` (a copy of `sleep`: `/proc/PID/comm` comes from the
/// executable's name), waits until it bears that name, runs tandem, then kills the
/// fake and writes its pid and its exit status (130 after SIGINT, 137 if it was
/// still running) to `DIR/agent.pid` and `DIR/agent.status`; exits with tandem's
/// status. A non-interactive shell starts background jobs with SIGINT ignored, so
/// `env --default-signal=INT` restores it before the fake starts.
const BESIDE_PILOT_AGENT: &str = r#"
dir=$1; shift
env --default-signal=INT "$dir/pilot-agent" 60 </dev/null >/dev/null 2>&1 &
agent=$!
echo "$agent" > "$dir/agent.pid"
n=0
until [ "$(cat "/proc/$agent/comm" 2>/dev/null)" = pilot-agent ]; do
    n=$((n+1))
    if [ $n -gt 1000 ]; then
        echo "the fake never showed up as pilot-agent in /proc/$agent/comm" >&2
        kill -9 "$agent"
        exit 125
    fi
    sleep 0.01
done
"$@"
code=$?
kill -9 "$agent" 2>/dev/null
wait "$agent"
echo $? > "$dir/agent.status"
exit $code
"#;

/// Copies `sleep` to `DIR/pilot-agent`, the name a process running it will have in
/// `/proc/PID/comm`; returns that path.
fn copy_sleep_as_pilot_agent(dir: &Path) -> PathBuf {
    let sleep = ["/bin/sleep", "/usr/bin/sleep"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("sleep exists");
    let fake = dir.join("pilot-agent");
    std::fs::copy(sleep, &fake).expect("copy sleep to pilot-agent");
    fake
}

/// Why this machine cannot run [`run_beside_pilot_agent`], if it can't.
fn pilot_agent_namespace_unavailable() -> Option<String> {
    let probe = [
        "--pid",
        "--fork",
        "--mount-proc",
        "env",
        "--default-signal=INT",
        "true",
    ];
    match Command::new("unshare").args(probe).output() {
        Err(err) => Some(format!("cannot run unshare: {err}")),
        Ok(out) if !out.status.success() => Some(format!(
            "`unshare {}` failed ({}; a new PID namespace needs CAP_SYS_ADMIN): {}",
            probe.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Ok(_) => None,
    }
}

/// Runs tandem with `env` and the app `sh -c 'exit CODE'` beside a fake process
/// named `pilot-agent`, both inside a new PID namespace (see [`BESIDE_PILOT_AGENT`]);
/// returns the output, how the fake ended, and its pid as tandem sees it. `None`
/// (after saying why) when this machine cannot make a PID namespace.
///
/// tandem skips a pilot-agent of another PID namespace, so the tandems of
/// concurrent tests, in the test's own namespace, leave this fake alone, and this
/// tandem sees no fake of theirs. The network namespace is shared: the fakes on
/// 127.0.0.1 are reachable from inside.
fn run_beside_pilot_agent(env: &[(&str, String)], code: i32) -> Option<(Out, AgentEnd, String)> {
    if let Some(reason) = pilot_agent_namespace_unavailable() {
        eprintln!("skipped: {reason}");
        return None;
    }
    let dir = temp_dir("pilot-agent");
    copy_sleep_as_pilot_agent(&dir);

    let mut cmd = Command::new("unshare");
    default_signals(&mut cmd)
        .env_clear()
        .envs(std::env::var_os("PATH").map(|path| ("PATH", path)))
        .envs(env.iter().map(|(k, v)| (k, v)))
        // If the run is killed on timeout, the namespace and the fake go with it.
        .args(["--pid", "--fork", "--kill-child", "--mount-proc"])
        .args(["sh", "-c", BESIDE_PILOT_AGENT, "sh"])
        .arg(&dir)
        .arg(env!("CARGO_BIN_EXE_tandem"))
        .args(["sh", "-c", "exit \"$1\"", "sh"])
        .arg(code.to_string());
    let out = run(&mut cmd, RUN_TIMEOUT);
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    let (status, pid) = (read("agent.status"), read("agent.pid"));
    let _ = std::fs::remove_dir_all(&dir);
    let end = match status.as_str() {
        "130" => AgentEnd::Interrupted,
        "137" => AgentEnd::LeftRunning,
        _ => AgentEnd::Other(status),
    };
    Some((out, end, pid))
}

#[test]
fn visible_pilot_agent_gets_sigint_instead_of_a_post_to_the_admin() {
    let envoy = start(Script::envoy());
    let Some((out, agent, pid)) = run_beside_pilot_agent(&[("ENVOY_ADMIN_API", envoy.url())], 0)
    else {
        return;
    };
    let dump = out.dump_with(&[&envoy]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert_eq!(agent, AgentEnd::Interrupted, "{dump}");
    let sent = format!("sent SIGINT to pilot-agent (pid {pid})");
    assert!(out.stderr.contains(&sent), "expected {sent:?}\n{dump}");
    assert_eq!(
        envoy.quit_requests(),
        0,
        "the signal replaces the POST\n{dump}"
    );
}

#[test]
fn unreachable_istio_quit_api_falls_back_to_sigint_of_pilot_agent() {
    let envoy = start(Script::envoy());
    let istio = format!("http://127.0.0.1:{}", closed_port());
    let env = [
        ("ENVOY_ADMIN_API", envoy.url()),
        ("ISTIO_QUIT_API", istio.clone()),
    ];
    let Some((out, agent, pid)) = run_beside_pilot_agent(&env, 4) else {
        return;
    };
    let dump = out.dump_with(&[&envoy]);
    assert_eq!(out.code, Some(4), "{dump}");
    let failed = format!("quit POST {istio}/quitquitquit failed: connection refused");
    assert!(out.stderr.contains(&failed), "{dump}");
    assert_eq!(agent, AgentEnd::Interrupted, "{dump}");
    let sent = format!("sent SIGINT to pilot-agent (pid {pid})");
    assert!(out.stderr.contains(&sent), "expected {sent:?}\n{dump}");
    assert_eq!(envoy.quit_requests(), 0, "{dump}");
}

#[test]
fn reachable_istio_quit_api_leaves_pilot_agent_unsignalled() {
    let envoy = start(Script::envoy());
    let pilot = start(Script::pilot_agent());
    let env = [
        ("ENVOY_ADMIN_API", envoy.url()),
        ("ISTIO_QUIT_API", pilot.url()),
    ];
    let Some((out, agent, _)) = run_beside_pilot_agent(&env, 0) else {
        return;
    };
    let dump = out.dump_with(&[&envoy, &pilot]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert_eq!(posts(&pilot, "/quitquitquit"), 1, "{dump}");
    assert_eq!(
        agent,
        AgentEnd::LeftRunning,
        "the POST worked: no signal\n{dump}"
    );
    assert!(!out.stderr.contains("sent SIGINT"), "{dump}");
    assert_eq!(envoy.quit_requests(), 0, "{dump}");
}

#[test]
fn never_kill_istio_leaves_a_visible_pilot_agent_unsignalled() {
    let envoy = start(Script::envoy());
    let env = [
        ("ENVOY_ADMIN_API", envoy.url()),
        ("NEVER_KILL_ISTIO", "true".to_owned()),
    ];
    let Some((out, agent, _)) = run_beside_pilot_agent(&env, 0) else {
        return;
    };
    let dump = out.dump_with(&[&envoy]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert_eq!(agent, AgentEnd::LeftRunning, "{dump}");
    assert!(!out.stderr.contains("sent SIGINT"), "{dump}");
    assert_eq!(envoy.quit_requests(), 0, "{dump}");
}

#[test]
fn pilot_agent_of_a_nested_pid_namespace_is_left_alone_and_the_admin_gets_the_post() {
    // What keeps the fakes above from other tests' tandems: one run outside the
    // namespace, while a fake pilot-agent is visible in /proc, still POSTs.
    if let Some(reason) = pilot_agent_namespace_unavailable() {
        eprintln!("skipped: {reason}");
        return;
    }
    if real_pilot_agent_visible(
        "pilot_agent_of_a_nested_pid_namespace_is_left_alone_and_the_admin_gets_the_post",
    ) {
        return;
    }
    let dir = temp_dir("nested-pilot-agent");
    let fake = copy_sleep_as_pilot_agent(&dir);
    // Not PID 1 of its namespace, which would ignore a SIGINT without a handler.
    let nested = spawn(
        default_signals(&mut Command::new("unshare"))
            .args(["--pid", "--fork", "--kill-child", "--mount-proc"])
            .args(["sh", "-c", NESTED_PILOT_AGENT, "sh"])
            .arg(&fake),
    );
    let mut agent = None;
    let visible = wait_until(Duration::from_secs(10), || {
        agent = nested_pilot_agent(&fake);
        agent.is_some()
    });
    assert!(visible, "the nested fake never showed up in /proc");
    let envoy = start(Script::envoy());
    let out = run(tandem_at(&envoy).arg("true"), RUN_TIMEOUT);
    let dump = out.dump_with(&[&envoy]);
    let agent: i32 = agent.and_then(|pid| pid.parse().ok()).expect("found above");
    let alive = state(agent).is_some_and(|state| state != 'Z');
    drop(nested);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.code, Some(0), "{dump}");
    assert_eq!(posts(&envoy, "/quitquitquit"), 1, "{dump}");
    assert!(!out.stderr.contains("sent SIGINT"), "{dump}");
    assert!(
        alive,
        "the nested pilot-agent {agent} was signalled\n{dump}"
    );
}

/// Run by `sh` as PID 1 of a new PID namespace with the fake's path: starts it
/// with SIGINT at its default (see [`BESIDE_PILOT_AGENT`]) and waits.
const NESTED_PILOT_AGENT: &str =
    r#"env --default-signal=INT "$1" 60 </dev/null >/dev/null 2>&1 & wait"#;

/// The pid (in this test's namespace) of the process running `exe` under the name
/// `pilot-agent` in another PID namespace, once it does.
fn nested_pilot_agent(exe: &Path) -> Option<String> {
    let mine = std::fs::read_link("/proc/self/ns/pid").ok()?;
    std::fs::read_dir("/proc")
        .ok()?
        .filter_map(Result::ok)
        .find(|entry| {
            let path = entry.path();
            std::fs::read_to_string(path.join("comm"))
                .is_ok_and(|comm| comm.trim_end() == "pilot-agent")
                && std::fs::read_link(path.join("exe")).is_ok_and(|e| e == exe)
                && std::fs::read_link(path.join("ns/pid")).is_ok_and(|ns| ns != mine)
        })
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
}

// ---------------------------------------------------------------------------
// A raw HTTP server, for what FakeAdmin does not record or cannot send
// ---------------------------------------------------------------------------

/// One request exactly as it arrived.
#[derive(Clone, Debug)]
struct RawReq {
    /// Request line and header fields, through the empty line.
    head: String,
    /// The body, per `Content-Length` (at most 64 KiB).
    body: Vec<u8>,
}

/// Answers every request with the same raw bytes and records each request,
/// head and body (FakeAdmin discards bodies and sends no `Location`).
struct RawServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<RawReq>>>,
    stopped: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl RawServer {
    fn start(answer: &str) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind raw server");
        let addr = listener.local_addr().expect("local addr");
        let requests: Arc<Mutex<Vec<RawReq>>> = Arc::default();
        let stopped = Arc::new(AtomicBool::new(false));
        let (log, stop, answer) = (
            Arc::clone(&requests),
            Arc::clone(&stopped),
            answer.as_bytes().to_vec(),
        );
        let accept = thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                // One connection at a time is enough for one client request.
                if let Ok(stream) = stream
                    && let Some(req) = serve_raw(&stream, &answer)
                {
                    log.lock().unwrap().push(req);
                }
            }
        });
        RawServer {
            addr,
            requests,
            stopped,
            accept: Some(accept),
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn requests(&self) -> Vec<RawReq> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        // Wake the blocking accept.
        let _ = TcpStream::connect_timeout(&self.addr, RAW_IO_TIMEOUT);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// Reads one request (head, then `Content-Length` bytes), answers, closes.
fn serve_raw(mut stream: &TcpStream, answer: &[u8]) -> Option<RawReq> {
    stream.set_read_timeout(Some(RAW_IO_TIMEOUT)).ok()?;
    stream.set_write_timeout(Some(RAW_IO_TIMEOUT)).ok()?;
    let mut bytes = Vec::new();
    let mut buf = [0; 4096];
    let head_end = loop {
        if let Some(at) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match read_retrying(&mut stream, &mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
        }
        if bytes.len() > 64 * 1024 {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&bytes[..head_end]).into_owned();
    let length = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<usize>().ok())
        .unwrap_or(0)
        .min(64 * 1024);
    let mut body = bytes[head_end..].to_vec();
    while body.len() < length {
        match read_retrying(&mut stream, &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => body.extend_from_slice(&buf[..n]),
        }
    }
    let _ = stream.write_all(answer);
    let _ = stream.shutdown(Shutdown::Write);
    Some(RawReq { head, body })
}

#[test]
fn istio_fallback_pkill_true_signals_pilot_agent_when_its_quit_fails_in_any_way() {
    let envoy = start(Script::envoy());
    // Connected, then no answer: not the refused connection of the default fallback.
    let pilot = start(Script::pilot_agent().fault_on("/quitquitquit", Fault::Hang));
    let env = [
        ("ENVOY_ADMIN_API", envoy.url()),
        ("ISTIO_QUIT_API", pilot.url()),
        ("ISTIO_FALLBACK_PKILL", "true".to_owned()),
        ("QUIT_REQUEST_TIMEOUT", "500ms".to_owned()),
    ];
    let Some((out, agent, _)) = run_beside_pilot_agent(&env, 0) else {
        return;
    };
    let dump = out.dump_with(&[&envoy, &pilot]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert_eq!(posts(&pilot, "/quitquitquit"), 1, "{dump}");
    assert_eq!(agent, AgentEnd::Interrupted, "{dump}");
}

#[test]
fn istio_fallback_pkill_false_never_signals_pilot_agent() {
    let envoy = start(Script::envoy());
    let env = [
        ("ENVOY_ADMIN_API", envoy.url()),
        (
            "ISTIO_QUIT_API",
            format!("http://127.0.0.1:{}", closed_port()),
        ),
        ("ISTIO_FALLBACK_PKILL", "false".to_owned()),
    ];
    let Some((out, agent, _)) = run_beside_pilot_agent(&env, 0) else {
        return;
    };
    let dump = out.dump_with(&[&envoy]);
    assert_eq!(agent, AgentEnd::LeftRunning, "{dump}");
    assert!(!out.stderr.contains("sent SIGINT"), "{dump}");
}
