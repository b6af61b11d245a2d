//! Variables named like tandem's that tandem does not read (SPEC §2): a typo such
//! as `TANDEM_MESHH` would otherwise vanish and the Job wait for nothing. Each gets
//! one warning naming it and, where one is close, the variable it probably meant;
//! the run goes on.

use std::ffi::OsString;

use crate::cli::options::OPTIONS;
use crate::cli::peers;
use tandem_common::vars::{INJECTOR_PREFIX, PREFIX};

/// `TANDEM_` variables that are not settings of the wrapper but are set around it,
/// so they reach its environment without being typos: the test harness's real
/// Envoy (`make unit` exports it to everything it runs), and what tandem gives its
/// own `--on-exit` program (SPEC §11), which may run another tandem.
const SET_AROUND: &[&str] = &[
    "TANDEM_TEST_ENVOY",
    "TANDEM_EXIT_CODE",
    "TANDEM_EXIT_SIGNAL",
];

/// One warning for each variable among `names` that starts with `TANDEM_` and is
/// not one tandem reads, in the environment's order.
pub fn warnings(names: impl IntoIterator<Item = OsString>) -> Vec<String> {
    let mut found = Vec::new();
    for name in names {
        let name = name.to_string_lossy();
        if !name.starts_with(PREFIX) || name.starts_with(INJECTOR_PREFIX) || is_known(&name) {
            continue;
        }
        found.push(match probably_meant(&name) {
            Some(meant) => format!("unknown variable {name} has no effect: did you mean {meant}?"),
            None => format!("unknown variable {name} has no effect"),
        });
    }
    found
}

/// Calls `visit` with every variable tandem reads, or that is set around it.
fn each_known(visit: &mut dyn FnMut(&'static str)) {
    for spec in OPTIONS {
        for &var in spec.vars {
            visit(var);
        }
    }
    for &var in peers::HONOURED.iter().chain(SET_AROUND) {
        visit(var);
    }
    for item in peers::NO_EFFECT {
        visit(item.var);
    }
}

fn is_known(name: &str) -> bool {
    let mut known = false;
    each_known(&mut |var| known |= var == name);
    known
}

/// The variable `name` most likely stands for: the nearest by edit distance (each
/// without `TANDEM_`, case ignored; a word more or less, as in `TANDEM_LOG_LEVEL` for
/// `TANDEM_LOG`, counts one) when it is within a third of its length (at least 1),
/// the first of equals. Besides every variable tandem reads, the name a user may
/// guess from an option counts (`--quit-timeout` as `TANDEM_QUIT_TIMEOUT`), and
/// suggests the option's real variable (`QUIT_REQUEST_TIMEOUT`).
fn probably_meant(name: &str) -> Option<&'static str> {
    let typed = name[PREFIX.len()..].to_ascii_uppercase();
    let typed = typed.as_bytes();
    let mut best: Option<(usize, &'static str)> = None;
    let mut consider = |key: &[u8], suggest: &'static str| {
        let edits = if word_apart(typed, key) || word_apart(key, typed) {
            1
        } else {
            distance(typed, key)
        };
        let close = edits <= (key.len() / 3).max(1);
        if close && best.is_none_or(|(fewest, _)| edits < fewest) {
            best = Some((edits, suggest));
        }
    };
    for spec in OPTIONS {
        let Some(&first) = spec.vars.first() else {
            continue;
        };
        let guessed: Vec<u8> = (spec.name.bytes().skip(2))
            .map(|b| {
                if b == b'-' {
                    b'_'
                } else {
                    b.to_ascii_uppercase()
                }
            })
            .collect();
        consider(&guessed, first);
    }
    each_known(&mut |var| consider(var.strip_prefix(PREFIX).unwrap_or(var).as_bytes(), var));
    best.map(|(_, suggest)| suggest)
}

/// Whether `longer` is `shorter` and one or more `_WORD`s (`LOG_LEVEL`, `LOG`).
fn word_apart(longer: &[u8], shorter: &[u8]) -> bool {
    !shorter.is_empty()
        && longer
            .strip_prefix(shorter)
            .is_some_and(|rest| rest.len() > 1 && rest[0] == b'_')
}

/// Edit distance between two names: insertions, deletions, substitutions and
/// swaps of two neighbours count one each.
fn distance(a: &[u8], b: &[u8]) -> usize {
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
        let d = |a: &str, b: &str| distance(a.as_bytes(), b.as_bytes());
        assert_eq!(d("MESH", "MESH"), 0);
        assert_eq!(d("MESHH", "MESH"), 1);
        assert_eq!(d("MSEH", "MESH"), 1);
        assert_eq!(d("LOGFORMAT", "LOG_FORMAT"), 1);
        assert_eq!(d("", "LOG"), 3);
        assert_eq!(d("FOO", "LOG"), 2);
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
                "unknown variable TANDEM_FOO has no effect",
                "unknown variable TANDEM_ has no effect",
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
}
