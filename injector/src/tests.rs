//! What the unit tests share: the Pods as the API server sends them
//! (`pods`, with `apply` and `strings`, shared with the HTTPS tests), the
//! tandem image's routes, and the plan for a Pod with its patch applied.

use serde_json::Value;

use crate::inject::delivery::{Install, Mode};
use crate::inject::route::Route;
use crate::inject::{Images, Plan, Scope, plan_with};

#[path = "../tests/support/pods.rs"]
pub(crate) mod pods;

pub(crate) use pods::{apply, strings};

/// The published tandem image, through `mode`, on the wrap route.
pub(crate) fn install(mode: Mode) -> Install {
    install_on(mode, Route::Wrap)
}

/// The published tandem image, through `mode`, on `route`.
pub(crate) fn install_on(mode: Mode, route: Route) -> Install {
    Install {
        image: pods::TANDEM_IMAGE.into(),
        mode,
        route,
    }
}

/// The `request` of a review of `pod`'s CREATE.
pub(crate) fn request(pod: &Value) -> Value {
    pods::review("uid-1", pod)["request"].clone()
}

/// The plan for `pod` through `scope` with `install`, given `images`, and
/// the Pod with its patch applied.
pub(crate) fn planned(
    pod: &Value,
    install: &Install,
    scope: Scope,
    images: &Images,
) -> (Plan, Value) {
    let plan = plan_with(&request(pod), install, scope, images);
    let out = apply(pod, &plan.patch);
    (plan, out)
}

/// The plan for `pod` through `/mutate` with the emptyDir route, and the Pod
/// with its patch applied.
pub(crate) fn patched(pod: &Value) -> (Plan, Value) {
    planned(pod, &install(Mode::EmptyDir), Scope::Label, &Images::new())
}

/// The `tandem.dev/injection` annotation of a changed Pod.
pub(crate) fn annotation(pod: &Value) -> &str {
    pod["metadata"]["annotations"][crate::layout::INJECTION_ANNOTATION]
        .as_str()
        .unwrap_or_else(|| panic!("no annotation: {}", pod["metadata"]))
}

/// A container's environment as (name, value) pairs, in order.
pub(crate) fn env(c: &Value) -> Vec<(String, String)> {
    c["env"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["name"].as_str().unwrap().into(),
                e["value"].as_str().unwrap_or("").into(),
            )
        })
        .collect()
}

/// One (name, value) pair of [`env`].
pub(crate) fn var(name: &str, value: &str) -> (String, String) {
    (name.into(), value.into())
}
