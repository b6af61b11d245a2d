//! The signal relay: signal-hook-registry handlers write each signal another
//! process sends to a self-pipe; one relay thread reads it and hands the signal to
//! the waiting phase before the app exists, relays it to the app while it runs, and
//! drops it once the app is gone, so a reaped pid is never signalled (SPEC §3, §4).
//!
//! The handler (`on_signal`) tells a request from a fault by the sender's `siginfo`:
//! a signal another process sent (`si_code` ≤ 0: `kill`, `sigqueue`, `tgkill`) is
//! relayed, even SIGSEGV or SIGABRT; one the kernel raised for a fault inside tandem
//! (`si_code` > 0), or one tandem raised itself (`abort`), takes its default effect.
//! signal-hook's iterator cannot carry SIGILL, SIGFPE or SIGSEGV (it refuses them)
//! and would swallow a real SIGBUS or SIGSYS, so the handler is ours.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;

use crate::error::Error;
use crate::event::{Event, Events, Sender};
use crate::log;
use crate::terminal::JobControl;

/// Signals that end the wait for readiness (SPEC §3).
pub const TERMINATING: [i32; 4] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT];

/// Signals the kernel raises for a fault in the running code. Sent with `kill` they
/// are relayed; raised by a real fault they kill tandem as they would without it.
const FAULTS: [i32; 6] = [
    libc::SIGILL,
    libc::SIGTRAP,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGSEGV,
    libc::SIGSYS,
];

/// Every signal tandem relays: all catchable ones except SIGCHLD (it only means
/// "reap") and SIGTTIN/SIGTTOU (ignored, so tandem never stops).
pub fn relayed() -> Vec<i32> {
    let mut set = STANDARD.to_vec();
    set.extend(realtime());
    set
}

/// The relayed signals below SIGRTMIN, registered in `main` before anything else.
const STANDARD: [i32; 26] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGILL,
    libc::SIGTRAP,
    libc::SIGABRT,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGUSR1,
    libc::SIGSEGV,
    libc::SIGUSR2,
    libc::SIGPIPE,
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
    libc::SIGSYS,
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

/// The handlers are installed; the relay thread reads what they write.
pub struct Signals {
    /// The self-pipe's read end, for the relay thread.
    read: File,
    /// The self-pipe's write end, for the handlers of the real-time signals. Never
    /// closed: a handler may run at any moment of the process's life.
    write: RawFd,
    /// What the app starts with.
    app: AppSignals,
}

/// What the app's signal state must be, as tandem's parent left it: SIGTTIN and
/// SIGTTOU, which tandem ignores for itself, get back their inherited disposition;
/// SIGCHLD and SIGPIPE, which tandem (or Rust's runtime) changed, are ignored again
/// if the parent ignored them. (The mask needs nothing: `register` empties tandem's,
/// and the app inherits it.)
#[derive(Debug, Clone, Copy)]
pub struct AppSignals {
    /// SIGTTIN's disposition as tandem found it.
    ttin: libc::sighandler_t,
    /// SIGTTOU's disposition as tandem found it.
    ttou: libc::sighandler_t,
    /// The parent ignored SIGCHLD; tandem needs it at its default to wait.
    chld_ignored: bool,
    /// The parent ignored SIGPIPE; std resets it to its default in every child.
    pipe_ignored: bool,
}

impl AppSignals {
    /// In the app, between fork and exec (after std's own SIGPIPE reset): the
    /// dispositions as tandem's parent left them, and no signal blocked.
    /// Async-signal-safe.
    pub fn in_child(&self) -> io::Result<()> {
        let ignored_if = |yes: bool| if yes { libc::SIG_IGN } else { libc::SIG_DFL };
        let restored = [
            (libc::SIGTTIN, self.ttin),
            (libc::SIGTTOU, self.ttou),
            (libc::SIGCHLD, ignored_if(self.chld_ignored)),
            (libc::SIGPIPE, ignored_if(self.pipe_ignored)),
        ];
        for (sig, disposition) in restored {
            // SAFETY: SIG_IGN, SIG_DFL, or a disposition `signal` returned earlier in
            // this process; no handler of tandem's survives the exec.
            if unsafe { libc::signal(sig, disposition) } == libc::SIG_ERR {
                return Err(io::Error::last_os_error());
            }
        }
        set_mask_empty()
    }
}

