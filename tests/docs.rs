//! The documentation against the binary (issue: docs stay true): `--help` as
//! committed in `tests/snapshots/help.txt` and within 80 columns, and every option
//! and variable of the option table named in `--help` and in the configuration
//! reference (`docs/configuration.md`). (The other direction, that every option
//! and variable the README, `docs/` and `examples/k8s/` name is accepted, is
//! `make manifests`: it runs the binary with them.) And tandem's lines as the
//! docs quote them, from runs of the binary against the fake sidecar: the
//! troubleshooting guide's quoted `$ tandem` runs, the log blocks of the README
//! and the guides, and their inline quotes of a line (`quit POST …: 404`).
//!
//! After a deliberate change to `--help`: `SNAPSHOTS=overwrite cargo test docs::`.

use crate::support::{
    FakeAdmin, REACT, RUN_TIMEOUT, SIGKILL, Script, closed_port, fixed_ports_turn,
    no_real_pilot_agent, run, spawn, start, tandem, temp_dir, wait_until,
};
use std::process::Command;
use std::time::Duration;
use tandem::cli::help::HELP_WIDTH;
use tandem::cli::options::OPTIONS;
use tandem::cli::peers;

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
/// elapsed time of a progress line (`after 2.0s`), its poll count and loopback ports.
fn normalise(line: &str) -> String {
    let Some((_, message)) = line.split_once(" tandem: ") else {
        return mask_ports(line);
    };
    let mut out = String::from("TIME tandem: ");
    let mut words = message.split(' ').peekable();
    while let Some(word) = words.next() {
        out.push_str(word);
        out.push(' ');
        if word == "after" && words.peek().is_some() {
            words.next();
            out.push_str("DUR ");
        } else if word.starts_with('(') && words.peek().is_some_and(|w| w.starts_with("polls)")) {
            out.truncate(out.len() - word.len() - 1);
            out.push_str("(N ");
        }
    }
    out.pop();
    mask_ports(&out)
}

/// TEXT with the port of every `127.0.0.1:PORT` masked: the docs quote the
/// presets' ports, the tests' fakes listen on ephemeral ones.
fn mask_ports(text: &str) -> String {
    const LOOPBACK: &str = "127.0.0.1:";
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(LOOPBACK) {
        let after = &rest[at + LOOPBACK.len()..];
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        out.push_str(&rest[..at + LOOPBACK.len()]);
        out.push_str(if digits > 0 { "PORT" } else { "" });
        rest = &after[digits..];
    }
    out.push_str(rest);
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
         http://127.0.0.1:PORT/healthz/ready: connection refused"
    );
    assert_eq!(
        normalise("2026-01-02T03:04:06.342Z tandem: sidecars ready after 1.2s (14 polls)"),
        "TIME tandem: sidecars ready after DUR (N polls)"
    );
    assert_eq!(
        normalise("2026-11-24T14:33:57.366Z tandem: error: sidecars not ready within 3.0s"),
        "TIME tandem: error: sidecars not ready within 3.0s"
    );
}

/// The documents that may quote tandem's lines: the README and every guide
/// under `docs/`, by their paths from the top.
fn quoting_docs() -> Vec<String> {
    let mut docs = vec!["README.md".to_owned()];
    let mut dirs = vec!["docs".to_owned()];
    while let Some(dir) = dirs.pop() {
        let full = format!("{}/{dir}", env!("CARGO_MANIFEST_DIR"));
        let entries = std::fs::read_dir(&full).unwrap_or_else(|err| panic!("read {full}: {err}"));
        for entry in entries.filter_map(Result::ok) {
            let path = format!("{dir}/{}", entry.file_name().to_string_lossy());
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                dirs.push(path);
            } else if path.ends_with(".md") {
                docs.push(path);
            }
        }
    }
    docs
}

