//! What tandem does before (and instead of) reading its configuration: `--help`,
//! `--version`, `--install-to`, the missing-COMMAND error, and any failure that
//! ends tandem before a run (SPEC §1, §7).

use std::io::Write;
use std::process::ExitCode;

use crate::cli::Task;
use crate::cli::help;
use crate::exit::{EX_SOFTWARE, EX_USAGE};
use crate::termination_message::{self, Target};
use crate::{exit, install, log};

/// Carries out `action` and says how tandem exits; a failed install is written
/// to the termination log `term` (SPEC §7).
// Not inlined into `setup::configure`: its ~9 KiB frame (the install's copy
// buffer) would then be on the stack of every run, two pages of peak RSS more.
#[inline(never)]
pub fn act(task: &Task, term: &Target) -> ExitCode {
    match task {
        Task::Help => print_stdout(&help::help()),
        Task::Version => print_stdout(&help::version()),
        Task::InstallTo(dir) => match install::install_to(dir) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => exit::fail(&e, term),
        },
        Task::NoCommand => no_command(term),
        // Configured and run by `main`.
        Task::Run(..) | Task::WaitOnly | Task::QuitOnly => ExitCode::SUCCESS,
    }
}

/// Neither a COMMAND nor a task option: the error, then the usage on stderr.
pub fn no_command(term: &Target) -> ExitCode {
    const WHY: &str = "no COMMAND given (try --help)";
    log::error!("{WHY}");
    let _ = std::io::stderr().write_all(help::help().as_bytes());
    termination_message::write(term, WHY);
    ExitCode::from(EX_USAGE)
}

/// The only place tandem writes to stdout: what `--help` and `--version` print.
fn print_stdout(text: &str) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(EX_SOFTWARE),
    }
}
