//! The CEL expressions of the mutating policy: the webhook's rules of SPEC §10
//! (`inject.rs`) restated for the API server, from the same sidecar table and
//! the same install parts. Each function returns one expression's text; the
//! JSONPatch built from them is `patch`'s. Container indices come from a
//! literal list, not from an extension function (Kubernetes 1.36's CEL
//! environment was not confirmed to have one).

use crate::layout::{BIN_VOLUME, INSTALL_CONTAINER, SHARED_VOLUME, TANDEM};
use crate::sidecars::{self, Sidecar};

/// The most job containers the policy looks at: container indices are a literal list.
pub const MAX_CONTAINERS: usize = 64;
/// The annotation that gives a container's entrypoint (`PREFIX` + its name):
/// the webhook's, one home.
pub use crate::layout::ENTRYPOINT_ANNOTATION;
/// The annotation values the policy can read without a JSON parser: a JSON list
/// of strings without escapes.
pub const ENTRYPOINT_SHAPE: &str = r#"^\[\s*"[^"\\]*"(\s*,\s*"[^"\\]*")*\s*\]$"#;

/// The Pod's containers, as every per-container expression names them.
pub const C: &str = "object.spec.containers";

/// A CEL string literal.
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// The known sidecars' container names, as a CEL list.
pub fn sidecar_names() -> String {
    let names: Vec<String> = sidecars::injected().map(|(c, _)| quote(c)).collect();
    format!("[{}]", names.join(", "))
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

/// `variables.cmds`: for each container, the command tandem wraps: its own,
/// else the entrypoint annotation's list, else `[]`.
pub fn commands() -> String {
    let key = format!("{} + c.name", quote(ENTRYPOINT_ANNOTATION));
    format!(
        "{C}.map(c,\n  has(c.command) && size(c.command) > 0 ? c.command :\n  {} ?\n  \
         object.metadata.annotations[{key}]\n    .findAll('\"[^\"]*\"').map(w, w.substring(1, size(w) - 1)) :\n  [])",
        has_entrypoint("object.metadata", "c.name")
    )
}

/// `variables.jobs`: the indices of the containers that are not known sidecars.
pub fn jobs() -> String {
    let indices: Vec<String> = (0..MAX_CONTAINERS).map(|i| i.to_string()).collect();
    let mut lines = Vec::new();
    for chunk in indices.chunks(16) {
        lines.push(chunk.join(", "));
    }
    format!(
        "[{}]\n  .filter(i, i < size({C}) &&\n    !({C}[i].name in variables.sidecars))",
        lines.join(",\n  ")
    )
}

/// `variables.injected`: the Pod carries the install container or the image volume.
pub fn injected() -> String {
    format!(
        "variables.inits.exists(c, c.name == {}) ||\n  (has(object.spec.volumes) &&\n  \
         object.spec.volumes.exists(v, v.name == {} && has(v.image)))",
        quote(INSTALL_CONTAINER),
        quote(BIN_VOLUME)
    )
}

/// `variables.wrap`: the indices of the job containers that run tandem: those
/// that do already on a changed Pod, else those with a command to wrap that
/// is not tandem (none when the Pod's volumes would clash with ours).
pub fn wrap() -> String {
    let tandem = quote(TANDEM);
    format!(
        "variables.injected ?\n  variables.jobs.filter(i, has({C}[i].command) &&\n    \
         size({C}[i].command) > 0 &&\n    {C}[i].command[0] == {tandem}) :\n  \
         has(object.spec.volumes) &&\n    \
         object.spec.volumes.exists(v,\n      v.name == {} || v.name == {}) ? [] :\n  \
         variables.jobs.filter(i, size(variables.cmds[i]) > 0 &&\n    \
         variables.cmds[i][0] != 'tandem' && !variables.cmds[i][0].endsWith('/tandem'))",
        quote(BIN_VOLUME),
        quote(SHARED_VOLUME)
    )
}

/// `variables.mesh`: the presets of the classic sidecars present, in table
/// order; none when some job container is left unwrapped (then no tandem quits).
pub fn mesh() -> String {
    let each: Vec<String> = sidecars::injected()
        .map(|(container, s)| {
            format!(
                "({} in variables.mains ? [{}] : [])",
                quote(container),
                quote(s.preset)
            )
        })
        .collect();
    format!("!variables.quit ? [] :\n  {}", each.join(" +\n  "))
}

/// `variables.ready`: for each container, the readiness URLs it waits on,
/// comma-joined: the native sidecars', and the classic ones' too when no tandem
/// quits (SPEC §10's mixed case).
pub fn ready() -> String {
    let each: Vec<String> = sidecars::injected()
        .filter_map(|(container, s)| {
            let url = ready_url(s)?;
            let name = quote(container);
            Some(format!(
                "({name} in variables.natives ||\n      \
                 (!variables.quit && {name} in variables.mains) ?\n    [{url}] : [])"
            ))
        })
        .collect();
    format!(
        "{C}.map(c, (\n    {}\n  ).join(','))",
        each.join(" +\n    ")
    )
}

/// Sidecar `s`'s readiness URL for job container `c`, with the port its
/// `port_var` gives when that is a literal port number.
fn ready_url(s: &Sidecar) -> Option<String> {
    let url = s.ready?;
    let Some(var) = s.port_var else {
        return Some(quote(url));
    };
    let (port, path) = sidecars::port_and_path(url);
    // The first entry of that name, as the webhook reads it; a value that is
    // not a port number (or none) keeps the default port.
    Some(format!(
        "{} + ((has(c.env) ? c.env.filter(e, e.name == {}) : [])\n      \
         .map(e, has(e.value) && e.value.matches('^[0-9]{{1,5}}$') &&\n        \
         int(e.value) > 0 && int(e.value) <= 65535 ? e.value : {default})\n      \
         + [{default}])[0] + {}",
        quote(sidecars::HOST),
        quote(var),
        quote(path),
        default = quote(&port.to_string()),
    ))
}

/// `variables.envs`: for each container, the names of the variables it sets.
pub const ENV_NAMES: &str = "object.spec.containers.map(c, has(c.env) ? c.env.map(e, e.name) : [])";

/// A per-container variable: none of `names` is set by the container.
pub fn sets_none(names: &[&str]) -> String {
    let each: Vec<String> = names.iter().map(|n| format!("{} in n", quote(n))).collect();
    format!("variables.envs.map(n, !(\n  {}))", each.join(" ||\n  "))
}

/// §9's variables, set together or not at all.
pub const SEVERAL: [&str; 3] = [
    "TANDEM_JOB_CONTAINERS",
    "TANDEM_CONTAINER_NAME",
    "TANDEM_SHARED_DIR",
];

#[cfg(test)]
#[path = "cel_tests.rs"]
mod tests;
