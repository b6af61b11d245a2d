//! The pilot-agent SIGINT fallback (SPEC §5.2): tandem and a process named
//! `pilot-agent` run together in a new PID namespace, so the tandems of
//! concurrent tests, in the test process's namespace, never see it.

use super::posts;
use crate::support::{
    FakeAdmin, Fault, Out, RUN_TIMEOUT, Script, closed_port, default_signals, in_new_pid_namespace,
    no_real_pilot_agent, pid_namespace_available, run, spawn, start, state, tandem_at, temp_dir,
    wait_until,
};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

// ---------------------------------------------------------------------------
// pilot-agent SIGINT fallback (SPEC §5.2)
// ---------------------------------------------------------------------------

/// How a fake pilot-agent ended.
#[derive(Debug, PartialEq, Eq)]
enum AgentEnd {
    /// tandem sent it SIGINT.
    Interrupted,
    /// It was still running after tandem exited (the script then killed it).
    LeftRunning,
    /// Anything else: the exit status `wait` reported, or what the status file held.
    Other(String),
}

/// Run by `sh` as PID 1 of a new PID namespace, with `DIR TANDEM ARGS…`: starts
/// `DIR/pilot-agent` (a copy of `sleep`: `/proc/PID/comm` comes from the
/// executable's name), waits until it bears that name, runs tandem, then kills the
/// fake and writes its pid and its exit status (130 after SIGINT, 137 if it was
/// still running) to `DIR/agent.pid` and `DIR/agent.status`; exits with tandem's
/// status. A non-interactive shell starts background jobs with SIGINT ignored, so
/// `env --default-signal=INT` restores it before the fake starts.
const BESIDE_PILOT_AGENT: &str = r#"
dir=$1; shift
env --default-signal=INT "$dir/pilot-agent" 60 </dev/null >/dev/null 2>&1 &
agent=$!
echo "$agent" > "$dir/agent.pid"
n=0
until [ "$(cat "/proc/$agent/comm" 2>/dev/null)" = pilot-agent ]; do
    n=$((n+1))
    if [ $n -gt 1000 ]; then
        echo "the fake never showed up as pilot-agent in /proc/$agent/comm" >&2
        kill -9 "$agent"
        exit 125
    fi
    sleep 0.01
done
"$@"
code=$?
kill -9 "$agent" 2>/dev/null
wait "$agent"
echo $? > "$dir/agent.status"
exit $code
"#;

