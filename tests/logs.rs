//! What tandem writes on stderr (SPEC §2 "Logging", §8): the text and JSON line
//! shapes with a correct UTC timestamp, one line per event whatever the message
//! holds, no credentials, and the level settings with their precedence.

use crate::support::{
    FakeAdmin, Out, RUN_TIMEOUT, Script, closed_port, run, start, tandem, tandem_at, tandem_at_url,
};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Shape of a text line's prefix: `#` is a digit, everything else is literal.
const TEXT_PREFIX: &str = "####-##-##T##:##:##.###Z tandem: ";
/// Shape of a timestamp.
const TIMESTAMP: &str = "####-##-##T##:##:##.###Z";

/// Whether `text` starts with `shape` (`#` standing for any ASCII digit).
fn has_shape(text: &str, shape: &str) -> bool {
    text.len() >= shape.len()
        && shape.bytes().zip(text.bytes()).all(|(s, c)| {
            if s == b'#' {
                c.is_ascii_digit()
            } else {
                s == c
            }
        })
}

fn millis_now() -> i64 {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis();
    i64::try_from(ms).expect("millis fit")
}

/// Milliseconds since the epoch of a `YYYY-MM-DDTHH:MM:SS.mmmZ` timestamp.
fn parse_timestamp(ts: &str) -> i64 {
    let num = |range: std::ops::Range<usize>| -> i64 {
        ts[range]
            .parse()
            .unwrap_or_else(|_| panic!("bad timestamp {ts:?}"))
    };
    let (year, month, day) = (num(0..4), num(5..7), num(8..10));
    let (hour, minute, second, milli) = (num(11..13), num(14..16), num(17..19), num(20..23));
    assert!(
        (1..=12).contains(&month)
            && (1..=31).contains(&day)
            && hour < 24
            && minute < 60
            && second < 61,
        "timestamp out of range: {ts:?}"
    );
    let days = tandem_common::calendar::days_since_epoch(year, month, day);
    ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + milli
}

/// Asserts every stderr line is a text log line stamped within the run.
fn assert_text_lines(out: &Out, before_ms: i64, after_ms: i64) {
    assert!(!out.stderr.is_empty(), "no log lines\n{}", out.dump());
    for line in out.stderr.lines() {
        assert!(
            has_shape(line, TEXT_PREFIX),
            "not a text log line: {line:?}\n{}",
            out.dump()
        );
        let at = parse_timestamp(&line[..TIMESTAMP.len()]);
        assert!(
            // The clock may have moved a little between the test's reads and tandem's.
            at >= before_ms - 1000 && at <= after_ms + 1000,
            "timestamp of {line:?} is not the time of the run (UTC)\n{}",
            out.dump()
        );
    }
}

/// Checks one JSON log line by hand: a flat object whose first members are
/// `ts` (a timestamp), `level` and `msg`, with strings and integers as values.
/// Returns the level and the message as written (escapes kept).
fn check_json_line(line: &str) -> Result<(String, String), String> {
    let mut rest = line
        .strip_prefix('{')
        .ok_or("does not start with {")?
        .strip_suffix('}')
        .ok_or("does not end with }")?;
    let mut members = Vec::new();
    while !rest.is_empty() {
        let (key, after) = json_string(rest)?;
        let after = after.strip_prefix(':').ok_or("no : after a key")?;
        let (value, after) = if after.starts_with('"') {
            json_string(after)?
        } else {
            let end = after.find(',').unwrap_or(after.len());
            let number = &after[..end];
            let digits = number.strip_prefix('-').unwrap_or(number);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!(
                    "value {number:?} is neither a string nor an integer"
                ));
            }
            (number, &after[end..])
        };
        members.push((key.to_owned(), value.to_owned()));
        rest = match after.strip_prefix(',') {
            Some(next) if !next.is_empty() => next,
            Some(_) => return Err("trailing comma".into()),
            None if after.is_empty() => after,
            None => return Err(format!("junk after a value: {after:?}")),
        };
    }
    let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
    if keys.get(..3) != Some(&["ts", "level", "msg"][..]) {
        return Err(format!("members start {keys:?}, not ts, level, msg"));
    }
    let ts = &members[0].1;
    if ts.len() != TIMESTAMP.len() || !has_shape(ts, TIMESTAMP) {
        return Err(format!("ts {ts:?} is not a UTC timestamp"));
    }
    Ok((members[1].1.clone(), members[2].1.clone()))
}

