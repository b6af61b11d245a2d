//! Stopping the sidecars (SPEC §5), through the real binary against fakes on
//! loopback, one file per behaviour: which sidecar gets which quit request and
//! what is logged ([`targets`]), generic endpoints and the `QUIT_REQUEST_TIMEOUT`
//! bound ([`generic`]), the `NEVER_KILL_*` / `GENERIC_QUIT_ONLY` / failure
//! policies and quits after an abandoned wait ([`policies`]), restart in place
//! ([`keep`]), the pilot-agent
//! SIGINT fallback ([`pilot_agent`]), and quits the sidecar refused ([`refusals`]).
//!
//! tandem SIGINTs a visible process named `pilot-agent` instead of POSTing a plain
//! Envoy admin (SPEC §5.2), so a test that expects that POST first checks
//! `support::no_real_pilot_agent`; the fakes of [`pilot_agent`] live in nested PID
//! namespaces, which tandem ignores.

/// Generic endpoints: order, concurrency, the per-request bound (SPEC §5.1–§5.3).
mod generic;
/// Restart in place: a status in `--keep-on-exit` stops nothing (SPEC §2, §5.1).
mod keep;
/// The pilot-agent SIGINT fallback, in nested PID namespaces (SPEC §5.2).
mod pilot_agent;
/// Never, generic-only and failure policies; quits after an abandoned wait (SPEC §2, §3, §5).
mod policies;
/// Non-2xx answers: a failed Istio/Envoy quit, a generic endpoint's warning (SPEC §5.3).
mod refusals;
/// Which sidecar gets the quit, locality, logged results, redirects (SPEC §5.1–§5.3).
mod targets;

use crate::support::{FakeAdmin, Out, RUN_TIMEOUT, Req, Script, run, start, tandem_at};
use std::path::Path;
use std::process::Command;

/// How many `POST path` requests `fake` received.
pub(super) fn posts(fake: &FakeAdmin, path: &str) -> usize {
    fake.count("POST", path)
}

/// The first `POST path` request `fake` received.
pub(super) fn first_post(fake: &FakeAdmin, path: &str) -> Option<Req> {
    fake.requests()
        .into_iter()
        .find(|req| req.method == "POST" && req.path == path)
}

/// Lines of tandem's stderr that log a quit request.
pub(super) fn quit_lines(out: &Out) -> Vec<&str> {
    out.stderr
        .lines()
        .filter(|line| line.contains("quit POST"))
        .collect()
}

/// Environment variables for one run.
pub(super) type Env<'a> = &'a [(&'a str, &'a str)];

/// A plain Envoy admin serving `script`, a generic endpoint, and a tandem with
/// `ENVOY_ADMIN_API` at the admin and `GENERIC_QUIT_ENDPOINTS` at the endpoint's
/// `/quit`; returns `(tandem, admin, endpoint)`.
pub(super) fn envoy_and_generic(script: Script) -> (Command, FakeAdmin, FakeAdmin) {
    let envoy = start(script);
    let generic = start(Script::generic());
    let mut cmd = tandem_at(&envoy);
    cmd.env("GENERIC_QUIT_ENDPOINTS", format!("{}/quit", generic.url()));
    (cmd, envoy, generic)
}

/// A finished [`run_with_policy`] and its two fakes.
pub(super) struct PolicyRun {
    pub out: Out,
    pub envoy: FakeAdmin,
    pub generic: FakeAdmin,
    /// The output and both fakes' logs, for assertion messages.
    pub dump: String,
}

impl PolicyRun {
    /// Quit requests the admin got, POST or GET.
    pub fn admin_quits(&self) -> usize {
        self.envoy.quit_requests() + self.envoy.count("GET", "/quitquitquit")
    }

    /// Requests the generic endpoint got: nothing polls it, so each is a quit.
    pub fn generic_quits(&self) -> usize {
        self.generic.requests().len()
    }
}

/// Runs `sh -c 'exit CODE'` with `env` and `args` against [`envoy_and_generic`]
/// of a plain Envoy that is ready at once.
pub(super) fn run_with_policy(code: i32, env: Env, args: &[&str]) -> PolicyRun {
    let (mut cmd, envoy, generic) = envoy_and_generic(Script::envoy());
    cmd.envs(env.iter().copied())
        .args(args)
        .args(["sh", "-c", &format!("exit {code}")]);
    let out = run(&mut cmd, RUN_TIMEOUT);
    let dump = out.dump_with(&[&envoy, &generic]);
    PolicyRun {
        out,
        envoy,
        generic,
        dump,
    }
}

/// An app that writes its pid to `marker`, then exits with `code`.
pub(super) fn app_writing_pid(cmd: &mut Command, marker: &Path, code: i32) {
    cmd.args(["sh", "-c", "echo $$ > \"$1\"; exit \"$2\"", "sh"])
        .arg(marker)
        .arg(code.to_string());
}
