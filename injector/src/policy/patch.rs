//! The mutating policy's JSONPatch expression: the webhook's change of SPEC §10
//! (`inject`'s install parts, command and variables) written as CEL, with each
//! typed object spelled out as a CEL object literal. Every object is added on
//! its own at `/-` and a missing list is created as `[]` first: a `value` that
//! is a list of typed objects makes 1.36.2's API server panic.

use serde_json::Value;

use super::cel::{MESH_VARS, SEVERAL, quote, ready};
use crate::inject::delivery::{self, Install};
use crate::layout::{SHARED_DIR, TANDEM};
use tandem_common::vars::KEEP_ON_EXIT;

/// The JSONPatch that changes the Pod, for `install`'s route: the install
/// parts and commands on a Pod not changed yet, then the variables.
pub fn expression(install: &Install) -> String {
    format!(
        "size(variables.wrap) == 0 ? [] :\n(variables.injected ? [] :\n  {}\n) +\n{}",
        install_ops(install).join(" +\n  "),
        env_ops().join(" +\n")
    )
}

/// One `add` operation of `value` at `path` (CEL expressions both).
pub(super) fn add(path: &str, value: &str) -> String {
    format!("JSONPatch{{op: 'add',\n      path: {path},\n      value: {value}}}")
}

/// The operations of a Pod not changed yet: volumes, the install container,
/// and for each wrapped container (`j`, a record of `variables.wrap`) its
/// command and mounts.
fn install_ops(install: &Install) -> Vec<String> {
    let mount = |m: &Value| object_at("Object.spec.containers.volumeMounts", m, 3);
    let shared_volume = object_at("Object.spec.volumes", &delivery::shared_volume(), 3);
    let mut ops = volume_ops(install);
    ops.push(format!(
        "(variables.several ? [{}] : [])",
        add("'/spec/volumes/-'", &shared_volume)
    ));
    ops.extend(
        install
            .init_container()
            .map(|init| init_ops(&init, "'/spec/initContainers/-'", "variables.initMounts")),
    );
    let command = format!("[{}, '--'] + j.cmd", quote(TANDEM));
    ops.extend([
        format!(
            "variables.wrap.map(j, {})",
            add("j.at + 'command'", &command)
        ),
        format!(
            "variables.wrap.filter(j, !has(j.c.volumeMounts))\n    .map(j, {})",
            add("j.at + 'volumeMounts'", "[]")
        ),
        format!(
            "variables.wrap.map(j, {})",
            add("j.at + 'volumeMounts/-'", &mount(&delivery::bin_mount()))
        ),
        format!(
            "(variables.several ? variables.wrap.map(j,\n    {}) : [])",
            add("j.at + 'volumeMounts/-'", &mount(&delivery::shared_mount()))
        ),
    ]);
    ops
}

/// One variable tandem reads, added to the wrapped containers that get it.
struct EnvVar {
    name: &'static str,
    /// The records of `variables.wrap` that get it (a CEL list).
    to: &'static str,
    /// Its value for record `j`.
    value: String,
}

/// The variables, in the webhook's order: §6's, §9's, then the restart statuses.
fn env_vars() -> [EnvVar; 6] {
    let mesh = "(variables.mesh == '' ? [] : variables.wrap.filter(j, j.meshFree))";
    let ready_to = "(size(variables.waited) == 0 ? [] : variables.wrap.filter(j, j.meshFree))";
    [
        EnvVar {
            name: MESH_VARS[0],
            to: mesh,
            value: "variables.mesh".into(),
        },
        EnvVar {
            name: MESH_VARS[1],
            to: ready_to,
            value: ready("j.c"),
        },
        EnvVar {
            name: SEVERAL[0],
            to: "variables.sharing",
            value: "variables.names".into(),
        },
        EnvVar {
            name: SEVERAL[1],
            to: "variables.sharing",
            value: "j.c.name".into(),
        },
        EnvVar {
            name: SEVERAL[2],
            to: "variables.sharing",
            value: quote(SHARED_DIR),
        },
        EnvVar {
            name: KEEP_ON_EXIT,
            to: "variables.wrap.filter(j, j.keepFree && j.keep != '')",
            value: "j.keep".into(),
        },
    ]
}