/// Copies `sleep` to `DIR/pilot-agent`, the name a process running it will have in
/// `/proc/PID/comm`; returns that path.
fn copy_sleep_as_pilot_agent(dir: &Path) -> PathBuf {
    let sleep = ["/bin/sleep", "/usr/bin/sleep"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("sleep exists");
    let fake = dir.join("pilot-agent");
    std::fs::copy(sleep, &fake).expect("copy sleep to pilot-agent");
    fake
}

/// Runs tandem with `env` and the app `sh -c 'exit CODE'` beside a fake process
/// named `pilot-agent`, both inside a new PID namespace (see [`BESIDE_PILOT_AGENT`]);
/// returns the output, how the fake ended, and its pid as tandem sees it. `None`
/// (after `support::skip`) when this machine cannot make a PID namespace.
///
/// tandem skips a pilot-agent of another PID namespace, so the tandems of
/// concurrent tests, in the test's own namespace, leave this fake alone, and this
/// tandem sees no fake of theirs. The network namespace is shared: the fakes on
/// 127.0.0.1 are reachable from inside.
fn run_beside_pilot_agent(env: &[(&str, String)], code: i32) -> Option<(Out, AgentEnd, String)> {
    if !pid_namespace_available() {
        return None;
    }
    let dir = temp_dir("pilot-agent");
    copy_sleep_as_pilot_agent(&dir);

    // If the run is killed on timeout, the namespace and the fake go with it.
    let mut cmd = in_new_pid_namespace();
    cmd.envs(env.iter().map(|(k, v)| (k, v)))
        .args(["sh", "-c", BESIDE_PILOT_AGENT, "sh"])
        .arg(&dir)
        .arg(env!("CARGO_BIN_EXE_tandem"))
        .args(["sh", "-c", "exit \"$1\"", "sh"])
        .arg(code.to_string());
    let out = run(&mut cmd, RUN_TIMEOUT);
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    let (status, pid) = (read("agent.status"), read("agent.pid"));
    let _ = std::fs::remove_dir_all(&dir);
    let end = match status.as_str() {
        "130" => AgentEnd::Interrupted,
        "137" => AgentEnd::LeftRunning,
        _ => AgentEnd::Other(status),
    };
    Some((out, end, pid))
}

#[test]
fn visible_pilot_agent_gets_sigint_instead_of_a_post_to_the_admin() {
    let envoy = start(Script::envoy());
    let Some((out, agent, pid)) = run_beside_pilot_agent(&[("ENVOY_ADMIN_API", envoy.url())], 0)
    else {
        return;
    };
    let dump = out.dump_with(&[&envoy]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert_eq!(agent, AgentEnd::Interrupted, "{dump}");
    let sent = format!("sent SIGINT to pilot-agent (pid {pid})");
    assert!(out.stderr.contains(&sent), "expected {sent:?}\n{dump}");
    assert_eq!(
        envoy.quit_requests(),
        0,
        "the signal replaces the POST\n{dump}"
    );
}

#[test]
fn unreachable_istio_quit_api_falls_back_to_sigint_of_pilot_agent() {
    let envoy = start(Script::envoy());
    let istio = format!("http://127.0.0.1:{}", closed_port());
    let env = [
        ("ENVOY_ADMIN_API", envoy.url()),
        ("ISTIO_QUIT_API", istio.clone()),
    ];
    let Some((out, agent, pid)) = run_beside_pilot_agent(&env, 4) else {
        return;
    };
    let dump = out.dump_with(&[&envoy]);
    assert_eq!(out.code, Some(4), "{dump}");
    let failed = format!("quit POST {istio}/quitquitquit failed: connection refused");
    assert!(out.stderr.contains(&failed), "{dump}");
    assert_eq!(agent, AgentEnd::Interrupted, "{dump}");
    let sent = format!("sent SIGINT to pilot-agent (pid {pid})");
    assert!(out.stderr.contains(&sent), "expected {sent:?}\n{dump}");
    assert_eq!(envoy.quit_requests(), 0, "{dump}");
}

#[test]
fn reachable_istio_quit_api_leaves_pilot_agent_unsignalled() {
    let envoy = start(Script::envoy());
    let pilot = start(Script::pilot_agent());
    let env = [
        ("ENVOY_ADMIN_API", envoy.url()),
        ("ISTIO_QUIT_API", pilot.url()),
    ];
    let Some((out, agent, _)) = run_beside_pilot_agent(&env, 0) else {
        return;
    };
    let dump = out.dump_with(&[&envoy, &pilot]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert_eq!(posts(&pilot, "/quitquitquit"), 1, "{dump}");
    assert_eq!(
        agent,
        AgentEnd::LeftRunning,
        "the POST worked: no signal\n{dump}"
    );
    assert!(!out.stderr.contains("sent SIGINT"), "{dump}");
    assert_eq!(envoy.quit_requests(), 0, "{dump}");
}

#[test]
fn never_kill_istio_leaves_a_visible_pilot_agent_unsignalled() {
    let envoy = start(Script::envoy());
    let env = [
        ("ENVOY_ADMIN_API", envoy.url()),
        ("NEVER_KILL_ISTIO", "true".to_owned()),
    ];
    let Some((out, agent, _)) = run_beside_pilot_agent(&env, 0) else {
        return;
    };
    let dump = out.dump_with(&[&envoy]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert_eq!(agent, AgentEnd::LeftRunning, "{dump}");
    assert!(!out.stderr.contains("sent SIGINT"), "{dump}");
    assert_eq!(envoy.quit_requests(), 0, "{dump}");
}

#[test]
fn pilot_agent_of_a_nested_pid_namespace_is_left_alone_and_the_admin_gets_the_post() {
    // What keeps the fakes above from other tests' tandems: one run outside the
    // namespace, while a fake pilot-agent is visible in /proc, still POSTs.
    if !pid_namespace_available() {
        return;
    }
    if !no_real_pilot_agent() {
        return;
    }
    let dir = temp_dir("nested-pilot-agent");
    let fake = copy_sleep_as_pilot_agent(&dir);
    // Not PID 1 of its namespace, which would ignore a SIGINT without a handler.
    let nested = spawn(
        default_signals(&mut Command::new("unshare"))
            .args(["--pid", "--fork", "--kill-child", "--mount-proc"])
            .args(["sh", "-c", NESTED_PILOT_AGENT, "sh"])
            .arg(&fake),
    );
    let mut agent = None;
    let visible = wait_until(Duration::from_secs(10), || {
        agent = nested_pilot_agent(&fake);
        agent.is_some()
    });
    assert!(visible, "the nested fake never showed up in /proc");
    let envoy = start(Script::envoy());
    let out = run(tandem_at(&envoy).arg("true"), RUN_TIMEOUT);
    let dump = out.dump_with(&[&envoy]);
    let agent: i32 = agent.and_then(|pid| pid.parse().ok()).expect("found above");
    let alive = state(agent).is_some_and(|state| state != 'Z');
    drop(nested);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.code, Some(0), "{dump}");
    assert_eq!(posts(&envoy, "/quitquitquit"), 1, "{dump}");
    assert!(!out.stderr.contains("sent SIGINT"), "{dump}");
    assert!(
        alive,
        "the nested pilot-agent {agent} was signalled\n{dump}"
    );
}

/// Run by `sh` as PID 1 of a new PID namespace with the fake's path: starts it
/// with SIGINT at its default (see [`BESIDE_PILOT_AGENT`]) and waits.
const NESTED_PILOT_AGENT: &str =
    r#"env --default-signal=INT "$1" 60 </dev/null >/dev/null 2>&1 & wait"#;

/// The pid (in this test's namespace) of the process running `exe` under the name
/// `pilot-agent` in another PID namespace, once it does.
fn nested_pilot_agent(exe: &Path) -> Option<String> {
    let mine = std::fs::read_link("/proc/self/ns/pid").ok()?;
    std::fs::read_dir("/proc")
        .ok()?
        .filter_map(Result::ok)
        .find(|entry| {
            let path = entry.path();
            std::fs::read_to_string(path.join("comm"))
                .is_ok_and(|comm| comm.trim_end() == "pilot-agent")
                && std::fs::read_link(path.join("exe")).is_ok_and(|e| e == exe)
                && std::fs::read_link(path.join("ns/pid")).is_ok_and(|ns| ns != mine)
        })
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
}

#[test]
fn istio_fallback_pkill_true_signals_pilot_agent_when_its_quit_fails_in_any_way() {
    let envoy = start(Script::envoy());
    // Connected, then no answer: not the refused connection of the default fallback.
    let pilot = start(Script::pilot_agent().fault_on("/quitquitquit", Fault::Hang));
    let env = [
        ("ENVOY_ADMIN_API", envoy.url()),
        ("ISTIO_QUIT_API", pilot.url()),
        ("ISTIO_FALLBACK_PKILL", "true".to_owned()),
        ("QUIT_REQUEST_TIMEOUT", "500ms".to_owned()),
    ];
    let Some((out, agent, _)) = run_beside_pilot_agent(&env, 0) else {
        return;
    };
    let dump = out.dump_with(&[&envoy, &pilot]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert_eq!(posts(&pilot, "/quitquitquit"), 1, "{dump}");
    assert_eq!(agent, AgentEnd::Interrupted, "{dump}");
}

#[test]
fn istio_fallback_pkill_false_never_signals_pilot_agent() {
    let envoy = start(Script::envoy());
    let env = [
        ("ENVOY_ADMIN_API", envoy.url()),
        (
            "ISTIO_QUIT_API",
            format!("http://127.0.0.1:{}", closed_port()),
        ),
        ("ISTIO_FALLBACK_PKILL", "false".to_owned()),
    ];
    let Some((out, agent, _)) = run_beside_pilot_agent(&env, 0) else {
        return;
    };
    let dump = out.dump_with(&[&envoy]);
    assert_eq!(agent, AgentEnd::LeftRunning, "{dump}");
    assert!(!out.stderr.contains("sent SIGINT"), "{dump}");
}

/// A pilot-agent that answers its quit with `status`, and the environment of a
/// tandem that quits Istio through it, with `ISTIO_FALLBACK_PKILL` if given.
fn refusing_pilot_agent(
    status: u16,
    fallback: Option<&str>,
) -> (FakeAdmin, FakeAdmin, Vec<(&'static str, String)>) {
    let envoy = start(Script::envoy());
    let pilot = start(Script::pilot_agent().status_override("/quitquitquit", status));
    let mut env = vec![
        ("ENVOY_ADMIN_API", envoy.url()),
        ("ISTIO_QUIT_API", pilot.url()),
    ];
    env.extend(fallback.map(|value| ("ISTIO_FALLBACK_PKILL", value.to_owned())));
    (envoy, pilot, env)
}

#[test]
fn istio_fallback_pkill_true_signals_pilot_agent_when_its_quit_answers_503() {
    let (envoy, pilot, env) = refusing_pilot_agent(503, Some("true"));
    let Some((out, agent, pid)) = run_beside_pilot_agent(&env, 0) else {
        return;
    };
    let dump = out.dump_with(&[&envoy, &pilot]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert_eq!(posts(&pilot, "/quitquitquit"), 1, "{dump}");
    assert!(out.stderr.contains(": 503 (not 2xx"), "{dump}");
    assert_eq!(agent, AgentEnd::Interrupted, "{dump}");
    let sent = format!("sent SIGINT to pilot-agent (pid {pid})");
    assert!(out.stderr.contains(&sent), "expected {sent:?}\n{dump}");
}

#[test]
fn a_503_without_istio_fallback_pkill_is_a_failed_quit_and_no_signal() {
    // The default falls back only when pilot-agent cannot be reached at all.
    let (envoy, pilot, env) = refusing_pilot_agent(503, None);
    let Some((out, agent, _)) = run_beside_pilot_agent(&env, 0) else {
        return;
    };
    let dump = out.dump_with(&[&envoy, &pilot]);
    assert_eq!(out.code, Some(0), "{dump}");
    assert!(
        out.stderr.contains("error: quit POST") && out.stderr.contains(": 503 (not 2xx"),
        "{dump}"
    );
    assert_eq!(agent, AgentEnd::LeftRunning, "{dump}");
}
