//! Several job containers in one Pod (SPEC §9): each tandem records in a shared
//! directory that its container has finished, and only the last one sends the quit
//! requests, so the first to finish never cuts the mesh under the others.
//!
//! Liveness comes from the kernel, not from timers: each tandem holds an exclusive
//! `flock` on `NAME.alive` for as long as it lives, and the kernel drops the lock
//! when the process dies, however it dies. A sibling whose `NAME.alive` exists but
//! can be locked started and vanished without recording (killed outright, OOM): it
//! counts as finished, and as failed. One without `NAME.alive` has not started yet
//! and is waited for by whoever finishes after it. Recording and deciding happen
//! under one lock on the directory, so of several tandems finishing at once exactly
//! one sees everyone finished, and `quit.claimed` keeps a later restart of a
//! container from sending them again.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

/// The lock every tandem takes to record and decide.
const DIR_LOCK: &str = "tandem.lock";
/// Made by the one tandem that sends the quits.
const CLAIMED: &str = "quit.claimed";
/// What a `.done` file says when the container's app failed.
const FAILED: &[u8] = b"failed\n";
/// What a `.done` file says when the container's app succeeded.
const SUCCEEDED: &[u8] = b"succeeded\n";

/// This container's place among the job containers, from start to finish.
#[derive(Debug)]
pub struct Siblings {
    dir: PathBuf,
    me: String,
    all: Vec<String>,
    /// Held locked until tandem exits; the kernel unlocks it if tandem dies.
    _alive: File,
}

/// Who stops the sidecars, once this container has finished.
#[derive(Debug, PartialEq, Eq)]
pub enum Turn {
    /// Every listed container has finished: this tandem sends the quits.
    /// `any_failed` is true when one of them failed or vanished (the failure
    /// policy of SPEC §5 then applies).
    Last {
        /// A listed container failed or vanished without recording.
        any_failed: bool,
    },
    /// Others are still running (or have not started): they stop the sidecars.
    LeaveTo(Vec<String>),
    /// The quits were already sent by another tandem (this container ran again
    /// after the Pod's job was done).
    AlreadySent,
}

impl Siblings {
    /// Marks this container as started (and not finished, if it ran before in
    /// this Pod). Call before waiting for the sidecars: from here on an early
    /// finisher waits for this one.
    pub fn join(dir: &Path, me: &str, all: &[String]) -> io::Result<Siblings> {
        // Under the directory's lock: a finishing sibling never sees the file
        // before it is locked (it would take this container for one that vanished).
        let _dir = lock_dir(dir)?;
        let alive = open_rw(&dir.join(format!("{me}.alive")))?;
        // Another live tandem holds it only if two containers share a name.
        alive.try_lock().map_err(|e| match e {
            TryLockError::WouldBlock => io::Error::new(
                ErrorKind::AlreadyExists,
                format!("another running tandem already calls itself {me}"),
            ),
            TryLockError::Error(e) => e,
        })?;
        match fs::remove_file(dir.join(format!("{me}.done"))) {
            Err(e) if e.kind() != ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        Ok(Siblings {
            dir: dir.to_path_buf(),
            me: me.to_string(),
            all: all.to_vec(),
            _alive: alive,
        })
    }

    /// Records that this container's app ended (`failed`: with a non-zero status
    /// or a signal) and says whether this tandem sends the quits.
    pub fn finish(self, failed: bool) -> io::Result<Turn> {
        let _dir = lock_dir(&self.dir)?;
        let verdict = if failed { FAILED } else { SUCCEEDED };
        fs::write(self.dir.join(format!("{}.done", self.me)), verdict)?;
        let mut running = Vec::new();
        let mut any_failed = false;
        for name in &self.all {
            match self.state_of(name)? {
                State::Finished { failed } => any_failed |= failed,
                State::Running | State::NotStarted => running.push(name.clone()),
            }
        }
        if !running.is_empty() {
            return Ok(Turn::LeaveTo(running));
        }
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.dir.join(CLAIMED))
        {
            Ok(_) => Ok(Turn::Last { any_failed }),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(Turn::AlreadySent),
            Err(e) => Err(e),
        }
    }

