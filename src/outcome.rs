//! How a run ended, and the one mapping from that to tandem's exit status
//! (SPEC §1, §4, §7): the app's code, 128+N for a signal, or tandem's own code.

use crate::error::{EX_UNAVAILABLE, Error};
use log::Level;

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
