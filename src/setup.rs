//! Start-up, after the signal handlers and before any phase: the command line
//! (tandem's, or linkerd-await's translated), the actions that end tandem at once
//! (`--help`, `--version`, `--install-to`, a missing COMMAND), the log, and the
//! configuration with its start-up warnings (SPEC §1, §2, §8).

use std::ffi::OsString;
use std::process::ExitCode;

use crate::cli::{self, Task, linkerd_await};
use crate::config::{self, Config};
use crate::termination_message::Target;
use crate::{act, exit, log, quit};

/// The environment as `config` reads it.
fn env(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// Where a failure goes before the command line is read: only the variable counts.
pub fn early_termination_log() -> Target {
    config::termination_log_hint(None, &env)
}

/// Reads the process's arguments and environment into the mode to run and its
/// configuration. `Err` is how tandem exits instead: an action was carried out,
/// or a failure was logged and written to the termination log (`early` until the
/// command line is read).
// Kept out of `main`: inlined there, it costs the static binary ~500 bytes.
#[inline(never)]
pub fn configure(
    mut args: impl Iterator<Item = OsString>,
    early: &Target,
) -> Result<(Task, Config), ExitCode> {
    let cli = if linkerd_await::invoked_as(args.next().as_deref()) {
        linkerd_await::parse(args)
    } else {
        cli::parse(args)
    };
    let mut cli = cli.map_err(|e| exit::fail(&e, early))?;
    let term = config::termination_log_hint(Some(&cli), &env);
    // Taken out so the mode is owned; `config` reads only the option values.
    let mode = match std::mem::replace(&mut cli.task, Task::NoCommand) {
        mode @ (Task::Run(..) | Task::WaitOnly | Task::QuitOnly) => mode,
        task => return Err(act::act(&task, &term)),
    };
    // Until the configuration is read, errors are logged in the format asked for.
    log::init(log::Level::Info, config::log_format_hint(&cli, &env));
    let cfg = config::build(&cli, &env).map_err(|e| exit::fail(&e, &term))?;
    log::init(cfg.log_level, cfg.log_format);
    announce(&cfg);
    Ok((mode, cfg))
}

/// The start-up lines: settings with no effect, and linkerd-await's switch.
fn announce(cfg: &Config) {
    for warning in &cfg.warnings {
        log::event(log::Level::Warn, format_args!("{warning}"), &[]);
    }
    if let Some(var) = cfg.disabled_by {
        let why = format_args!("{var} is set: waiting for nothing and stopping nothing");
        log::event(log::Level::Info, why, &[]);
    }
    quit::warn_about_ignored(&cfg.quit);
}
