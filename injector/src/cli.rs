//! The command line (SPEC §10): `--listen`, `--tls-cert`, `--tls-key`,
//! `--image`, `--install`, `--drain`, `--registry-auth`, `--registry-ca`,
//! `--registry-allow`, each with its variable (the option wins); the `policy` command with `--image` and
//! `--install`, `webhook` with `--install` and `--failure-policy`, and `audit [FILE|-]` with
//! `--output`. `args` is the one lexopt loop,
//! filling the named fields of the `options` table's rows (each row names the
//! commands that take it); the values are checked here, before anything is
//! opened (`values`); a bad or missing value is one line naming the option or
//! variable, the value and what is expected (exit 64, as the wrapper). `help`
//! renders `--help`. Two variables left out of `--help` shorten the connection
//! limits for tests.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::inject::delivery::{Install, Mode};
use crate::inject::route::Route;
use crate::registry::{self, Allow, Credentials};
use crate::server::Limits;
use crate::server::tls::Files;

mod args;
mod help;
mod options;
mod values;

use crate::audit::command::Output;
use crate::webhook::FailurePolicy;
use args::Read;
pub use help::{HELP_WIDTH, help};
use options::{CERT, Command, Given, IMAGE, KEY, Setting};
use values::{
    missing, parse_duration, parse_failure_policy, parse_image, parse_listen, parse_mode,
    parse_output, parse_route,
};

/// Exit status for bad usage (sysexits' EX_USAGE).
pub const EX_USAGE: u8 = 64;
/// The listen address when neither option nor variable gives one.
pub const DEFAULT_LISTEN: &str = "0.0.0.0:8443";

/// What a run serves with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Where to accept HTTPS. Default: `0.0.0.0:8443`.
    pub listen: SocketAddr,
    /// The certificate and key files.
    pub files: Files,
    /// The tandem image and its route into the Pods.
    pub install: Install,
    /// The connections' time limits and the drain on SIGTERM.
    pub limits: Limits,
    /// Registry logins (`--registry-auth`); none by default.
    pub registry_auth: Credentials,
    /// Extra CA certificates (DER) for registries (`--registry-ca`).
    pub registry_ca: Vec<Vec<u8>>,
    /// The registries that may be looked up (`--registry-allow`); empty: any.
    pub registry_allow: Allow,
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Task {
    /// Serve.
    Run(Config),
    /// Print the admission policies for this image and route (`policy`).
    Policy(Install),
    /// Print the webhook's configuration for this route and failure policy
    /// (`webhook`).
    Webhook(Mode, FailurePolicy),
    /// Audit a List of Pods (`audit`).
    Audit(crate::audit::command::Args),
    /// Print the help text.
    Help,
    /// Print the version.
    Version,
}

/// Hidden: how long a kept-alive connection may idle (default 120s), for tests.
pub const IDLE_VAR: &str = "TANDEM_INJECTOR_IDLE_TIMEOUT";
/// Hidden: a request's time limit from its first byte (default 10s), for tests.
pub const REQUEST_VAR: &str = "TANDEM_INJECTOR_REQUEST_TIMEOUT";

/// Reads the command line `args` (without the program name) and the variables
/// through `var`.
pub fn parse(
    args: impl IntoIterator<Item = OsString>,
    var: impl Fn(&str) -> Option<OsString>,
) -> Result<Task, String> {
    match args::read(args, &var)? {
        Read::Help => Ok(Task::Help),
        Read::Version => Ok(Task::Version),
        Read::Command(Command::Policy, given) => Ok(Task::Policy(install(&given)?)),
        Read::Command(Command::Webhook, given) => {
            Ok(Task::Webhook(mode(&given)?, failure_policy(&given)?))
        }
        Read::Command(Command::Audit, given) => audit(&given).map(Task::Audit),
        Read::Command(Command::Serve, given) => serve(*given, &var).map(Task::Run),
    }
}

/// `--image` (required), `--install` and `--route`.
fn install(given: &Given) -> Result<Install, String> {
    let image = match &given.image {
        Some(Setting { from, value }) => parse_image(from, value)?,
        None => return Err(missing(&IMAGE)),
    };
    Ok(Install {
        image,
        mode: mode(given)?,
        route: route(given)?,
    })
}

/// `--route`, `wrap` when not given.
fn route(given: &Given) -> Result<Route, String> {
    match &given.route {
        Some(Setting { from, value }) => parse_route(from, value),
        None => Ok(Route::default()),
    }
}

