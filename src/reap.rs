//! Waiting for the app and reaping everything else: as PID 1 or as a child
//! subreaper, every orphan that exits is collected at once, and the app's own
//! status is read without racing the relay (SPEC §4).

use std::io;

use crate::exit::{Error, Outcome};
use crate::signals::Relay;
use crate::terminal::JobControl;

/// Registers tandem as a child subreaper, so orphans of the app are re-parented
/// here and reaped promptly. PID 1 reaps them anyway; registering is harmless there,
/// and asking for the pid first would cost every other tandem a system call.
pub fn become_subreaper() {
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER, 1) takes plain integers.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        let err = io::Error::last_os_error();
        if std::process::id() != 1 {
            log::warn!("could not become a child subreaper ({err}): orphans of the app go to init");
        }
    }
}

/// Blocks until the app (`pid`) ends, reaping every other child that exits
/// meanwhile. With `job`, a terminal stop of the app stops tandem too, so the
/// shell gets its prompt back. No timers: the thread sleeps in `waitid`.
///
/// Against pid reuse: the app's exit is only peeked at (`WNOWAIT`) until the relay
/// has let go of its pid (`Relay::app_gone`); only then is it reaped.
pub fn wait_for(
    pid: libc::pid_t,
    relay: &Relay,
    job: Option<JobControl>,
) -> Result<Outcome, Error> {
    let mut flags = libc::WEXITED | libc::WNOWAIT;
    if job.is_some() {
        flags |= libc::WSTOPPED;
    }
    loop {
        // WNOWAIT peeks: the app's pid must stay unreaped until the relay lets go of it.
        // SAFETY: siginfo_t is plain data; zeroed is a valid initial value for waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: info is a valid, writable siginfo_t.
        if unsafe { libc::waitid(libc::P_ALL, 0, &mut info, flags) } != 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(Error::Io("waiting for the app", err));
        }
        // SAFETY: waitid filled info for a child event, so the pid field is set.
        let who = unsafe { info.si_pid() };
        // SAFETY: as above, for the status field.
        let status = unsafe { info.si_status() };
        if info.si_code == libc::CLD_STOPPED || info.si_code == libc::CLD_TRAPPED {
            consume_stop(who);
            if let Some(job) = job.filter(|_| who == pid) {
                job.pass_on_stop(pid, status);
            }
            continue;
        }
        if who == pid {
            relay.app_gone();
            let status = reap(pid)?;
            reap_orphans();
            return Ok(Outcome::from_wait_status(status));
        }
        let _ = reap(who);
    }
}

fn consume_stop(who: libc::pid_t) {
    let mut status = 0;
    // SAFETY: status is a valid out-pointer; WNOHANG never blocks.
    unsafe { libc::waitpid(who, &mut status, libc::WUNTRACED | libc::WNOHANG) };
}

fn reap(who: libc::pid_t) -> Result<i32, Error> {
    let mut status = 0;
    loop {
        // SAFETY: status is a valid out-pointer.
        if unsafe { libc::waitpid(who, &mut status, 0) } >= 0 {
            return Ok(status);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(Error::Io("reaping a child", err));
        }
    }
}

/// Collects every zombie already waiting, without blocking.
pub fn reap_orphans() {
    let mut status = 0;
    // SAFETY: status is a valid out-pointer; WNOHANG never blocks.
    while unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) } > 0 {}
}
