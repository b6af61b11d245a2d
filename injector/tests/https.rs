//! The injector binary over real HTTPS on loopback, played against as the API
//! server would: reviews of Job Pods in, JSONPatches out and applied; bad
//! requests, slow clients, certificate renewal, SIGTERM and bad command lines.
//!
//! The patched Pods are also written to `target/tmp/injector/patched/` (and the
//! Pods as sent to `original/`) for `make injector-manifests`, which validates
//! them against the Kubernetes schema, and `make injector-pods`, which runs them
//! under podman.

mod support;

use std::fs;
use std::io::Write;
use std::net::TcpStream;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::json;

use support::pods::{self, job_container, job_pod, review};
use support::{Injector, Pki, answered, scratch};

#[test]
fn each_job_pod_is_answered_over_https_with_a_patch_that_applies() {
    let dir = scratch("cases");
    let pki = Pki::new();
    let injector = Injector::start(&pki, &dir);
    let client = pki.client();
    let out = scratch("patched");
    let originals = scratch("original");
    for (name, pod) in pods::cases() {
        let uid = format!("uid-{name}");
        let answer = client.review(injector.addr, &review(&uid, &pod));
        assert_eq!(answer.status, 200, "{name}: {}", answer.text());
        assert_eq!(answer.header("content-type"), Some("application/json"));
        let body = answer.json();
        assert_eq!(body["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(body["kind"], "AdmissionReview");
        let (patched, response) = answered(&pod, &body);
        assert_eq!(response["uid"], uid.as_str());
        assert_eq!(response["allowed"], true);
        let job = &patched["spec"]["containers"][0];
        assert_eq!(job["command"][0], "/tandem/tandem", "{name}");
        assert_eq!(
            patched["spec"]["initContainers"]
                .as_array()
                .unwrap()
                .last()
                .unwrap()["name"],
            "tandem-install"
        );
        assert!(
            patched["metadata"]["annotations"]["tandem.dev/injection"].is_string(),
            "{name}"
        );
        if name == "no-command" {
            let warning = response["warnings"][0].as_str().unwrap();
            assert!(
                // Its image's registry is not reachable from here: the
                // warning says what was tried and the fix.
                warning.contains("\"uploader\"") && warning.contains("entrypoint annotation"),
                "{warning}"
            );
        } else {
            assert!(response["warnings"].is_null(), "{name}: {response}");
        }

        // The API server calls again after another webhook (reinvocation):
        // nothing more to change.
        let again = client.review(injector.addr, &review(&uid, &patched)).json();
        assert_eq!(
            again["response"],
            json!({"uid": uid, "allowed": true}),
            "{name}"
        );

        let file = format!("{name}.json");
        fs::write(
            out.join(&file),
            serde_json::to_string_pretty(&patched).unwrap(),
        )
        .unwrap();
        fs::write(
            originals.join(&file),
            serde_json::to_string_pretty(&pod).unwrap(),
        )
        .unwrap();
    }
    // Its image's registry is not reachable from here (no such host, or no
    // answer within the deadline): the line names the image and the fix.
    let line = injector.wait_log(
        "tandem-injector: pod default/no-command-* (Job no-command): wrapped job (command from \
         the spec); not wrapped: uploader: it has no command and its image \
         registry.example.com/myjob-distroless:1.0 was not read: ",
    );
    assert!(line.contains("entrypoint annotation"), "{line}");
    for line in [
        "pod default/istio-classic-* (Job istio-classic): wrapped job (command from the spec; \
         added TANDEM_MESH=istio)",
        "pod default/istio-classic-* (Job istio-classic): wrapped job (by an earlier review)",
    ] {
        // A whole line: the log reader may lag behind the answers.
        let got = injector.wait_log(&format!("tandem-injector: {line}"));
        assert_eq!(got, format!("tandem-injector: {line}"));
    }
}

#[test]
fn a_dry_run_is_answered_the_same_and_logged_as_one() {
    let dir = scratch("dry-run");
    let pki = Pki::new();
    let injector = Injector::start(&pki, &dir);
    let client = pki.client();
    let pod = job_pod("dry", vec![job_container("job")], vec![]);
    let mut dry = review("dry", &pod);
    dry["request"]["dryRun"] = json!(true);
    let wet = client.review(injector.addr, &review("dry", &pod)).json();
    let answer = client.review(injector.addr, &dry).json();
    assert_eq!(answer, wet);
    let (patched, _) = answered(&pod, &answer);
    assert_eq!(
        patched["metadata"]["annotations"]["tandem.dev/injection"],
        "wrapped job (command from the spec)"
    );
    // Each answer's line is logged before it is sent; the log reader may lag.
    let line = "pod default/dry-* (Job dry): wrapped job (command from the spec)";
    injector.wait_log(&format!("tandem-injector: dry run: {line}"));
    let log = injector.log();
    assert!(log.contains(&format!("tandem-injector: {line}\n")), "{log}");
}

#[test]
fn a_pod_not_opted_in_or_restarted_for_ever_is_allowed_unchanged() {
    let dir = scratch("unchanged");
    let pki = Pki::new();
    let injector = Injector::start(&pki, &dir);
    let client = pki.client();
    let mut deployment = job_pod("web", vec![job_container("web")], vec![]);
    deployment["metadata"]["ownerReferences"][0]["kind"] = json!("ReplicaSet");
    deployment["metadata"]["ownerReferences"][0]["apiVersion"] = json!("apps/v1");
    deployment["spec"]["restartPolicy"] = json!("Always");
    let mut unlabelled = job_pod("j", vec![job_container("job")], vec![]);
    unlabelled["metadata"]["labels"]
        .as_object_mut()
        .unwrap()
        .remove("tandem.dev/inject");
    for pod in [deployment, unlabelled.clone()] {
        let answer = client.review(injector.addr, &review("u", &pod)).json();
        assert_eq!(answer["response"], json!({"uid": "u", "allowed": true}));
    }
    // The namespace route: the namespace is labelled, the Pod need not be.
    let body = review("n", &unlabelled).to_string();
    let answer = client
        .post(injector.addr, "/mutate/namespace", body.as_bytes())
        .json();
    assert!(answer["response"]["patch"].is_string(), "{answer}");
    // A labelled Pod that no Job owns but runs to completion is changed.
    let bare = pods::bare_pod("p", vec![job_container("job")], vec![]);
    let answer = client.review(injector.addr, &review("b", &bare)).json();
    assert!(answer["response"]["patch"].is_string(), "{answer}");
}

#[test]
fn bad_requests_get_a_4xx_with_the_reason_and_the_server_goes_on() {
    let dir = scratch("bad");
    let pki = Pki::new();
    let injector = Injector::start(&pki, &dir);
    let client = pki.client();
    let addr = injector.addr;

    let not_json = client.post(addr, "/mutate", b"{\"apiVersion\": ");
    assert_eq!(not_json.status, 400);
    assert!(
        not_json.text().contains("the body is not JSON"),
        "{}",
        not_json.text()
    );

    let v1beta1 = json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {"uid": "x"}});
    let old = client.post(addr, "/mutate", v1beta1.to_string().as_bytes());
    assert_eq!(old.status, 400);
    assert!(
        old.text()
            .contains("expected an AdmissionReview of admission.k8s.io/v1"),
        "{}",
        old.text()
    );

    let mut conn = client.connect(addr);
    let huge = "POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Length: 3000000\r\n\r\n";
    conn.tls.write_all(huge.as_bytes()).unwrap();
    let too_large = conn.read_response().unwrap();
    assert_eq!(too_large.status, 413);
    assert!(
        too_large.text().contains("above the 2 MiB limit"),
        "{}",
        too_large.text()
    );
    assert_eq!(too_large.header("connection"), Some("close"));

    let mut conn = client.connect(addr);
    conn.tls
        .write_all(b"POST /mutate HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
        .unwrap();
    assert_eq!(conn.read_response().unwrap().status, 501);

    assert_eq!(
        client
            .connect(addr)
            .send("GET", "/mutate", b"")
            .unwrap()
            .status,
        405
    );
    assert_eq!(
        client
            .connect(addr)
            .send("GET", "/nowhere", b"")
            .unwrap()
            .status,
        404
    );

    // Not TLS at all: the handshake fails, the connection closes, nothing else.
    let mut plain = TcpStream::connect(addr).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    plain.write_all(b"GET /healthz HTTP/1.1\r\n\r\n").unwrap();
    let mut sink = Vec::new();
    let _ = std::io::Read::read_to_end(&mut plain, &mut sink);

    // A deeply nested body: serde_json's depth limit, not a stack overflow.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(client.post(addr, "/mutate", deep.as_bytes()).status, 400);

    let mut kept = client.connect(addr);
    for _ in 0..3 {
        let health = kept.send("GET", "/healthz", b"").unwrap();
        assert_eq!((health.status, health.text().as_str()), (200, "ok\n"));
        assert_eq!(health.header("connection"), Some("keep-alive"));
    }
    let log = injector.log();
    for line in [
        "400: the body is not JSON: EOF while parsing",
        "413 Content Too Large: a body of 3000000 bytes is above the 2 MiB limit",
        "501 Not Implemented: Transfer-Encoding \"chunked\" is not accepted: send Content-Length",
        "TLS: received corrupt message",
        "400: the body is not JSON: recursion limit exceeded",
    ] {
        assert!(log.contains(line), "no {line:?} in the log:\n{log}");
    }
}

#[test]
fn a_client_that_sends_slowly_or_nothing_is_cut_off_at_the_deadline() {
    let dir = scratch("slow");
    let pki = Pki::new();
    // The request limit shortened from 10 s to 2 s (connections.rs tests the rule).
    let injector = Injector::start_env(&pki, &dir, &[("TANDEM_INJECTOR_REQUEST_TIMEOUT", "2s")]);
    let client = pki.client();
    let started = Instant::now();

    // Silent: connects and sends nothing (not even a TLS hello).
    let silent = thread::spawn({
        let addr = injector.addr;
        move || {
            let mut s = TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
            let mut byte = [0u8; 1];
            let _ = std::io::Read::read(&mut s, &mut byte);
            started.elapsed()
        }
    });
    // Slow loris: a byte of the head every 300 ms, forever.
    let mut conn = client.connect(injector.addr);
    let head = b"POST /mutate HTTP/1.1\r\nHost: localhost\r\nX-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let mut cut = None;
    for byte in head.iter().cycle().take(200) {
        if conn
            .tls
            .write_all(&[*byte])
            .and_then(|_| conn.tls.flush())
            .is_err()
        {
            cut = Some(started.elapsed());
            break;
        }
        thread::sleep(Duration::from_millis(300));
        if started.elapsed() > Duration::from_secs(3) && conn.closed_by_server() {
            cut = Some(started.elapsed());
            break;
        }
    }
    let cut = cut.expect("the trickling client was never cut off");
    assert!(cut < Duration::from_secs(10), "cut after {cut:?}");
    let silent = silent.join().unwrap();
    assert!(
        silent >= Duration::from_millis(1800) && silent < Duration::from_secs(10),
        "{silent:?}"
    );
    assert!(
        injector.log().contains("deadline passed"),
        "{}",
        injector.log()
    );
    assert_eq!(
        client
            .connect(injector.addr)
            .send("GET", "/healthz", b"")
            .unwrap()
            .status,
        200
    );
}

#[test]
fn a_renewed_certificate_is_served_without_a_restart() {
    let dir = scratch("renew");
    let pki = Pki::new();
    let injector = Injector::start(&pki, &dir);
    let client = pki.client();
    let served = || {
        let mut conn = client.connect(injector.addr);
        assert_eq!(conn.send("GET", "/healthz", b"").unwrap().status, 200);
        conn.tls.conn.peer_certificates().unwrap()[0].clone()
    };
    let on_disk = || CertificateDer::from_pem_file(dir.join("tls.crt")).unwrap();
    assert_eq!(served(), on_disk());
    let first = on_disk();

    pki.issue(&dir, "renewed");
    assert_ne!(on_disk(), first);
    assert_eq!(
        served(),
        on_disk(),
        "the next handshake serves the renewed certificate"
    );
    injector.wait_log("certificate reloaded from");

    // A key that does not match (a half-done update): the last good pair stays.
    let renewed = on_disk();
    let other = scratch("renew-other");
    let (_, key) = pki.issue(&other, "other");
    fs::copy(key, dir.join("tls.key.new")).unwrap();
    fs::rename(dir.join("tls.key.new"), dir.join("tls.key")).unwrap();
    assert_eq!(served(), renewed);
    injector.wait_log("still serving the previous certificate");
}

#[test]
fn sigterm_with_no_drain_answers_the_review_in_flight_closes_idle_connections_and_exits_0() {
    let dir = scratch("sigterm");
    let pki = Pki::new();
    let mut injector = Injector::start_env(&pki, &dir, &[("TANDEM_INJECTOR_DRAIN", "0")]);
    let client = pki.client();
    let addr = injector.addr;

    let mut idle = client.connect(addr);
    assert_eq!(idle.send("GET", "/healthz", b"").unwrap().status, 200);

    let pod = job_pod("j", vec![job_container("job")], vec![]);
    let body = review("in-flight", &pod).to_string();
    let (mut busy, rest) = client.post_half(addr, "/mutate", body.as_bytes());
    thread::sleep(Duration::from_millis(200));

    injector.signal(libc::SIGTERM);
    injector.wait_log("stopping: finishing");
    assert!(
        idle.closed_by_server(),
        "the idle kept-alive connection is closed"
    );
    assert!(
        TcpStream::connect(addr).is_err(),
        "no new connection is accepted"
    );

    busy.tls.write_all(rest).unwrap();
    busy.tls.flush().unwrap();
    let answer = busy.read_response().unwrap();
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(answer.json()["response"]["uid"], "in-flight");
    assert_eq!(answer.header("connection"), Some("close"));

    injector.assert_stopped_cleanly();
}

#[test]
fn more_connections_than_the_cap_are_all_answered() {
    let dir = scratch("many");
    let pki = Pki::new();
    let injector = Injector::start(&pki, &dir);
    let client = pki.client();
    let body = review("many", &job_pod("j", vec![job_container("job")], vec![])).to_string();
    // Past the cap, connections wait in the backlog, then are served.
    let n = tandem_injector::server::MAX_CONNECTIONS + 32;
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let (client, body) = (client.clone(), body.clone());
            let addr = injector.addr;
            thread::spawn(move || client.post(addr, "/mutate", body.as_bytes()).status)
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), 200);
    }
}

