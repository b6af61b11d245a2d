//! The HTTPS server: one thread per connection up to a cap (past it, new
//! connections wait in the listen backlog), every request within a deadline, and
//! a clean stop: when the stop socket turns readable (SIGTERM), it stops
//! accepting, closes idle connections, answers the requests in flight and
//! returns once every connection has ended.

use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use rustls::{ServerConfig, ServerConnection, StreamOwned};

use crate::admission;
use crate::deadline::Deadline;
use crate::http::{self, Failure, Request, Status};
use crate::inject::Scope;
use crate::install::Install;
use crate::registry::Registry;
use crate::say;

/// Connections served at once, at most; more wait in the listen backlog.
pub const MAX_CONNECTIONS: usize = 128;
/// A request, TLS handshake included, is read and answered within this.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// A kept-alive connection with no request for this long is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Each connection thread's stack: the JSON parser's depth is bounded (128).
const STACK_SIZE: usize = 512 * 1024;

/// What every connection shares.
struct Shared {
    tls: Arc<ServerConfig>,
    install: Install,
    registry: Arc<Registry>,
    stop: UnixStream,
    open: Mutex<usize>,
    closed: Condvar,
}

impl Shared {
    fn stopping(&self) -> bool {
        matches!(
            wait(&[self.stop.as_raw_fd()], Some(Duration::ZERO)),
            Ok(Some(_))
        )
    }
}

/// Serves `listener` until `stop` turns readable (a byte written to its peer,
/// or the peer closed), then finishes what is in flight. `install` is the
/// tandem image and its route into the Pods; `registry` reads the images of
/// job containers without `command`.
pub fn run(
    listener: TcpListener,
    tls: Arc<ServerConfig>,
    install: Install,
    registry: Arc<Registry>,
    stop: UnixStream,
) -> io::Result<()> {
    let shared = Arc::new(Shared {
        tls,
        install,
        registry,
        stop,
        open: Mutex::new(0),
        closed: Condvar::new(),
    });
    let fds = [listener.as_raw_fd(), shared.stop.as_raw_fd()];
    loop {
        {
            let mut open = shared.open.lock().unwrap_or_else(PoisonError::into_inner);
            while *open >= MAX_CONNECTIONS && !shared.stopping() {
                open = shared
                    .closed
                    .wait_timeout(open, Duration::from_millis(100))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        }
        wait(&fds, None)?;
        if shared.stopping() {
            break;
        }
        match listener.accept() {
            Ok((stream, peer)) => start(&shared, stream, peer),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                // Out of descriptors or memory: wait a little rather than spin.
                say!("warning: accept: {e}");
                thread::sleep(Duration::from_millis(100));
            }
        }
    }
    drop(listener);
    let mut open = shared.open.lock().unwrap_or_else(PoisonError::into_inner);
    if *open > 0 {
        say!("stopping: finishing {} open connection(s)", *open);
    }
    while *open > 0 {
        open = shared
            .closed
            .wait(open)
            .unwrap_or_else(PoisonError::into_inner);
    }
    Ok(())
}

/// Counts a connection open for as long as it lives, its thread's unwinding
/// included.
struct Slot(Arc<Shared>);

impl Drop for Slot {
    fn drop(&mut self) {
        *self.0.open.lock().unwrap_or_else(PoisonError::into_inner) -= 1;
        self.0.closed.notify_all();
    }
}

fn start(shared: &Arc<Shared>, stream: TcpStream, peer: SocketAddr) {
    *shared.open.lock().unwrap_or_else(PoisonError::into_inner) += 1;
    let slot = Slot(shared.clone());
    let spawned = thread::Builder::new()
        .name(format!("conn {peer}"))
        .stack_size(STACK_SIZE)
        .spawn(move || serve(&slot.0, stream, peer));
    if let Err(e) = spawned {
        // The closure, and with it the slot and the stream, is dropped.
        say!("warning: {peer}: cannot start a thread: {e}");
    }
}

