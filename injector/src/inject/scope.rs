//! Which reviews the injector changes (SPEC §10): a Pod CREATE, opted in by
//! its label or its namespace's, and owned by a Job.

use serde_json::Value;

use crate::layout::{ENABLED, LABEL};

/// Which route the review came through: it says who opted the Pod in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `/mutate`: the Pod must carry `tandem.dev/inject: enabled` itself.
    Label,
    /// `/mutate/namespace`: the namespace is labelled; the Pod is injected unless
    /// its own label says otherwise (`tandem.dev/inject: disabled`).
    Namespace,
}

impl Scope {
    /// Both routes, the labelled Pods' first.
    pub const ALL: [Scope; 2] = [Scope::Label, Scope::Namespace];

    /// The path the API server posts its reviews to.
    pub fn path(self) -> &'static str {
        match self {
            Scope::Label => "/mutate",
            Scope::Namespace => "/mutate/namespace",
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
        }
    }
}

/// The Pod of an opted-in Job's CREATE, and a name for the log; else why not.
pub(super) fn select(request: &Value, scope: Scope) -> Result<(&Value, String), String> {
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
    let name = match (meta["name"].as_str(), meta["generateName"].as_str()) {
        (Some(name), _) if !name.is_empty() => format!("pod {namespace}/{name}"),
        (_, Some(prefix)) => format!("pod {namespace}/{prefix}*"),
        _ => format!("pod {namespace}/?"),
    };
    let label = meta["labels"][LABEL].as_str();
    let opted_in = match scope {
        Scope::Label => label == Some(ENABLED),
        Scope::Namespace => label.is_none_or(|v| v == ENABLED),
    };
    if !opted_in {
        return Err(format!("{name}: not opted in ({LABEL}: {label:?})"));
    }
    let job = meta["ownerReferences"].as_array().and_then(|owners| {
        owners.iter().find(|o| {
            o["kind"] == "Job"
                && o["apiVersion"]
                    .as_str()
                    .is_some_and(|v| v.starts_with("batch/"))
        })
    });
    match job {
        Some(job) => Ok((
            pod,
            format!("{name} (Job {})", job["name"].as_str().unwrap_or("?")),
        )),
        None => Err(format!("{name}: not owned by a Job: allowed unchanged")),
    }
}
