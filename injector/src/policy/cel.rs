//! The CEL expressions of the mutating policy: the webhook's rules of SPEC §10
//! (`inject.rs`) restated for the API server, from the same sidecar table and
//! the same install parts. Each function returns one expression's text; the
//! JSONPatch built from them is `patch`'s.
//!
//! Written for the API server's cost: the match conditions turn away a Pod
//! with nothing to change before any variable is computed (most often the
//! policy's own second call on the Pod it has just changed); each job
//! container's facts are computed once, into a record (`variables.jobs`); a
//! container's index comes from `indexOf` on the container names (Kubernetes'
//! list library), so no work grows with anything but the Pod's containers; and
//! each string the patch repeats (a container's path, `TANDEM_MESH`'s value, the
//! job containers' names) is built once.

use super::keep;
use crate::layout::{BIN_VOLUME, INSTALL_CONTAINER, SHARED_VOLUME, TANDEM};
use crate::left_alone;
use crate::sidecars::{self, Sidecar};
use tandem_common::vars::{self, OWN_KEEP};

/// The most containers a Pod the policy changes may have: it bounds the
/// policy's cost (indexOf on the names makes a Pod's cost grow with the square
/// of its containers).
pub const MAX_CONTAINERS: usize = 64;
/// The annotation that gives a container's entrypoint (`PREFIX` + its name):
/// the webhook's, one home.
pub use crate::layout::ENTRYPOINT_ANNOTATION;
/// The annotation values the policy can read without a JSON parser: a JSON list
/// of strings without escapes.
pub const ENTRYPOINT_SHAPE: &str = r#"^\[\s*"[^"\\]*"(\s*,\s*"[^"\\]*")*\s*\]$"#;

/// The variables that say where tandem's list of sidecars comes from (§6).
pub const MESH_VARS: [&str; 2] = [vars::MESH, vars::READY_URLS];
/// §9's variables, set together or not at all.
pub use tandem_common::vars::SEVERAL;

/// A CEL string literal.
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// A CEL list of string literals.
pub fn list(items: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    let quoted: Vec<String> = items.into_iter().map(|i| quote(i.as_ref())).collect();
    format!("[{}]", quoted.join(", "))
}

/// The known sidecars' container names, as a CEL list.
pub fn sidecar_names() -> String {
    list(sidecars::containers().map(|(c, _)| c))
}

/// The names of the containers that are no job container: the known sidecars',
/// then those left alone (their creator stops them), as a CEL list.
pub fn not_job_names() -> String {
    // Two lists joined: one would pass yamllint's 100 columns.
    format!(
        "({} +\n      {})",
        sidecar_names(),
        list(left_alone::names())
    )
}

/// Whether container `c` is a job container: neither a known sidecar nor one
/// left alone.
fn is_job(c: &str) -> String {
    format!("!({c}.name in\n      {})", not_job_names())
}

/// Whether container `c` has a command of its own.
fn has_command(c: &str) -> String {
    format!("has({c}.command) && size({c}.command) > 0")
}

/// Whether container `c` runs the tandem this policy installs.
fn runs_tandem(c: &str) -> String {
    format!("{} && {c}.command[0] == {}", has_command(c), quote(TANDEM))
}

/// Whether container `c` sets one of `names`.
fn sets_any(c: &str, names: &[&str]) -> String {
    format!(
        "has({c}.env) && {c}.env.exists(e, e.name in\n      {})",
        list(names)
    )
}

/// Whether the annotations of `meta` give container `name` an entrypoint the
/// policy can read.
pub fn has_entrypoint(meta: &str, name: &str) -> String {
    let key = format!("{} + {name}", quote(ENTRYPOINT_ANNOTATION));
    format!(
        "has({meta}.annotations) &&\n    ({key}) in {meta}.annotations &&\n    \
         {meta}.annotations[{key}]\n      .matches(r'{ENTRYPOINT_SHAPE}')"
    )
}

