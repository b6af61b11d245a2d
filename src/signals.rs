//! The signal relay: one signal-hook thread that hands signals to the waiting
//! phase before the app exists, relays them to the app while it runs, and drops
//! them once it is gone, so a reaped pid is never signalled (SPEC §3, §4).

use std::io;
use std::sync::mpsc::{Receiver, Sender};
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
        /// stdin is tandem's terminal: on SIGCONT, pass the foreground on to the app.
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
///
/// A signal tandem's parent ignored stays ignored, so the app inherits it as with
/// tini (`nohup tandem app` keeps the app immune to SIGHUP); a signal it blocked is
/// unblocked, or it would never reach the relay (STYLE §7.6).
pub(crate) fn register() -> io::Result<Signals> {
    let wanted: Vec<i32> = relayed().into_iter().filter(|&s| !is_ignored(s)).collect();
    unblock(&wanted)?;
    Signals::new(wanted)
}

/// Whether `sig`'s disposition is SIG_IGN right now.
fn is_ignored(sig: i32) -> bool {
    // SAFETY: sigaction is plain data; zeroed is a valid value to be overwritten.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only queries; old is a valid, writable sigaction.
    let queried = unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } == 0;
    queried && old.sa_sigaction == libc::SIG_IGN
}

/// Unblocks `sigs` in the calling thread; threads started later inherit the mask.
fn unblock(sigs: &[i32]) -> io::Result<()> {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset before use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a valid, writable sigset_t; the numbers come from `relayed()`.
    unsafe {
        libc::sigemptyset(&mut set);
        for &sig in sigs {
            libc::sigaddset(&mut set, sig);
        }
    }
    // SAFETY: set is initialised; a null old mask is allowed.
    match unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) } {
        0 => Ok(()),
        err => Err(io::Error::from_raw_os_error(err)),
    }
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
    ///
    /// Signals that reached `pending` after the wait ended (between "ready" and the
    /// spawn) are relayed to the app too, so a SIGTERM in that gap is not lost.
    pub(crate) fn run_child<E>(
        &self,
        group: bool,
        tty: bool,
        pending: &Receiver<Event>,
        spawn: impl FnOnce() -> Result<libc::pid_t, E>,
    ) -> Result<libc::pid_t, E> {
        let mut target = lock(&self.target);
        let pid = spawn()?;
        *target = Target::Running { pid, group, tty };
        for event in pending.try_iter() {
            if let Event::Signal(sig) = event {
                deliver(pid, group, tty, sig);
            }
        }
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
        Target::Running { pid, group, tty } => deliver(pid, group, tty, sig),
        Target::Done => {}
    }
}

/// Sends `sig` to the running app (or its group). Call with the relay state locked:
/// Target::Done is set under that lock before the main thread reaps `pid`.
fn deliver(pid: libc::pid_t, group: bool, tty: bool, sig: i32) {
    if sig == libc::SIGCONT && tty && in_foreground() {
        // `fg` gave tandem the terminal (after a Ctrl-Z, or after starting in the
        // background): the app gets it. A `bg` leaves it where it is.
        // SAFETY: tcsetpgrp takes plain integers; failure is reported by errno.
        unsafe { libc::tcsetpgrp(libc::STDIN_FILENO, pid) };
    }
    let dest = if group { -pid } else { pid };
    // SAFETY: kill takes plain integers; the pid is not reaped yet (see above).
    if unsafe { libc::kill(dest, sig) } != 0 {
        let err = io::Error::last_os_error();
        log::debug!("could not relay signal {sig} to {dest}: {err}");
    } else {
        log::debug!("relayed signal {sig} to {dest}");
    }
}

/// Whether tandem's process group is the foreground of its terminal (stdin).
fn in_foreground() -> bool {
    // SAFETY: tcgetpgrp and getpgrp take and return plain integers.
    unsafe { libc::tcgetpgrp(libc::STDIN_FILENO) == libc::getpgrp() }
}