    /// What the directory says of `name`; call with the directory locked.
    fn state_of(&self, name: &str) -> io::Result<State> {
        match fs::read(self.dir.join(format!("{name}.done"))) {
            Ok(verdict) => {
                return Ok(State::Finished {
                    failed: verdict != SUCCEEDED,
                });
            }
            Err(e) if e.kind() != ErrorKind::NotFound => return Err(e),
            Err(_) => {}
        }
        if name == self.me {
            // Just written; unreachable unless the file vanished under us.
            return Ok(State::Finished { failed: true });
        }
        let alive = match File::open(self.dir.join(format!("{name}.alive"))) {
            Ok(file) => file,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(State::NotStarted),
            Err(e) => return Err(e),
        };
        match alive.try_lock_shared() {
            // Nobody holds it: its tandem is gone without recording.
            Ok(()) => Ok(State::Finished { failed: true }),
            Err(TryLockError::WouldBlock) => Ok(State::Running),
            Err(TryLockError::Error(e)) => Err(e),
        }
    }
}

/// A sibling as the shared directory shows it.
enum State {
    NotStarted,
    Running,
    Finished { failed: bool },
}

/// The directory's lock, held until the returned file is dropped.
fn lock_dir(dir: &Path) -> io::Result<File> {
    let file = open_rw(&dir.join(DIR_LOCK))?;
    file.lock()?;
    Ok(file)
}

/// Opens (creating) a file for reading and writing; close-on-exec like every file
/// std opens, so the app never inherits a lock.
fn open_rw(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn temp_dir(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("tandem-siblings-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_first_to_finish_leaves_the_quits_to_the_one_still_running() {
        let dir = temp_dir("two");
        let all = names(&["migrate", "report"]);
        let a = Siblings::join(&dir, "migrate", &all).unwrap();
        let b = Siblings::join(&dir, "report", &all).unwrap();
        assert_eq!(a.finish(false).unwrap(), Turn::LeaveTo(names(&["report"])));
        assert_eq!(b.finish(false).unwrap(), Turn::Last { any_failed: false });
    }

    #[test]
    fn a_sibling_not_started_yet_is_waited_for() {
        let dir = temp_dir("late");
        let all = names(&["main", "upload"]);
        let a = Siblings::join(&dir, "main", &all).unwrap();
        assert_eq!(a.finish(true).unwrap(), Turn::LeaveTo(names(&["upload"])));
        let b = Siblings::join(&dir, "upload", &all).unwrap();
        assert_eq!(b.finish(false).unwrap(), Turn::Last { any_failed: true });
    }

    #[test]
    fn a_sibling_whose_lock_was_dropped_counts_as_finished_and_failed() {
        let dir = temp_dir("gone");
        let all = names(&["main", "upload"]);
        let a = Siblings::join(&dir, "main", &all).unwrap();
        // Dropping without finishing is what the kernel does for a killed tandem.
        drop(Siblings::join(&dir, "upload", &all).unwrap());
        assert_eq!(a.finish(false).unwrap(), Turn::Last { any_failed: true });
    }

    #[test]
    fn a_container_that_runs_again_after_the_quits_does_not_send_them_twice() {
        let dir = temp_dir("again");
        let all = names(&["only"]);
        let first = Siblings::join(&dir, "only", &all).unwrap();
        assert_eq!(
            first.finish(false).unwrap(),
            Turn::Last { any_failed: false }
        );
        let again = Siblings::join(&dir, "only", &all).unwrap();
        assert_eq!(again.finish(false).unwrap(), Turn::AlreadySent);
    }

    #[test]
    fn two_live_tandems_cannot_share_a_name() {
        let dir = temp_dir("twice");
        let all = names(&["a"]);
        let _first = Siblings::join(&dir, "a", &all).unwrap();
        let second = Siblings::join(&dir, "a", &all).unwrap_err();
        assert_eq!(second.kind(), ErrorKind::AlreadyExists);
    }
}
