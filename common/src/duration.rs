//! Durations (SPEC §2): Go's `time.ParseDuration` syntax, as scuttle reads them,
//! the whole seconds of scuttle's integer sleeps, and how the log writes one. Each
//! parser says what it expected; the caller adds the variable or option name.

use std::time::Duration;

/// What a duration looks like, for the error line.
pub const EXPECTED_DURATION: &str = "a duration like 300ms, 1.5s or 2m30s";
/// What whole seconds look like, for the error line.
pub const EXPECTED_SECONDS: &str = "whole seconds, 0 or more";

/// Go's `time.Duration` is an `i64` of nanoseconds; values it cannot hold are
/// rejected here too, so a setting means the same thing under scuttle and tandem.
const MAX_NANOS: u64 = i64::MAX as u64;

/// Beyond this many fraction digits, more precision than a nanosecond of an hour
/// is meaningless, and stopping keeps the scale from overflowing.
const MAX_FRACTION_SCALE: u64 = 10_u64.pow(18);

/// Parses a Go `time.ParseDuration` string (`300ms`, `1.5s`, `2m30s`, `10µs`, bare `0`).
///
/// SPEC §2: negative durations are errors. Any leading `-` is refused, even in
/// `-0`, so that the rule needs no exception. Surrounding blanks are refused, as
/// Go refuses them. A fraction finer than a nanosecond is truncated, as in Go.
pub fn parse(s: &str) -> Result<Duration, &'static str> {
    let body = s.strip_prefix('+').unwrap_or(s);
    if body == "0" {
        return Ok(Duration::ZERO);
    }
    if body.is_empty() {
        return Err(EXPECTED_DURATION);
    }
    let mut total: u64 = 0;
    let mut rest = body;
    while !rest.is_empty() {
        let (nanos, after) = term(rest).ok_or(EXPECTED_DURATION)?;
        total = total
            .checked_add(nanos)
            .filter(|t| *t <= MAX_NANOS)
            .ok_or(EXPECTED_DURATION)?;
        rest = after;
    }
    Ok(Duration::from_nanos(total))
}

