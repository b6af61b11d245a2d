//! The signal relay (SPEC §3, §4): signal-hook catches every signal another
//! process sends; one relay thread hands it to the waiting phase before the app
//! exists, relays it to the app while it runs, and drops it once the app is gone,
//! so a reaped pid is never signalled.
//!
//! signal-hook's part: its registry installs and runs every handler, and its
//! iterator backend (`SignalDelivery` with the `WithRawSiginfo` exfiltrator)
//! carries each signal with its `siginfo_t` over a self-pipe to the relay thread
//! (`relay`), which knows where a signal goes right now.
//!
//! tandem's own parts, where signal-hook cannot do the job:
//! - `fatal`: the action for SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV
//!   and SIGSYS. Sent with `kill` they are relayed; raised by a real fault inside
//!   tandem (or by its own abort) they take their default effect.
//! - `origin`: who raised a signal, from its `siginfo_t`.
//! - `disposition`: what tandem's parent left ignored, SIG_IGN/SIG_DFL, masks,
//!   and what the app gets back (`AppSignals`).
//! - `which`: the signals relayed, those that end the wait, the fatal ones.
//! - `names`: a signal's name, for the `--on-exit` program.
//! - `before_runtime`: keeps std's SIGSEGV/SIGBUS handlers out, which the
//!   registry would otherwise chain to.

mod disposition;
mod fatal;
mod names;
mod origin;
mod relay;
mod which;

use std::os::unix::net::UnixStream;
use std::sync::Arc;

use signal_hook::iterator::backend::SignalDelivery;
use signal_hook::iterator::exfiltrator::WithRawSiginfo;

use crate::exit::Error;
use disposition::{Ignored, ignored_at_start, set_ignored, set_mask_empty};

pub use disposition::AppSignals;
pub use names::name;
pub use relay::{Relay, Signals, got_sigterm};
use which::FATAL;
pub use which::{TERMINATING, relayed};

/// Records the signals tandem's parent left ignored and keeps std's SIGSEGV and
/// SIGBUS handlers out, before Rust's runtime starts: the `.init_array` entry of
/// tandem's `main` calls it. It allocates nothing and cannot panic.
///
/// Read this early, SIGPIPE is still as the parent left it (Rust's runtime then
/// ignores it). `extern "C"` so the binary's `.init_array` entry can name it
/// directly; it lives in the binary, not here, so tests and examples that link
/// this library keep std's handlers.
pub extern "C" fn before_runtime() {
    keep_std_handlers_out(ignored_at_start());
}

/// Ignores SIGSEGV and SIGBUS unless tandem's parent did. Before Rust's runtime,
/// this makes it install neither its stack-overflow handlers nor the alternate
/// signal stacks they run on, one for every thread; after it, it replaces them.
/// Either way signal-hook's registry, which calls the handler it replaces before
/// its own, finds nothing to call: std's would turn a SIGSEGV sent with `kill`
/// into SIGSEGV's default action for the next one. Until `register`, a fault
/// signal sent with `kill` is dropped; a real fault still kills tandem (the
/// kernel gives an ignored fault its default action).
fn keep_std_handlers_out(ignored: Ignored) {
    for sig in [libc::SIGSEGV, libc::SIGBUS] {
        if !ignored.contains(sig) {
            // Failing, the signal keeps its default: a sent one kills tandem.
            let _ = set_ignored(sig, true);
        }
    }
}

/// Installs the handlers. Call before any thread or child exists, so no signal
/// finds a default action once there is something to relay to or to leave
/// behind, and after `before_runtime`. Until then a signal takes its default
/// effect: one that kills tandem then kills it before anything was started.
///
/// SIGTTIN and SIGTTOU are ignored from here on: a tandem stopped by them would
/// relay and reap nothing, and it needs neither (it never reads the terminal, and
/// hands it to the app from the background). The signal mask is emptied: a signal
/// tandem's parent blocked would never reach the relay. A signal the parent
/// ignored stays ignored, so the app inherits it as with tini (`nohup tandem app`
/// keeps the app immune to SIGHUP); SIGCHLD gets its default in tandem, which
/// must wait for its children, and is ignored again in the app. (Without
/// `before_runtime`, SIGPIPE counts as ignored: Rust's runtime did that.)
pub fn register() -> Result<Signals, Error> {
    let failed = |e| Error::Io("installing signal handlers", e);
    let ignored = ignored_at_start();
    for sig in [libc::SIGTTIN, libc::SIGTTOU] {
        set_ignored(sig, true).map_err(failed)?;
    }
    if ignored.contains(libc::SIGCHLD) {
        // Ignored, it would make the kernel reap the app before tandem reads its status.
        set_ignored(libc::SIGCHLD, false).map_err(failed)?;
    }
    set_mask_empty().map_err(failed)?;
    // Decided from the start-up set before any is installed: an ignored signal is
    // never caught, not even for a moment.
    let wanted = relayed().filter(|&s| !ignored.contains(s));
    let (read, write) = UnixStream::pair().map_err(failed)?;
    let wake = write.try_clone().map_err(failed)?;
    // The pipe's write end is shared: signal-hook sends with MSG_DONTWAIT anyway.
    wake.set_nonblocking(true).map_err(failed)?;
    let carried = wanted.clone().filter(|s| !FATAL.contains(s));
    let delivery =
        SignalDelivery::with_pipe(read, write, WithRawSiginfo, carried).map_err(failed)?;
    keep_std_handlers_out(ignored);
    let wake = Arc::new(wake);
    for sig in wanted.filter(|s| FATAL.contains(s)) {
        fatal::register(sig, Arc::clone(&wake)).map_err(failed)?;
    }
    Ok(Signals {
        delivery,
        app: AppSignals { ignored },
    })
}
