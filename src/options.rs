//! Every command-line option, once: the table that `cli` parses by, `--help` prints,
//! error messages name and `config` reads (with the option's variables) (SPEC §1, §2).
//!
//! A new option is one `const` row here, its place in `OPTIONS`, and its meaning
//! in `config` (or, for a task like `--wait-only`, a `TaskFlag` read by `cli`).

/// What an option takes and how often.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A switch: `--no-wait`.
    Flag,
    /// One value; given twice, the last wins: `--admin URL`.
    Value,
    /// One value each time, all kept in order: `--quit URL`.
    Repeated,
    /// Chooses what tandem does instead of running COMMAND (`cli::Task`).
    Task(TaskFlag),
}

/// The options that choose a task instead of running COMMAND.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskFlag {
    /// `--wait-only`
    WaitOnly,
    /// `--quit-only`
    QuitOnly,
    /// `--install-to DIR`
    InstallTo,
    /// `--help`
    Help,
    /// `--version`
    Version,
}

/// One row of the option table.
#[derive(Debug, PartialEq, Eq)]
pub struct Spec {
    /// The long name with its dashes: `--admin`.
    pub name: &'static str,
    /// A one-letter alias, if any: `-h`.
    pub short: Option<char>,
    /// What it takes.
    pub kind: Kind,
    /// The value's placeholder in `--help`: `URL`.
    pub value: &'static str,
    /// The environment variables it overrides, first found wins; empty for none.
    pub vars: &'static [&'static str],
    /// Its `--help` line after the placeholder; a `\n` continues it, indented.
    /// Empty for the tasks, which the usage block shows.
    pub help: &'static str,
}

impl Spec {
    /// A row with no short alias and no variables, to fill in with `..`.
    const fn new(name: &'static str, kind: Kind) -> Spec {
        Spec {
            name,
            short: None,
            kind,
            value: "",
            vars: &[],
            help: "",
        }
    }
}

