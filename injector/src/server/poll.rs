//! Waiting on sockets with poll(2): the listener, the stop socket, a
//! connection and the closing socket, each with an optional time limit.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// Whether `socket` is readable (or hung up) now.
pub(super) fn readable(socket: &UnixStream) -> bool {
    matches!(
        wait(&[socket.as_raw_fd()], Some(Duration::ZERO)),
        Ok(Some(_))
    )
}

/// Waits until one of `fds` is readable (or hung up); its index, or `None`
/// when `timeout` passed first (`None` timeout: no limit).
pub(super) fn wait(fds: &[RawFd], timeout: Option<Duration>) -> io::Result<Option<usize>> {
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
