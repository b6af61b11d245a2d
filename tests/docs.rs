//! The documentation against the binary (issue: docs stay true): `--help` as
//! committed in `tests/snapshots/help.txt` and within 80 columns, and every option
//! and variable of the option table named in `--help` and in the configuration
//! reference (`docs/configuration.md`). (The other direction, that every option
//! and variable the README, `docs/` and `examples/k8s/` name is accepted, is
//! `make manifests`: it runs the binary with them.)
//!
//! After a deliberate change to `--help`: `SNAPSHOTS=overwrite cargo test docs::`.

use crate::support::{RUN_TIMEOUT, fixed_ports_turn, run, tandem};
use tandem::cli::help::HELP_WIDTH;
use tandem::cli::options::OPTIONS;
use tandem::config::peers;

/// The configuration reference: every option and variable (the README has a summary).
const CONFIGURATION: &str = "docs/configuration.md";

/// The `--help` text, from the built binary.
fn help() -> String {
    let out = run(tandem().arg("--help"), RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump());
    out.stdout_str()
}

/// A file of the repository, by its path from the top.
fn repo_file(path: &str) -> String {
    let full = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|err| panic!("read {full}: {err}"))
}

/// Every variable tandem reads: those of the options, then those with no option.
fn variables() -> Vec<&'static str> {
    let mut vars: Vec<&str> = OPTIONS
        .iter()
        .flat_map(|spec| spec.vars.iter().copied())
        .collect();
    vars.push(peers::ALWAYS_KILL_ENVOY);
    vars
}

/// Whether `text` names `name` as a whole word: `--quit` in `--quit-only` or
/// `NEVER_KILL_ISTIO` in `NEVER_KILL_ISTIO_ON_FAILURE` does not count.
fn names(text: &str, name: &str) -> bool {
    let part_of_name = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(part_of_name) && !after.is_some_and(part_of_name)
    })
}

#[test]
fn help_is_the_committed_text() {
    snapbox::assert_data_eq!(help(), snapbox::file!["snapshots/help.txt"]);
}

#[test]
fn help_fits_80_columns() {
    let help = help();
    let wide: Vec<&str> = help
        .lines()
        .filter(|line| line.chars().count() > HELP_WIDTH)
        .collect();
    assert!(
        wide.is_empty(),
        "--help lines over {HELP_WIDTH} columns: {wide:#?}"
    );
}

#[test]
fn help_names_every_option_and_variable_of_the_table() {
    let help = help();
    let missing: Vec<&str> = OPTIONS
        .iter()
        .map(|spec| spec.name)
        .chain(variables())
        .filter(|name| !names(&help, name))
        .collect();
    assert!(missing.is_empty(), "--help lacks {missing:?}\n{help}");
}

/// The peers' variables that no option names: honoured ones, then those accepted
/// with a warning (SPEC §2: the configuration reference lists each one).
fn compat_variables() -> Vec<&'static str> {
    let mut vars = peers::HONOURED.to_vec();
    vars.extend(peers::NO_EFFECT.iter().map(|item| item.var));
    vars
}

#[test]
fn configuration_reference_names_every_option_and_variable() {
    let reference = repo_file(CONFIGURATION);
    let missing: Vec<&str> = OPTIONS
        .iter()
        .map(|spec| spec.name)
        .chain(variables())
        .chain(compat_variables())
        .filter(|name| !names(&reference, name))
        .collect();
    assert!(missing.is_empty(), "{CONFIGURATION} lacks {missing:?}");
}

/// The guide that quotes tandem's output from real runs, in `console` blocks.
const TROUBLESHOOTING: &str = "docs/troubleshooting.md";

/// A run quoted in a `console` block: `$ tandem ARGS…`, the lines it printed
/// and, when an `$ echo $?` follows, the exit status shown.
struct QuotedRun {
    /// The document's line of the `$ tandem` command, for failure messages.
    line: usize,
    args: Vec<String>,
    output: Vec<String>,
    code: Option<i32>,
}

