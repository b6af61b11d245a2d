//! Dates of the proleptic Gregorian calendar as days since 1970-01-01, for
//! whoever must turn a written UTC date into a point in time without a date
//! library: the injector's certificate `notAfter`, the wrapper's log tests.

/// Days from 1970-01-01 to `year`-`month`-`day` (negative before it), counted
/// in 400-year cycles of 146,097 days from a year that starts in March, so the
/// leap day is each counted year's last.
pub fn days_since_epoch(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let cycle = year.div_euclid(400);
    let year_of_cycle = year - cycle * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_cycle = year_of_cycle * 365 + year_of_cycle / 4 - year_of_cycle / 100 + day_of_year;
    // 719,468 days from 0000-03-01 to 1970-01-01.
    cycle * 146_097 + day_of_cycle - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_count_days_from_the_epoch_across_leap_years_and_centuries() {
        let cases = [
            ((1970, 1, 1), 0),
            ((1969, 12, 31), -1),
            ((1900, 3, 1), -25_508),
            ((2000, 2, 29), 11_016),
            ((2000, 3, 1), 11_017),
            ((2100, 3, 1), 47_541),
            ((2026, 11, 29), 20_786),
        ];
        for ((y, m, d), days) in cases {
            assert_eq!(days_since_epoch(y, m, d), days, "{y}-{m}-{d}");
        }
    }
}
