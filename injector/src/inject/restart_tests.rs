//! Restart in place (SPEC §10) on Pods shaped as the API server sends them:
//! which wrapped container gets `TANDEM_KEEP_ON_EXIT` with which statuses, and
//! what the annotation says of it; Pods of any owner that run to completion.

use serde_json::{Value, json};

use crate::tests::pods::{self, istio_proxy, job_container, job_pod};
use crate::tests::{annotation, env, patched};

/// What each container of a restart case ends with as `TANDEM_KEEP_ON_EXIT`
/// (its own value, or none).
fn keeps(out: &Value) -> Vec<(String, Option<String>)> {
    out["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] != "istio-proxy")
        .map(|c| {
            let value = env(c)
                .into_iter()
                .find(|(name, _)| name == "TANDEM_KEEP_ON_EXIT")
                .map(|(_, v)| v);
            (c["name"].as_str().unwrap().to_string(), value)
        })
        .collect()
}

/// A case's name and, for each job container, the statuses it should get.
type Expected<'a> = (&'a str, &'a [(&'a str, Option<&'a str>)]);

#[test]
fn each_wrapped_container_gets_the_statuses_the_kubelet_runs_it_again_on() {
    let expected: &[Expected] = &[
        ("bare-never", &[("job", None)]),
        ("bare-on-failure", &[("job", Some("1-255"))]),
        ("spark-driver", &[("spark-kubernetes-driver", None)]),
        ("airflow-kpo", &[("base", None)]),
        (
            "airflow-kpo-xcom",
            &[("base", None), ("airflow-xcom-sidecar", None)],
        ),
        ("on-failure", &[("job", Some("1-255"))]),
        ("on-failure-sets-keep", &[("job", Some("5"))]),
        ("on-failure-sets-keep-on-failure", &[("job", None)]),
        ("container-on-failure", &[("job", Some("1-255"))]),
        ("container-always", &[("job", Some("0-255"))]),
        ("container-never-in-on-failure-pod", &[("job", None)]),
        ("rule-in", &[("job", Some("7,42-43"))]),
        ("rule-not-in", &[("job", Some("1-255"))]),
        ("rule-restart-all", &[("job", Some("3"))]),
        ("rules-several", &[("job", Some("0,3-255"))]),
        ("rule-over-on-failure", &[("job", Some("0-255"))]),
        ("two-jobs-one-restarts", &[("a", Some("3")), ("b", None)]),
    ];
    let cases = pods::restart_cases();
    assert_eq!(cases.len(), expected.len());
    for ((name, pod, _), (want_name, want)) in cases.iter().zip(expected) {
        assert_eq!(name, want_name);
        let (plan, out) = patched(pod);
        assert!(plan.warnings.is_empty(), "{name}: {:?}", plan.warnings);
        let got = keeps(&out);
        let want: Vec<(String, Option<String>)> = want
            .iter()
            .map(|(c, v)| (c.to_string(), v.map(str::to_string)))
            .collect();
        assert_eq!(got, want, "{name}");
        assert!(
            out["spec"]["containers"][0]["command"][0] == "/tandem/tandem",
            "{name}: wrapped whoever owns it"
        );
    }
}

#[test]
fn the_annotation_says_which_containers_keep_their_sidecars_on_which_statuses() {
    let case = |wanted: &str| {
        let (_, pod, _) = pods::restart_cases()
            .into_iter()
            .find(|(n, _, _)| *n == wanted)
            .unwrap();
        pod
    };
    let (plan, out) = patched(&case("two-jobs-one-restarts"));
    let line = "wrapped a (command from the spec; added TANDEM_MESH=istio \
                TANDEM_JOB_CONTAINERS=a,b TANDEM_CONTAINER_NAME=a \
                TANDEM_SHARED_DIR=/tandem-shared; keeps the sidecars on exit 3), \
                b (command from the spec; added TANDEM_MESH=istio \
                TANDEM_JOB_CONTAINERS=a,b TANDEM_CONTAINER_NAME=b \
                TANDEM_SHARED_DIR=/tandem-shared)";
    assert_eq!(annotation(&out), line);
    assert_eq!(plan.summary, format!("pod default/r-* (Job r): {line}"));
    let (_, out) = patched(&case("bare-on-failure"));
    assert_eq!(
        annotation(&out),
        "wrapped job (command from the spec; added TANDEM_MESH=istio; \
         keeps the sidecars on exit 1-255)"
    );
    // Nothing else to add: the words alone.
    let mut quiet = job_pod("j", vec![job_container("job")], vec![]);
    quiet["spec"]["restartPolicy"] = json!("OnFailure");
    let (_, out) = patched(&quiet);
    assert_eq!(
        annotation(&out),
        "wrapped job (command from the spec; keeps the sidecars on exit 1-255)"
    );
    // A container that chose for itself is not spoken for.
    let (_, out) = patched(&case("on-failure-sets-keep"));
    assert_eq!(
        annotation(&out),
        "wrapped job (command from the spec; added TANDEM_MESH=istio)"
    );
}

#[test]
fn a_reinvocation_keeps_the_statuses_and_adds_them_where_they_are_missing() {
    let mut pod = job_pod("j", vec![job_container("job"), istio_proxy(false)], vec![]);
    pod["spec"]["restartPolicy"] = json!("OnFailure");
    let (_, once) = patched(&pod);
    let (plan, twice) = patched(&once);
    assert_eq!(twice, once, "{:?}", plan.patch);
    // Injected by an injector that wrote none: the next review adds them.
    let mut without = once.clone();
    let env = without["spec"]["containers"][0]["env"]
        .as_array_mut()
        .unwrap();
    env.retain(|e| e["name"] != "TANDEM_KEEP_ON_EXIT");
    let (_, again) = patched(&without);
    assert_eq!(again["spec"], once["spec"]);
}
