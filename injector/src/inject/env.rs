//! The environment tandem gets in each wrapped job container: the mesh it
//! quits (`TANDEM_MESH`) or only waits for (`TANDEM_READY_URLS`), §9's three
//! variables when several job containers share the Pod, and the statuses on
//! which it runs again in place (`TANDEM_KEEP_ON_EXIT`).

use serde_json::{Value, json};

use super::ops::append;
use super::pod::Container;
use crate::inject::report::{Fate, Report};
use crate::layout::SHARED_DIR;
use crate::sidecars::Sidecar;
use tandem_common::vars::{KEEP_ON_EXIT, MESH, OWN_KEEP, READY_URLS, SEVERAL};

/// Splits the known sidecars into those tandem quits and those it only waits
/// for. Classic sidecars are quit by tandem (their preset); native ones only
/// waited for (their readiness URL): kubelet stops them after the job
/// containers. When a job container runs without tandem, the wrapped ones may
/// end first, so they quit nothing (kubelet's rule for native ones), and
/// `report` names the classic sidecars left running, unless a wrapped
/// container quits them by its own (or an earlier) `TANDEM_MESH`.
pub(super) fn quit_or_wait(
    report: &mut Report,
    wrapped: &[&Container],
    classic: Vec<&'static Sidecar>,
    native: Vec<&'static Sidecar>,
) -> (Vec<&'static Sidecar>, Vec<&'static Sidecar>) {
    let unwrapped = report
        .containers
        .iter()
        .any(|(_, f)| matches!(f, Fate::Skipped(s) if s.runs_without_tandem()));
    if !unwrapped {
        return (classic, native);
    }
    if !wrapped.iter().any(|c| c.sets(MESH)) {
        report.not_quit = classic
            .iter()
            .filter_map(|s| s.container.map(str::to_string))
            .collect();
    }
    (Vec::new(), [classic, native].concat())
}

/// Appends to `patch` the variables each of `wrapped` needs, and tells
/// `report` which it got.
pub(super) fn add(
    patch: &mut Vec<Value>,
    report: &mut Report,
    wrapped: &[&Container],
    classic: &[&Sidecar],
    native: &[&Sidecar],
) {
    let several = wrapped.len() > 1;
    let names: Vec<&str> = wrapped.iter().map(|c| c.name).collect();
    for c in wrapped {
        let vars = variables(c, classic, native, several.then_some(&names[..]));
        if vars.is_empty() {
            continue;
        }
        if let Some((_, Fate::Wrapped(_, told))) =
            report.containers.iter_mut().find(|(n, _)| n == c.name)
        {
            *told = describe(&vars);
        }
        let at = format!("/spec/containers/{}/env", c.index);
        append(patch, &at, c.env.is_some(), vars);
    }
}

/// The readiness URL of sidecar `s` for job container `c`: on the port `c` gives
/// the sidecar's port variable, when that is a literal port number (anything
/// else keeps the default port); `None` when there is nothing to wait for.
fn ready_url(s: &Sidecar, c: &Container) -> Option<String> {
    let port = s
        .port_var
        .and_then(|var| c.value(var))
        .and_then(|p| p.parse::<u16>().ok())
        .filter(|&p| p > 0);
    s.ready_on(port)
}

/// The variables tandem needs in job container `c` that it does not set itself:
/// the mesh (`TANDEM_MESH` for classic sidecars, `TANDEM_READY_URLS` for native
/// ones, neither when the container sets either), §9's three when there are
/// several job containers (none when it sets any of them), then the statuses on
/// which the kubelet runs it again (none when it sets them, or scuttle's
/// `NEVER_KILL_ISTIO_ON_FAILURE`, itself).
fn variables(
    c: &Container,
    classic: &[&Sidecar],
    native: &[&Sidecar],
    jobs: Option<&[&str]>,
) -> Vec<Value> {
    let mut vars = Vec::new();
    let var = |name: &str, value: String| json!({"name": name, "value": value});
    if !c.sets(MESH) && !c.sets(READY_URLS) {
        let mesh: Vec<&str> = classic.iter().map(|s| s.preset).collect();
        if !mesh.is_empty() {
            vars.push(var(MESH, mesh.join(",")));
        }
        let ready: Vec<String> = native.iter().filter_map(|s| ready_url(s, c)).collect();
        if !ready.is_empty() {
            vars.push(var(READY_URLS, ready.join(",")));
        }
    }
    if let Some(jobs) = jobs
        && !SEVERAL.iter().any(|v| c.sets(v))
    {
        vars.push(var(SEVERAL[0], jobs.join(",")));
        vars.push(var(SEVERAL[1], c.name.to_string()));
        vars.push(var(SEVERAL[2], SHARED_DIR.to_string()));
    }
    if !c.keep.is_empty() && !OWN_KEEP.iter().any(|v| c.sets(v)) {
        vars.push(var(KEEP_ON_EXIT, c.keep.to_string()));
    }
    vars
}

/// What the variables tell tandem, for the annotation and the log: `added
/// NAME=value …`, and in words which statuses keep the sidecars up.
fn describe(vars: &[Value]) -> String {
    let mut added = Vec::new();
    let mut keep = None;
    for v in vars {
        let (name, value) = (v["name"].as_str(), v["value"].as_str().unwrap_or(""));
        match name {
            Some(KEEP_ON_EXIT) => keep = Some(value),
            _ => added.push(format!("{}={value}", name.unwrap_or(""))),
        }
    }
    let mut parts = Vec::new();
    if !added.is_empty() {
        parts.push(format!("added {}", added.join(" ")));
    }
    if let Some(keep) = keep {
        parts.push(format!("keeps the sidecars on exit {keep}"));
    }
    parts.join("; ")
}
