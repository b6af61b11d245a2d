//! The signal relay: one signal-hook thread that hands signals to the waiting
//! phase before the app exists, relays them to the app while it runs, and drops
//! them once it is gone, so a reaped pid is never signalled (SPEC §3, §4).

use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;

use signal_hook::iterator::Signals;

use crate::error::Error;
use crate::event::{Event, Events, Sender};
use crate::log;
use crate::terminal::JobControl;

/// Signals that end the wait for readiness (SPEC §3).
pub const TERMINATING: [i32; 4] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT];

/// Every signal tandem relays: all catchable ones except SIGCHLD (it only means
/// "reap"), the synchronous faults (a handler that returns would re-run the fault),
/// SIGPIPE (tandem's own broken stderr must not reach the app) and SIGTTIN/SIGTTOU
/// (ignored so tandem never stops on the terminal it handed to the app).
pub fn relayed() -> Vec<i32> {
    let mut set = STANDARD.to_vec();
    set.extend(realtime());
    set
}

/// The relayed signals below SIGRTMIN, registered in `main` before anything else.
const STANDARD: [i32; 18] = [
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

/// The real-time signals, registered by the relay thread once it runs.
///
/// signal-hook copies its whole table on every registration, so registering all
/// ~50 signals up front cost 4× the instructions of everything else tandem does
/// to start (callgrind: 1.67 M against 0.40 M). Done on the relay thread, that work
/// overlaps the readiness wait and the spawn. The price: a real-time signal sent in
/// tandem's first moments gets its default action; nothing sends those to a Job.
fn realtime() -> std::ops::RangeInclusive<i32> {
    libc::SIGRTMIN()..=libc::SIGRTMAX()
}

/// Where a signal goes right now.
#[derive(Debug, Clone, Copy)]
enum Target {
    /// No app yet: tell the main thread.
    Waiting,
    /// Relay to the app.
    Running {
        /// The app's pid, also its process group id.
        pid: libc::pid_t,
        /// Relay to the whole process group.
        group: bool,
        /// tandem does job control: on SIGCONT, pass the foreground on to the app.
        job: Option<JobControl>,
    },
    /// The app has been reaped: relaying could hit a reused pid.
    Done,
}

/// The running relay thread and the state it relays by.
pub struct Relay {
    target: Arc<Mutex<Target>>,
}

/// Installs the handlers. Call first in `main`, before any thread or child exists,
/// so no signal finds a default action in between.
///
/// A signal tandem's parent ignored stays ignored, so the app inherits it as with
/// tini (`nohup tandem app` keeps the app immune to SIGHUP); a signal it blocked is
/// unblocked, or it would never reach the relay (STYLE §7.6).
pub fn register() -> Result<Signals, Error> {
    let failed = |e| Error::Io("installing signal handlers", e);
    let wanted: Vec<i32> = relayed().into_iter().filter(|&s| !is_ignored(s)).collect();
    unblock(&wanted).map_err(failed)?;
    Signals::new(wanted.into_iter().filter(|s| STANDARD.contains(s))).map_err(failed)
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
    // SAFETY: set is a valid, writable sigset_t.
    unsafe { libc::sigemptyset(&mut set) };
    for &sig in sigs {
        // SAFETY: set is initialised; the numbers come from `relayed()`.
        unsafe { libc::sigaddset(&mut set, sig) };
    }
    // SAFETY: set is initialised; a null old mask is allowed.
    match unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) } {
        0 => Ok(()),
        err => Err(io::Error::from_raw_os_error(err)),
    }
}

impl Relay {
    /// Starts the relay thread; until `spawn_then_relay`, signals go to `events`.
    pub fn start(mut signals: Signals, events: Sender) -> Result<Relay, Error> {
        let target = Arc::new(Mutex::new(Target::Waiting));
        let shared = Arc::clone(&target);
        // Detached: it lives as long as the process (see `main`).
        thread::Builder::new()
            .name("signal-relay".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                for sig in realtime().filter(|&s| !is_ignored(s)) {
                    if let Err(e) = signals.add_signal(sig) {
                        log::debug!("cannot relay signal {sig}: {e}");
                    }
                }
                for sig in signals.forever() {
                    relay_one(&lock(&shared), sig, &events);
                }
            })
            .map_err(|e| Error::Io("starting the signal relay", e))?;
        Ok(Relay { target })
    }

    /// Runs `spawn` with the relay held, then relays to the pid it returns, so a
    /// signal that arrives during the spawn waits for the pid instead of being lost.
    ///
    /// Signals that reached `pending` after the wait ended (between "ready" and the
    /// spawn) are relayed to the app too, so a SIGTERM in that gap is not lost.
    pub fn spawn_then_relay<E>(
        &self,
        group: bool,
        job: Option<JobControl>,
        pending: &Events,
        spawn: impl FnOnce() -> Result<libc::pid_t, E>,
    ) -> Result<libc::pid_t, E> {
        let mut target = lock(&self.target);
        let pid = spawn()?;
        *target = Target::Running { pid, group, job };
        for event in pending.try_iter() {
            if let Event::Signal(sig) = event {
                deliver(pid, group, job, sig);
            }
        }
        Ok(pid)
    }

    /// Stops relaying; call before the app's pid is reaped.
    pub fn app_gone(&self) {
        *lock(&self.target) = Target::Done;
    }
}

fn lock(target: &Mutex<Target>) -> MutexGuard<'_, Target> {
    // The relay state is a plain value; a panic elsewhere cannot leave it half-written.
    target.lock().unwrap_or_else(PoisonError::into_inner)
}

fn relay_one(target: &Target, sig: i32, events: &Sender) {
    match *target {
        Target::Waiting => {
            let _ = events.send(Event::Signal(sig));
        }
        Target::Running { pid, group, job } => deliver(pid, group, job, sig),
        Target::Done => {}
    }
}

/// Sends `sig` to the running app (or its group). Call with the relay state locked:
/// Target::Done is set under that lock before the main thread reaps `pid`.
fn deliver(pid: libc::pid_t, group: bool, job: Option<JobControl>, sig: i32) {
    if let Some(job) = job.filter(|_| sig == libc::SIGCONT) {
        job.on_continue(pid);
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
