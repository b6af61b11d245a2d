//! The injector's log: one line per event on stderr, `tandem-injector: …`, in
//! one write so lines from concurrent connections never interleave. No
//! timestamps: `kubectl logs --timestamps` and every log collector add their own.

use std::fmt;
use std::io::Write;

/// Writes one line: `tandem-injector: MESSAGE`.
pub fn line(message: fmt::Arguments) {
    let text = format!("tandem-injector: {message}\n");
    // Nothing to do when stderr is gone; the server goes on.
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// `line` with `format!` arguments.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => { $crate::log::line(format_args!($($arg)*)) };
}
