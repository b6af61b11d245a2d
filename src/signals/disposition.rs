//! Signal dispositions and masks: which signals tandem's parent left ignored and
//! whether it left any blocked (read once, before Rust's runtime changes SIGPIPE),
//! giving a signal its default again, and blocking or unblocking signals in a
//! thread.

use std::io;
use std::sync::OnceLock;

/// The signal state tandem's parent left, recorded once: by `before_runtime`
/// before Rust's runtime ignores SIGPIPE, else by `register`.
static AT_START: OnceLock<AtStart> = OnceLock::new();

/// The signal state tandem's parent left (see `AT_START`).
pub(super) fn at_start() -> AtStart {
    *AT_START.get_or_init(AtStart::now)
}

/// The signals whose disposition was SIG_IGN when tandem started.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ignored(pub(super) u64);

/// The signal state tandem started with: what its parent left ignored, and
/// whether the calling thread blocks anything (`None`: not known).
#[derive(Debug, Clone, Copy)]
pub(super) struct AtStart {
    pub(super) ignored: Ignored,
    pub(super) blocks_any: Option<bool>,
}

impl AtStart {
    /// Read from the calling thread's `/proc/thread-self/status` in one go: asking
    /// `sigaction` instead costs a system call a signal, ~60 of them. Without
    /// `/proc` (a bare chroot) it falls back to asking, and the mask is not known.
    pub(super) fn now() -> AtStart {
        match proc_status_masks() {
            Some(masks) => AtStart {
                ignored: Ignored(masks.ignored),
                blocks_any: Some(masks.blocked != 0),
            },
            None => AtStart {
                ignored: Ignored(
                    (1..=libc::SIGRTMAX())
                        .filter(|&s| is_ignored(s))
                        .fold(0, |mask, s| mask | bit(s)),
                ),
                blocks_any: None,
            },
        }
    }
}

impl Ignored {
    pub(super) fn contains(&self, sig: i32) -> bool {
        self.0 & bit(sig) != 0
    }
}

/// The `SigBlk:` and `SigIgn:` masks of a status text.
#[derive(Debug, PartialEq, Eq)]
struct Masks {
    blocked: u64,
    ignored: u64,
}

