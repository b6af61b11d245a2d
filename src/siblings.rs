//! Several job containers in one Pod (SPEC §9): each tandem records in a shared
//! directory that its container has finished, and only the last one decides the
//! quit requests, so the first to finish never cuts the mesh under the others.
//!
//! Liveness comes from the kernel, not from timers: each tandem holds an exclusive
//! `flock` on `NAME.alive` from `join` until its process ends, however it ends. A
//! listed container whose `NAME.alive` exists but is unlocked started and vanished
//! without recording (its tandem was killed outright): it counts as finished,
//! unless the statuses it keeps the sidecars on (`--keep-on-exit`, which `join`
//! writes in `NAME.alive`) hold 137, the status the kubelet sees for a container
//! killed outright: it runs again then. One without `NAME.alive` has not started
//! yet and is waited for.
//! Recording and deciding happen under one lock on the directory (`tandem.lock`),
//! so of several tandems finishing at once exactly one sees everyone finished; it
//! claims the decision in `quit.claimed`, which tells the others it is taken.
//!
//! A tandem that finishes while others run stays and waits for them, asleep in the
//! kernel (`watch`): on a running one's lock, or for a not-started one's
//! `NAME.alive` to appear. So a sibling killed after it finished still has the
//! sidecars stopped by whoever is left. A container whose status is in its
//! `--keep-on-exit` has not finished: it records `NAME.again` and exits at once,
//! and the others wait for its next run, which joins again: its `NAME.done` or
//! `NAME.again` and the claim go, and the quits are decided anew once all have
//! finished.

mod files;
mod watch;

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, ErrorKind, Write};
use std::sync::OnceLock;

use crate::event::Channel;
use crate::exit::{Error, invalid};
use crate::settings::JobContainers;
use files::{CLAIMED, enter, lock_dir};
use tandem_common::exit_codes::ExitCodes;
use watch::{Arrivals, Woken};

/// The status the kubelet records for a container killed outright (SIGKILL).
const KILLED_OUTRIGHT: u8 = 128 + 9;

/// This process's `NAME.alive`, locked from `join` to the end of the process: only
/// the kernel lets go of it, when the process is gone.
static ALIVE: OnceLock<File> = OnceLock::new();

/// Whose turn it is to stop the sidecars, once this container's app has ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Turn {
    /// Every listed container has finished and this tandem decides the quits.
    Last,
    /// Another tandem decides them (it has, or it will: this one stopped waiting).
    Others,
}

/// Marks this container as started and not finished, before tandem waits for the
/// sidecars: from here on a container that finishes earlier waits for this one. A
/// directory that cannot be used, or a name that another running tandem holds,
/// is a bad value (SPEC §9). `keep`: the statuses this container runs again on.
pub fn join(jobs: &JobContainers, keep: ExitCodes) -> Result<(), Error> {
    let alive = enter(&jobs.dir, &jobs.me, keep).map_err(|e| {
        if e.kind() == ErrorKind::AlreadyExists {
            let expected = format!("a name no other running tandem has in {}", jobs.dir_from);
            invalid(jobs.me_from, &jobs.me, &expected)
        } else {
            let expected = format!("a directory this container can write ({e})");
            invalid(jobs.dir_from, &jobs.dir.display().to_string(), &expected)
        }
    })?;
    // A second join in one process (there is none) would keep the first lock.
    let _ = ALIVE.set(alive);
    Ok(())
}

/// Records that this container will run again after ending with `status`, so
/// the others keep the sidecars up for that run (SPEC §9). `Err` is the line
/// that says why it could not, already logged.
pub fn run_again(jobs: &JobContainers, status: u8) -> Result<(), String> {
    let _dir = lock_dir(&jobs.dir).map_err(cannot(jobs))?;
    fs::write(
        jobs.dir.join(format!("{}.again", jobs.me)),
        format!("{status}\n"),
    )
    .map_err(cannot(jobs))
}

/// The error line of a tandem that cannot use the shared directory, logged.
fn cannot(jobs: &JobContainers) -> impl Fn(io::Error) -> String {
    move |e| {
        let line = format!(
            "cannot use {} {}: {e}: leaving the sidecars to the other job containers",
            jobs.dir_from,
            jobs.dir.display()
        );
        log::error!("{line}");
        line
    }
}

/// Records that this container's app ended with `status` and, while others
/// still run or will run again, waits until all have finished (SPEC §9). `Err`
/// is the line that says why this tandem could not take part, already logged;
/// it leaves the sidecars to the others then.
pub fn finish(jobs: &JobContainers, status: u8, channel: &Channel) -> Result<Turn, String> {
    let cannot = cannot(jobs);
    let mut record = Some(status);
    let mut arrivals: Option<Arrivals> = None;
    let mut told = false;
    loop {
        let roll = match call_roll(jobs, record.take()).map_err(&cannot)? {
            Called::Decided(turn) => return Ok(turn),
            Called::Waiting(roll) => roll,
        };
        if !told {
            roll.tell_leaving();
            told = true;
        }
        let woken = if let Some(running) = roll.running.first() {
            log::debug!("waiting for {running} to end");
            watch::until_gone(jobs.dir.join(format!("{running}.alive")), channel)
        } else if let Some(arrivals) = &arrivals {
            log::debug!("waiting for a container to start");
            arrivals.next(channel)
        } else {
            // Watch first, then look again: one may have started in between.
            arrivals = Some(Arrivals::watch(&jobs.dir).map_err(&cannot)?);
            continue;
        };
        match woken.map_err(&cannot)? {
            Woken::Changed => {}
            Woken::Signal(sig) => {
                log::info!(
                    "signal {sig} while waiting for the other job containers: leaving the sidecars to them"
                );
                return Ok(Turn::Others);
            }
            Woken::Failed => {
                return Err(String::from(
                    "cannot wait for the other job containers: leaving the sidecars to them",
                ));
            }
        }
    }
}

