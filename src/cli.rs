//! Command-line parsing: one lexopt loop turns the arguments into a raw `Cli`,
//! flags as given. Values are validated later, in `config`, beside the variables.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::error::Error;

/// What tandem was asked to do.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Wait, run COMMAND with ARGS, quit, exit with its status.
    Run(OsString, Vec<OsString>),
    /// Wait for the sidecars, then exit; never send quits.
    WaitOnly,
    /// Send the quit requests now, then exit 0.
    QuitOnly,
    /// Copy this binary to DIR/tandem.
    InstallTo(PathBuf),
    /// Print usage to stdout.
    Help,
    /// Print the version to stdout.
    Version,
}

/// The command line as given: option values are still raw strings.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Cli {
    /// `--admin URL`
    pub admin: Option<OsString>,
    /// `--no-wait`
    pub no_wait: bool,
    /// `--wait-timeout DUR`
    pub wait_timeout: Option<OsString>,
    /// `--fail-timeout DUR`
    pub fail_timeout: Option<OsString>,
    /// `--istio-quit URL`
    pub istio_quit: Option<OsString>,
    /// `--envoy-quit URL`
    pub envoy_quit: Option<OsString>,
    /// `--quit URL`, repeatable.
    pub quit: Vec<OsString>,
    /// `--generic-quit-only`
    pub generic_quit_only: bool,
    /// `--quit-timeout DUR`
    pub quit_timeout: Option<OsString>,
    /// `--never-quit`
    pub never_quit: bool,
    /// `--keep-on-failure`
    pub keep_on_failure: bool,
    /// `--log LEVEL`
    pub log: Option<OsString>,
    /// `--log-format text|json`
    pub log_format: Option<OsString>,
    /// `--ready URL`, repeatable.
    pub ready: Vec<OsString>,
    /// `--mesh NAME[,NAME]`, repeatable.
    pub mesh: Vec<OsString>,
    /// `--poll-max DUR`
    pub poll_max: Option<OsString>,
    /// `--forward-to child|group`
    pub forward_to: Option<OsString>,
    /// The mode; `None` when neither a COMMAND nor a mode flag was given.
    pub mode: Option<Mode>,
}

/// Parses the arguments after the program name (SPEC §1).
pub(crate) fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Cli, Error> {
    parse_lexopt(lexopt::Parser::from_args(args)).map_err(|e| Error::Usage(e.to_string()))
}

fn parse_lexopt(mut parser: lexopt::Parser) -> Result<Cli, lexopt::Error> {
    use lexopt::prelude::*;
    let mut cli = Cli::default();
    let mut mode_flag: Option<Mode> = None;
    while let Some(arg) = parser.next()? {
        match arg {
            Long("admin") => cli.admin = Some(parser.value()?),
            Long("no-wait") => cli.no_wait = true,
            Long("wait-timeout") => cli.wait_timeout = Some(parser.value()?),
            Long("fail-timeout") => cli.fail_timeout = Some(parser.value()?),
            Long("istio-quit") => cli.istio_quit = Some(parser.value()?),
            Long("envoy-quit") => cli.envoy_quit = Some(parser.value()?),
            Long("quit") => cli.quit.push(parser.value()?),
            Long("generic-quit-only") => cli.generic_quit_only = true,
            Long("quit-timeout") => cli.quit_timeout = Some(parser.value()?),
            Long("never-quit") => cli.never_quit = true,
            Long("keep-on-failure") => cli.keep_on_failure = true,
            Long("log") => cli.log = Some(parser.value()?),
            Long("log-format") => cli.log_format = Some(parser.value()?),
            Long("ready") => cli.ready.push(parser.value()?),
            Long("mesh") => cli.mesh.push(parser.value()?),
            Long("poll-max") => cli.poll_max = Some(parser.value()?),
            Long("forward-to") => cli.forward_to = Some(parser.value()?),
            Long("wait-only") => set_mode(&mut mode_flag, Mode::WaitOnly, "--wait-only")?,
            Long("quit-only") => set_mode(&mut mode_flag, Mode::QuitOnly, "--quit-only")?,
            Long("install-to") => {
                let dir = PathBuf::from(parser.value()?);
                set_mode(&mut mode_flag, Mode::InstallTo(dir), "--install-to")?
            }
            Short('h') | Long("help") => return Ok(only(cli, Mode::Help)),
            Short('V') | Long("version") => return Ok(only(cli, Mode::Version)),
            Value(command) => {
                // The first free argument starts COMMAND; the rest belongs to it untouched.
                let args: Vec<OsString> = parser.raw_args()?.collect();
                if let Some(mode) = mode_flag {
                    return Err(format!(
                        "{} takes no COMMAND, got {:?}",
                        mode_name(&mode),
                        command.to_string_lossy()
                    )
                    .into());
                }
                cli.mode = Some(Mode::Run(command, args));
                return Ok(cli);
            }
            _ => return Err(arg.unexpected()),
        }
    }
    cli.mode = mode_flag;
    Ok(cli)
}