/// `--admin URL`
pub const ADMIN: Spec = Spec {
    value: "URL",
    vars: &["ENVOY_ADMIN_API"],
    help: "Envoy admin URL; wait for it, stop it if local [ENVOY_ADMIN_API]",
    ..Spec::new("--admin", Kind::Value)
};
/// `--no-wait`
pub const NO_WAIT: Spec = Spec {
    vars: &["START_WITHOUT_ENVOY"],
    help: "do not wait for readiness [START_WITHOUT_ENVOY=true]",
    ..Spec::new("--no-wait", Kind::Flag)
};
/// `--wait-timeout DUR`
pub const WAIT_TIMEOUT: Spec = Spec {
    value: "DUR",
    vars: &["WAIT_FOR_ENVOY_TIMEOUT"],
    help: "stop waiting after DUR and start anyway [WAIT_FOR_ENVOY_TIMEOUT]",
    ..Spec::new("--wait-timeout", Kind::Value)
};
/// `--fail-timeout DUR`
pub const FAIL_TIMEOUT: Spec = Spec {
    value: "DUR",
    vars: &["QUIT_WITHOUT_ENVOY_TIMEOUT"],
    help: "stop waiting after DUR and exit 69 [QUIT_WITHOUT_ENVOY_TIMEOUT]",
    ..Spec::new("--fail-timeout", Kind::Value)
};
/// `--istio-quit URL`
pub const ISTIO_QUIT: Spec = Spec {
    value: "URL",
    vars: &["ISTIO_QUIT_API"],
    help: "pilot-agent URL; POST URL/quitquitquit [ISTIO_QUIT_API]",
    ..Spec::new("--istio-quit", Kind::Value)
};
/// `--envoy-quit URL`
pub const ENVOY_QUIT: Spec = Spec {
    value: "URL",
    vars: &["ENVOY_KILL_API"],
    help: "full URL to POST to stop plain Envoy [ENVOY_KILL_API]",
    ..Spec::new("--envoy-quit", Kind::Value)
};
/// `--quit URL`, repeatable.
pub const QUIT: Spec = Spec {
    value: "URL",
    vars: &["GENERIC_QUIT_ENDPOINTS"],
    help: "POST URL at the end; repeatable [GENERIC_QUIT_ENDPOINTS, comma-separated]",
    ..Spec::new("--quit", Kind::Repeated)
};
/// `--generic-quit-only`
pub const GENERIC_QUIT_ONLY: Spec = Spec {
    vars: &["GENERIC_QUIT_ONLY"],
    help: "only POST the --quit URLs, never stop Istio/Envoy [GENERIC_QUIT_ONLY=true]",
    ..Spec::new("--generic-quit-only", Kind::Flag)
};
/// `--quit-timeout DUR`
pub const QUIT_TIMEOUT: Spec = Spec {
    value: "DUR",
    vars: &["QUIT_REQUEST_TIMEOUT"],
    help: "bound on the whole quit phase, default 5s [QUIT_REQUEST_TIMEOUT]",
    ..Spec::new("--quit-timeout", Kind::Value)
};
/// `--never-quit`
pub const NEVER_QUIT: Spec = Spec {
    vars: &["NEVER_KILL_ISTIO", "NEVER_KILL_ENVOY"],
    help: "never stop Istio/Envoy [NEVER_KILL_ISTIO=true, NEVER_KILL_ENVOY=true]",
    ..Spec::new("--never-quit", Kind::Flag)
};
/// `--keep-on-failure`
pub const KEEP_ON_FAILURE: Spec = Spec {
    vars: &["NEVER_KILL_ISTIO_ON_FAILURE"],
    help: "stop nothing after a failed run [NEVER_KILL_ISTIO_ON_FAILURE=true]\n\
           (ALWAYS_KILL_ENVOY=true is accepted; stopping after failure is the default)",
    ..Spec::new("--keep-on-failure", Kind::Flag)
};
/// `--log LEVEL`
pub const LOG: Spec = Spec {
    value: "LEVEL",
    vars: &["TANDEM_LOG", "ENVOY_PREFLIGHT_LOGGING", "SCUTTLE_LOGGING"],
    help: "off, error, warn, info (default), debug; or true/false\n\
           [TANDEM_LOG, ENVOY_PREFLIGHT_LOGGING, SCUTTLE_LOGGING]",
    ..Spec::new("--log", Kind::Value)
};
/// `--log-format text|json`
pub const LOG_FORMAT: Spec = Spec {
    value: "FORMAT",
    vars: &["TANDEM_LOG_FORMAT"],
    help: "text (default) or json [TANDEM_LOG_FORMAT]",
    ..Spec::new("--log-format", Kind::Value)
};
/// `--ready URL`, repeatable.
pub const READY: Spec = Spec {
    value: "URL",
    vars: &["TANDEM_READY_URLS"],
    help: "also wait for URL to answer 2xx; repeatable [TANDEM_READY_URLS, comma-separated]",
    ..Spec::new("--ready", Kind::Repeated)
};
/// `--mesh NAME[,NAME]`, repeatable.
pub const MESH: Spec = Spec {
    value: "NAME[,NAME]",
    vars: &["TANDEM_MESH"],
    help: "presets: istio, envoy, linkerd, cloudsql, dapr, vault [TANDEM_MESH]\n\
           (dapr uses DAPR_HTTP_PORT when set, else 3500)",
    ..Spec::new("--mesh", Kind::Repeated)
};
/// `--poll-max DUR`
pub const POLL_MAX: Spec = Spec {
    value: "DUR",
    vars: &["TANDEM_POLL_MAX"],
    help: "longest interval between readiness polls, default 250ms [TANDEM_POLL_MAX]",
    ..Spec::new("--poll-max", Kind::Value)
};
/// `--forward-to child|group`
pub const FORWARD_TO: Spec = Spec {
    value: "WHOM",
    vars: &["TANDEM_FORWARD_TO"],
    help: "relay signals to the child (default) or its process group [TANDEM_FORWARD_TO]",
    ..Spec::new("--forward-to", Kind::Value)
};
/// `--termination-log PATH|off`
pub const TERMINATION_LOG: Spec = Spec {
    value: "PATH",
    vars: &["TANDEM_TERMINATION_LOG"],
    help: "why tandem ended a run, in one line; off disables\n\
           (default /dev/termination-log if writable) [TANDEM_TERMINATION_LOG]",
    ..Spec::new("--termination-log", Kind::Value)
};
/// `--wait-only`
pub const WAIT_ONLY: Spec = Spec::new("--wait-only", Kind::Task(TaskFlag::WaitOnly));
/// `--quit-only`
pub const QUIT_ONLY: Spec = Spec::new("--quit-only", Kind::Task(TaskFlag::QuitOnly));
/// `--install-to DIR`
pub const INSTALL_TO: Spec = Spec {
    value: "DIR",
    ..Spec::new("--install-to", Kind::Task(TaskFlag::InstallTo))
};
/// `--help`, `-h`
pub const HELP: Spec = Spec {
    short: Some('h'),
    ..Spec::new("--help", Kind::Task(TaskFlag::Help))
};
/// `--version`, `-V`
pub const VERSION: Spec = Spec {
    short: Some('V'),
    ..Spec::new("--version", Kind::Task(TaskFlag::Version))
};

