//! `--help` rendered from the option table, the `--version` line, and `print`,
//! the only place tandem writes to stdout (SPEC §1).

use std::io::Write;
use std::process::ExitCode;

use super::options::OPTIONS;
use super::peers::{HONOURED, NO_EFFECT};
use crate::exit::EX_SOFTWARE;

/// Where the help text starts, after `  --name VALUE` and padding.
pub(super) const HELP_COLUMN: usize = 24;
// `--help` fits a classic terminal (and `kubectl logs` in a narrow pane), laid
// out as tandem-injector's.
pub use tandem_common::help::HELP_WIDTH;
use tandem_common::help::wrap;

/// The `--help` text: usage, then every option beside its environment variables.
pub fn help() -> String {
    let mut out = String::from(USAGE);
    for spec in OPTIONS.iter().filter(|spec| !spec.help.is_empty()) {
        let mut lead = String::from("  ");
        lead.push_str(spec.name);
        if !spec.value.is_empty() {
            lead.push(' ');
            lead.push_str(spec.value);
        }
        if lead.len() >= HELP_COLUMN {
            // Too long to share a line with its text: the text starts below it.
            out.push_str(&lead);
            out.push('\n');
            lead.clear();
        }
        let mut lines = Vec::new();
        for paragraph in spec.help.split('\n') {
            wrap(paragraph, HELP_WIDTH - HELP_COLUMN, &mut lines);
        }
        for (i, line) in lines.iter().enumerate() {
            let lead = if i == 0 { lead.as_str() } else { "" };
            out.push_str(lead);
            out.extend(std::iter::repeat_n(
                ' ',
                HELP_COLUMN.saturating_sub(lead.len()),
            ));
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push_str(FOOTER);
    // Built from the tables, so a variable added there is listed here too.
    let mut honoured = String::from("Also read (no option):");
    let mut no_effect = String::from("Accepted with a warning that they have no effect:");
    for (text, vars) in [
        (&mut honoured, HONOURED.to_vec()),
        (&mut no_effect, NO_EFFECT.iter().map(|n| n.var).collect()),
    ] {
        for (i, var) in vars.iter().enumerate() {
            text.push_str(if i == 0 { " " } else { ", " });
            text.push_str(var);
        }
        text.push('.');
        let mut lines = Vec::new();
        wrap(text, HELP_WIDTH, &mut lines);
        for line in lines {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// `--help` before the options.
const USAGE: &str = "\
tandem: wait for the sidecars, run COMMAND, quit the sidecars, keep its status

Usage:
  tandem [OPTIONS] [--] COMMAND [ARGS...]
  tandem [OPTIONS] --wait-only      wait for the sidecars, then exit
  tandem [OPTIONS] --quit-only      send the quit requests now, then exit 0
  tandem --install-to DIR           copy this binary to DIR/tandem
  tandem --help | --version

Options (environment variable in brackets; an option overrides its variable):
";

/// `--help` after the options.
const FOOTER: &str = "
Durations: 300ms, 1.5s, 2m30s, 1h (Go syntax); 0 means no timeout.
Booleans: true/false, 1/0, yes/no.
Exit status: COMMAND's; 128+N if it was killed by signal N; 64 bad usage;
69 not ready within --fail-timeout; 126 not executable; 127 not found;
73 install failed.
Invoked as linkerd-await, tandem takes linkerd-await's -p PORT, -b DUR, -t DUR,
--timeout-fatal[=BOOL], -S and -v; durations there also take days (2d).
Invoked as wait, it takes docker-compose-wait's usage: no options; COMMAND from
the arguments or WAIT_COMMAND (neither: wait only); WAIT_TIMEOUT 30 by default.
";

/// Prints `text` to stdout, for `--help` and `--version`: exit 0, or 70 when
/// stdout cannot take it.
pub fn print(text: &str) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(EX_SOFTWARE),
    }
}

/// The `--version` line: the version and the commit built from (build.rs).
pub fn version() -> String {
    format!(
        "tandem {} (commit {})\n",
        env!("CARGO_PKG_VERSION"),
        env!("TANDEM_COMMIT")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::options::Kind;

    #[test]
    fn help_names_every_option_and_each_takes_a_value_only_with_a_placeholder() {
        let help = help();
        for spec in OPTIONS {
            assert!(help.contains(spec.name), "help lacks {}", spec.name);
            let takes_value = matches!(spec.kind, Kind::Value | Kind::Repeated);
            if !matches!(spec.kind, Kind::Task(_)) {
                assert_eq!(takes_value, !spec.value.is_empty(), "{}", spec.name);
            }
        }
    }

    #[test]
    fn help_lines_line_up_after_the_longest_option() {
        let help = help();
        let line = help
            .lines()
            .find(|l| l.starts_with("  --generic-quit-only"))
            .unwrap();
        assert_eq!(&line[HELP_COLUMN..HELP_COLUMN + 9], "only POST");
        assert!(help.contains(
            "\n                        [TANDEM_LOG, ENVOY_PREFLIGHT_LOGGING, SCUTTLE_LOGGING,\n"
        ));
    }
}
