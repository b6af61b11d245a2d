//! The mutating policy's JSONPatch expression: the webhook's change of SPEC §10
//! (`inject`'s install parts, command and variables) written as CEL, with each
//! typed object spelled out as a CEL object literal. Every object is added on
//! its own at `/-` and a missing list is created as `[]` first: a `value` that
//! is a list of typed objects makes 1.36.2's API server panic.

use serde_json::{Value, json};

use super::cel::{C, SEVERAL, quote};
use crate::inject::delivery::Install;
use crate::layout::{BIN_DIR, BIN_VOLUME, SHARED_DIR, SHARED_VOLUME, TANDEM};

/// The JSONPatch that changes the Pod, for `install`'s route.
pub fn expression(install: &Install) -> String {
    let at = "'/spec/containers/' + string(i) + '/";
    let op = |path: &str, value: &str| {
        format!("JSONPatch{{op: 'add',\n      path: {path},\n      value: {value}}}")
    };
    let mount = |name: &str, dir: &str, read_only: bool| {
        let mut m = json!({"name": name, "mountPath": dir});
        if read_only {
            m["readOnly"] = json!(true);
        }
        object_at("Object.spec.containers.volumeMounts", &m, 3)
    };
    let shared_volume = object_at(
        "Object.spec.volumes",
        &json!({"name": SHARED_VOLUME, "emptyDir": {"sizeLimit": "1Mi"}}),
        3,
    );
    let mut first = vec![
        format!(
            "(has(object.spec.volumes) ? [] : [{}])",
            op("'/spec/volumes'", "[]")
        ),
        format!(
            "[{}]",
            op(
                "'/spec/volumes/-'",
                &object("Object.spec.volumes", &install.volume())
            )
        ),
        format!(
            "(variables.several ? [{}] : [])",
            op("'/spec/volumes/-'", &shared_volume)
        ),
    ];
    if let Some(init) = install.init_container() {
        first.push(init_ops(&init));
    }
    first.extend([
        format!(
            "variables.wrap.map(i, {})",
            op(
                &format!("{at}command'"),
                &format!("[{}, '--'] + variables.cmds[i]", quote(TANDEM))
            )
        ),
        format!(
            "variables.wrap.filter(i, !has({C}[i].volumeMounts))\n    .map(i, {})",
            op(&format!("{at}volumeMounts'"), "[]")
        ),
        format!(
            "variables.wrap.map(i, {})",
            op(
                &format!("{at}volumeMounts/-'"),
                &mount(BIN_VOLUME, BIN_DIR, true)
            )
        ),
        format!(
            "(variables.several ? variables.wrap.map(i,\n    {}) : [])",
            op(
                &format!("{at}volumeMounts/-'"),
                &mount(SHARED_VOLUME, SHARED_DIR, false)
            )
        ),
    ]);
    let several = SEVERAL;
    let conds = [
        "variables.meshFree[i] && size(variables.mesh) > 0".to_string(),
        "variables.meshFree[i] && variables.ready[i] != ''".to_string(),
        "variables.several && variables.severalFree[i]".to_string(),
    ];
    let var = |name: &str, value: &str| {
        op(
            &format!("{at}env/-'"),
            &format!(
                "Object.spec.containers.env{{name: {},\n        value: {value}}}",
                quote(name)
            ),
        )
    };
    let values = [
        ("TANDEM_MESH", "variables.mesh.join(',')".to_string()),
        ("TANDEM_READY_URLS", "variables.ready[i]".to_string()),
        (several[0], "variables.names.join(',')".into()),
        (several[1], format!("{C}[i].name")),
        (several[2], quote(SHARED_DIR)),
    ];
    let cond_of = |name: &str| match name {
        "TANDEM_MESH" => &conds[0],
        "TANDEM_READY_URLS" => &conds[1],
        _ => &conds[2],
    };
    let mut env = vec![format!(
        "variables.wrap.filter(i, !has({C}[i].env) && (\n    ({}) ||\n    ({}) ||\n    ({})))\n    .map(i, {})",
        conds[0],
        conds[1],
        conds[2],
        op(&format!("{at}env'"), "[]")
    )];
    for (name, value) in &values {
        env.push(format!(
            "variables.wrap.filter(i, {})\n    .map(i, {})",
            cond_of(name),
            var(name, value)
        ));
    }
    format!(
        "size(variables.wrap) == 0 ? [] :\n(variables.injected ? [] :\n  {}\n) +\n{}",
        first.join(" +\n  "),
        env.join(" +\n")
    )
}

/// The install container's operations: the container alone at `/-`, then its
/// mounts list created and filled one by one (no list of typed objects as a value).
fn init_ops(init: &Value) -> String {
    let mut bare = init.clone();
    let mounts = bare
        .as_object_mut()
        .and_then(|o| o.remove("volumeMounts"))
        .unwrap_or_default();
    let at = "'/spec/initContainers/' + string(size(variables.inits)) +\n      '/volumeMounts";
    let mut ops = vec![format!(
        "JSONPatch{{op: 'add', path: '/spec/initContainers/-',\n    value: {}}}",
        object("Object.spec.initContainers", &bare)
    )];
    ops.push(format!(
        "JSONPatch{{op: 'add',\n    path: {at}',\n    value: []}}"
    ));
    for m in mounts.as_array().into_iter().flatten() {
        ops.push(format!(
            "JSONPatch{{op: 'add',\n    path: {at}/-',\n    value: {}}}",
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