/// Every `$ tandem …` run of DOC's `console` blocks.
fn quoted_runs(doc: &str) -> Vec<QuotedRun> {
    let mut runs: Vec<QuotedRun> = Vec::new();
    let (mut in_console, mut after_echo) = (false, false);
    for (number, line) in doc.lines().enumerate() {
        if line.starts_with("```") {
            in_console = line == "```console";
            continue;
        }
        if !in_console {
            continue;
        }
        if let Some(args) = line.strip_prefix("$ tandem ") {
            runs.push(QuotedRun {
                line: number + 1,
                args: args.split_whitespace().map(str::to_owned).collect(),
                output: Vec::new(),
                code: None,
            });
            after_echo = false;
        } else if line == "$ echo $?" {
            after_echo = true;
        } else if let Some(run) = runs.last_mut() {
            if after_echo {
                run.code = line.trim().parse().ok();
            } else if !line.starts_with('$') {
                run.output.push(line.to_owned());
            }
        }
    }
    runs
}

/// A log line with what differs from run to run masked: the timestamp, the
/// elapsed time of a progress line (`after 2.0s`) and its poll count.
fn normalise(line: &str) -> String {
    let Some((_, message)) = line.split_once(" tandem: ") else {
        return line.to_owned();
    };
    let mut out = String::from("TIME tandem: ");
    let mut words = message.split(' ').peekable();
    while let Some(word) = words.next() {
        out.push_str(word);
        out.push(' ');
        if word == "after" && words.peek().is_some() {
            words.next();
            out.push_str("DUR ");
        } else if word.starts_with('(') && words.peek() == Some(&"polls):") {
            out.truncate(out.len() - word.len() - 1);
            out.push_str("(N ");
        }
    }
    out.pop();
    out
}

#[test]
fn troubleshooting_quotes_what_tandem_prints() {
    let runs = quoted_runs(&repo_file(TROUBLESHOOTING));
    assert!(
        runs.len() >= 2,
        "{TROUBLESHOOTING}: expected the quoted runs of exit 69 and the Cloud SQL quit"
    );
    // The runs use the presets' ports, with nothing listening on them.
    let _turn = fixed_ports_turn();
    for quoted in runs {
        let out = run(tandem().args(&quoted.args), RUN_TIMEOUT);
        let printed: Vec<String> = out.stderr.lines().map(normalise).collect();
        let lines: Vec<String> = quoted.output.iter().map(|l| normalise(l)).collect();
        assert_eq!(
            lines,
            printed,
            "{TROUBLESHOOTING}:{}: the quoted lines differ from tandem's\n{}",
            quoted.line,
            out.dump()
        );
        if let Some(code) = quoted.code {
            assert_eq!(out.code, Some(code), "{TROUBLESHOOTING}:{}", quoted.line);
        }
    }
}

#[test]
fn normalise_masks_only_what_varies() {
    assert_eq!(
        normalise(
            "2026-11-24T14:33:56.367Z tandem: still waiting after 2.0s (28 polls): \
             http://127.0.0.1:15021/healthz/ready: connection refused"
        ),
        "TIME tandem: still waiting after DUR (N polls): \
         http://127.0.0.1:15021/healthz/ready: connection refused"
    );
    assert_eq!(
        normalise("2026-11-24T14:33:57.366Z tandem: error: sidecars not ready within 3.0s"),
        "TIME tandem: error: sidecars not ready within 3.0s"
    );
}

#[test]
fn install_guide_init_container_is_the_example() {
    let guide = repo_file("docs/install.md");
    let example = repo_file("examples/k8s/distroless-init-container.yaml");
    let manifest: String = example
        .lines()
        .skip_while(|line| line.starts_with('#'))
        .map(|line| format!("{line}\n"))
        .collect();
    let section = &guide[guide
        .find("## Without rebuilding the job's image")
        .expect("docs/install.md has the init-container section")..];
    let start = section.find("```yaml\n").expect("a yaml block") + "```yaml\n".len();
    let end = start + section[start..].find("```\n").expect("the block's end");
    assert_eq!(
        &section[start..end],
        manifest,
        "docs/install.md's init container differs from examples/k8s/distroless-init-container.yaml"
    );
}
