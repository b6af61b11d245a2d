//! Dispositions and masks, which signal-hook does not manage: which signals
//! tandem's parent left ignored (read once, before Rust's runtime ignores
//! SIGPIPE), ignoring a signal or giving it its default again, and blocking or
//! unblocking signals in a thread.

use std::fs::File;
use std::io::{self, Read};
use std::sync::OnceLock;

/// The signals tandem's parent left ignored, recorded once: by `before_runtime`
/// before Rust's runtime ignores SIGPIPE, else by `register`.
static AT_START: OnceLock<Ignored> = OnceLock::new();

/// The signals tandem's parent left ignored (see `AT_START`).
pub(super) fn ignored_at_start() -> Ignored {
    *AT_START.get_or_init(Ignored::now)
}

/// A set of signals, as the kernel's 64-bit masks hold them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ignored(u64);

impl Ignored {
    /// The signals whose disposition is SIG_IGN right now, from the calling
    /// thread's `/proc/thread-self/status` in one read; without `/proc` (a bare
    /// chroot), by asking `sigaction` for each.
    fn now() -> Ignored {
        Ignored(proc_sig_ign().unwrap_or_else(|| {
            (1..=libc::SIGRTMAX())
                .filter(|&s| is_ignored(s))
                .fold(0, |mask, s| mask | bit(s))
        }))
    }

    /// Whether `sig` is in the set.
    pub(super) fn contains(&self, sig: i32) -> bool {
        self.0 & bit(sig) != 0
    }
}

/// The `SigIgn:` mask of the calling thread, read into a stack buffer (this runs
/// before Rust's runtime, `before_runtime`) until that line is whole. A status
/// whose line does not fit the buffer counts as unreadable.
fn proc_sig_ign() -> Option<u64> {
    let mut file = File::open("/proc/thread-self/status").ok()?;
    let mut buf = [0u8; 4096];
    let mut len = 0;
    loop {
        let rest = buf.get_mut(len..).filter(|r| !r.is_empty())?;
        match file.read(rest) {
            Ok(0) => return None,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        }
        if let Some(mask) = buf.get(..len).and_then(sig_ign) {
            return Some(mask);
        }
    }
}

/// Signal `sig`'s bit in the kernel's masks: bit 0 is signal 1.
pub(super) fn bit(sig: i32) -> u64 {
    u32::try_from(sig - 1)
        .ok()
        .and_then(|shift| 1u64.checked_shl(shift))
        .unwrap_or(0)
}

/// The `SigIgn:` mask of a `/proc/PID/status` text (16 hex digits), once the
/// line is whole (it ends with a newline). Read as bytes: other lines (the
/// command's name) need not be UTF-8.
fn sig_ign(status: &[u8]) -> Option<u64> {
    let end = status.iter().rposition(|&b| b == b'\n')?;
    let hex = status
        .get(..end)?
        .split(|&b| b == b'\n')
        .find_map(|l| l.strip_prefix(b"SigIgn:"))?;
    u64::from_str_radix(std::str::from_utf8(hex).ok()?.trim(), 16).ok()
}

/// Whether `sig`'s disposition is SIG_IGN right now.
fn is_ignored(sig: i32) -> bool {
    // SAFETY: sigaction is plain data; zeroed is a valid value to be overwritten.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only queries; old is a valid, writable sigaction.
    let queried = unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } == 0;
    queried && old.sa_sigaction == libc::SIG_IGN
}

