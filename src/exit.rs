//! How tandem exits (SPEC §1, §4, §7): its own exit codes, the failures that
//! carry them (`Error`), how a run ended (`Outcome`), and the one map from that to
//! the exit status: the app's code, 128+N for a signal, or tandem's own code.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::process::ExitCode;

use crate::termination_message;
use log::Level;

/// Bad usage or configuration (sysexits `EX_USAGE`).
pub const EX_USAGE: u8 = 64;
/// The sidecar was not ready within `--fail-timeout` (sysexits `EX_UNAVAILABLE`).
pub const EX_UNAVAILABLE: u8 = 69;
/// `--install-to` could not write its copy (sysexits `EX_CANTCREAT`).
pub const EX_CANTCREAT: u8 = 73;
/// COMMAND was found but could not be executed (shell convention).
pub const NOT_EXECUTABLE: u8 = 126;
/// COMMAND was not found (shell convention).
pub const NOT_FOUND: u8 = 127;
/// Any other failure of tandem itself.
pub const EX_SOFTWARE: u8 = 70;

/// A failure of tandem itself; the app's own exit status is never an `Error`.
#[derive(Debug)]
pub enum Error {
    /// Bad invocation or configuration value; the message names it.
    Usage(String),
    /// COMMAND is not in `PATH` or does not exist.
    NotFound(OsString),
    /// COMMAND exists but exec failed (permission, format, …).
    NotExecutable(OsString, io::Error),
    /// `--install-to` failed.
    Install(String, io::Error),
    /// An OS call failed where tandem cannot go on.
    Io(&'static str, io::Error),
}

impl Error {
    /// The exit status this failure ends tandem with.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => EX_USAGE,
            Error::NotFound(_) => NOT_FOUND,
            Error::NotExecutable(..) => NOT_EXECUTABLE,
            Error::Install(..) => EX_CANTCREAT,
            Error::Io(..) => EX_SOFTWARE,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(msg) => f.write_str(msg),
            Error::NotFound(cmd) => write!(f, "{}: command not found", cmd.to_string_lossy()),
            Error::NotExecutable(cmd, e) => {
                write!(f, "{}: cannot execute: {e}", cmd.to_string_lossy())
            }
            Error::Install(what, e) => write!(f, "--install-to: {what}: {e}"),
            Error::Io(what, e) => write!(f, "{what}: {e}"),
        }
    }
}

/// A bad value of a setting, in the one shape of every such line (SPEC §2):
/// `name` is the option or variable, `expected` what would have been valid.
pub fn invalid(name: &str, value: &str, expected: &str) -> Error {
    Error::Usage(format!("invalid {name} {value:?}: expected {expected}"))
}

/// How a run (or a `--wait-only` wait) ended.
#[derive(Debug)]
pub enum Outcome {
    /// The app exited with this code (`--wait-only`, `--quit-only`: 0 when done).
    Exited(i32),
    /// The app was killed by this signal.
    Killed(i32),
    /// tandem got this terminating signal while waiting; the app never started.
    Interrupted(i32),
    /// Not ready within `--fail-timeout`; the app never started. Holds the
    /// line that says so, with each sidecar's last answer.
    NotReady(String),
    /// tandem could not run or wait for the app.
    Failed(Error),
}

impl Outcome {
    /// Decodes a `waitpid` status word of the app.
    pub fn from_wait_status(status: i32) -> Outcome {
        if libc::WIFSIGNALED(status) {
            Outcome::Killed(libc::WTERMSIG(status))
        } else {
            Outcome::Exited(libc::WEXITSTATUS(status))
        }
    }

    /// tandem's exit status for it.
    pub fn status(&self) -> u8 {
        match self {
            Outcome::Exited(code) => (code & 0xff) as u8,
            // The shell's convention, for the app's signal and tandem's alike.
            Outcome::Killed(sig) | Outcome::Interrupted(sig) => ((128 + sig) & 0xff) as u8,
            Outcome::NotReady(_) => EX_UNAVAILABLE,
            Outcome::Failed(e) => e.exit_code(),
        }
    }

    /// The signal behind the status: the app's, or the one that ended the wait.
    pub fn signal(&self) -> Option<i32> {
        match self {
            Outcome::Killed(sig) | Outcome::Interrupted(sig) => Some(*sig),
            _ => None,
        }
    }