/// Whether SIGPIPE was ignored when the process started: Rust's runtime ignores it
/// before `main`, so only code that runs earlier can tell (see `SEE_SIGPIPE`).
static PIPE_IGNORED_AT_START: AtomicBool = AtomicBool::new(false);

/// Run by the C runtime before `main` (and so before Rust's runtime changes
/// SIGPIPE), as every `.init_array` entry is, with glibc and musl alike.
#[used]
#[unsafe(link_section = ".init_array")]
static SEE_SIGPIPE: extern "C" fn() = see_sigpipe;

extern "C" fn see_sigpipe() {
    PIPE_IGNORED_AT_START.store(is_ignored(libc::SIGPIPE), Ordering::Relaxed);
}

/// Installs the handlers. Call first in `main`, before any thread or child exists,
/// so no signal finds a default action in between.
///
/// SIGTTIN and SIGTTOU are ignored from here on: a tandem stopped by them would
/// relay and reap nothing, and it needs neither (it never reads the terminal, and
/// hands it to the app from the background). The signal mask is emptied: a signal
/// tandem's parent blocked would never reach the relay, and the app inherits the
/// mask. A signal the parent ignored stays ignored, so the app inherits it as with
/// tini (`nohup tandem app` keeps the app immune to SIGHUP); SIGCHLD gets its
/// default in tandem, which must wait for its children, and is ignored again in
/// the app.
pub fn register() -> Result<Signals, Error> {
    let failed = |e| Error::Io("installing signal handlers", e);
    // SAFETY: installing SIG_IGN for a job-control signal has no memory effects.
    let ttin = unsafe { libc::signal(libc::SIGTTIN, libc::SIG_IGN) };
    // SAFETY: as above.
    let ttou = unsafe { libc::signal(libc::SIGTTOU, libc::SIG_IGN) };
    if ttin == libc::SIG_ERR || ttou == libc::SIG_ERR {
        return Err(failed(io::Error::last_os_error()));
    }
    let chld_ignored = is_ignored(libc::SIGCHLD);
    if chld_ignored {
        // Ignored, it would make the kernel reap the app before tandem reads its status.
        set_default(libc::SIGCHLD);
    }
    let pipe_ignored = PIPE_IGNORED_AT_START.load(Ordering::Relaxed);
    set_mask_empty().map_err(failed)?;
    let (read, write) = self_pipe().map_err(failed)?;
    let wanted = STANDARD.into_iter().filter(|&s| match s {
        libc::SIGPIPE => !pipe_ignored,
        _ => !is_ignored(s),
    });
    for sig in wanted {
        if sig == libc::SIGSEGV || sig == libc::SIGBUS {
            // std's stack-overflow handler would run first (the registry chains to
            // the handler it replaces) and reset the signal to its default on a
            // `kill`, so a second one would kill tandem.
            set_default(sig);
        }
        add_signal(sig, write).map_err(failed)?;
    }
    Ok(Signals {
        read,
        write,
        app: AppSignals {
            ttin,
            ttou,
            chld_ignored,
            pipe_ignored,
        },
    })
}

/// Whether `sig`'s disposition is SIG_IGN right now.
fn is_ignored(sig: i32) -> bool {
    // SAFETY: sigaction is plain data; zeroed is a valid value to be overwritten.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only queries; old is a valid, writable sigaction.
    let queried = unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } == 0;
    queried && old.sa_sigaction == libc::SIG_IGN
}

/// Gives `sig` its default action. Async-signal-safe.
fn set_default(sig: i32) {
    // SAFETY: sigaction is plain data; zeroed is a valid value (no flags, empty mask).
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = libc::SIG_DFL;
    // SAFETY: action is a valid sigaction; a null old action is allowed.
    unsafe { libc::sigaction(sig, &action, std::ptr::null_mut()) };
}

/// Unblocks every signal in the calling thread; threads and children started
/// later inherit the mask. Async-signal-safe.
fn set_mask_empty() -> io::Result<()> {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset before use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a valid, writable sigset_t.
    unsafe { libc::sigemptyset(&mut set) };
    // SAFETY: set is initialised; a null old mask is allowed.
    match unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &set, std::ptr::null_mut()) } {
        0 => Ok(()),
        err => Err(io::Error::from_raw_os_error(err)),
    }
}

