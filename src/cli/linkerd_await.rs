//! linkerd-await's command line (SPEC §2): installed or invoked as
//! `linkerd-await`, tandem reads `-p/--port`, `-b/--backoff`, `-t/--timeout`,
//! `--timeout-fatal[=BOOL]`, `-S/--shutdown`, `-v/--verbose`, `-- CMD ARGS` with
//! linkerd-await's meaning, by translating them into tandem's own options, so
//! everything after this (variables, exit codes, the relay) is tandem's.

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::time::Duration;

use super::args::{Cli, InvokedAs};
use super::own;
use crate::exit::Error;
use crate::value::{boolean, duration, url};

/// The name that selects this command line.
pub const NAME: &str = "linkerd-await";
/// linkerd-await's default admin port.
const DEFAULT_PORT: u16 = 4191;

/// True when `argv0` (the program name as invoked) is `linkerd-await`.
pub fn invoked_as(argv0: Option<&OsStr>) -> bool {
    argv0
        .and_then(|a| Path::new(a).file_name())
        .is_some_and(|name| name == NAME)
}

/// Parses linkerd-await's arguments (after the program name) into tandem's `Cli`.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Cli, Error> {
    let translated = translate(args)?;
    let mut cli = own::parse(translated)?;
    cli.invoked_as = InvokedAs::LinkerdAwait;
    Ok(cli)
}

/// linkerd-await's arguments as the tandem options that mean the same.
fn translate(args: impl IntoIterator<Item = OsString>) -> Result<Vec<OsString>, Error> {
    let mut given = Given {
        port: DEFAULT_PORT,
        backoff: None,
        timeout: None,
        fatal: true,
        shutdown: false,
        command: Vec::new(),
    };
    match given.read(args)? {
        Some(only) => Ok(vec![only.into()]),
        None => given.into_tandem(),
    }
}

/// linkerd-await's settings as given, with its defaults.
struct Given {
    port: u16,
    backoff: Option<Duration>,
    timeout: Option<Duration>,
    fatal: bool,
    shutdown: bool,
    command: Vec<OsString>,
}

impl Given {
    /// Reads linkerd-await's options into `self`, each value checked as
    /// linkerd-await would. `Some` is an option that stands alone: `--help` or
    /// `--version`.
    fn read(
        &mut self,
        args: impl IntoIterator<Item = OsString>,
    ) -> Result<Option<&'static str>, Error> {
        use lexopt::prelude::*;
        let usage = |e: lexopt::Error| Error::Usage(format!("{NAME}: {e}"));
        let mut parser = lexopt::Parser::from_args(args);
        while let Some(arg) = parser.next().map_err(usage)? {
            match arg {
                Short('p') | Long("port") => {
                    let value = text("--port", parser.value().map_err(usage)?)?;
                    self.port = url::parse_port_number(&value)
                        .map_err(|expected| invalid("--port", &value, expected))?;
                }
                Short('b') | Long("backoff") => {
                    self.backoff = Some(duration("--backoff", parser.value().map_err(usage)?)?);
                }
                Short('t') | Long("timeout") => {
                    self.timeout = Some(duration("--timeout", parser.value().map_err(usage)?)?);
                }
                // Only `--timeout-fatal=BOOL`: a separate word would be the command.
                Long("timeout-fatal") => {
                    self.fatal = match parser.optional_value() {
                        None => true,
                        Some(value) => {
                            let value = text("--timeout-fatal", value)?;
                            boolean::parse(&value)
                                .map_err(|expected| invalid("--timeout-fatal", &value, expected))?
                        }
                    };
                }
                Short('S') | Long("shutdown") => self.shutdown = true,
                // tandem logs at info already; -v only keeps its meaning valid.
                Short('v') | Long("verbose") => {}
                Short('h') | Long("help") => return Ok(Some("--help")),
                Short('V') | Long("version") => return Ok(Some("--version")),
                Value(cmd) => {
                    self.command.push(cmd);
                    self.command.extend(parser.raw_args().map_err(usage)?);
                }
                other => return Err(usage(other.unexpected())),
            }
        }
        Ok(None)
    }

    /// The same settings as tandem's options.
    fn into_tandem(self) -> Result<Vec<OsString>, Error> {
        let admin = format!("http://127.0.0.1:{}", self.port);
        let mut out: Vec<OsString> = vec!["--ready".into(), format!("{admin}/ready").into()];
        if let Some(backoff) = self.backoff {
            // linkerd-await sleeps BACKOFF after each failed check; tandem starts
            // faster and never waits longer than that between polls.
            out.push("--poll-max".into());
            out.push(go_duration(backoff.max(Duration::from_millis(1))).into());
        }
        if let Some(timeout) = self.timeout {
            let option = if self.fatal {
                "--fail-timeout"
            } else {
                "--wait-timeout"
            };
            out.push(option.into());
            out.push(go_duration(timeout).into());
        }
        if self.shutdown {
            if self.command.is_empty() {
                return Err(Error::Usage(format!(
                    "{NAME}: --shutdown needs a COMMAND to run before the shutdown"
                )));
            }
            out.push("--quit".into());
            out.push(format!("{admin}/shutdown").into());
        }
        if self.command.is_empty() {
            // Without CMD linkerd-await only waits.
            out.push("--wait-only".into());
        } else {
            out.push("--".into());
            out.extend(self.command);
        }
        Ok(out)
    }
}

