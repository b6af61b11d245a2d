//! tandem: wait for the sidecars, run the app, quit the sidecars, exit with the
//! app's status. `main` is the story; each step lives in its own module
//! (ARCHITECTURE.md).

use std::ffi::{OsStr, OsString};
use std::process::ExitCode;

use tandem::cli::{self, Mode, Task};
use tandem::config::{self, Config, ForwardTo};
use tandem::event::{self, Channel};
use tandem::outcome::Outcome;
use tandem::signals::{self, Relay};
use tandem::terminal::JobControl;
use tandem::{act, child, linkerd_await, log, quit, ready, reap, termination};

fn main() -> ExitCode {
    match lifecycle() {
        Ok(outcome) => ExitCode::from(outcome.status()),
        Err(done) => done,
    }
}

/// Set up, then run the mode asked for. `Err` means tandem is done before any
/// mode runs: an action (`--help`, `--version`, `--install-to`) or a failure.
fn lifecycle() -> Result<Outcome, ExitCode> {
    // Handlers first, before any thread or child exists (signal-hook's rule).
    let env = |name: &str| std::env::var_os(name);
    let term = config::termination_log_hint(None, &env);
    let signals = signals::register().map_err(|e| act::fail(&e, &term))?;
    let mut args = std::env::args_os();
    let cli = if linkerd_await::invoked_as(args.next().as_deref()) {
        linkerd_await::parse(args)
    } else {
        cli::parse(args)
    };
    let cli = cli.map_err(|e| act::fail(&e, &term))?;
    let term = config::termination_log_hint(Some(&cli), &env);
    let mode = match &cli.task {
        Task::Mode(mode) => mode,
        Task::Act(action) => return Err(act::act(action, &term)),
        Task::Missing => return Err(act::no_command(&term)),
    };
    log::init(log::Level::Info, config::log_format_hint(&cli, &env));
    let cfg = config::build(&cli, &env).map_err(|e| act::fail(&e, &term))?;
    log::init(cfg.log_level, cfg.log_format);
    for warning in &cfg.warnings {
        log::event(log::Level::Warn, format_args!("{warning}"), &[]);
    }
    if let Some(var) = cfg.disabled_by {
        let why = format_args!("{var} is set: waiting for nothing and stopping nothing");
        log::event(log::Level::Info, why, &[]);
    }
    quit::warn_about_ignored(&cfg.quit);

    let channel = event::channel();
    // The relay thread is left to die with the process: closing it would unregister
    // every handler, which costs signal-hook more than all of tandem's start-up.
    let relay = Relay::start(signals, channel.sender.clone()).map_err(|e| act::fail(&e, &term))?;
    let (outcome, quit_failed) = match mode {
        Mode::WaitOnly => match ready::wait(&cfg.ready, &channel, false) {
            Ok(()) => (Outcome::Exited(0), None),
            Err(end) => (end, None),
        },
        Mode::QuitOnly => (
            Outcome::Exited(0),
            quit::after(&cfg.quit, &Outcome::Exited(0)),
        ),
        Mode::Run(command, args) => run(&cfg, &relay, &channel, command, args),
    };
    // Why tandem ended the run, for `kubectl describe pod` (SPEC §7).
    if let Some(why) = termination::message(termination::reason(&outcome), quit_failed) {
        termination::write(&cfg.termination_log, &why);
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