/// Every option, in `--help` order.
pub const OPTIONS: &[&Spec] = &[
    &ADMIN,
    &NO_WAIT,
    &WAIT_TIMEOUT,
    &FAIL_TIMEOUT,
    &ISTIO_QUIT,
    &ENVOY_QUIT,
    &QUIT,
    &GENERIC_QUIT_ONLY,
    &QUIT_TIMEOUT,
    &NEVER_QUIT,
    &KEEP_ON_FAILURE,
    &LOG,
    &LOG_FORMAT,
    &READY,
    &MESH,
    &POLL_MAX,
    &FORWARD_TO,
    &TERMINATION_LOG,
    &WAIT_ONLY,
    &QUIT_ONLY,
    &INSTALL_TO,
    &HELP,
    &VERSION,
];

/// Accepted for compatibility and validated, but no option sets it (SPEC §2).
pub const ALWAYS_KILL_ENVOY: &str = "ALWAYS_KILL_ENVOY";
/// linkerd-await's switches: any non-empty value waits for nothing, stops nothing.
pub const LINKERD_DISABLED: &[&str] = &["LINKERD_AWAIT_DISABLED", "LINKERD_DISABLED"];
/// scuttle: more readiness URLs, merged with `TANDEM_READY_URLS`.
pub const GENERIC_READY_ENDPOINTS: &str = "GENERIC_READY_ENDPOINTS";
/// scuttle: when pilot-agent gets SIGINT after a failed Istio quit.
pub const ISTIO_FALLBACK_PKILL: &str = "ISTIO_FALLBACK_PKILL";

/// What a variable without a meaning in tandem must hold to be accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A boolean (tandem's superset of `true`/`false`).
    Bool,
    /// Whole seconds, 0 or more (scuttle's `strconv.Atoi`).
    Seconds,
    /// Anything.
    Text,
}

/// A variable that scuttle, envoy-preflight, linkerd-await or one of their forks
/// reads and that has no effect in tandem: validated, then warned about once
/// (SPEC §2: none is silently ignored).
#[derive(Debug, PartialEq, Eq)]
pub struct NoEffect {
    /// The variable.
    pub var: &'static str,
    /// What its value must look like.
    pub shape: Shape,
    /// Why tandem does without it, for the warning.
    pub why: &'static str,
}