/// What makes tandem print a quote: fakes started from these scripts, and
/// tandem aimed at them (the fakes' ephemeral ports stand for the docs' ports).
struct Scenario {
    fakes: Vec<Script>,
    tandem: fn(&[FakeAdmin]) -> Command,
    /// For a run that waits on: the text to wait for in its log, then it is killed.
    stop_at: Option<&'static str>,
}

impl Scenario {
    /// Runs the scenario: tandem's log lines and its termination message, masked
    /// with [`normalise`], and the run's dump for failure messages.
    fn printed(&self) -> (Vec<String>, Option<String>, String) {
        let fakes: Vec<FakeAdmin> = self.fakes.iter().cloned().map(start).collect();
        let message_file = temp_dir("quoted").join("termination-log");
        let mut cmd = (self.tandem)(&fakes);
        cmd.env("TANDEM_TERMINATION_LOG", &message_file);
        let out = match self.stop_at {
            None => run(&mut cmd, RUN_TIMEOUT),
            Some(text) => {
                let mut running = spawn(&mut cmd);
                wait_until(REACT, || running.stderr_so_far().contains(text));
                running.signal(SIGKILL);
                running.wait(RUN_TIMEOUT)
            }
        };
        let printed = out.stderr.lines().map(normalise).collect();
        let message = std::fs::read_to_string(&message_file).ok();
        (printed, message.as_deref().map(normalise), out.dump())
    }
}

/// Fakes as given, tandem as `tandem`.
fn scenario(fakes: Vec<Script>, tandem: fn(&[FakeAdmin]) -> Command) -> Scenario {
    Scenario {
        fakes,
        tandem,
        stop_at: None,
    }
}

/// A job container that finishes first of two and leaves the sidecars to the
/// other one (killed once it says so, since it waits for the other).
fn first_to_finish() -> Scenario {
    Scenario {
        fakes: Vec::new(),
        tandem: |_| {
            let mut cmd = tandem();
            cmd.args(["--job-containers", "migrate,report", "--container-name"])
                .args(["migrate", "--shared-dir"])
                .arg(temp_dir("siblings"))
                .args(["--", "true"]);
            cmd
        },
        stop_at: Some("leaving the sidecars"),
    }
}

/// The timestamped tandem lines of each fenced block of DOC that is not a quoted
/// `$ tandem` run (those are [`quoted_runs`]'), with the block's line number.
fn quoted_logs(doc: &str) -> Vec<(usize, Vec<String>)> {
    let mut blocks: Vec<(usize, Vec<String>, bool)> = Vec::new();
    let mut in_block = false;
    for (number, line) in doc.lines().enumerate() {
        if line.starts_with("```") {
            in_block = !in_block;
            if in_block {
                blocks.push((number + 1, Vec::new(), false));
            }
        } else if let Some((_, lines, is_run)) = blocks.last_mut().filter(|_| in_block) {
            *is_run |= line.starts_with("$ tandem ");
            if line.contains(" tandem: ") && line.starts_with(|c: char| c.is_ascii_digit()) {
                lines.push(line.to_owned());
            }
        }
    }
    blocks
        .into_iter()
        .filter(|(_, lines, is_run)| !lines.is_empty() && !is_run)
        .map(|(number, lines, _)| (number, lines))
        .collect()
}

/// The scenario of each quoted log block, by document and the block's order in it.
fn log_block_scenarios() -> Vec<(&'static str, usize, Scenario)> {
    vec![
        // The README's before/after: a pilot-agent ready after a while, a job
        // that succeeds, the quit.
        (
            "README.md",
            0,
            scenario(
                vec![Script::pilot_agent().ready_after(Duration::from_millis(300))],
                |fakes| {
                    let mut cmd = tandem();
                    cmd.args(["--generic-quit-only", "--fail-timeout", "2m", "--ready"])
                        .arg(format!("{}/healthz/ready", fakes[0].url()))
                        .arg("--quit")
                        .arg(format!("{}/quitquitquit", fakes[0].url()))
                        .args(["--", "true"]);
                    cmd
                },
            ),
        ),
        // An Envoy ready after 2.5 s and a job that exits 3.
        (
            "docs/how-it-works.md",
            0,
            scenario(
                vec![Script::envoy().ready_after(Duration::from_millis(2500))],
                |fakes| {
                    let mut cmd = tandem();
                    cmd.env("ENVOY_ADMIN_API", fakes[0].url())
                        .args(["--", "sh", "-c", "exit 3"]);
                    cmd
                },
            ),
        ),
    ]
}

