//! Who raised a signal, from the `siginfo_t` signal-hook hands over: the rules of
//! SPEC §4 turn on it (a fault sent with `kill` is relayed, a real one is not;
//! what tandem's own writes raise is not relayed). signal-hook reads the sender
//! only with its `extended-siginfo` feature, which compiles C code with `cc`.

/// Who raised a signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Origin {
    /// The kernel, for something it saw: a fault, a terminal key, a timer.
    Kernel,
    /// tandem itself: an `abort`, or SIGPIPE and SIGXFSZ from its own writes
    /// (the kernel names the writer as their sender).
    Tandem,
    /// Another process, with `kill`, `sigqueue` or `tgkill`.
    Other,
}

impl Origin {
    /// Who raised the signal `info` describes. Async-signal-safe.
    pub(super) fn of(info: &libc::siginfo_t) -> Origin {
        // SI_USER (0), SI_QUEUE (-1), SI_TKILL (-6)…: a process asked for it; the
        // kernel uses positive codes for what it raises itself.
        if info.si_code > 0 {
            return Origin::Kernel;
        }
        // SAFETY: for those codes the kernel filled in the sender's pid.
        let sender = unsafe { info.si_pid() };
        if u32::try_from(sender) == Ok(std::process::id()) {
            Origin::Tandem
        } else {
            Origin::Other
        }
    }
}