/// The Pod carries the install container or the image volume: it was changed.
pub fn injected() -> String {
    format!(
        "has(object.spec.initContainers) &&\n  \
         object.spec.initContainers.exists(c, c.name == {}) ||\n  \
         has(object.spec.volumes) &&\n  \
         object.spec.volumes.exists(v, v.name == {} && has(v.image))",
        quote(INSTALL_CONTAINER),
        quote(BIN_VOLUME)
    )
}

/// The match condition that turns away a Pod the patch would leave as it is,
/// before any variable is computed. A changed Pod (a reinvocation) can only
/// gain variables: §6's, when a known sidecar is there and a wrapped container
/// sets neither of them; §9's, when two containers are wrapped and one sets
/// none; its restart statuses, when a wrapped container may run again in place
/// and has none. Another Pod needs a job container with a command that is not tandem,
/// or with the entrypoint annotation.
pub fn something_to_do() -> String {
    let sidecar = sidecar_names();
    let again = format!(
        "object.spec.containers.exists(c, {job} &&\n    {runs} &&\n    \
         (!({mesh}) &&\n      (object.spec.containers.exists(s, s.name in\n        {sidecar}) ||\n      \
         has(object.spec.initContainers) &&\n      \
         object.spec.initContainers.exists(s, s.name in\n        {sidecar})) ||\n    \
         !({several}) &&\n      \
         object.spec.containers.exists(o, o.name != c.name &&\n        \
         {other_job} &&\n        {other_runs}) ||\n    \
         !({keep}) &&\n      {restarts}))",
        job = is_job("c"),
        runs = runs_tandem("c"),
        mesh = sets_any("c", &MESH_VARS),
        several = sets_any("c", &SEVERAL),
        other_job = is_job("o"),
        other_runs = runs_tandem("o"),
        keep = sets_any("c", &OWN_KEEP),
        restarts = keep::restarts("c"),
    );
    let first = format!(
        "!(has(object.spec.volumes) &&\n    \
         object.spec.volumes.exists(v, v.name == {} || v.name == {})) &&\n  \
         object.spec.containers.exists(c, {} &&\n    ({} ?\n      \
         c.command[0] != 'tandem' && !c.command[0].endsWith('/tandem') :\n      \
         has(object.metadata.annotations) &&\n      \
         ({} + c.name) in object.metadata.annotations))",
        quote(BIN_VOLUME),
        quote(SHARED_VOLUME),
        is_job("c"),
        has_command("c"),
        quote(ENTRYPOINT_ANNOTATION)
    );
    format!("{} ?\n  {again} :\n  {first}", injected())
}

/// `variables.quit`: every job container has a command tandem can wrap; only
/// then does a tandem quit the sidecars.
pub fn quit() -> String {
    format!(
        "object.spec.containers.all(c, c.name in\n    {} ||\n  {} ||\n  {})",
        not_job_names(),
        has_command("c"),
        has_entrypoint("object.metadata", "c.name")
    )
}

/// `variables.jobs`: a record for each job container, in the Pod's order: the
/// container itself (`c`), its JSON path with a trailing slash (`at`), the
/// command tandem wraps (`cmd`: its own, else the annotation's list, else
/// `[]`), whether it runs tandem already (`runs`), sets §6's, §9's or its
/// own restart statuses (`meshFree`, `severalFree`, `keepFree`: it sets none of
/// them), and the statuses on which it runs again in place (`keep`).
pub fn jobs() -> String {
    let key = format!("{} + c.name", quote(ENTRYPOINT_ANNOTATION));
    let cmd = format!(
        "{} ? c.command :\n      {} ?\n      \
         object.metadata.annotations[{key}]\n        \
         .findAll('\"[^\"]*\"').map(w, w.substring(1, size(w) - 1)) :\n      []",
        has_command("c"),
        has_entrypoint("object.metadata", "c.name")
    );
    let fields = [
        ("c", "c".to_string()),
        (
            "at",
            "'/spec/containers/' + string(variables.mains.indexOf(c.name)) + '/'".to_string(),
        ),
        ("cmd", cmd),
        ("runs", runs_tandem("c")),
        ("meshFree", format!("!({})", sets_any("c", &MESH_VARS))),
        ("severalFree", format!("!({})", sets_any("c", &SEVERAL))),
        ("keepFree", format!("!({})", sets_any("c", &OWN_KEEP))),
        ("keep", keep::statuses("c")),
    ];
    let each: Vec<String> = fields
        .iter()
        .map(|(name, value)| format!("'{name}': dyn({value})"))
        .collect();
    format!(
        "object.spec.containers.map(c, {},\n  {{{}}})",
        is_job("c"),
        each.join(",\n    ")
    )
}

