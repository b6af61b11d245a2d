//! The statements of SECURITY.md that no other module checks: no shell, no
//! proxy from the environment, `--install-to` never writes through a symlink,
//! and only a process named exactly `pilot-agent` is ever signalled besides the app.

use crate::support::{
    REACT, RUN_TIMEOUT, Script, in_new_pid_namespace, no_real_pilot_agent, pid_namespace_available,
    run, start, state, tandem, tandem_at, temp_dir,
};
use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Command, Stdio};

#[test]
fn a_command_line_is_never_given_to_a_shell() {
    let dir = temp_dir("no-shell");
    let marker = dir.join("ran");
    // One word that a shell would split, expand and run as two commands.
    let word = format!("true; touch {}", marker.display());
    let out = run(tandem().arg(&word), RUN_TIMEOUT);
    assert_eq!(out.code, Some(127), "{}", out.dump());
    assert!(!marker.exists(), "a shell ran {word:?}\n{}", out.dump());
    // Arguments reach the app as they are: no expansion, no globbing.
    let out = run(tandem().args(["echo", "$HOME", "*", "`id`"]), RUN_TIMEOUT);
    assert_eq!(out.stdout_str(), "$HOME * `id`\n", "{}", out.dump());
}

#[test]
fn proxy_variables_never_reroute_a_request() {
    let admin = start(Script::envoy());
    let proxy = start(Script::generic());
    let mut cmd = tandem_at(&admin);
    for var in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        cmd.env(var, proxy.url());
    }
    cmd.env("NO_PROXY", "").arg("true");
    let out = run(&mut cmd, RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump_with(&[&admin, &proxy]));
    assert_eq!(proxy.requests().len(), 0, "{}", out.dump_with(&[&proxy]));
    assert!(
        admin.count("GET", "/ready") >= 1,
        "{}",
        out.dump_with(&[&admin])
    );
    assert_eq!(admin.quit_requests(), 1, "{}", out.dump_with(&[&admin]));
}

/// As PID 1 of a new PID namespace tandem's temporary name is `.tandem.1.tmp`: a
/// symlink planted there must be neither followed nor left.
#[test]
fn install_never_writes_through_a_symlink_at_its_temporary_name() {
    if !pid_namespace_available() {
        return;
    }
    let dir = temp_dir("install-planted");
    let victim = dir.join("victim");
    fs::write(&victim, "keep me").expect("write the victim");
    let into = dir.join("into");
    fs::create_dir(&into).expect("mkdir");
    symlink(&victim, into.join(".tandem.1.tmp")).expect("plant the symlink");
    let mut cmd = in_new_pid_namespace();
    cmd.arg(env!("CARGO_BIN_EXE_tandem"))
        .arg("--install-to")
        .arg(&into);
    let out = run(&mut cmd, RUN_TIMEOUT);
    assert_eq!(
        fs::read_to_string(&victim).ok().as_deref(),
        Some("keep me"),
        "the copy went through the planted symlink\n{}",
        out.dump()
    );
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_installed(&into.join("tandem"));
    assert!(
        fs::symlink_metadata(into.join(".tandem.1.tmp")).is_err(),
        "the temporary name is still there\n{}",
        out.dump()
    );
}

#[test]
fn install_over_a_symlink_replaces_the_link_not_its_target() {
    let dir = temp_dir("install-over-link");
    let victim = dir.join("victim");
    fs::write(&victim, "keep me").expect("write the victim");
    let into = dir.join("into");
    fs::create_dir(&into).expect("mkdir");
    symlink(&victim, into.join("tandem")).expect("plant the symlink");
    let out = run(tandem().arg("--install-to").arg(&into), RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(
        fs::read_to_string(&victim).ok().as_deref(),
        Some("keep me"),
        "{}",
        out.dump()
    );
    let meta = fs::symlink_metadata(into.join("tandem")).expect("stat the copy");
    assert!(meta.is_file(), "still a symlink\n{}", out.dump());
    assert_installed(&into.join("tandem"));
}

/// `path` is a byte-exact copy of this build's tandem.
fn assert_installed(path: &Path) {
    let original = fs::read(env!("CARGO_BIN_EXE_tandem")).expect("read tandem");
    let copy = fs::read(path).unwrap_or_default();
    assert!(
        copy == original,
        "{} is not a copy of tandem",
        path.display()
    );
}

/// Processes whose names only look like pilot-agent's: tandem's /proc scan must
/// compare the whole name (SPEC §5.2), so none of them gets the SIGINT, and with
/// no real pilot-agent the admin gets the POST.
#[test]
fn processes_named_almost_pilot_agent_are_never_signalled() {
    if !no_real_pilot_agent() {
        return;
    }
    let dir = temp_dir("lookalikes");
    let sleep = ["/bin/sleep", "/usr/bin/sleep"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("sleep exists");
    let mut lookalikes = Vec::new();
    for name in ["pilot-agent-x", "pilot-agen", "xpilot-agent", "Pilot-Agent"] {
        let exe = dir.join(name);
        fs::copy(sleep, &exe).expect("copy sleep");
        let child = Command::new(&exe)
            .arg("30")
            .stdin(Stdio::null())
            .spawn()
            .expect("start a lookalike");
        lookalikes.push((name, child));
    }
    let admin = start(Script::envoy());
    let out = run(tandem_at(&admin).arg("true"), RUN_TIMEOUT);
    // A SIGINT would end sleep at once; give a stray one time to land.
    std::thread::sleep(REACT / 20);
    let mut signalled = Vec::new();
    for (name, child) in &mut lookalikes {
        let pid = i32::try_from(child.id()).expect("pid fits in i32");
        if child.try_wait().ok().flatten().is_some() || state(pid).is_none() {
            signalled.push(*name);
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(
        signalled.is_empty(),
        "signalled: {signalled:?}\n{}",
        out.dump()
    );
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(admin.quit_requests(), 1, "{}", out.dump_with(&[&admin]));
}

/// SECURITY.md names a test for each statement (`module::test` or
/// `module::sub::test`, relative to `tests/`): each must exist, so a renamed or
/// removed test cannot leave a statement unchecked.
#[test]
fn every_test_security_md_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = fs::read_to_string(root.join("SECURITY.md")).expect("read SECURITY.md");
    let named: Vec<&str> = text
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| {
            s.contains("::")
                && s.starts_with(|c: char| c.is_ascii_lowercase())
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == ':')
        })
        .collect();
    assert!(named.len() >= 20, "too few tests named: {named:?}");
    let mut missing = Vec::new();
    for name in &named {
        let (module, test) = name.rsplit_once("::").unwrap_or_default();
        let file = root
            .join("tests")
            .join(format!("{}.rs", module.replace("::", "/")));
        let source = fs::read_to_string(&file).unwrap_or_default();
        if !source.contains(&format!("fn {test}()")) {
            missing.push(*name);
        }
    }
    assert!(
        missing.is_empty(),
        "SECURITY.md names tests that do not exist: {missing:?}"
    );
}
