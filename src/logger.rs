//! The one logger (SPEC §8). Every module logs through the `log` facade
//! (`log::error!`, `log::warn!`, `log::info!`, `log::debug!`, with structured
//! fields as key-values: `log::info!(code = 3; "…")`); this type writes each
//! record to stderr as one text or JSON line. The level is the facade's
//! (`log::set_max_level`). tandem never writes to stdout.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use log::kv::{self, Key, Source, Value, VisitSource};
use log::{Level, LevelFilter, Log, Metadata, Record};

use crate::clock;
use crate::value::{boolean, url};

/// Shape of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `2026-01-02T03:04:05.678Z tandem: message`
    Text,
    /// One JSON object per line with `ts`, `level`, `msg` and fields.
    Json,
}

/// Parses a level: `off`/`error`/`warn`/`info`/`debug`, or `true` (info) / `false` (warn).
///
/// SPEC §2: `SCUTTLE_LOGGING=false` silences progress but still shows errors and
/// warnings, so false-ish values (`false`, `0`, `no`) mean warn, not off.
pub fn parse_level(s: &str) -> Result<LevelFilter, &'static str> {
    let word = s.trim();
    let is = |name: &str| word.eq_ignore_ascii_case(name);
    if is("off") {
        Ok(LevelFilter::Off)
    } else if is("error") {
        Ok(LevelFilter::Error)
    } else if is("warn") || is("warning") {
        Ok(LevelFilter::Warn)
    } else if is("info") {
        Ok(LevelFilter::Info)
    } else if is("debug") {
        Ok(LevelFilter::Debug)
    } else {
        match boolean::parse(word) {
            Ok(true) => Ok(LevelFilter::Info),
            Ok(false) => Ok(LevelFilter::Warn),
            Err(_) => Err("off, error, warn, info or debug (or true/false)"),
        }
    }
}

/// Parses a format: `text` or `json`.
pub fn parse_format(s: &str) -> Result<Format, &'static str> {
    let word = s.trim();
    if word.eq_ignore_ascii_case("text") {
        Ok(Format::Text)
    } else if word.eq_ignore_ascii_case("json") {
        Ok(Format::Json)
    } else {
        Err("text or json")
    }
}

/// The process's logger: the format is its only state, the level is the facade's.
struct Logger {
    // An atomic, not a Mutex: logging must work from the signal relay thread and
    // can never fail or poison.
    json: AtomicBool,
}

static LOGGER: Logger = Logger {
    json: AtomicBool::new(false),
};

/// Installs the logger, at info level in text, until [`set`] says otherwise.
/// `main` calls it first, so even a bad command line is reported; a second
/// call changes nothing.
pub fn init() {
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(LevelFilter::Info);
    }
}

/// Sets the level and format of every later line.
pub fn set(level: LevelFilter, format: Format) {
    LOGGER.json.store(format == Format::Json, Ordering::Relaxed);
    log::set_max_level(level);
}

/// True for a record of tandem's own; any other comes from a library (ureq).
fn is_own(target: &str) -> bool {
    const OWN: &str = env!("CARGO_CRATE_NAME");
    target
        .strip_prefix(OWN)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
}

impl Log for Logger {
    /// tandem's records by the level; a library's (ureq's) only at debug, where
    /// they show a connection problem without a packet capture.
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        let max = log::max_level();
        metadata.level() <= max && (is_own(metadata.target()) || max >= LevelFilter::Debug)
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let json = self.json.load(Ordering::Relaxed);
        let target = record.target();
        let line = if is_own(target) {
            let msg = record.args().to_string();
            format_line(
                json,
                record.level(),
                &clock::now_utc(),
                &msg,
                record.key_values(),
            )
        } else {
            // A library's message may quote a URL anywhere (SPEC §8); it is shown
            // as a debug line named after its source, whatever its own level.
            let msg = format!("{target}: {}", url::redact(&record.args().to_string()));
            let target_field = ("target", target);
            format_line(json, Level::Debug, &clock::now_utc(), &msg, &target_field)
        };
        // One write a line, so lines of the relay and the main thread never
        // interleave. A failed write is ignored: stderr may be closed, and logging
        // must not be what kills the app's exit status.
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    fn flush(&self) {}
}

/// Builds one log line, newline included, stamped `ts`. Text lines leave the
/// `fields` out; JSON lines carry them after `ts`, `level` and `msg`.
fn format_line(json: bool, level: Level, ts: &str, msg: &str, fields: &dyn Source) -> String {
    let mut line = String::with_capacity(ts.len() + msg.len() + 64);
    if json {
        line.push_str("{\"ts\":\"");
        line.push_str(ts);
        line.push_str("\",\"level\":\"");
        line.push_str(level_name(level));
        line.push_str("\",\"msg\":");
        push_json_str(&mut line, msg);
        let _ = fields.visit(&mut JsonFields(&mut line));
        line.push('}');
    } else {
        line.push_str(ts);
        line.push_str(" tandem: ");
        line.push_str(match level {
            Level::Error => "error: ",
            Level::Warn => "warning: ",
            Level::Info | Level::Debug | Level::Trace => "",
        });
        push_text(&mut line, msg);
    }
    line.push('\n');
    line
}

