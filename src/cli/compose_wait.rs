//! docker-compose-wait's usage (SPEC §2): installed or invoked as `wait`, tandem
//! takes no options. With no arguments it runs `WAIT_COMMAND` (split as a shell
//! would, without one) once ready, or only waits when that is unset too (`/wait &&
//! app`); arguments, if any, are the command itself. What to wait for and how long
//! are its variables (`WAIT_HOSTS`, `WAIT_PATHS`, `WAIT_TIMEOUT`…), which
//! `config` reads under every name.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use super::args::{Cli, InvokedAs};
use super::peers::WAIT_COMMAND;
use super::task::Task;
use crate::exit::Error;
use crate::value::words;

/// The name that selects this usage: docker-compose-wait's binary.
pub const NAME: &str = "wait";

/// True when `argv0` (the program name as invoked) is `wait`.
pub fn invoked_as(argv0: Option<&OsStr>) -> bool {
    argv0
        .and_then(|a| Path::new(a).file_name())
        .is_some_and(|name| name == NAME)
}

/// The task of `wait ARGS` (after the program name), with `env` for `WAIT_COMMAND`.
pub fn parse(
    args: impl IntoIterator<Item = OsString>,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Cli, Error> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    let first = args.first().and_then(|a| a.to_str());
    let task = match first {
        // The two questions every program answers; anything else is the command.
        Some("-h" | "--help") => Task::Help,
        Some("-V" | "--version") => Task::Version,
        _ => {
            if first == Some("--") {
                args.remove(0);
            }
            let from_env = env(WAIT_COMMAND).filter(|v| !v.to_string_lossy().trim().is_empty());
            match (args.is_empty(), from_env) {
                (false, Some(_)) => {
                    return Err(Error::Usage(format!(
                        "{NAME}: both arguments and {WAIT_COMMAND} name a command: keep one"
                    )));
                }
                (false, None) => Task::Run(args.remove(0), args),
                (true, Some(line)) => command(&line)?,
                (true, None) => Task::WaitOnly,
            }
        }
    };
    Ok(Cli {
        given: Vec::new(),
        task,
        invoked_as: InvokedAs::Wait,
    })
}

/// `WAIT_COMMAND` as docker-compose-wait splits it: words at blanks, quotes and
/// backslashes as a shell reads them, nothing expanded (`words`).
fn command(line: &OsStr) -> Result<Task, Error> {
    let bad = |expected: &str| {
        Error::Usage(format!(
            "invalid {WAIT_COMMAND} {:?}: expected {expected}",
            line.to_string_lossy()
        ))
    };
    let text = line.to_str().ok_or_else(|| bad("UTF-8 text"))?;
    let mut words = words::split(text)
        .map_err(bad)?
        .into_iter()
        .map(OsString::from);
    let program = words.next().ok_or_else(|| bad("a command"))?;
    Ok(Task::Run(program, words.collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(args: &[&str], wait_command: Option<&str>) -> Result<Task, Error> {
        let env = |name: &str| (name == WAIT_COMMAND).then(|| wait_command.map(OsString::from))?;
        parse(args.iter().map(OsString::from), &env).map(|cli| {
            assert_eq!(cli.invoked_as, InvokedAs::Wait);
            cli.task
        })
    }

    fn run(program: &str, args: &[&str]) -> Task {
        Task::Run(program.into(), args.iter().map(OsString::from).collect())
    }

    #[test]
    fn the_name_is_the_basename_of_argv0() {
        assert!(invoked_as(Some(OsStr::new("wait"))));
        assert!(invoked_as(Some(OsStr::new("/wait"))));
        assert!(!invoked_as(Some(OsStr::new("tandem"))));
        assert!(!invoked_as(Some(OsStr::new("wait4x"))));
        assert!(!invoked_as(None));
    }

    #[test]
    fn no_arguments_waits_or_runs_wait_command() {
        assert_eq!(task(&[], None).unwrap(), Task::WaitOnly);
        assert_eq!(task(&[], Some("  ")).unwrap(), Task::WaitOnly);
        assert_eq!(
            task(&[], Some("/myApp arg1 'arg two'")).unwrap(),
            run("/myApp", &["arg1", "arg two"])
        );
    }

    #[test]
    fn arguments_are_the_command_untouched() {
        assert_eq!(
            task(&["app", "-x", "--help"], None).unwrap(),
            run("app", &["-x", "--help"])
        );
        assert_eq!(task(&["--", "-app"], None).unwrap(), run("-app", &[]));
        assert_eq!(task(&["--help"], None).unwrap(), Task::Help);
        assert_eq!(task(&["-V"], Some("x")).unwrap(), Task::Version);
    }

    #[test]
    fn bad_usage_names_what_is_wrong() {
        for (args, env, needle) in [
            (
                &["app"][..],
                Some("other"),
                "both arguments and WAIT_COMMAND",
            ),
            (&[], Some("app 'open"), "invalid WAIT_COMMAND \"app 'open\""),
            (&[], Some("app \\"), "quotes closed"),
        ] {
            match task(args, env) {
                Err(Error::Usage(msg)) => assert!(msg.contains(needle), "{msg}"),
                other => panic!("{args:?} {env:?}: {other:?}"),
            }
        }
    }
}
