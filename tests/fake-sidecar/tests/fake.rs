//! Tests of the fake sidecar itself, with plain `TcpStream` requests, so that
//! tandem's tests can trust what it answers and logs.

use fake_sidecar::{FakeAdmin, Fault, Flavor, Req, Response, Script, read_retrying, wait_until};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Bound on every socket operation in these tests, so none can hang.
const IO_TIMEOUT: Duration = Duration::from_secs(3);

/// A fake serving `script` on a free loopback port; stopped when dropped.
fn start(script: Script) -> FakeAdmin {
    FakeAdmin::start(script).expect("fake admin starts")
}

fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT).expect("connect");
    stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    stream.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    stream
}

fn send(stream: &mut TcpStream, method: &str, path: &str) {
    let request = format!("{method} {path} HTTP/1.1\r\nHost: fake\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).expect("send request");
}

/// One request on a fresh connection: `(status, body)`.
fn http(addr: SocketAddr, method: &str, path: &str) -> (u16, String) {
    let mut stream = connect(addr);
    send(&mut stream, method, path);
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read response");
    parse(&response)
}

fn parse(response: &str) -> (u16, String) {
    let (head, body) = response
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no end of head in {response:?}"));
    let status = head
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("bad status line in {response:?}"));
    (status, body.to_owned())
}

/// Reads one response with a `Content-Length` from a kept-alive connection.
fn read_response(stream: &mut TcpStream) -> (u16, String) {
    let mut head = Vec::new();
    let mut byte = [0];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).expect("read head");
        head.push(byte[0]);
        assert!(head.len() < 4096, "head too long: {head:?}");
    }
    let head = String::from_utf8(head).unwrap();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("Content-Length: "))
        .expect("content-length")
        .parse()
        .unwrap();
    let mut body = vec![0; length];
    stream.read_exact(&mut body).expect("read body");
    parse(&(head + &String::from_utf8(body).unwrap()))
}

/// Reads until EOF, an error, or `limit` bytes; returns the bytes and the error.
fn read_bounded(stream: &mut TcpStream, limit: usize) -> (Vec<u8>, Option<io::Error>) {
    let mut bytes = Vec::new();
    let mut buf = vec![0; 64 * 1024];
    while bytes.len() < limit {
        match read_retrying(stream, &mut buf) {
            Ok(0) => return (bytes, None),
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(err) => return (bytes, Some(err)),
        }
    }
    (bytes, None)
}

#[test]
fn envoy_ready_at_once_answers_live() {
    let fake = start(Script::envoy());
    assert_eq!(http(fake.addr(), "GET", "/ready"), (200, "LIVE\n".into()));
    let (status, body) = http(fake.addr(), "GET", "/server_info");
    assert_eq!(status, 200);
    assert!(body.contains("\"state\":\"LIVE\""), "{body}");
    assert!(fake.became_ready_at().is_some());
}

#[test]
fn envoy_never_ready_answers_503_pre_initializing() {
    let fake = start(Script::envoy().never_ready());
    assert_eq!(
        http(fake.addr(), "GET", "/ready"),
        (503, "PRE_INITIALIZING\n".into())
    );
    let (status, body) = http(fake.addr(), "GET", "/server_info");
    assert_eq!(status, 200, "server_info answers in every state");
    assert!(body.contains("\"state\":\"PRE_INITIALIZING\""), "{body}");
    assert_eq!(fake.became_ready_at(), None);
    assert!(!fake.is_ready());
}

#[test]
fn envoy_ready_after_flips_from_503_to_200() {
    let after = Duration::from_millis(300);
    let fake = start(Script::envoy().ready_after(after));
    assert_eq!(http(fake.addr(), "GET", "/ready").0, 503);
    assert_eq!(fake.became_ready_at(), None);
    assert!(wait_until(Duration::from_secs(2), || {
        http(fake.addr(), "GET", "/ready").0 == 200
    }));
    let ready = fake.became_ready_at().expect("ready now");
    assert_eq!(ready - fake.started_at(), after);
    // The log says which probes failed: the 503s come before the flip.
    for req in fake.requests() {
        let expected = if req.at >= ready { 200 } else { 503 };
        assert_eq!(req.status, Some(expected), "{}", fake.dump());
    }
}