/// Lowercase level name used in JSON lines.
fn level_name(level: Level) -> &'static str {
    match level {
        Level::Error => "error",
        Level::Warn => "warn",
        Level::Info => "info",
        Level::Debug => "debug",
        Level::Trace => "trace",
    }
}

/// Appends each field as `,"key":value`: an integer as a JSON number, a string
/// as a JSON string. tandem's fields are only those; any other value is `null`.
struct JsonFields<'a>(&'a mut String);

impl<'kvs> VisitSource<'kvs> for JsonFields<'_> {
    fn visit_pair(&mut self, key: Key<'kvs>, value: Value<'kvs>) -> Result<(), kv::Error> {
        self.0.push(',');
        push_json_str(self.0, key.as_str());
        self.0.push(':');
        if let Some(n) = value.to_i64() {
            self.0.push_str(&n.to_string());
        } else if let Some(n) = value.to_u64() {
            self.0.push_str(&n.to_string());
        } else if let Some(s) = value.to_borrowed_str() {
            push_json_str(self.0, s);
        } else {
            self.0.push_str("null");
        }
        Ok(())
    }
}

/// Appends a message for a text line. Control characters other than tab are
/// escaped so one event stays one line and cannot drive the terminal.
fn push_text(out: &mut String, s: &str) {
    for c in s.chars() {
        if c.is_control() && c != '\t' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
}

/// Appends `s` as a quoted JSON string (RFC 8259 escaping).
fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    const TS: &str = "2026-01-02T03:04:05.678Z";

    type Fields<'a> = &'a [(&'a str, Value<'a>)];

    #[test]
    fn parse_level_table() {
        let cases: &[(&str, Option<LevelFilter>)] = &[
            ("off", Some(LevelFilter::Off)),
            ("OFF", Some(LevelFilter::Off)),
            ("error", Some(LevelFilter::Error)),
            ("Error", Some(LevelFilter::Error)),
            ("warn", Some(LevelFilter::Warn)),
            ("WARNING", Some(LevelFilter::Warn)),
            ("info", Some(LevelFilter::Info)),
            (" info\n", Some(LevelFilter::Info)),
            ("debug", Some(LevelFilter::Debug)),
            ("DeBuG", Some(LevelFilter::Debug)),
            ("true", Some(LevelFilter::Info)),
            ("TRUE", Some(LevelFilter::Info)),
            ("1", Some(LevelFilter::Info)),
            ("yes", Some(LevelFilter::Info)),
            ("false", Some(LevelFilter::Warn)),
            ("False", Some(LevelFilter::Warn)),
            ("0", Some(LevelFilter::Warn)),
            ("no", Some(LevelFilter::Warn)),
            ("", None),
            ("trace", None),
            ("verbose", None),
            ("warnings", None),
            ("2", None),
            ("on", None),
            ("inf\u{f6}", None),
        ];
        for (input, want) in cases {
            assert_eq!(parse_level(input).ok(), *want, "input {input:?}");
        }
        assert_eq!(
            parse_level("x"),
            Err("off, error, warn, info or debug (or true/false)")
        );
    }

    #[test]
    fn parse_format_table() {
        let cases: &[(&str, Option<Format>)] = &[
            ("text", Some(Format::Text)),
            ("TEXT", Some(Format::Text)),
            ("json", Some(Format::Json)),
            ("Json", Some(Format::Json)),
            (" json ", Some(Format::Json)),
            ("", None),
            ("logfmt", None),
            ("jsonl", None),
        ];
        for (input, want) in cases {
            assert_eq!(parse_format(input).ok(), *want, "input {input:?}");
        }
    }

    #[test]
    fn own_records_are_told_from_a_librarys() {
        for own in ["tandem", "tandem::quit::fanout"] {
            assert!(is_own(own), "{own}");
        }
        for other in ["ureq", "ureq::pool", "tandemx", "tandem_sidecar", ""] {
            assert!(!is_own(other), "{other}");
        }
    }

    // The only test that touches the process-wide settings, so tests running in
    // parallel cannot see each other's level.
    #[test]
    fn set_decides_which_records_are_written() {
        let levels = [Level::Error, Level::Warn, Level::Info, Level::Debug];
        let enabled = |target: &str, level: Level| {
            LOGGER.enabled(&Metadata::builder().target(target).level(level).build())
        };
        init();
        assert_eq!(log::max_level(), LevelFilter::Info);
        assert!(!LOGGER.json.load(Ordering::Relaxed));
        let filters = [
            LevelFilter::Off,
            LevelFilter::Error,
            LevelFilter::Warn,
            LevelFilter::Info,
            LevelFilter::Debug,
        ];
        for max in filters {
            set(max, Format::Json);
            assert!(LOGGER.json.load(Ordering::Relaxed));
            for level in levels {
                let own = enabled("tandem::ready", level);
                assert_eq!(own, level <= max, "max {max:?} level {level:?}");
                // ureq's records, whatever their level, only when tandem logs at debug.
                let ureq = enabled("ureq::pool", level);
                assert_eq!(
                    ureq,
                    max == LevelFilter::Debug,
                    "max {max:?} level {level:?}"
                );
            }
        }
        set(LevelFilter::Info, Format::Text);
        assert!(!LOGGER.json.load(Ordering::Relaxed));
        assert_eq!(log::max_level(), LevelFilter::Info);
    }

    #[test]
    fn text_lines() {
        let fields: Fields<'_> = &[("url", Value::from("http://x")), ("n", Value::from(3))];
        let cases = [
            (
                Level::Info,
                "envoy ready",
                "2026-01-02T03:04:05.678Z tandem: envoy ready\n",
            ),
            (
                Level::Debug,
                "poll",
                "2026-01-02T03:04:05.678Z tandem: poll\n",
            ),
            (
                Level::Warn,
                "gave up",
                "2026-01-02T03:04:05.678Z tandem: warning: gave up\n",
            ),
            (
                Level::Error,
                "boom",
                "2026-01-02T03:04:05.678Z tandem: error: boom\n",
            ),
            (
                Level::Info,
                "a\nb\r\u{1b}[31m\tc",
                "2026-01-02T03:04:05.678Z tandem: a\\nb\\r\\u{1b}[31m\tc\n",
            ),
            (
                Level::Info,
                "\u{e9}\"\\",
                "2026-01-02T03:04:05.678Z tandem: \u{e9}\"\\\n",
            ),
        ];
        for (level, msg, want) in cases {
            let line = format_line(false, level, TS, msg, &fields);
            assert_eq!(line, want, "level {level:?} msg {msg:?}");
        }
    }

    #[test]
    fn json_lines() {
        let head = r#"{"ts":"2026-01-02T03:04:05.678Z","level":"#;
        let cases: &[(Level, &str, Fields<'_>, &str)] = &[
            (
                Level::Info,
                "envoy ready",
                &[],
                r#""info","msg":"envoy ready"}"#,
            ),
            (Level::Warn, "w", &[], r#""warn","msg":"w"}"#),
            (Level::Error, "e", &[], r#""error","msg":"e"}"#),
            (Level::Debug, "d", &[], r#""debug","msg":"d"}"#),
            (
                Level::Info,
                "sent",
                &[
                    ("url", Value::from("http://h/q")),
                    ("status", Value::from(200u16)),
                    ("neg", Value::from(-7)),
                    ("big", Value::from(u64::MAX)),
                    ("other", Value::from(true)),
                ],
                r#""info","msg":"sent","url":"http://h/q","status":200,"neg":-7,"big":18446744073709551615,"other":null}"#,
            ),
            (
                Level::Info,
                "q\"b\\s/n\nr\rt\tb\u{8}f\u{c}z\u{0}e\u{1b}d\u{7f}\u{e9}\u{1f600}",
                &[("k\"", Value::from("v\n"))],
                r#""info","msg":"q\"b\\s/n\nr\rt\tb\bf\fz\u0000e\u001bd"#,
            ),
        ];
        for (level, msg, fields, tail) in cases {
            let line = format_line(true, *level, TS, msg, fields);
            assert!(line.starts_with(head), "{line}");
            assert!(line.ends_with("}\n"), "{line}");
            assert_eq!(line.matches('\n').count(), 1, "{line}");
            assert!(line[head.len()..].starts_with(tail), "{line}");
        }
    }

    #[test]
    fn json_escapes_every_control_character() {
        for byte in 0u8..0x20 {
            let mut out = String::new();
            push_json_str(&mut out, &char::from(byte).to_string());
            assert!(
                out.starts_with("\"\\") && out.ends_with('"'),
                "{byte}: {out}"
            );
            assert!(!out.chars().any(|c| c.is_control()), "{byte}: {out}");
        }
        let mut out = String::new();
        push_json_str(&mut out, "k\"\u{7f}\u{e9}\u{1f600}");
        assert_eq!(out, "\"k\\\"\u{7f}\u{e9}\u{1f600}\"");
    }
}