fn text(name: &str, value: OsString) -> Result<String, Error> {
    value
        .into_string()
        .map_err(|v| invalid(name, &v.to_string_lossy(), "UTF-8 text"))
}

fn invalid(name: &str, value: &str, expected: &str) -> Error {
    Error::Usage(format!(
        "{NAME}: invalid {name} {value:?}: expected {expected}"
    ))
}

/// linkerd-await's durations (`30s`, `5m`, `2d`, a bare `0`) and tandem's Go
/// syntax (`1m30s`, `1.5s`) alike: a superset, so no value that worked fails.
fn duration(name: &str, value: OsString) -> Result<Duration, Error> {
    const EXPECTED: &str = "a duration such as 500ms, 30s, 5m, 1h or 2d";
    let value = text(name, value)?;
    let trimmed = value.trim();
    if let Some(days) = trimmed.strip_suffix('d')
        && !days.is_empty()
        && days.bytes().all(|b| b.is_ascii_digit())
    {
        let days: u64 = days.parse().map_err(|_| invalid(name, &value, EXPECTED))?;
        return days
            .checked_mul(86_400)
            .map(Duration::from_secs)
            .ok_or_else(|| invalid(name, &value, EXPECTED));
    }
    duration::parse(trimmed).map_err(|_| invalid(name, &value, EXPECTED))
}

/// A duration in the syntax tandem's options read back exactly: whole milliseconds.
fn go_duration(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(args: &str) -> Result<Vec<String>, Error> {
        translate(args.split_whitespace().map(OsString::from)).map(|v| {
            v.into_iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        })
    }

    fn ok(args: &str) -> String {
        words(args)
            .unwrap_or_else(|e| panic!("{args}: {e}"))
            .join(" ")
    }

    #[test]
    fn the_name_is_the_basename_of_argv0() {
        assert!(invoked_as(Some(OsStr::new("linkerd-await"))));
        assert!(invoked_as(Some(OsStr::new(
            "/usr/lib/linkerd/linkerd-await"
        ))));
        assert!(!invoked_as(Some(OsStr::new("tandem"))));
        assert!(!invoked_as(Some(OsStr::new("linkerd-await-old"))));
        assert!(!invoked_as(None));
    }

    #[test]
    fn options_translate_to_tandems() {
        assert_eq!(
            ok("-- app -x"),
            "--ready http://127.0.0.1:4191/ready -- app -x"
        );
        assert_eq!(
            ok("-p 4192 -S -t 30s app"),
            "--ready http://127.0.0.1:4192/ready --fail-timeout 30000ms \
             --quit http://127.0.0.1:4192/shutdown -- app"
        );
        assert_eq!(
            ok("--timeout=2d --timeout-fatal=false -b 10ms app"),
            "--ready http://127.0.0.1:4191/ready --poll-max 10ms \
             --wait-timeout 172800000ms -- app"
        );
        assert_eq!(
            ok("-v --timeout-fatal -t 1m30s"),
            "--ready http://127.0.0.1:4191/ready --fail-timeout 90000ms --wait-only"
        );
        assert_eq!(
            ok("app -p 1 --shutdown"),
            "--ready http://127.0.0.1:4191/ready -- app -p 1 --shutdown"
        );
        assert_eq!(ok("-h"), "--help");
    }

    #[test]
    fn bad_arguments_are_usage_errors_naming_them() {
        for (args, needle) in [
            ("-p 0 app", "--port"),
            ("-p x app", "--port"),
            ("-t 5 app", "--timeout"),
            ("-t soon app", "--timeout"),
            ("-b -1s app", "--backoff"),
            ("--timeout-fatal=maybe app", "--timeout-fatal"),
            ("-S", "--shutdown needs a COMMAND"),
            ("--bogus app", "--bogus"),
            ("-t", "'-t'"),
        ] {
            match words(args) {
                Err(Error::Usage(msg)) => {
                    assert!(msg.contains(needle), "{args}: {msg}");
                    assert!(msg.starts_with("linkerd-await: "), "{args}: {msg}");
                }
                other => panic!("{args}: expected a usage error, got {other:?}"),
            }
        }
    }
}