#[test]
fn quoted_log_blocks_are_what_tandem_prints() {
    if !no_real_pilot_agent() {
        return;
    }
    let scenarios = log_block_scenarios();
    for doc in quoting_docs() {
        let doc = doc.as_str();
        let blocks = quoted_logs(&repo_file(doc));
        let known = scenarios.iter().filter(|(d, ..)| *d == doc).count();
        assert_eq!(
            blocks.len(),
            known,
            "{doc}: quoted log blocks at lines {:?}; give each one a scenario in \
             log_block_scenarios",
            blocks.iter().map(|(n, _)| n).collect::<Vec<_>>()
        );
        for (index, (number, quoted)) in blocks.iter().enumerate() {
            let (_, _, scenario) = scenarios
                .iter()
                .find(|(d, i, _)| *d == doc && *i == index)
                .unwrap_or_else(|| panic!("{doc}:{number}: no scenario"));
            let (printed, _, dump) = scenario.printed();
            let quoted: Vec<String> = quoted.iter().map(|l| normalise(l)).collect();
            assert_eq!(
                quoted, printed,
                "{doc}:{number}: the quoted lines differ from tandem's\n{dump}"
            );
        }
    }
}

/// How an inline quote of a tandem line starts: the messages the docs quote
/// between backticks (a quote may leave parts out with `…`).
const MESSAGE_STARTS: [&str; 13] = [
    "leaving the sidecars",
    "quit POST",
    "error: ",
    "warning: ",
    "failed: ",
    "waiting for",
    "still waiting",
    "sidecars ",
    "the app exited",
    "not ready within",
    "unknown variable",
    "the --on-exit program",
    "--on-exit: ",
];

/// DOC's inline (backticked) quotes of tandem lines, outside fenced blocks, with
/// the document's line breaks turned into spaces.
fn inline_quotes(doc: &str) -> Vec<String> {
    let mut prose = String::new();
    let mut fenced = false;
    for line in doc.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    let prose = prose.split_whitespace().collect::<Vec<_>>().join(" ");
    prose
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|quote| MESSAGE_STARTS.iter().any(|start| quote.starts_with(start)))
        .map(str::to_owned)
        .collect()
}

/// The `--on-exit` recipe, which quotes how the program ended.
const ON_EXIT: &str = "docs/recipes/on-exit.md";

/// tandem quitting the first fake at PATH, after running `true`.
fn quit_at(fakes: &[FakeAdmin], path: &str) -> Command {
    let mut cmd = tandem();
    cmd.arg("--quit")
        .arg(format!("{}{path}", fakes[0].url()))
        .arg("true");
    cmd
}

/// tandem waiting 3 s for a closed port, OPTION saying what then.
fn waiting_in_vain(option: &str) -> Command {
    let mut cmd = tandem();
    cmd.arg("--ready")
        .arg(format!("http://127.0.0.1:{}/healthz/ready", closed_port()))
        .args([option, "3s", "true"]);
    cmd
}