/// `variables.wrap`: the records of the job containers that run tandem: those
/// that do already on a changed Pod, else those with a command to wrap that
/// is not tandem (none when the Pod's volumes would clash with ours).
pub fn wrap() -> String {
    format!(
        "variables.injected ? variables.jobs.filter(j, j.runs) :\n  \
         has(object.spec.volumes) &&\n    \
         object.spec.volumes.exists(v,\n      v.name == {} || v.name == {}) ? [] :\n  \
         variables.jobs.filter(j, size(j.cmd) > 0 &&\n    \
         j.cmd[0] != 'tandem' && !j.cmd[0].endsWith('/tandem'))",
        quote(BIN_VOLUME),
        quote(SHARED_VOLUME)
    )
}

/// `variables.mesh`: `TANDEM_MESH`'s value, the presets of the classic
/// sidecars present in table order; empty when some job container is left
/// unwrapped (then no tandem quits).
pub fn mesh() -> String {
    let pairs: Vec<String> = sidecars::containers()
        .map(|(container, s)| list([container, s.preset]))
        .collect();
    format!(
        "!variables.quit ? '' :\n  [{}]\n  .filter(p, p[0] in variables.mains).map(p, p[1]).join(',')",
        pairs.join(",\n   ")
    )
}

/// `variables.waited`: the sidecars whose readiness the job containers wait on,
/// in table order: the native ones, and the classic ones too when no tandem
/// quits (SPEC §10's mixed case).
pub fn waited() -> String {
    let with_url: Vec<&str> = sidecars::containers()
        .filter(|(_, s)| s.ready.endpoint().is_some())
        .map(|(c, _)| c)
        .collect();
    format!(
        "{}\n  .filter(s, s in variables.natives ||\n    (!variables.quit && s in variables.mains))",
        list(with_url)
    )
}

/// `TANDEM_READY_URLS`'s value for the job container `c`: the readiness URLs of
/// `variables.waited`, comma-joined.
pub fn ready(c: &str) -> String {
    let each: Vec<String> = sidecars::containers()
        .filter_map(|(container, s)| Some((container, ready_url(s, c)?)))
        .map(|(container, url)| format!("s == {} ? {url}", quote(container)))
        .collect();
    format!(
        "variables.waited.map(s,\n          {} : '').join(',')",
        each.join(" :\n          ")
    )
}

/// Sidecar `s`'s readiness URL for job container `c`, with the port its
/// `port_var` gives when that is a literal port number.
fn ready_url(s: &Sidecar, c: &str) -> Option<String> {
    let ready = s.ready_on(None)?;
    let Some(var) = s.port_var else {
        return Some(quote(&ready));
    };
    let (port, path) = s.ready.endpoint().map(|e| (e.port, e.path))?;
    // The first entry of that name, as the webhook reads it; a value that is
    // not a port number (or none) keeps the default port.
    Some(format!(
        "{} +\n            ((has({c}.env) ? {c}.env.filter(e, e.name == {}) : [])\n            \
         .map(e, has(e.value) && e.value.matches('^[0-9]{{1,5}}$') &&\n              \
         int(e.value) > 0 && int(e.value) <= 65535 ? e.value : {default})\n            \
         + [{default}])[0] + {}",
        quote(sidecars::HOST),
        quote(var),
        quote(path),
        default = quote(&port.to_string()),
    ))
}

#[cfg(test)]
#[path = "cel_tests.rs"]
mod tests;
