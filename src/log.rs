//! The stderr logger: level filter, text or JSON lines, UTC timestamps.
//! tandem never writes to stdout; every line here goes to stderr in one write.

use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Log verbosity, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
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
pub enum Format {
    /// `2026-01-02T03:04:05.678Z tandem: message`
    Text,
    /// One JSON object per line with `ts`, `level`, `msg` and fields.
    Json,
}

/// A structured value attached to a log line (shown in JSON mode).
#[derive(Debug, Clone, Copy)]
pub enum Field<'a> {
    /// A string value.
    Str(&'a str),
    /// An integer value.
    Int(i64),
}

/// Parses a level: `off`/`error`/`warn`/`info`/`debug`, or `true` (info) / `false` (warn).
///
/// SPEC §2: `SCUTTLE_LOGGING=false` silences progress but still shows errors and
/// warnings, so false-ish values (`false`, `0`, `no`) mean warn, not off.
pub fn parse_level(s: &str) -> Result<Level, &'static str> {
    let word = s.trim();
    let is = |name: &str| word.eq_ignore_ascii_case(name);
    if is("off") {
        Ok(Level::Off)
    } else if is("error") {
        Ok(Level::Error)
    } else if is("warn") || is("warning") {
        Ok(Level::Warn)
    } else if is("info") {
        Ok(Level::Info)
    } else if is("debug") {
        Ok(Level::Debug)
    } else {
        match crate::config::boolean::parse(word) {
            Ok(true) => Ok(Level::Info),
            Ok(false) => Ok(Level::Warn),
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

// Atomics, not a Mutex: logging must work from the signal relay thread and can
// never fail or poison. Relaxed is enough: `init` runs once before any thread.
static LEVEL: AtomicU8 = AtomicU8::new(Level::Info as u8);
static FORMAT: AtomicU8 = AtomicU8::new(Format::Text as u8);

/// Sets the process-wide level and format. Until called: info, text.
///
/// At debug, the records of ureq (and any other crate using the `log` facade)
/// join tandem's log, so a connection problem shows without a packet capture.
pub fn init(level: Level, format: Format) {
    LEVEL.store(level as u8, Ordering::Relaxed);
    FORMAT.store(format as u8, Ordering::Relaxed);
    if level == Level::Debug {
        // Fails only when a logger is already set: then the first one stays.
        let _ = ::log::set_logger(&FACADE);
        ::log::set_max_level(::log::LevelFilter::Debug);
    } else {
        ::log::set_max_level(::log::LevelFilter::Off);
    }
}

/// The `log` facade's records, as tandem debug lines (no logging framework).
struct Facade;

static FACADE: Facade = Facade;

impl ::log::Log for Facade {
    fn enabled(&self, metadata: &::log::Metadata<'_>) -> bool {
        metadata.level() <= ::log::Level::Debug && enabled(Level::Debug)
    }

    fn log(&self, record: &::log::Record<'_>) {
        if self.enabled(record.metadata()) {
            let text = without_userinfo(&record.args().to_string());
            event(
                Level::Debug,
                format_args!("{}: {text}", record.target()),
                &[("target", Field::Str(record.target()))],
            );
        }
    }

    fn flush(&self) {}
}

/// `text` with the `user:password@` of every URL in it removed (SPEC §8): a
/// library's message may quote a URL anywhere, not only at its start.
pub fn without_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        out.push_str(&rest[..i + 3]);
        rest = &rest[i + 3..];
        let end = rest
            .find(|c: char| c == '/' || c.is_whitespace() || c == '"' || c == '>')
            .unwrap_or(rest.len());
        if let Some(at) = rest[..end].rfind('@') {
            rest = &rest[at + 1..];
        }
    }
    out.push_str(rest);
    out
}

/// True when lines at `level` are written.
pub fn enabled(level: Level) -> bool {
    level != Level::Off && level as u8 <= LEVEL.load(Ordering::Relaxed)
}

/// The format set by `init`.
fn current_format() -> Format {
    if FORMAT.load(Ordering::Relaxed) == Format::Json as u8 {
        Format::Json
    } else {
        Format::Text
    }
}