/// Splits a leading JSON string off `text`: its raw contents and the rest.
fn json_string(text: &str) -> Result<(&str, &str), String> {
    let body = text
        .strip_prefix('"')
        .ok_or(format!("expected a string at {text:?}"))?;
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((&body[..i], &body[i + 1..])),
            '\\' => match chars.next() {
                Some((_, '"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't')) => {}
                Some((_, 'u')) => {
                    for _ in 0..4 {
                        match chars.next() {
                            Some((_, h)) if h.is_ascii_hexdigit() => {}
                            _ => return Err("bad \\u escape".into()),
                        }
                    }
                }
                _ => return Err("bad escape".into()),
            },
            c if c.is_control() => return Err(format!("raw control character {c:?}")),
            _ => {}
        }
    }
    Err("unterminated string".into())
}

/// Asserts every stderr line is a JSON log line; returns `(level, msg)` per line.
fn assert_json_lines(out: &Out) -> Vec<(String, String)> {
    assert!(!out.stderr.is_empty(), "no log lines\n{}", out.dump());
    out.stderr
        .lines()
        .map(|line| {
            check_json_line(line)
                .unwrap_or_else(|why| panic!("bad JSON line {line:?}: {why}\n{}", out.dump()))
        })
        .collect()
}

/// A run with an Envoy that becomes ready after a few polls, an app that fails,
/// and a quit endpoint that refuses: info, error and debug lines all occur.
/// `options` go before the app.
fn eventful(fake: &FakeAdmin, options: &[&str]) -> Command {
    let mut cmd = tandem_at(fake);
    cmd.env(
        "GENERIC_QUIT_ENDPOINTS",
        format!("http://127.0.0.1:{}/quit", closed_port()),
    )
    .env("QUIT_REQUEST_TIMEOUT", "500ms")
    .args(options)
    .args(["sh", "-c", "exit 3"]);
    cmd
}

#[test]
fn text_lines_have_a_utc_millisecond_timestamp_and_the_tandem_tag() {
    let fake = start(Script::envoy().ready_after_polls(3));
    let before = millis_now();
    let out = run(eventful(&fake, &[]).env("TANDEM_LOG", "debug"), RUN_TIMEOUT);
    let after = millis_now();
    assert_eq!(out.code, Some(3), "{}", out.dump());
    assert_text_lines(&out, before, after);
    assert!(
        out.stderr.contains(" tandem: error: "),
        "the failed quit should be an error (SPEC §8)\n{}",
        out.dump()
    );
}

#[test]
fn error_lines_have_the_text_shape_too() {
    let before = millis_now();
    let out = run(tandem().arg("tandem-test-no-such-command"), RUN_TIMEOUT);
    let after = millis_now();
    assert_eq!(out.code, Some(127), "{}", out.dump());
    assert_text_lines(&out, before, after);
    assert!(out.stderr.contains(" tandem: error: "), "{}", out.dump());
}

#[test]
fn json_format_writes_one_object_per_line_with_ts_level_msg() {
    let fake = start(Script::envoy().ready_after_polls(3));
    let out = run(
        &mut eventful(&fake, &["--log-format", "json", "--log", "debug"]),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(3), "{}", out.dump());
    let lines = assert_json_lines(&out);
    let levels: Vec<&str> = lines.iter().map(|(level, _)| level.as_str()).collect();
    for level in &levels {
        assert!(
            ["error", "warn", "info", "debug"].contains(level),
            "unknown level {level:?}\n{}",
            out.dump()
        );
    }
    for expected in ["error", "info", "debug"] {
        assert!(
            levels.contains(&expected),
            "no {expected} line\n{}",
            out.dump()
        );
    }
}

