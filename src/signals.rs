//! The signal relay: a handler writes each signal another process sends to a
//! self-pipe; one relay thread reads it and hands the signal to the waiting phase
//! before the app exists, relays it to the app while it runs, and drops it once
//! the app is gone, so a reaped pid is never signalled (SPEC §3, §4).
//!
//! Every relayed signal, standard and real-time, is installed with one plain
//! `sigaction` of the one handler, and nothing else: no signal-hook-registry. The
//! registry's only job was chaining to other handlers in the process, and the only
//! other ones would be std's SIGSEGV/SIGBUS stack-overflow handlers, which tandem
//! never kept (it reset them before registering, for the same reason): now it takes
//! both before Rust's runtime starts (`before_runtime`), so the runtime installs
//! neither them nor their alternate signal stacks. Through the registry, each
//! registration cost ~6 system calls, ~100 of `tandem true`'s start-up.
//!
//! The handler (`on_signal`) tells a request from a fault by the sender's `siginfo`:
//! a signal another process sent (`si_code` ≤ 0: `kill`, `sigqueue`, `tgkill`) is
//! relayed, even SIGSEGV or SIGABRT; one the kernel raised for a fault inside tandem
//! (`si_code` > 0), or one tandem raised itself (`abort`), takes its default effect.
//! signal-hook's iterator cannot carry SIGILL, SIGFPE or SIGSEGV (it refuses them)
//! and would swallow a real SIGBUS or SIGSYS, so the handler is ours.
//!
//! Three parts: `disposition` (what tandem found at start-up and the masks),
//! `handler` (the self-pipe and the async-signal-safe handler), `relay` (the
//! thread that reads the pipe and where a signal goes).

mod disposition;
mod handler;
mod relay;

use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::exit::Error;
use disposition::{AtStart, at_start, set_default, set_mask_empty};
use handler::{install, self_pipe};

pub use relay::Relay;

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
pub fn relayed() -> impl Iterator<Item = i32> {
    // An iterator, not a Vec: with musl, a first allocation of a size can cost an
    // mmap and its free a munmap.
    STANDARD.into_iter().chain(realtime())
}

/// The relayed signals below SIGRTMIN.
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

/// The real-time signals the C library leaves to programs, all relayed.
fn realtime() -> std::ops::RangeInclusive<i32> {
    libc::SIGRTMIN()..=libc::SIGRTMAX()
}

/// The handlers are installed; the relay thread reads what they write.
pub struct Signals {
    /// The self-pipe's read end, for the relay thread.
    read: File,
    /// What the app starts with.
    app: AppSignals,
}

/// What the app's signal state must be, as tandem's parent left it: SIGTTIN and
/// SIGTTOU, which tandem ignores for itself, get back their inherited disposition;
/// SIGCHLD and SIGPIPE, which tandem (or Rust's runtime) changed, are ignored again
/// if the parent ignored them. (The mask is emptied in the app: the main thread
/// that forks it blocks what the relay takes, see `Relay::start`.)
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
    ///
    /// Only what differs is set (a system call each): the stops, which tandem
    /// ignores, unless the parent ignored them too; SIGCHLD and SIGPIPE, which are
    /// at their default here (tandem's, and std's reset), only if the parent
    /// ignored them. The handlers need nothing: exec gives each its default.
    pub fn in_child(&self) -> io::Result<()> {
        let ignored_if = |yes: bool| if yes { libc::SIG_IGN } else { libc::SIG_DFL };
        // (signal, the disposition the app needs, the one it has here)
        let dispositions = [
            (libc::SIGTTIN, self.ttin, libc::SIG_IGN),
            (libc::SIGTTOU, self.ttou, libc::SIG_IGN),
            (libc::SIGCHLD, ignored_if(self.chld_ignored), libc::SIG_DFL),
            (libc::SIGPIPE, ignored_if(self.pipe_ignored), libc::SIG_DFL),
        ];
        for (sig, wanted, _) in dispositions.into_iter().filter(|(_, w, now)| w != now) {
            // SAFETY: SIG_IGN, SIG_DFL, or a disposition `signal` returned earlier in
            // this process; no handler of tandem's survives the exec.
            if unsafe { libc::signal(sig, wanted) } == libc::SIG_ERR {
                return Err(io::Error::last_os_error());
            }
        }
        set_mask_empty()
    }
}

