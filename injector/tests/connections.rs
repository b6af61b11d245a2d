//! The injector's connections over real HTTPS on loopback, as the API server
//! uses them (SPEC §10): kept-alive connections that idle longer than a request
//! may take, requests whose time limit starts at their first byte, and the drain
//! on SIGTERM. The limits are shortened through the injector's hidden variables
//! (request 1 s, idle 3 s for the real 10 s and 120 s) so nothing waits minutes;
//! the rule they drive is the server's own.

mod support;

use std::io::Write;
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use support::pods::{job_container, job_pod, review};
use support::{Conn, Injector, Pki, scratch};

const REQUEST: Duration = Duration::from_secs(1);
const IDLE: Duration = Duration::from_secs(3);

fn limits() -> [(&'static str, &'static str); 2] {
    [
        ("TANDEM_INJECTOR_REQUEST_TIMEOUT", "1s"),
        ("TANDEM_INJECTOR_IDLE_TIMEOUT", "3s"),
    ]
}

fn body(uid: &str) -> Vec<u8> {
    review(uid, &job_pod("j", vec![job_container("job")], vec![]))
        .to_string()
        .into_bytes()
}

fn answered(conn: &mut Conn, uid: &str) {
    let answer = conn
        .send("POST", "/mutate?timeout=10s", &body(uid))
        .unwrap_or_else(|e| panic!("{uid}: no answer: {e}"));
    assert_eq!(answer.status, 200, "{uid}: {}", answer.text());
    assert_eq!(answer.json()["response"]["uid"], uid);
}

#[test]
fn the_real_limits_outlast_the_api_servers_idle_connections() {
    let limits = tandem_injector::server::Limits::default();
    // The API server keeps an idle connection to a webhook up to 90 s.
    assert!(limits.idle >= Duration::from_secs(120), "{limits:?}");
    assert_eq!(limits.request, Duration::from_secs(10));
    assert_eq!(limits.drain, Duration::from_secs(10));
}

#[test]
fn requests_after_a_long_idle_or_past_the_request_limit_are_answered() {
    let dir = scratch("idle");
    let pki = Pki::new();
    let injector = Injector::start_env(&pki, &dir, &limits());
    let client = pki.client();

    // Kept alive, then idle for 95 s of the real 120 s (scaled): still served.
    let mut kept = client.connect(injector.addr);
    answered(&mut kept, "first");
    thread::sleep(IDLE.mul_f64(95.0 / 120.0));
    answered(&mut kept, "after-95s");

    // A new connection whose request comes when a request's whole time limit
    // has passed since the handshake (the old 10 s mark): its time starts at
    // its first byte, so it is answered.
    let mut late = client.connect(injector.addr);
    thread::sleep(REQUEST.mul_f64(1.5));
    answered(&mut late, "after-the-request-limit");
    thread::sleep(REQUEST.mul_f64(1.5));
    answered(&mut late, "again-after-the-request-limit");

    // Past the idle limit the injector closes it, and says nothing: an idle
    // connection is no failure.
    thread::sleep(IDLE + REQUEST);
    assert!(kept.closed_by_server(), "idle past the limit: closed");
    let log = injector.log();
    assert!(!log.contains("warning"), "{log}");
}

#[test]
fn a_slow_request_is_cut_at_its_own_time_limit() {
    let dir = scratch("slow-request");
    let pki = Pki::new();
    let injector = Injector::start_env(&pki, &dir, &limits());
    let client = pki.client();
    let mut conn = client.connect(injector.addr);
    // Idle first: no limit runs yet.
    thread::sleep(REQUEST.mul_f64(1.5));
    let head = b"POST /mutate HTTP/1.1\r\nHost: localhost\r\nX-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let first = Instant::now();
    let mut cut = None;
    for byte in head.iter().cycle().take(400) {
        let sent = conn.tls.write_all(&[*byte]).and_then(|_| conn.tls.flush());
        if sent.is_err() || (first.elapsed() > REQUEST && conn.closed_by_server()) {
            cut = Some(first.elapsed());
            break;
        }
        thread::sleep(Duration::from_millis(50));
    }
    let cut = cut.expect("the trickling request was never cut off");
    assert!(
        cut >= REQUEST.mul_f64(0.9) && cut < REQUEST * 5,
        "cut {cut:?} after its first byte"
    );
    injector.wait_log("deadline passed");
}

#[test]
fn on_sigterm_reviews_are_answered_for_the_drain_then_it_stops_and_exits_0() {
    let dir = scratch("drain");
    let pki = Pki::new();
    let drain = Duration::from_secs(2);
    // The review begun during the drain must end within its own time limit.
    let vars = [
        ("TANDEM_INJECTOR_REQUEST_TIMEOUT", "10s"),
        ("TANDEM_INJECTOR_DRAIN", "2s"),
    ];
    let mut injector = Injector::start_env(&pki, &dir, &vars);
    let client = pki.client();
    let addr = injector.addr;

    let mut kept = client.connect(addr);
    answered(&mut kept, "before");
    let mut idle = client.connect(addr);
    answered(&mut idle, "idle-before");

    let signalled = Instant::now();
    injector.signal(libc::SIGTERM);
    injector.wait_log("answering reviews for 2s more");

    let health = client.connect(addr).send("GET", "/healthz", b"").unwrap();
    assert_eq!(health.status, 503, "{}", health.text());

    // A new connection during the drain, and a kept-alive one from before:
    // both answered, and told the connection closes after it.
    let mut fresh = client.connect(addr);
    let answer = fresh
        .send("POST", "/mutate", &body("during-drain"))
        .unwrap();
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("connection"), Some("close"));
    let answer = kept.send("POST", "/mutate", &body("kept")).unwrap();
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("connection"), Some("close"));

    // A review begun during the drain and finished after it: answered.
    let review = body("in-flight");
    let (mut busy, rest) = client.post_half(addr, "/mutate", &review);

    injector.wait_log("stopping: finishing");
    assert!(signalled.elapsed() >= drain, "{:?}", signalled.elapsed());
    assert!(
        TcpStream::connect(addr).is_err(),
        "no new connection after the drain"
    );
    assert!(
        idle.closed_by_server(),
        "idle through the drain: closed at its end"
    );
    busy.tls.write_all(rest).unwrap();
    busy.tls.flush().unwrap();
    let answer = busy.read_response().unwrap();
    assert_eq!(answer.json()["response"]["uid"], "in-flight");

    injector.assert_stopped_cleanly();
}
