//! The Pod as far as the injector reads it: its containers (checked for shape,
//! never trusted), whether an earlier review changed it, and which known
//! sidecars it runs.

use serde_json::{Map, Value};

use super::{delivery, keep};
use crate::layout::{INSTALL_CONTAINER, TANDEM};
use crate::left_alone;
use crate::sidecars::{self, Sidecar};
use crate::string_list;
use tandem_common::exit_codes::ExitCodes;

/// One container of the Pod as far as the injector reads it.
pub(super) struct Container<'a> {
    pub index: usize,
    pub name: &'a str,
    pub command: Option<Vec<&'a str>>,
    /// `args`; empty when unset (as Kubernetes reads them).
    pub args: Vec<String>,
    /// `image`, when it is a string.
    pub image: Option<&'a str>,
    /// `env`, when the field is there.
    pub env: Option<&'a [Value]>,
    pub has_mounts: bool,
    /// A native sidecar: an init container with `restartPolicy: Always`.
    pub always: bool,
    /// The statuses after which the kubelet runs it again in the Pod (`keep`).
    pub keep: ExitCodes,
}

impl Container<'_> {
    /// Whether the container's `env` names `variable` (any source).
    pub fn sets(&self, variable: &str) -> bool {
        self.env
            .is_some_and(|env| env.iter().any(|e| e["name"] == variable))
    }

    /// A literal `value` the container gives `variable` (not `valueFrom`).
    pub fn value(&self, variable: &str) -> Option<String> {
        let env = self.env?;
        let entry = env.iter().find(|e| e["name"] == variable)?;
        entry["value"].as_str().map(str::to_string)
    }

    /// Whether its command starts with the injected binary (an earlier review).
    pub fn runs_tandem(&self) -> bool {
        self.command
            .as_ref()
            .is_some_and(|c| c.first() == Some(&TANDEM))
    }

    /// A job container: neither a sidecar tandem knows nor one left alone.
    pub fn is_job(&self) -> bool {
        is_job(self.name)
    }
}

/// Reads `spec.FIELD` as a list of containers; a field that is missing or null is
/// an empty list, anything else not shaped like containers is an error.
pub(super) fn containers<'a>(
    spec: &'a Map<String, Value>,
    field: &str,
) -> Result<Vec<Container<'a>>, String> {
    let list = match spec.get(field) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(format!("spec.{field} is not a list")),
    };
    let mut found = Vec::with_capacity(list.len());
    for (index, c) in list.iter().enumerate() {
        let at = || format!("spec.{field}[{index}]");
        let name = c["name"]
            .as_str()
            .ok_or_else(|| format!("{} has no name", at()))?;
        let command = string_list::read(&c["command"], || format!("{}.command", at()))?;
        let args = string_list::owned(&c["args"], || format!("{}.args", at()))?;
        let env = match &c["env"] {
            Value::Null => None,
            Value::Array(env) if env.iter().all(|e| e["name"].is_string()) => Some(env.as_slice()),
            _ => return Err(format!("{}.env is not a list of named variables", at())),
        };
        let has_mounts = match &c["volumeMounts"] {
            Value::Null => false,
            Value::Array(_) => true,
            _ => return Err(format!("{}.volumeMounts is not a list", at())),
        };
        found.push(Container {
            index,
            name,
            command,
            args,
            image: c["image"].as_str(),
            env,
            has_mounts,
            always: c["restartPolicy"] == "Always",
            keep: keep::statuses(spec.get("restartPolicy").unwrap_or(&Value::Null), c),
        });
    }
    Ok(found)
}

/// Reads `spec.volumes`: `None` when missing or null, an error when it is not a list.
pub(super) fn volumes(spec: &Map<String, Value>) -> Result<Option<&Vec<Value>>, String> {
    match spec.get("volumes") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(v)) => Ok(Some(v)),
        Some(_) => Err("spec.volumes is not a list".into()),
    }
}

/// Whether the Pod was changed by an earlier review: its install init
/// container, or the image volume.
pub(super) fn changed_earlier(spec: &Map<String, Value>, init: &[Container]) -> bool {
    init.iter().any(|c| c.name == INSTALL_CONTAINER)
        || spec
            .get("volumes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(delivery::is_bin_image_volume)
}

/// The known sidecars among `list` that pass `pick`, in `SIDECARS` order.
pub(super) fn known(
    list: &[Container],
    pick: impl Fn(&Container) -> bool,
) -> Vec<&'static Sidecar> {
    sidecars::containers()
        .filter(|(container, _)| list.iter().any(|c| c.name == *container && pick(c)))
        .map(|(_, s)| s)
        .collect()
}

/// Whether the container named `name` is a job container: neither one of the
/// sidecars tandem knows nor one its creator stops itself.
pub fn is_job(name: &str) -> bool {
    sidecars::by_container(name).is_none() && left_alone::by_container(name).is_none()
}
