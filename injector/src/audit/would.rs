//! What the injection would do to a Pod like one in the List (SPEC §10.8): the
//! webhook's own plan (`inject::plan_pod`) as if the Pod were opted in, so the
//! words are the annotation's. A container whose image would be looked up in
//! its registry is planned as wrapped and said to need its image's
//! entrypoint: the audit makes no network call.

use serde_json::Value;

use crate::inject::Images;
use crate::inject::delivery::{Install, Mode};
use crate::inject::report::{Fate, Found};
use crate::inject::route::Route;
use crate::inject::{self, Opted};
use crate::layout::{AUDIT, ENABLED, LABEL};
use crate::registry::ImageConfig;

/// The annotation's words for `pod`, a Pod that runs to completion, on
/// `route` unless its annotation names one; a Pod whose own label opts it out
/// says so.
pub fn would(pod: &Value, route: Route) -> String {
    match pod["metadata"]["labels"][LABEL].as_str() {
        Some(label) if label != ENABLED && label != AUDIT => {
            return crate::say::escape(&format!("nothing: its label {LABEL}: {label} opts it out"));
        }
        _ => {}
    }
    let wanted = inject::wanted_in(pod, route);
    // Stands in for each image's configuration: the plan goes on as when the
    // registry answers, and the container's fate then says what is missing.
    let images: Images = wanted
        .iter()
        .map(|(container, _)| {
            let config = ImageConfig {
                entrypoint: vec!["ENTRYPOINT".into()],
                cmd: Vec::new(),
            };
            (container.clone(), Ok(config))
        })
        .collect();
    // The words never name the image or how it gets in: any will do.
    let install = Install {
        image: "tandem".into(),
        mode: Mode::default(),
        route,
    };
    let plan = inject::plan_pod(pod, "", Opted::Enabled, &install, &images);
    let Some(mut report) = plan.report else {
        return plan.summary;
    };
    for (name, fate) in &mut report.containers {
        if let Fate::Wrapped(found @ Found::Registry, _) = fate
            && wanted.iter().any(|(container, _)| container == name)
        {
            *found = Found::Lookup;
        }
    }
    report.line()
}
