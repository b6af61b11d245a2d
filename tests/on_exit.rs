//! The `--on-exit` program (SPEC §11), run by the real tandem with real programs
//! and signals: it runs after every way the app can end (and after a wait that
//! ended without it), before the quit requests (the fake sidecar records when the
//! quit arrives against the moment the program was let go), with the exit status
//! and its signal in its environment, stdin from /dev/null, in its own process
//! group with signals relayed to it, bounded by its timeout (SIGTERM, then SIGKILL
//! 2 s later), as PID 1 with its orphans reaped, and before a job container
//! records that it has finished (§9). It never changes tandem's exit status.

use crate::support::{
    FakeAdmin, Out, REACT, RUN_TIMEOUT, Running, SIGTERM, SIGUSR1, Script, in_new_pid_namespace,
    pid_namespace_available, run, spawn, start, tandem, temp_dir, wait_until,
};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

/// Variables given to tandem: names and values.
type Env<'a> = &'a [(&'a str, &'a str)];

/// The quit path the generic fake counts.
const QUIT: &str = "/quit";

/// `s` as one word of a command line, single-quoted.
fn q(s: impl AsRef<str>) -> String {
    format!("'{}'", s.as_ref().replace('\'', r"'\''"))
}

/// The `--on-exit` value that runs the shell `script` with `args` as `$1`…
fn sh(script: &str, args: &[&Path]) -> String {
    let args: Vec<String> = args.iter().map(|a| q(a.to_string_lossy())).collect();
    format!("sh -c {} hook {}", q(script), args.join(" "))
}

/// A hook that records its environment in `$1`, then waits at a gate: it makes
/// `$2` and exits with 5 once `$3` exists. Its stdin's target, its process group
/// and the relayed SIGUSR1s are recorded too, and those its child in its group
/// gets (in `$1.child`; the child ends with it).
const GATED_HOOK: &str = r#"
hook=$$
(
  trap 'echo usr1 >> "$1.child"' USR1
  while kill -0 "$hook" 2>/dev/null && [ ! -e "$3" ]; do sleep 0.01; done
) &
trap 'echo usr1 >> "$1.usr1"' USR1
{
  echo "code=$TANDEM_EXIT_CODE"
  echo "signal=${TANDEM_EXIT_SIGNAL-unset}"
  echo "kept=$KEPT"
  echo "stdin=$(readlink /proc/self/fd/0)"
  echo "pgid=$(cut -d' ' -f5 /proc/$$/stat)"
  echo "pid=$$"
} > "$1.tmp"
mv "$1.tmp" "$1"
echo "hook says hello"
echo "hook complains" >&2
: > "$2"
while [ ! -e "$3" ]; do sleep 0.01; done
exit 5
"#;

/// A gated hook's files.
struct Gate {
    dir: PathBuf,
}

impl Gate {
    fn new(name: &str) -> Gate {
        Gate {
            dir: temp_dir(name),
        }
    }

    fn env_file(&self) -> PathBuf {
        self.dir.join("env")
    }

    /// The `--on-exit` value of this gate's hook.
    fn hook(&self) -> String {
        let (env, started, go) = (self.env_file(), self.dir.join("started"), self.go());
        sh(GATED_HOOK, &[&env, &started, &go])
    }

    fn go(&self) -> PathBuf {
        self.dir.join("go")
    }

    /// Waits until the hook runs; panics with tandem's stderr otherwise.
    fn wait_started(&self, tandem: &Running) {
        let started = wait_until(REACT, || self.dir.join("started").exists());
        assert!(
            started,
            "the hook did not start\n{}",
            tandem.stderr_so_far()
        );
    }

    /// Lets the hook end; returns when.
    fn open(&self) -> Instant {
        let at = Instant::now();
        fs::write(self.go(), "").unwrap();
        at
    }

    /// `name=value` lines the hook recorded.
    fn recorded(&self, name: &str) -> String {
        let env = fs::read_to_string(self.env_file()).unwrap_or_default();
        let prefix = format!("{name}=");
        env.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("{name} not recorded in {env:?}"))
            .to_owned()
    }

    /// The SIGUSR1s the hook (`who`: `usr1`) or its child (`child`) got.
    fn usr1s(&self, who: &str) -> usize {
        let log = self.dir.join(format!("env.{who}"));
        fs::read_to_string(log).unwrap_or_default().lines().count()
    }
}

