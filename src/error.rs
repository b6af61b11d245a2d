//! The few ways tandem itself can fail, each tied to its exit code (SPEC §7).

use std::ffi::OsString;
use std::fmt;
use std::io;

/// Bad usage or configuration (sysexits `EX_USAGE`).
pub const EX_USAGE: u8 = 64;
/// The sidecar was not ready within `--fail-timeout` (sysexits `EX_UNAVAILABLE`).
pub const EX_UNAVAILABLE: u8 = 69;
/// `--install-to` could not write its copy (sysexits `EX_CANTCREAT`).
pub const EX_CANTCREAT: u8 = 73;
/// COMMAND was found but could not be executed (shell convention).
pub const NOT_EXECUTABLE: u8 = 126;
/// COMMAND was not found (shell convention).
pub const NOT_FOUND: u8 = 127;
/// Any other failure of tandem itself.
pub const EX_SOFTWARE: u8 = 70;

/// A failure of tandem itself; the app's own exit status is never an `Error`.
#[derive(Debug)]
pub enum Error {
    /// Bad invocation or configuration value; the message names it.
    Usage(String),
    /// COMMAND is not in `PATH` or does not exist.
    NotFound(OsString),
    /// COMMAND exists but exec failed (permission, format, …).
    NotExecutable(OsString, io::Error),
    /// `--install-to` failed.
    Install(String, io::Error),
    /// An OS call failed where tandem cannot go on.
    Io(&'static str, io::Error),
}

impl Error {
    /// The exit status this failure ends tandem with.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => EX_USAGE,
            Error::NotFound(_) => NOT_FOUND,
            Error::NotExecutable(..) => NOT_EXECUTABLE,
            Error::Install(..) => EX_CANTCREAT,
            Error::Io(..) => EX_SOFTWARE,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(msg) => f.write_str(msg),
            Error::NotFound(cmd) => write!(f, "{}: command not found", cmd.to_string_lossy()),
            Error::NotExecutable(cmd, e) => {
                write!(f, "{}: cannot execute: {e}", cmd.to_string_lossy())
            }
            Error::Install(what, e) => write!(f, "--install-to: {what}: {e}"),
            Error::Io(what, e) => write!(f, "{what}: {e}"),
        }
    }
}
