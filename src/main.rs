//! tandem: wait for the sidecars, run the app, quit the sidecars, exit with the app's
//! status. `main` tells it step by step; each step is the module it names.

use std::process::ExitCode;

use tandem::cli::{self, Cli, Task, help};
use tandem::config::{self, Config};
use tandem::event::{self, Channel};
use tandem::exit::{self, Outcome};
use tandem::signals::{self, Relay};
use tandem::termination_message::Target;
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
    // Where a failure is told (SPEC §7): the variable's until the options are read.
    let mut told = config::termination_log_hint(None, &config::env);
    let cli = cli::read(std::env::args_os()).map_err(|e| exit::fail(&e, &told))?;
    told = config::termination_log_hint(Some(&cli), &config::env);
    match &cli.task {
        // Done at once: nothing else is read, contacted or started.
        Task::Help => Ok(help::print(&help::help())),
        Task::Version => Ok(help::print(&help::version())),
        Task::InstallTo(dir) => Ok(install::install_to(dir, &told)),
        Task::NoCommand => Ok(cli::no_command(&told)),
        Task::WaitOnly => {
            let Started(cfg, _relay, channel) = start(&cli, &mut told)?;
            let end = ready::wait_only(&cfg.ready, &channel);
            Ok(exit::finish(&end, None, &told))
        }
        Task::QuitOnly => {
            let Started(cfg, _relay, channel) = start(&cli, &mut told)?;
            let quit_failed = quit::after(&cfg.quit, &Outcome::Exited(0), &channel);
            Ok(exit::finish(&Outcome::Exited(0), quit_failed, &told))
        }
        // Wait → run → --on-exit → quit → the app's status (SPEC §3–§5, §11).
        Task::Run(cmd, args) => {
            let Started(cfg, relay, channel) = start(&cli, &mut told)?;
            reap::become_subreaper();
            let outcome = match ready::wait(&cfg.ready, &channel, true) {
                Err(end) => end,
                Ok(()) => child::run(cmd, args, &relay, &channel.events, cfg.forward_to),
            };
            outcome.log(cfg.has_sidecars());
            on_exit::run(&cfg, &outcome, &relay, &channel);
            let quit_failed = quit::after(&cfg.quit, &outcome, &channel);
            Ok(exit::finish(&outcome, quit_failed, &told))
        }
    }
}

/// What every task but the answers needs: the configuration, the relay, its channel.
struct Started(Config, Relay, Channel);

/// Reads the configuration (the log set up by it, failures told where it says from
/// now on) and starts the relay (SPEC §2, §4).
fn start(cli: &Cli, told: &mut Target) -> Result<Started, ExitCode> {
    // Handlers first, before any thread or child exists: the mask and dispositions
    // set there are what every later thread and the app inherit.
    let signals = signals::register().map_err(|e| exit::fail(&e, told))?;
    let cfg = config::read(cli).map_err(|e| exit::fail(&e, told))?;
    *told = cfg.termination_log.clone();
    quit::prepare(&cfg.quit, &cli.task).map_err(|e| exit::fail(&e, told))?;
    let channel = event::channel();
    // The relay thread lives as long as the process: a handler may write until the end.
    let relay = Relay::start(signals, channel.sender.clone()).map_err(|e| exit::fail(&e, told))?;
    Ok(Started(cfg, relay, channel))
}
