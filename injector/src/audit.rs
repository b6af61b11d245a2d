//! `tandem-injector audit` (SPEC §10.8): a Kubernetes
//! `List` of Pods in, as `kubectl get pods -A -o json` prints it; out, for the
//! Pods that run to completion (`restartPolicy` `Never` or `OnFailure`, whoever
//! owns them), those stuck on their sidecars and what the injection would do
//! to each. It reads nothing else and makes no network call.
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
use crate::inject::route::Route;

/// Which Pod: where it is and who owns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pod {
    /// The Pod's namespace.
    pub namespace: String,
    /// The Pod's name.
    pub pod: String,
    /// The Job that owns it (a CronJob's Job too), if one does.
    pub job: Option<String>,
    /// Its controller, `Kind/name` (`Job/nightly`, `SparkApplication/pi`), if it
    /// has one.
    pub owner: Option<String>,
}

impl Pod {
    fn of(pod: &Value) -> Pod {
        let meta = &pod["metadata"];
        let text = |v: &Value| v.as_str().unwrap_or("?").to_string();
        Pod {
            namespace: text(&meta["namespace"]),
            pod: text(&meta["name"]),
            job: inject::job(meta).map(str::to_string),
            owner: inject::controller(meta).map(|(kind, name)| format!("{kind}/{name}")),
        }
    }

    /// The order of both parts: namespace, owner (the Pods of no owner
    /// first), Pod.
    fn key(&self) -> (&str, Option<&str>, &str) {
        (&self.namespace, self.owner.as_deref(), &self.pod)
    }
}

/// A Pod stuck on its sidecars: every job container has ended for good,
/// these still run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stuck {
    /// Which Pod.
    pub pod: Pod,
    /// The sidecars still running, in the Pod's order.
    pub sidecars: Vec<String>,
}

/// What the injection would do to a Pod like one that runs to completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Injection {
    /// Which Pod.
    pub pod: Pod,
    /// The annotation's words (`tandem.dev/injection`).
    pub would: String,
}

/// The audit of a List: each part sorted by namespace, owner and Pod.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Audit {
    /// The Pods stuck on their sidecars.
    pub stuck: Vec<Stuck>,
    /// Every Pod that runs to completion, with what the injection would do to it.
    pub injection: Vec<Injection>,
    /// How many Pods the List held, in scope or not.
    pub pods: usize,
}

/// Audits `pods` as `route` would change them (unless a Pod's annotation names
/// another): those that do not run to completion (`restartPolicy: Always`, a
/// Deployment's) are counted and left out.
pub fn audit(pods: &[Value], route: Route) -> Audit {
    let mut out = Audit {
        pods: pods.len(),
        ..Audit::default()
    };
    for pod in pods
        .iter()
        .filter(|p| inject::runs_to_completion(&p["spec"]))
    {
        let which = Pod::of(pod);
        if let Some(sidecars) = stuck::running_sidecars(pod) {
            out.stuck.push(Stuck {
                pod: which.clone(),
                sidecars,
            });
        }
        out.injection.push(Injection {
            pod: which,
            would: would::would(pod, route),
        });
    }
    out.stuck.sort_by(|a, b| a.pod.key().cmp(&b.pod.key()));
    out.injection.sort_by(|a, b| a.pod.key().cmp(&b.pod.key()));
    out
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod webhook_tests;
