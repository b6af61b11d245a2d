//! The HTTPS server: one thread per connection up to a cap (more wait in the
//! listen backlog), each request within a time limit from its first byte, idle
//! kept-alive connections open up to a limit, and a drain on SIGTERM (the stop
//! socket readable): `/healthz` 503, reviews still answered for the drain; then
//! it stops accepting, closes idle connections, answers those in flight and
//! returns once every connection has ended.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use rustls::ServerConfig;

use crate::inject::delivery::Install;
use crate::registry::Registry;
use crate::say;

mod connection;
pub mod http;
mod limits;
mod poll;
pub mod routes;
mod shared;
pub mod timed_stream;
pub mod tls;

use connection::serve;
pub use limits::{DRAIN, IDLE_TIMEOUT, Limits, REQUEST_TIMEOUT};
use poll::wait;
use shared::Shared;

/// Connections served at once, at most; more wait in the listen backlog.
pub const MAX_CONNECTIONS: usize = 128;
/// Each connection thread's stack: the JSON parser's depth is bounded (128).
const STACK_SIZE: usize = 512 * 1024;

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