#[test]
fn json_format_from_the_environment_escapes_quotes_and_newlines() {
    let out = run(
        tandem()
            .env("TANDEM_LOG_FORMAT", "json")
            .arg("no\"such\ncommand\\here"),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(127), "{}", out.dump());
    let lines = assert_json_lines(&out);
    assert_eq!(lines.len(), 1, "{}", out.dump());
    let (level, msg) = &lines[0];
    assert_eq!(level, "error", "{}", out.dump());
    assert!(
        msg.contains(r#"no\"such\ncommand\\here"#),
        "the command name is not escaped as JSON\n{}",
        out.dump()
    );
}

#[test]
fn text_line_stays_one_line_whatever_the_message_holds() {
    let out = run(tandem().arg("no\nsuch\r\x1b[31mcommand"), RUN_TIMEOUT);
    assert_eq!(out.code, Some(127), "{}", out.dump());
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.dump());
    assert!(
        !out.stderr.contains('\x1b'),
        "a raw escape reached the log\n{}",
        out.dump()
    );
    assert!(!out.stderr.contains('\r'), "{}", out.dump());
}

#[test]
fn credentials_never_reach_the_log() {
    // Ready after the first progress line (at 2 s), so that line is checked too.
    let admin = start(Script::envoy().ready_after(Duration::from_millis(2600)));
    let other = start(Script::generic());
    let creds = |url: String| url.replacen("http://", "http://user:secret@", 1);
    for format in ["text", "json"] {
        let out = run(
            tandem_at_url(&creds(admin.url()))
                .env("TANDEM_READY_URLS", creds(format!("{}/up", other.url())))
                .env(
                    "GENERIC_QUIT_ENDPOINTS",
                    format!(
                        "{},http://user:secret@127.0.0.1:{}/down",
                        creds(format!("{}/down", other.url())),
                        closed_port()
                    ),
                )
                .env("QUIT_REQUEST_TIMEOUT", "500ms")
                .args(["--log", "debug", "--log-format", format])
                .args(["sh", "-c", "exit 1"]),
            RUN_TIMEOUT,
        );
        assert_eq!(out.code, Some(1), "{}", out.dump());
        assert!(
            !out.stderr.contains("secret") && !out.stderr.contains("user:"),
            "credentials in the log\n{}",
            out.dump()
        );
        // The run did log those URLs, redacted.
        assert!(out.stderr.contains(&admin.url()), "{}", out.dump());
        assert!(out.stderr.contains("/down"), "{}", out.dump());
        if format == "text" {
            assert!(out.stderr.contains("still waiting"), "{}", out.dump());
        }
    }
    assert!(admin.is_ready());
}