/// Parses one `<number>[.<fraction>]<unit>` term; returns its nanoseconds and the rest.
fn term(s: &str) -> Option<(u64, &str)> {
    let int_len = s.bytes().take_while(u8::is_ascii_digit).count();
    let (int_digits, rest) = s.split_at(int_len);
    let (frac_digits, rest) = match rest.strip_prefix('.') {
        Some(after_dot) => {
            let frac_len = after_dot.bytes().take_while(u8::is_ascii_digit).count();
            after_dot.split_at(frac_len)
        }
        None => ("", rest),
    };
    // Go accepts `.5s` and `1.s` but not a lone `.s`.
    if int_digits.is_empty() && frac_digits.is_empty() {
        return None;
    }
    let unit_len = rest
        .char_indices()
        .find(|(_, c)| *c == '.' || c.is_ascii_digit())
        .map_or(rest.len(), |(i, _)| i);
    let (unit, rest) = rest.split_at(unit_len);
    let unit_nanos = unit_nanos(unit)?;

    let mut whole: u64 = 0;
    for d in int_digits.bytes() {
        whole = whole.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    let mut frac: u64 = 0;
    let mut scale: u64 = 1;
    for d in frac_digits.bytes() {
        if scale >= MAX_FRACTION_SCALE {
            break;
        }
        frac = frac * 10 + u64::from(d - b'0');
        scale *= 10;
    }
    let whole_nanos = whole.checked_mul(unit_nanos)?;
    // u128 because frac * unit can exceed u64 before the division brings it back.
    let frac_nanos =
        u64::try_from(u128::from(frac) * u128::from(unit_nanos) / u128::from(scale)).ok()?;
    let nanos = whole_nanos.checked_add(frac_nanos)?;
    (nanos <= MAX_NANOS).then_some((nanos, rest))
}

/// Nanoseconds in one Go duration unit; both micro signs are accepted, as in Go.
fn unit_nanos(unit: &str) -> Option<u64> {
    match unit {
        "ns" => Some(1),
        "us" | "\u{b5}s" | "\u{3bc}s" => Some(1_000),
        "ms" => Some(1_000_000),
        "s" => Some(1_000_000_000),
        "m" => Some(60 * 1_000_000_000),
        "h" => Some(3_600 * 1_000_000_000),
        _ => None,
    }
}

/// A duration for the log: `850ms`, `1.2s`, `2m5.0s` (whole tenths, rounded down).
pub fn format(d: Duration) -> String {
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

/// Parses whole seconds, 0 or more, as scuttle's integer sleeps take them.
pub fn parse_seconds(s: &str) -> Result<u64, &'static str> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(EXPECTED_SECONDS);
    }
    s.parse().map_err(|_| EXPECTED_SECONDS)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;

    #[test]
    fn parse_duration_accepts_go_syntax() {
        let cases: &[(&str, u64)] = &[
            ("0", 0),
            ("+0", 0),
            ("0s", 0),
            ("00s", 0),
            ("300ms", 300 * MS),
            ("1.5s", 1_500 * MS),
            ("2m30s", 150 * S),
            ("1h", 3_600 * S),
            ("1h2m3s4ms5us6ns", 3_723 * S + 4 * MS + 5_000 + 6),
            ("10us", 10_000),
            ("10\u{b5}s", 10_000),
            ("10\u{3bc}s", 10_000),
            ("10ns", 10),
            (".5s", 500 * MS),
            ("1.s", S),
            ("+5s", 5 * S),
            ("1.000000001s", S + 1),
            ("1.0000000019s", S + 1),
            ("0.1ns", 0),
            ("1.5h", 5_400 * S),
            ("3s3s", 6 * S),
            ("0.333333333333333333333333333s", 333_333_333),
            ("9223372036854775807ns", i64::MAX as u64),
            ("2562047h", 2_562_047 * 3_600 * S),
        ];
        for (input, nanos) in cases {
            assert_eq!(
                parse(input),
                Ok(Duration::from_nanos(*nanos)),
                "input {input:?}"
            );
        }
    }

    #[test]
    fn parse_duration_rejects_everything_else() {
        let cases = [
            "",
            "+",
            "-",
            "-0",
            "-1s",
            "-0s",
            "5",
            "00",
            "5x",
            "5S",
            "5 s",
            " 5s",
            "5s ",
            ".",
            ".s",
            "s",
            "1.5",
            "1..5s",
            "1s5",
            "++1s",
            "1e3s",
            "0x10s",
            "5µ",
            "5\u{3bc}",
            "\u{b5}s",
            "1\u{1f600}",
            "1sé",
            "9223372036854775808ns",
            "2562048h",
            "99999999999999999999999s",
            "18446744073709551616ns",
            "9223372036s9223372036s",
        ];
        for input in cases {
            assert_eq!(parse(input), Err(EXPECTED_DURATION), "input {input:?}");
        }
    }

    #[test]
    fn parse_duration_never_panics_on_odd_bytes() {
        let alphabet = [
            "0", "1", "9", ".", "+", "-", "s", "m", "h", "µ", "μ", "é", "n", "u", " ",
        ];
        for a in alphabet {
            for b in alphabet {
                for c in alphabet {
                    let _ = parse(&format!("{a}{b}{c}"));
                }
            }
        }
    }

    #[test]
    fn format_duration_rounds_down_to_tenths() {
        for (ms, text) in [
            (0, "0ms"),
            (999, "999ms"),
            (1000, "1.0s"),
            (1234, "1.2s"),
            (59_999, "59.9s"),
            (60_000, "1m0.0s"),
            (125_050, "2m5.0s"),
        ] {
            assert_eq!(format(Duration::from_millis(ms)), text, "{ms} ms");
        }
    }
}