/// One connection: TLS, then requests until the client closes, idles, fails, or
/// the server stops.
fn serve(shared: &Shared, stream: TcpStream, peer: SocketAddr) {
    let _ = stream.set_nodelay(true);
    let conn = match ServerConnection::new(shared.tls.clone()) {
        Ok(conn) => conn,
        Err(e) => return say!("warning: {peer}: TLS: {e}"),
    };
    let fds = [stream.as_raw_fd(), shared.stop.as_raw_fd()];
    let mut tls = StreamOwned::new(conn, Deadline::new(stream, REQUEST_TIMEOUT));
    let mut buf = Vec::new();
    loop {
        let buffered = !buf.is_empty()
            || tls
                .conn
                .process_new_packets()
                .is_ok_and(|s| s.plaintext_bytes_to_read() > 0);
        if !buffered && !matches!(wait(&fds, Some(IDLE_TIMEOUT)), Ok(Some(0))) {
            break; // idle too long, or stopping
        }
        tls.sock.renew(REQUEST_TIMEOUT);
        match http::read_request(&mut tls, &mut buf) {
            Ok(request) => {
                let keep = request.keep_alive && !shared.stopping();
                let (status, kind, body) = route(shared, &request, peer);
                if let Err(e) = http::write_response(&mut tls, status, kind, &body, keep) {
                    say!("warning: {peer}: answering: {e}");
                    return;
                }
                if !keep {
                    break;
                }
            }
            Err(Failure::Closed) => return,
            Err(Failure::Refused(status, reason)) => {
                say!("warning: {peer}: {} {}: {reason}", status.0, status.1);
                let body = format!("tandem-injector: {reason}\n");
                let _ =
                    http::write_response(&mut tls, status, "text/plain", body.as_bytes(), false);
                break;
            }
            Err(Failure::Io(e)) => {
                // Handshake failures (a client that does not trust the CA, plain
                // HTTP) and timeouts: worth a line, the connection ends.
                if e.kind() == io::ErrorKind::InvalidData {
                    say!("warning: {peer}: TLS: {e}");
                } else if e.kind() != io::ErrorKind::UnexpectedEof || !buf.is_empty() {
                    say!("warning: {peer}: {e}");
                }
                return;
            }
        }
    }
    tls.conn.send_close_notify();
    tls.sock.renew(Duration::from_secs(1));
    let _ = tls.flush();
}

/// The answer to one request: status, content type, body.
fn route(shared: &Shared, request: &Request, peer: SocketAddr) -> (Status, &'static str, Vec<u8>) {
    let scope = match request.path.as_str() {
        "/healthz" if request.method == "GET" => return (http::OK, "text/plain", b"ok\n".to_vec()),
        "/mutate" => Scope::Label,
        "/mutate/namespace" => Scope::Namespace,
        "/healthz" => {
            return (
                http::METHOD_NOT_ALLOWED,
                "text/plain",
                b"GET /healthz\n".to_vec(),
            );
        }
        _ => {
            let text =
                "tandem-injector: no such path: POST /mutate or /mutate/namespace, GET /healthz\n";
            return (http::NOT_FOUND, "text/plain", text.as_bytes().to_vec());
        }
    };
    if request.method != "POST" {
        let text = format!("tandem-injector: {} takes POST\n", request.path);
        return (http::METHOD_NOT_ALLOWED, "text/plain", text.into_bytes());
    }
    let deadline = Instant::now() + shared.registry.deadline;
    let answer = admission::answer_looking(
        &request.body,
        &shared.install,
        scope,
        &shared.registry,
        deadline,
    );
    match answer {
        Ok(answer) => {
            let warnings: String = answer
                .warnings
                .iter()
                .map(|w| format!("; warning: {w}"))
                .collect();
            say!("{}{warnings}", answer.summary);
            (http::OK, "application/json", answer.body)
        }
        Err(reason) => {
            say!("warning: {peer}: 400: {reason}");
            let text = format!("tandem-injector: {reason}\n");
            (http::BAD_REQUEST, "text/plain", text.into_bytes())
        }
    }
}

/// Waits until one of `fds` is readable (or hung up); its index, or `None`
/// when `timeout` passed first (`None` timeout: no limit).
fn wait(fds: &[RawFd], timeout: Option<Duration>) -> io::Result<Option<usize>> {
    let mut polled: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = timeout.map_or(-1, |t| i32::try_from(t.as_millis()).unwrap_or(i32::MAX));
    loop {
        // SAFETY: `polled` is a live, initialised array of `polled.len()` pollfd
        // structs for the length of the call; poll only writes their `revents`.
        let n = unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, ms) };
        if n >= 0 {
            return Ok(polled.iter().position(|p| p.revents != 0));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