fn only(mut cli: Cli, mode: Mode) -> Cli {
    cli.mode = Some(mode);
    cli
}

fn set_mode(slot: &mut Option<Mode>, mode: Mode, name: &str) -> Result<(), lexopt::Error> {
    if let Some(previous) = slot {
        return Err(format!("{name} cannot be combined with {}", mode_name(previous)).into());
    }
    *slot = Some(mode);
    Ok(())
}

fn mode_name(mode: &Mode) -> &'static str {
    match mode {
        Mode::WaitOnly => "--wait-only",
        Mode::QuitOnly => "--quit-only",
        Mode::InstallTo(_) => "--install-to",
        Mode::Help => "--help",
        Mode::Version => "--version",
        Mode::Run(..) => "COMMAND",
    }
}

/// The `--version` line: the version and the commit built from (build.rs).
pub(crate) fn version() -> String {
    format!(
        "tandem {} (commit {})\n",
        env!("CARGO_PKG_VERSION"),
        env!("TANDEM_COMMIT")
    )
}

/// The `--help` text: every option beside its environment variable.
pub(crate) const HELP: &str = "\
tandem: wait for the sidecars, run COMMAND, quit the sidecars, exit with COMMAND's status

Usage:
  tandem [OPTIONS] [--] COMMAND [ARGS...]
  tandem [OPTIONS] --wait-only      wait for the sidecars, then exit
  tandem [OPTIONS] --quit-only      send the quit requests now, then exit 0
  tandem --install-to DIR           copy this binary to DIR/tandem
  tandem --help | --version

Options (environment variable in brackets; an option overrides its variable):
  --admin URL           Envoy admin URL; wait for it, stop it if local [ENVOY_ADMIN_API]
  --no-wait             do not wait for readiness [START_WITHOUT_ENVOY=true]
  --wait-timeout DUR    stop waiting after DUR and start anyway [WAIT_FOR_ENVOY_TIMEOUT]
  --fail-timeout DUR    stop waiting after DUR and exit 69 [QUIT_WITHOUT_ENVOY_TIMEOUT]
  --istio-quit URL      pilot-agent URL; POST URL/quitquitquit [ISTIO_QUIT_API]
  --envoy-quit URL      full URL to POST to stop plain Envoy [ENVOY_KILL_API]
  --quit URL            POST URL at the end; repeatable [GENERIC_QUIT_ENDPOINTS, comma-separated]
  --generic-quit-only   only POST the --quit URLs, never stop Istio/Envoy [GENERIC_QUIT_ONLY=true]
  --quit-timeout DUR    bound on the whole quit phase, default 5s [QUIT_REQUEST_TIMEOUT]
  --never-quit          never stop Istio/Envoy [NEVER_KILL_ISTIO=true, NEVER_KILL_ENVOY=true]
  --keep-on-failure     stop nothing after a failed run [NEVER_KILL_ISTIO_ON_FAILURE=true]
                        (ALWAYS_KILL_ENVOY=true is accepted; stopping after failure is the default)
  --log LEVEL           off, error, warn, info (default), debug; or true/false
                        [TANDEM_LOG, ENVOY_PREFLIGHT_LOGGING, SCUTTLE_LOGGING]
  --log-format FORMAT   text (default) or json [TANDEM_LOG_FORMAT]
  --ready URL           also wait for URL to answer 2xx; repeatable [TANDEM_READY_URLS, comma-separated]
  --mesh NAME[,NAME]    presets: istio, envoy, linkerd, cloudsql [TANDEM_MESH]
  --poll-max DUR        longest interval between readiness polls, default 250ms [TANDEM_POLL_MAX]
  --forward-to WHOM     relay signals to the child (default) or its process group [TANDEM_FORWARD_TO]