/// The operations that add the variables: a missing `env` list first, then
/// each variable to the containers that get it.
fn env_ops() -> Vec<String> {
    let mut ops = vec![format!(
        "variables.wrap.filter(j, !has(j.c.env) && (j.meshFree &&\n    \
         (variables.mesh != '' || size(variables.waited) > 0) ||\n    \
         variables.several && j.severalFree || j.keep != ''))\n    .map(j, {})",
        add("j.at + 'env'", "[]")
    )];
    for var in env_vars() {
        let value = format!(
            "Object.spec.containers.env{{name: {},\n        value: {}}}",
            quote(var.name),
            var.value
        );
        ops.push(format!(
            "{}\n    .map(j, {})",
            var.to,
            add("j.at + 'env/-'", &value)
        ));
    }
    ops
}

/// The operations that add the binary's volume, the list made first when the
/// Pod has none: both routes' (`policy::native` too).
pub fn volume_ops(install: &Install) -> Vec<String> {
    let volume = object("Object.spec.volumes", &install.volume());
    vec![
        format!(
            "(has(object.spec.volumes) ? [] : [{}])",
            add("'/spec/volumes'", "[]")
        ),
        format!("[{}]", add("'/spec/volumes/-'", &volume)),
    ]
}

/// The install container's operations: the container alone at `path` (a CEL
/// string: `/-`, or the index it goes to), then its mounts list, at `mounts`,
/// created and filled one by one (no list of typed objects as a value).
pub fn init_ops(init: &Value, path: &str, mounts: &str) -> String {
    let mut bare = init.clone();
    let each = bare
        .as_object_mut()
        .and_then(|o| o.remove("volumeMounts"))
        .unwrap_or_default();
    let mut ops = vec![format!(
        "JSONPatch{{op: 'add', path: {path},\n    value: {}}}",
        object("Object.spec.initContainers", &bare)
    )];
    ops.push(format!(
        "JSONPatch{{op: 'add',\n    path: {mounts},\n    value: []}}"
    ));
    for m in each.as_array().into_iter().flatten() {
        ops.push(format!(
            "JSONPatch{{op: 'add',\n    path: {mounts} + '/-',\n    value: {}}}",
            object("Object.spec.initContainers.volumeMounts", m)
        ));
    }
    format!(
        "(has(object.spec.initContainers) ? [] :\n    [JSONPatch{{op: 'add', path: '/spec/initContainers', value: []}}]) +\n  [{}]",
        ops.join(",\n  ")
    )
}

/// `value` as a CEL typed object of type `ty` (field path names, as the API
/// server declares them); `requests` and `limits` are maps, not objects.
pub fn object(ty: &str, value: &Value) -> String {
    object_at(ty, value, 2)
}

/// `object` with its fields one a line, indented by `depth`, when it is long.
fn object_at(ty: &str, value: &Value, depth: usize) -> String {
    match value {
        Value::Object(fields) => {
            let each: Vec<String> = fields
                .iter()
                .map(|(k, v)| {
                    let inner = if matches!(k.as_str(), "requests" | "limits") {
                        map_literal(v)
                    } else {
                        object_at(&format!("{ty}.{k}"), v, depth + 1)
                    };
                    format!("{k}: {inner}")
                })
                .collect();
            let line = format!("{ty}{{{}}}", each.join(", "));
            if line.len() <= 60 {
                return line;
            }
            let pad = "  ".repeat(depth + 1);
            format!("{ty}{{\n{pad}{}}}", each.join(&format!(",\n{pad}")))
        }
        Value::Array(items) => {
            let each: Vec<String> = items.iter().map(|v| object_at(ty, v, depth)).collect();
            format!("[{}]", each.join(", "))
        }
        Value::String(text) => quote(text),
        other => other.to_string(),
    }
}

fn map_literal(value: &Value) -> String {
    let each: Vec<String> = value
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{}: {}", quote(k), object_at("", v, 0)))
        .collect();
    format!("{{{}}}", each.join(", "))
}
