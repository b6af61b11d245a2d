//! The one lexopt loop: each option's value into its row's field of
//! [`Given`], the command word noted; then the options the command does not
//! take refused, and the variables of those it takes read where no option was
//! given (the option wins; an empty variable is unset).

use std::ffi::OsString;

use super::options::{Command, Given, OPTIONS, Opt, Setting};

/// What the arguments ask for, before any value is checked.
pub(super) enum Read {
    /// A command with its settings.
    Command(Command, Box<Given>),
    /// `--help` or `-h`.
    Help,
    /// `--version` or `-V`.
    Version,
}

/// Reads `args` (without the program name) and, through `var`, the variables
/// of the options the command takes.
pub(super) fn read(
    args: impl IntoIterator<Item = OsString>,
    var: impl Fn(&str) -> Option<OsString>,
) -> Result<Read, String> {
    let mut given = Given::default();
    let mut command = None;
    let mut parser = lexopt::Parser::from_args(args);
    while let Some(arg) = parser.next().map_err(|e| format!("{e} (see --help)"))? {
        match arg {
            lexopt::Arg::Long("help") | lexopt::Arg::Short('h') => return Ok(Read::Help),
            lexopt::Arg::Long("version") | lexopt::Arg::Short('V') => return Ok(Read::Version),
            lexopt::Arg::Long(name) => {
                let row = row(name)?;
                let value = parser.value().map_err(|e| format!("{}: {e}", row.flag))?;
                let from = row.flag.to_string();
                *(row.field)(&mut given) = Some(Setting { from, value });
            }
            lexopt::Arg::Value(ref word) if command.is_none() => match named(word) {
                Some(named) => command = Some(named),
                None => return Err(format!("{} (see --help)", arg.unexpected())),
            },
            lexopt::Arg::Value(word)
                if command.is_some_and(Command::takes_file) && given.input.is_none() =>
            {
                given.input = Some(word);
            }
            other => return Err(format!("{} (see --help)", other.unexpected())),
        }
    }
    let command = command.unwrap_or(Command::Serve);
    refuse_others(command, &mut given)?;
    for row in OPTIONS.iter().filter(|row| row.commands.contains(&command)) {
        let field = (row.field)(&mut given);
        if field.is_none() {
            *field = var(row.var).filter(|v| !v.is_empty()).map(|value| Setting {
                from: row.var.to_string(),
                value,
            });
        }
    }
    Ok(Read::Command(command, Box::new(given)))
}

/// The row of `--name`.
fn row(name: &str) -> Result<&'static Opt, String> {
    OPTIONS
        .iter()
        .copied()
        .find(|o| o.flag[2..] == *name)
        .ok_or_else(|| format!("unknown option --{name} (see --help)"))
}

/// The command a free word names, if any.
fn named(word: &OsString) -> Option<Command> {
    Command::NAMED
        .iter()
        .find(|(name, _)| word == name)
        .map(|(_, command)| *command)
}

/// The first option given that `command` does not take, as an error line
/// naming those it does.
fn refuse_others(command: Command, given: &mut Given) -> Result<(), String> {
    let Some(row) = OPTIONS
        .iter()
        .find(|row| !row.commands.contains(&command) && (row.field)(given).is_some())
    else {
        return Ok(());
    };
    let takes: Vec<&str> = OPTIONS
        .iter()
        .filter(|row| row.commands.contains(&command))
        .map(|row| row.flag)
        .collect();
    Err(format!(
        "{} is not an option of {}, which takes {} (see --help)",
        row.flag,
        command.word(),
        takes.join(" and ")
    ))
}
