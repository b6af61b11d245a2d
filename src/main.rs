//! tandem: wait for the sidecars, run the app, quit the sidecars, exit with the app's
//! status. `main` tells it step by step; each step is the module it names.

use std::process::ExitCode;

use tandem::cli::{self, Cli, Task, help};
use tandem::config;
use tandem::event::{self, Channel};
use tandem::exit::{self, Error, Outcome};
use tandem::settings::Config;
use tandem::signals::{self, Relay};
use tandem::{child, install, logger, on_exit, quit, ready, reap};

/// Run by the C runtime (glibc and musl alike) before Rust's runtime starts.
#[used]
#[unsafe(link_section = ".init_array")]
static BEFORE_RUNTIME: extern "C" fn() = signals::before_runtime;

fn main() -> ExitCode {
    lifecycle().unwrap_or_else(|failed| failed)
}

/// Start-up, then the task the command line asks for (SPEC §1). `Err` is a
/// failure that ended tandem before the task did, already logged and told.
fn lifecycle() -> Result<ExitCode, ExitCode> {
    logger::init();
    let cli = cli::read(std::env::args_os());
    // Where a failure is told (SPEC §7), until the configuration says for sure.
    config::tell_failures_early(cli.as_ref().ok());
    let cli = cli.map_err(exit::fail)?;
    match &cli.task {
        // Done at once: nothing else is read, contacted or started.
        Task::Help => Ok(help::print(&help::help())),
        Task::Version => Ok(help::print(&help::version())),
        Task::InstallTo(dir) => Ok(install::install_to(dir)),
        Task::NoCommand => Ok(cli::no_command()),
        Task::WaitOnly => {
            let Started(cfg, _relay, channel) = start(&cli).map_err(exit::fail)?;
            let end = ready::wait_only(&cfg.ready, &channel);
            Ok(exit::finish(&end, None))
        }
        Task::QuitOnly => {
            let Started(cfg, _relay, channel) = start(&cli).map_err(exit::fail)?;
            let stopping = signals::got_sigterm();
            let quit_failed = quit::after(&cfg.quit, &Outcome::Exited(0), &channel, stopping);
            Ok(exit::finish(&Outcome::Exited(0), quit_failed))
        }
        // Wait → run → --on-exit → quit → the app's status (SPEC §3–§5, §11).
        Task::Run(cmd, args) => {
            let Started(cfg, relay, channel) = start(&cli).map_err(exit::fail)?;
            reap::become_subreaper();
            let outcome = match ready::wait(&cfg.ready, &channel) {
                Err(end) => end,
                Ok(()) => child::run(cmd, args, &relay, &channel.events, cfg.forward_to),
            };
            outcome.log(cfg.has_sidecars());
            on_exit::run(&cfg, &outcome, &relay, &channel);
            let stopping = signals::got_sigterm();
            let quit_failed = quit::after(&cfg.quit, &outcome, &channel, stopping);
            Ok(exit::finish(&outcome, quit_failed))
        }
    }
}

/// What every task but the answers needs: the configuration, the relay, its channel.
struct Started(Config, Relay, Channel);

/// Reads the configuration (the log and the termination message set up by it)
/// and starts the relay (SPEC §2, §4).
fn start(cli: &Cli) -> Result<Started, Error> {
    // Handlers first, before any thread or child exists: the mask and dispositions
    // set there are what every later thread and the app inherit.
    let signals = signals::register()?;
    let cfg = config::read(cli)?;
    quit::prepare(&cfg.quit, cli.task.sends_quits())?;
    let channel = event::channel();
    // The relay thread lives as long as the process: a handler may write until the end.
    let relay = Relay::start(signals, channel.sender.clone())?;
    Ok(Started(cfg, relay, channel))
}
