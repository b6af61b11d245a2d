//! The command line and the environment as the user meets them (SPEC §1, §2, §7):
//! usage errors, `--help`/`--version`, and "bad values are errors" — each bad
//! value exits 64 with one line naming it, before anything is contacted or started.

use crate::support::{
    FakeAdmin, Out, RUN_TIMEOUT, Script, app_touching, run, start, tandem, tandem_at, temp_dir,
    wait_until,
};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// How long a request that tandem might have sent just before exiting may take
/// to show up in the fake's log.
const LATE_REQUEST: Duration = Duration::from_millis(50);

/// Every environment variable of SPEC §2.
const SPEC_VARIABLES: [&str; 21] = [
    "ENVOY_ADMIN_API",
    "START_WITHOUT_ENVOY",
    "WAIT_FOR_ENVOY_TIMEOUT",
    "QUIT_WITHOUT_ENVOY_TIMEOUT",
    "ISTIO_QUIT_API",
    "ENVOY_KILL_API",
    "GENERIC_QUIT_ENDPOINTS",
    "GENERIC_QUIT_ONLY",
    "QUIT_REQUEST_TIMEOUT",
    "NEVER_KILL_ISTIO",
    "NEVER_KILL_ENVOY",
    "NEVER_KILL_ISTIO_ON_FAILURE",
    "ALWAYS_KILL_ENVOY",
    "SCUTTLE_LOGGING",
    "ENVOY_PREFLIGHT_LOGGING",
    "TANDEM_LOG",
    "TANDEM_LOG_FORMAT",
    "TANDEM_READY_URLS",
    "TANDEM_MESH",
    "TANDEM_POLL_MAX",
    "TANDEM_FORWARD_TO",
];

/// Every option of SPEC §1 and §2.
const SPEC_OPTIONS: [&str; 24] = [
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
    "--keep-on-exit",
    "--log ",
    "--log-format",
    "--ready",
    "--mesh",
    "--poll-max",
    "--forward-to",
    "--wait-only",
    "--quit-only",
    "--install-to",
    "--help",
    "--version",
    "--",
];

/// A tandem whose every sidecar setting points at `fake`: admin, extra readiness
/// URL and generic quit endpoint. Whatever tandem contacts, the fake logs it.
fn aimed_at(fake: &FakeAdmin) -> Command {
    let mut cmd = tandem_at(fake);
    cmd.env("TANDEM_READY_URLS", format!("{}/ready", fake.url()))
        .env(
            "GENERIC_QUIT_ENDPOINTS",
            format!("{}/generic-quit", fake.url()),
        );
    cmd
}

/// Asserts that `fake` never got a request, allowing a late one time to arrive.
fn assert_untouched(fake: &FakeAdmin, out: &Out) {
    let contacted = wait_until(LATE_REQUEST, || !fake.requests().is_empty());
    assert!(
        !contacted,
        "tandem contacted a sidecar before refusing\n{}",
        out.dump_with(&[fake])
    );
}

/// Runs tandem with `env` on top of a configuration aimed at a fake, with
/// `args` and an app that would leave a marker; asserts exit 64, one stderr line
/// containing every one of `needles`, nothing on stdout, no request, no app.
fn assert_refused(env: &[(&str, &str)], args: &[&str], needles: &[&str]) {
    let fake = start(Script::envoy());
    let dir = temp_dir("refused");
    let marker = dir.join("started");
    let mut cmd = aimed_at(&fake);
    cmd.envs(env.iter().copied()).args(args);
    app_touching(&mut cmd, &marker);
    let out = run(&mut cmd, RUN_TIMEOUT);
    assert_eq!(out.code, Some(64), "expected exit 64\n{}", out.dump());
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "expected one stderr line\n{}", out.dump());
    for needle in needles {
        assert!(
            lines[0].contains(needle),
            "the error line does not name {needle:?}\n{}",
            out.dump()
        );
    }
    assert!(out.stdout.is_empty(), "stdout is not empty\n{}", out.dump());
    assert!(
        !marker.exists(),
        "the app was started despite a bad value\n{}",
        out.dump()
    );
    assert_untouched(&fake, &out);
}