/// `audit`'s FILE (`-` or none: standard input) and `--output`.
fn audit(given: &Given) -> Result<crate::audit::command::Args, String> {
    let output = match &given.output {
        Some(Setting { from, value }) => parse_output(from, value)?,
        None => Output::default(),
    };
    let input = given.input.clone().filter(|f| f != "-").map(PathBuf::from);
    let route = route(given)?;
    Ok(crate::audit::command::Args {
        input,
        output,
        route,
    })
}

/// `--install`, `emptydir` when not given.
fn mode(given: &Given) -> Result<Mode, String> {
    match &given.install {
        Some(Setting { from, value }) => parse_mode(from, value),
        None => Ok(Mode::default()),
    }
}

/// `--failure-policy`, `Fail` when not given.
fn failure_policy(given: &Given) -> Result<FailurePolicy, String> {
    match &given.failure_policy {
        Some(Setting { from, value }) => parse_failure_policy(from, value),
        None => Ok(FailurePolicy::default()),
    }
}

/// The server's settings, checked in the order their error lines have always
/// come in: image and route, drain, registry files, hidden limits, address,
/// certificate and key.
fn serve(given: Given, var: &impl Fn(&str) -> Option<OsString>) -> Result<Config, String> {
    let install = install(&given)?;
    let mut limits = Limits::default();
    if let Some(Setting { from, value }) = &given.drain {
        limits.drain = parse_duration(from, value, false)?;
    }
    let registry_auth = match &given.registry_auth {
        Some(Setting { from, value }) => Credentials::load(Path::new(value))
            .map_err(|e| format!("{from}: {e}: expected a Docker config.json with \"auths\""))?,
        None => Credentials::default(),
    };
    let registry_ca = match &given.registry_ca {
        Some(Setting { from, value }) => {
            registry::load_ca(Path::new(value)).map_err(|e| format!("{from} {e}"))?
        }
        None => Vec::new(),
    };
    let registry_allow = match &given.registry_allow {
        Some(Setting { from, value }) => parse_allow(from, value)?,
        None => Allow::default(),
    };
    for (name, limit) in [
        (IDLE_VAR, &mut limits.idle),
        (REQUEST_VAR, &mut limits.request),
    ] {
        if let Some(v) = var(name).filter(|v| !v.is_empty()) {
            *limit = parse_duration(name, &v, true)?;
        }
    }
    let listen = match &given.listen {
        Some(Setting { from, value }) => parse_listen(from, value)?,
        None => DEFAULT_LISTEN
            .parse()
            .map_err(|_| "invariant: the default listen address parses")?,
    };
    let cert = given.tls_cert.ok_or_else(|| missing(&CERT))?.value.into();
    let key = given.tls_key.ok_or_else(|| missing(&KEY))?.value.into();
    Ok(Config {
        listen,
        files: Files { cert, key },
        install,
        limits,
        registry_auth,
        registry_ca,
        registry_allow,
    })
}