/// Runs `tandem ARGS true` with `env` against `fake`, which is ready at once or
/// soon; asserts the run succeeded.
fn run_true(fake: &FakeAdmin, env: &[(&str, &str)], args: &[&str]) -> Out {
    let out = run(
        tandem_at(fake)
            .envs(env.iter().copied())
            .args(args)
            .arg("true"),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{}", out.dump_with(&[fake]));
    out
}

/// Asserts the run logged nothing at all.
fn assert_silent(out: &Out) {
    assert!(
        out.stderr.is_empty(),
        "expected no log lines\n{}",
        out.dump()
    );
}

/// Asserts the run logged info lines (its "ready" line).
fn assert_info_shown(out: &Out) {
    assert!(
        out.stderr.contains("ready"),
        "no info lines\n{}",
        out.dump()
    );
}

#[test]
fn scuttle_logging_false_silences_info_but_not_warnings() {
    let fake = start(Script::envoy());
    assert_silent(&run_true(&fake, &[("SCUTTLE_LOGGING", "false")], &[]));

    let failing = run(
        eventful(&fake, &[]).env("SCUTTLE_LOGGING", "false"),
        RUN_TIMEOUT,
    );
    assert_eq!(failing.code, Some(3), "{}", failing.dump());
    assert!(
        !failing.stderr.is_empty(),
        "the failed quit was not logged\n{}",
        failing.dump()
    );
    for line in failing.stderr.lines() {
        assert!(
            line.contains(" tandem: warning: ") || line.contains(" tandem: error: "),
            "an info line despite SCUTTLE_LOGGING=false: {line:?}\n{}",
            failing.dump()
        );
    }
}

#[test]
fn envoy_preflight_logging_false_silences_info() {
    let fake = start(Script::envoy());
    assert_silent(&run_true(
        &fake,
        &[("ENVOY_PREFLIGHT_LOGGING", "false")],
        &[],
    ));
}

#[test]
fn log_off_prints_nothing() {
    let fake = start(Script::envoy().ready_after_polls(2));
    assert_silent(&run_true(&fake, &[], &["--log", "off"]));

    let out = run(&mut eventful(&fake, &["--log", "off"]), RUN_TIMEOUT);
    assert_eq!(out.code, Some(3), "{}", out.dump());
    assert_silent(&out);
}

#[test]
fn tandem_log_beats_scuttle_logging() {
    let fake = start(Script::envoy());
    let env = [("SCUTTLE_LOGGING", "false"), ("TANDEM_LOG", "info")];
    assert_info_shown(&run_true(&fake, &env, &[]));
    let env = [("SCUTTLE_LOGGING", "true"), ("TANDEM_LOG", "off")];
    assert_silent(&run_true(&fake, &env, &[]));
}

#[test]
fn envoy_preflight_logging_beats_scuttle_logging() {
    let fake = start(Script::envoy());
    let env = [
        ("SCUTTLE_LOGGING", "true"),
        ("ENVOY_PREFLIGHT_LOGGING", "false"),
    ];
    assert_silent(&run_true(&fake, &env, &[]));
}

#[test]
fn log_option_beats_tandem_log() {
    let fake = start(Script::envoy());
    assert_info_shown(&run_true(
        &fake,
        &[("TANDEM_LOG", "off")],
        &["--log", "info"],
    ));
}

#[test]
fn debug_level_adds_lines_that_info_does_not_show() {
    let fake = start(Script::envoy().ready_after_polls(3));
    let info = run(eventful(&fake, &[]).env("TANDEM_LOG", "info"), RUN_TIMEOUT);
    let fake = start(Script::envoy().ready_after_polls(3));
    let debug = run(eventful(&fake, &[]).env("TANDEM_LOG", "debug"), RUN_TIMEOUT);
    assert!(
        debug.stderr.lines().count() > info.stderr.lines().count(),
        "debug shows no more than info\n{}{}",
        info.dump(),
        debug.dump()
    );
}

#[test]
fn the_hand_written_checks_reject_malformed_lines() {
    let good = r#"{"ts":"2026-01-02T03:04:05.678Z","level":"info","msg":"a \"b\"\n","code":-3}"#;
    assert_eq!(
        check_json_line(good),
        Ok(("info".to_owned(), r#"a \"b\"\n"#.to_owned()))
    );
    for bad in [
        r#"{"ts":"2026-01-02T03:04:05.678Z","level":"info"}"#,
        r#"{"level":"info","ts":"2026-01-02T03:04:05.678Z","msg":"m"}"#,
        r#"{"ts":"2026-01-02 03:04:05","level":"info","msg":"m"}"#,
        r#"{"ts":"2026-01-02T03:04:05.678Z","level":"info","msg":"m",}"#,
        r#"{"ts":"2026-01-02T03:04:05.678Z","level":"info","msg":"m"#,
        "{\"ts\":\"2026-01-02T03:04:05.678Z\",\"level\":\"info\",\"msg\":\"a\nb\"}",
        r#"{"ts":"2026-01-02T03:04:05.678Z","level":"info","msg":"m","n":1.5}"#,
        r#"{"ts":"2026-01-02T03:04:05.678Z","level":"info","msg":"m\q"}"#,
    ] {
        assert!(check_json_line(bad).is_err(), "accepted {bad:?}");
    }
    assert!(has_shape("2026-01-02T03:04:05.678Z tandem: x", TEXT_PREFIX));
    assert!(!has_shape("2026-01-02T03:04:05Z tandem: x", TEXT_PREFIX));
    assert!(!has_shape("2026-01-02T03:04:05.678Z tandem:x", TEXT_PREFIX));
    assert_eq!(parse_timestamp("1970-01-01T00:00:00.000Z"), 0);
    assert_eq!(parse_timestamp("2000-03-01T00:00:01.500Z"), 951_868_801_500);
    assert_eq!(
        parse_timestamp("2024-02-29T23:59:59.999Z"),
        1_709_251_199_999
    );
}

#[test]
fn a_bad_value_is_reported_as_json_when_json_was_asked_for() {
    let out = run(
        tandem()
            .env("TANDEM_LOG_FORMAT", "json")
            .env("TANDEM_POLL_MAX", "0")
            .arg("true"),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(64), "{}", out.dump());
    let lines = assert_json_lines(&out);
    assert_eq!(lines.len(), 1, "{}", out.dump());
    assert!(out.stderr.contains("TANDEM_POLL_MAX"), "{}", out.dump());
}