/// [`assert_refused`] for a bad value: the line names `name` and `value`, and
/// says what is expected (SPEC §2).
fn assert_bad_value(env: &[(&str, &str)], args: &[&str], name: &str, value: &str) {
    assert_refused(env, args, &[name, value, "expected"]);
}

/// [`assert_bad_value`] for the variable `var` set to `value`.
fn assert_bad_variable(var: &str, value: &str) {
    assert_bad_value(&[(var, value)], &[], var, value);
}

/// [`assert_bad_value`] for `option value` on the command line.
fn assert_bad_option(option: &str, value: &str) {
    assert_bad_value(&[], &[option, value], option, value);
}

#[test]
fn no_command_prints_usage_to_stderr_and_exits_64() {
    let fake = start(Script::envoy());
    let out = run(&mut aimed_at(&fake), RUN_TIMEOUT);
    assert_eq!(out.code, Some(64), "{}", out.dump());
    assert!(out.stdout.is_empty(), "{}", out.dump());
    assert!(out.stderr.contains("Usage:"), "{}", out.dump());
    assert!(out.stderr.contains("COMMAND"), "{}", out.dump());
    assert_untouched(&fake, &out);
}

#[test]
fn unknown_option_exits_64_naming_it() {
    assert_refused(&[], &["--bogus"], &["--bogus"]);
    assert_refused(&[], &["-z"], &["-z"]);
}

#[test]
fn missing_option_value_exits_64_naming_the_option() {
    let fake = start(Script::envoy());
    for option in ["--admin", "--wait-timeout", "--ready", "--install-to"] {
        let out = run(aimed_at(&fake).arg(option), RUN_TIMEOUT);
        assert_eq!(out.code, Some(64), "{}", out.dump());
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.dump());
        assert!(out.stderr.contains(option), "{}", out.dump());
        assert!(out.stdout.is_empty(), "{}", out.dump());
        assert_untouched(&fake, &out);
    }
}

#[test]
fn wait_only_with_a_command_exits_64() {
    assert_refused(&[], &["--wait-only"], &["--wait-only"]);
    assert_refused(&[], &["--quit-only"], &["--quit-only"]);
}

#[test]
fn two_modes_exit_64() {
    let fake = start(Script::envoy());
    let out = run(
        aimed_at(&fake).args(["--wait-only", "--quit-only"]),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(64), "{}", out.dump());
    assert!(out.stderr.contains("--quit-only"), "{}", out.dump());
    assert_untouched(&fake, &out);
}

