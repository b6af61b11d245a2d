//! tandem: wait for the sidecars, run the app, quit the sidecars, exit with the
//! app's status. `main` is the story; each step lives in its own module.

use std::ffi::{OsStr, OsString};
use std::process::ExitCode;
use std::sync::mpsc;

use tandem::cli::{self, Mode, Task};
use tandem::config::{self, Config, ForwardTo};
use tandem::error::Error;
use tandem::event::{Events, Sender};
use tandem::outcome::Outcome;
use tandem::signals::{self, Relay};
use tandem::terminal::JobControl;
use tandem::{act, child, log, quit, ready, reap};

fn main() -> ExitCode {
    // Handlers first, before any thread or child exists (signal-hook's rule).
    let signals = match signals::register() {
        Ok(s) => s,
        Err(e) => return act::fail(&Error::Io("installing signal handlers", e)),
    };
    let cli = match cli::parse(std::env::args_os().skip(1)) {
        Ok(cli) => cli,
        Err(e) => return act::fail(&e),
    };
    let mode = match &cli.task {
        Task::Mode(mode) => mode,
        Task::Act(action) => return act::act(action),
        Task::Missing => return act::no_command(),
    };
    let env = |name: &str| std::env::var_os(name);
    log::init(log::Level::Info, config::log_format_hint(&cli, &env));
    let cfg = match config::build(&cli, &env) {
        Ok(cfg) => cfg,
        Err(e) => return act::fail(&e),
    };
    log::init(cfg.log_level, cfg.log_format);
    quit::warn_about_ignored(&cfg.quit);

    let (sender, events) = mpsc::channel();
    let relay = match Relay::start(signals, sender.clone()) {
        Ok(relay) => relay,
        Err(e) => return act::fail(&Error::Io("starting the signal relay", e)),
    };
    let outcome = match mode {
        Mode::WaitOnly => match ready::wait(&cfg.ready, &events, &sender, false) {
            Ok(()) => Outcome::Exited(0),
            Err(end) => end,
        },
        Mode::QuitOnly => {
            quit::after(&cfg.quit, &Outcome::Exited(0));
            Outcome::Exited(0)
        }
        Mode::Run(command, args) => run(&cfg, &relay, command, args, &events, &sender),
    };
    // The relay thread is left to die with the process: closing it would unregister
    // every handler, which costs signal-hook more than all of tandem's start-up.
    ExitCode::from(outcome.status())
}

/// Wait → run → quit → the app's status (SPEC §3–§5).
fn run(
    cfg: &Config,
    relay: &Relay,
    command: &OsStr,
    args: &[OsString],
    events: &Events,
    sender: &Sender,
) -> Outcome {
    reap::become_subreaper();
    let outcome = match ready::wait(&cfg.ready, events, sender, true) {
        Err(end) => end,
        Ok(()) => {
            let job = JobControl::take();
            let group = cfg.forward_to == ForwardTo::Group;
            let spawn = || child::spawn(command, args, job);
            let started = relay.spawn_then_relay(group, job, events, spawn);
            let ended = started.and_then(|pid| reap::wait_for(pid, relay, job));
            ended.unwrap_or_else(Outcome::Failed)
        }
    };
    outcome.log();
    quit::after(&cfg.quit, &outcome);
    outcome
}
