//! The HTTPS server: one thread per connection up to a cap (more wait in the
//! listen backlog), each request within a time limit from its first byte, idle
//! kept-alive connections open up to a limit, and a drain on SIGTERM (the stop
//! socket readable): `/healthz` 503, reviews still answered for the drain; then
//! it stops accepting, closes idle connections, answers those in flight and
//! returns once every connection has ended.

use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use rustls::{ServerConfig, ServerConnection, StreamOwned};

use crate::deadline::Deadline;
use crate::http::{self, Failure};
use crate::install::Install;
use crate::metrics::{self, Counter};
use crate::registry::Registry;
use crate::routes;
use crate::say;

/// Connections served at once, at most; more wait in the listen backlog.
pub const MAX_CONNECTIONS: usize = 128;
/// A request is read and answered within this from its first byte; a new
/// connection's TLS handshake, within this from the accept (Go's client, the
/// API server's, dials and shakes hands at once).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// A kept-alive connection with no request for this long is closed: above the
/// 90 s the API server keeps an idle connection to a webhook, so it is always
/// the client that closes one, never the injector under a request in flight.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long reviews are still answered after SIGTERM (`--drain`).
pub const DRAIN: Duration = Duration::from_secs(10);
/// Each connection thread's stack: the JSON parser's depth is bounded (128).
const STACK_SIZE: usize = 512 * 1024;

/// The server's time limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// A request's, from its first byte (and a handshake's, from the accept).
    pub request: Duration,
    /// A kept-alive connection's between requests.
    pub idle: Duration,
    /// The drain after SIGTERM.
    pub drain: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            request: REQUEST_TIMEOUT,
            idle: IDLE_TIMEOUT,
            drain: DRAIN,
        }
    }
}

/// What every connection shares.
struct Shared {
    tls: Arc<ServerConfig>,
    install: Install,
    registry: Arc<Registry>,
    limits: Limits,
    /// Readable once SIGTERM came: draining.
    stop: UnixStream,
    /// Readable (its peer closed) once the drain is over: idle connections end.
    closing: UnixStream,
    open: Mutex<usize>,
    closed: Condvar,
}

impl Shared {
    fn draining(&self) -> bool {
        readable(&self.stop)
    }
}

fn readable(socket: &UnixStream) -> bool {
    matches!(
        wait(&[socket.as_raw_fd()], Some(Duration::ZERO)),
        Ok(Some(_))
    )
}

/// Serves `listener` until `stop` turns readable (a byte written to its peer,
/// or the peer closed), drains for `limits.drain`, then finishes what is in
/// flight. `install` is the tandem image and its route into the Pods;
/// `registry` reads the images of job containers without `command`.
pub fn run(
    listener: TcpListener,
    tls: Arc<ServerConfig>,
    install: Install,
    registry: Arc<Registry>,
    limits: Limits,
    stop: UnixStream,
) -> io::Result<()> {
    let (closing, close) = UnixStream::pair()?;
    let shared = Arc::new(Shared {
        tls,
        install,
        registry,
        limits,
        stop,
        closing,
        open: Mutex::new(0),
        closed: Condvar::new(),
    });
    let fds = [listener.as_raw_fd(), shared.stop.as_raw_fd()];
    while !shared.draining() {
        room(&shared, None);
        if wait(&fds, None)? == Some(0) && !shared.draining() {
            accept(&shared, &listener);
        }
    }
    // The Service and the API server take a few seconds to stop sending to a
    // replica that leaves: until then, new connections are still answered.
    say!(
        "stopping: /healthz answers 503; answering reviews for {:?} more",
        limits.drain
    );
    let until = Instant::now() + limits.drain;
    loop {
        room(&shared, Some(until));
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        if wait(&fds[..1], Some(left))? == Some(0) {
            accept(&shared, &listener);
        }
    }
    drop(listener);
    drop(close);
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

/// Waits while `MAX_CONNECTIONS` are open, until one ends, the drain starts, or
/// `until` passes.
fn room(shared: &Shared, until: Option<Instant>) {
    let mut open = shared.open.lock().unwrap_or_else(PoisonError::into_inner);
    while *open >= MAX_CONNECTIONS
        && (until.is_some() || !shared.draining())
        && until.is_none_or(|t| Instant::now() < t)
    {
        open = shared
            .closed
            .wait_timeout(open, Duration::from_millis(100))
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

fn accept(shared: &Arc<Shared>, listener: &TcpListener) {
    match listener.accept() {
        Ok((stream, peer)) => start(shared, stream, peer),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
        Err(e) => {
            // Out of descriptors or memory: wait a little rather than spin.
            say!("warning: accept: {e}");
            thread::sleep(Duration::from_millis(100));
        }
    }
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

/// One connection: the TLS handshake, then requests until the client closes,
/// idles too long, fails, or the drain ends.
fn serve(shared: &Shared, stream: TcpStream, peer: SocketAddr) {
    let _ = stream.set_nodelay(true);
    let conn = match ServerConnection::new(shared.tls.clone()) {
        Ok(conn) => conn,
        Err(e) => return say!("warning: {peer}: TLS: {e}"),
    };
    let limits = shared.limits;
    let fds = [stream.as_raw_fd(), shared.closing.as_raw_fd()];
    let mut tls = StreamOwned::new(conn, Deadline::new(stream, limits.request));
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
        match http::read_request(&mut tls, &mut buf) {
            Ok(request) => {
                let read = Instant::now();
                // While draining, each connection closes after its answer, so
                // none is left idle, open to a request, when the drain ends.
                let keep = request.keep_alive && !shared.draining();
                let (status, kind, body) = routes::answer(
                    &request,
                    &shared.install,
                    &shared.registry,
                    shared.draining(),
                    peer,
                );
                if let Err(e) = http::write_response(&mut tls, status, kind, &body, keep) {
                    metrics::count(Counter::ErrorConnection);
                    say!("warning: {peer}: answering: {e}");
                    return;
                }
                if request.path.starts_with("/mutate") && status == http::OK {
                    metrics::observe(read.elapsed());
                }
                if !keep {
                    break;
                }
            }
            Err(Failure::Closed) => return,
            Err(Failure::Refused(status, reason)) => {
                metrics::count(Counter::ErrorBadRequest);
                say!("warning: {peer}: {} {}: {reason}", status.0, status.1);
                let body = format!("tandem-injector: {reason}\n");
                let _ =
                    http::write_response(&mut tls, status, "text/plain", body.as_bytes(), false);
                break;
            }
            Err(Failure::Io(e)) => return failed(peer, &e, buf.is_empty()),
        }
    }
    tls.conn.send_close_notify();
    tls.sock.renew(Duration::from_secs(1));
    let _ = tls.flush();
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
