//! The command line (SPEC §1, §2): one lexopt loop, driven by the `options`
//! table, turns the arguments into a raw `Cli`: the options as given, and the one
//! `Task` they ask for. Values are validated later, in `config`, beside the
//! variables. `help` renders `--help` and `--version`; `linkerd_await` translates
//! linkerd-await's command line into tandem's; `compose_wait` is
//! docker-compose-wait's usage, under the name `wait`.

pub mod compose_wait;
pub mod help;
pub mod linkerd_await;
pub mod options;

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::config;
use crate::exit::{self, Error};
use crate::termination_message::Target;
use options::{Kind, Spec};

/// What tandem does, as the command line asks (SPEC §1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Task {
    /// Wait, run COMMAND with ARGS, quit, exit with its status.
    Run(OsString, Vec<OsString>),
    /// `--wait-only`: wait for the sidecars, then exit; never send quits.
    WaitOnly,
    /// `--quit-only`: send the quit requests now, then exit 0.
    QuitOnly,
    /// `--install-to DIR`: copy this binary to DIR/tandem.
    InstallTo(PathBuf),
    /// `--help`: print the usage to stdout.
    Help,
    /// `--version`: print the version to stdout.
    Version,
    /// Neither a COMMAND nor a task option: a usage error.
    NoCommand,
}

/// The name tandem was invoked under, where a peer's usage comes with it (SPEC §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvokedAs {
    /// tandem's own (any name but the two below).
    Tandem,
    /// `linkerd-await`: its command line, translated (`linkerd_await`).
    LinkerdAwait,
    /// `wait`: docker-compose-wait's usage (`compose_wait`), its 30 s default
    /// timeout and `WAIT_COMMAND` with it.
    Wait,
}

/// The command line as given: option values are still raw strings.
#[derive(Debug, PartialEq, Eq)]
pub struct Cli {
    /// Each option as given, in order, by its table name; flags have no value.
    given: Vec<(&'static str, Option<OsString>)>,
    /// What to do.
    pub task: Task,
    /// Under which usage the arguments were read.
    pub invoked_as: InvokedAs,
}

impl Cli {
    /// No options and no task: what is known when the arguments did not parse.
    pub fn empty() -> Cli {
        Cli {
            given: Vec::new(),
            task: Task::NoCommand,
            invoked_as: InvokedAs::Tandem,
        }
    }

    /// tandem's own command line: `given` options, then `task`.
    fn new(given: Vec<(&'static str, Option<OsString>)>, task: Task) -> Cli {
        Cli {
            given,
            task,
            invoked_as: InvokedAs::Tandem,
        }
    }

    /// Whether the flag `spec` was given.
    pub fn flag(&self, spec: &Spec) -> bool {
        self.given.iter().any(|(name, _)| *name == spec.name)
    }

    /// The value of `spec` given last, if any.
    pub fn value(&self, spec: &Spec) -> Option<&OsString> {
        self.values(spec).last()
    }

    /// Every value given for `spec`, in order.
    pub fn values(&self, spec: &Spec) -> impl Iterator<Item = &OsString> {
        let wanted = spec.name;
        self.given
            .iter()
            .filter(move |(name, _)| *name == wanted)
            .filter_map(|(_, value)| value.as_ref())
    }
}

/// Reads the process's arguments, the program name first: linkerd-await's command
/// line or docker-compose-wait's usage when invoked by that name (SPEC §2),
/// tandem's otherwise.
pub fn read(mut args: impl Iterator<Item = OsString>) -> Result<Cli, Error> {
    let argv0 = args.next();
    if linkerd_await::invoked_as(argv0.as_deref()) {
        linkerd_await::parse(args)
    } else if compose_wait::invoked_as(argv0.as_deref()) {
        compose_wait::parse(args, &config::env)
    } else {
        parse(args)
    }
}

/// Neither a COMMAND nor a task option: the error, told as any failure is (to
/// the termination message `told`), then the usage on stderr; exit 64 (SPEC §1).
pub fn no_command(told: &Target) -> ExitCode {
    let exit = exit::fail(&Error::Usage("no COMMAND given (try --help)".into()), told);
    let _ = std::io::stderr().write_all(help::help().as_bytes());
    exit
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(args: &str) -> Result<Cli, Error> {
        parse(args.split_whitespace().map(OsString::from))
    }

    fn run_mode(cli: &Cli) -> (String, Vec<String>) {
        match &cli.task {
            Task::Run(cmd, args) => (
                cmd.to_string_lossy().into_owned(),
                args.iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect(),
            ),
            other => panic!("expected Run, got {other:?}"),
        }
    }

    #[test]
    fn first_free_argument_starts_the_command_and_keeps_its_flags() {
        let cli = parse_str("--admin http://x python -m app --verbose --admin y").unwrap();
        assert_eq!(cli.value(&options::ADMIN), Some(&"http://x".into()));
        let (cmd, args) = run_mode(&cli);
        assert_eq!(cmd, "python");
        assert_eq!(args, ["-m", "app", "--verbose", "--admin", "y"]);
    }

    #[test]
    fn double_dash_ends_options() {
        let cli = parse_str("--no-wait -- --weird-command -x").unwrap();
        assert!(cli.flag(&options::NO_WAIT));
        let (cmd, args) = run_mode(&cli);
        assert_eq!(cmd, "--weird-command");
        assert_eq!(args, ["-x"]);
    }

    #[test]
    fn equals_form_and_repeatable_options() {
        let cli = parse_str(
            "--quit=http://a --quit http://b --ready http://r --mesh istio --mesh linkerd true",
        )
        .unwrap();
        let quit: Vec<_> = cli.values(&options::QUIT).collect();
        assert_eq!(quit, ["http://a", "http://b"]);
        let ready: Vec<_> = cli.values(&options::READY).collect();
        assert_eq!(ready, ["http://r"]);
        assert_eq!(cli.values(&options::MESH).count(), 2);
        assert!(!cli.flag(&options::NO_WAIT));
        assert_eq!(cli.value(&options::ADMIN), None);
    }

    #[test]
    fn no_command_and_no_task_leaves_the_task_missing() {
        assert_eq!(parse_str("--admin http://x").unwrap().task, Task::NoCommand);
    }

    #[test]
    fn task_options() {
        let task = |args| parse_str(args).unwrap().task;
        assert_eq!(task("--wait-only"), Task::WaitOnly);
        assert_eq!(task("--quit-only"), Task::QuitOnly);
        assert_eq!(task("--install-to /x"), Task::InstallTo("/x".into()));
        assert_eq!(task("--admin x --help"), Task::Help);
        assert_eq!(task("--wait-only -h --bogus"), Task::Help);
        assert_eq!(task("-V"), Task::Version);
    }

    #[test]
    fn bad_invocations_are_usage_errors_naming_the_culprit() {
        for (args, needle) in [
            ("--bogus true", "--bogus"),
            ("--admin", "--admin"),
            (
                "--wait-only --quit-only",
                "--quit-only cannot be combined with --wait-only",
            ),
            ("--install-to", "--install-to"),
            ("--wait-only true", "--wait-only takes no COMMAND"),
            ("-x", "-x"),
        ] {
            match parse_str(args) {
                Err(Error::Usage(msg)) => assert!(msg.contains(needle), "{args}: {msg}"),
                other => panic!("{args}: expected a usage error, got {other:?}"),
            }
        }
    }
}