/// tandem quitting `fake` through a generic endpoint, with `hook` as `--on-exit`.
fn tandem_quitting(fake: &FakeAdmin, hook: &str) -> Command {
    let mut cmd = tandem();
    cmd.env("GENERIC_QUIT_ENDPOINTS", format!("{}{QUIT}", fake.url()))
        .env("TANDEM_ON_EXIT", hook);
    cmd
}

/// When the fake got its (only) quit request.
fn quit_at(fake: &FakeAdmin, out: &Out) -> Instant {
    let quits: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path == QUIT)
        .collect();
    assert_eq!(quits.len(), 1, "{}", out.dump_with(&[fake]));
    quits[0].at
}

/// Holds the gated hook for a while and checks that no quit went out meanwhile,
/// then opens the gate; gives tandem's output and when the gate opened.
fn hold_then_release(gate: &Gate, fake: &FakeAdmin, tandem: Running) -> (Out, Instant) {
    gate.wait_started(&tandem);
    thread::sleep(Duration::from_millis(300));
    assert_eq!(
        fake.quit_requests(),
        0,
        "a quit before the hook ended\n{}",
        fake.dump()
    );
    let opened = gate.open();
    (tandem.wait(RUN_TIMEOUT), opened)
}

#[test]
fn after_the_app_before_the_quits_with_its_status_stdin_and_output() {
    let fake = start(Script::generic());
    let gate = Gate::new("order");
    let stdin = gate.dir.join("stdin");
    fs::write(&stdin, "the app's input\n").unwrap();
    // tandem's stdin is a file, as the app sees it; the hook's must be /dev/null.
    let mut cmd = tandem_quitting(&fake, &gate.hook());
    cmd.env("KEPT", "yes")
        .env("TANDEM_EXIT_SIGNAL", "stale")
        .args(["sh", "-c", "readlink /proc/self/fd/0 >&2; exit 3"]);
    let mut outer = Command::new("sh");
    outer
        .env_clear()
        .envs(std::env::vars_os().filter(|(k, _)| k == "PATH"));
    outer
        .args(["-c", r#"exec "$0" "$@" < "$STDIN""#])
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .env("STDIN", &stdin);
    crate::support::default_signals(&mut outer);
    let (out, opened) = hold_then_release(&gate, &fake, spawn(&mut outer));
    assert_eq!(out.code, Some(3), "the app's status\n{}", out.dump());
    assert!(quit_at(&fake, &out) > opened, "quit before the hook ended");
    assert!(
        out.stderr.contains(&stdin.to_string_lossy().into_owned()),
        "{}",
        out.dump()
    );
    assert_eq!(gate.recorded("code"), "3");
    assert_eq!(gate.recorded("signal"), "unset", "not the inherited one");
    assert_eq!(gate.recorded("kept"), "yes", "tandem's environment");
    assert_eq!(gate.recorded("stdin"), "/dev/null");
    assert_eq!(out.stdout_str(), "hook says hello\n", "{}", out.dump());
    assert!(out.stderr.contains("hook complains\n"), "{}", out.dump());
    assert!(
        out.stderr
            .contains("warning: the --on-exit program exited with 5"),
        "{}",
        out.dump()
    );
}

/// A hook that writes `CODE SIGNAL` (`unset` for none) to `$1`.
const RECORD_ENV: &str = r#"echo "$TANDEM_EXIT_CODE ${TANDEM_EXIT_SIGNAL-unset}" > "$1""#;

/// Runs tandem with `args` (the app, a mode) and a hook that records its exit
/// variables; gives the output and what the hook recorded (`None`: it never ran).
fn recorded_env(name: &str, configure: impl FnOnce(&mut Command)) -> (Out, Option<String>) {
    let record = temp_dir(name).join("env");
    let mut cmd = tandem();
    cmd.env("TANDEM_ON_EXIT", sh(RECORD_ENV, &[&record]));
    configure(&mut cmd);
    let out = run(&mut cmd, RUN_TIMEOUT);
    let seen = fs::read_to_string(&record).ok();
    (out, seen.map(|s| s.trim().to_owned()))
}

#[test]
fn after_every_way_the_app_ends_with_its_status_and_signal() {
    let dir = temp_dir("not-executable");
    let not_executable = dir.join("data.txt");
    fs::write(&not_executable, "not a program").unwrap();
    let cases: &[(&str, Vec<String>, i32, &str)] = &[
        ("exit-0", vec!["true".into()], 0, "0 unset"),
        (
            "exit-42",
            vec!["sh".into(), "-c".into(), "exit 42".into()],
            42,
            "42 unset",
        ),
        (
            "killed",
            vec!["sh".into(), "-c".into(), "kill -KILL $$".into()],
            137,
            "137 SIGKILL",
        ),
        (
            "terminated",
            vec!["sh".into(), "-c".into(), "kill -TERM $$".into()],
            143,
            "143 SIGTERM",
        ),
        (
            "not-found",
            vec!["tandem-no-such-app".into()],
            127,
            "127 unset",
        ),
        (
            "not-executable",
            vec![not_executable.to_string_lossy().into_owned()],
            126,
            "126 unset",
        ),
    ];
    for (name, app, code, want) in cases {
        let (out, seen) = recorded_env(name, |cmd| {
            cmd.args(app);
        });
        assert_eq!(out.code, Some(*code), "{name}\n{}", out.dump());
        assert_eq!(seen.as_deref(), Some(*want), "{name}\n{}", out.dump());
    }
}

#[test]
fn after_a_wait_given_up_with_69_then_the_quits() {
    let fake = start(Script::generic().never_ready());
    let gate = Gate::new("not-ready");
    let marker = gate.dir.join("app-ran");
    let mut cmd = tandem_quitting(&fake, &gate.hook());
    cmd.env("TANDEM_READY_URLS", format!("{}/ready", fake.url()))
        .args(["--fail-timeout", "200ms", "touch"])
        .arg(&marker);
    let (out, opened) = hold_then_release(&gate, &fake, spawn(&mut cmd));
    assert_eq!(out.code, Some(69), "{}", out.dump());
    assert!(!marker.exists(), "the app ran");
    assert!(quit_at(&fake, &out) > opened, "quit before the hook ended");
    assert_eq!(gate.recorded("code"), "69");
    assert_eq!(gate.recorded("signal"), "unset");
}

#[test]
fn after_a_terminating_signal_while_waiting_then_the_quits() {
    let fake = start(Script::generic().never_ready());
    let gate = Gate::new("interrupted");
    let mut cmd = tandem_quitting(&fake, &gate.hook());
    cmd.env("TANDEM_READY_URLS", format!("{}/ready", fake.url()))
        .args(["true"]);
    let mut tandem = spawn(&mut cmd);
    assert!(
        wait_until(REACT, || fake.count("GET", "/ready") > 0),
        "never polled\n{}",
        tandem.stderr_so_far()
    );
    tandem.signal(SIGTERM);
    let (out, opened) = hold_then_release(&gate, &fake, tandem);
    assert_eq!(out.code, Some(143), "{}", out.dump());
    assert!(quit_at(&fake, &out) > opened, "quit before the hook ended");
    assert_eq!(gate.recorded("code"), "143");
    assert_eq!(gate.recorded("signal"), "SIGTERM");
}

#[test]
fn not_with_wait_only_quit_only_install_to_or_bad_usage() {
    let install = temp_dir("install");
    let cases: &[(&str, &[&str])] = &[
        ("wait-only", &["--wait-only"]),
        ("quit-only", &["--quit-only"]),
        ("bad-usage", &["--bogus", "true"]),
        ("no-command", &[]),
    ];
    for (name, args) in cases {
        let (out, seen) = recorded_env(name, |cmd| {
            cmd.args(*args);
        });
        assert_eq!(seen, None, "{name}: the hook ran\n{}", out.dump());
    }
    let (out, seen) = recorded_env("install-to", |cmd| {
        cmd.arg("--install-to").arg(&install);
    });
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(seen, None, "install-to: the hook ran\n{}", out.dump());
}

#[test]
fn bad_values_exit_64_before_anything_is_started_or_contacted() {
    let fake = start(Script::generic());
    let dir = temp_dir("bad-values");
    let marker = dir.join("app-ran");
    let hook_ran = dir.join("hook-ran");
    let good_hook = sh(r#": > "$1""#, &[&hook_ran]);
    let cases: &[(&[&str], Env, &str)] = &[
        (
            &["--on-exit", ""],
            &[],
            r#"invalid --on-exit "": expected a command"#,
        ),
        (&[], &[("TANDEM_ON_EXIT", " \t ")], "invalid TANDEM_ON_EXIT"),
        (&["--on-exit", "upload 'out"], &[], "its quotes closed"),
        (&["--on-exit", "upload \"out"], &[], "its quotes closed"),
        (
            &["--on-exit-timeout", "soon"],
            &[],
            "invalid --on-exit-timeout \"soon\"",
        ),
        (
            &[],
            &[("TANDEM_ON_EXIT_TIMEOUT", "-1s")],
            "invalid TANDEM_ON_EXIT_TIMEOUT",
        ),
    ];
    for (args, env, want) in cases {
        let mut cmd = tandem_quitting(&fake, &good_hook);
        cmd.env("TANDEM_READY_URLS", format!("{}/ready", fake.url()))
            .envs(env.iter().copied())
            .args(*args)
            .arg("touch")
            .arg(&marker);
        let out = run(&mut cmd, RUN_TIMEOUT);
        assert_eq!(out.code, Some(64), "{args:?} {env:?}\n{}", out.dump());
        assert!(
            out.stderr.contains(want),
            "{args:?} {env:?}\n{}",
            out.dump()
        );
        assert_eq!(out.stderr.lines().count(), 1, "one line\n{}", out.dump());
    }
    assert!(!marker.exists() && !hook_ran.exists(), "something ran");
    assert!(fake.requests().is_empty(), "contacted\n{}", fake.dump());
}

#[test]
fn an_empty_variable_is_unset() {
    let out = run(
        tandem()
            .env("TANDEM_ON_EXIT", "")
            .args(["sh", "-c", "exit 7"]),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(7), "{}", out.dump());
    assert_eq!(out.stderr, "", "{}", out.dump());
}

#[test]
fn its_own_group_gets_relayed_signals_that_leave_the_status_alone() {
    for group in [false, true] {
        let gate = Gate::new("relay");
        let mut cmd = tandem();
        cmd.env("TANDEM_ON_EXIT", gate.hook())
            .args(["sh", "-c", "exit 3"]);
        if group {
            cmd.env("TANDEM_FORWARD_TO", "group");
        }
        let mut tandem = spawn(&mut cmd);
        gate.wait_started(&tandem);
        let pid = gate.recorded("pid");
        assert_eq!(gate.recorded("pgid"), pid, "not its own process group");
        assert_ne!(pid, tandem.pid().to_string());
        for n in 1..=3 {
            tandem.signal(SIGUSR1);
            let seen = wait_until(REACT, || gate.usr1s("usr1") >= n);
            assert!(seen, "SIGUSR1 {n} not relayed\n{}", tandem.stderr_so_far());
        }
        // --forward-to group reaches its child too (signals sent close together
        // may merge there); the default, only the hook.
        if group {
            let seen = wait_until(REACT, || gate.usr1s("child") > 0);
            assert!(
                seen,
                "the hook's child got no SIGUSR1 with --forward-to group"
            );
        } else {
            thread::sleep(Duration::from_millis(100));
            assert_eq!(gate.usr1s("child"), 0, "the hook's child got a SIGUSR1");
        }
        // A terminating signal goes to it too, and is not tandem's status.
        tandem.signal(SIGTERM);
        assert!(wait_until(REACT, || !tandem.is_running()), "tandem stayed");
        let out = tandem.wait(RUN_TIMEOUT);
        assert_eq!(out.code, Some(3), "group {group}\n{}", out.dump());
        assert!(
            out.stderr
                .contains("the --on-exit program was killed by SIGTERM"),
            "{}",
            out.dump()
        );
    }
}

#[test]
fn the_timeout_sends_sigterm_to_its_group() {
    let dir = temp_dir("timeout-term");
    let grandchild = dir.join("grandchild");
    // The hook's child writes its pid, then sleeps; both are in the hook's group.
    let hook = sh(
        r#"sh -c 'echo $$ > "$1"; exec sleep 30' child "$1" & wait"#,
        &[&grandchild],
    );
    let started = Instant::now();
    let out = run(
        tandem()
            .args(["--on-exit-timeout", "300ms", "--on-exit", &hook])
            .args(["sh", "-c", "exit 4"]),
        RUN_TIMEOUT,
    );
    let took = started.elapsed();
    assert_eq!(out.code, Some(4), "{}", out.dump());
    assert!(
        took < Duration::from_secs(2),
        "took {took:?}\n{}",
        out.dump()
    );
    let line = "still running after 300ms (--on-exit-timeout): sending SIGTERM";
    assert!(out.stderr.contains(line), "{}", out.dump());
    assert!(
        out.stderr
            .contains("killed by SIGTERM after its timeout (300ms)")
    );
    let pid: i32 = fs::read_to_string(&grandchild)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let gone = wait_until(REACT, || !Path::new(&format!("/proc/{pid}")).exists());
    assert!(gone, "the hook's child {pid} outlived the timeout");
}

#[test]
fn a_hook_that_ignores_sigterm_gets_sigkill_2s_later() {
    let started = Instant::now();
    let hook = sh("trap '' TERM; while :; do sleep 0.05; done", &[]);
    let out = run(
        tandem()
            .args(["--on-exit-timeout", "200ms", "--on-exit", &hook])
            .arg("true"),
        RUN_TIMEOUT,
    );
    let took = started.elapsed();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(
        took >= Duration::from_millis(2200) && took < Duration::from_secs(8),
        "took {took:?}\n{}",
        out.dump()
    );
    for line in [
        "still running 2s after SIGTERM: sending SIGKILL to its process group",
        "the --on-exit program was killed by SIGKILL after its timeout (200ms)",
    ] {
        assert!(out.stderr.contains(line), "{line}\n{}", out.dump());
    }
}

#[test]
fn a_hook_not_found_is_a_warning_and_the_quits_still_go() {
    let fake = start(Script::generic());
    let out = run(
        tandem_quitting(&fake, "tandem-no-such-hook --flag").args(["sh", "-c", "exit 2"]),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(2), "{}", out.dump());
    assert!(
        out.stderr
            .contains("warning: --on-exit: tandem-no-such-hook: command not found"),
        "{}",
        out.dump()
    );
    quit_at(&fake, &out);
}

#[test]
fn its_outcome_is_info_on_0_and_a_warning_otherwise_without_sidecars_too() {
    let out = run(tandem().args(["--on-exit", "true", "true"]), RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump());
    // Info lines carry no level word; a warning would.
    assert!(
        out.stderr
            .contains("tandem: the --on-exit program exited with 0"),
        "{}",
        out.dump()
    );
    let out = run(tandem().args(["--on-exit", "false", "true"]), RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "never the hook's status\n{}", out.dump());
    assert!(
        out.stderr
            .contains("warning: the --on-exit program exited with 1"),
        "{}",
        out.dump()
    );
}

/// The hook as PID 1's child: it double-forks an orphan that exits at once, then
/// waits until no zombie is left in the namespace (about 10 s at most) and
/// records how many there were.
const ORPHAN_HOOK: &str = r#"
( true & )
t=0
while :; do
    z=0
    for f in /proc/[0-9]*/stat; do
        read -r l 2>/dev/null < "$f" || continue
        set -- $l; [ "$3" = Z ] && z=$((z+1))
    done
    [ $z = 0 ] && break
    t=$((t+1)); [ $t -gt 500 ] && break
    sleep 0.02
done
echo "$z" > "$0"
"#;

#[test]
fn as_pid_1_its_orphans_are_reaped_while_it_runs() {
    if !pid_namespace_available() {
        return;
    }
    let zombies = temp_dir("pid1-hook").join("zombies");
    let hook = format!("sh -c {} {}", q(ORPHAN_HOOK), q(zombies.to_string_lossy()));
    let mut cmd = in_new_pid_namespace();
    cmd.arg(env!("CARGO_BIN_EXE_tandem"))
        .args(["--on-exit", &hook, "sh", "-c", "exit 6"]);
    let out = run(&mut cmd, RUN_TIMEOUT);
    assert_eq!(out.code, Some(6), "{}", out.dump());
    let left = fs::read_to_string(&zombies).unwrap_or_default();
    assert_eq!(
        left.trim(),
        "0",
        "zombies left while the hook ran\n{}",
        out.dump()
    );
}

#[test]
fn a_job_container_records_it_has_finished_only_after_its_hook() {
    let fake = start(Script::generic());
    let root = temp_dir("siblings-hook");
    let shared = root.join("shared");
    fs::create_dir_all(&shared).unwrap();
    let gate = Gate::new("siblings-gate");
    let job = |me: &str, hook: Option<String>, app: &str| {
        let mut cmd = tandem();
        cmd.env("GENERIC_QUIT_ENDPOINTS", format!("{}{QUIT}", fake.url()))
            .env("TANDEM_JOB_CONTAINERS", "a,b")
            .env("TANDEM_CONTAINER_NAME", me)
            .env("TANDEM_SHARED_DIR", &shared)
            .envs(hook.map(|h| ("TANDEM_ON_EXIT", h)))
            .args(["sh", "-c", app]);
        spawn(&mut cmd)
    };
    // a ends first and its hook holds; b ends while it runs. Had a recorded before
    // its hook, b would be the last to finish and send the quits at once.
    let a = job("a", Some(gate.hook()), "exit 0");
    gate.wait_started(&a);
    let b = job("b", None, "exit 0");
    let waits = wait_until(REACT, || b.stderr_so_far().contains("still running: a"));
    assert!(waits, "b does not wait for a\n{}", b.stderr_so_far());
    thread::sleep(Duration::from_millis(300));
    assert_eq!(
        fake.quit_requests(),
        0,
        "quit under a's hook\n{}",
        fake.dump()
    );
    let opened = gate.open();
    let (a, b) = (a.wait(RUN_TIMEOUT), b.wait(RUN_TIMEOUT));
    assert_eq!(
        (a.code, b.code),
        (Some(0), Some(0)),
        "{}{}",
        a.dump(),
        b.dump()
    );
    assert!(quit_at(&fake, &a) > opened, "quit before a's hook ended");
}

#[test]
fn a_zero_timeout_waits_as_long_as_it_takes() {
    let hook = sh("sleep 0.5; exit 0", &[]);
    let out = run(
        tandem()
            .args(["--on-exit-timeout", "0", "--on-exit", &hook])
            .arg("true"),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(
        out.stderr.contains("the --on-exit program exited with 0")
            && !out.stderr.contains("SIGTERM"),
        "{}",
        out.dump()
    );
}

#[test]
fn it_never_changes_the_termination_message() {
    let dir = temp_dir("termination");
    let cases = [
        // The app succeeded, the hook failed: nothing to say.
        ("true", "false", ""),
        // tandem's own reason stays the app's, whatever the hook does.
        (
            "tandem-no-such-app",
            "tandem-no-such-hook",
            "tandem-no-such-app: command not found",
        ),
    ];
    for (i, (app, hook, want)) in cases.into_iter().enumerate() {
        let log = dir.join(format!("message-{i}"));
        fs::write(&log, "").unwrap();
        let out = run(
            tandem()
                .arg("--termination-log")
                .arg(&log)
                .args(["--on-exit", hook, app]),
            RUN_TIMEOUT,
        );
        let message = fs::read_to_string(&log).unwrap();
        assert_eq!(message.trim(), want, "{app} {hook}\n{}", out.dump());
        assert!(out.stderr.contains("--on-exit"), "{}", out.dump());
    }
}
