//! Job control on a terminal (SPEC §4): when tandem runs on its controlling
//! terminal, the app gets the foreground and tandem passes its stops on to the
//! shell, so Ctrl-C, Ctrl-Z and `fg` work as if the app ran alone.
//!
//! One `JobControl` value, made once by `JobControl::take` just before the spawn,
//! is handed to each part that acts on the terminal:
//! - `child` runs `in_child` between fork and exec: the app's group takes the
//!   foreground (only if tandem had it); `signals::AppSignals` gives it back the
//!   stop dispositions.
//! - the relay (`signals`) calls `on_continue` on every SIGCONT: `fg` gave tandem
//!   the terminal, so it hands it on to the app.
//! - `reap` waits for stops too and calls `pass_on_stop`: tandem stops with the
//!   app, so the shell prints its prompt, and `fg` resumes both.
//!
//! Invariants: SIGTTIN/SIGTTOU are ignored in tandem from the start
//! (`signals::register`), so it can hand over the terminal and log from the
//! background without being stopped; the
//! app's pid is only ever used while it is unreaped (the relay's lock and `reap`'s
//! order guarantee it), so `tcsetpgrp` and `kill` never reach a reused pid.

use std::io::IsTerminal;

use crate::kill;

/// tandem runs on its controlling terminal: job control for the app is its job.
#[derive(Debug, Clone, Copy)]
pub struct JobControl {
    /// tandem was in the terminal's foreground at the spawn: the app takes it.
    foreground: bool,
}

impl JobControl {
    /// `Some` when stdin is tandem's controlling terminal, in the foreground or not.
    pub fn take() -> Option<JobControl> {
        on_terminal().then(|| JobControl {
            foreground: owns_terminal(),
        })
    }

    /// In the app, between fork and exec, before its signal dispositions are
    /// restored: takes the foreground if tandem had it. Async-signal-safe.
    pub fn in_child(&self) {
        if self.foreground {
            // SIGTTOU is still ignored here, so the new group may take the terminal.
            // SAFETY: tcsetpgrp takes plain integers; failure is reported by errno.
            unsafe { libc::tcsetpgrp(libc::STDIN_FILENO, own_pid()) };
        }
    }

    /// A SIGCONT is being relayed to `app`: if `fg` gave tandem the terminal
    /// (after a Ctrl-Z, or after starting in the background), the app gets it.
    /// A `bg` leaves it where it is. Call while `app` is unreaped.
    pub fn on_continue(&self, app: libc::pid_t) {
        if owns_terminal() {
            // SAFETY: tcsetpgrp takes plain integers; failure is reported by errno.
            unsafe { libc::tcsetpgrp(libc::STDIN_FILENO, app) };
        }
    }

    /// The app (`app`, its group leader) stopped on signal `sig` at its terminal:
    /// tandem stops too, so the shell that started it gets its prompt back and
    /// `fg` resumes both. As PID 1 (`docker run -it`) there is no such shell, and
    /// the kernel would not stop PID 1 anyway: the app's group is resumed instead.
    pub fn pass_on_stop(&self, app: libc::pid_t, sig: i32) {
        if !matches!(sig, libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU) {
            return;
        }
        let me = own_pid();
        if me == 1 {
            log::warn!(
                "the app was stopped by signal {sig}; as PID 1 there is no shell to resume it: resuming it now"
            );
            // The app is unreaped (see the invariants): its group is still its own.
            // A failure has nothing to undo.
            let _ = kill::send(-app, libc::SIGCONT);
        } else {
            log::debug!("the app was stopped by signal {sig}; stopping too");
            let _ = kill::send(me, libc::SIGSTOP);
        }
    }
}

/// True when stdin is tandem's controlling terminal, in the foreground or not.
fn on_terminal() -> bool {
    let tty = std::io::stdin().is_terminal();
    // SAFETY: tcgetsid takes and returns plain integers.
    let terminal_session = || unsafe { libc::tcgetsid(libc::STDIN_FILENO) };
    // SAFETY: getsid takes and returns plain integers.
    tty && terminal_session() == unsafe { libc::getsid(0) }
}

/// True when stdin is a terminal whose foreground process group is tandem's own:
/// only then may tandem hand the terminal to the app.
fn owns_terminal() -> bool {
    let tty = std::io::stdin().is_terminal();
    // SAFETY: tcgetpgrp takes and returns plain integers.
    let foreground_group = || unsafe { libc::tcgetpgrp(libc::STDIN_FILENO) };
    // SAFETY: getpgrp takes nothing and returns a plain integer.
    tty && foreground_group() == unsafe { libc::getpgrp() }
}

/// tandem's own pid, as the kernel's calls take it. Async-signal-safe (a plain getpid).
fn own_pid() -> libc::pid_t {
    // A pid always fits: the kernel's are at most 2^22.
    libc::pid_t::try_from(std::process::id()).unwrap_or(libc::pid_t::MAX)
}
