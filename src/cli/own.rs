//! tandem's own command line (SPEC §1): one lexopt loop, driven by the `options`
//! table, turns the arguments into a raw `Cli`.

use std::ffi::OsString;
use std::path::PathBuf;

use super::args::Cli;
use super::options::{self, Kind};
use super::task::Task;
use crate::exit::Error;

/// Parses the arguments after the program name (SPEC §1).
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Cli, Error> {
    parse_lexopt(lexopt::Parser::from_args(args)).map_err(|e| Error::Usage(e.to_string()))
}

fn parse_lexopt(mut parser: lexopt::Parser) -> Result<Cli, lexopt::Error> {
    use lexopt::prelude::*;
    let mut given = Vec::new();
    // The task option given so far, by name: only one is allowed.
    let mut chosen: Option<(&'static str, Task)> = None;
    while let Some(arg) = parser.next()? {
        let spec = match &arg {
            Long(name) => options::find_long(name),
            Short(letter) => options::find_short(*letter),
            Value(_) => None,
        };
        match (arg, spec) {
            (Value(command), _) => {
                // The first free argument starts COMMAND; the rest belongs to it untouched.
                let args: Vec<OsString> = parser.raw_args()?.collect();
                if let Some((name, _)) = chosen {
                    let command = command.to_string_lossy();
                    return Err(format!("{name} takes no COMMAND, got {command:?}").into());
                }
                let task = Task::Run(command, args);
                return Ok(Cli::new(given, task));
            }
            (_, Some(spec)) => match spec.kind {
                Kind::Flag => given.push((spec.name, None)),
                Kind::Value | Kind::Repeated => given.push((spec.name, Some(parser.value()?))),
                Kind::Task(row) => match task(row, &mut parser)? {
                    // Help and version win over everything, even what follows.
                    task @ (Task::Help | Task::Version) => {
                        return Ok(Cli::new(given, task));
                    }
                    task => {
                        if let Some((previous, _)) = chosen {
                            let name = spec.name;
                            return Err(format!("{name} cannot be combined with {previous}").into());
                        }
                        chosen = Some((spec.name, task));
                    }
                },
            },
            (arg, None) => return Err(arg.unexpected()),
        }
    }
    let task = chosen.map_or(Task::NoCommand, |(_, task)| task);
    Ok(Cli::new(given, task))
}

/// The task of a task option's `row`, with its value where it takes one.
fn task(row: &Task, parser: &mut lexopt::Parser) -> Result<Task, lexopt::Error> {
    Ok(match row {
        Task::InstallTo(_) => Task::InstallTo(PathBuf::from(parser.value()?)),
        other => other.clone(),
    })
}
