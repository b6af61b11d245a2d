//! The app's life under tandem, end to end (SPEC §1, §4, §7): exit statuses pass
//! through, exec failures map to 126/127, the app owns stdin/stdout/stderr, its
//! environment and working directory, signals reach it, and the modes
//! (`--wait-only`, `--quit-only`, `--install-to`) do what they say.

use crate::support::{
    Out, RUN_TIMEOUT, SIGHUP, SIGINT, SIGTERM, SIGUSR1, Script, Xorshift, closed_port, run, spawn,
    start, tandem, tandem_at, tandem_at_url, temp_dir, wait_until,
};
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Bound on waiting for the app to report that it runs.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// `tandem --log off sh -c SCRIPT sh ARGS…`: only the app writes output.
fn quiet_sh(script: &str, args: &[&str]) -> Command {
    let mut cmd = tandem();
    cmd.args(["--log", "off", "sh", "-c", script, "sh"])
        .args(args);
    cmd
}

/// A temporary directory removed when dropped, also when the test fails: these
/// tests leave copies of the binary and mebibytes of data behind otherwise.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        Scratch(temp_dir(name))
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Make a read-only test directory removable again; errors are harmless here.
        let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o755));
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn write_executable(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// The names in `dir`, sorted.
fn list(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|entry| {
            entry
                .expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// `len` reproducible bytes covering every value, NUL and 0xFF included.
fn noise(len: usize) -> Vec<u8> {
    Xorshift::new(0x1234_5678).bytes(len)
}

fn assert_code(out: &Out, code: i32) {
    assert_eq!(out.code, Some(code), "expected exit {code}\n{}", out.dump());
}

#[test]
fn exit_codes_pass_through() {
    for code in [0, 1, 42, 255] {
        let out = run(&mut quiet_sh(&format!("exit {code}"), &[]), RUN_TIMEOUT);
        assert_code(&out, code);
    }
}

#[test]
fn app_killed_by_sigterm_gives_143() {
    let out = run(&mut quiet_sh("kill -TERM $$", &[]), RUN_TIMEOUT);
    assert_code(&out, 143);
}

#[test]
fn app_killed_by_sigkill_gives_137() {
    let out = run(&mut quiet_sh("kill -KILL $$", &[]), RUN_TIMEOUT);
    assert_code(&out, 137);
}

#[test]
fn missing_command_exits_127_naming_it() {
    let out = run(tandem().arg("tandem-test-no-such-command"), RUN_TIMEOUT);
    assert_code(&out, 127);
    assert!(
        out.stderr.contains("tandem-test-no-such-command"),
        "{}",
        out.dump()
    );
    assert!(out.stdout.is_empty(), "{}", out.dump());
}

#[test]
fn missing_command_still_quits_the_sidecar() {
    let fake = start(Script::envoy());
    let out = run(
        tandem_at(&fake).arg("/nonexistent/tandem-test-app"),
        RUN_TIMEOUT,
    );
    assert_code(&out, 127);
    assert_eq!(
        fake.count("POST", "/quitquitquit"),
        1,
        "{}",
        out.dump_with(&[&fake])
    );
}

#[test]
fn non_executable_file_exits_126() {
    let dir = Scratch::new("not-executable");
    let file = dir.join("app.sh");
    std::fs::write(&file, "#!/bin/sh\nexit 0\n").expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let out = run(tandem().arg(&file), RUN_TIMEOUT);
    assert_code(&out, 126);
    assert!(out.stderr.contains("app.sh"), "{}", out.dump());

    let out = run(tandem().arg(&dir), RUN_TIMEOUT);
    assert_code(&out, 126);
    assert!(out.stderr.contains("is a directory"), "{}", out.dump());
}

#[test]
fn script_whose_interpreter_is_missing_exits_126_not_127() {
    let dir = Scratch::new("bad-interpreter");
    write_executable(&dir.join("app"), "#!/nonexistent/interpreter\nexit 0\n");
    let out = run(tandem().arg(dir.join("app")), RUN_TIMEOUT);
    assert_code(&out, 126);
    assert!(out.stderr.contains("interpreter"), "{}", out.dump());
    assert!(!out.stderr.contains("command not found"), "{}", out.dump());

    // Found through PATH, the same: it exists, so it is not "command not found".
    let path = format!("{}:/usr/bin:/bin", dir.display());
    let out = run(tandem().env("PATH", &path).arg("app"), RUN_TIMEOUT);
    assert_code(&out, 126);
    assert!(!out.stderr.contains("command not found"), "{}", out.dump());
}

#[test]
fn command_is_looked_up_in_path() {
    let dir = Scratch::new("path-lookup");
    write_executable(
        &dir.join("tandem-test-app"),
        "#!/bin/sh\nprintf 'found %s' \"$1\"\n",
    );
    let path = format!("/nonexistent:{}:/usr/bin:/bin", dir.display());
    let out = run(
        tandem()
            .env("PATH", &path)
            .args(["--log", "off", "tandem-test-app", "me"]),
        RUN_TIMEOUT,
    );
    assert_code(&out, 0);
    assert_eq!(out.stdout_str(), "found me", "{}", out.dump());

    // Not in PATH: not found, even though it is in the working directory.
    let out = run(
        tandem()
            .current_dir(&dir)
            .env("PATH", "/usr/bin:/bin")
            .arg("tandem-test-app"),
        RUN_TIMEOUT,
    );
    assert_code(&out, 127);
}

#[test]
fn command_with_a_slash_is_used_as_is() {
    let dir = Scratch::new("slash-command");
    write_executable(&dir.join("app"), "#!/bin/sh\nprintf here\n");
    let out = run(
        tandem()
            .current_dir(&dir)
            .env("PATH", "/usr/bin:/bin")
            .args(["--log", "off", "./app"]),
        RUN_TIMEOUT,
    );
    assert_code(&out, 0);
    assert_eq!(out.stdout_str(), "here", "{}", out.dump());
}

#[test]
fn app_stdout_is_byte_exact_with_nul_and_no_trailing_newline() {
    let out = run(
        &mut quiet_sh(r"printf 'a\000b\377c\r\n\033[0md'", &[]),
        RUN_TIMEOUT,
    );
    assert_code(&out, 0);
    assert_eq!(out.stdout, b"a\0b\xffc\r\n\x1b[0md", "{}", out.dump());
}

#[test]
fn app_stdout_passes_one_mebibyte_unchanged() {
    let dir = Scratch::new("large-output");
    let data = noise(1024 * 1024 + 4096);
    let file = dir.join("data");
    std::fs::write(&file, &data).expect("write data");
    let out = run(
        &mut quiet_sh("head -c 1048576 \"$1\"", &[&file.to_string_lossy()]),
        RUN_TIMEOUT,
    );
    assert_code(&out, 0);
    assert_eq!(out.stdout.len(), 1024 * 1024, "{}", out.stderr);
    assert!(
        out.stdout == data[..1024 * 1024],
        "stdout differs from the first MiB of the input"
    );
}

#[test]
fn app_stderr_is_passed_through_untouched() {
    let out = run(&mut quiet_sh(r"printf 'oops\000\n' >&2", &[]), RUN_TIMEOUT);
    assert_code(&out, 0);
    assert_eq!(out.stderr, "oops\0\n", "{}", out.dump());
}

#[test]
fn app_reads_the_stdin_tandem_was_given() {
    let dir = Scratch::new("stdin");
    let input = dir.join("input");
    let data = noise(100_000);
    std::fs::write(&input, &data).expect("write input");
    // The harness closes tandem's stdin, so a shell sets it up and execs tandem.
    let mut cmd = Command::new("/bin/sh");
    cmd.env_clear()
        .env(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/bin:/bin")),
        )
        .args(["-c", "input=$1; shift; exec \"$@\" < \"$input\"", "sh"])
        .arg(&input)
        .arg(env!("CARGO_BIN_EXE_tandem"))
        .args(["--log", "off", "cat"]);
    let out = run(&mut cmd, RUN_TIMEOUT);
    assert_code(&out, 0);
    assert!(out.stdout == data, "cat did not echo stdin\n{}", out.stderr);
}

#[test]
fn app_inherits_environment_and_working_directory() {
    let dir = Scratch::new("inherit");
    let fake = start(Script::envoy());
    let out = run(
        tandem_at(&fake)
            .current_dir(&dir)
            .env("APP_TEST_VALUE", "two words\tand a tab")
            .args(["--log", "off", "sh", "-c"])
            .arg("printf '%s|%s|%s' \"$APP_TEST_VALUE\" \"$ENVOY_ADMIN_API\" \"$(pwd -P)\""),
        RUN_TIMEOUT,
    );
    assert_code(&out, 0);
    let cwd = dir.canonicalize().expect("canonical temp dir");
    assert_eq!(
        out.stdout_str(),
        format!("two words\tand a tab|{}|{}", fake.url(), cwd.display()),
        "{}",
        out.dump()
    );
}

#[test]
fn tandem_writes_nothing_to_stdout_in_any_mode() {
    let fake = start(Script::envoy().ready_after(Duration::from_millis(100)));
    let closed = format!("http://127.0.0.1:{}", closed_port());
    let install = Scratch::new("stdout-install");
    let runs: Vec<Vec<String>> = vec![
        vec!["true".into()],
        vec!["--wait-only".into()],
        vec!["--quit-only".into()],
        vec![
            "--quit-only".into(),
            "--quit-timeout".into(),
            "300ms".into(),
            "--quit".into(),
            closed.clone(),
        ],
        vec![
            "--fail-timeout".into(),
            "300ms".into(),
            "--admin".into(),
            closed,
        ],
        vec!["tandem-test-no-such-command".into()],
        vec![
            "--install-to".into(),
            install.to_string_lossy().into_owned(),
        ],
        vec!["--install-to".into(), "/nonexistent/dir".into()],
        vec!["--poll-max".into(), "0".into(), "true".into()],
        vec![],
    ];
    for args in runs {
        for level in ["debug", "info"] {
            let out = run(
                tandem_at(&fake).args(["--log", level]).args(&args),
                RUN_TIMEOUT,
            );
            assert!(
                out.stdout.is_empty(),
                "tandem wrote to stdout\n{}",
                out.dump_with(&[&fake])
            );
        }
    }
}

#[test]
fn without_admin_url_the_app_runs_directly_and_nothing_is_contacted() {
    let fake = start(Script::envoy().never_ready());
    let out = run(
        tandem()
            .env("ISTIO_QUIT_API", fake.url())
            .env("ENVOY_KILL_API", format!("{}/quitquitquit", fake.url()))
            .args(["sh", "-c", "exit 3"]),
        RUN_TIMEOUT,
    );
    assert_code(&out, 3);
    assert!(fake.requests().is_empty(), "{}", out.dump_with(&[&fake]));
}

#[test]
fn wait_only_exits_0_when_ready_and_never_quits() {
    let admin = start(Script::envoy().ready_after(Duration::from_millis(300)));
    let generic = start(Script::generic());
    let out = run(
        tandem_at(&admin)
            .env("GENERIC_QUIT_ENDPOINTS", generic.url())
            .arg("--wait-only"),
        RUN_TIMEOUT,
    );
    assert_code(&out, 0);
    assert!(admin.is_ready(), "{}", out.dump_with(&[&admin]));
    assert!(
        admin.requests().iter().any(|r| r.status == Some(200)),
        "exited before a 200 answer\n{}",
        out.dump_with(&[&admin])
    );
    assert_eq!(admin.quit_requests(), 0, "{}", out.dump_with(&[&admin]));
    assert!(
        generic.requests().is_empty(),
        "{}",
        out.dump_with(&[&generic])
    );
}

#[test]
fn wait_only_exits_0_after_wait_timeout_and_69_after_fail_timeout() {
    let admin = start(Script::envoy().never_ready());
    let out = run(
        tandem_at(&admin).args(["--wait-only", "--wait-timeout", "300ms"]),
        RUN_TIMEOUT,
    );
    assert_code(&out, 0);
    assert!(out.stderr.contains("warning"), "{}", out.dump());

    let out = run(
        tandem_at(&admin).args(["--wait-only", "--fail-timeout", "300ms"]),
        RUN_TIMEOUT,
    );
    assert_code(&out, 69);
    assert_eq!(admin.quit_requests(), 0, "{}", out.dump_with(&[&admin]));
}

#[test]
fn quit_only_sends_the_quits_now_and_exits_0() {
    let admin = start(Script::envoy().never_ready());
    let generic = start(Script::generic());
    let out = run(
        tandem_at(&admin)
            .env("GENERIC_QUIT_ENDPOINTS", format!("{}/stop", generic.url()))
            .arg("--quit-only"),
        RUN_TIMEOUT,
    );
    assert_code(&out, 0);
    assert_eq!(
        admin.count("POST", "/quitquitquit"),
        1,
        "{}",
        out.dump_with(&[&admin])
    );
    assert_eq!(
        admin.count("GET", "/ready"),
        0,
        "--quit-only must not wait\n{}",
        out.dump_with(&[&admin])
    );
    assert_eq!(
        generic.count("POST", "/stop"),
        1,
        "{}",
        out.dump_with(&[&generic])
    );
}

#[test]
fn quit_only_exits_0_even_when_the_quit_fails() {
    let port = closed_port();
    let out = run(
        tandem_at_url(&format!("http://127.0.0.1:{port}"))
            .env(
                "GENERIC_QUIT_ENDPOINTS",
                format!("http://127.0.0.1:{port}/x"),
            )
            .args(["--quit-only", "--quit-timeout", "2s"]),
        RUN_TIMEOUT,
    );
    assert_code(&out, 0);
    let failures = out
        .stderr
        .lines()
        .filter(|line| line.contains(&port.to_string()))
        .count();
    assert!(
        failures >= 2,
        "each failed quit should be logged\n{}",
        out.dump()
    );
}

#[test]
fn install_to_copies_a_working_executable() {
    let dir = Scratch::new("install");
    let out = run(tandem().arg("--install-to").arg(&dir), RUN_TIMEOUT);
    assert_code(&out, 0);
    assert_eq!(list(&dir), ["tandem"], "{}", out.dump());
    let copy = dir.join("tandem");
    let mode = std::fs::metadata(&copy)
        .expect("stat copy")
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "copy is not executable: {mode:o}");
    let original = std::fs::read(env!("CARGO_BIN_EXE_tandem")).expect("read original");
    let copied = std::fs::read(&copy).expect("read copy");
    assert!(original == copied, "the copy differs from the binary");

    let version = run(
        Command::new(&copy).env_clear().arg("--version"),
        RUN_TIMEOUT,
    );
    assert_code(&version, 0);
    // The copy says what the original says (version and commit).
    let original_version = run(tandem().env_clear().arg("--version"), RUN_TIMEOUT);
    assert_eq!(
        version.stdout_str(),
        original_version.stdout_str(),
        "{}",
        version.dump()
    );
    assert!(
        version
            .stdout_str()
            .starts_with(&format!("tandem {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{}",
        version.dump()
    );

    // Installing again replaces the copy.
    let out = run(tandem().arg("--install-to").arg(&dir), RUN_TIMEOUT);
    assert_code(&out, 0);
    assert_eq!(list(&dir), ["tandem"], "{}", out.dump());
}

#[test]
fn install_to_a_missing_directory_exits_73() {
    let dir = Scratch::new("install-missing");
    let target = dir.join("missing");
    let out = run(tandem().arg("--install-to").arg(&target), RUN_TIMEOUT);
    assert_code(&out, 73);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.dump());
    assert!(out.stderr.contains("missing"), "{}", out.dump());
    assert!(!target.exists(), "{}", out.dump());
    assert!(list(&dir).is_empty(), "{:?}\n{}", list(&dir), out.dump());
}

#[test]
fn install_to_a_file_exits_73() {
    let dir = Scratch::new("install-file");
    let file = dir.join("file");
    std::fs::write(&file, "not a dir").expect("write");
    let out = run(tandem().arg("--install-to").arg(&file), RUN_TIMEOUT);
    assert_code(&out, 73);
    assert_eq!(list(&dir), ["file"], "{}", out.dump());
}

#[test]
fn install_over_a_directory_exits_73_leaving_no_partial_file() {
    let dir = Scratch::new("install-over-dir");
    std::fs::create_dir(dir.join("tandem")).expect("mkdir");
    std::fs::write(dir.join("tandem").join("keep"), "x").expect("write");
    let out = run(tandem().arg("--install-to").arg(&dir), RUN_TIMEOUT);
    assert_code(&out, 73);
    assert!(out.stderr.contains("--install-to"), "{}", out.dump());
    assert_eq!(
        list(&dir),
        ["tandem"],
        "a temporary file was left\n{}",
        out.dump()
    );
    assert!(dir.join("tandem").is_dir(), "{}", out.dump());
}

#[test]
fn install_to_a_read_only_directory_exits_73_leaving_no_partial_file() {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        // root writes through mode bits; /proc refuses new files even to root.
        let out = run(tandem().args(["--install-to", "/proc"]), RUN_TIMEOUT);
        assert_code(&out, 73);
        return;
    }
    let dir = Scratch::new("install-read-only");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    let out = run(tandem().arg("--install-to").arg(&dir), RUN_TIMEOUT);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    assert_code(&out, 73);
    assert!(list(&dir).is_empty(), "{:?}\n{}", list(&dir), out.dump());
}

/// Runs an app that traps `name`, sends `sig` to tandem once the app runs, and
/// checks that the app's trap ran exactly once and its exit status came back.
fn assert_signal_reaches_app(sig: i32, name: &str) {
    let dir = Scratch::new("relay");
    let marker = dir.join("running");
    let log = dir.join("log");
    let script = "trap 'echo \"got $1\" >> \"$2\"; exit 7' \"$1\"; \
                  echo ready > \"$3\"; \
                  while :; do sleep 0.05; done";
    let mut running = spawn(
        tandem()
            .args(["sh", "-c", script, "sh", name])
            .arg(&log)
            .arg(&marker),
    );
    assert!(
        wait_until(START_TIMEOUT, || marker.exists()),
        "the app did not start\n{}",
        running.stderr_so_far()
    );
    running.signal(sig);
    let out = running.wait(RUN_TIMEOUT);
    assert_code(&out, 7);
    let got = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(got, format!("got {name}\n"), "{}", out.dump());
}

#[test]
fn sigterm_to_tandem_reaches_the_app() {
    assert_signal_reaches_app(SIGTERM, "TERM");
}

#[test]
fn sigint_to_tandem_reaches_the_app() {
    assert_signal_reaches_app(SIGINT, "INT");
}

#[test]
fn sighup_to_tandem_reaches_the_app() {
    assert_signal_reaches_app(SIGHUP, "HUP");
}

#[test]
fn sigusr1_to_tandem_reaches_the_app() {
    assert_signal_reaches_app(SIGUSR1, "USR1");
}