/// Ignores `sig`, or gives it its default action: never a handler, those are
/// signal-hook's. Async-signal-safe.
pub(super) fn set_ignored(sig: i32, ignored: bool) -> io::Result<()> {
    let disposition = if ignored {
        libc::SIG_IGN
    } else {
        libc::SIG_DFL
    };
    // SAFETY: SIG_IGN and SIG_DFL run no code of this process when `sig` comes.
    if unsafe { libc::signal(sig, disposition) } == libc::SIG_ERR {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Blocks `sigs` in the calling thread; threads started later inherit the mask.
pub(super) fn block(sigs: impl IntoIterator<Item = i32>) -> io::Result<()> {
    let mask = sigs.into_iter().fold(0, |mask, s| mask | bit(s));
    set_mask(libc::SIG_BLOCK, mask)
}

/// Unblocks every signal in the calling thread; threads and children started
/// later inherit the mask. Async-signal-safe.
pub(super) fn set_mask_empty() -> io::Result<()> {
    set_mask(libc::SIG_SETMASK, 0)
}

/// `rt_sigprocmask(how, mask)` for the calling thread, with the kernel's own
/// 64-bit mask: libc's `sigset_t` would take a call to build and one per signal
/// to fill. The C library's internal signals (32 to 34) are never in a mask
/// tandem builds (`relayed` starts the real-time ones at SIGRTMIN), and an empty
/// one unblocks them as they should be. Async-signal-safe.
fn set_mask(how: libc::c_int, mask: u64) -> io::Result<()> {
    let size = std::mem::size_of_val(&mask);
    // SAFETY: mask is a valid 8-byte kernel sigset for the call's duration; a null
    // old mask is allowed.
    let done = unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            how,
            &raw const mask,
            std::ptr::null_mut::<u64>(),
            size,
        )
    };
    if done != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// What the app's signal state must be, as tandem's parent left it: SIGTTIN and
/// SIGTTOU, which tandem ignores for itself, and SIGCHLD and SIGPIPE, which
/// tandem (or std) gives their default, get back their inherited disposition.
/// (The mask is emptied in the app: the main thread that forks it blocks what
/// the relay takes, see `Relay::start`.)
#[derive(Debug, Clone, Copy)]
pub struct AppSignals {
    /// The signals tandem's parent left ignored.
    pub(super) ignored: Ignored,
}

impl AppSignals {
    /// In the app, between fork and exec (after std's own SIGPIPE reset): the
    /// dispositions as tandem's parent left them, and no signal blocked.
    /// Async-signal-safe. The handlers need nothing: exec gives each its default.
    pub fn in_child(&self) -> io::Result<()> {
        // (signal, whether it is ignored here)
        let here = [
            (libc::SIGTTIN, true),
            (libc::SIGTTOU, true),
            (libc::SIGCHLD, false),
            (libc::SIGPIPE, false),
        ];
        for (sig, ignored_here) in here {
            let wanted = self.ignored.contains(sig);
            if wanted != ignored_here {
                set_ignored(sig, wanted)?;
            }
        }
        set_mask_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signals::relayed;

    #[test]
    fn sig_ign_is_read_from_proc_status() {
        let status = "Name:\ttandem\nSigPnd:\t0000000000000000\nSigBlk:\t0000000000010000\n\
                      SigIgn:\t0000000000001001\nSigCgt:\t0000000000000000\n";
        let ignored = Ignored(sig_ign(status.as_bytes()).expect("the line"));
        assert!(ignored.contains(libc::SIGHUP));
        assert!(ignored.contains(libc::SIGPIPE));
        assert!(!ignored.contains(libc::SIGINT));
        assert!(!ignored.contains(libc::SIGCHLD), "SigBlk is another line");
        assert_eq!(sig_ign(b"SigIgn:\tzz\n"), None);
        assert_eq!(sig_ign(b"Name:\tx\n"), None);
        let odd_name = b"Name:\t\xff\xfe\nSigIgn:\t0000000000000001\n";
        assert_eq!(sig_ign(odd_name), Some(1), "a name not UTF-8");
    }

    #[test]
    fn a_line_is_only_read_once_it_is_whole() {
        // What a read that stopped inside the SigIgn line would leave.
        let cut = "SigBlk:\t0000000000000000\nSigIgn:\t00000000000010";
        assert_eq!(sig_ign(cut.as_bytes()), None);
        let whole = format!("{cut}01\nSigCgt:\t00");
        assert_eq!(sig_ign(whole.as_bytes()), Some(0x1001));
    }

    #[test]
    fn the_mask_set_is_the_calling_threads_and_the_kernels() {
        // In a thread of its own, so the block stays there.
        let blocked = std::thread::spawn(|| {
            set_mask_empty().expect("an empty mask");
            let sig_blk = || {
                let status = std::fs::read_to_string("/proc/thread-self/status").expect("status");
                let hex = status.lines().find_map(|l| l.strip_prefix("SigBlk:"));
                u64::from_str_radix(hex.expect("SigBlk").trim(), 16).expect("hex")
            };
            let before = sig_blk();
            block([libc::SIGUSR2, libc::SIGRTMAX()]).expect("SIGUSR2 blocked");
            (before, sig_blk())
        })
        .join()
        .expect("the thread ends");
        let both = bit(libc::SIGUSR2) | bit(libc::SIGRTMAX());
        assert_eq!(blocked, (0, both));
    }

    #[test]
    fn every_signal_number_has_its_own_bit_and_none_overflows() {
        assert_eq!(bit(1), 1);
        assert_eq!(bit(64), 1 << 63);
        assert_eq!(bit(0), 0);
        assert_eq!(bit(65), 0);
    }

    #[test]
    fn this_process_reads_the_same_ignored_set_both_ways() {
        // SIGWINCH's default action is to ignore it, so ignoring it here changes
        // nothing for the other tests of this process.
        set_ignored(libc::SIGWINCH, true).expect("SIGWINCH ignored");
        let from_proc = Ignored(proc_sig_ign().expect("/proc/thread-self/status"));
        assert!(from_proc.contains(libc::SIGWINCH));
        let asked = relayed()
            .filter(|&s| is_ignored(s))
            .fold(0, |mask, s| mask | bit(s));
        let relayed_mask = relayed().fold(0, |mask, s| mask | bit(s));
        assert_eq!(from_proc.0 & relayed_mask, asked);
    }
}
