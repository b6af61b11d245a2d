//! `--help`, rendered from the option table within 80 columns, as the
//! wrapper's: each option's line wrapped at [`HELP_COLUMN`], its variable in
//! brackets after its text.

use super::options::OPTIONS;

/// Where an option's text starts, after `  --flag VALUE` and padding.
pub(super) const HELP_COLUMN: usize = 24;
// `--help` fits a classic terminal, laid out as `tandem --help` is.
pub use tandem_common::help::HELP_WIDTH;
use tandem_common::help::wrap;

/// `--help` before the options.
const USAGE: &str = "\
tandem-injector: a Kubernetes admission webhook that puts tandem into the Pods
labelled tandem.dev/inject=enabled that run to completion (restartPolicy Never
or OnFailure: a Job's, a bare Pod, ...; README: Automatic injection).

Usage:
  tandem-injector --tls-cert PEM --tls-key PEM --image IMAGE [OPTIONS]
  tandem-injector policy --image IMAGE [--install MODE] [--route ROUTE]
  tandem-injector webhook [--install MODE] [--failure-policy Fail|Ignore]
  tandem-injector audit [FILE|-] [--route ROUTE] [--output table|json]
  tandem-injector --help | --version

Options (variable in brackets; an option overrides its variable):
";

/// `--help` after the options.
const FOOTER: &str = "  --help, --version

Serves POST /mutate (Pods labelled), POST /mutate/namespace[/audit]
(namespaces labelled), GET /healthz and GET /metrics. SIGTERM: /healthz
answers 503, reviews are answered for --drain, then it stops accepting,
answers what is in flight and exits 0. `policy` prints, as YAML, the
admission policies that make the same change with no server (Kubernetes
1.36+); `webhook` prints the webhook's MutatingWebhookConfiguration. `audit`
reads a List of Pods (kubectl get pods -A -o json | tandem-injector audit -)
and prints the Pods that run to completion stuck on their sidecars and what
injection would do to each, with no network call (exit 65 when the input is
not such a List).
Bad usage exits 64.
";

/// The `--help` text.
pub fn help() -> String {
    let mut out = String::from(USAGE);
    for o in OPTIONS {
        let lead = format!("  {} {}", o.flag, o.value);
        let text = format!("{} [{}]", o.help, o.var);
        let mut lines = Vec::new();
        wrap(&text, HELP_WIDTH - HELP_COLUMN, &mut lines);
        if lead.len() >= HELP_COLUMN {
            out.push_str(&lead);
            out.push('\n');
        }
        for (i, line) in lines.iter().enumerate() {
            let lead = if i == 0 && lead.len() < HELP_COLUMN {
                lead.as_str()
            } else {
                ""
            };
            out.push_str(&format!("{lead:<HELP_COLUMN$}{line}\n"));
        }
    }
    out.push_str(FOOTER);
    out
}

#[cfg(test)]
mod tests {
    use super::super::options::Command;
    use super::*;

    #[test]
    fn help_fits_80_columns_and_lines_up_the_options() {
        let text = help();
        for line in text.lines() {
            assert!(line.chars().count() <= HELP_WIDTH, "{line:?}");
        }
        let drain = text.lines().find(|l| l.starts_with("  --drain")).unwrap();
        assert_eq!(&drain[HELP_COLUMN..HELP_COLUMN + 10], "on SIGTERM");
    }

    #[test]
    fn each_usage_line_names_the_options_its_command_takes() {
        for (word, command) in Command::NAMED {
            let line = USAGE
                .lines()
                .find(|l| l.starts_with(&format!("  tandem-injector {word} ")))
                .unwrap();
            for o in OPTIONS {
                assert_eq!(
                    line.contains(o.flag),
                    o.commands.contains(&command),
                    "{word} {}",
                    o.flag
                );
            }
        }
    }
}
