//! One poll of a readiness check that is not HTTP (SPEC §3): a TCP port or a unix
//! socket that accepts a connection (closed at once, nothing sent), a file that
//! exists (one `stat`). Each says what it saw in the few words of a progress line.

use std::io::{self, ErrorKind};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::resolve;

/// What a ready socket answered, for the progress line.
const ACCEPTED: &str = "accepted";
/// What a ready file answered.
const EXISTS: &str = "exists";

/// `tcp://HOST:PORT`: `Ok` once a connection is accepted, within `timeout` for the
/// lookup and every address together. Addresses are tried in turn until one
/// accepts, so at most one connection is made; it is closed at once.
pub(super) fn tcp(host: &str, port: u16, timeout: Duration) -> Result<&'static str, String> {
    let deadline = Instant::now() + timeout;
    let addrs = resolve::addrs(host, port, timeout).map_err(|e| match e {
        ureq::Error::HostNotFound => "host not found".to_string(),
        ureq::Error::Timeout(_) => "lookup timed out".to_string(),
        other => other.to_string(),
    })?;
    let mut last = String::from("host not found");
    for addr in addrs {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(short(&io::Error::from(ErrorKind::TimedOut)));
        }
        match TcpStream::connect_timeout(&addr, left) {
            // A connect to a free local port of the ephemeral range can pick that
            // very port as its source and connect to itself (TCP simultaneous
            // open): nothing listens there, so it is not ready.
            Ok(stream) if stream.local_addr().ok() == Some(addr) => last = "refused".into(),
            Ok(_connected) => return Ok(ACCEPTED),
            Err(e) => last = short(&e),
        }
    }
    Err(last)
}

/// `unix:///PATH`: `Ok` once a connection to the socket is accepted; closed at once.
/// A socket file nobody listens on is refused.
pub(super) fn unix(path: &Path) -> Result<&'static str, String> {
    connect_unix(path).map(|()| ACCEPTED).map_err(|e| short(&e))
}

/// `file:///PATH`: `Ok` once `path` exists (a directory too; a symlink counts by
/// what it points to), found with one `stat`.
pub(super) fn file(path: &Path) -> Result<&'static str, String> {
    std::fs::metadata(path)
        .map(|_| EXISTS)
        .map_err(|e| short(&e))
}

/// Connects a non-blocking unix stream socket to `path`, then closes it. Not
/// `UnixStream::connect`: that blocks without a bound when the listener's
/// backlog is full, and a poll must not; non-blocking, the kernel answers at once
/// (`EAGAIN` then).
fn connect_unix(path: &Path) -> io::Result<()> {
    let bytes = path.as_os_str().as_bytes();
    let mut addr = libc::sockaddr_un {
        sun_family: libc::AF_UNIX as libc::sa_family_t,
        sun_path: [0; 108],
    };
    // One byte stays for the terminating NUL (`config` refuses longer paths).
    if bytes.len() >= addr.sun_path.len() {
        return Err(io::Error::from(ErrorKind::InvalidInput));
    }
    for (slot, byte) in addr.sun_path.iter_mut().zip(bytes) {
        *slot = *byte as libc::c_char;
    }
    let flags = libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
    // SAFETY: socket takes no pointers; a negative result is checked below.
    let raw = unsafe { libc::socket(libc::AF_UNIX, flags, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a new descriptor that nothing else owns; dropping the
    // OwnedFd closes it, on every path below.
    let socket = unsafe { OwnedFd::from_raw_fd(raw) };
    let len = std::mem::offset_of!(libc::sockaddr_un, sun_path) + bytes.len() + 1;
    // SAFETY: `addr` is a sockaddr_un that lives across the call, and `len` does
    // not exceed its size (the path fits with its NUL, checked above).
    let rc = unsafe {
        libc::connect(
            socket.as_raw_fd(),
            std::ptr::from_ref(&addr).cast::<libc::sockaddr>(),
            len as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The few words a progress line shows for an error (SPEC §3: `refused`, `missing`…).
fn short(e: &io::Error) -> String {
    match e.kind() {
        ErrorKind::ConnectionRefused => "refused".into(),
        ErrorKind::NotFound => "missing".into(),
        ErrorKind::TimedOut => "timed out".into(),
        ErrorKind::WouldBlock => "busy (backlog full)".into(),
        ErrorKind::PermissionDenied => "permission denied".into(),
        ErrorKind::HostUnreachable | ErrorKind::NetworkUnreachable => "unreachable".into(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::os::unix::net::UnixListener;

    fn dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("tandem-probe-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn tcp_is_ready_once_a_listener_accepts_and_refused_before() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert_eq!(tcp("127.0.0.1", port, SECOND), Ok(ACCEPTED));
        drop(listener);
        assert_eq!(tcp("127.0.0.1", port, SECOND), Err("refused".into()));
    }

    #[test]
    fn unix_is_ready_with_a_listener_refused_when_stale_missing_without_a_file() {
        let path = dir("unix").join("s.sock");
        assert_eq!(unix(&path), Err("missing".into()));
        let listener = UnixListener::bind(&path).unwrap();
        assert_eq!(unix(&path), Ok(ACCEPTED));
        drop(listener);
        assert!(path.exists(), "the stale socket file stays");
        assert_eq!(unix(&path), Err("refused".into()));
    }

    #[test]
    fn file_is_ready_once_it_exists() {
        let path = dir("file").join("f");
        assert_eq!(file(&path), Err("missing".into()));
        std::fs::write(&path, "x").unwrap();
        assert_eq!(file(&path), Ok(EXISTS));
        assert_eq!(file(path.parent().unwrap()), Ok(EXISTS));
    }
}
