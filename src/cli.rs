//! The command line (SPEC §1, §2): `read` picks the usage the program name asks
//! for, which turns the arguments into a raw `Cli` (`args`): the options as
//! given, and the one `Task` (`task`) they ask for. Values are validated later,
//! in `config`, beside the variables. `own` is tandem's lexopt loop, driven by
//! the `options` table (each row a `spec`); `peers` names the peers' variables
//! that have no option; `help` renders `--help` and `--version`; `linkerd_await`
//! translates linkerd-await's command line into tandem's; `compose_wait` is
//! docker-compose-wait's usage, under the name `wait`. No file here imports
//! `cli` itself or `config`: every arrow points down.

mod args;
pub mod compose_wait;
pub mod help;
pub mod linkerd_await;
pub mod options;
mod own;
pub mod peers;
mod spec;
mod task;

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use crate::exit::{self, Error};
pub use args::{Cli, InvokedAs};
pub use own::parse;
pub use task::Task;

/// Reads the process's arguments, the program name first: linkerd-await's command
/// line or docker-compose-wait's usage when invoked by that name (SPEC §2),
/// tandem's otherwise.
pub fn read(mut args: impl Iterator<Item = OsString>) -> Result<Cli, Error> {
    let argv0 = args.next();
    if linkerd_await::invoked_as(argv0.as_deref()) {
        linkerd_await::parse(args)
    } else if compose_wait::invoked_as(argv0.as_deref()) {
        compose_wait::parse(args, &|name| std::env::var_os(name))
    } else {
        parse(args)
    }
}

/// Neither a COMMAND nor a task option: the error, told as any failure is (in
/// the termination message too), then the usage on stderr; exit 64 (SPEC §1).
pub fn no_command() -> ExitCode {
    let exit = exit::fail(Error::Usage("no COMMAND given (try --help)".into()));
    let _ = std::io::stderr().write_all(help::help().as_bytes());
    exit
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
