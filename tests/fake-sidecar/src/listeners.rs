//! Sidecars that are only a port or a socket, for tandem's `tcp://` and `unix://`
//! readiness checks (SPEC §3) in the tests and the bench: a TCP port bound from
//! the start that accepts only once told to (so its number is never raced for,
//! and no connection to it can be a self-connect), a unix socket listener, and
//! what each connection to them carried.

use std::io::{self, Read};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// One accepted connection: when it came, and how many bytes arrived before the
/// peer closed it (`None`: still open after [`HELD_OPEN`]).
#[derive(Debug, Clone, Copy)]
pub struct Accepted {
    pub at: Instant,
    pub bytes_before_close: Option<usize>,
}

/// How long a connection may stay open before it counts as left open: a test
/// that checks it keeps tandem running longer than this after the connection.
pub const HELD_OPEN: Duration = Duration::from_secs(1);

/// The connections a listener accepted, each recorded once its end is known.
pub type Log = Arc<Mutex<Vec<Accepted>>>;

/// Every connection accepted so far whose end is known.
pub fn accepted(log: &Log) -> Vec<Accepted> {
    log.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// A loopback TCP port, bound now, listening only after [`LatePort::listen`]:
/// until then every connection to it is refused.
pub struct LatePort {
    socket: Option<OwnedFd>,
    port: u16,
    pub log: Log,
}

impl LatePort {
    /// A port on 127.0.0.1.
    pub fn v4() -> LatePort {
        Self::bind(Ipv4Addr::LOCALHOST.into()).expect("bind 127.0.0.1:0")
    }

    /// A port on ::1; `Err` where the host has no IPv6 loopback.
    pub fn v6() -> io::Result<LatePort> {
        Self::bind(Ipv6Addr::LOCALHOST.into())
    }

    /// Binds a socket to `ip` and a free port without listening (std binds and
    /// listens in one call).
    fn bind(ip: IpAddr) -> io::Result<LatePort> {
        // SAFETY: sockaddr_storage is plain data, valid when zeroed.
        let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let (family, len) = match ip {
            IpAddr::V4(v4) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: 0,
                    sin_addr: libc::in_addr {
                        s_addr: u32::from(v4).to_be(),
                    },
                    sin_zero: [0; 8],
                };
                // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
                unsafe { std::ptr::write((&raw mut storage).cast(), sin) };
                (libc::AF_INET, size_of::<libc::sockaddr_in>())
            }
            IpAddr::V6(v6) => {
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: 0,
                    sin6_flowinfo: 0,
                    sin6_addr: libc::in6_addr {
                        s6_addr: v6.octets(),
                    },
                    sin6_scope_id: 0,
                };
                // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
                unsafe { std::ptr::write((&raw mut storage).cast(), sin6) };
                (libc::AF_INET6, size_of::<libc::sockaddr_in6>())
            }
        };
        // SAFETY: socket takes plain integers; the result is checked below.
        let fd = unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a new socket that nothing else owns.
        let socket = unsafe { OwnedFd::from_raw_fd(fd) };
        let ptr = (&raw mut storage).cast::<libc::sockaddr>();
        let mut len = len as libc::socklen_t;
        // SAFETY: ptr points to a sockaddr of the family and `len` it says.
        if unsafe { libc::bind(socket.as_raw_fd(), ptr, len) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: ptr and len describe writable storage of the socket's family.
        if unsafe { libc::getsockname(socket.as_raw_fd(), ptr, &mut len) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // sin_port and sin6_port sit at the same place, after the family.
        // SAFETY: storage holds a sockaddr_in or sockaddr_in6, both start so.
        let port = u16::from_be(unsafe { (*ptr.cast::<libc::sockaddr_in>()).sin_port });
        Ok(LatePort {
            socket: Some(socket),
            port,
            log: Log::default(),
        })
    }

    /// The port number.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Starts accepting now, recording each connection in [`LatePort::log`].
    pub fn listen(&mut self) {
        let listener = self.start_listening();
        let incoming = std::iter::from_fn(move || Some(listener.accept().map(|(s, _)| s)));
        serve(incoming, TcpStream::set_read_timeout, &self.log);
    }

    /// Starts accepting now and hands the listener over: the kernel completes
    /// each handshake into its backlog whether or not anyone calls `accept`, and
    /// dropping it closes the port (the bench, which opens hundreds).
    pub fn into_listener(mut self) -> TcpListener {
        self.start_listening()
    }

    fn start_listening(&mut self) -> TcpListener {
        let socket = self.socket.take().expect("listen once");
        // SAFETY: listen takes the descriptor this OwnedFd holds and a constant.
        let rc = unsafe { libc::listen(socket.as_raw_fd(), 16) };
        assert_eq!(rc, 0, "listen: {}", io::Error::last_os_error());
        TcpListener::from(socket)
    }
}

/// A unix socket listener at `path`, accepting from now on; each connection is
/// recorded in the returned log.
pub fn unix_listener(path: &Path) -> Log {
    let listener = UnixListener::bind(path).expect("bind the unix socket");
    let log = Log::default();
    let incoming = std::iter::from_fn(move || Some(listener.accept().map(|(s, _)| s)));
    serve(incoming, UnixStream::set_read_timeout, &log);
    log
}

/// Accepts from `incoming` in a thread for the rest of the test process, and
/// reads each connection to its end on a thread of its own.
fn serve<S: Read + Send + 'static>(
    incoming: impl Iterator<Item = io::Result<S>> + Send + 'static,
    set_read_timeout: fn(&S, Option<Duration>) -> io::Result<()>,
    log: &Log,
) {
    let log = Arc::clone(log);
    thread::spawn(move || {
        for mut stream in incoming.map_while(Result::ok) {
            let at = Instant::now();
            let log = Arc::clone(&log);
            thread::spawn(move || {
                let bytes_before_close = set_read_timeout(&stream, Some(HELD_OPEN))
                    .ok()
                    .and_then(|()| read_to_close(&mut stream));
                log.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(Accepted {
                        at,
                        bytes_before_close,
                    });
            });
        }
    });
}

/// Reads until the peer closes: the bytes that came, or `None` if it stayed open.
fn read_to_close(stream: &mut impl Read) -> Option<usize> {
    let mut total = 0;
    let mut buf = [0u8; 256];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Some(total),
            Ok(n) => total += n,
            // A reset is a close too.
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Some(total),
            Err(_) => return None,
        }
    }
}
