//! Which sidecar gets which quit request (SPEC §5.2), locality of the admin URL
//! (SPEC §5.1), and what tandem logs of each result, redirects included (SPEC §5.3).

use super::{app_writing_pid, posts, quit_lines};
use crate::support::{
    RUN_TIMEOUT, Response, Script, closed_port, fixed_ports_turn, no_real_pilot_agent,
    on_fixed_ports, run, start, tandem, tandem_at, tandem_at_url, temp_dir,
};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

// ---------------------------------------------------------------------------
// Which sidecar gets the quit (SPEC §5.2)
// ---------------------------------------------------------------------------

#[test]
fn plain_envoy_admin_gets_one_post_quitquitquit_after_the_app_exited() {
    if !no_real_pilot_agent() {
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
    if !no_real_pilot_agent() {
        return;
    }
    let admin = start(Script::envoy());
    let out = run(
        tandem_at(&admin)
            .env("START_WITHOUT_ENVOY", "true")
            .arg("true"),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[&admin]);
    let requests = admin.requests();
    assert_eq!(out.code, Some(0), "{dump}");
    assert_eq!(
        requests.len(),
        1,
        "START_WITHOUT_ENVOY: only the quit\n{dump}"
    );
    let req = &requests[0];
    assert_eq!(
        (req.method.as_str(), req.path.as_str(), req.version.as_str()),
        ("POST", "/quitquitquit", "HTTP/1.1"),
        "{dump}{req:#?}"
    );
    assert_eq!(
        req.header("transfer-encoding"),
        None,
        "an empty body needs no chunking\n{dump}{req:#?}"
    );
    assert!(
        req.header("content-length")
            .is_none_or(|length| length == "0"),
        "body must be empty\n{dump}{req:#?}"
    );
    assert!(req.body.is_empty(), "{dump}{req:#?}");
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
    let Some(fakes) = on_fixed_ports(vec![
        (15000, Script::envoy()),
        (15020, Script::pilot_agent()),
    ]) else {
        return;
    };
    let (envoy, pilot) = (&fakes[0], &fakes[1]);
    let out = run(
        tandem_at_url("http://127.0.0.1:15000").arg("true"),
        RUN_TIMEOUT,
    );
    let dump = out.dump_with(&[envoy, pilot]);
    assert_eq!(out.code, Some(0), "{dump}");
    // At least one: a concurrent test using the istio preset may also reach 15020.
    assert!(posts(pilot, "/quitquitquit") >= 1, "{dump}");
    assert_eq!(
        posts(envoy, "/quitquitquit"),
        0,
        "never quit Istio through Envoy's own 15000 (pilot-agent restarts it)\n{dump}"
    );
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
    if !no_real_pilot_agent() {
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
fn every_quit_result_is_logged_with_its_status_or_error() {
    let ok = start(Script::generic());
    let broken = start(Script::generic().status_override("/broken", 500));
    let closed = format!("http://127.0.0.1:{}/closed", closed_port());
    let list = format!("{}/ok,{}/broken,{closed}", ok.url(), broken.url());
    let out = run(
        tandem()
            .env("GENERIC_QUIT_ENDPOINTS", list)
            .env("QUIT_REQUEST_TIMEOUT", "1s")
            .arg("true"),
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
    // A generic endpoint's 500 counts as sent: a warning, not an error (SPEC §5.3).
    let broken = format!("warning: quit POST {}/broken: 500", broken.url());
    assert!(lines.iter().any(|line| line.contains(&broken)), "{dump}");
}

#[test]
fn quit_requests_do_not_follow_redirects() {
    let target = start(Script::generic());
    let location = format!("{}/quitquitquit", target.url());
    let redirect = |status| {
        start(
            Script::generic().respond("/quit", Response::new(status).header("Location", &location)),
        )
    };
    let (found, temporary) = (redirect(302), redirect(307));
    let list = format!("{}/quit,{}/quit", found.url(), temporary.url());
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
        format!("quit POST {}/quit: 302", found.url()),
        format!("quit POST {}/quit: 307", temporary.url()),
    ] {
        assert!(
            out.stderr.contains(&expected),
            "expected {expected:?}: any status counts as sent\n{dump}"
        );
    }
}
