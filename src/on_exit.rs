//! The `--on-exit` program (SPEC §11): run once the app has ended (or the wait
//! ended without it), before the quit requests, so the network is still up for
//! an upload. It is started like the app (`child`), signals reach it through the
//! relay (`signals`), it is waited for and everything else reaped as the app was
//! (`reap`), and `--on-exit-timeout` is kept with `deadline`. Its outcome is
//! logged and changes nothing else: not the exit status, not the termination
//! message, not which sidecars are told to quit.

use std::io;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::child::{self, Environ};
use crate::deadline;
use crate::event::{Channel, Event};
use crate::exit::{Error, Outcome};
use crate::reap;
use crate::settings::{Config, ForwardTo, OnExit};
use crate::signals::{self, Relay};
use crate::value::duration;

/// How long a program that got SIGTERM at its timeout has before SIGKILL.
const KILL_AFTER: Duration = Duration::from_secs(2);

/// Runs the configured `--on-exit` program, if any, for the run that ended with
/// `outcome`, and waits for it; returns when it is gone. Signals that reached
/// `channel` since the app ended go to it, as later ones do while it runs.
pub fn run(cfg: &Config, outcome: &Outcome, relay: &Relay, channel: &Channel) {
    let Some(hook) = &cfg.on_exit else {
        return;
    };
    let group = cfg.forward_to == ForwardTo::Group;
    let spawn = || {
        let env = Environ::with(&[
            ("TANDEM_EXIT_CODE", Some(outcome.status().to_string())),
            // None: not one inherited from whatever started tandem.
            ("TANDEM_EXIT_SIGNAL", outcome.signal().map(signals::name)),
        ]);
        child::spawn(command(hook), None, relay.app_signals(), Some(env))
    };
    log::debug!("running the --on-exit program {:?}", hook.words);
    let ended = match relay.spawn_then_relay(group, None, &channel.events, spawn) {
        Ok(pid) => wait(pid, hook.timeout, relay, channel),
        Err(e) => Ended::NotStarted(e),
    };
    ended.log();
}

/// The program's command: its words, stdin from `/dev/null`, stdout and stderr
/// tandem's (its environment, tandem's with the exit status and its signal, is
/// `child::spawn`'s to give).
fn command(hook: &OnExit) -> Command {
    let (program, args) = match hook.words.split_first() {
        Some((program, args)) => (program.as_str(), args),
        // `config` never gives an empty command; an empty name is simply not found.
        None => ("", &[][..]),
    };
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(Stdio::null());
    cmd
}

/// How the program ended.
enum Ended {
    /// It could not be started (not found, not executable).
    NotStarted(Error),
    /// It ended by itself (`timed_out: None`) or after its timeout's signals.
    Reaped {
        /// Its exit, as the app's would be.
        outcome: Outcome,
        /// The timeout, when it had to be signalled.
        timed_out: Option<Duration>,
    },
    /// Waiting for it failed (an OS error); tandem goes on.
    Lost(Error),
}

/// Waits for the program (`pid`), reaping every other child meanwhile; at
/// `timeout`, SIGTERM to its group, and SIGKILL `KILL_AFTER` later. Without a
/// timeout this thread waits itself; with one, a thread of its own waits and
/// says so on `channel`, which this one reads until each deadline.
fn wait(pid: libc::pid_t, timeout: Option<Duration>, relay: &Relay, channel: &Channel) -> Ended {
    let ended = |waited: Result<Outcome, Error>, timed_out| match waited {
        Ok(outcome) => Ended::Reaped { outcome, timed_out },
        Err(e) => Ended::Lost(e),
    };
    let Some(timeout) = timeout else {
        return ended(reap::wait_for(pid, relay, None), None);
    };
    let (waiter, wake) = (relay.clone(), channel.sender.clone());
    let spawned = thread::Builder::new()
        .name("on-exit".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let waited = reap::wait_for(pid, &waiter, None);
            let _ = wake.send(Event::OnExitEnded);
            waited
        });
    let waiting = match spawned {
        Ok(waiting) => waiting,
        Err(e) => {
            log::warn!("--on-exit: cannot keep its timeout ({e}): waiting as long as it takes");
            return ended(reap::wait_for(pid, relay, None), None);
        }
    };
    let limit = duration::format(timeout);
    let steps = [
        (
            timeout,
            format!("after {limit} (--on-exit-timeout)"),
            libc::SIGTERM,
        ),
        (KILL_AFTER, "2s after SIGTERM".to_owned(), libc::SIGKILL),
    ];
    let mut timed_out = None;
    for (after, when, sig) in steps {
        if ended_by(channel, Instant::now() + after) {
            break;
        }
        let name = signals::name(sig);
        log::warn!(
            "the --on-exit program is still running {when}: sending {name} to its process group"
        );
        relay.signal_group(sig);
        timed_out = Some(timeout);
    }
    // Ended, or SIGKILLed: the thread returns once the kernel has it reaped.
    match waiting.join() {
        Ok(waited) => ended(waited, timed_out),
        Err(_) => Ended::Lost(Error::Io(
            "waiting for the --on-exit program",
            io::Error::other("its waiting thread failed"),
        )),
    }
}

/// Whether the waiting thread said the program ended before `deadline`. A
/// signal read meanwhile (after the program was reaped the relay sends them
/// here) is put back for whoever reads next (§9's wait).
fn ended_by(channel: &Channel, deadline: Instant) -> bool {
    let mut signals = Vec::new();
    let ended = loop {
        match deadline::recv_by(&channel.events, Some(deadline)) {
            Ok(Event::OnExitEnded) => break true,
            Ok(Event::Signal(sig)) => signals.push(sig),
            Ok(_) => {}
            Err(_) => break false,
        }
    };
    for sig in signals {
        let _ = channel.sender.send(Event::Signal(sig));
    }
    ended
}

impl Ended {
    /// One line: info when it exited 0 by itself, a warning otherwise.
    fn log(&self) {
        match self {
            Ended::NotStarted(e) => log::warn!("--on-exit: {e}"),
            Ended::Lost(e) => log::warn!("--on-exit: {e}"),
            Ended::Reaped {
                outcome: Outcome::Exited(0),
                timed_out: None,
            } => log::info!("the --on-exit program exited with 0"),
            Ended::Reaped { outcome, timed_out } => {
                let how = match outcome.signal() {
                    Some(sig) => format!("was killed by {}", signals::name(sig)),
                    None => format!("exited with {}", outcome.status()),
                };
                let after = match timed_out {
                    Some(limit) => format!(" after its timeout ({})", duration::format(*limit)),
                    None => String::new(),
                };
                log::warn!("the --on-exit program {how}{after}");
            }
        }
    }
}