/// The runs whose lines a document quotes inline, by document.
fn inline_scenarios() -> Vec<(&'static str, Scenario)> {
    vec![
        (
            TROUBLESHOOTING,
            scenario(vec![Script::linkerd().shutdown_enabled(false)], |fakes| {
                quit_at(fakes, "/shutdown")
            }),
        ),
        (
            TROUBLESHOOTING,
            scenario(vec![Script::linkerd().shutdown_enabled(true)], |fakes| {
                quit_at(fakes, "/shutdown")
            }),
        ),
        (
            TROUBLESHOOTING,
            scenario(vec![Script::generic()], |fakes| {
                quit_at(fakes, "/agent/v1/quit")
            }),
        ),
        (
            TROUBLESHOOTING,
            scenario(
                vec![Script::generic().status_override("/agent/v1/quit", 404)],
                |fakes| quit_at(fakes, "/agent/v1/quit"),
            ),
        ),
        (
            TROUBLESHOOTING,
            scenario(
                vec![
                    Script::envoy(),
                    Script::pilot_agent().status_override("/quitquitquit", 503),
                ],
                |fakes| {
                    let mut cmd = tandem();
                    cmd.env("ENVOY_ADMIN_API", fakes[0].url())
                        .env("ISTIO_QUIT_API", fakes[1].url())
                        .arg("true");
                    cmd
                },
            ),
        ),
        (
            TROUBLESHOOTING,
            scenario(Vec::new(), |_| waiting_in_vain("--fail-timeout")),
        ),
        (TROUBLESHOOTING, first_to_finish()),
        ("docs/jobs.md", first_to_finish()),
        // The termination message of the run the guide quotes in full.
        (
            TROUBLESHOOTING,
            scenario(Vec::new(), |_| {
                let mut cmd = tandem();
                cmd.arg("--ready")
                    .arg(format!("http://127.0.0.1:{}/healthz/ready", closed_port()))
                    .arg("--quit")
                    .arg(format!("http://127.0.0.1:{}/quitquitquit", closed_port()))
                    .args(["--fail-timeout", "1s", "--quit-timeout", "1s", "true"]);
                cmd
            }),
        ),
        (
            "docs/how-it-works.md",
            scenario(Vec::new(), |_| waiting_in_vain("--wait-timeout")),
        ),
        (
            CONFIGURATION,
            scenario(Vec::new(), |_| {
                let mut cmd = tandem();
                cmd.env("TANDEM_MESHH", "istio").arg("true");
                cmd
            }),
        ),
        (
            ON_EXIT,
            scenario(Vec::new(), |_| {
                let mut cmd = tandem();
                cmd.args(["--on-exit", "true", "true"]);
                cmd
            }),
        ),
        (
            ON_EXIT,
            scenario(Vec::new(), |_| {
                let mut cmd = tandem();
                cmd.args(["--on-exit", "/upload --to x", "true"]);
                cmd
            }),
        ),
    ]
}

/// Whether LINE holds the pieces of QUOTE between its `…`s, in order.
fn holds(line: &str, quote: &str) -> bool {
    let mut rest = line;
    quote
        .split('…')
        .filter(|piece| !piece.is_empty())
        .all(|piece| {
            rest.find(piece)
                .map(|at| rest = &rest[at + piece.len()..])
                .is_some()
        })
}

#[test]
fn inline_quotes_are_what_tandem_prints() {
    if !no_real_pilot_agent() {
        return;
    }
    let scenarios = inline_scenarios();
    for doc in quoting_docs() {
        let doc = doc.as_str();
        let quotes = inline_quotes(&repo_file(doc));
        let (mut printed, mut dumps) = (Vec::new(), String::new());
        for (_, scenario) in scenarios.iter().filter(|(d, _)| *d == doc) {
            let (lines, message, dump) = scenario.printed();
            printed.extend(lines.into_iter().chain(message));
            dumps.push_str(&dump);
        }
        let unheld: Vec<&String> = quotes
            .iter()
            .filter(|quote| !printed.iter().any(|line| holds(line, &mask_ports(quote))))
            .collect();
        assert!(
            unheld.is_empty(),
            "{doc}: no run of inline_scenarios printed {unheld:#?}\n{dumps}"
        );
    }
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