#[test]
fn make_ready_flips_a_never_ready_fake() {
    let fake = start(Script::linkerd().never_ready());
    assert_eq!(http(fake.addr(), "GET", "/ready").0, 503);
    fake.make_ready();
    assert_eq!(http(fake.addr(), "GET", "/ready"), (200, "ready\n".into()));
    assert!(fake.ready_mono_ns().is_some());
}

#[test]
fn ready_after_polls_fails_the_first_n_probes() {
    let fake = start(Script::pilot_agent().ready_after_polls(3));
    let statuses: Vec<u16> = (0..5)
        .map(|_| http(fake.addr(), "GET", "/healthz/ready").0)
        .collect();
    assert_eq!(statuses, [503, 503, 503, 200, 200]);
}

#[test]
fn old_envoy_ready_is_404_and_server_info_reports_state() {
    let fake = start(Script::old_envoy().never_ready());
    assert_eq!(http(fake.addr(), "GET", "/ready").0, 404);
    let (status, body) = http(fake.addr(), "GET", "/server_info");
    assert_eq!(status, 200);
    assert!(body.contains("\"state\":\"PRE_INITIALIZING\""), "{body}");
    fake.make_ready();
    let (_, body) = http(fake.addr(), "GET", "/server_info");
    assert!(body.contains("\"state\":\"LIVE\""), "{body}");
}

#[test]
fn envoy_quitquitquit_is_post_only() {
    let fake = start(Script::envoy());
    assert_eq!(http(fake.addr(), "GET", "/quitquitquit").0, 405);
    assert_eq!(fake.quit_requests(), 0, "a GET is not a quit");
    assert_eq!(
        http(fake.addr(), "POST", "/quitquitquit"),
        (200, "OK\n".into())
    );
    assert_eq!(fake.quit_requests(), 1);
    assert_eq!(http(fake.addr(), "GET", "/stats").0, 404);
}

#[test]
fn pilot_agent_answers_healthz_ready_and_quit() {
    let fake = start(Script::pilot_agent().never_ready());
    assert_eq!(http(fake.addr(), "GET", "/healthz/ready").0, 503);
    fake.make_ready();
    assert_eq!(http(fake.addr(), "GET", "/healthz/ready").0, 200);
    assert_eq!(http(fake.addr(), "POST", "/quitquitquit").0, 200);
    assert_eq!(fake.quit_requests(), 1);
    assert_eq!(fake.script().flavor, Flavor::PilotAgent);
}

#[test]
fn linkerd_shutdown_answers_404_when_disabled() {
    let fake = start(Script::linkerd().shutdown_enabled(false));
    assert_eq!(http(fake.addr(), "GET", "/ready"), (200, "ready\n".into()));
    assert_eq!(http(fake.addr(), "POST", "/shutdown").0, 404);
    assert_eq!(fake.quit_requests(), 1, "a refused quit was still sent");
}

#[test]
fn linkerd_shutdown_answers_200_when_enabled() {
    let fake = start(Script::linkerd());
    assert_eq!(http(fake.addr(), "POST", "/shutdown").0, 200);
    assert_eq!(http(fake.addr(), "GET", "/live").0, 200);
}

#[test]
fn generic_answers_any_get_by_readiness_and_any_post_as_quit() {
    let fake = start(Script::generic().never_ready());
    assert_eq!(http(fake.addr(), "GET", "/readiness").0, 503);
    fake.make_ready();
    assert_eq!(http(fake.addr(), "GET", "/anything").0, 200);
    assert_eq!(http(fake.addr(), "POST", "/quitquitquit").0, 200);
    assert_eq!(http(fake.addr(), "POST", "/other").0, 200);
    assert_eq!(fake.quit_requests(), 2);
}

