//! The signal relay: one signal-hook thread that hands signals to the waiting
//! phase before the app exists, relays them to the app while it runs, and drops
//! them once it is gone, so a reaped pid is never signalled (SPEC §3, §4).

use std::io;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};

use signal_hook::iterator::{Handle, Signals};

use crate::log;

/// Something the main thread waits for before the app starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// tandem received this signal.
    Signal(i32),
    /// Every readiness check passed.
    Ready,
}

/// Signals that end the wait for readiness (SPEC §3).
pub(crate) const TERMINATING: [i32; 4] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT];

/// Every signal tandem relays: all catchable ones except SIGCHLD (it only means
/// "reap"), the synchronous faults (a handler that returns would re-run the fault),
/// SIGPIPE (tandem's own broken stderr must not reach the app) and SIGTTIN/SIGTTOU
/// (ignored so tandem never stops on the terminal it handed to the app).
pub(crate) fn relayed() -> Vec<i32> {
    let mut set = vec![
        libc::SIGHUP,
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
        libc::SIGTERM,
        libc::SIGSTKFLT,
        libc::SIGCONT,
        libc::SIGTSTP,
        libc::SIGURG,
        libc::SIGXCPU,
        libc::SIGXFSZ,
        libc::SIGVTALRM,
        libc::SIGPROF,
        libc::SIGWINCH,
        libc::SIGIO,
        libc::SIGPWR,
    ];
    set.extend(libc::SIGRTMIN()..=libc::SIGRTMAX());
    set
}

/// Where a signal goes right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// No app yet: tell the main thread.
    Waiting,
    /// Relay to the app.
    Running {
        /// The app's pid, also its process group id.
        pid: libc::pid_t,
        /// Relay to the whole process group.
        group: bool,
        /// The app owns the terminal: give it back before relaying SIGCONT.
        tty: bool,
    },
    /// The app has been reaped: relaying could hit a reused pid.
    Done,
}

/// The running relay thread and the state it relays by.
pub(crate) struct Relay {
    target: Arc<Mutex<Target>>,
    handle: Handle,
    thread: Option<JoinHandle<()>>,
}

/// Installs the handlers. Call first in `main`, before any thread or child exists,
/// so no signal finds a default action in between.
pub(crate) fn register() -> io::Result<Signals> {
    Signals::new(relayed())
}

impl Relay {
    /// Starts the relay thread; until `run_child`, signals go to `events`.
    pub(crate) fn start(mut signals: Signals, events: Sender<Event>) -> io::Result<Relay> {
        let target = Arc::new(Mutex::new(Target::Waiting));
        let handle = signals.handle();
        let shared = Arc::clone(&target);
        let thread = thread::Builder::new()
            .name("signal-relay".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                for sig in signals.forever() {
                    relay_one(&lock(&shared), sig, &events);
                }
            })?;
        Ok(Relay {
            target,
            handle,
            thread: Some(thread),
        })
    }

    /// Runs `spawn` with the relay held, then relays to the pid it returns, so a
    /// signal that arrives during the spawn waits for the pid instead of being lost.
    pub(crate) fn run_child<E>(
        &self,
        group: bool,
        tty: bool,
        spawn: impl FnOnce() -> Result<libc::pid_t, E>,
    ) -> Result<libc::pid_t, E> {
        let mut target = lock(&self.target);
        let pid = spawn()?;
        *target = Target::Running { pid, group, tty };
        Ok(pid)
    }

    /// Stops relaying; call before the app's pid is reaped.
    pub(crate) fn child_gone(&self) {
        *lock(&self.target) = Target::Done;
    }

    /// Ends the relay thread and waits for it.
    pub(crate) fn stop(mut self) {
        self.handle.close();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn lock(target: &Mutex<Target>) -> MutexGuard<'_, Target> {
    // The relay state is a plain value; a panic elsewhere cannot leave it half-written.
    target.lock().unwrap_or_else(PoisonError::into_inner)
}

fn relay_one(target: &Target, sig: i32, events: &Sender<Event>) {
    match *target {
        Target::Waiting => {
            let _ = events.send(Event::Signal(sig));
        }
        Target::Running { pid, group, tty } => {
            if sig == libc::SIGCONT && tty {
                // Back from a job-control stop: the app gets the terminal again.
                // SAFETY: tcsetpgrp takes plain integers; failure is reported by errno.
                unsafe { libc::tcsetpgrp(libc::STDIN_FILENO, pid) };
            }
            let dest = if group { -pid } else { pid };
            // SAFETY: kill takes plain integers; the pid is not reaped yet (Target::Done is
            // set under this same lock before the main thread reaps it).
            if unsafe { libc::kill(dest, sig) } != 0 {
                let err = io::Error::last_os_error();
                log::debug!("could not relay signal {sig} to {dest}: {err}");
            } else {
                log::debug!("relayed signal {sig} to {dest}");
            }
        }
        Target::Done => {}
    }
}
