//! Variables named like tandem's that tandem does not read (SPEC §2): a typo such
//! as `TANDEM_MESHH` would otherwise vanish and the Job wait for nothing. Each gets
//! one warning naming it and, where one is close, the variable it probably meant;
//! the run goes on.

use std::ffi::OsString;

use super::peers;
use crate::cli::options::OPTIONS;

/// The prefix that marks a variable as tandem's.
const PREFIX: &str = "TANDEM_";

/// `TANDEM_` variables that are not settings of the wrapper but are set around it,
/// so they reach its environment without being typos: the test harness's real
/// Envoy (`make unit` exports it to everything it runs).
const SET_AROUND: &[&str] = &["TANDEM_TEST_ENVOY"];

/// tandem-injector's own settings (SPEC §10): a container that copies the
/// injector's environment has not mistyped anything.
const INJECTOR_PREFIX: &str = "TANDEM_INJECTOR_";

/// One warning for each variable among `names` that starts with `TANDEM_` and is
/// not one tandem reads, in name order.
pub fn warnings(names: impl IntoIterator<Item = OsString>) -> Vec<String> {
    let candidates = candidates();
    let mut unknown: Vec<String> = names
        .into_iter()
        .map(|name| name.to_string_lossy().into_owned())
        .filter(|name| name.starts_with(PREFIX) && !name.starts_with(INJECTOR_PREFIX))
        .filter(|name| !candidates.iter().any(|c| c.known && c.name == *name))
        .collect();
    unknown.sort();
    unknown.dedup();
    unknown
        .iter()
        .map(|name| match probably_meant(name, &candidates) {
            Some(meant) => {
                format!("unknown variable {name} has no effect: did you mean {meant}?")
            }
            None => format!("unknown variable {name} has no effect"),
        })
        .collect()
}

/// A name an unknown variable is compared with, and what to suggest when it is close.
struct Candidate {
    /// The name as written (a variable, or `TANDEM_` and an option's name).
    name: String,
    /// A variable tandem reads by exactly this name.
    known: bool,
    /// The variable to suggest.
    suggest: &'static str,
}

/// Every variable tandem reads, and for each option with a variable, the name a
/// user may guess from it (`--quit-timeout` as `TANDEM_QUIT_TIMEOUT`), which
/// suggests the option's real variable (`QUIT_REQUEST_TIMEOUT`).
fn candidates() -> Vec<Candidate> {
    let variable = |var: &'static str| Candidate {
        name: var.to_owned(),
        known: true,
        suggest: var,
    };
    let mut all = Vec::new();
    for spec in OPTIONS {
        all.extend(spec.vars.iter().map(|&var| variable(var)));
        if let Some(&first) = spec.vars.first() {
            let option = spec.name.trim_start_matches('-');
            all.push(Candidate {
                name: format!("{PREFIX}{}", option.to_ascii_uppercase().replace('-', "_")),
                known: false,
                suggest: first,
            });
        }
    }
    let peers = peers::NO_EFFECT.iter().map(|item| item.var);
    let others = peers::HONOURED.iter().copied().chain(peers);
    all.extend(others.chain(SET_AROUND.iter().copied()).map(variable));
    all
}

/// The variable `name` most likely stands for: the candidate nearest to it by edit
/// distance (each without `TANDEM_`, case ignored; a word more or less, as in
/// `TANDEM_LOG_LEVEL` for `TANDEM_LOG`, counts one), when it is within a third of
/// the candidate's length (at least 1); the first of equals wins.
fn probably_meant(name: &str, candidates: &[Candidate]) -> Option<&'static str> {
    let typed = name[PREFIX.len()..].to_ascii_uppercase();
    candidates
        .iter()
        .map(|c| {
            let key = c.name.strip_prefix(PREFIX).unwrap_or(&c.name);
            let edits = if word_apart(&typed, key) || word_apart(key, &typed) {
                1
            } else {
                distance(&typed, key)
            };
            (edits, key.len(), c.suggest)
        })
        .filter(|&(d, len, _)| d <= (len / 3).max(1))
        .min_by_key(|&(d, _, _)| d)
        .map(|(_, _, suggest)| suggest)
}

/// Whether `longer` is `shorter` and one or more `_WORD`s (`LOG_LEVEL`, `LOG`).
fn word_apart(longer: &str, shorter: &str) -> bool {
    !shorter.is_empty()
        && longer
            .strip_prefix(shorter)
            .is_some_and(|rest| rest.len() > 1 && rest.starts_with('_'))
}

