//! Generic quit endpoints (SPEC §5.1, §5.2): blanks trimmed, posted first and
//! concurrently, replaced by the quit options; each request bounded by
//! `QUIT_REQUEST_TIMEOUT` (SPEC §5.3).

use super::{first_post, posts, quit_lines, run_with_policy};
use crate::support::{FakeAdmin, Fault, RUN_TIMEOUT, Script, run, spawn, start, tandem, tandem_at};
use std::time::{Duration, Instant};

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

#[test]
fn a_generic_endpoint_that_starts_listening_late_still_gets_its_quit() {
    // A sidecar with no readiness check (Vault Agent) may open its port only
    // after a short job has ended: the refused quit is retried until it listens.
    // A port released at once (not `closed_port`, which keeps it bound for good),
    // so the late sidecar can take it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("an ephemeral port")
        .port();
    let url = format!("http://127.0.0.1:{port}/agent/v1/quit");
    let running = spawn(
        tandem()
            .env("GENERIC_QUIT_ENDPOINTS", &url)
            .env("QUIT_REQUEST_TIMEOUT", "20s")
            .args(["sh", "-c", "exit 7"]),
    );
    std::thread::sleep(Duration::from_millis(500));
    let late = FakeAdmin::start_on(("127.0.0.1", port), Script::generic())
        .expect("the port tandem was given is still free");
    let out = running.wait(RUN_TIMEOUT);
    let dump = out.dump_with(&[&late]);
    assert_eq!(out.code, Some(7), "{dump}");
    assert_eq!(posts(&late, "/agent/v1/quit"), 1, "{dump}");
    assert!(!out.stderr.contains("error:"), "{dump}");
}