    /// The app ran and failed: a non-zero exit or a signal.
    pub fn app_failed(&self) -> bool {
        matches!(self, Outcome::Exited(_) | Outcome::Killed(_)) && self.status() != 0
    }

    /// Why the run ended, when it ended for a reason of tandem's own; `None` when
    /// the app ran and its own status is the whole story (SPEC §7).
    pub fn reason(&self) -> Option<String> {
        match self {
            Outcome::Exited(_) | Outcome::Killed(_) => None,
            Outcome::Interrupted(sig) => Some(format!(
                "tandem got signal {sig} while waiting for the sidecars: the app never started"
            )),
            Outcome::NotReady(why) => Some(why.clone()),
            Outcome::Failed(e) => Some(e.to_string()),
        }
    }

    /// Logs how the app ended; a wait that ended the run logged itself already.
    /// Without sidecars the app's own end is a debug line: local development
    /// stays as quiet as the app alone (SPEC §8).
    pub fn log(&self, with_sidecars: bool) {
        let code = self.status();
        let level = if with_sidecars {
            Level::Info
        } else {
            Level::Debug
        };
        match self {
            Outcome::Exited(_) => log::log!(level, code; "the app exited with {code}"),
            Outcome::Killed(sig) => {
                log::log!(level, code; "the app was killed by signal {sig}: exiting with {code}")
            }
            Outcome::Failed(e) => log::error!("{e}"),
            Outcome::Interrupted(_) | Outcome::NotReady(_) => {}
        }
    }
}

/// The failure path before a run: logs `e`, tells it in the termination message
/// (SPEC §7), and gives its exit status.
pub fn fail(e: Error) -> ExitCode {
    let line = e.to_string();
    log::error!("{line}");
    termination_message::tell(&line);
    ExitCode::from(e.exit_code())
}

/// The end of a configured task: tells why tandem ended the run, if it was for a
/// reason of its own or a sidecar quit failed, in the termination message (SPEC §7), and gives the
/// exit status. When the app itself ran and failed nothing is told, even a failed
/// quit: with `terminationMessagePolicy: FallbackToLogsOnError` kubelet then shows
/// the log's tail, the app's last lines and tandem's error line, which a message
/// would hide.
pub fn finish(outcome: &Outcome, quit_failed: Option<String>) -> ExitCode {
    let quit_failed = quit_failed.filter(|_| !outcome.app_failed());
    if let Some(why) = termination_message::message(outcome.reason(), quit_failed) {
        termination_message::tell(&why);
    }
    ExitCode::from(outcome.status())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_pass_through_and_signals_become_128_plus_n() {
        assert_eq!(Outcome::Exited(0).status(), 0);
        assert_eq!(Outcome::Exited(42).status(), 42);
        assert_eq!(Outcome::Exited(255).status(), 255);
        assert_eq!(Outcome::Killed(15).status(), 143);
        assert_eq!(Outcome::Killed(9).status(), 137);
        assert_eq!(Outcome::Interrupted(2).status(), 130);
        assert_eq!(Outcome::NotReady(String::new()).status(), 69);
        let missing = Error::NotFound("nope".into());
        assert_eq!(Outcome::Failed(missing).status(), 127);
    }

    #[test]
    fn only_tandems_own_reasons_make_a_message() {
        assert_eq!(Outcome::Exited(3).reason(), None);
        assert_eq!(Outcome::Killed(9).reason(), None);
        assert!(
            Outcome::Interrupted(15)
                .reason()
                .unwrap()
                .contains("signal 15")
        );
    }

    #[test]
    fn only_an_app_that_ran_and_failed_is_a_failed_app() {
        assert!(Outcome::Exited(3).app_failed());
        assert!(Outcome::Killed(9).app_failed());
        assert!(!Outcome::Exited(0).app_failed());
        assert!(!Outcome::Interrupted(15).app_failed());
        assert!(!Outcome::NotReady(String::new()).app_failed());
        assert!(!Outcome::Failed(Error::NotFound("x".into())).app_failed());
    }

    #[test]
    fn wait_status_words_decode() {
        let decode = |status| match Outcome::from_wait_status(status) {
            Outcome::Exited(code) => (false, code),
            Outcome::Killed(sig) => (true, sig),
            other => panic!("{other:?}"),
        };
        assert_eq!(decode(42 << 8), (false, 42));
        assert_eq!(decode(15), (true, 15));
        // A core dump sets 0x80 on top of the signal number.
        assert_eq!(decode(0x80 | 11), (true, 11));
    }
}
