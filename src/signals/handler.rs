//! The handler and its self-pipe: every relayed signal becomes one byte on a pipe
//! the relay thread reads; a real fault takes its default effect instead.
//! Everything a handler calls is async-signal-safe.
//!
//! Each relayed signal gets one plain `sigaction` with the one handler: no table,
//! no allocation, no chaining. Chaining to other in-process handlers was all
//! signal-hook-registry added, and through it each registration cost ~6 system
//! calls (it queries the old action and copies its whole table anew). The only
//! other handlers there would be std's SIGSEGV/SIGBUS stack-overflow ones, which
//! tandem never keeps (see [`before_runtime`](super::before_runtime)).

use std::fs::File;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};

use super::FAULTS;
use super::disposition::set_default;

/// The self-pipe's write end for the handler; set by `self_pipe` before any
/// handler is installed, never closed: a handler may run at any moment of the
/// process's life.
static WRITE: AtomicI32 = AtomicI32::new(-1);

/// The self-pipe: its read end for the relay thread; its write end, non-blocking
/// for the handler (a full pipe drops a signal rather than hang a handler), is
/// kept in `WRITE`. Both are close-on-exec, so the app never sees them.
pub(super) fn self_pipe() -> io::Result<File> {
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
    WRITE.store(fds[1], Ordering::Relaxed);
    Ok(read)
}

/// Installs the handler for `sig` with one `sigaction`, replacing whatever was
/// there. Until `self_pipe` has run, a sent signal is dropped (`WRITE` is -1).
pub(super) fn install(sig: i32) -> io::Result<()> {
    // SAFETY: sigaction is plain data; zeroed is a valid value (empty mask).
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = handler as *const () as libc::sighandler_t;
    // SA_RESTART: the main thread's blocking calls (waitid, reads) go on after it.
    action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
    // SAFETY: `handler` is async-signal-safe (it allocates, locks and panics not);
    // installing it for SIGILL, SIGFPE and SIGSEGV is sound because it gives a real
    // fault its default action again instead of returning into it. action is
    // valid; a null old action is allowed.
    if unsafe { libc::sigaction(sig, &action, std::ptr::null_mut()) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The handler as the kernel calls it: `on_signal`, with errno kept as the
/// interrupted code left it (the `write` could change it under that code's feet).
extern "C" fn handler(_sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: __errno_location takes nothing and returns this thread's errno.
    let place = unsafe { libc::__errno_location() };
    // SAFETY: place points to this thread's errno, valid for the thread's life.
    let errno = unsafe { *place };
    // SAFETY: with SA_SIGINFO the kernel passes a valid siginfo for this delivery.
    if let Some(info) = unsafe { info.as_ref() } {
        on_signal(info, WRITE.load(Ordering::Relaxed));
    }
    // SAFETY: as above.
    unsafe { *place = errno };
}

/// The handler, in whatever thread the signal lands: a signal another process sent
/// goes down the pipe as one byte; a fault, or an abort of tandem's own, kills
/// tandem as it would have without the handler; what tandem's own writes raise
/// (SIGPIPE on a closed stderr, SIGXFSZ) is dropped, as its default would be for
/// the pipe (Rust ignores it) and as the failed write already says.
fn on_signal(info: &libc::siginfo_t, write: i32) {
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
