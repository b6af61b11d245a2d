//! Signals (SPEC §3, §4): every catchable signal tandem relays reaches the app
//! exactly once, SIGCHLD never does, `--forward-to group` reaches the whole group,
//! a terminating signal while waiting ends the wait with `128 + N`, and the app
//! inherits a clean mask and its parent's ignored set (tini's sigconf test).
//!
//! The app is a small Python recorder (a shell `trap` cannot count signals); the
//! tests that need it skip (`support::skip`) when `python3` is missing.

use crate::support::{
    REACT, RUN_TIMEOUT, Recorder, Script, app_touching, ignoring, kill, python, run, spawn, start,
    status_text_field, tandem, tandem_at, temp_dir,
};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn every_relayed_signal_reaches_the_app_exactly_once_and_sigchld_never() {
    let Some(python) = python() else { return };
    let rec = Recorder::new("relay-all");
    // The library's own list, the fault signals and every real-time one
    // included; it must hold every signal SPEC §4 names. The test binary and
    // tandem are built for the same target, so they agree on SIGRTMIN (glibc
    // reserves 32 and 33, musl 32 to 34).
    let sigs: Vec<i32> = tandem::signals::relayed().collect();
    let never = [
        libc::SIGKILL,
        libc::SIGSTOP,
        libc::SIGCHLD,
        libc::SIGTTIN,
        libc::SIGTTOU,
    ];
    let spec: Vec<i32> = (1..=libc::SIGRTMAX())
        .filter(|&s| s < 32 || s >= libc::SIGRTMIN())
        .filter(|s| !never.contains(s))
        .collect();
    let mut listed = sigs.clone();
    listed.sort_unstable();
    assert_eq!(listed, spec, "the library's relayed signals");
    let mut handled = sigs.clone();
    handled.push(libc::SIGCHLD);
    let mut app = spawn(&mut rec.command(&python, &[], false, &handled));
    rec.wait_ready("app");
    for (i, &sig) in sigs.iter().enumerate() {
        // One at a time: the kernel may merge a standard signal with a pending one.
        app.signal(sig);
        let log = rec.wait_log("app", i + 1);
        assert_eq!(
            log.last(),
            Some(&sig),
            "signal {sig} was not relayed: {log:?}"
        );
    }
    // Not caught by tandem, so never relayed; USR1 is the barrier behind it.
    app.signal(libc::SIGCHLD);
    app.signal(libc::SIGUSR1);
    rec.wait_log("app", sigs.len() + 1);
    rec.stop("app", 0);
    app.signal(libc::SIGUSR2);
    let out = app.wait(RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump());

    let log = rec.log("app");
    for &sig in &sigs {
        let times = log.iter().filter(|&&s| s == sig).count();
        let expected = if sig == libc::SIGUSR1 { 2 } else { 1 };
        assert_eq!(
            times, expected,
            "signal {sig} relayed {times} times: {log:?}"
        );
    }
    assert!(
        !log.contains(&libc::SIGCHLD),
        "SIGCHLD reached the app: {log:?}"
    );
    assert_eq!(
        log.len(),
        sigs.len() + 1,
        "unexpected extra signals: {log:?}"
    );
}

/// Runs the forking recorder with `options`, sends SIGUSR1 to tandem, and returns
/// whether the grandchild got it. SIGUSR2 sent straight to the grandchild is the
/// barrier: a pending SIGUSR1 (lower number) is handled before it.
fn grandchild_gets_relayed_usr1(options: &[&str]) -> bool {
    let Some(python) = python() else {
        return false;
    };
    let rec = Recorder::new("relay-group");
    let sigs = [libc::SIGUSR1, libc::SIGUSR2];
    let mut app = spawn(&mut rec.command(&python, options, true, &sigs));
    rec.wait_ready("app");
    let grandchild = rec.wait_ready("grandchild");
    app.signal(libc::SIGUSR1);
    assert_eq!(rec.wait_log("app", 1), [libc::SIGUSR1]);
    kill(grandchild, libc::SIGUSR2);
    let got = rec.wait_log("grandchild", 1).contains(&libc::SIGUSR1);
    rec.stop("grandchild", 0);
    kill(grandchild, libc::SIGUSR2);
    rec.stop("app", 0);
    app.signal(libc::SIGUSR2);
    let out = app.wait(RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump());
    got
}

#[test]
fn forward_to_group_reaches_a_grandchild() {
    if python().is_none() {
        return;
    }
    assert!(
        grandchild_gets_relayed_usr1(&["--forward-to", "group"]),
        "--forward-to group did not reach the grandchild"
    );
}

#[test]
fn default_relay_reaches_only_the_child() {
    if python().is_none() {
        return;
    }
    assert!(
        !grandchild_gets_relayed_usr1(&[]),
        "the default relay (child only) reached the grandchild"
    );
}

