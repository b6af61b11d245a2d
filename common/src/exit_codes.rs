//! Sets of exit statuses, 0 to 255 (SPEC §2 `TANDEM_KEEP_ON_EXIT`, §10 "Restart
//! in place"): the grammar the wrapper reads and the injector writes, in one
//! place. A value is codes and runs `A-B`, comma-separated (`1-255`, `42,43`);
//! the canonical writing is ascending, a run of two or more consecutive codes
//! as `A-B` and a lone code as itself, so two writers of the same set write the
//! same bytes.

use std::fmt;

/// What a value must look like, for error lines.
pub const EXPECTED: &str =
    "exit statuses 0-255 and runs A-B, comma-separated, such as 1-255 or 42,43";

/// A set of exit statuses: one bit a status.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct ExitCodes([u64; 4]);

impl ExitCodes {
    /// No status.
    pub const NONE: ExitCodes = ExitCodes([0; 4]);
    /// Every status, 0 to 255 (a container that restarts whatever its exit).
    pub const ALL: ExitCodes = ExitCodes([u64::MAX; 4]);
    /// Every non-zero status (`restartPolicy: OnFailure`, and
    /// `NEVER_KILL_ISTIO_ON_FAILURE=true`).
    pub const FAILURES: ExitCodes = ExitCodes([u64::MAX - 1, u64::MAX, u64::MAX, u64::MAX]);

    /// The statuses `low` to `high`, both included; none when `low > high`.
    pub fn run(low: u8, high: u8) -> ExitCodes {
        let mut set = ExitCodes::NONE;
        for code in low..=high {
            set.insert(code);
        }
        set
    }

    /// Adds `code`.
    pub fn insert(&mut self, code: u8) {
        self.0[usize::from(code / 64)] |= 1 << (code % 64);
    }

    /// Whether `code` is in the set.
    pub fn contains(self, code: u8) -> bool {
        self.0[usize::from(code / 64)] & (1 << (code % 64)) != 0
    }

    /// Whether the set has no status.
    pub fn is_empty(self) -> bool {
        self == ExitCodes::NONE
    }

    /// The statuses in either set.
    pub fn union(self, other: ExitCodes) -> ExitCodes {
        let mut words = self.0;
        for (word, more) in words.iter_mut().zip(other.0) {
            *word |= more;
        }
        ExitCodes(words)
    }

    /// Every status of 0–255 not in the set (a `NotIn` rule's).
    pub fn complement(self) -> ExitCodes {
        ExitCodes(self.0.map(|word| !word))
    }

    /// Reads a value; the error says which item is wrong, to follow
    /// "expected [`EXPECTED`]" in the caller's line.
    pub fn parse(text: &str) -> Result<ExitCodes, String> {
        let mut set = ExitCodes::NONE;
        for item in text.split(',') {
            let (low, high) = match item.split_once('-') {
                Some((low, high)) => (code(low, item)?, code(high, item)?),
                None => {
                    let one = code(item, item)?;
                    (one, one)
                }
            };
            if low > high {
                return Err(format!("the run {:?} goes down", item.trim()));
            }
            set = set.union(ExitCodes::run(low, high));
        }
        Ok(set)
    }

    /// The runs of consecutive statuses, ascending: `(first, last)`.
    pub fn runs(self) -> impl Iterator<Item = (u8, u8)> {
        let mut next = 0u16;
        std::iter::from_fn(move || {
            let first = (next..256).find(|&c| self.contains(c as u8))?;
            let end = (first..256)
                .find(|&c| !self.contains(c as u8))
                .unwrap_or(256);
            next = end;
            Some((first as u8, (end - 1) as u8))
        })
    }
}

/// One status of an item, blanks around it allowed; digits only (no sign).
fn code(text: &str, item: &str) -> Result<u8, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err(match item.trim() {
            "" => "an item is empty".to_string(),
            item => format!("{item:?} is missing a status"),
        });
    }
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{text:?} is not a status"));
    }
    text.parse::<u8>()
        .map_err(|_| format!("{text} is over 255"))
}

/// The canonical writing: `1-255`, `42-43`, `3,7-9`; nothing for no status.
impl fmt::Display for ExitCodes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (first, last)) in self.runs().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if first == last {
                write!(f, "{first}")?;
            } else {
                write!(f, "{first}-{last}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for ExitCodes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ExitCodes({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(text: &str) -> String {
        ExitCodes::parse(text)
            .map(|s| s.to_string())
            .unwrap_or_else(|e| format!("error: {e}"))
    }

    #[test]
    fn values_are_written_canonically() {
        for (given, written) in [
            ("1-255", "1-255"),
            ("0-255", "0-255"),
            ("42,43", "42-43"),
            ("43,42", "42-43"),
            ("2-255", "2-255"),
            ("9,3,8,7", "3,7-9"),
            ("3", "3"),
            ("0", "0"),
            ("255", "255"),
            (" 1 , 5 - 6 ", "1,5-6"),
            ("1-5,3,4-9", "1-9"),
            ("5-5", "5"),
            ("007", "7"),
            ("0,2,4", "0,2,4"),
            ("63,64,127,128,191,192", "63-64,127-128,191-192"),
        ] {
            assert_eq!(canonical(given), written, "{given:?}");
        }
    }

    #[test]
    fn bad_values_say_which_item_is_wrong() {
        for (given, says) in [
            ("", "an item is empty"),
            ("1,,2", "an item is empty"),
            ("1,", "an item is empty"),
            ("5-2", "the run \"5-2\" goes down"),
            ("256", "256 is over 255"),
            ("1-300", "300 is over 255"),
            ("true", "\"true\" is not a status"),
            ("+3", "\"+3\" is not a status"),
            ("-3", "\"-3\" is missing a status"),
            ("3-", "\"3-\" is missing a status"),
            ("1-2-3", "\"2-3\" is not a status"),
            ("4 2", "\"4 2\" is not a status"),
        ] {
            assert_eq!(canonical(given), format!("error: {says}"), "{given:?}");
        }
    }

    #[test]
    fn the_named_sets_are_what_their_values_say() {
        assert_eq!(ExitCodes::FAILURES.to_string(), "1-255");
        assert_eq!(ExitCodes::ALL.to_string(), "0-255");
        assert_eq!(ExitCodes::NONE.to_string(), "");
        assert!(ExitCodes::NONE.is_empty());
        assert!(!ExitCodes::FAILURES.contains(0) && ExitCodes::FAILURES.contains(255));
        assert_eq!(ExitCodes::run(3, 2), ExitCodes::NONE);
    }

    #[test]
    fn complement_and_union_cover_every_status_once() {
        let set = ExitCodes::parse("0,3,64-70,255").unwrap();
        assert_eq!(set.complement().to_string(), "1-2,4-63,71-254");
        assert_eq!(set.union(set.complement()), ExitCodes::ALL);
        assert_eq!(
            ExitCodes::parse("0").unwrap().complement(),
            ExitCodes::FAILURES
        );
        for code in 0..=255u8 {
            assert_ne!(
                set.contains(code),
                set.complement().contains(code),
                "{code}"
            );
        }
    }

    #[test]
    fn every_single_status_and_every_pair_round_trips() {
        for a in 0..=255u8 {
            let one = ExitCodes::run(a, a);
            assert_eq!(ExitCodes::parse(&one.to_string()), Ok(one));
            for b in [0u8, 1, 63, 64, 128, 254, 255] {
                let mut two = one;
                two.insert(b);
                assert_eq!(ExitCodes::parse(&two.to_string()), Ok(two), "{a},{b}");
            }
        }
    }
}