/// The masks of the calling thread, read with plain system calls into one stack
/// buffer: std's `fs` and `read_to_string` would cost a system call and an
/// allocation per doubling of the buffer. The read stops as soon as the buffer
/// holds the whole `SigIgn:` line (`SigBlk:` comes before it): one `read`, where
/// reading to the end would take a second. A status whose line does not fit the
/// buffer counts as unreadable.
fn proc_status_masks() -> Option<Masks> {
    let mut buf = [0u8; 4096];
    // The `openat` system call itself, not libc's `open`: musl follows an
    // O_CLOEXEC open with an `fcntl` that only kernels before 2.6.23 need.
    // SAFETY: the path is a NUL-terminated literal; the rest are plain integers.
    let opened = unsafe {
        libc::syscall(
            libc::SYS_openat,
            libc::AT_FDCWD,
            c"/proc/thread-self/status".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    let fd = libc::c_int::try_from(opened).ok().filter(|&fd| fd >= 0)?;
    let mut len = 0;
    let masks = loop {
        let Some(rest) = buf.get_mut(len..).filter(|r| !r.is_empty()) else {
            break None;
        };
        // SAFETY: fd is open; rest is valid, writable memory of rest.len() bytes.
        let n = unsafe { libc::read(fd, rest.as_mut_ptr().cast(), rest.len()) };
        match usize::try_from(n) {
            // The end, and the lines were not there.
            Ok(0) => break None,
            Ok(n) => len += n,
            Err(_) if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break None,
        }
        if let Some(masks) = buf.get(..len).and_then(status_masks) {
            break Some(masks);
        }
    };
    // SAFETY: fd was opened above and is closed once.
    unsafe { libc::close(fd) };
    masks
}

/// Signal `sig`'s bit in the kernel's masks: bit 0 is signal 1.
fn bit(sig: i32) -> u64 {
    u32::try_from(sig - 1)
        .ok()
        .and_then(|shift| 1u64.checked_shl(shift))
        .unwrap_or(0)
}

/// The `SigBlk:` and `SigIgn:` masks of a `/proc/PID/status` text (16 hex
/// digits each), once it holds both lines whole (each ends with a newline). Read
/// as bytes: other lines (the command's name) need not be UTF-8.
fn status_masks(status: &[u8]) -> Option<Masks> {
    let end = status.iter().rposition(|&b| b == b'\n')?;
    let whole = status.get(..end)?;
    let field = |name: &[u8]| {
        let hex = whole
            .split(|&b| b == b'\n')
            .find_map(|l| l.strip_prefix(name))?;
        u64::from_str_radix(std::str::from_utf8(hex).ok()?.trim(), 16).ok()
    };
    Some(Masks {
        blocked: field(b"SigBlk:")?,
        ignored: field(b"SigIgn:")?,
    })
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
pub(super) fn block(sigs: impl IntoIterator<Item = i32>) -> io::Result<()> {
    set_mask(libc::SIG_BLOCK, sigs)
}

/// Unblocks every signal in the calling thread; threads and children started
/// later inherit the mask. Async-signal-safe.
pub(super) fn set_mask_empty() -> io::Result<()> {
    set_mask(libc::SIG_SETMASK, [])
}

/// `pthread_sigmask(how, sigs)`. Async-signal-safe (no allocation).
fn set_mask(how: libc::c_int, sigs: impl IntoIterator<Item = i32>) -> io::Result<()> {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset before use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a valid, writable sigset_t.
    unsafe { libc::sigemptyset(&mut set) };
    for sig in sigs {
        // SAFETY: set is initialised; the numbers come from `relayed()`.
        unsafe { libc::sigaddset(&mut set, sig) };
    }
    // SAFETY: set is initialised; a null old mask is allowed.
    match unsafe { libc::pthread_sigmask(how, &set, std::ptr::null_mut()) } {
        0 => Ok(()),
        err => Err(io::Error::from_raw_os_error(err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signals::relayed;

    #[test]
    fn sig_blk_and_sig_ign_are_read_from_proc_status() {
        let status = "Name:\ttandem\nSigPnd:\t0000000000000000\nSigBlk:\t0000000000010000\n\
                      SigIgn:\t0000000000001001\nSigCgt:\t0000000000000000\n";
        let masks = status_masks(status.as_bytes()).expect("both lines");
        assert_eq!(masks.blocked, bit(libc::SIGCHLD));
        let ignored = Ignored(masks.ignored);
        assert!(ignored.contains(libc::SIGHUP));
        assert!(ignored.contains(libc::SIGPIPE));
        assert!(!ignored.contains(libc::SIGINT));
        assert!(!ignored.contains(libc::SIGCHLD), "SigBlk is another line");
        assert_eq!(status_masks(b"SigBlk:\t0\nSigIgn:\tzz\n"), None);
        assert_eq!(status_masks(b"Name:\tx\n"), None);
        let odd_name = b"Name:\t\xff\xfe\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000000001\n";
        assert_eq!(
            status_masks(odd_name).map(|m| m.ignored),
            Some(1),
            "a name not UTF-8"
        );
    }

    #[test]
    fn a_line_is_only_read_once_it_is_whole() {
        // What a read that stopped inside the SigIgn line would leave.
        let cut = "SigBlk:\t0000000000000000\nSigIgn:\t00000000000010";
        assert_eq!(status_masks(cut.as_bytes()), None);
        let whole = format!("{cut}01\nSigCgt:\t00");
        let masks = status_masks(whole.as_bytes()).expect("both lines whole");
        assert_eq!(masks.ignored, 0x1001);
    }

    #[test]
    fn the_mask_read_is_the_calling_threads() {
        // In a thread of its own, so the block stays there.
        let blocked_then_not = std::thread::spawn(|| {
            set_mask_empty().expect("an empty mask");
            let before = AtStart::now().blocks_any;
            block([libc::SIGUSR2]).expect("SIGUSR2 blocked");
            (before, AtStart::now().blocks_any)
        })
        .join()
        .expect("the thread ends");
        assert_eq!(blocked_then_not, (Some(false), Some(true)));
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
        assert!(AtStart::now().ignored.contains(libc::SIGWINCH));
        let asked = relayed()
            .filter(|&s| is_ignored(s))
            .fold(0, |mask, s| mask | bit(s));
        let relayed_mask = relayed().fold(0, |mask, s| mask | bit(s));
        assert_eq!(AtStart::now().ignored.0 & relayed_mask, asked);
    }
}
