//! The termination message (SPEC §7): when tandem ends a run for a reason of its
//! own (`exit::Outcome::reason`), one line saying why goes to the file Kubernetes
//! shows in `kubectl describe pod` and the Job's status, after the logs may be gone.
//!
//! Where it goes is set as the log's format is, as soon as it is known (`set`),
//! so whoever tells a failure (`tell`) needs nothing passed down to it.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

/// Where Kubernetes mounts the termination message file in every container.
const KUBERNETES_PATH: &str = "/dev/termination-log";
/// Kubernetes keeps at most 4096 bytes of a container's termination message.
const MAX_BYTES: usize = 4096;

/// Where the termination message goes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Target {
    /// `/dev/termination-log` when it exists and is writable; nowhere otherwise.
    #[default]
    Kubernetes,
    /// This file, created if missing.
    Path(PathBuf),
    /// Nowhere (`off`).
    Off,
}

/// Where `tell` writes: Kubernetes' file until `set` says otherwise.
static TARGET: Mutex<Target> = Mutex::new(Target::Kubernetes);

/// Sets where the termination message goes from now on.
pub fn set(target: Target) {
    *TARGET.lock().unwrap_or_else(PoisonError::into_inner) = target;
}

/// Writes `message` as one line where `set` said last (see [`write`]).
pub fn tell(message: &str) {
    let target = TARGET
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    write(&target, message);
}

/// Parses `--termination-log`/`TANDEM_TERMINATION_LOG`: `off` or a path.
pub fn parse(s: &str) -> Result<Target, &'static str> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("off") {
        Ok(Target::Off)
    } else if s.is_empty() {
        Err("a file path, or off")
    } else {
        Ok(Target::Path(PathBuf::from(s)))
    }
}

/// Joins what ended the run and a failed sidecar quit into one message.
pub fn message(reason: Option<String>, quit_failed: Option<String>) -> Option<String> {
    match (reason, quit_failed) {
        (None, None) => None,
        (Some(r), None) => Some(r),
        (None, Some(q)) => Some(q),
        (Some(r), Some(q)) => Some(format!("{r}; then {q}")),
    }
}

/// Writes `message` as one line to `target`, unless the file already has
/// content (the app's own message wins) or cannot be written (nothing to do
/// about it then but say so at debug: the exit status still tells the story).
fn write(target: &Target, message: &str) {
    let (path, create) = match target {
        Target::Off => return,
        Target::Kubernetes => (PathBuf::from(KUBERNETES_PATH), false),
        Target::Path(path) => (path.clone(), true),
    };
    let line = one_line(message);
    let file = OpenOptions::new().write(true).create(create).open(&path);
    let result = file.and_then(|mut f| {
        if f.metadata()?.len() > 0 {
            log::debug!(
                "{} is not empty: leaving the app's termination message",
                path.display()
            );
            return Ok(());
        }
        f.write_all(line.as_bytes())
    });
    if let Err(e) = result {
        log::debug!("cannot write {}: {e}", path.display());
    }
}

/// `message` as one line of at most 4 KiB: newlines become blanks, URLs lose
/// their `user:password@`, and a long one is cut at a character boundary.
fn one_line(message: &str) -> String {
    let mut line: String = crate::value::url::redact(message)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if line.len() > MAX_BYTES - 1 {
        let mut cut = MAX_BYTES - 1;
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        line.truncate(cut);
    }
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse() {
        assert_eq!(parse("off"), Ok(Target::Off));
        assert_eq!(parse(" OFF "), Ok(Target::Off));
        assert_eq!(parse("/tmp/x"), Ok(Target::Path("/tmp/x".into())));
        assert!(parse(" ").is_err());
    }

    #[test]
    fn the_line_is_one_line_without_credentials_and_at_most_4_kib() {
        let line = one_line("a\nb http://u:secret@127.0.0.1:1/x");
        assert_eq!(line, "a b http://127.0.0.1:1/x\n");
        let long = one_line(&"é".repeat(5000));
        assert!(long.len() <= MAX_BYTES, "{}", long.len());
        assert!(long.ends_with("é\n"));
    }

    #[test]
    fn a_message_joins_the_reason_and_a_failed_quit() {
        assert_eq!(message(None, None), None);
        assert_eq!(message(Some("a".into()), None), Some("a".into()));
        assert_eq!(message(None, Some("b".into())), Some("b".into()));
        assert_eq!(
            message(Some("a".into()), Some("b".into())),
            Some("a; then b".into())
        );
    }
}
