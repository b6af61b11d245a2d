//! SPEC §10: which Pods change and how. A pure function from the review's
//! `request` to a JSONPatch, a `Report` of what it did (the annotation
//! `tandem.dev/injection`, warnings and the log line come from it); it reads
//! the Pod as JSON and never fails: what it cannot read leaves the Pod
//! unchanged, and the report says why.

use serde_json::Value;

use crate::layout::{BIN_VOLUME, SHARED_VOLUME};
use crate::left_alone;

mod command;
pub mod delivery;
pub mod entrypoint;
mod env;
pub mod keep;
pub mod native;
mod ops;
mod patch;
mod pod;
pub mod report;
pub mod route;
mod scope;
pub mod selectors;

use delivery::Install;
pub use entrypoint::Images;
use report::Report;
use route::Route;

pub use pod::is_job;
use pod::{changed_earlier, containers, known};
use scope::select;
pub use scope::{Opted, RUNS_TO_COMPLETION, Scope, controller, job, runs_to_completion};

/// What the injector answers for one Pod.
#[derive(Debug, Default, PartialEq)]
pub struct Plan {
    /// JSONPatch operations (RFC 6902); empty leaves the Pod as it is.
    pub patch: Vec<Value>,
    /// Admission warnings (`kubectl` shows them for a Pod it creates; the Job
    /// controller discards them).
    pub warnings: Vec<String>,
    /// What happened, for the injector's log.
    pub summary: String,
    /// What it did to a Pod in scope; `None` for any other object.
    pub report: Option<Report>,
}

impl Plan {
    fn unchanged(summary: impl Into<String>) -> Plan {
        Plan {
            summary: summary.into(),
            ..Plan::default()
        }
    }
}

/// The plan for one admission `request` (SPEC §10): the Pod is changed only when
/// it is a Pod CREATE, opted in (per `scope`), that runs to completion; `install` is
/// the tandem image and how its binary reaches the job containers.
pub fn plan(request: &Value, install: &Install, scope: Scope) -> Plan {
    plan_with(request, install, scope, &Images::new())
}

/// [`plan`], with what `images` says of the job containers without `command`.
pub fn plan_with(request: &Value, install: &Install, scope: Scope, images: &Images) -> Plan {
    match select(request, scope) {
        Ok((pod, name, opted)) => plan_pod(pod, &name, opted, install, images),
        Err(why) => Plan::unchanged(why),
    }
}

/// The plan for `pod`, a Pod in scope that `opted` in (named `name` in the log),
/// on the route its annotation or `install` gives (SPEC §12): under audit, the
/// same decisions with nothing but the annotation applied.
pub fn plan_pod(pod: &Value, name: &str, opted: Opted, install: &Install, images: &Images) -> Plan {
    let chosen = route::choose(&pod["metadata"], install.route);
    let changed = match chosen.route {
        Route::Wrap => change(pod, install, images),
        Route::Native => change_native(pod, install),
    };
    let (mut patch, mut report) = changed.unwrap_or_else(|p| (Vec::new(), Report::problem(p)));
    report.route = chosen.route;
    report.route_not_understood = chosen.not_understood;
    report.audit = opted == Opted::Audit;
    if report.audit {
        patch.clear();
    }
    patch.extend(report.annotate(&pod["metadata"]));
    Plan {
        patch,
        warnings: report.warnings(),
        summary: format!("{name}: {}", report.line()),
        report: Some(report),
    }
}

/// The job containers without `command` (and no entrypoint annotation) of the
/// Pod `request` would change, with their images: what must be looked up in
/// a registry before [`plan_with`]. Empty for every other request, and for a
/// Pod on the native route (`route`, unless its annotation names one), which
/// touches no job container.
pub fn wanted(request: &Value, scope: Scope, route: Route) -> Vec<(String, String)> {
    match select(request, scope) {
        Ok((pod, _, _)) => wanted_in(pod, route),
        Err(_) => Vec::new(),
    }
}

/// [`wanted`] for a Pod already selected.
pub fn wanted_in(pod: &Value, route: Route) -> Vec<(String, String)> {
    if route::choose(&pod["metadata"], route).route == Route::Native {
        return Vec::new();
    }
    let Some(spec) = pod["spec"].as_object() else {
        return Vec::new();
    };
    let (Ok(main), Ok(init)) = (
        containers(spec, "containers"),
        containers(spec, "initContainers"),
    ) else {
        return Vec::new();
    };
    // An injected Pod (a reinvocation) wraps nothing new.
    if changed_earlier(spec, &init) {
        return Vec::new();
    }
    main.iter()
        .filter(|c| c.is_job())
        .filter(|c| c.command.as_ref().is_none_or(Vec::is_empty))
        .filter(|c| entrypoint::annotated(pod, c.name).is_none())
        .filter_map(|c| Some((c.name.to_string(), c.image?.to_string())))
        .collect()
}

/// The change for an opted-in Pod and its report, or the problem that
/// prevents it.
fn change(pod: &Value, install: &Install, images: &Images) -> Result<(Vec<Value>, Report), String> {
    let spec = pod["spec"].as_object().ok_or("the Pod has no spec")?;
    let main = containers(spec, "containers")?;
    let init = containers(spec, "initContainers")?;
    let volumes = pod::volumes(spec)?;
    let earlier = changed_earlier(spec, &init);
    if !earlier {
        let taken = volumes
            .into_iter()
            .flatten()
            .find(|v| v["name"] == BIN_VOLUME || v["name"] == SHARED_VOLUME);
        if let Some(v) = taken {
            return Err(format!("it already has a volume named {}", v["name"]));
        }
    }

    let mut report = Report {
        earlier,
        left_alone: main
            .iter()
            .filter_map(|c| left_alone::by_container(c.name))
            .collect(),
        ..Report::default()
    };
    let commands = command::decide(pod, &main, earlier, images, &mut report);
    let (classic, native) = env::quit_or_wait(
        &mut report,
        &commands.wrapped,
        known(&main, |_| true),
        known(&init, |c| c.always),
    );
    if commands.wrapped.is_empty() {
        return Ok((Vec::new(), report));
    }
    let mut patch = Vec::new();
    if !earlier {
        patch::install(&mut patch, spec, volumes.is_some(), install, &commands);
    }
    env::add(
        &mut patch,
        &mut report,
        &commands.wrapped,
        &classic,
        &native,
    );
    Ok((patch, report))
}

/// The native route's change for an opted-in Pod (SPEC §12) and its report,
/// or the problem that prevents it.
fn change_native(pod: &Value, install: &Install) -> Result<(Vec<Value>, Report), String> {
    let spec = pod["spec"].as_object().ok_or("the Pod has no spec")?;
    let main = containers(spec, "containers")?;
    let init = containers(spec, "initContainers")?;
    let (moves, patch) = native::plan(spec, &main, &init, install)?;
    let report = Report {
        native: Some(moves),
        ..Report::default()
    };
    Ok((patch, report))
}

#[cfg(test)]
mod entrypoint_tests;
#[cfg(test)]
mod left_alone_tests;
#[cfg(test)]
mod native_tests;
#[cfg(test)]
mod restart_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod unchanged_tests;
