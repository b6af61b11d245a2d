//! One HTTPS connection: its TLS handshake, then its requests, each read
//! within the request limit, answered by `routes`, counted and logged; a
//! review answered after its client stopped waiting, or cut off mid-request,
//! is counted as not answered in time.

use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use rustls::{ServerConnection, StreamOwned};

use super::http::{self, NoRequest, Request};
use super::poll::wait;
use super::routes;
use super::shared::Shared;
use super::timed_stream::TimedStream;
use crate::inject::Scope;
use crate::metrics::{self, Counter};
use crate::say;
use crate::webhook::TIMEOUT_SECONDS;

/// One connection: the TLS handshake, then requests until the client closes,
/// idles too long, fails, or the drain ends.
pub(super) fn serve(shared: &Shared, stream: TcpStream, peer: SocketAddr) {
    let _ = stream.set_nodelay(true);
    let conn = match ServerConnection::new(shared.tls.clone()) {
        Ok(conn) => conn,
        Err(e) => return say!("warning: {peer}: TLS: {e}"),
    };
    let limits = shared.limits;
    let fds = [stream.as_raw_fd(), shared.closing.as_raw_fd()];
    let mut tls = StreamOwned::new(conn, TimedStream::new(stream, limits.request));
    while tls.conn.is_handshaking() {
        if let Err(e) = tls.conn.complete_io(&mut tls.sock) {
            return failed(peer, &e, true);
        }
    }
    let mut buf = Vec::new();
    loop {
        let buffered = !buf.is_empty()
            || tls
                .conn
                .process_new_packets()
                .is_ok_and(|s| s.plaintext_bytes_to_read() > 0);
        // Idle: no deadline runs until the next request's first byte.
        if !buffered && !matches!(wait(&fds, Some(limits.idle)), Ok(Some(0))) {
            break; // idle too long, or the drain is over
        }
        tls.sock.renew(limits.request);
        let first_byte = Instant::now();
        match http::read_request(&mut tls, &mut buf) {
            Ok(request) => match respond(shared, &mut tls, &request, peer, first_byte) {
                Some(true) => {}
                Some(false) => break,
                None => return,
            },
            Err(NoRequest::Closed) => return,
            Err(NoRequest::Refused(status, reason)) => {
                metrics::count(Counter::ErrorBadRequest);
                say!("warning: {peer}: {} {}: {reason}", status.0, status.1);
                let body = format!("tandem-injector: {reason}\n");
                let _ =
                    http::write_response(&mut tls, status, "text/plain", body.as_bytes(), false);
                break;
            }
            Err(NoRequest::Io(e)) => {
                // Bytes had come (the wait said so) and not the whole request.
                if e.kind() == io::ErrorKind::TimedOut {
                    metrics::count(Counter::ReviewCutOff);
                }
                return failed(peer, &e, buf.is_empty());
            }
        }
    }
    tls.conn.send_close_notify();
    tls.sock.renew(Duration::from_secs(1));
    let _ = tls.flush();
}

/// The TLS stream of one connection.
type Tls = StreamOwned<ServerConnection, TimedStream>;

/// Answers `request`, whose first byte came at `first_byte` (counted, its
/// latency observed): whether the connection stays open for another; `None`
/// when the answer could not be written.
fn respond(
    shared: &Shared,
    tls: &mut Tls,
    request: &Request,
    peer: SocketAddr,
    first_byte: Instant,
) -> Option<bool> {
    let read = Instant::now();
    // While draining, each connection closes after its answer, so none is
    // left idle, open to a request, when the drain ends.
    let keep = request.keep_alive && !shared.draining();
    let (status, kind, body) = routes::answer(
        request,
        &shared.install,
        &shared.registry,
        shared.draining(),
        peer,
    );
    let (took, waited) = (first_byte.elapsed(), waited_for(request));
    if is_review(request) && took > waited {
        metrics::count(Counter::ReviewAnsweredLate);
        say!(
            "warning: {peer}: a review answered {took:.1?} after its first byte, later than \
             its client waits ({waited:?})"
        );
    }
    if let Err(e) = http::write_response(tls, status, kind, &body, keep) {
        metrics::count(Counter::ErrorConnection);
        say!("warning: {peer}: answering: {e}");
        return None;
    }
    if request.path.starts_with("/mutate") && status == http::OK {
        metrics::observe(read.elapsed());
    }
    Some(keep)
}

/// Whether `request` is an admission review (a POST to a webhook's path).
fn is_review(request: &Request) -> bool {
    request.method == "POST" && Scope::from_path(&request.path).is_some()
}

/// How long the client waits for the answer to `request`: its `timeout`, or
/// else the webhook configuration's `timeoutSeconds`.
fn waited_for(request: &Request) -> Duration {
    request
        .timeout
        .unwrap_or(Duration::from_secs(TIMEOUT_SECONDS.unsigned_abs()))
}

/// Logs why a connection failed: handshake failures (a client that does not
/// trust the CA, plain HTTP) and time limits are worth a line; a client that
/// closes with nothing unread (`nothing_read`) is not.
fn failed(peer: SocketAddr, e: &io::Error, nothing_read: bool) {
    if e.kind() == io::ErrorKind::InvalidData {
        metrics::count(Counter::ErrorTls);
        say!("warning: {peer}: TLS: {e}");
    } else if e.kind() != io::ErrorKind::UnexpectedEof || !nothing_read {
        metrics::count(Counter::ErrorConnection);
        say!("warning: {peer}: {e}");
    }
}
