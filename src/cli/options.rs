//! Every command-line option, once: the table that `cli` parses by, `--help` prints,
//! error messages name and `config` reads (with the option's variables) (SPEC §1, §2).
//!
//! A new option is one `const` row here, its place in `OPTIONS`, and its meaning
//! in `config` (or, for a task like `--wait-only`, its `Task`). The peers'
//! variables that have no option are in the table beside this one, `peers`.

use std::path::PathBuf;

pub use super::spec::{Kind, Spec};
use super::task::Task;
use tandem_common::vars;

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
    vars: &[vars::KEEP_ON_FAILURE],
    help: "adds 1-255 to --keep-on-exit [NEVER_KILL_ISTIO_ON_FAILURE=true]\n\
           (ALWAYS_KILL_ENVOY=true is accepted; stopping after failure is the default)",
    ..Spec::new("--keep-on-failure", Kind::Flag)
};
/// `--keep-on-exit CODES`
pub const KEEP_ON_EXIT: Spec = Spec {
    value: "CODES",
    vars: &[vars::KEEP_ON_EXIT],
    help: "stop nothing on these exit statuses, as the kubelet runs \
           this container again: 0-255 and runs A-B, comma-separated \
           [TANDEM_KEEP_ON_EXIT]",
    ..Spec::new("--keep-on-exit", Kind::Value)
};
/// `--log LEVEL`
pub const LOG: Spec = Spec {
    value: "LEVEL",
    vars: &[
        "TANDEM_LOG",
        "ENVOY_PREFLIGHT_LOGGING",
        "SCUTTLE_LOGGING",
        "WAIT_LOGGER_LEVEL",
    ],
    help: "off, error, warn, info (default), debug; or true/false\n\
           [TANDEM_LOG, ENVOY_PREFLIGHT_LOGGING, SCUTTLE_LOGGING,\n\
           WAIT_LOGGER_LEVEL]",
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
    vars: &[vars::READY_URLS],
    help: "also wait for URL: http:// answers 2xx, tcp://HOST:PORT and \
           unix:///PATH accept a connection, file:///PATH exists; repeatable \
           [TANDEM_READY_URLS, comma-separated]",
    ..Spec::new("--ready", Kind::Repeated)
};
/// `--mesh NAME[,NAME]`, repeatable.
pub const MESH: Spec = Spec {
    value: "NAME[,NAME]",
    vars: &[vars::MESH],
    help: "presets: istio, envoy, linkerd, cloudsql, dapr, vault [TANDEM_MESH]\n\
           (dapr uses DAPR_HTTP_PORT when set, else 3500)",
    ..Spec::new("--mesh", Kind::Repeated)
};
/// `--poll-max DUR`
pub const POLL_MAX: Spec = Spec {
    value: "DUR",
    vars: &["TANDEM_POLL_MAX"],
    help: "longest interval between readiness polls, default 85ms [TANDEM_POLL_MAX]",
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
/// `--job-containers NAME[,NAME]`, repeatable.
pub const JOB_CONTAINERS: Spec = Spec {
    value: "NAME[,NAME]",
    vars: &[vars::JOB_CONTAINERS],
    help: "every job container of the Pod under tandem, this one\n\
           included: the last to finish stops the sidecars\n\
           [TANDEM_JOB_CONTAINERS]",
    ..Spec::new("--job-containers", Kind::Repeated)
};
/// `--container-name NAME`
pub const CONTAINER_NAME: Spec = Spec {
    value: "NAME",
    vars: &[vars::CONTAINER_NAME],
    help: "this container's name in --job-containers [TANDEM_CONTAINER_NAME]",
    ..Spec::new("--container-name", Kind::Value)
};
/// `--shared-dir DIR`
pub const SHARED_DIR: Spec = Spec {
    value: "DIR",
    vars: &[vars::SHARED_DIR],
    help: "a directory every job container mounts (an emptyDir)\n\
           to record who has finished [TANDEM_SHARED_DIR]",
    ..Spec::new("--shared-dir", Kind::Value)
};
/// `--on-exit COMMAND`
pub const ON_EXIT: Spec = Spec {
    value: "COMMAND",
    vars: &["TANDEM_ON_EXIT"],
    help: "run COMMAND after the app, before the sidecars quit: one\n\
           string, split as sh splits words, nothing expanded [TANDEM_ON_EXIT]",
    ..Spec::new("--on-exit", Kind::Value)
};
/// `--on-exit-timeout DUR`
pub const ON_EXIT_TIMEOUT: Spec = Spec {
    value: "DUR",
    vars: &["TANDEM_ON_EXIT_TIMEOUT"],
    help: "bound on the --on-exit program's run, default 30s\n\
           [TANDEM_ON_EXIT_TIMEOUT]",
    ..Spec::new("--on-exit-timeout", Kind::Value)
};
/// `--wait-only`
pub const WAIT_ONLY: Spec = Spec::new("--wait-only", Kind::Task(&Task::WaitOnly));
/// `--quit-only`
pub const QUIT_ONLY: Spec = Spec::new("--quit-only", Kind::Task(&Task::QuitOnly));
/// `--install-to DIR`
pub const INSTALL_TO: Spec = Spec {
    name: "--install-to",
    short: None,
    // The row's directory stays empty: `cli` puts the option's value in its place.
    kind: Kind::Task(&Task::InstallTo(PathBuf::new())),
    value: "DIR",
    vars: &[],
    help: "",
};
/// `--help`, `-h`
pub const HELP: Spec = Spec {
    short: Some('h'),
    ..Spec::new("--help", Kind::Task(&Task::Help))
};
/// `--version`, `-V`
pub const VERSION: Spec = Spec {
    short: Some('V'),
    ..Spec::new("--version", Kind::Task(&Task::Version))
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
    &KEEP_ON_EXIT,
    &LOG,
    &LOG_FORMAT,
    &READY,
    &MESH,
    &POLL_MAX,
    &FORWARD_TO,
    &TERMINATION_LOG,
    &JOB_CONTAINERS,
    &CONTAINER_NAME,
    &SHARED_DIR,
    &ON_EXIT,
    &ON_EXIT_TIMEOUT,
    &WAIT_ONLY,
    &QUIT_ONLY,
    &INSTALL_TO,
    &HELP,
    &VERSION,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mesh_help_names_every_preset_in_table_order() {
        let presets: Vec<&str> = crate::sidecars::SIDECARS.iter().map(|s| s.preset).collect();
        let listed = format!("presets: {} [TANDEM_MESH]", presets.join(", "));
        assert!(MESH.help.contains(&listed), "{}", MESH.help);
    }

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
}
