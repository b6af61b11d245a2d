//! Which reviews the injector changes (SPEC §10): a Pod CREATE, opted in by
//! its label or its namespace's (or put under audit), that runs to completion
//! (`restartPolicy` `Never` or `OnFailure`), whoever owns it. `selectors` is
//! the same rule as the API server applies it, before it sends a review.

use serde_json::Value;

use crate::layout::{AUDIT, ENABLED, LABEL};

/// Which route the review came through: it says who opted the Pod in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `/mutate`: the Pod must carry `tandem.dev/inject: enabled` itself.
    Label,
    /// `/mutate/namespace`: the namespace is labelled; the Pod is injected unless
    /// its own label says otherwise (`tandem.dev/inject: disabled`).
    Namespace,
    /// `/mutate/namespace/audit`: the namespace is labelled `audit`; the Pod is
    /// audited unless its own label says otherwise.
    NamespaceAudit,
}

impl Scope {
    /// Every route, the labelled Pods' first.
    pub const ALL: [Scope; 3] = [Scope::Label, Scope::Namespace, Scope::NamespaceAudit];

    /// The path the API server posts its reviews to.
    pub fn path(self) -> &'static str {
        match self {
            Scope::Label => "/mutate",
            Scope::Namespace => "/mutate/namespace",
            Scope::NamespaceAudit => "/mutate/namespace/audit",
        }
    }

    /// The route whose path is `path`, if any.
    pub fn from_path(path: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|scope| scope.path() == path)
    }

    /// What opts a Pod in on this route, in the names of its webhook and binding.
    pub fn noun(self) -> &'static str {
        match self {
            Scope::Label => "pods",
            Scope::Namespace => "namespaces",
            Scope::NamespaceAudit => "audit.namespaces",
        }
    }
}

/// What the Pod opted into: the change, or only the annotation saying what
/// the change would be (`tandem.dev/inject: audit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opted {
    /// `enabled`: the Pod is changed.
    Enabled,
    /// `audit`: the Pod is left as it is but for the annotation.
    Audit,
}

/// The restart policies of a Pod that runs to completion: its containers end,
/// and then so does the Pod. `Always`, also the default, never does.
pub const RUNS_TO_COMPLETION: [&str; 2] = ["Never", "OnFailure"];

/// Whether the Pod whose `spec` this is runs to completion.
pub fn runs_to_completion(spec: &Value) -> bool {
    spec["restartPolicy"]
        .as_str()
        .is_some_and(|p| RUNS_TO_COMPLETION.contains(&p))
}

/// The Pod of an opted-in CREATE of a Pod that runs to completion, a name for
/// the log (with its owner) and what it opted into; else why not. A Pod's own
/// label wins over its namespace's.
pub(super) fn select(request: &Value, scope: Scope) -> Result<(&Value, String, Opted), String> {
    let kind = &request["kind"];
    if kind["group"] != "" || kind["version"] != "v1" || kind["kind"] != "Pod" {
        return Err(format!("not a Pod ({kind}): allowed unchanged"));
    }
    if request["operation"] != "CREATE" || !request["subResource"].is_null() {
        return Err("not a Pod CREATE: allowed unchanged".into());
    }
    let pod = &request["object"];
    let meta = &pod["metadata"];
    let namespace = request["namespace"].as_str().unwrap_or("?");
    let mut name = match (meta["name"].as_str(), meta["generateName"].as_str()) {
        (Some(name), _) if !name.is_empty() => format!("pod {namespace}/{name}"),
        (_, Some(prefix)) => format!("pod {namespace}/{prefix}*"),
        _ => format!("pod {namespace}/?"),
    };
    let label = meta["labels"][LABEL].as_str();
    let opted = match (label, scope) {
        (Some(ENABLED), _) | (None, Scope::Namespace) => Opted::Enabled,
        (Some(AUDIT), _) | (None, Scope::NamespaceAudit) => Opted::Audit,
        _ => return Err(format!("{name}: not opted in ({LABEL}: {label:?})")),
    };
    if !runs_to_completion(&pod["spec"]) {
        let policy = pod["spec"]["restartPolicy"]
            .as_str()
            .unwrap_or("unset, so Always");
        return Err(format!(
            "{name}: restartPolicy {policy}: it does not run to completion: allowed unchanged"
        ));
    }
    if let Some((kind, owner)) = controller(meta) {
        name = format!("{name} ({kind} {owner})");
    }
    Ok((pod, name, opted))
}

/// The name of the Job that owns the object whose `metadata` this is (directly,
/// or a CronJob's Job); `None` when no Job does. A nameless owner is `?`.
pub fn job(metadata: &Value) -> Option<&str> {
    let owners = metadata["ownerReferences"].as_array()?;
    let job = owners.iter().find(|o| {
        o["kind"] == "Job"
            && o["apiVersion"]
                .as_str()
                .is_some_and(|v| v.starts_with("batch/"))
    })?;
    Some(job["name"].as_str().unwrap_or("?"))
}

/// The kind and name of the object's controller (its owner reference with
/// `controller: true`: a Job, a SparkApplication, …); `None` when it has none.
/// A nameless or kindless owner is `?`.
pub fn controller(metadata: &Value) -> Option<(&str, &str)> {
    let owners = metadata["ownerReferences"].as_array()?;
    let owner = owners.iter().find(|o| o["controller"] == true)?;
    Some((
        owner["kind"].as_str().unwrap_or("?"),
        owner["name"].as_str().unwrap_or("?"),
    ))
}
