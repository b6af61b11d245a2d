//! What tandem does, as the command line asks (SPEC §1): the one `Task`, which
//! the option table names for each task option.

use std::ffi::OsString;
use std::path::PathBuf;

/// What tandem does, as the command line asks (SPEC §1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Task {
    /// Wait, run COMMAND with ARGS, quit, exit with its status.
    Run(OsString, Vec<OsString>),
    /// `--wait-only`: wait for the sidecars, then exit; never send quits.
    WaitOnly,
    /// `--quit-only`: send the quit requests now, then exit 0.
    QuitOnly,
    /// `--install-to DIR`: copy this binary to DIR/tandem.
    InstallTo(PathBuf),
    /// `--help`: print the usage to stdout.
    Help,
    /// `--version`: print the version to stdout.
    Version,
    /// Neither a COMMAND nor a task option: a usage error.
    NoCommand,
}

impl Task {
    /// Whether the task ends by sending the quits (a run and `--quit-only`): only
    /// then does it take its place among several job containers (SPEC §9).
    pub fn sends_quits(&self) -> bool {
        matches!(self, Task::Run(..) | Task::QuitOnly)
    }
}
