//! The JSONPatch (RFC 6902) of a Pod's first injection: the volumes, the
//! install init container, and each wrapped container's command and mounts.

use serde_json::{Map, Value};

use super::command::{self, Commands};
use super::ops::append;
use crate::inject::delivery::{self, Install};

/// Appends to `patch` what installs tandem in the Pod whose `spec` is given
/// (`has_volumes`: it has a `volumes` list) and wraps `commands.wrapped`.
pub(super) fn install(
    patch: &mut Vec<Value>,
    spec: &Map<String, Value>,
    has_volumes: bool,
    install: &Install,
    commands: &Commands,
) {
    let several = commands.wrapped.len() > 1;
    let mut new_volumes = vec![install.volume()];
    if several {
        new_volumes.push(delivery::shared_volume());
    }
    append(patch, "/spec/volumes", has_volumes, new_volumes);
    if let Some(container) = install.init_container() {
        let has_init = !matches!(spec.get("initContainers"), None | Some(Value::Null));
        append(patch, "/spec/initContainers", has_init, vec![container]);
    }
    for c in &commands.wrapped {
        let at = format!("/spec/containers/{}", c.index);
        patch.extend(command::ops(&at, c, commands.found.get(&c.index)));
        let mut mounts = vec![delivery::bin_mount()];
        if several {
            mounts.push(delivery::shared_mount());
        }
        append(patch, &format!("{at}/volumeMounts"), c.has_mounts, mounts);
    }
}
