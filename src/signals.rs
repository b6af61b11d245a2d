//! The signal relay: one signal-hook thread that hands signals to the waiting
//! phase before the app exists, relays them to the app while it runs, and drops
//! them once it is gone, so a reaped pid is never signalled (SPEC §3, §4).

use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;

use signal_hook::iterator::Signals;

use crate::error::Error;
use crate::event::{Event, Events, Sender};
use crate::log;
use crate::terminal::JobControl;

/// Signals that end the wait for readiness (SPEC §3).
pub const TERMINATING: [i32; 4] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT];

/// Every signal tandem relays: all catchable ones except SIGCHLD (it only means
/// "reap"), the synchronous faults (a handler that returns would re-run the fault),
/// SIGPIPE (tandem's own broken stderr must not reach the app) and SIGTTIN/SIGTTOU
/// (ignored so tandem never stops on the terminal it handed to the app).
pub fn relayed() -> Vec<i32> {
    let mut set = STANDARD.to_vec();
    set.extend(realtime());
    set
}

/// The relayed signals below SIGRTMIN, registered in `main` before anything else.
const STANDARD: [i32; 18] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
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
}

/// The handlers installed so far and the signals the relay thread adds itself.
pub struct Handlers {
    signals: Signals,
    /// Real-time signals to register on the relay thread (see [`realtime`]).
    later: Vec<i32>,
}

/// Installs the handlers: the one place that decides which signals tandem
/// catches. Call first in `main`, before any thread or child exists, so no signal
/// finds a default action in between.
///
/// A signal tandem's parent ignored stays ignored, so the app inherits it as with
/// tini (`nohup tandem app` keeps the app immune to SIGHUP); a signal it blocked is
/// unblocked, or it would never reach the relay (STYLE §7.6).
pub fn register() -> Result<Handlers, Error> {
    let failed = |e| Error::Io("installing signal handlers", e);
    let ignored = Ignored::now();
    let wanted: Vec<i32> = relayed()
        .into_iter()
        .filter(|&s| !ignored.contains(s))
        .collect();
    unblock(&wanted).map_err(failed)?;
    let (now, later): (Vec<i32>, Vec<i32>) = wanted.into_iter().partition(|s| STANDARD.contains(s));
    let signals = Signals::new(now).map_err(failed)?;
    Ok(Handlers { signals, later })
}

/// The signals whose disposition was SIG_IGN when tandem started.
struct Ignored(u64);

impl Ignored {
    /// Read from `/proc/self/status` in one go: asking `sigaction` instead costs a
    /// system call a signal, a third of tandem's start-up calls. Without `/proc`
    /// (a bare chroot) it falls back to asking.
    fn now() -> Ignored {
        let from_proc = proc_sig_ign();
        Ignored(from_proc.unwrap_or_else(|| {
            relayed()
                .into_iter()
                .filter(|&s| is_ignored(s))
                .fold(0, |mask, s| mask | bit(s))
        }))
    }

    fn contains(&self, sig: i32) -> bool {
        self.0 & bit(sig) != 0
    }
}

/// The `SigIgn:` mask of this process, read with plain `open`/`read` into one
/// stack buffer: std's `fs` and `read_to_string` would cost a system call and an
/// allocation per doubling of the buffer, and fault in tens of KiB of their code
/// (peak RSS). A status longer than the buffer counts as unreadable.
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
fn is_ignored(sig: i32) -> bool {
    // SAFETY: sigaction is plain data; zeroed is a valid value to be overwritten.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only queries; old is a valid, writable sigaction.
    let queried = unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } == 0;
    queried && old.sa_sigaction == libc::SIG_IGN
}

/// Empties the calling thread's signal mask. Async-signal-safe: it is called
/// in the app's process between fork and exec.
pub fn unblock_all() -> io::Result<()> {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset before use.
    let mut empty: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: empty is a valid, writable sigset_t.
    unsafe { libc::sigemptyset(&mut empty) };
    // SAFETY: empty is initialised; a null old mask is allowed.
    match unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()) } {
        0 => Ok(()),
        err => Err(io::Error::from_raw_os_error(err)),
    }
}

/// Unblocks `sigs` in the calling thread; threads started later inherit the mask.
fn unblock(sigs: &[i32]) -> io::Result<()> {
    mask(libc::SIG_UNBLOCK, sigs)
}

/// Changes the calling thread's mask for `sigs` (`how`: SIG_BLOCK, SIG_UNBLOCK).
fn mask(how: libc::c_int, sigs: &[i32]) -> io::Result<()> {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset before use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a valid, writable sigset_t.
    unsafe { libc::sigemptyset(&mut set) };
    for &sig in sigs {
        // SAFETY: set is initialised; the numbers come from `relayed()`.
        unsafe { libc::sigaddset(&mut set, sig) };
    }
    // SAFETY: set is initialised; a null old mask is allowed.
    match unsafe { libc::pthread_sigmask(how, &set, std::ptr::null_mut()) } {
        0 => Ok(()),
        err => Err(io::Error::from_raw_os_error(err)),
    }
}

impl Relay {
    /// Starts the relay thread; until `spawn_then_relay`, signals go to `events`.
    ///
    /// Once the thread runs, the calling thread blocks every caught signal, and so
    /// do the threads it starts later (the poller, quit requests): the kernel then
    /// runs each handler on the relay thread itself, whose wait the handler's write
    /// ends at once, instead of on a thread that must wake the relay in turn. The
    /// app still starts with nothing blocked: std empties the mask in the child.
    pub fn start(handlers: Handlers, events: Sender) -> Result<Relay, Error> {
        let Handlers { mut signals, later } = handlers;
        let target = Arc::new(Mutex::new(Target::Waiting));
        let shared = Arc::clone(&target);
        // Detached: it lives as long as the process (see `main`).
        thread::Builder::new()
            .name("signal-relay".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                for sig in later {
                    if let Err(e) = signals.add_signal(sig) {
                        log::debug!("cannot relay signal {sig}: {e}");
                    }
                }
                for sig in signals.forever() {
                    relay_one(&lock(&shared), sig, &events);
                }
            })
            .map_err(|e| Error::Io("starting the signal relay", e))?;
        // Ignored ones too: blocking a signal that is discarded changes nothing.
        if let Err(e) = mask(libc::SIG_BLOCK, &relayed()) {
            // Only slower: any thread can take a signal, the relay still gets it.
            log::debug!("cannot leave signals to the relay thread: {e}");
        }
        Ok(Relay { target })
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let read = Ignored::now().0 & relayed_mask;
        assert_eq!(read, asked);
    }
}
