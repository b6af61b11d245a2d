//! Signal dispositions and masks: which signals tandem's parent left ignored (read
//! once at start-up, SIGPIPE's even before Rust's runtime changes it), giving a
//! signal its default again, and blocking or unblocking signals in a thread.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether SIGPIPE was ignored when the process started: Rust's runtime ignores it
/// before `main`, so only code that runs earlier can tell (see `SEE_SIGPIPE`).
pub(super) static PIPE_IGNORED_AT_START: AtomicBool = AtomicBool::new(false);

/// Run by the C runtime before `main` (and so before Rust's runtime changes
/// SIGPIPE), as every `.init_array` entry is, with glibc and musl alike.
#[used]
#[unsafe(link_section = ".init_array")]
static SEE_SIGPIPE: extern "C" fn() = see_sigpipe;

extern "C" fn see_sigpipe() {
    PIPE_IGNORED_AT_START.store(is_ignored(libc::SIGPIPE), Ordering::Relaxed);
}

/// The signals whose disposition was SIG_IGN when tandem started.
pub(super) struct Ignored(pub(super) u64);

impl Ignored {
    /// Read from `/proc/self/status` in one go: asking `sigaction` instead costs a
    /// system call a signal, ~50 of them. Without `/proc` (a bare chroot) it falls
    /// back to asking.
    pub(super) fn now() -> Ignored {
        Ignored(proc_sig_ign().unwrap_or_else(|| {
            (1..=libc::SIGRTMAX())
                .filter(|&s| is_ignored(s))
                .fold(0, |mask, s| mask | bit(s))
        }))
    }

    pub(super) fn contains(&self, sig: i32) -> bool {
        self.0 & bit(sig) != 0
    }
}

/// The `SigIgn:` mask of this process, read with plain `open`/`read` into one
/// stack buffer: std's `fs` and `read_to_string` would cost a system call and an
/// allocation per doubling of the buffer. A status longer than the buffer counts
/// as unreadable.
fn proc_sig_ign() -> Option<u64> {
    let mut buf = [0u8; 4096];
    // SAFETY: the path is a NUL-terminated literal; flags are plain integers.
    let fd = unsafe {
        libc::open(
            c"/proc/self/status".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    let mut len = 0;
    let complete = loop {
        let Some(rest) = buf.get_mut(len..).filter(|r| !r.is_empty()) else {
            break false;
        };
        // SAFETY: fd is open; rest is valid, writable memory of rest.len() bytes.
        let n = unsafe { libc::read(fd, rest.as_mut_ptr().cast(), rest.len()) };
        match usize::try_from(n) {
            Ok(0) => break true,
            Ok(n) => len += n,
            Err(_) if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break false,
        }
    };
    // SAFETY: fd was opened above and is closed once.
    unsafe { libc::close(fd) };
    let text = std::str::from_utf8(buf.get(..len)?).ok()?;
    complete.then(|| sig_ign_mask(text)).flatten()
}

/// Signal `sig`'s bit in the kernel's masks: bit 0 is signal 1.
fn bit(sig: i32) -> u64 {
    u32::try_from(sig - 1)
        .ok()
        .and_then(|shift| 1u64.checked_shl(shift))
        .unwrap_or(0)
}

/// The `SigIgn:` mask of a `/proc/PID/status` text (16 hex digits).
fn sig_ign_mask(status: &str) -> Option<u64> {
    let hex = status.lines().find_map(|l| l.strip_prefix("SigIgn:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

/// Whether `sig`'s disposition is SIG_IGN right now.
pub(super) fn is_ignored(sig: i32) -> bool {
    // SAFETY: sigaction is plain data; zeroed is a valid value to be overwritten.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only queries; old is a valid, writable sigaction.
    let queried = unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } == 0;
    queried && old.sa_sigaction == libc::SIG_IGN
}

/// Gives `sig` its default action. Async-signal-safe.
pub(super) fn set_default(sig: i32) {
    // SAFETY: sigaction is plain data; zeroed is a valid value (no flags, empty mask).
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = libc::SIG_DFL;
    // SAFETY: action is a valid sigaction; a null old action is allowed.
    unsafe { libc::sigaction(sig, &action, std::ptr::null_mut()) };
}

/// Blocks `sigs` in the calling thread; threads started later inherit the mask.
pub(super) fn block(sigs: &[i32]) -> io::Result<()> {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset before use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a valid, writable sigset_t.
    unsafe { libc::sigemptyset(&mut set) };
    for &sig in sigs {
        // SAFETY: set is initialised; the numbers come from `relayed()`.
        unsafe { libc::sigaddset(&mut set, sig) };
    }
    // SAFETY: set is initialised; a null old mask is allowed.
    match unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) } {
        0 => Ok(()),
        err => Err(io::Error::from_raw_os_error(err)),
    }
}

/// Unblocks every signal in the calling thread; threads and children started
/// later inherit the mask. Async-signal-safe.
pub(super) fn set_mask_empty() -> io::Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signals::relayed;

    #[test]
    fn sig_ign_is_read_from_proc_status() {
        let status = "Name:\ttandem\nSigPnd:\t0000000000000000\nSigBlk:\t0000000000010000\n\
                      SigIgn:\t0000000000001001\nSigCgt:\t0000000000000000\n";
        let ignored = Ignored(sig_ign_mask(status).expect("a SigIgn line"));
        assert!(ignored.contains(libc::SIGHUP));
        assert!(ignored.contains(libc::SIGPIPE));
        assert!(!ignored.contains(libc::SIGINT));
        assert!(!ignored.contains(libc::SIGCHLD), "SigBlk is another line");
        assert_eq!(sig_ign_mask("SigIgn:\tzz\n"), None);
        assert_eq!(sig_ign_mask("Name:\tx\n"), None);
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
        // SAFETY: SIG_IGN is a valid disposition for SIGWINCH.
        unsafe { libc::signal(libc::SIGWINCH, libc::SIG_IGN) };
        assert!(Ignored::now().contains(libc::SIGWINCH));
        let asked = relayed()
            .into_iter()
            .filter(|&s| is_ignored(s))
            .fold(0, |mask, s| mask | bit(s));
        let relayed_mask = relayed().into_iter().fold(0, |mask, s| mask | bit(s));
        assert_eq!(Ignored::now().0 & relayed_mask, asked);
    }
}