/// The self-pipe: a blocking read end for the relay, a non-blocking write end for
/// the handlers (a full pipe drops a signal rather than hang a handler). Both are
/// close-on-exec, so the app never sees them.
fn self_pipe() -> io::Result<(File, RawFd)> {
    let mut fds = [-1; 2];
    // SAFETY: fds is a valid, writable array of two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 just opened fds[0]; nothing else owns it.
    let read = File::from(unsafe { OwnedFd::from_raw_fd(fds[0]) });
    // SAFETY: fcntl on a descriptor pipe2 just opened.
    if unsafe { libc::fcntl(fds[1], libc::F_SETFL, libc::O_NONBLOCK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((read, fds[1]))
}

/// Installs `on_signal` for `sig`, writing to the pipe end `write`.
fn add_signal(sig: i32, write: RawFd) -> io::Result<()> {
    // SAFETY: `on_signal` is async-signal-safe (it allocates, locks and panics not);
    // registering SIGILL, SIGFPE and SIGSEGV is sound because it gives a real fault
    // its default action again instead of returning into it.
    unsafe { signal_hook_registry::register_unchecked(sig, move |info| on_signal(info, write)) }
        .map(|_| ())
}

/// The handler, in whatever thread the signal lands: a signal another process sent
/// goes down the pipe as one byte; a fault, or an abort of tandem's own, kills
/// tandem as it would have without the handler; what tandem's own writes raise
/// (SIGPIPE on a closed stderr, SIGXFSZ) is dropped, as its default would be for
/// the pipe (Rust ignores it) and as the failed write already says.
fn on_signal(info: &libc::siginfo_t, write: RawFd) {
    let sig = info.si_signo;
    // SI_USER (0), SI_QUEUE (-1), SI_TKILL (-6)…: another process, or tandem itself,
    // asked for it; the kernel uses positive codes for what it raises.
    let sent = info.si_code <= 0;
    // SAFETY: for those codes the kernel filled in the sender's pid.
    let sender = sent.then(|| unsafe { info.si_pid() });
    // SAFETY: getpid takes nothing and returns a plain integer.
    let own = sender == Some(unsafe { libc::getpid() });
    let fatal = FAULTS.contains(&sig) || sig == libc::SIGABRT;
    if fatal && (!sent || own) {
        die_of(sig);
    } else if !own {
        let byte = u8::try_from(sig).unwrap_or(0);
        // SAFETY: write is async-signal-safe; byte is a valid one-byte buffer. A
        // failed write (a full pipe) loses this one signal, never blocks.
        unsafe { libc::write(write, std::ptr::from_ref(&byte).cast(), 1) };
    }
}

/// Gives `sig` its default action and raises it again for this thread. It is
/// blocked until the handler returns; then it kills tandem with a core dump where
/// one is due, as the fault would have. (Returning alone would not do: a SIGSYS
/// or SIGTRAP is raised after its instruction, so it would not happen again.)
fn die_of(sig: i32) {
    set_default(sig);
    // SAFETY: raise is async-signal-safe and takes a plain integer.
    unsafe { libc::raise(sig) };
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
    app: AppSignals,
}

impl Relay {
    /// Starts the relay thread; until `spawn_then_relay`, signals go to `events`.
    pub fn start(signals: Signals, events: Sender) -> Result<Relay, Error> {
        let target = Arc::new(Mutex::new(Target::Waiting));
        let shared = Arc::clone(&target);
        let Signals {
            mut read,
            write,
            app,
        } = signals;
        // Detached: it lives as long as the process (see `main`).
        thread::Builder::new()
            .name("signal-relay".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                for sig in realtime().filter(|&s| !is_ignored(s)) {
                    if let Err(e) = add_signal(sig, write) {
                        log::debug!("cannot relay signal {sig}: {e}");
                    }
                }
                let mut buf = [0u8; 64];
                loop {
                    match read.read(&mut buf) {
                        Ok(n @ 1..) => {
                            for &sig in &buf[..n] {
                                relay_one(&lock(&shared), i32::from(sig), &events);
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        // The write end is never closed; a read that fails is a bug
                        // in the kernel or here, and relaying cannot go on.
                        end => {
                            log::error!("the signal relay stopped: {end:?}");
                            return;
                        }
                    }
                }
            })
            .map_err(|e| Error::Io("starting the signal relay", e))?;
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
