//! Whether a Job's Pod is stuck on its sidecars (SPEC §10.8): every job
//! container has terminated and a sidecar tandem knows still runs, so the Pod
//! never completes and its Job never finishes. A native sidecar (an init
//! container with `restartPolicy: Always`) never counts: the kubelet stops it.

use serde_json::Value;

use crate::inject;

/// The classic sidecars of `pod` still running after every job container has
/// terminated, in the Pod's order; `None` when it is not stuck (a job
/// container not terminated or without a status, no job container, no
/// sidecar running).
pub fn running_sidecars(pod: &Value) -> Option<Vec<String>> {
    let containers = pod["spec"]["containers"].as_array()?;
    let statuses = pod["status"]["containerStatuses"].as_array()?;
    let state = |name: &str| {
        statuses
            .iter()
            .find(|s| s["name"] == name)
            .map(|s| &s["state"])
    };
    let mut jobs = 0;
    let mut running = Vec::new();
    for name in containers.iter().filter_map(|c| c["name"].as_str()) {
        if inject::is_job(name) {
            jobs += 1;
            state(name).filter(|s| s["terminated"].is_object())?;
        } else if state(name).is_some_and(|s| s["running"].is_object()) {
            running.push(name.to_string());
        }
    }
    (jobs > 0 && !running.is_empty()).then_some(running)
}
