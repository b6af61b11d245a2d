//! The containers their creator stops itself (`left_alone`), on Pods shaped as
//! the API server sends them: Airflow's XCom container is neither wrapped, nor
//! a job container of §9, nor a sidecar tandem quits, and the annotation says so.

use serde_json::Value;

use super::wanted_in;
use crate::inject::route::Route;
use crate::tests::pods::{self, container, job_container};
use crate::tests::{annotation, env, patched, var};

/// The container named `name` of `pod`.
fn named<'p>(pod: &'p Value, name: &str) -> &'p Value {
    pod["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no container {name}"))
}

#[test]
fn airflows_xcom_container_is_left_as_it_was_and_base_quits_only_the_proxy() {
    let pod = pods::airflow_xcom_pod();
    let (plan, out) = patched(&pod);
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
    let xcom = "airflow-xcom-sidecar";
    assert_eq!(named(&out, xcom), named(&pod, xcom));
    assert_eq!(named(&out, "istio-proxy"), named(&pod, "istio-proxy"));
    let base = named(&out, "base");
    assert_eq!(base["command"][0], crate::layout::TANDEM);
    // One job container: no §9 variables, so base's tandem waits for no one.
    assert_eq!(env(base), [var("TANDEM_MESH", "istio")]);
    assert_eq!(
        annotation(&out),
        "wrapped base (command from the spec; added TANDEM_MESH=istio); \
         left airflow-xcom-sidecar alone (Airflow stops it after reading the XCom)"
    );
    // The webhook's second call (reinvocation) changes nothing more.
    let (_, twice) = patched(&out);
    assert_eq!(twice, out);
}

#[test]
fn the_xcom_container_is_not_among_several_job_containers() {
    let mut pod = pods::airflow_xcom_pod();
    pod["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(job_container("report"));
    let (_, out) = patched(&pod);
    for name in ["base", "report"] {
        let vars = env(named(&out, name));
        assert!(
            vars.contains(&var("TANDEM_JOB_CONTAINERS", "base,report")),
            "{name}: {vars:?}"
        );
    }
    assert!(named(&out, "airflow-xcom-sidecar")["env"].is_null());
}

#[test]
fn a_pod_with_only_the_xcom_container_and_a_proxy_gets_the_annotation_alone() {
    let mut pod = pods::airflow_xcom_pod();
    pod["spec"]["containers"].as_array_mut().unwrap().remove(0);
    let (plan, out) = patched(&pod);
    assert_eq!(plan.patch.len(), 1, "{:?}", plan.patch);
    assert_eq!(
        annotation(&out),
        "no job container; left airflow-xcom-sidecar alone \
         (Airflow stops it after reading the XCom)"
    );
}

#[test]
fn the_xcom_container_without_command_is_never_looked_up() {
    let mut pod = pods::airflow_xcom_pod();
    let image = |name: &str| container(name, "registry.example.com/x:1", None, &[]);
    pod["spec"]["containers"][1] = image("airflow-xcom-sidecar");
    pod["spec"]["containers"][0] = image("base");
    let wanted = wanted_in(&pod, Route::Wrap);
    assert_eq!(
        wanted,
        [("base".to_string(), "registry.example.com/x:1".to_string())]
    );
}
