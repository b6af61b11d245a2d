//! The documentation against the binary (issue: docs stay true): `--help` as
//! committed in `tests/snapshots/help.txt` and within 80 columns, and every option
//! and variable of the option table named in `--help` and in the README's
//! configuration table. (The other direction, that every option and variable the
//! README and `examples/k8s/` name is accepted, is `make manifests`: it runs the
//! binary with them.)
//!
//! After a deliberate change to `--help`: `SNAPSHOTS=overwrite cargo test docs::`.

use crate::support::{RUN_TIMEOUT, run, tandem};
use tandem::cli::help::HELP_WIDTH;
use tandem::cli::options::OPTIONS;
use tandem::config::peers;

/// The `--help` text, from the built binary.
fn help() -> String {
    let out = run(tandem().arg("--help"), RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump());
    out.stdout_str()
}

/// The README's `## Configuration` section, up to the next `## ` heading.
fn readme_configuration() -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("read README.md");
    let start = readme
        .find("\n## Configuration\n")
        .expect("README has a `## Configuration` section");
    let section = &readme[start + 1..];
    let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
    section[..end].to_owned()
}

/// Every variable tandem reads: those of the options, then those with no option.
fn variables() -> Vec<&'static str> {
    let mut vars: Vec<&str> = OPTIONS
        .iter()
        .flat_map(|spec| spec.vars.iter().copied())
        .collect();
    vars.push(peers::ALWAYS_KILL_ENVOY);
    vars
}

/// Whether `text` names `name` as a whole word: `--quit` in `--quit-only` or
/// `NEVER_KILL_ISTIO` in `NEVER_KILL_ISTIO_ON_FAILURE` does not count.
fn names(text: &str, name: &str) -> bool {
    let part_of_name = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(part_of_name) && !after.is_some_and(part_of_name)
    })
}

#[test]
fn help_is_the_committed_text() {
    snapbox::assert_data_eq!(help(), snapbox::file!["snapshots/help.txt"]);
}

#[test]
fn help_fits_80_columns() {
    let help = help();
    let wide: Vec<&str> = help
        .lines()
        .filter(|line| line.chars().count() > HELP_WIDTH)
        .collect();
    assert!(
        wide.is_empty(),
        "--help lines over {HELP_WIDTH} columns: {wide:#?}"
    );
}

#[test]
fn help_names_every_option_and_variable_of_the_table() {
    let help = help();
    let missing: Vec<&str> = OPTIONS
        .iter()
        .map(|spec| spec.name)
        .chain(variables())
        .filter(|name| !names(&help, name))
        .collect();
    assert!(missing.is_empty(), "--help lacks {missing:?}\n{help}");
}

/// The peers' variables that no option names: honoured ones, then those accepted
/// with a warning (SPEC §2: the README lists each one).
fn compat_variables() -> Vec<&'static str> {
    let mut vars = peers::HONOURED.to_vec();
    vars.extend(peers::NO_EFFECT.iter().map(|item| item.var));
    vars
}

#[test]
fn readme_configuration_names_every_option_and_variable() {
    let section = readme_configuration();
    let missing: Vec<&str> = OPTIONS
        .iter()
        .map(|spec| spec.name)
        .chain(variables())
        .chain(compat_variables())
        .filter(|name| !names(&section, name))
        .collect();
    assert!(
        missing.is_empty(),
        "README's configuration section lacks {missing:?}"
    );
}
