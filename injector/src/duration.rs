//! Durations on the injector's command line, in the syntax SPEC §2 gives every
//! duration (Go's `time.ParseDuration`: `500ms`, `10s`, `1m30s`, `1.5s`, a bare
//! `0`). The wrapper's parser lives in its own crate, which the injector does not
//! link; this one accepts the same syntax for the few settings the injector has.

use std::time::Duration;

/// What a duration looks like, for the error line.
pub const EXPECTED: &str = "a duration like 500ms, 10s or 1m30s";

/// Parses `s`; negative durations and surrounding blanks are refused, as in Go.
pub fn parse(s: &str) -> Result<Duration, &'static str> {
    let body = s.strip_prefix('+').unwrap_or(s);
    if body == "0" {
        return Ok(Duration::ZERO);
    }
    if body.is_empty() {
        return Err(EXPECTED);
    }
    let mut total = Duration::ZERO;
    let mut rest = body;
    while !rest.is_empty() {
        let (term, after) = term(rest).ok_or(EXPECTED)?;
        total = total.checked_add(term).ok_or(EXPECTED)?;
        rest = after;
    }
    Ok(total)
}

/// One `<number>[.<fraction>]<unit>` term and the rest of the text.
fn term(s: &str) -> Option<(Duration, &str)> {
    let number_len = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (number, rest) = s.split_at(number_len);
    if number.is_empty() || number == "." || number.matches('.').count() > 1 {
        return None;
    }
    let unit_len = rest
        .find(|c: char| c.is_ascii_digit() || c == '.')
        .unwrap_or(rest.len());
    let (unit, rest) = rest.split_at(unit_len);
    let nanos: f64 = match unit {
        "ns" => 1.0,
        "us" | "\u{b5}s" | "\u{3bc}s" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" => 60e9,
        "h" => 3600e9,
        _ => return None,
    };
    // Go's limit: an i64 of nanoseconds (about 292 years).
    let value = number.parse::<f64>().ok()? * nanos;
    (value.is_finite() && value <= i64::MAX as f64)
        .then(|| (Duration::from_nanos(value as u64), rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_are_read() {
        let ms = Duration::from_millis;
        for (text, want) in [
            ("0", ms(0)),
            ("10s", ms(10_000)),
            ("500ms", ms(500)),
            ("1m30s", ms(90_000)),
            ("1.5s", ms(1500)),
            ("+2s", ms(2000)),
            ("1h", ms(3_600_000)),
        ] {
            assert_eq!(parse(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn anything_else_is_refused() {
        for text in [
            "", "10", "-1s", " 1s", "1s ", "s", ".s", "1..2s", "1x", "1e3s", "0s0", "9999999h",
        ] {
            assert_eq!(parse(text), Err(EXPECTED), "{text:?}");
        }
    }
}
