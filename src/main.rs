//! tandem: wait for the sidecars, run the app, quit the sidecars, exit with the
//! app's status. `main` is the story; each step lives in its own module.

#![deny(clippy::undocumented_unsafe_blocks)]

mod child;
mod cli;
mod config;
mod error;
mod http;
mod install;
mod log;
mod mesh;
mod procfs;
mod quit;
mod ready;
mod reap;
mod resolve;
mod signals;
mod values;

use std::io::Write;
use std::process::ExitCode;
use std::sync::mpsc;

use cli::Mode;
use config::{Config, ForwardTo};
use error::{EX_UNAVAILABLE, EX_USAGE, Error};
use ready::Readiness;
use signals::Relay;

fn main() -> ExitCode {
    // Handlers first, before any thread or child exists (signal-hook's rule).
    let signals = match signals::register() {
        Ok(s) => s,
        Err(e) => return fail(&Error::Io("installing signal handlers", e)),
    };
    let cli = match cli::parse(std::env::args_os().skip(1)) {
        Ok(cli) => cli,
        Err(e) => return fail(&e),
    };
    let mode = match cli.mode {
        Some(Mode::Help) => return print_stdout(cli::HELP),
        Some(Mode::Version) => return print_stdout(&cli::version()),
        Some(Mode::InstallTo(ref dir)) => {
            return match install::install_to(dir) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(&e),
            };
        }
        Some(ref mode) => mode,
        None => {
            log::error!("no COMMAND given (try --help)");
            let _ = std::io::stderr().write_all(cli::HELP.as_bytes());
            return ExitCode::from(EX_USAGE);
        }
    };
    let env = |name: &str| std::env::var_os(name);
    log::init(log::Level::Info, config::log_format_hint(&cli, &env));
    let cfg = match config::build(&cli, &env) {
        Ok(cfg) => cfg,
        Err(e) => return fail(&e),
    };
    log::init(cfg.log_level, cfg.log_format);
    warn_about_ignored(&cfg);

    let (sender, events) = mpsc::channel();
    let relay = match Relay::start(signals, sender.clone()) {
        Ok(relay) => relay,
        Err(e) => return fail(&Error::Io("starting the signal relay", e)),
    };
    let code = match mode {
        Mode::WaitOnly => wait_only(&cfg, &events, &sender),
        Mode::QuitOnly => {
            quit::send(&quit::plan(&cfg.quit, false), cfg.quit.timeout);
            0
        }
        Mode::Run(command, args) => run(&cfg, &relay, command, args, &events, &sender),
        Mode::Help | Mode::Version | Mode::InstallTo(_) => EX_USAGE,
    };
    // The relay thread is left to die with the process: closing it would unregister
    // every handler, which costs signal-hook more than all of tandem's start-up.
    ExitCode::from(code)
}

/// Wait → run → quit → the app's status (SPEC §3–§5).
fn run(
    cfg: &Config,
    relay: &Relay,
    command: &std::ffi::OsStr,
    args: &[std::ffi::OsString],
    events: &mpsc::Receiver<signals::Event>,
    sender: &mpsc::Sender<signals::Event>,
) -> u8 {
    reap::become_subreaper();
    match wait(cfg, events, sender) {
        Readiness::Ready | Readiness::TimedOut => {}
        Readiness::Interrupted(sig) => {
            quit::send(&quit::plan(&cfg.quit, true), cfg.quit.timeout);
            return (128 + sig) as u8;
        }
        Readiness::Failed => {
            log::error!(
                "sidecars not ready within --fail-timeout/QUIT_WITHOUT_ENVOY_TIMEOUT: not starting the app"
            );
            quit::send(&quit::plan(&cfg.quit, true), cfg.quit.timeout);
            return EX_UNAVAILABLE;
        }
    }
    // On its controlling terminal tandem does job control for the app even when
    // started in the background; it hands over the foreground only when it has it.
    let tty = child::on_terminal().then(child::ignore_tty_stops);
    let foreground = tty.is_some() && child::owns_terminal();
    let group = cfg.forward_to == ForwardTo::Group;
    let started = relay.run_child(group, tty.is_some(), events, || {
        child::spawn(command, args, tty, foreground)
    });
    let code = match started.and_then(|pid| reap::wait_for(pid, relay, tty.is_some())) {
        Ok(end) => {
            let code = end.code();
            let fields = [("code", log::Field::Int(i64::from(code)))];
            match end {
                child::ChildEnd::Exited(_) => log::event(
                    log::Level::Info,
                    format_args!("the app exited with {code}"),
                    &fields,
                ),
                child::ChildEnd::Signaled(sig) => log::event(
                    log::Level::Info,
                    format_args!("the app was killed by signal {sig}: exiting with {code}"),
                    &fields,
                ),
            }
            code
        }
        Err(e) => {
            log::error!("{e}");
            e.exit_code()
        }
    };
    quit::send(&quit::plan(&cfg.quit, code != 0), cfg.quit.timeout);
    code
}

/// `--wait-only`: 0 when ready or after `--wait-timeout`, 69 after `--fail-timeout` (SPEC §1).
fn wait_only(
    cfg: &Config,
    events: &mpsc::Receiver<signals::Event>,
    sender: &mpsc::Sender<signals::Event>,
) -> u8 {
    match wait(cfg, events, sender) {
        Readiness::Ready | Readiness::TimedOut => 0,
        Readiness::Failed => {
            log::error!("sidecars not ready within --fail-timeout/QUIT_WITHOUT_ENVOY_TIMEOUT");
            EX_UNAVAILABLE
        }
        Readiness::Interrupted(sig) => (128 + sig) as u8,
    }
}

fn wait(
    cfg: &Config,
    events: &mpsc::Receiver<signals::Event>,
    sender: &mpsc::Sender<signals::Event>,
) -> Readiness {
    if cfg.checks.is_empty() {
        return Readiness::Ready;
    }
    if !cfg.wait {
        log::info!("--no-wait/START_WITHOUT_ENVOY: not waiting for the sidecars");
        return Readiness::Ready;
    }
    let outcome = ready::wait_until_ready(cfg, events, sender);
    if outcome == Readiness::TimedOut {
        log::warning!(
            "sidecars not ready within --wait-timeout/WAIT_FOR_ENVOY_TIMEOUT: starting the app anyway"
        );
    }
    outcome
}

/// Settings that are valid but have no effect in this combination (as in scuttle).
fn warn_about_ignored(cfg: &Config) {
    let q = &cfg.quit;
    if !q.has_mesh && (q.istio_quit.is_some() || q.envoy_quit.is_some()) {
        log::warning!(
            "ISTIO_QUIT_API/ENVOY_KILL_API take effect only with ENVOY_ADMIN_API or --mesh istio|envoy"
        );
    }
}

fn print_stdout(text: &str) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(error::EX_SOFTWARE),
    }
}

fn fail(e: &Error) -> ExitCode {
    log::error!("{e}");
    ExitCode::from(e.exit_code())
}
