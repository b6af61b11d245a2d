//! Whether a Pod that runs to completion is stuck on its sidecars (SPEC §10.8):
//! every job container has terminated for good and a sidecar tandem knows
//! still runs, so the Pod never completes (nor its Job, when a Job owns it). A
//! container whose exit status its restart policy or rules answer by running it
//! again has not ended for good. A native sidecar (an init container with
//! `restartPolicy: Always`) never counts: the kubelet stops it. Nor does a
//! container left alone (`left_alone`): its creator stops it once the job
//! containers have ended, so its running then is the Pod on its way.

use serde_json::Value;

use crate::inject::{self, keep};
use crate::sidecars;

/// The classic sidecars of `pod` still running after every job container has
/// terminated for good, in the Pod's order; `None` when it is not stuck (a job
/// container not terminated, to run again, or without a status, no job
/// container, no sidecar running).
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
    for c in containers {
        let Some(name) = c["name"].as_str() else {
            continue;
        };
        if inject::is_job(name) {
            jobs += 1;
            let ended = state(name)
                .map(|s| &s["terminated"])
                .filter(|t| t.is_object())?;
            let again = keep::statuses(&pod["spec"]["restartPolicy"], c);
            let status = ended["exitCode"]
                .as_u64()
                .and_then(|s| u8::try_from(s).ok());
            if status.is_some_and(|s| again.contains(s)) {
                return None;
            }
        } else if sidecars::by_container(name).is_some()
            && state(name).is_some_and(|s| s["running"].is_object())
        {
            running.push(name.to_string());
        }
    }
    (jobs > 0 && !running.is_empty()).then_some(running)
}