#[test]
fn a_bad_command_line_exits_64_with_one_line_naming_the_setting() {
    let dir = scratch("usage");
    let pki = Pki::new();
    let (cert, key) = pki.issue(&dir, "usage");
    let other = scratch("usage-other");
    let (_, wrong_key) = pki.issue(&other, "other");
    let cert = cert.to_str().unwrap();
    let key = key.to_str().unwrap();
    let wrong_key = wrong_key.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["--tls-cert", cert, "--tls-key", key],
            "missing --image IMAGE (or TANDEM_INJECTOR_IMAGE)",
        ),
        (
            &[
                "--tls-cert",
                cert,
                "--tls-key",
                key,
                "--image",
                "i",
                "--listen",
                "nowhere",
            ],
            "--listen \"nowhere\": expected an IP address",
        ),
        (
            &[
                "--tls-cert",
                "/nonexistent.pem",
                "--tls-key",
                key,
                "--image",
                "i",
            ],
            "--tls-cert /nonexistent.pem: ",
        ),
        (
            &["--tls-cert", key, "--tls-key", key, "--image", "i"],
            "no CERTIFICATE block",
        ),
        (
            &["--tls-cert", cert, "--tls-key", cert, "--image", "i"],
            "--tls-key",
        ),
        (
            &["--tls-cert", cert, "--tls-key", wrong_key, "--image", "i"],
            "does not belong to --tls-cert",
        ),
        (&["--verbose"], "unknown option --verbose"),
    ];
    for (args, expected) in cases {
        let out = Command::new(support::INJECTOR)
            .env_clear()
            .args(*args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(64), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("tandem-injector: ") && stderr.contains(expected),
            "{args:?}: {stderr}"
        );
    }
    let help = Command::new(support::INJECTOR)
        .arg("--help")
        .output()
        .unwrap();
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("TANDEM_INJECTOR_TLS_CERT"));
}
