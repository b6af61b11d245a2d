//! tandem: wait for the sidecars, run the app, quit the sidecars, exit with the
//! app's status. `main` is the story; each step lives in its own module
//! (ARCHITECTURE.md).

use std::ffi::{OsStr, OsString};
use std::process::ExitCode;

use tandem::cli::Task;
use tandem::config::{Config, ForwardTo};
use tandem::event::{self, Channel};
use tandem::exit::{self, Outcome};
use tandem::signals::{self, Relay};
use tandem::terminal::JobControl;
use tandem::{child, quit, ready, reap, setup, termination_message};

/// Run by the C runtime (glibc and musl alike) before Rust's runtime starts.
#[used]
#[unsafe(link_section = ".init_array")]
static BEFORE_RUNTIME: extern "C" fn() = signals::before_runtime;

fn main() -> ExitCode {
    match lifecycle() {
        Ok(outcome) => ExitCode::from(outcome.status()),
        Err(done) => done,
    }
}

/// Set up, then run the mode asked for. `Err` means tandem is done before any
/// mode runs: an action (`--help`, `--version`, `--install-to`) or a failure.
fn lifecycle() -> Result<Outcome, ExitCode> {
    // Handlers first, before any thread or child exists: the mask and dispositions
    // set there are what every later thread and the app inherit.
    let early = setup::early_termination_log();
    let signals = signals::register().map_err(|e| exit::fail(&e, &early))?;
    let (mode, cfg) = setup::configure(std::env::args_os(), &early)?;
    let channel = event::channel();
    // The relay thread is left to die with the process: a handler may write to its
    // pipe until the very end, and stopping it would only cost system calls.
    let relay = Relay::start(signals, channel.sender.clone())
        .map_err(|e| exit::fail(&e, &cfg.termination_log))?;
    let (outcome, quit_failed) = match &mode {
        Task::WaitOnly => {
            let waited = ready::wait(&cfg.ready, &channel, false);
            (waited.err().unwrap_or(Outcome::Exited(0)), None)
        }
        Task::QuitOnly => {
            let done = Outcome::Exited(0);
            let quit_failed = quit::after(&cfg.quit, &done);
            (done, quit_failed)
        }
        Task::Run(command, args) => run(&cfg, &relay, &channel, command, args),
        // Done by `setup::configure`.
        Task::InstallTo(_) | Task::Help | Task::Version | Task::NoCommand => {
            return Ok(Outcome::Exited(0));
        }
    };
    // Why tandem ended the run, for `kubectl describe pod` (SPEC §7).
    if let Some(why) = termination_message::message(outcome.reason(), quit_failed) {
        termination_message::write(&cfg.termination_log, &why);
    }
    Ok(outcome)
}

/// Wait → run → quit → the app's status (SPEC §3–§5), and the failed quit, if any.
fn run(
    cfg: &Config,
    relay: &Relay,
    channel: &Channel,
    cmd: &OsStr,
    args: &[OsString],
) -> (Outcome, Option<String>) {
    reap::become_subreaper();
    let outcome = match ready::wait(&cfg.ready, channel, true) {
        Err(end) => end,
        Ok(()) => {
            // Only now: tandem leaves the terminal alone while it waits.
            let job = JobControl::take();
            let group = cfg.forward_to == ForwardTo::Group;
            let spawn = || child::spawn(cmd, args, job, relay.app_signals());
            let started = relay.spawn_then_relay(group, job, &channel.events, spawn);
            let ended = started.and_then(|pid| reap::wait_for(pid, relay, job));
            ended.unwrap_or_else(Outcome::Failed)
        }
    };
    outcome.log(cfg.has_sidecars());
    let quit_failed = quit::after(&cfg.quit, &outcome);
    (outcome, quit_failed)
}