/// Every variable of the peers that tandem accepts without acting on it.
pub const NO_EFFECT: &[NoEffect] = &[
    NoEffect {
        var: "SCUTTLE_IGNORE_SIGURG",
        shape: Shape::Bool,
        why: "tandem relays SIGURG like every other signal, and never gets its own",
    },
    NoEffect {
        var: "BYPASS_SIGURG",
        shape: Shape::Bool,
        why: "tandem relays SIGURG like every other signal, and never gets its own",
    },
    NoEffect {
        var: "SCUTTLE_SLEEP_1",
        shape: Shape::Seconds,
        why: "tandem waits for readiness and quits in order, with no fixed sleeps",
    },
    NoEffect {
        var: "SCUTTLE_SLEEP_2",
        shape: Shape::Seconds,
        why: "tandem waits for readiness and quits in order, with no fixed sleeps",
    },
    NoEffect {
        var: "SCUTTLE_SLEEP_AFTER_SIGNAL",
        shape: Shape::Seconds,
        why: "tandem waits for the app to exit after relaying a signal, with no fixed sleep",
    },
    NoEffect {
        var: "SEND_METRICS_ON_EXIT",
        shape: Shape::Bool,
        why: "tandem does not push Envoy metrics",
    },
    NoEffect {
        var: "GET_METRICS_API",
        shape: Shape::Text,
        why: "tandem does not push Envoy metrics",
    },
    NoEffect {
        var: "PUSH_METRICS_API",
        shape: Shape::Text,
        why: "tandem does not push Envoy metrics",
    },
    NoEffect {
        var: "USE_ISTIO_CONFIG",
        shape: Shape::Bool,
        why: "tandem quits Istio through pilot-agent when the admin port is 15000, or with --mesh istio",
    },
    NoEffect {
        var: "PKILL_PILOT",
        shape: Shape::Bool,
        why: "tandem signals a visible pilot-agent itself (see ISTIO_FALLBACK_PKILL)",
    },
    NoEffect {
        var: "LINKERD_AWAIT_VERBOSE",
        shape: Shape::Text,
        why: "tandem says at info level when LINKERD_AWAIT_DISABLED turns it off",
    },
    NoEffect {
        var: "ENVOY_ISTIO_SDS_WARMING_PROTECTION",
        shape: Shape::Bool,
        why: "tandem waits for Envoy's /ready (or LIVE), not for its certificates",
    },
];

/// The row for a long name as lexopt gives it, without the dashes.
pub fn find_long(name: &str) -> Option<&'static Spec> {
    OPTIONS
        .iter()
        .copied()
        .find(|spec| spec.name.strip_prefix("--") == Some(name))
}

/// The row for a one-letter alias.
pub fn find_short(letter: char) -> Option<&'static Spec> {
    OPTIONS
        .iter()
        .copied()
        .find(|spec| spec.short == Some(letter))
}

/// Where the help text starts, after `  --name VALUE` and padding.
const HELP_COLUMN: usize = 24;
/// `--help` fits a classic terminal (and `kubectl logs` in a narrow pane).
pub const HELP_WIDTH: usize = 80;

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
            // Plain pushes, not `format!` with a width: that costs the static binary KiBs.
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
        (&mut honoured, COMPAT_HONOURED.to_vec()),
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

/// The peers' variables that tandem honours without an option of their own.
pub const COMPAT_HONOURED: &[&str] = &[
    ALWAYS_KILL_ENVOY,
    "LINKERD_AWAIT_DISABLED",
    "LINKERD_DISABLED",
    GENERIC_READY_ENDPOINTS,
    ISTIO_FALLBACK_PKILL,
    "DAPR_HTTP_PORT",
];

/// Breaks `text` at spaces into lines of at most `width` characters (a longer
/// word stands alone), appending them to `lines`.
fn wrap<'a>(text: &'a str, width: usize, lines: &mut Vec<&'a str>) {
    let mut rest = text.trim();
    while rest.chars().count() > width {
        let limit = rest
            .char_indices()
            .nth(width + 1)
            .map_or(rest.len(), |(i, _)| i);
        let cut = rest[..limit]
            .rfind(' ')
            .or_else(|| rest.find(' '))
            .unwrap_or(rest.len());
        lines.push(&rest[..cut]);
        rest = rest[cut..].trim_start();
    }
    lines.push(rest);
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
";

/// The `--version` line.
pub fn version() -> String {
    format!("tandem {}\n", env!("CARGO_PKG_VERSION"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_are_unique_and_dashed() {
        for (i, a) in OPTIONS.iter().enumerate() {
            assert!(a.name.starts_with("--"), "{}", a.name);
            assert_eq!(find_long(&a.name[2..]), Some(*a));
            if let Some(letter) = a.short {
                assert_eq!(find_short(letter), Some(*a));
            }
            for b in &OPTIONS[i + 1..] {
                assert_ne!(a.name, b.name);
            }
        }
        assert_eq!(find_long("bogus"), None);
    }

    #[test]
    fn every_variable_of_an_option_is_named_in_its_help() {
        for spec in OPTIONS {
            for var in spec.vars {
                assert!(spec.help.contains(var), "{}: help lacks {var}", spec.name);
            }
        }
    }

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
            "\n                        [TANDEM_LOG, ENVOY_PREFLIGHT_LOGGING, SCUTTLE_LOGGING]\n"
        ));
    }
}
