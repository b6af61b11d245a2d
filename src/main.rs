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
use tandem::{act, child, log, quit, ready, reap};

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
    let signals = signals::register().map_err(|e| act::fail(&e))?;
    let cli = cli::parse(std::env::args_os().skip(1)).map_err(|e| act::fail(&e))?;
    let mode = match &cli.task {
        Task::Mode(mode) => mode,
        Task::Act(action) => return Err(act::act(action)),
        Task::Missing => return Err(act::no_command()),
    };
    let env = |name: &str| std::env::var_os(name);
    log::init(log::Level::Info, config::log_format_hint(&cli, &env));
    let cfg = config::build(&cli, &env).map_err(|e| act::fail(&e))?;
    log::init(cfg.log_level, cfg.log_format);
    quit::warn_about_ignored(&cfg.quit);

    let channel = event::channel();
    // The relay thread is left to die with the process: closing it would unregister
    // every handler, which costs signal-hook more than all of tandem's start-up.
    let relay = Relay::start(signals, channel.sender.clone()).map_err(|e| act::fail(&e))?;
    Ok(match mode {
        Mode::WaitOnly => match ready::wait(&cfg.ready, &channel, false) {
            Ok(()) => Outcome::Exited(0),
            Err(end) => end,
        },
        Mode::QuitOnly => {
            quit::after(&cfg.quit, &Outcome::Exited(0));
            Outcome::Exited(0)
        }
        Mode::Run(command, args) => run(&cfg, &relay, &channel, command, args),
    })
}

/// Wait → run → quit → the app's status (SPEC §3–§5).
fn run(cfg: &Config, relay: &Relay, channel: &Channel, cmd: &OsStr, args: &[OsString]) -> Outcome {
    reap::become_subreaper();
    let outcome = match ready::wait(&cfg.ready, channel, true) {
        Err(end) => end,
        Ok(()) => {
            // Only now: tandem leaves the terminal alone while it waits.
            let job = JobControl::take();
            let group = cfg.forward_to == ForwardTo::Group;
            let spawn = || child::spawn(cmd, args, job);
            let started = relay.spawn_then_relay(group, job, &channel.events, spawn);
            let ended = started.and_then(|pid| reap::wait_for(pid, relay, job));
            ended.unwrap_or_else(Outcome::Failed)
        }
    };
    outcome.log();
    quit::after(&cfg.quit, &outcome);
    outcome
}
