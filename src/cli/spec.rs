//! What a row of the option table (`options`) is: an option's name, what it
//! takes, its variables and its `--help` line.

use super::task::Task;

/// What an option takes and how often.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A switch: `--no-wait`.
    Flag,
    /// One value; given twice, the last wins: `--admin URL`.
    Value,
    /// One value each time, all kept in order: `--quit URL`.
    Repeated,
    /// Chooses what tandem does instead of running COMMAND.
    Task(&'static Task),
}

/// One row of the option table.
#[derive(Debug, PartialEq, Eq)]
pub struct Spec {
    /// The long name with its dashes: `--admin`.
    pub name: &'static str,
    /// A one-letter alias, if any: `-h`.
    pub short: Option<char>,
    /// What it takes.
    pub kind: Kind,
    /// The value's placeholder in `--help`: `URL`.
    pub value: &'static str,
    /// The environment variables it overrides, first found wins; empty for none.
    pub vars: &'static [&'static str],
    /// Its `--help` line after the placeholder; a `\n` continues it, indented.
    /// Empty for the tasks, which the usage block shows.
    pub help: &'static str,
}

impl Spec {
    /// A row with no short alias and no variables, to fill in with `..`.
    pub(super) const fn new(name: &'static str, kind: Kind) -> Spec {
        Spec {
            name,
            short: None,
            kind,
            value: "",
            vars: &[],
            help: "",
        }
    }
}