#[test]
fn status_override_fixes_one_path() {
    let fake = start(Script::envoy().status_override("/quitquitquit", 500));
    assert_eq!(http(fake.addr(), "POST", "/quitquitquit").0, 500);
    assert_eq!(http(fake.addr(), "GET", "/ready").0, 200);
}

#[test]
fn a_scripted_response_is_sent_with_its_headers_and_body_on_any_method() {
    let response = Response::new(307)
        .header("Location", "http://127.0.0.1:1/elsewhere")
        .header("X-Fake", "yes")
        .body("moved\n");
    let fake = start(Script::generic().respond("/quit", response));
    for method in ["POST", "GET"] {
        let mut stream = connect(fake.addr());
        send(&mut stream, method, "/quit");
        let mut raw = String::new();
        stream.read_to_string(&mut raw).expect("read response");
        assert!(
            raw.starts_with("HTTP/1.1 307 ")
                && raw.contains("\r\nLocation: http://127.0.0.1:1/elsewhere\r\n")
                && raw.contains("\r\nX-Fake: yes\r\n")
                && raw.contains("\r\nContent-Length: 6\r\n")
                && raw.ends_with("\r\n\r\nmoved\n"),
            "{method}: {raw:?}"
        );
    }
    assert_eq!(
        http(fake.addr(), "POST", "/other").0,
        200,
        "other paths keep the flavor's routes"
    );
}

#[test]
fn request_log_keeps_version_headers_and_body_plain_or_chunked() {
    let fake = start(Script::generic());
    let mut stream = connect(fake.addr());
    stream
        .write_all(
            b"POST /plain HTTP/1.1\r\nHost: fake\r\nContent-Length: 5\r\nX-Case: Kept\r\n\r\nhello\
              POST /chunked HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nTrailer: t\r\n\r\n",
        )
        .expect("send two requests");
    assert_eq!(read_response(&mut stream).0, 200);
    assert_eq!(read_response(&mut stream).0, 200);
    let log = fake.requests();
    assert_eq!(log.len(), 2, "{}", fake.dump());
    assert_eq!(log[0].version, "HTTP/1.1");
    assert_eq!(log[0].header("x-case"), Some("Kept"));
    assert_eq!(log[0].header("content-length"), Some("5"));
    assert_eq!(log[0].body, b"hello");
    assert_eq!(log[1].version, "HTTP/1.0");
    assert_eq!(log[1].header("Transfer-Encoding"), Some("chunked"));
    assert_eq!(log[1].header("Content-Length"), None);
    assert_eq!(log[1].body, b"abcde");
}

#[test]
fn request_log_records_requests_in_order() {
    let fake = start(Script::envoy());
    let before = Instant::now();
    http(fake.addr(), "GET", "/ready?x=1");
    http(fake.addr(), "POST", "/quitquitquit");
    let log: Vec<Req> = fake.requests();
    let seen: Vec<(&str, &str, Option<u16>, bool)> = log
        .iter()
        .map(|r| (r.method.as_str(), r.path.as_str(), r.status, r.quit))
        .collect();
    assert_eq!(
        seen,
        [
            ("GET", "/ready?x=1", Some(200), false),
            ("POST", "/quitquitquit", Some(200), true)
        ]
    );
    assert!(before <= log[0].at && log[0].at <= log[1].at);
    assert!(log[0].mono_ns <= log[1].mono_ns);
    assert_eq!(fake.count("GET", "/ready?x=1"), 1);
    assert_eq!(fake.count("GET", "/ready"), 0);
    assert!(fake.wait_for_request("POST", "/quitquitquit", Duration::ZERO));
    assert!(!fake.wait_for_request("POST", "/shutdown", Duration::from_millis(50)));
}

#[test]
fn wait_for_request_wakes_when_the_request_arrives() {
    let fake = start(Script::envoy());
    let addr = fake.addr();
    let client = std::thread::spawn(move || http(addr, "POST", "/quitquitquit"));
    assert!(fake.wait_for_request("POST", "/quitquitquit", Duration::from_secs(2)));
    assert_eq!(client.join().unwrap().0, 200);
}