/// `--registry-allow`'s list.
fn parse_allow(from: &str, value: &OsString) -> Result<Allow, String> {
    value
        .to_str()
        .ok_or_else(|| "not UTF-8".to_string())
        .and_then(Allow::parse)
        .map_err(|e| {
            format!(
                "{from} {value:?}: {e}: expected HOST[:PORT] or *.DOMAIN[:PORT], comma-separated"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::time::Duration;

    fn run(args: &str, vars: &[(&str, &str)]) -> Result<Task, String> {
        let vars: Vec<(String, OsString)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        parse(args.split_whitespace().map(OsString::from), |name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    const NEEDED: &str = "--tls-cert c.pem --tls-key k.pem --image img:1";

    #[test]
    fn options_override_variables_and_listen_has_a_default() {
        let Ok(Task::Run(c)) = run(NEEDED, &[("TANDEM_INJECTOR_IMAGE", "other")]) else {
            panic!()
        };
        assert_eq!(c.listen.to_string(), "0.0.0.0:8443");
        assert_eq!(c.install.image, "img:1");
        assert_eq!(c.install.mode, Mode::EmptyDir);
        assert_eq!(c.files.cert, PathBuf::from("c.pem"));
        let vars = [
            ("TANDEM_INJECTOR_LISTEN", "127.0.0.1:9443"),
            ("TANDEM_INJECTOR_TLS_CERT", "/tls/tls.crt"),
            ("TANDEM_INJECTOR_TLS_KEY", "/tls/tls.key"),
            ("TANDEM_INJECTOR_IMAGE", "ghcr.io/x/tandem:1"),
            ("TANDEM_INJECTOR_INSTALL", "image-volume"),
        ];
        let Ok(Task::Run(c)) = run("", &vars) else {
            panic!()
        };
        assert_eq!(c.listen.to_string(), "127.0.0.1:9443");
        assert_eq!(c.files.key, PathBuf::from("/tls/tls.key"));
        assert_eq!(c.install.image, "ghcr.io/x/tandem:1");
        assert_eq!(c.install.mode, Mode::ImageVolume);
        assert_eq!(c.limits, Limits::default());
        let Ok(Task::Run(c)) = run(
            &format!("{NEEDED} --drain 1m30s"),
            &[
                (IDLE_VAR, "3s"),
                (REQUEST_VAR, "500ms"),
                ("TANDEM_INJECTOR_DRAIN", "0"),
            ],
        ) else {
            panic!()
        };
        let (s, ms) = (Duration::from_secs, Duration::from_millis);
        assert_eq!(
            (c.limits.drain, c.limits.idle, c.limits.request),
            (s(90), s(3), ms(500))
        );
        let Ok(Task::Run(c)) = run(NEEDED, &[("TANDEM_INJECTOR_DRAIN", "0")]) else {
            panic!()
        };
        assert_eq!(c.limits.drain, Duration::ZERO);
        assert_eq!(run("--listen [::1]:0 --help", &[]), Ok(Task::Help));
        assert_eq!(run("--version", &[]), Ok(Task::Version));
    }

    #[test]
    fn bad_or_missing_values_name_the_option_or_variable_and_what_is_expected() {
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
        let cases: &[Case] = &[
            (
                "--tls-key k --image i",
                &[],
                "missing --tls-cert PEM (or TANDEM_INJECTOR_TLS_CERT)",
            ),
            (
                "--tls-cert c --image i",
                &[],
                "missing --tls-key PEM (or TANDEM_INJECTOR_TLS_KEY)",
            ),
            (
                "--tls-cert c --tls-key k",
                &[("TANDEM_INJECTOR_IMAGE", "")],
                "missing --image IMAGE",
            ),
            (
                NEEDED,
                &[("TANDEM_INJECTOR_LISTEN", "localhost:8443")],
                "TANDEM_INJECTOR_LISTEN \"localhost:8443\": expected an IP address and a port",
            ),
            (
                "--listen 8443 --tls-cert c --tls-key k --image i",
                &[],
                "--listen \"8443\": expected",
            ),
            (
                "--tls-cert c --tls-key k --image a\tb",
                &[],
                "unexpected argument",
            ),
            (
                "--tls-cert c --tls-key k --image",
                &[],
                "--image: missing argument",
            ),
            ("--port 1", &[], "unknown option --port (see --help)"),
            (
                NEEDED,
                &[("TANDEM_INJECTOR_DRAIN", "10")],
                "TANDEM_INJECTOR_DRAIN \"10\": expected a duration like 300ms, 1.5s or 2m30s",
            ),
            (
                NEEDED,
                &[(IDLE_VAR, "0")],
                "TANDEM_INJECTOR_IDLE_TIMEOUT \"0\": expected a duration above 0",
            ),
            (
                "--install copy --tls-cert c --tls-key k --image i",
                &[],
                "--install \"copy\": expected emptydir or image-volume",
            ),
            (
                "policy --image i",
                &[("TANDEM_INJECTOR_INSTALL", "Image-Volume")],
                "TANDEM_INJECTOR_INSTALL \"Image-Volume\": expected emptydir or image-volume",
            ),
            ("policy --install emptydir", &[], "missing --image IMAGE"),
            (
                "policy --image i --tls-cert c",
                &[],
                "--tls-cert is not an option of policy",
            ),
            (
                "policy --image i policy",
                &[],
                "unexpected argument \"policy\"",
            ),
            ("serve", &[], "unexpected argument \"serve\""),
            (
                "webhook --failure-policy ignore",
                &[],
                "--failure-policy \"ignore\": expected Fail or Ignore",
            ),
            (
                "webhook",
                &[("TANDEM_INJECTOR_FAILURE_POLICY", "Never")],
                "TANDEM_INJECTOR_FAILURE_POLICY \"Never\": expected Fail or Ignore",
            ),
            (
                "--failure-policy Fail --tls-cert c --tls-key k --image i",
                &[],
                "--failure-policy is not an option of the server",
            ),
        ];
        for (args, vars, expected) in cases {
            let err = run(args, vars).unwrap_err();
            assert!(err.starts_with(expected), "{args}: {err}");
        }
        let err = parse(
            ["--tls-cert", "c", "--tls-key", "k", "--image", "a b"].map(OsString::from),
            |_| None,
        )
        .unwrap_err();
        assert!(
            err.starts_with("--image \"a b\": expected an image reference"),
            "{err}"
        );
    }

    #[test]
    fn webhook_fails_closed_unless_the_option_or_its_variable_says_ignore() {
        let fail = FailurePolicy::Fail;
        let ignore = FailurePolicy::Ignore;
        let var = [("TANDEM_INJECTOR_FAILURE_POLICY", "Ignore")];
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], Task);
        let cases: [Case; 4] = [
            ("webhook", &[], Task::Webhook(Mode::EmptyDir, fail)),
            ("webhook", &var, Task::Webhook(Mode::EmptyDir, ignore)),
            (
                "webhook --failure-policy Fail",
                &var,
                Task::Webhook(Mode::EmptyDir, fail),
            ),
            (
                "webhook --install image-volume --failure-policy Ignore",
                &[],
                Task::Webhook(Mode::ImageVolume, ignore),
            ),
        ];
        for (args, vars, expected) in cases {
            assert_eq!(run(args, vars), Ok(expected), "{args} {vars:?}");
        }
    }

    #[test]
    fn policy_takes_the_image_and_the_route_and_no_server_setting() {
        let vars = [
            ("TANDEM_INJECTOR_TLS_CERT", "not read"),
            ("TANDEM_INJECTOR_LISTEN", "not an address: not read either"),
            ("TANDEM_INJECTOR_INSTALL", "image-volume"),
        ];
        let expected = Install {
            image: "img:1".into(),
            mode: Mode::ImageVolume,
            route: Route::Wrap,
        };
        assert_eq!(
            run("policy --image img:1", &vars),
            Ok(Task::Policy(expected))
        );
        let Ok(Task::Policy(install)) = run("--install emptydir policy --image img:2", &vars)
        else {
            panic!()
        };
        assert_eq!(install.mode, Mode::EmptyDir, "the option wins");
    }

    #[test]
    fn registry_files_are_read_at_start_and_a_bad_one_is_named() {
        let dir = std::env::temp_dir().join(format!("tandem-injector-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let auth = dir.join("config.json");
        std::fs::write(&auth, r#"{"auths":{"r.example":{"auth":"dTpw"}}}"#).unwrap();
        let not_pem = dir.join("ca.txt");
        std::fs::write(&not_pem, "no certificate here").unwrap();
        let args = format!("{NEEDED} --registry-auth {}", auth.display());
        let Ok(Task::Run(c)) = run(&args, &[]) else {
            panic!()
        };
        assert_eq!(c.registry_auth.for_host("r.example").unwrap().username, "u");
        assert!(c.registry_ca.is_empty());
        let missing = dir.join("missing.json");
        let cases = [
            (
                format!("{NEEDED} --registry-auth {}", missing.display()),
                vec![],
                "--registry-auth: ",
            ),
            (
                NEEDED.to_string(),
                vec![("TANDEM_INJECTOR_REGISTRY_AUTH", not_pem.to_str().unwrap())],
                "TANDEM_INJECTOR_REGISTRY_AUTH: ",
            ),
            (
                format!("{NEEDED} --registry-ca {}", not_pem.display()),
                vec![],
                "--registry-ca ",
            ),
        ];
        for (args, vars, expected) in cases {
            let err = run(&args, &vars).unwrap_err();
            assert!(err.starts_with(expected), "{args}: {err}");
        }
        let err = run(
            &format!("{NEEDED} --registry-ca {}", not_pem.display()),
            &[],
        )
        .unwrap_err();
        assert!(err.contains("expected PEM CA certificates"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_allow_list_is_read_and_a_bad_entry_is_named() {
        let Ok(Task::Run(c)) = run(NEEDED, &[]) else {
            panic!()
        };
        assert!(c.registry_allow.is_empty());
        let allow = [(
            "TANDEM_INJECTOR_REGISTRY_ALLOW",
            "r.example, *.corp.example:5000",
        )];
        let Ok(Task::Run(c)) = run(NEEDED, &allow) else {
            panic!()
        };
        assert_eq!(
            c.registry_allow.to_string(),
            "r.example,*.corp.example:5000"
        );
        for (args, vars, expected) in [
            (
                format!("{NEEDED} --registry-allow r.example,,x"),
                vec![],
                "--registry-allow \"r.example,,x\": entry \"\": empty",
            ),
            (
                NEEDED.to_string(),
                vec![("TANDEM_INJECTOR_REGISTRY_ALLOW", "*.10.0.0.1")],
                "TANDEM_INJECTOR_REGISTRY_ALLOW \"*.10.0.0.1\": entry",
            ),
            (
                "policy --image i --registry-allow r.example".to_string(),
                vec![],
                "--registry-allow",
            ),
        ] {
            let err = run(&args, &vars).unwrap_err();
            assert!(err.starts_with(expected), "{args}: {err}");
        }
    }

    #[test]
    fn help_names_every_option_and_variable() {
        let text = help();
        for o in options::OPTIONS {
            assert!(text.contains(o.flag) && text.contains(o.var), "{}", o.flag);
        }
    }
}
