//! The injector's log: one line per event on stderr, `tandem-injector: …`, in
//! one write so lines from concurrent connections never interleave. Control
//! characters are escaped: names in a review come before the API server
//! validates them, and must not forge log lines. No timestamps: `kubectl logs
//! --timestamps` and every log collector add their own.

use std::fmt;
use std::io::Write;

/// Writes one line: `tandem-injector: MESSAGE`.
pub fn line(message: fmt::Arguments) {
    let text = format!("{}\n", render(message));
    // Nothing to do when stderr is gone; the server goes on.
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// The line for `message`, without its newline, control characters escaped.
pub fn render(message: fmt::Arguments) -> String {
    format!("tandem-injector: {}", escape(&message.to_string()))
}

/// `text` with its control characters escaped (`\n`, `\u{1b}`): the log's
/// lines and the annotation stay one line whatever a review's names hold.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// `line` with `format!` arguments.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => { $crate::say::line(format_args!($($arg)*)) };
}

#[cfg(test)]
mod tests {
    #[test]
    fn control_characters_in_a_message_are_escaped() {
        let name = "job\ntandem-injector: forged\x1b[31m";
        assert_eq!(
            super::render(format_args!("pod {name}")),
            "tandem-injector: pod job\\ntandem-injector: forged\\u{1b}[31m"
        );
    }
}
