//! The fatal signals' action, tandem's own because signal-hook's iterator cannot
//! do its job: it refuses SIGILL, SIGFPE and SIGSEGV, and for any signal it
//! returns from the handler, which would swallow a real fault (a SIGBUS comes back
//! forever, a seccomp SIGSYS is lost). signal-hook's registry runs this action;
//! a real fault (or tandem's own abort) dies of its signal, one another process
//! sent is handed to the relay thread, which the action wakes through the
//! iterator's own pipe.

use std::io::{self, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use signal_hook::low_level::emulate_default_handler;

use super::disposition::bit;
use super::origin::Origin;
use super::which::FATAL;

/// The fatal signals another process sent that the relay thread has not taken
/// yet, as a mask: like the kernel, it merges what arrives together.
static SENT: AtomicU64 = AtomicU64::new(0);

/// Runs the action for `sig` (one of `FATAL`) from signal-hook's registry;
/// `wake` is a non-blocking write end of the relay thread's pipe.
pub(super) fn register(sig: i32, wake: Arc<UnixStream>) -> io::Result<()> {
    let action = move |info: &libc::siginfo_t| {
        if Origin::of(info) == Origin::Other {
            SENT.fetch_or(bit(sig), Ordering::AcqRel);
            // A full pipe already holds a wake-up; the write cannot block.
            let _ = (&*wake).write(&[0]);
        } else {
            // Its default action again, unblocked and raised: tandem dies of it
            // here, with a core where one is due.
            let _ = emulate_default_handler(sig);
        }
    };
    // SAFETY: the action is async-signal-safe: it reads the siginfo, asks getpid,
    // sets an atomic, writes to a non-blocking socket, or calls signal-hook's
    // async-signal-safe emulate_default_handler; it allocates, locks and panics
    // not. Taking SIGILL, SIGFPE and SIGSEGV (signal-hook's FORBIDDEN) is sound
    // because a real fault never returns into the faulting code: it dies.
    unsafe { signal_hook_registry::register_unchecked(sig, action) }.map(drop)
}

/// The fatal signals sent since the last call, for the relay thread.
pub(super) fn take_sent() -> impl Iterator<Item = i32> {
    let sent = SENT.swap(0, Ordering::AcqRel);
    FATAL.into_iter().filter(move |&sig| sent & bit(sig) != 0)
}