Durations: 300ms, 1.5s, 2m30s, 1h (Go syntax); 0 means no timeout.
Booleans: true/false, 1/0, yes/no.
Exit status: COMMAND's; 128+N if it was killed by signal N; 64 bad usage;
69 not ready within --fail-timeout; 126 not executable; 127 not found; 73 install failed.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(args: &str) -> Result<Cli, Error> {
        parse(args.split_whitespace().map(OsString::from))
    }

    fn run_mode(cli: &Cli) -> (String, Vec<String>) {
        match &cli.mode {
            Some(Mode::Run(cmd, args)) => (
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
        assert_eq!(cli.admin, Some("http://x".into()));
        let (cmd, args) = run_mode(&cli);
        assert_eq!(cmd, "python");
        assert_eq!(args, ["-m", "app", "--verbose", "--admin", "y"]);
    }

    #[test]
    fn double_dash_ends_options() {
        let cli = parse_str("--no-wait -- --weird-command -x").unwrap();
        assert!(cli.no_wait);
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
        assert_eq!(
            cli.quit,
            vec![OsString::from("http://a"), "http://b".into()]
        );
        assert_eq!(cli.ready, vec![OsString::from("http://r")]);
        assert_eq!(cli.mesh.len(), 2);
    }

    #[test]
    fn no_command_and_no_mode_leaves_mode_empty() {
        assert_eq!(parse_str("--admin http://x").unwrap().mode, None);
    }

    #[test]
    fn mode_flags() {
        assert_eq!(parse_str("--wait-only").unwrap().mode, Some(Mode::WaitOnly));
        assert_eq!(parse_str("--quit-only").unwrap().mode, Some(Mode::QuitOnly));
        assert_eq!(
            parse_str("--install-to /x").unwrap().mode,
            Some(Mode::InstallTo("/x".into()))
        );
        assert_eq!(
            parse_str("--admin x --help").unwrap().mode,
            Some(Mode::Help)
        );
        assert_eq!(parse_str("-V").unwrap().mode, Some(Mode::Version));
    }

    #[test]
    fn bad_invocations_are_usage_errors_naming_the_culprit() {
        for (args, needle) in [
            ("--bogus true", "--bogus"),
            ("--admin", "--admin"),
            ("--wait-only --quit-only", "--quit-only"),
            ("--wait-only true", "--wait-only"),
            ("-x", "-x"),
        ] {
            match parse_str(args) {
                Err(Error::Usage(msg)) => assert!(msg.contains(needle), "{args}: {msg}"),
                other => panic!("{args}: expected a usage error, got {other:?}"),
            }
        }
    }

    #[test]
    fn help_names_every_option() {
        for option in [
            "--admin",
            "--no-wait",
            "--wait-timeout",
            "--fail-timeout",
            "--istio-quit",
            "--envoy-quit",
            "--quit ",
            "--generic-quit-only",
            "--quit-timeout",
            "--never-quit",
            "--keep-on-failure",
            "--log ",
            "--log-format",
            "--ready",
            "--mesh",
            "--poll-max",
            "--forward-to",
            "--wait-only",
            "--quit-only",
            "--install-to",
        ] {
            assert!(HELP.contains(option), "help lacks {option}");
        }
    }
}
