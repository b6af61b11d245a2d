//! `tandem-injector audit` (SPEC §10.8): a Kubernetes
//! `List` of Pods in, as `kubectl get pods -A -o json` prints it; out, for the
//! Pods a Job owns, those stuck on their sidecars and what the injection would
//! do to each. It reads nothing else and makes no network call.
//!
//! | module | owns |
//! |---|---|
//! | `list` | the List read and checked: its Pods, or one line saying why not |
//! | `stuck` | whether a Pod is stuck on its sidecars |
//! | `would` | what the injection would do: the webhook's own plan, no lookups |
//! | `render` | the table and the JSON |
//! | `command` | the command line of `audit`, and its run |

pub mod command;
pub mod list;
pub mod render;
pub mod stuck;
pub mod would;

use serde_json::Value;

use crate::inject;

/// A Job's Pod stuck on its sidecars: every job container has terminated,
/// these still run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stuck {
    /// The Pod's namespace.
    pub namespace: String,
    /// The Pod's name.
    pub pod: String,
    /// The Job that owns it.
    pub job: String,
    /// The sidecars still running, in the Pod's order.
    pub sidecars: Vec<String>,
}

/// What the injection would do to a Pod like one of a Job's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Injection {
    /// The Pod's namespace.
    pub namespace: String,
    /// The Pod's name.
    pub pod: String,
    /// The Job that owns it.
    pub job: String,
    /// The annotation's words (`tandem.dev/injection`).
    pub would: String,
}

/// The audit of a List: each part sorted by namespace, Job and Pod.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Audit {
    /// The Pods stuck on their sidecars.
    pub stuck: Vec<Stuck>,
    /// Every Job's Pod, with what the injection would do to it.
    pub injection: Vec<Injection>,
    /// How many Pods the List held, a Job's or not.
    pub pods: usize,
}

/// Audits `pods`: the Pods no Job owns are counted and left out.
pub fn audit(pods: &[Value]) -> Audit {
    let mut out = Audit {
        pods: pods.len(),
        ..Audit::default()
    };
    for pod in pods {
        let meta = &pod["metadata"];
        let Some(job) = inject::job(meta) else {
            continue;
        };
        let namespace = meta["namespace"].as_str().unwrap_or("?").to_string();
        let name = meta["name"].as_str().unwrap_or("?").to_string();
        if let Some(sidecars) = stuck::running_sidecars(pod) {
            out.stuck.push(Stuck {
                namespace: namespace.clone(),
                pod: name.clone(),
                job: job.to_string(),
                sidecars,
            });
        }
        out.injection.push(Injection {
            namespace,
            pod: name,
            job: job.to_string(),
            would: would::would(pod),
        });
    }
    out.stuck
        .sort_by(|a, b| (&a.namespace, &a.job, &a.pod).cmp(&(&b.namespace, &b.job, &b.pod)));
    out.injection
        .sort_by(|a, b| (&a.namespace, &a.job, &a.pod).cmp(&(&b.namespace, &b.job, &b.pod)));
    out
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod webhook_tests;
