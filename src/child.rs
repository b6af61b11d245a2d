//! Starting the app: PATH lookup, its own process group, the terminal's
//! foreground when tandem had it, and exec failures mapped to 126/127 (SPEC §4, §7).

use std::ffi::{OsStr, OsString};
use std::io::{self, ErrorKind};
use std::os::unix::process::CommandExt;
use std::process::Command;

use crate::error::Error;

/// How the app ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChildEnd {
    /// It exited with this code.
    Exited(i32),
    /// It was killed by this signal.
    Signaled(i32),
}

impl ChildEnd {
    /// Decodes a `waitpid` status word.
    pub(crate) fn from_wait_status(status: i32) -> ChildEnd {
        if libc::WIFSIGNALED(status) {
            ChildEnd::Signaled(libc::WTERMSIG(status))
        } else {
            ChildEnd::Exited(libc::WEXITSTATUS(status))
        }
    }

    /// tandem's exit status for it: the code, or `128 + N` (SPEC §4).
    pub(crate) fn code(self) -> u8 {
        match self {
            ChildEnd::Exited(code) => (code & 0xff) as u8,
            ChildEnd::Signaled(sig) => ((128 + sig) & 0xff) as u8,
        }
    }
}

/// True when stdin is tandem's controlling terminal, in the foreground or not:
/// then the app's terminal stops are tandem's to pass on to the shell.
pub(crate) fn on_terminal() -> bool {
    // SAFETY: isatty, tcgetsid and getsid take and return plain integers.
    unsafe {
        libc::isatty(libc::STDIN_FILENO) == 1
            && libc::tcgetsid(libc::STDIN_FILENO) == libc::getsid(0)
    }
}

/// True when stdin is a terminal whose foreground process group is tandem's own:
/// only then may tandem hand the terminal to the app.
pub(crate) fn owns_terminal() -> bool {
    // SAFETY: isatty, tcgetpgrp and getpgrp take and return plain integers.
    unsafe {
        libc::isatty(libc::STDIN_FILENO) == 1
            && libc::tcgetpgrp(libc::STDIN_FILENO) == libc::getpgrp()
    }
}

/// Terminal-stop dispositions tandem found at start, restored in the app.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TtyStops {
    ttin: libc::sighandler_t,
    ttou: libc::sighandler_t,
}

/// Ignores SIGTTIN and SIGTTOU so tandem can hand over the terminal and keep
/// logging to it from the background; returns what to restore in the app.
pub(crate) fn ignore_tty_stops() -> TtyStops {
    // SAFETY: installing SIG_IGN for job-control signals has no memory effects.
    unsafe {
        TtyStops {
            ttin: libc::signal(libc::SIGTTIN, libc::SIG_IGN),
            ttou: libc::signal(libc::SIGTTOU, libc::SIG_IGN),
        }
    }
}

/// Starts COMMAND with ARGS in a new process group, restoring the terminal stops
/// in `tty`; with `foreground`, the group becomes the terminal's foreground, so a
/// Ctrl-C reaches the app once and not tandem.
pub(crate) fn spawn(
    command: &OsStr,
    args: &[OsString],
    tty: Option<TtyStops>,
    foreground: bool,
) -> Result<libc::pid_t, Error> {
    let mut cmd = Command::new(command);
    cmd.args(args).process_group(0);
    if let Some(stops) = tty {
        // SAFETY: the closure runs between fork and exec and only makes
        // async-signal-safe calls (getpid, tcsetpgrp, signal); it allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                if foreground {
                    // SIGTTOU is still ignored here, so the new group may take the terminal.
                    libc::tcsetpgrp(libc::STDIN_FILENO, libc::getpid());
                }
                let sig_err = libc::SIG_ERR;
                if libc::signal(libc::SIGTTIN, stops.ttin) == sig_err
                    || libc::signal(libc::SIGTTOU, stops.ttou) == sig_err
                {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    match cmd.spawn() {
        // std's Child is dropped without wait: reaping is `reap`'s job, by pid.
        Ok(child) => libc::pid_t::try_from(child.id())
            .map_err(|_| Error::Io("spawning the app", io::Error::other("pid out of range"))),
        Err(e) if e.kind() == ErrorKind::NotFound && !exists(command) => {
            Err(Error::NotFound(command.to_owned()))
        }
        // ENOENT for a file that is there: its `#!` interpreter (or loader) is missing.
        // A shell says "bad interpreter" and exits 126; so does tandem.
        Err(e) if e.kind() == ErrorKind::NotFound => Err(Error::NotExecutable(
            command.to_owned(),
            io::Error::new(e.kind(), "its interpreter or loader was not found"),
        )),
        Err(e) => Err(Error::NotExecutable(command.to_owned(), e)),
    }
}

/// Whether COMMAND names an existing file, looked up as exec does: as a path when it
/// has a `/`, else in each `PATH` directory. Asked only after a failed spawn.
fn exists(command: &OsStr) -> bool {
    use std::os::unix::ffi::OsStrExt;
    if command.as_bytes().contains(&b'/') {
        return std::path::Path::new(command).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(command).is_file()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_pass_through_and_signals_become_128_plus_n() {
        assert_eq!(ChildEnd::Exited(0).code(), 0);
        assert_eq!(ChildEnd::Exited(42).code(), 42);
        assert_eq!(ChildEnd::Exited(255).code(), 255);
        assert_eq!(ChildEnd::Signaled(15).code(), 143);
        assert_eq!(ChildEnd::Signaled(9).code(), 137);
    }

    #[test]
    fn wait_status_words_decode() {
        assert_eq!(ChildEnd::from_wait_status(42 << 8), ChildEnd::Exited(42));
        assert_eq!(ChildEnd::from_wait_status(15), ChildEnd::Signaled(15));
        // A core dump sets 0x80 on top of the signal number.
        assert_eq!(
            ChildEnd::from_wait_status(0x80 | 11),
            ChildEnd::Signaled(11)
        );
    }
}
