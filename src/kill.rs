//! The one `kill(2)` of tandem: the relay's signals to the app, job control's
//! stops and continues, and pilot-agent's SIGINT all go through `send`.

use std::io;

/// Sends `sig` to `pid` (a process group when negative). Async-signal-safe: a
/// failure is `errno`, read without allocating.
///
/// Callers name only a pid they know is theirs to signal: the app before it is
/// reaped, tandem itself, or a pilot-agent just found in `/proc`.
pub fn send(pid: libc::pid_t, sig: i32) -> io::Result<()> {
    // SAFETY: kill takes plain integers and touches no memory of this process.
    if unsafe { libc::kill(pid, sig) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