#[test]
fn help_prints_usage_to_stdout_and_exits_0() {
    let out = run(tandem().arg("--help"), RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(out.stderr.is_empty(), "{}", out.dump());
    let help = out.stdout_str();
    assert!(help.contains("Usage:"), "{}", out.dump());
    for option in SPEC_OPTIONS {
        assert!(
            help.contains(option),
            "--help lacks {option}\n{}",
            out.dump()
        );
    }
}

#[test]
fn help_names_every_environment_variable() {
    let out = run(tandem().arg("--help"), RUN_TIMEOUT);
    let help = out.stdout_str();
    let missing: Vec<&str> = SPEC_VARIABLES
        .into_iter()
        .filter(|var| !help.contains(var))
        .collect();
    assert!(
        missing.is_empty(),
        "--help lacks {missing:?}\n{}",
        out.dump()
    );
}

#[test]
fn version_prints_one_line_to_stdout_and_exits_0() {
    let out = run(tandem().arg("--version"), RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(out.stderr.is_empty(), "{}", out.dump());
    // The commit in the parentheses is checked in tests/version.rs.
    let line = out.stdout_str();
    assert!(
        line.starts_with(&format!("tandem {} (commit ", env!("CARGO_PKG_VERSION")))
            && line.ends_with(")\n")
            && line.lines().count() == 1,
        "{}",
        out.dump()
    );
}

#[test]
fn help_and_version_contact_nothing() {
    let fake = start(Script::envoy());
    for flag in ["--help", "--version"] {
        let out = run(aimed_at(&fake).arg(flag), RUN_TIMEOUT);
        assert_eq!(out.code, Some(0), "{}", out.dump());
        assert_untouched(&fake, &out);
    }
}

#[test]
fn bad_duration_exits_64_naming_the_variable() {
    assert_bad_variable("WAIT_FOR_ENVOY_TIMEOUT", "5x");
    assert_bad_variable("QUIT_WITHOUT_ENVOY_TIMEOUT", "1.5");
    assert_bad_variable("QUIT_REQUEST_TIMEOUT", "five seconds");
}

#[test]
fn negative_duration_option_exits_64_naming_the_option() {
    assert_bad_option("--quit-timeout", "-1s");
    assert_bad_option("--fail-timeout", "-5ms");
}

#[test]
fn bad_boolean_exits_64_naming_the_variable() {
    for var in [
        "START_WITHOUT_ENVOY",
        "GENERIC_QUIT_ONLY",
        "NEVER_KILL_ISTIO",
        "NEVER_KILL_ENVOY",
        "NEVER_KILL_ISTIO_ON_FAILURE",
        "ALWAYS_KILL_ENVOY",
    ] {
        assert_bad_variable(var, "maybe");
    }
}

#[test]
fn bad_keep_on_exit_exits_64_naming_it_and_the_grammar() {
    // A word, a status over 255, a run that goes down, an empty item.
    for value in ["true", "256", "5-2", "1,,2"] {
        let quoted = format!("{value:?}");
        let grammar = "exit statuses 0-255 and runs A-B";
        let env = [("TANDEM_KEEP_ON_EXIT", value)];
        assert_refused(&env, &[], &["TANDEM_KEEP_ON_EXIT", &quoted, grammar]);
        let args = ["--keep-on-exit", value];
        assert_refused(&[], &args, &["--keep-on-exit", &quoted, grammar]);
    }
}

#[test]
fn bad_admin_url_exits_64_naming_the_variable() {
    for url in [
        "ftp://x",
        "127.0.0.1:15000",
        "http://",
        "http://:15000",
        "http://127.0.0.1:0",
        "http://127.0.0.1:65536",
        "http://127.0.0.1:http",
    ] {
        assert_bad_variable("ENVOY_ADMIN_API", url);
    }
}

#[test]
fn bad_url_option_exits_64_naming_the_option() {
    assert_bad_option("--admin", "ftp://x");
    assert_bad_option("--istio-quit", "http://127.0.0.1:0");
    assert_bad_option("--envoy-quit", "http:///quitquitquit");
}

#[test]
fn bad_url_in_a_list_exits_64_naming_the_list_and_the_item() {
    assert_bad_value(
        &[("GENERIC_QUIT_ENDPOINTS", "http://127.0.0.1:1/quit, ftp://x")],
        &[],
        "GENERIC_QUIT_ENDPOINTS",
        "ftp://x",
    );
    assert_bad_variable("TANDEM_READY_URLS", "http://127.0.0.1:65536/ready");
    assert_bad_option("--ready", "gopher://x");
    assert_bad_option("--quit", "http://");
}

#[test]
fn https_url_exits_64_in_a_build_without_tls() {
    if cfg!(feature = "rustls") {
        return;
    }
    let fake = start(Script::envoy());
    assert_bad_variable("ENVOY_ADMIN_API", &format!("https://{}", fake.addr()));
}

#[test]
fn a_bare_number_as_a_duration_is_refused_with_seconds_suggested() {
    assert_refused(
        &[("WAIT_FOR_ENVOY_TIMEOUT", "30")],
        &[],
        &["WAIT_FOR_ENVOY_TIMEOUT", "\"30\"", "did you mean 30s?"],
    );
    assert_refused(&[], &["--quit-timeout", "1.5"], &["did you mean 1.5s?"]);
}

#[test]
fn a_url_without_its_scheme_is_refused_with_http_suggested() {
    assert_refused(
        &[("ENVOY_ADMIN_API", "127.0.0.1:15000")],
        &[],
        &["ENVOY_ADMIN_API", "did you mean http://127.0.0.1:15000?"],
    );
    // No guess where adding the scheme would not make it valid.
    let out = run(
        tandem().env("ENVOY_ADMIN_API", "ftp://x").arg("true"),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(64), "{}", out.dump());
    assert!(!out.stderr.contains("did you mean"), "{}", out.dump());
}

#[test]
fn a_bad_url_names_only_the_schemes_this_build_accepts() {
    let out = run(tandem().args(["--admin", "ftp://x", "true"]), RUN_TIMEOUT);
    assert_eq!(out.code, Some(64), "{}", out.dump());
    assert!(out.stderr.contains("http://"), "{}", out.dump());
    assert_eq!(
        out.stderr.contains("https://"),
        cfg!(feature = "rustls"),
        "{}",
        out.dump()
    );
}

#[test]
fn unknown_preset_exits_64_naming_it() {
    assert_bad_variable("TANDEM_MESH", "consul");
    assert_bad_value(&[], &["--mesh", "istio,nope"], "--mesh", "nope");
}

#[test]
fn bad_log_level_exits_64_naming_it() {
    assert_bad_variable("TANDEM_LOG", "loud");
    assert_bad_variable("SCUTTLE_LOGGING", "maybe");
    assert_bad_variable("ENVOY_PREFLIGHT_LOGGING", "2");
    assert_bad_option("--log", "verbose");
}

#[test]
fn bad_log_format_exits_64_naming_it() {
    assert_bad_variable("TANDEM_LOG_FORMAT", "xml");
    assert_bad_option("--log-format", "yaml");
}

#[test]
fn bad_forward_to_exits_64_naming_it() {
    assert_bad_variable("TANDEM_FORWARD_TO", "parent");
    assert_bad_option("--forward-to", "all");
}

#[test]
fn zero_poll_max_exits_64_naming_it() {
    assert_bad_variable("TANDEM_POLL_MAX", "0");
    assert_bad_option("--poll-max", "0s");
    assert_bad_variable("TANDEM_POLL_MAX", "-1s");
}

#[test]
fn bad_value_is_reported_even_with_quiet_logging() {
    assert_bad_value(
        &[
            ("SCUTTLE_LOGGING", "false"),
            ("WAIT_FOR_ENVOY_TIMEOUT", "5x"),
        ],
        &[],
        "WAIT_FOR_ENVOY_TIMEOUT",
        "5x",
    );
}

#[test]
fn bad_value_stops_quit_only_before_any_quit() {
    let fake = start(Script::envoy());
    let out = run(
        aimed_at(&fake)
            .env("QUIT_REQUEST_TIMEOUT", "soon")
            .arg("--quit-only"),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(64), "{}", out.dump());
    assert!(
        out.stderr.contains("QUIT_REQUEST_TIMEOUT"),
        "{}",
        out.dump()
    );
    assert_untouched(&fake, &out);
}

#[test]
fn admin_option_overrides_a_bad_variable() {
    let fake = start(Script::envoy());
    let dir = temp_dir("admin-override");
    let marker = dir.join("started");
    let mut cmd = tandem();
    cmd.env("ENVOY_ADMIN_API", "ftp://not-read")
        .args(["--admin", &fake.url()]);
    app_touching(&mut cmd, &marker);
    let out = run(&mut cmd, RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump_with(&[&fake]));
    assert!(marker.exists(), "{}", out.dump());
    assert!(
        fake.count("GET", "/ready") >= 1,
        "--admin was not polled\n{}",
        out.dump_with(&[&fake])
    );
}

#[test]
fn duration_and_log_options_override_bad_variables() {
    let dir = temp_dir("options-override");
    let marker = dir.join("started");
    let mut cmd = tandem();
    cmd.envs([
        ("WAIT_FOR_ENVOY_TIMEOUT", "5x"),
        ("QUIT_WITHOUT_ENVOY_TIMEOUT", "5x"),
        ("QUIT_REQUEST_TIMEOUT", "5x"),
        ("TANDEM_POLL_MAX", "0"),
        ("TANDEM_LOG", "loud"),
        ("TANDEM_LOG_FORMAT", "xml"),
        ("TANDEM_FORWARD_TO", "parent"),
    ])
    .args([
        "--wait-timeout",
        "0",
        "--fail-timeout",
        "0",
        "--quit-timeout",
        "1s",
        "--poll-max",
        "100ms",
        "--log",
        "info",
        "--log-format",
        "text",
        "--forward-to",
        "group",
    ]);
    app_touching(&mut cmd, &marker);
    let out = run(&mut cmd, RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(marker.exists(), "{}", out.dump());
}

#[test]
fn ready_and_quit_options_replace_bad_variable_lists() {
    let fake = start(Script::generic());
    let dir = temp_dir("lists-override");
    let marker = dir.join("started");
    let mut cmd = tandem();
    cmd.env("TANDEM_READY_URLS", "ftp://not-read")
        .env("GENERIC_QUIT_ENDPOINTS", "ftp://not-read")
        .args(["--ready", &format!("{}/up", fake.url())])
        .args(["--quit", &format!("{}/down", fake.url())]);
    app_touching(&mut cmd, &marker);
    let out = run(&mut cmd, RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump_with(&[&fake]));
    assert!(marker.exists(), "{}", out.dump());
    assert!(fake.count("GET", "/up") >= 1, "{}", out.dump_with(&[&fake]));
    assert_eq!(
        fake.count("POST", "/down"),
        1,
        "{}",
        out.dump_with(&[&fake])
    );
}

#[test]
fn arguments_after_the_command_are_passed_untouched() {
    let out = run(
        tandem().args([
            "--log",
            "off",
            "sh",
            "-c",
            "printf '%s|' \"$@\"",
            "sh",
            "--admin",
            "ftp://x",
            "--help",
            "--",
            "-V",
        ]),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(
        out.stdout_str(),
        "--admin|ftp://x|--help|--|-V|",
        "{}",
        out.dump()
    );
}

#[test]
fn double_dash_ends_options_so_a_command_may_start_with_a_dash() {
    let dir = temp_dir("dash-command");
    let script = dir.join("-app");
    std::fs::write(&script, "#!/bin/sh\nprintf 'dash app %s' \"$1\"\n").expect("write script");
    make_executable(&script);
    let path = format!("{}:/usr/bin:/bin", dir.display());

    let out = run(
        tandem()
            .env("PATH", &path)
            .args(["--", "-app", "--version"]),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(out.stdout_str(), "dash app --version", "{}", out.dump());

    // Without `--`, the same word is an option, and an unknown one.
    let out = run(tandem().env("PATH", &path).arg("-app"), RUN_TIMEOUT);
    assert_eq!(out.code, Some(64), "{}", out.dump());
    assert!(out.stdout.is_empty(), "{}", out.dump());
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn bad_url_error_never_shows_credentials() {
    let fake = start(Script::envoy());
    let mut cmd = aimed_at(&fake);
    cmd.env("ENVOY_ADMIN_API", "ftp://user:secret@127.0.0.1:1")
        .env("GENERIC_QUIT_ENDPOINTS", "http://u:secret@127.0.0.1:0/quit")
        .arg("true");
    let out = run(&mut cmd, RUN_TIMEOUT);
    assert_eq!(out.code, Some(64), "expected exit 64\n{}", out.dump());
    assert!(out.stderr.contains("ENVOY_ADMIN_API"), "{}", out.dump());
    assert!(
        !out.stderr.contains("secret"),
        "password leaked\n{}",
        out.dump()
    );
    let mut cmd = aimed_at(&fake);
    cmd.env("GENERIC_QUIT_ENDPOINTS", "http://u:secret@127.0.0.1:0/quit")
        .arg("true");
    let out = run(&mut cmd, RUN_TIMEOUT);
    assert_eq!(out.code, Some(64), "expected exit 64\n{}", out.dump());
    assert!(
        out.stderr.contains("GENERIC_QUIT_ENDPOINTS"),
        "{}",
        out.dump()
    );
    assert!(
        !out.stderr.contains("secret"),
        "password leaked\n{}",
        out.dump()
    );
    assert_untouched(&fake, &out);
}