/// What one look at the directory found.
enum Called {
    /// Everyone has finished: this tandem's turn, or another's.
    Decided(Turn),
    /// Someone is still running, has not started or will run again.
    Waiting(Roll),
}

/// Under the directory's lock: records this container's `status` if given,
/// looks at every listed one and, when all have finished, claims the decision.
fn call_roll(jobs: &JobContainers, status: Option<u8>) -> io::Result<Called> {
    let _dir = lock_dir(&jobs.dir)?;
    if let Some(status) = status {
        fs::write(
            jobs.dir.join(format!("{}.done", jobs.me)),
            format!("{status}\n"),
        )?;
    }
    let roll = Roll::call(jobs)?;
    if !roll.running.is_empty() || !roll.not_started.is_empty() || !roll.again.is_empty() {
        return Ok(Called::Waiting(roll));
    }
    let claimed = jobs.dir.join(CLAIMED);
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&claimed)
    {
        Ok(mut file) => {
            // Only for the others' log line: the claim is the file's existence.
            let _ = file.write_all(jobs.me.as_bytes());
            roll.tell_vanished();
            Ok(Called::Decided(Turn::Last))
        }
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            let by = fs::read(&claimed).unwrap_or_default();
            let by = String::from_utf8_lossy(&by);
            let by = if by.is_empty() { "another one" } else { &by };
            log::info!("every job container has finished: {by} sees to the sidecars");
            Ok(Called::Decided(Turn::Others))
        }
        Err(e) => Err(e),
    }
}

/// The listed containers as the directory shows them.
#[derive(Debug, Default)]
struct Roll {
    /// Started and still running (their lock is held).
    running: Vec<String>,
    /// Without a `.alive` file yet.
    not_started: Vec<String>,
    /// Ended with a status the kubelet runs them again on, not started again yet.
    again: Vec<String>,
    /// Started, then gone without recording.
    vanished: Vec<String>,
}

impl Roll {
    /// Looks at every listed container but this one (recorded already; its own
    /// `.alive` would read as running forever); call with the directory locked.
    fn call(jobs: &JobContainers) -> io::Result<Roll> {
        let mut roll = Roll::default();
        for name in jobs.all.iter().filter(|name| **name != jobs.me) {
            let file = |ending: &str| jobs.dir.join(format!("{name}.{ending}"));
            if file("done").try_exists()? {
                continue;
            }
            // Before the lock: a container between runs is not one that vanished.
            if file("again").try_exists()? {
                roll.again.push(name.clone());
                continue;
            }
            let alive = match File::open(file("alive")) {
                Ok(file) => file,
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    roll.not_started.push(name.clone());
                    continue;
                }
                Err(e) => return Err(e),
            };
            match alive.try_lock_shared() {
                Ok(()) if runs_again_when_killed(&file("alive")) => {
                    fs::write(file("again"), format!("{KILLED_OUTRIGHT}\n"))?;
                    log::info!(
                        "{name} was killed outright and the kubelet runs it again on exit {KILLED_OUTRIGHT}: keeping the sidecars for that run"
                    );
                    roll.again.push(name.clone());
                }
                Ok(()) => roll.vanished.push(name.clone()),
                Err(TryLockError::WouldBlock) => roll.running.push(name.clone()),
                Err(TryLockError::Error(e)) => return Err(e),
            }
        }
        Ok(roll)
    }

    /// The info line of a tandem that leaves the sidecars to another (SPEC §9).
    fn tell_leaving(&self) {
        let mut line = String::from("leaving the sidecars to the last job container to finish");
        for (list, what) in [
            (&self.running, "still running"),
            (&self.not_started, "not started yet"),
            (&self.again, "to run again"),
        ] {
            if !list.is_empty() {
                line += &format!("; {what}: {}", names(list));
            }
        }
        log::info!("{line}");
    }

    /// A warning for each container that vanished without recording.
    fn tell_vanished(&self) {
        for name in &self.vanished {
            log::warn!(
                "{name} ended without recording that it finished (its tandem was killed): counting it as finished"
            );
        }
    }
}

/// Whether the container whose `alive` file holds its keep set (`join`) is run
/// again when killed outright. Unreadable or empty (an older tandem's): it is not.
fn runs_again_when_killed(alive: &std::path::Path) -> bool {
    let keep = fs::read(alive).unwrap_or_default();
    let keep = std::str::from_utf8(&keep).map_or(Err(String::new()), ExitCodes::parse);
    keep.is_ok_and(|keep| keep.contains(KILLED_OUTRIGHT))
}

/// Container names for a log line: `a, b`.
fn names(list: &[String]) -> String {
    let mut line = String::new();
    for name in list {
        if !line.is_empty() {
            line.push_str(", ");
        }
        line.push_str(name);
    }
    line
}

#[cfg(test)]
mod tests;
