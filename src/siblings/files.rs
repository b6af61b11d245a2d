//! The shared directory's files and their locks (SPEC §9): a container's `.alive`,
//! locked for its tandem's life and holding the statuses it runs again on, and
//! the directory's own lock, which every recording and deciding holds.

use std::fs::{self, File, OpenOptions, Permissions, TryLockError};
use std::io::{self, ErrorKind, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use tandem_common::exit_codes::ExitCodes;

/// The lock every tandem takes to record and decide.
pub(super) const DIR_LOCK: &str = "tandem.lock";
/// Made by the one tandem that decides the quits; holds its container's name.
pub(super) const CLAIMED: &str = "quit.claimed";

/// Opens (creating it) this container's own `.alive`, locks it, writes `keep` in
/// it and clears what a previous run of this container left (its `.done` or
/// `.again`, the claim), all under the directory's lock: a finishing sibling
/// never sees the file unlocked (it would take this container for one that
/// vanished), nor this container finished.
pub(super) fn enter(dir: &Path, me: &str, keep: ExitCodes) -> io::Result<File> {
    let _dir = lock_dir(dir)?;
    let alive = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.join(format!("{me}.alive")))?;
    lock_alive(&alive, me)?;
    alive.set_len(0)?;
    (&alive).write_all(keep.to_string().as_bytes())?;
    for stale in [
        format!("{me}.done"),
        format!("{me}.again"),
        CLAIMED.to_owned(),
    ] {
        match fs::remove_file(dir.join(stale)) {
            Err(e) if e.kind() != ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(alive)
}

/// Locks this tandem's own `.alive` for good. A live tandem of the same name holds
/// it exclusively; a sibling that saw the previous run end holds it shared for an
/// instant, and is waited out.
fn lock_alive(alive: &File, me: &str) -> io::Result<()> {
    match alive.try_lock() {
        Ok(()) => Ok(()),
        Err(TryLockError::Error(e)) => Err(e),
        Err(TryLockError::WouldBlock) => match alive.try_lock_shared() {
            Ok(()) => alive.lock(),
            Err(TryLockError::WouldBlock) => Err(io::Error::new(
                ErrorKind::AlreadyExists,
                format!("another running tandem calls itself {me}"),
            )),
            Err(TryLockError::Error(e)) => Err(e),
        },
    }
}

/// The directory's lock, held until the returned file is dropped.
pub(super) fn lock_dir(dir: &Path) -> io::Result<File> {
    let file = open_shared(&dir.join(DIR_LOCK))?;
    file.lock()?;
    Ok(file)
}

/// Opens a file that every container locks, creating it readable and writable by
/// all: job containers may run as different users, and a lock needs no more than
/// a file open for reading. Close-on-exec, like every file std opens, so the app
/// never inherits a lock.
fn open_shared(path: &PathBuf) -> io::Result<File> {
    match File::open(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        opened => return opened,
    }
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    // Past the umask; only its creator may change it, and may fail to (then the
    // others need read access, which the umask leaves).
    let _ = file.set_permissions(Permissions::from_mode(0o666));
    Ok(file)
}
