//! Init-grade checks (SPEC §4), as tini's and dumb-init's own tests make them: the
//! app's mask is empty whatever tandem's parent blocked, on a terminal or off it;
//! SIGTTIN/SIGTTOU never stop tandem; a fault signal sent with `kill` reaches the
//! app once, in both forwarding modes, and tandem lives on; a real fault (a
//! seccomp trap, the kernel's SIGSYS) still kills tandem, in either thread; and
//! every exit code passes through.

use crate::support::{
    REACT, RUN_TIMEOUT, Recorder, ignoring, kill, python, run, spawn, stat_after_comm, state,
    status_text_field, tandem, temp_dir, wait_until,
};
use crate::tty::OnTty;
use std::fs;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};

/// Signals a parent blocks before exec'ing tandem: relayed ones (USR1, PIPE,
/// SEGV, an RT signal) and ones tandem never relays (CHLD, TTIN, TTOU).
fn blocked_by_the_parent() -> [i32; 7] {
    [
        libc::SIGUSR1,
        libc::SIGPIPE,
        libc::SIGSEGV,
        libc::SIGRTMIN() + 2,
        libc::SIGCHLD,
        libc::SIGTTIN,
        libc::SIGTTOU,
    ]
}

/// Makes `cmd` start with `blocked_by_the_parent()` blocked.
fn with_signals_blocked(cmd: &mut Command) -> &mut Command {
    let sigs = blocked_by_the_parent();
    // SAFETY: the closure runs between fork and exec and makes only async-signal-safe
    // calls on local plain data.
    unsafe {
        cmd.pre_exec(move || {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for sig in sigs {
                libc::sigaddset(&mut set, sig);
            }
            if libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// `SigBlk` and `SigIgn` of a `/proc/PID/status` text, as numbers.
fn sigblk_sigign(status: &str) -> Option<(u64, u64)> {
    let hex = |name| u64::from_str_radix(&status_text_field(status, name)?, 16).ok();
    Some((hex("SigBlk")?, hex("SigIgn")?))
}

fn bit(sig: i32) -> u64 {
    1 << (sig - 1)
}

#[test]
fn off_a_terminal_the_app_starts_with_no_signal_blocked_whatever_the_parent_blocked() {
    let mut cmd = tandem();
    let out = run(
        with_signals_blocked(&mut cmd).args(["cat", "/proc/self/status"]),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{}", out.dump());
    let (blocked, ignored) = sigblk_sigign(&out.stdout_str()).expect("SigBlk and SigIgn");
    assert_eq!(blocked, 0, "SigBlk {blocked:#x}\n{}", out.dump());
    let stops = bit(libc::SIGTTIN) | bit(libc::SIGTTOU);
    assert_eq!(
        ignored & stops,
        0,
        "SigIgn {ignored:#x}: tandem's own ignore leaked"
    );
}

#[test]
fn on_a_terminal_the_app_starts_with_no_signal_blocked_whatever_the_parent_blocked() {
    // `cat` itself, not through `sh -c`: dash empties its mask when it starts.
    let mut cmd = tandem();
    let mut tty = OnTty::spawn(with_signals_blocked(&mut cmd).args(["cat", "/proc/self/status"]));
    let status = tty.wait();
    assert_eq!(status.code(), Some(0), "screen:\n{}", tty.screen());
    let mut masks = None;
    wait_until(REACT, || {
        masks = sigblk_sigign(&tty.screen());
        masks.is_some()
    });
    let (blocked, ignored) = masks.unwrap_or_else(|| panic!("no SigIgn in:\n{}", tty.screen()));
    assert_eq!(blocked, 0, "SigBlk {blocked:#x}; screen:\n{}", tty.screen());
    let stops = bit(libc::SIGTTIN) | bit(libc::SIGTTOU);
    assert_eq!(
        ignored & stops,
        0,
        "SigIgn {ignored:#x}: tandem's own ignore leaked"
    );
}

#[test]
fn sigttin_and_sigttou_sent_to_tandem_in_its_own_group_neither_stop_it_nor_reach_the_app() {
    let Some(python) = python() else { return };
    let rec = Recorder::new("ttin-ttou");
    let handled = [libc::SIGUSR1, libc::SIGTTIN, libc::SIGTTOU];
    let mut cmd = rec.command(&python, &[], false, &handled);
    // Its own group in this live session, as a job-control shell or a supervisor
    // starts it: not orphaned (its parent, this test, is in another group of the
    // same session), so the kernel would stop it on SIGTTIN's default.
    let mut app = spawn(cmd.process_group(0));
    rec.wait_ready("app");
    let (tandem_stat, mine) = (stat_after_comm(app.pid()), stat_after_comm(me()));
    assert_ne!(
        tandem_stat.get(2),
        mine.get(2),
        "tandem is in this test's group"
    );
    assert_eq!(
        tandem_stat.get(3),
        mine.get(3),
        "tandem is in another session"
    );
    let mut relayed = 0;
    for sig in [libc::SIGTTIN, libc::SIGTTOU] {
        app.signal(sig);
        // Two round trips through the relay: a tandem stopped by `sig` (however its
        // delivery was ordered against the first) cannot relay the second.
        for _ in 0..2 {
            app.signal(libc::SIGUSR1);
            relayed += 1;
            rec.wait_log("app", relayed);
        }
        assert_ne!(state(app.pid()), Some('T'), "signal {sig} stopped tandem");
    }
    assert_eq!(
        rec.log("app"),
        [libc::SIGUSR1; 4],
        "SIGTTIN/SIGTTOU were relayed"
    );
    rec.stop("app", 0);
    app.signal(libc::SIGUSR1);
    let out = app.wait(RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump());
}

fn me() -> i32 {
    i32::try_from(std::process::id()).expect("pid fits in i32")
}

/// The signals the kernel uses for faults, and SIGPIPE: sent with `kill`, each is
/// a request that tandem relays.
const SENT_FAULTS: [i32; 8] = [
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGTRAP,
    libc::SIGABRT,
    libc::SIGSYS,
    libc::SIGPIPE,
];

/// Sends each of `SENT_FAULTS` to tandem with `kill`, with `options`; each must
/// reach the app exactly once (checked against a SIGUSR1 barrier after each), with
/// tandem still running.
fn fault_signals_sent_with_kill_reach_the_app_once(options: &[&str]) {
    let Some(python) = python() else { return };
    let rec = Recorder::new("sent-faults");
    let mut handled = SENT_FAULTS.to_vec();
    handled.push(libc::SIGUSR1);
    let mut app = spawn(&mut rec.command(&python, options, false, &handled));
    rec.wait_ready("app");
    let mut expected = Vec::new();
    for sig in SENT_FAULTS {
        app.signal(sig);
        // A pending SIGUSR1 is handled after any lower-numbered signal, and SIGUSR1
        // (10) is lower than SIGSEGV, PIPE and SYS: wait for `sig` first.
        expected.push(sig);
        let log = rec.wait_log("app", expected.len());
        assert_eq!(log, expected, "after signal {sig}");
        app.signal(libc::SIGUSR1);
        expected.push(libc::SIGUSR1);
        let log = rec.wait_log("app", expected.len());
        assert_eq!(log, expected, "signal {sig} was relayed more than once");
        assert!(app.is_running(), "signal {sig} sent with kill ended tandem");
    }
    rec.stop("app", 5);
    app.signal(libc::SIGUSR1);
    let out = app.wait(RUN_TIMEOUT);
    assert_eq!(out.code, Some(5), "{}", out.dump());
}

#[test]
fn fault_signals_sent_with_kill_reach_the_app_exactly_once_and_tandem_lives_on() {
    fault_signals_sent_with_kill_reach_the_app_once(&[]);
}

#[test]
fn fault_signals_sent_with_kill_reach_the_app_with_forward_to_group_too() {
    fault_signals_sent_with_kill_reach_the_app_once(&["--forward-to", "group"]);
}

/// Makes `cmd` run under a seccomp filter that traps the system call `nr`: the
/// kernel then raises SIGSYS with `si_code` SYS_SECCOMP (1) in the thread that
/// made the call, a real fault from tandem's point of view, with no test hook in
/// tandem. No core file is written.
fn trapping_syscall(cmd: &mut Command, nr: libc::c_long) -> &mut Command {
    let nr = u32::try_from(nr).expect("a syscall number fits in u32");
    let filter = [
        // A = seccomp_data.nr (offset 0)
        bpf(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, 0),
        // if A == nr, fall through to TRAP, else skip to ALLOW
        bpf(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, 0, 1, nr),
        bpf(libc::BPF_RET | libc::BPF_K, 0, 0, libc::SECCOMP_RET_TRAP),
        bpf(libc::BPF_RET | libc::BPF_K, 0, 0, libc::SECCOMP_RET_ALLOW),
    ];
    // SAFETY: the closure runs between fork and exec and makes only plain system
    // calls (setrlimit, prctl) on data it owns; the filter outlives the prctl.
    unsafe {
        cmd.pre_exec(move || {
            let no_core = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            let prog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr().cast_mut(),
            };
            if libc::setrlimit(libc::RLIMIT_CORE, &no_core) != 0
                || libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &raw const prog,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

fn bpf(code: u32, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: u16::try_from(code).expect("a BPF opcode fits in u16"),
        jt,
        jf,
        k,
    }
}

/// Runs tandem with `nr` trapped and an app that writes its pid and sleeps; calls
/// `provoke` with the running tandem once the app is up; tandem must then die of
/// SIGSYS. Kills the app left behind.
fn real_sigsys_kills_tandem(
    name: &str,
    nr: libc::c_long,
    provoke: impl FnOnce(&mut crate::support::Running),
) {
    let dir = temp_dir(name);
    let pid_file = dir.join("app-pid");
    let script = r#"echo $$ > "$0.tmp" && mv "$0.tmp" "$0" && exec sleep 60"#;
    let mut cmd = tandem();
    cmd.args(["sh", "-c", script]).arg(&pid_file);
    let mut running = spawn(trapping_syscall(&mut cmd, nr));
    let mut app_pid = None;
    let started = wait_until(REACT, || {
        app_pid = fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok());
        app_pid.is_some()
    });
    if started {
        provoke(&mut running);
    }
    let out = running.wait(RUN_TIMEOUT);
    if let Some(pid) = app_pid {
        kill(pid, libc::SIGKILL);
    }
    assert!(started, "the app never started\n{}", out.dump());
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGSYS),
        "tandem did not die of the real SIGSYS\n{}",
        out.dump()
    );
}

#[test]
fn a_real_fault_in_the_main_thread_kills_tandem_with_its_signal() {
    // The main thread waits for the app with waitid as soon as it is spawned.
    real_sigsys_kills_tandem("fault-main", libc::SYS_waitid, |_| {});
}

#[test]
fn a_real_fault_in_the_relay_thread_kills_tandem_with_its_signal() {
    // The relay thread calls kill to relay SIGUSR1; nothing else in tandem does
    // while the app runs.
    real_sigsys_kills_tandem("fault-relay", libc::SYS_kill, |running| {
        running.signal(libc::SIGUSR1);
    });
}

#[test]
fn every_exit_code_from_0_to_255_passes_through() {
    for code in 0..=255 {
        let script = format!("exit {code}");
        let out = run(tandem().args(["sh", "-c", &script]), RUN_TIMEOUT);
        assert_eq!(out.code, Some(code), "{}", out.dump());
    }
}

#[test]
fn a_sigpipe_from_tandems_own_broken_stderr_does_not_reach_the_app() {
    let Some(python) = python() else { return };
    let rec = Recorder::new("own-sigpipe");
    let handled = [libc::SIGPIPE, libc::SIGUSR1];
    let (reader, writer) = std::io::pipe().expect("a pipe");
    // Nobody reads tandem's stderr: each debug line it writes raises SIGPIPE in it.
    drop(reader);
    let mut cmd = rec.command(&python, &[], false, &handled);
    cmd.env("TANDEM_LOG", "debug")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(writer);
    let mut tandem = Killed(cmd.spawn().expect("spawn tandem"));
    rec.wait_ready("app");
    let pid = i32::try_from(tandem.0.id()).expect("pid fits in i32");
    for n in 1..=3 {
        // "relayed signal 10" goes to the broken stderr after each.
        kill(pid, libc::SIGUSR1);
        rec.wait_log("app", n);
    }
    rec.stop("app", 4);
    kill(pid, libc::SIGUSR1);
    let mut status = None;
    wait_until(RUN_TIMEOUT, || {
        status = tandem.0.try_wait().ok().flatten();
        status.is_some()
    });
    assert_eq!(status.and_then(|s| s.code()), Some(4), "{status:?}");
    assert_eq!(
        rec.log("app"),
        [libc::SIGUSR1; 3],
        "tandem's own SIGPIPE was relayed"
    );
}

/// A child killed and reaped when dropped, so a failed assertion leaves no tandem.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// SIGPIPE and SIGCHLD ignored by the parent (a shell's `trap '' PIPE CHLD`, a
/// supervisor that never waits).
const PIPE_AND_CHLD: &[i32] = &[libc::SIGPIPE, libc::SIGCHLD];

#[test]
fn sigpipe_and_sigchld_ignored_by_the_parent_stay_ignored_in_the_app() {
    // Rust's runtime ignores SIGPIPE before tandem's `main`, and std resets it in
    // every child; tandem ignored SIGCHLD would lose the app's status to the kernel.
    let mut cmd = tandem();
    let out = run(
        ignoring(&mut cmd, PIPE_AND_CHLD).args(["cat", "/proc/self/status"]),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{}", out.dump());
    let (_, ignored) = sigblk_sigign(&out.stdout_str()).expect("SigIgn");
    let both = bit(libc::SIGPIPE) | bit(libc::SIGCHLD);
    assert_eq!(ignored & both, both, "SigIgn {ignored:#x}\n{}", out.dump());
}

#[test]
fn with_sigchld_ignored_by_the_parent_tandem_still_exits_with_the_apps_status() {
    let mut cmd = tandem();
    let out = run(
        ignoring(&mut cmd, PIPE_AND_CHLD).args(["sh", "-c", "exit 3"]),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(3), "{}", out.dump());
}