#[test]
fn terminating_signal_while_waiting_quits_sidecar_and_exits_128_plus_n() {
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
        let fake = start(Script::envoy().never_ready());
        let marker = temp_dir("signal-while-waiting").join("app-started");
        let mut cmd = tandem_at(&fake);
        app_touching(&mut cmd, &marker);
        let mut waiting = spawn(&mut cmd);
        assert!(
            fake.wait_for_request("GET", "/ready", REACT),
            "tandem never polled\n{}",
            waiting.stderr_so_far()
        );
        let sent = Instant::now();
        waiting.signal(sig);
        let out = waiting.wait(RUN_TIMEOUT);
        let took = sent.elapsed();
        let dump = out.dump_with(&[&fake]);
        assert_eq!(out.code, Some(128 + sig), "signal {sig}\n{dump}");
        assert!(
            took < Duration::from_millis(1500),
            "signal {sig}: exit took {took:?}\n{dump}"
        );
        assert!(
            !marker.exists(),
            "signal {sig}: the app was started\n{dump}"
        );
        assert!(
            fake.quit_requests() >= 1,
            "signal {sig}: no quit request\n{dump}"
        );
    }
}

/// `(SigBlk, SigIgn)` of the app, as `cat /proc/self/status` shows them, with the
/// two glibc-internal signals (32, 33) cleared from SigIgn: glibc's posix_spawn
/// leaves them ignored in every child of a glibc program, and no app can use them.
fn app_sigblk_sigign(cmd: &mut Command) -> (u64, u64) {
    let out = run(cmd.args(["cat", "/proc/self/status"]), RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump());
    let status = out.stdout_str();
    let field = |name: &str| {
        status_text_field(&status, name)
            .and_then(|hex| u64::from_str_radix(&hex, 16).ok())
            .unwrap_or_else(|| panic!("no {name} in\n{}", out.dump()))
    };
    let glibc_internal = bit(32) | bit(33);
    (field("SigBlk"), field("SigIgn") & !glibc_internal)
}

fn bit(sig: i32) -> u64 {
    1 << (sig - 1)
}

#[test]
fn app_starts_with_no_blocked_and_no_ignored_signals() {
    let (blocked, ignored) = app_sigblk_sigign(&mut tandem());
    assert_eq!(blocked, 0, "SigBlk {blocked:#x}");
    assert_eq!(
        ignored & (bit(libc::SIGTTIN) | bit(libc::SIGTTOU)),
        0,
        "tandem's own SIGTTIN/SIGTTOU ignore leaked into the app: {ignored:#x}"
    );
    assert_eq!(ignored, 0, "SigIgn {ignored:#x}");
}

/// Makes `cmd` start with SIGHUP ignored and SIGUSR1 blocked (as `nohup` and some
/// launchers do).
fn with_hup_ignored_and_usr1_blocked(cmd: &mut Command) -> &mut Command {
    // SAFETY: the closure runs between fork and exec and makes only async-signal-safe
    // calls on local plain data.
    unsafe {
        cmd.pre_exec(|| {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGUSR1);
            if libc::signal(libc::SIGHUP, libc::SIG_IGN) == libc::SIG_ERR
                || libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

#[test]
fn app_inherits_the_ignored_set_of_tandems_parent_but_no_blocked_signals() {
    let mut cmd = tandem();
    let (blocked, ignored) = app_sigblk_sigign(with_hup_ignored_and_usr1_blocked(&mut cmd));
    assert_eq!(blocked, 0, "SigBlk {blocked:#x}");
    assert_eq!(ignored, bit(libc::SIGHUP), "SigIgn {ignored:#x}");
}

#[test]
fn stops_ignored_by_tandems_parent_stay_ignored_in_the_app() {
    // tandem ignores both itself; the app must get the parent's ignore, not a default.
    let mut cmd = tandem();
    // A supervisor that runs its jobs immune to terminal stops.
    let (_, ignored) = app_sigblk_sigign(ignoring(&mut cmd, &[libc::SIGTTIN, libc::SIGTTOU]));
    let stops = bit(libc::SIGTTIN) | bit(libc::SIGTTOU);
    assert_eq!(ignored, stops, "SigIgn {ignored:#x}");
}

#[test]
fn signal_blocked_when_tandem_started_is_still_relayed() {
    let Some(python) = python() else { return };
    let rec = Recorder::new("relay-blocked");
    let mut cmd = rec.command(&python, &[], false, &[libc::SIGUSR1]);
    let mut app = spawn(with_hup_ignored_and_usr1_blocked(&mut cmd));
    rec.wait_ready("app");
    app.signal(libc::SIGUSR1);
    assert_eq!(rec.wait_log("app", 1), [libc::SIGUSR1]);
    rec.stop("app", 3);
    app.signal(libc::SIGUSR1);
    let out = app.wait(RUN_TIMEOUT);
    assert_eq!(out.code, Some(3), "{}", out.dump());
}