/// Writes one line at `level` with structured `fields`.
///
/// The line goes out in a single `write_all` so that lines from the relay thread
/// and the main thread never interleave. A failed write is ignored: stderr may be
/// closed, and logging must not be what kills the app's exit status.
pub fn event(level: Level, msg: fmt::Arguments<'_>, fields: &[(&str, Field<'_>)]) {
    if !enabled(level) {
        return;
    }
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let millis = u64::try_from(since_epoch.as_millis()).unwrap_or(u64::MAX);
    let line = format_line(current_format(), level, millis, msg, fields);
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Builds one log line, newline included, for a time in milliseconds since the epoch.
fn format_line(
    format: Format,
    level: Level,
    millis: u64,
    msg: fmt::Arguments<'_>,
    fields: &[(&str, Field<'_>)],
) -> String {
    let ts = format_timestamp(millis);
    let msg = msg.to_string();
    let mut line = String::with_capacity(ts.len() + msg.len() + 64);
    match format {
        Format::Text => {
            line.push_str(&ts);
            line.push_str(" tandem: ");
            line.push_str(match level {
                Level::Error => "error: ",
                Level::Warn => "warning: ",
                Level::Off | Level::Info | Level::Debug => "",
            });
            push_text(&mut line, &msg);
        }
        Format::Json => {
            line.push_str("{\"ts\":\"");
            line.push_str(&ts);
            line.push_str("\",\"level\":\"");
            line.push_str(level_name(level));
            line.push_str("\",\"msg\":");
            push_json_str(&mut line, &msg);
            for (key, value) in fields {
                line.push(',');
                push_json_str(&mut line, key);
                line.push(':');
                match value {
                    Field::Str(s) => push_json_str(&mut line, s),
                    Field::Int(n) => line.push_str(&n.to_string()),
                }
            }
            line.push('}');
        }
    }
    line.push('\n');
    line
}

/// Lowercase level name used in JSON lines.
fn level_name(level: Level) -> &'static str {
    match level {
        Level::Off => "off",
        Level::Error => "error",
        Level::Warn => "warn",
        Level::Info => "info",
        Level::Debug => "debug",
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

const MILLIS_PER_DAY: u64 = 86_400_000;
/// The Gregorian calendar repeats every 400 years, and those are always this many days.
const DAYS_PER_400_YEARS: u64 = 146_097;

/// Formats milliseconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC).
fn format_timestamp(millis: u64) -> String {
    let days = millis / MILLIS_PER_DAY;
    let ms_of_day = millis % MILLIS_PER_DAY;
    let (year, month, day) = civil_date(days);
    let secs = ms_of_day / 1000;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        ms_of_day % 1000
    )
}

/// Year, month (1..=12) and day (1..=31) of a count of days since 1970-01-01.
fn civil_date(days: u64) -> (u64, u64, u64) {
    // Skipping whole 400-year cycles bounds the year loop below to 400 steps.
    let mut year = 1970 + 400 * (days / DAYS_PER_400_YEARS);
    let mut rest = days % DAYS_PER_400_YEARS;
    loop {
        let len = if is_leap_year(year) { 366 } else { 365 };
        if rest < len {
            break;
        }
        rest -= len;
        year += 1;
    }
    let feb = if is_leap_year(year) { 29 } else { 28 };
    let month_lengths = [31, feb, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let mut month = 1;
    for len in month_lengths {
        if rest < len {
            break;
        }
        rest -= len;
        month += 1;
    }
    (year, month, rest + 1)
}

/// Gregorian leap year rule: every 4th year, except centuries not divisible by 400.
fn is_leap_year(year: u64) -> bool {
    year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400))
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

/// A duration for humans: `850ms`, `1.2s`, `2m5.0s`.
pub fn human(d: std::time::Duration) -> String {
    // Integer arithmetic only: float formatting costs ~10 KiB of the size budget.
    let ms = d.as_millis();
    let tenths = ms % 1000 / 100;
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{}.{tenths}s", ms / 1000)
    } else {
        format!("{}m{}.{tenths}s", ms / 60_000, ms % 60_000 / 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_is_removed_from_every_url_in_a_message() {
        assert_eq!(
            without_userinfo("GET http://u:p@127.0.0.1:1/x then https://a@h/y"),
            "GET http://127.0.0.1:1/x then https://h/y"
        );
        assert_eq!(without_userinfo("no url, a@b"), "no url, a@b");
        assert_eq!(without_userinfo("http://h/p@q"), "http://h/p@q");
        assert_eq!(without_userinfo("tail ://"), "tail ://");
    }

    type Fields<'a> = &'a [(&'a str, Field<'a>)];

    #[test]
    fn parse_level_table() {
        let cases: &[(&str, Option<Level>)] = &[
            ("off", Some(Level::Off)),
            ("OFF", Some(Level::Off)),
            ("error", Some(Level::Error)),
            ("Error", Some(Level::Error)),
            ("warn", Some(Level::Warn)),
            ("WARNING", Some(Level::Warn)),
            ("info", Some(Level::Info)),
            (" info\n", Some(Level::Info)),
            ("debug", Some(Level::Debug)),
            ("DeBuG", Some(Level::Debug)),
            ("true", Some(Level::Info)),
            ("TRUE", Some(Level::Info)),
            ("1", Some(Level::Info)),
            ("yes", Some(Level::Info)),
            ("false", Some(Level::Warn)),
            ("False", Some(Level::Warn)),
            ("0", Some(Level::Warn)),
            ("no", Some(Level::Warn)),
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

    // The only test that touches the process-wide settings, so tests running in
    // parallel cannot see each other's level.
    #[test]
    fn init_sets_what_enabled_reports() {
        let all = [
            Level::Off,
            Level::Error,
            Level::Warn,
            Level::Info,
            Level::Debug,
        ];
        let check = |max: Level| {
            for level in all {
                let want = level != Level::Off && level <= max;
                assert_eq!(enabled(level), want, "max {max:?} level {level:?}");
            }
        };
        check(Level::Info);
        assert_eq!(current_format(), Format::Text);
        for max in all {
            init(max, Format::Json);
            check(max);
            assert_eq!(current_format(), Format::Json);
        }
        init(Level::Info, Format::Text);
        check(Level::Info);
        assert_eq!(current_format(), Format::Text);
    }

    #[test]
    fn format_timestamp_table() {
        let cases = [
            (0, "1970-01-01T00:00:00.000Z"),
            (1, "1970-01-01T00:00:00.001Z"),
            (31_535_999_999, "1970-12-31T23:59:59.999Z"),
            (68_169_600_000, "1972-02-29T00:00:00.000Z"),
            (951_825_600_000, "2000-02-29T12:00:00.000Z"),
            (1_709_251_199_999, "2024-02-29T23:59:59.999Z"),
            (1_709_251_200_000, "2024-03-01T00:00:00.000Z"),
            (1_767_323_045_678, "2026-01-02T03:04:05.678Z"),
            (2_147_483_647_000, "2038-01-19T03:14:07.000Z"),
            (4_107_456_000_000, "2100-02-28T00:00:00.000Z"),
            (4_107_542_400_000, "2100-03-01T00:00:00.000Z"),
            (13_601_001_600_001, "2400-12-31T00:00:00.001Z"),
            (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
        ];
        for (millis, want) in cases {
            assert_eq!(format_timestamp(millis), want, "millis {millis}");
        }
        assert!(format_timestamp(u64::MAX).ends_with('Z'));
    }

    #[test]
    fn civil_date_walks_every_day_in_order() {
        let mut prev = civil_date(0);
        assert_eq!(prev, (1970, 1, 1));
        for days in 1..(DAYS_PER_400_YEARS * 2) {
            let (y, m, d) = civil_date(days);
            let (py, pm, pd) = prev;
            let next_day = (y, m, d) == (py, pm, pd + 1);
            let next_month = y == py && m == pm + 1 && d == 1;
            let next_year = y == py + 1 && m == 1 && d == 1 && pm == 12 && pd == 31;
            assert!(
                next_day || next_month || next_year,
                "days {days}: {prev:?} then {:?}",
                (y, m, d)
            );
            prev = (y, m, d);
        }
        assert_eq!(civil_date(DAYS_PER_400_YEARS * 2), (2770, 1, 1));
    }

    #[test]
    fn text_lines() {
        let ts = 1_767_323_045_678;
        let fields = [("url", Field::Str("http://x")), ("n", Field::Int(3))];
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
            let line = format_line(Format::Text, level, ts, format_args!("{msg}"), &fields);
            assert_eq!(line, want, "level {level:?} msg {msg:?}");
        }
    }

    #[test]
    fn json_lines() {
        let ts = 1_767_323_045_678;
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
                    ("url", Field::Str("http://h/q")),
                    ("status", Field::Int(200)),
                    ("neg", Field::Int(-7)),
                ],
                r#""info","msg":"sent","url":"http://h/q","status":200,"neg":-7}"#,
            ),
            (
                Level::Info,
                "q\"b\\s/n\nr\rt\tb\u{8}f\u{c}z\u{0}e\u{1b}d\u{7f}\u{e9}\u{1f600}",
                &[("k\"", Field::Str("v\n"))],
                r#""info","msg":"q\"b\\s/n\nr\rt\tb\bf\fz\u0000e\u001bd"#,
            ),
        ];
        for (level, msg, fields, tail) in cases {
            let line = format_line(Format::Json, *level, ts, format_args!("{msg}"), fields);
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

    #[test]
    fn human_durations_round_down_to_tenths() {
        use std::time::Duration;
        for (ms, text) in [
            (0, "0ms"),
            (999, "999ms"),
            (1000, "1.0s"),
            (1234, "1.2s"),
            (59_999, "59.9s"),
            (60_000, "1m0.0s"),
            (125_050, "2m5.0s"),
        ] {
            assert_eq!(human(Duration::from_millis(ms)), text, "{ms} ms");
        }
    }
}