#[test]
fn keep_alive_serves_several_requests_on_one_connection() {
    let fake = start(Script::envoy());
    let mut stream = connect(fake.addr());
    // A body must be read and dropped, not taken for the next request.
    stream
        .write_all(b"POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello")
        .unwrap();
    assert_eq!(read_response(&mut stream).0, 404);
    stream
        .write_all(b"POST /y HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
        .unwrap();
    assert_eq!(read_response(&mut stream).0, 404);
    stream.write_all(b"GET /ready HTTP/1.1\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut stream), (200, "LIVE\n".into()));
    let conns: Vec<u64> = fake.requests().iter().map(|r| r.conn).collect();
    assert_eq!(conns, [0, 0, 0]);
    let paths: Vec<String> = fake.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/x", "/y", "/ready"]);
}

#[test]
fn connection_close_is_honoured() {
    let fake = start(Script::envoy());
    let mut stream = connect(fake.addr());
    send(&mut stream, "GET", "/ready");
    let (bytes, err) = read_bounded(&mut stream, 1 << 20);
    assert!(err.is_none(), "{err:?}");
    let response = String::from_utf8(bytes).unwrap();
    assert!(response.contains("Connection: close\r\n"), "{response}");
    assert!(response.ends_with("LIVE\n"), "{response}");
}

#[test]
fn malformed_request_gets_400_and_huge_head_gets_431() {
    let fake = start(Script::envoy());
    let mut stream = connect(fake.addr());
    stream.write_all(b"hello\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert_eq!(parse(&response).0, 400);

    let mut stream = connect(fake.addr());
    let huge = format!("GET /ready HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(20_000));
    // The fake may close before reading everything; only the answer matters.
    let _ = stream.write_all(huge.as_bytes());
    let (bytes, _) = read_bounded(&mut stream, 1 << 20);
    assert!(bytes.starts_with(b"HTTP/1.1 431 "), "{bytes:?}");
    assert!(
        fake.requests().is_empty(),
        "unparsed requests are not logged"
    );
}

#[test]
fn delay_postpones_every_answer_but_not_the_log() {
    let delay = Duration::from_millis(300);
    let fake = start(Script::envoy().delay(delay));
    let sent = Instant::now();
    assert_eq!(http(fake.addr(), "GET", "/ready").0, 200);
    let answered = Instant::now();
    assert!(answered - sent >= delay);
    let logged = fake.requests()[0].at;
    assert!(logged - sent < delay, "logged before the delay");
}

#[test]
fn hang_never_answers() {
    let fake = start(Script::envoy().fault(Fault::Hang));
    let mut stream = connect(fake.addr());
    stream
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    send(&mut stream, "GET", "/ready");
    let mut buf = [0; 16];
    let err = read_retrying(&mut stream, &mut buf).expect_err("no answer");
    assert!(
        matches!(
            err.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ),
        "{err:?}"
    );
    assert_eq!(fake.requests()[0].status, None);
}

#[test]
fn fault_on_one_path_leaves_the_others_working() {
    let fake = start(Script::envoy().fault_on("/quitquitquit", Fault::Reset));
    assert_eq!(http(fake.addr(), "GET", "/ready").0, 200);
    let mut stream = connect(fake.addr());
    send(&mut stream, "POST", "/quitquitquit");
    let (bytes, err) = read_bounded(&mut stream, 1 << 20);
    assert!(bytes.is_empty());
    assert_eq!(err.map(|e| e.kind()), Some(io::ErrorKind::ConnectionReset));
}

#[test]
fn reset_closes_with_rst() {
    let fake = start(Script::envoy().fault(Fault::Reset));
    let mut stream = connect(fake.addr());
    send(&mut stream, "GET", "/ready");
    let (bytes, err) = read_bounded(&mut stream, 1 << 20);
    assert!(bytes.is_empty(), "{bytes:?}");
    assert_eq!(err.map(|e| e.kind()), Some(io::ErrorKind::ConnectionReset));
}

#[test]
fn garbage_sends_non_http_bytes_then_closes() {
    let fake = start(Script::envoy().fault(Fault::Garbage));
    let mut stream = connect(fake.addr());
    send(&mut stream, "GET", "/ready");
    let (bytes, err) = read_bounded(&mut stream, 1 << 20);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(bytes.len(), 64 * 1024);
    assert!(!bytes.starts_with(b"HTTP/"));
}

#[test]
fn endless_body_streams_beyond_one_mebibyte() {
    let fake = start(Script::envoy().fault(Fault::EndlessBody));
    let mut stream = connect(fake.addr());
    send(&mut stream, "GET", "/ready");
    let (bytes, err) = read_bounded(&mut stream, 2 << 20);
    assert!(err.is_none(), "{err:?}");
    assert!(bytes.len() >= 2 << 20);
    assert!(bytes.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert_eq!(fake.requests()[0].status, Some(200));
}

#[test]
fn trickle_sends_one_byte_every_200ms() {
    let fake = start(Script::envoy().fault(Fault::Trickle));
    let mut stream = connect(fake.addr());
    send(&mut stream, "GET", "/ready");
    let mut first = [0; 64];
    assert_eq!(read_retrying(&mut stream, &mut first).unwrap(), 1);
    assert_eq!(first[0], b'H');
    // Within 500 ms after the first byte, at most 3 more can arrive.
    let until = Instant::now() + Duration::from_millis(500);
    let mut more = 0;
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        match read_retrying(&mut stream, &mut first) {
            Ok(n) => more += n,
            Err(_) => break,
        }
    }
    assert!((1..=3).contains(&more), "{more} bytes");
}

#[test]
fn exit_on_quit_stops_the_server_after_answering() {
    let fake = start(Script::pilot_agent().exit_on_quit(true));
    assert_eq!(http(fake.addr(), "GET", "/healthz/ready").0, 200);
    assert!(!fake.is_stopped());
    assert_eq!(http(fake.addr(), "POST", "/quitquitquit").0, 200);
    fake.wait_until_stopped();
    assert!(wait_until(Duration::from_secs(2), || {
        TcpStream::connect(fake.addr()).is_err()
    }));
}

#[test]
fn drop_does_not_hang_with_open_connections() {
    let fake = start(Script::envoy().fault(Fault::Hang));
    let mut hanging = connect(fake.addr());
    send(&mut hanging, "GET", "/ready");
    assert!(fake.wait_for_request("GET", "/ready", IO_TIMEOUT));
    // An idle connection is open too.
    let _idle = connect(fake.addr());
    let dropped = Instant::now();
    drop(fake);
    assert!(dropped.elapsed() < Duration::from_secs(1));
    // Dropping closed the hanging socket instead of leaking it.
    let (bytes, _) = read_bounded(&mut hanging, 1024);
    assert!(bytes.is_empty());
}

#[test]
fn drop_does_not_hang_while_an_endless_body_is_blocked() {
    let fake = start(Script::envoy().fault(Fault::EndlessBody));
    let mut stream = connect(fake.addr());
    send(&mut stream, "GET", "/ready");
    assert!(fake.wait_for_request("GET", "/ready", IO_TIMEOUT));
    let dropped = Instant::now();
    drop(fake);
    assert!(dropped.elapsed() < Duration::from_secs(1));
}

#[test]
fn flavor_and_fault_names_round_trip() {
    for flavor in [
        Flavor::Envoy,
        Flavor::OldEnvoy,
        Flavor::PilotAgent,
        Flavor::Linkerd,
        Flavor::Generic,
    ] {
        assert_eq!(Flavor::parse(flavor.name()), Some(flavor));
    }
    for fault in [
        Fault::Hang,
        Fault::Reset,
        Fault::Garbage,
        Fault::EndlessBody,
        Fault::Trickle,
    ] {
        assert_eq!(Fault::parse(fault.name()), Some(fault));
    }
    assert_eq!(Flavor::parse("istio"), None);
}
