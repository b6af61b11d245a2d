//! Which signals are which: the ones tandem relays, the ones that end the wait
//! for readiness, and the fault signals it may die of itself.

/// Signals that end the wait for readiness (SPEC §3).
pub const TERMINATING: [i32; 4] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT];

/// Signals tandem dies of when it raised them itself: the ones the kernel raises
/// for a fault in the running code, and SIGABRT. Another process's are relayed.
pub(super) const FATAL: [i32; 7] = [
    libc::SIGILL,
    libc::SIGTRAP,
    libc::SIGABRT,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGSEGV,
    libc::SIGSYS,
];

/// Every signal tandem relays: all catchable ones except SIGCHLD (it only means
/// "reap") and SIGTTIN/SIGTTOU (ignored, so tandem never stops).
pub fn relayed() -> impl Iterator<Item = i32> + Clone {
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