/// SIGSEGV and SIGBUS have tandem's handler already (`before_runtime`).
static FAULTS_TAKEN_EARLY: AtomicBool = AtomicBool::new(false);

/// Records the signal state tandem's parent left and installs the handler for
/// SIGSEGV and SIGBUS, before Rust's runtime starts: the `.init_array` entry of
/// tandem's `main` calls it. It allocates nothing and cannot panic.
///
/// Read this early, SIGPIPE is still as the parent left it (Rust's runtime then
/// ignores it). And the runtime finds both faults taken, so it installs neither
/// its stack-overflow handlers nor the alternate signal stacks they run on (one for
/// every thread): tandem would replace those handlers in `register` anyway, and
/// its own run on the thread's stack, so the stacks were never used; they cost 10
/// system calls. Until `register` makes the self-pipe, a fault signal sent with `kill` is
/// dropped, as std's handler dropped it; a real fault kills tandem either way.
///
/// `extern "C"` so the binary's `.init_array` entry can name it directly; it lives
/// in the binary, not here, so tests and examples that link this library keep
/// std's handlers.
pub extern "C" fn before_runtime() {
    let start = at_start();
    let faults = [libc::SIGSEGV, libc::SIGBUS];
    if faults.iter().all(|&s| !start.ignored.contains(s))
        && faults.into_iter().all(|s| install(s).is_ok())
    {
        FAULTS_TAKEN_EARLY.store(true, Ordering::Relaxed);
    }
}

/// Installs the handlers. Call first in `main`, before any thread or child exists,
/// so no signal finds a default action in between, and after `before_runtime`.
///
/// SIGTTIN and SIGTTOU are ignored from here on: a tandem stopped by them would
/// relay and reap nothing, and it needs neither (it never reads the terminal, and
/// hands it to the app from the background). The signal mask is emptied (when it
/// is not already): a signal tandem's parent blocked would never reach the relay.
/// A signal the parent ignored stays ignored, so the app inherits it as with tini
/// (`nohup tandem app` keeps the app immune to SIGHUP); SIGCHLD gets its default
/// in tandem, which must wait for its children, and is ignored again in the app.
/// (Without `before_runtime`, SIGPIPE counts as ignored: Rust's runtime did that.)
pub fn register() -> Result<Signals, Error> {
    let failed = |e| Error::Io("installing signal handlers", e);
    // SAFETY: installing SIG_IGN for a job-control signal has no memory effects.
    let ttin = unsafe { libc::signal(libc::SIGTTIN, libc::SIG_IGN) };
    // SAFETY: as above.
    let ttou = unsafe { libc::signal(libc::SIGTTOU, libc::SIG_IGN) };
    if ttin == libc::SIG_ERR || ttou == libc::SIG_ERR {
        return Err(failed(io::Error::last_os_error()));
    }
    let AtStart {
        ignored,
        blocks_any,
    } = at_start();
    let chld_ignored = ignored.contains(libc::SIGCHLD);
    if chld_ignored {
        // Ignored, it would make the kernel reap the app before tandem reads its status.
        set_default(libc::SIGCHLD);
    }
    let pipe_ignored = ignored.contains(libc::SIGPIPE);
    if blocks_any != Some(false) {
        set_mask_empty().map_err(failed)?;
    }
    let read = self_pipe().map_err(failed)?;
    // Decided from the start-up set before any is installed: an ignored signal is
    // never caught, not even for a moment. If `before_runtime` did not take
    // SIGSEGV and SIGBUS, std's handlers are replaced here like any other
    // disposition (see the module doc).
    let taken = FAULTS_TAKEN_EARLY.load(Ordering::Relaxed);
    let wanted = relayed().filter(|&s| match s {
        libc::SIGSEGV | libc::SIGBUS if taken => false,
        _ => !ignored.contains(s),
    });
    for sig in wanted {
        install(sig).map_err(failed)?;
    }
    Ok(Signals {
        read,
        app: AppSignals {
            ttin,
            ttou,
            chld_ignored,
            pipe_ignored,
        },
    })
}
