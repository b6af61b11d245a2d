//! Starting the app (and, by `run`, waiting for it through `reap`): job control
//! taken, the relay pointed at it, PATH lookup, its own process group, job control
//! and signal state set up in the child (`terminal`, `signals`), and exec failures
//! mapped to 126/127 (SPEC §4, §7). `spawn` starts the `--on-exit` program too.

use std::ffi::{CString, OsStr, OsString};
use std::io::{self, ErrorKind};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use crate::event::Events;
use crate::exit::{Error, Outcome};
use crate::reap;
use crate::settings::ForwardTo;
use crate::signals::{AppSignals, Relay};
use crate::terminal::JobControl;

/// Runs the app to its end: `start`, then `reap::wait_for` it; a failure to
/// start or to wait for it is the run's outcome (126, 127, 70).
pub fn run(
    command: &OsStr,
    args: &[OsString],
    relay: &Relay,
    pending: &Events,
    forward_to: ForwardTo,
) -> Outcome {
    start(command, args, relay, pending, forward_to)
        .and_then(|(pid, job)| reap::wait_for(pid, relay, job))
        .unwrap_or_else(Outcome::Failed)
}

/// Starts the app once the wait is over, with the relay pointed at it from the
/// spawn on (signals `pending` since the wait ended included); gives its pid and
/// the job control that `reap` carries on (SPEC §4).
pub fn start(
    command: &OsStr,
    args: &[OsString],
    relay: &Relay,
    pending: &Events,
    forward_to: ForwardTo,
) -> Result<(libc::pid_t, Option<JobControl>), Error> {
    // Only now: tandem leaves the terminal alone while it waits.
    let job = JobControl::take();
    let group = forward_to == ForwardTo::Group;
    let spawn = || {
        let mut cmd = Command::new(command);
        cmd.args(args);
        self::spawn(cmd, job, relay.app_signals(), None)
    };
    let pid = relay.spawn_then_relay(group, job, pending, spawn)?;
    Ok((pid, job))
}

/// An environment for a child in place of tandem's, installed between fork and
/// exec as std installs one: a `Command` with its environment changed would link
/// std's map of the changes (about 5 KB of a binary held to its size, SPEC §1).
pub struct Environ {
    /// The `NAME=value` strings the pointers point into.
    _strings: Vec<CString>,
    /// Null-terminated, as `environ` is.
    pointers: Vec<*const libc::c_char>,
}

// SAFETY: the pointers point into `_strings`, which moves with them and never
// changes; the child reads them after fork, in a process of its own.
unsafe impl Send for Environ {}
// SAFETY: as for Send: nothing writes through the pointers.
unsafe impl Sync for Environ {}

unsafe extern "C" {
    /// The C library's environment, which `execvp` passes on.
    static mut environ: *const *const libc::c_char;
}

impl Environ {
    /// tandem's environment with `set` in place of the variables it names (a
    /// `None` value removes one).
    pub fn with(set: &[(&str, Option<String>)]) -> Environ {
        let mut strings = Vec::new();
        let mut add = |name: &[u8], value: &[u8]| {
            let line = [name, b"=", value].concat();
            // A variable holds no NUL; one that did could not be passed on anyway.
            if let Ok(line) = CString::new(line) {
                strings.push(line);
            }
        };
        for (name, value) in std::env::vars_os() {
            if !set
                .iter()
                .any(|(ours, _)| name.as_bytes() == ours.as_bytes())
            {
                add(name.as_bytes(), value.as_bytes());
            }
        }
        for (name, value) in set {
            if let Some(value) = value {
                add(name.as_bytes(), value.as_bytes());
            }
        }
        let mut pointers: Vec<*const libc::c_char> = strings.iter().map(|s| s.as_ptr()).collect();
        pointers.push(std::ptr::null());
        Environ {
            _strings: strings,
            pointers,
        }
    }

    /// Makes it the process's environment: one pointer stored, between fork and
    /// exec (async-signal-safe).
    fn install(&self) {
        // SAFETY: only in the child after fork, which has one thread; the array is
        // null-terminated and lives until exec, which copies it.
        unsafe { environ = self.pointers.as_ptr() };
    }
}

/// Starts `cmd` (the app, or the `--on-exit` program with its environment and
/// stdin) in a new process group; with `job`, the group takes the terminal's
/// foreground when tandem had it, so a Ctrl-C reaches the app once and not
/// tandem. It starts with `signals` (no signal blocked, the stops as tandem's
/// parent left them), and with `env` in place of tandem's environment if given.
pub fn spawn(
    mut cmd: Command,
    job: Option<JobControl>,
    signals: AppSignals,
    env: Option<Environ>,
) -> Result<libc::pid_t, Error> {
    cmd.process_group(0);
    let in_child = move || {
        if let Some(job) = job {
            job.in_child();
        }
        if let Some(env) = &env {
            env.install();
        }
        signals.in_child()
    };
    // SAFETY: the closure runs between fork and exec and only makes
    // async-signal-safe calls (`JobControl::in_child`, `AppSignals::in_child`); it
    // allocates nothing. (A `pre_exec` makes std fork instead of posix_spawn; std
    // itself resets only SIGPIPE and keeps the mask, so the stops need this.)
    unsafe { cmd.pre_exec(in_child) };
    let spawned = cmd.spawn();
    let command = cmd.get_program();
    match spawned {
        // std's Child is dropped without wait: reaping is `reap`'s job, by pid.
        Ok(child) => libc::pid_t::try_from(child.id())
            .map_err(|_| Error::Io("spawning the app", io::Error::other("pid out of range"))),
        Err(e) if e.kind() == ErrorKind::NotFound && !exists(command) => {
            Err(Error::NotFound(command.to_owned()))
        }
        // ENOENT for a file that is there: its `#!` interpreter (or loader) is missing.
        // A shell says "bad interpreter" and exits 126; so does tandem.
        Err(e) if e.kind() == ErrorKind::NotFound => Err(Error::NotExecutable(
            command.to_owned(),
            io::Error::new(e.kind(), "its interpreter or loader was not found"),
        )),
        // exec refuses a directory with EACCES, which alone reads as a permission
        // problem: say what it is.
        Err(e) if e.kind() == ErrorKind::PermissionDenied && is_directory(command) => {
            Err(Error::NotExecutable(
                command.to_owned(),
                io::Error::new(e.kind(), "is a directory"),
            ))
        }
        Err(e) => Err(Error::NotExecutable(command.to_owned(), e)),
    }
}

/// Whether COMMAND names an existing file, looked up as exec does: as a path when it
/// has a `/`, else in each `PATH` directory. Asked only after a failed spawn.
fn exists(command: &OsStr) -> bool {
    if command.as_bytes().contains(&b'/') {
        return Path::new(command).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(command).is_file()))
}

/// Whether COMMAND is a path (it has a `/`) to a directory. Asked only after a
/// failed spawn.
fn is_directory(command: &OsStr) -> bool {
    command.as_bytes().contains(&b'/') && Path::new(command).is_dir()
}