/// Edit distance (insertions, deletions, substitutions and swaps of two
/// neighbours count one each) between two ASCII-ish names, by characters.
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // Three rows of the usual table: two rows back (for swaps), the last, this one.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut last: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut row = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            row[j] = (last[j] + 1).min(row[j - 1] + 1).min(last[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                row[j] = row[j].min(before[j - 2] + 1);
            }
        }
        before = std::mem::replace(&mut last, row);
    }
    last[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warn(names: &[&str]) -> Vec<String> {
        warnings(names.iter().map(OsString::from))
    }

    #[test]
    fn distances_count_each_edit_once() {
        assert_eq!(distance("MESH", "MESH"), 0);
        assert_eq!(distance("MESHH", "MESH"), 1);
        assert_eq!(distance("MSEH", "MESH"), 1);
        assert_eq!(distance("LOGFORMAT", "LOG_FORMAT"), 1);
        assert_eq!(distance("", "LOG"), 3);
        assert_eq!(distance("FOO", "LOG"), 2);
    }

    #[test]
    fn a_typo_is_warned_with_the_name_it_probably_meant() {
        assert_eq!(
            warn(&["TANDEM_MESHH"]),
            ["unknown variable TANDEM_MESHH has no effect: did you mean TANDEM_MESH?"]
        );
        let meant = |name| {
            let found = warn(&[name]);
            assert_eq!(found.len(), 1, "{name}: {found:?}");
            found[0]
                .rsplit_once("did you mean ")
                .map(|(_, m)| m.to_owned())
        };
        assert_eq!(
            meant("TANDEM_LOGFORMAT").as_deref(),
            Some("TANDEM_LOG_FORMAT?")
        );
        assert_eq!(
            meant("TANDEM_READY_URL").as_deref(),
            Some("TANDEM_READY_URLS?")
        );
        assert_eq!(meant("TANDEM_MSEH").as_deref(), Some("TANDEM_MESH?"));
        assert_eq!(meant("TANDEM_mesh").as_deref(), Some("TANDEM_MESH?"));
        assert_eq!(
            meant("TANDEM_SHARED_DIRS").as_deref(),
            Some("TANDEM_SHARED_DIR?")
        );
        // The name guessed from an option, and a peer's variable behind the prefix.
        assert_eq!(
            meant("TANDEM_QUIT_TIMEOUT").as_deref(),
            Some("QUIT_REQUEST_TIMEOUT?")
        );
        assert_eq!(meant("TANDEM_ADMIN").as_deref(), Some("ENVOY_ADMIN_API?"));
        assert_eq!(
            meant("TANDEM_ENVOY_ADMIN_API").as_deref(),
            Some("ENVOY_ADMIN_API?")
        );
        assert_eq!(meant("TANDEM_LOG_LEVEL").as_deref(), Some("TANDEM_LOG?"));
        assert_eq!(meant("TANDEM_READY").as_deref(), Some("TANDEM_READY_URLS?"));
    }

    #[test]
    fn a_name_close_to_nothing_is_warned_without_a_guess() {
        assert_eq!(
            warn(&["TANDEM_FOO", "TANDEM_", "TANDEM_XYZZY_PLUGH"]),
            [
                "unknown variable TANDEM_ has no effect",
                "unknown variable TANDEM_FOO has no effect",
                "unknown variable TANDEM_XYZZY_PLUGH has no effect",
            ]
        );
    }

    #[test]
    fn known_names_and_other_variables_are_never_warned() {
        let mut known: Vec<&str> = OPTIONS
            .iter()
            .flat_map(|s| s.vars.iter().copied())
            .collect();
        known.extend(peers::HONOURED);
        known.extend(peers::NO_EFFECT.iter().map(|item| item.var));
        known.extend([
            "TANDEM_JOB_CONTAINERS",
            "TANDEM_CONTAINER_NAME",
            "TANDEM_SHARED_DIR",
            "TANDEM_TEST_ENVOY",
            "TANDEM_INJECTOR_LISTEN",
            "TANDEM_INJECTOR_IMAGE",
            "PATH",
            "HOME",
            "tandem_mesh",
            "MY_TANDEM_MESH",
        ]);
        assert_eq!(warn(&known), Vec::<String>::new());
    }

    #[test]
    fn each_unknown_name_is_warned_once() {
        assert_eq!(warn(&["TANDEM_MESHH", "TANDEM_MESHH"]).len(), 1);
    }
}
