//! The time on log lines: now, in UTC, as `2026-01-02T03:04:05.678Z` (SPEC §8),
//! with the Gregorian calendar computed here rather than by a date library.

use std::time::{SystemTime, UNIX_EPOCH};

const MILLIS_PER_DAY: u64 = 86_400_000;
/// The Gregorian calendar repeats every 400 years, and those are always this many days.
const DAYS_PER_400_YEARS: u64 = 146_097;

/// The current time as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC). A clock set before
/// 1970 reads as the epoch.
pub fn now_utc() -> String {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    format_millis(u64::try_from(since_epoch.as_millis()).unwrap_or(u64::MAX))
}

/// Formats milliseconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC).
fn format_millis(millis: u64) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_millis_table() {
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
            assert_eq!(format_millis(millis), want, "millis {millis}");
        }
        assert!(format_millis(u64::MAX).ends_with('Z'));
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
    fn now_is_a_timestamp_after_2024() {
        let now = now_utc();
        assert_eq!(now.len(), "2026-01-02T03:04:05.678Z".len(), "{now}");
        assert!(now.as_str() > "2024", "{now}");
    }
}
