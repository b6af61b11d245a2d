//! The relay thread: it waits on signal-hook's pipe and sends each signal where
//! it goes right now — to the main thread while no app runs (before it, and after
//! it is reaped: a reaped pid may be reused), to the app while it runs.

use std::io::{self, Read};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;

use signal_hook::iterator::backend::SignalDelivery;
use signal_hook::iterator::exfiltrator::WithRawSiginfo;

use super::disposition::AppSignals;
use super::disposition::block;
use super::fatal;
use super::origin::Origin;
use super::which::{FATAL, relayed};
use crate::event::{Event, Events, Sender};
use crate::exit::Error;
use crate::kill;
use crate::terminal::JobControl;

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
    /// The app has been reaped: relaying could hit a reused pid, so the main thread
    /// is told instead (a tandem waiting for the other job containers ends on a
    /// terminating signal, SPEC §9).
    Done,
}

/// Set once another process sent tandem SIGTERM: the kubelet sends it to every
/// container of a Pod that is stopping, the sidecars too (SPEC §5.3).
static GOT_SIGTERM: AtomicBool = AtomicBool::new(false);

/// Whether another process has sent tandem SIGTERM.
pub fn got_sigterm() -> bool {
    GOT_SIGTERM.load(Ordering::SeqCst)
}

/// The handlers are installed; the relay thread reads what they deliver.
pub struct Signals {
    /// signal-hook's delivery of every relayed signal but the fatal ones.
    pub(super) delivery: SignalDelivery<UnixStream, WithRawSiginfo>,
    /// What the app starts with.
    pub(super) app: AppSignals,
}

/// The running relay thread and the state it relays by; a clone shares both.
#[derive(Clone)]
pub struct Relay {
    target: Arc<Mutex<Target>>,
    app: AppSignals,
}

impl Relay {
    /// Starts the relay thread; until `spawn_then_relay`, signals go to `events`.
    ///
    /// Once it runs, the calling thread blocks every relayed signal but the fatal ones,
    /// and so do the threads it starts later (the poller, quit requests): the kernel
    /// then runs each handler on the relay thread itself, whose `read` the handler's
    /// byte ends at once, instead of on a thread that must wake the relay in turn
    /// (two wake-ups a signal). The app still starts with nothing blocked
    /// (`AppSignals::in_child`). A fatal signal stays unblocked, so a real fault on
    /// the main thread meets its handler, and its default, there.
    pub fn start(signals: Signals, events: Sender) -> Result<Relay, Error> {
        let target = Arc::new(Mutex::new(Target::Waiting));
        let shared = Arc::clone(&target);
        let Signals { delivery, app } = signals;
        // Detached: it lives as long as the process (see `main`).
        thread::Builder::new()
            .name("signal-relay".into())
            .stack_size(64 * 1024)
            .spawn(move || relay_forever(delivery, &shared, &events))
            .map_err(|e| Error::Io("starting the signal relay", e))?;
        // Ignored ones too: blocking a signal that is discarded changes nothing.
        let relay_only = relayed().filter(|s| !FATAL.contains(s));
        if let Err(e) = block(relay_only) {
            // Only slower: any thread can take a signal, the relay still gets it.
            log::debug!("cannot leave signals to the relay thread: {e}");
        }
        Ok(Relay { target, app })
    }

    /// What the app's signal state must be (for `child::spawn`).
    pub fn app_signals(&self) -> AppSignals {
        self.app
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

    /// Sends `sig` to the whole process group of what runs now, whatever
    /// `--forward-to` says; nothing once it is gone (its pid may be reused). For
    /// the `--on-exit` program's timeout (SPEC §11).
    pub fn signal_group(&self, sig: i32) {
        if let Target::Running { pid, .. } = *lock(&self.target) {
            deliver(pid, true, None, sig);
        }
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

/// The relay thread's loop: each wake-up, every signal signal-hook delivered
/// (but those tandem raised itself) and every fatal one another process sent.
fn relay_forever(
    mut delivery: SignalDelivery<UnixStream, WithRawSiginfo>,
    target: &Mutex<Target>,
    events: &Sender,
) {
    loop {
        // The write end is never closed; a read that fails is a bug in the kernel
        // or here, and relaying cannot go on.
        let pending = match delivery.poll_pending(&mut wake_up) {
            Ok(Some(pending)) => pending,
            Ok(None) => {
                log::error!("the signal relay stopped: its pipe was closed");
                return;
            }
            Err(e) => {
                log::error!("the signal relay stopped: {e}");
                return;
            }
        };
        let carried = pending.filter(|info| Origin::of(info) != Origin::Tandem);
        for sig in carried.map(|info| info.si_signo).chain(fatal::take_sent()) {
            if sig == libc::SIGTERM {
                GOT_SIGTERM.store(true, Ordering::SeqCst);
            }
            relay_one(&lock(target), sig, events);
        }
    }
}

/// Blocks until a handler writes to the pipe: signal-hook's own `Signals::wait`
/// does the same, but only over the pipe it makes, and the fatal signals' action
/// needs its write end too.
fn wake_up(read: &mut UnixStream) -> io::Result<bool> {
    loop {
        match read.read(&mut [0]) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            read => return read.map(|n| n > 0),
        }
    }
}

fn relay_one(target: &Target, sig: i32, events: &Sender) {
    match *target {
        Target::Waiting | Target::Done => {
            let _ = events.send(Event::Signal(sig));
        }
        Target::Running { pid, group, job } => deliver(pid, group, job, sig),
    }
}

/// Sends `sig` to the running app (or its group). Call with the relay state locked:
/// Target::Done is set under that lock before the main thread reaps `pid`.
fn deliver(pid: libc::pid_t, group: bool, job: Option<JobControl>, sig: i32) {
    if let Some(job) = job.filter(|_| sig == libc::SIGCONT) {
        job.on_continue(pid);
    }
    let dest = if group { -pid } else { pid };
    // The pid is not reaped yet (see above): it is still the app's.
    match kill::send(dest, sig) {
        Ok(()) => log::debug!("relayed signal {sig} to {dest}"),
        Err(err) => log::debug!("could not relay signal {sig} to {dest}: {err}"),
    }
}
