//! Waiting for the other job containers without timers or polling (SPEC §9): a
//! thread of its own sleeps in the kernel, on a running sibling's lock (granted
//! when its tandem is gone, however it went) or on inotify for a not-started
//! one's `.alive` to appear or a between-runs one's `.again` to go, then wakes
//! the main thread through the event channel, where a terminating signal can end
//! the wait first.

use std::fs::File;
use std::io::{self, ErrorKind, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread;

use crate::event::{Channel, Event};
use crate::signals::TERMINATING;

/// How a wait ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Woken {
    /// What it waited for happened: time to look at the directory again.
    Changed,
    /// tandem got this terminating signal first.
    Signal(i32),
    /// The wait itself failed (logged already).
    Failed,
}

/// Waits until the tandem holding `alive`'s lock is gone.
pub(super) fn until_gone(alive: PathBuf, channel: &Channel) -> io::Result<Woken> {
    wait_on(
        channel,
        Box::new(move || {
            // Granted once the holder's process has ended; let go at once, so a run
            // of that container starting again finds it free.
            File::open(&alive)?.lock_shared()
        }),
    )
}

/// The directory watched for `.alive` files being created and `.again` files
/// going.
pub(super) struct Arrivals {
    inotify: Arc<File>,
}

impl Arrivals {
    /// Starts watching `dir`; files created from now on are seen.
    pub(super) fn watch(dir: &Path) -> io::Result<Arrivals> {
        // SAFETY: inotify_init1 takes a flag and returns a new descriptor or -1.
        let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a new descriptor that nothing else owns.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        // A path from the environment holds no NUL; the one pushed here ends it.
        let mut path = dir.as_os_str().as_bytes().to_vec();
        path.push(0);
        // A `.again` goes when its container's next run starts.
        let mask = libc::IN_CREATE | libc::IN_MOVED_TO | libc::IN_DELETE | libc::IN_ONLYDIR;
        let path = path.as_ptr().cast();
        // SAFETY: the descriptor is open and path a NUL-terminated byte string.
        let added = unsafe { libc::inotify_add_watch(owned.as_raw_fd(), path, mask) };
        if added < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Arrivals {
            inotify: Arc::new(File::from(owned)),
        })
    }

    /// Waits until a `.alive` or `.again` file appears or goes (or the kernel's
    /// queue overflowed, which may hide one).
    pub(super) fn next(&self, channel: &Channel) -> io::Result<Woken> {
        let inotify = Arc::clone(&self.inotify);
        wait_on(
            channel,
            Box::new(move || {
                let mut buf = [0u8; 4096];
                loop {
                    let n = match (&*inotify).read(&mut buf) {
                        Ok(n) => n,
                        Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                        Err(e) => return Err(e),
                    };
                    if names_an_arrival(&buf[..n]) {
                        return Ok(());
                    }
                }
            }),
        )
    }
}

/// Whether a buffer of inotify events names a `.alive` or `.again` file, or
/// holds a queue overflow.
fn names_an_arrival(mut events: &[u8]) -> bool {
    const HEADER: usize = std::mem::size_of::<libc::inotify_event>();
    let field = |bytes: &[u8], at: usize| {
        bytes
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u32::from_ne_bytes)
    };
    while events.len() >= HEADER {
        // The header: wd, mask, cookie, len; then `len` bytes of NUL-padded name.
        let (mask, len) = (field(events, 4), field(events, 12) as usize);
        let name = events.get(HEADER..HEADER + len).unwrap_or_default();
        let name = name.split(|&b| b == 0).next().unwrap_or_default();
        if mask & libc::IN_Q_OVERFLOW != 0 || name.ends_with(b".alive") || name.ends_with(b".again")
        {
            return true;
        }
        events = events.get(HEADER + len..).unwrap_or_default();
    }
    false
}

/// What a waiting thread runs: returns once what it waits for has happened.
type Block = Box<dyn FnOnce() -> io::Result<()> + Send>;

/// Runs `block` on a thread of its own and waits for it, or for a terminating
/// signal (the relay sends every signal to the main thread once the app is gone).
fn wait_on(channel: &Channel, block: Block) -> io::Result<Woken> {
    let wake = channel.sender.clone();
    thread::Builder::new()
        .name("siblings".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let waited = block()
                .map_err(|e| log::error!("cannot wait for the other job containers: {e}"))
                .is_ok();
            let _ = wake.send(Event::Sibling(waited));
        })?;
    loop {
        match channel.events.recv() {
            Ok(Event::Sibling(true)) => return Ok(Woken::Changed),
            Ok(Event::Sibling(false)) => return Ok(Woken::Failed),
            Ok(Event::Signal(sig)) if TERMINATING.contains(&sig) => return Ok(Woken::Signal(sig)),
            Ok(_) => {}
            // The main thread holds a sender: this cannot happen.
            Err(_) => return Ok(Woken::Failed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One inotify event as the kernel lays it out.
    fn event(mask: u32, name: &str) -> Vec<u8> {
        let mut padded = name.as_bytes().to_vec();
        padded.resize(name.len().div_ceil(16) * 16, 0);
        let mut bytes = Vec::new();
        for field in [1, mask, 0, padded.len() as u32] {
            bytes.extend(field.to_ne_bytes());
        }
        bytes.extend(padded);
        bytes
    }

    #[test]
    fn only_an_alive_or_again_file_or_an_overflow_is_an_arrival() {
        assert!(names_an_arrival(&event(libc::IN_CREATE, "report.alive")));
        assert!(names_an_arrival(&event(libc::IN_DELETE, "report.again")));
        assert!(!names_an_arrival(&event(libc::IN_CREATE, "report.done")));
        assert!(!names_an_arrival(&event(libc::IN_CREATE, "tandem.lock")));
        assert!(names_an_arrival(&event(libc::IN_Q_OVERFLOW, "")));
        let mut two = event(libc::IN_CREATE, "quit.claimed");
        two.extend(event(libc::IN_MOVED_TO, "a.alive"));
        assert!(names_an_arrival(&two));
        assert!(!names_an_arrival(&[]));
        assert!(!names_an_arrival(&[0; 7]));
    }

    #[test]
    fn a_new_alive_file_wakes_the_watch_and_others_do_not() {
        let dir = std::env::temp_dir().join(format!("tandem-arrivals-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let channel = crate::event::channel();
        let arrivals = Arrivals::watch(&dir).unwrap();
        std::fs::write(dir.join("x.done"), "").unwrap();
        std::fs::write(dir.join("x.alive"), "").unwrap();
        assert_eq!(arrivals.next(&channel).unwrap(), Woken::Changed);
        channel.sender.send(Event::Signal(libc::SIGTERM)).unwrap();
        assert_eq!(
            arrivals.next(&channel).unwrap(),
            Woken::Signal(libc::SIGTERM)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
