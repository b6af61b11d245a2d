//! Job containers without `command` (SPEC §10): wrapped from what the
//! registry said of their image, or from the annotation, or left with the
//! reason; each patch applied (json-patch) and the resulting container checked.

use serde_json::{Value, json};

use super::*;
use crate::inject::delivery::Mode;
use crate::inject::route::Route;
use crate::layout::{BIN_DIR, TANDEM};
use crate::registry::{Failure, ImageConfig};
use crate::tests::pods::{self, container, job_pod, review};
use crate::tests::{install, planned, strings};

const IMAGE: &str = "registry.example.com/batch:2";

fn config(entrypoint: &[&str], cmd: &[&str]) -> ImageConfig {
    ImageConfig {
        entrypoint: strings(entrypoint),
        cmd: strings(cmd),
    }
}

/// The plan for `pod` given `images`, and the Pod with its patch applied.
fn applied(pod: &Value, images: &Images) -> (Plan, Value) {
    planned(pod, &install(Mode::EmptyDir), Scope::Label, images)
}

fn one_job(args: &[&str]) -> Value {
    job_pod("j", vec![container("job", IMAGE, None, args)], vec![])
}

fn found(answer: Result<ImageConfig, Failure>) -> Images {
    Images::from([("job".to_string(), answer)])
}

#[test]
fn what_wanted_lists_is_each_job_container_without_command_or_annotation() {
    let mut pod = job_pod(
        "j",
        vec![
            container("a", "img-a", None, &[]),
            container("b", "img-b", Some(&["/b"]), &[]),
            container("c", "img-c", Some(&[]), &["x"]),
            container("d", "img-d", None, &[]),
            pods::istio_proxy(false),
        ],
        vec![],
    );
    pod["metadata"]["annotations"]["tandem.dev/entrypoint.d"] = json!("[\"/d\"]");
    let request = review("uid-1", &pod)["request"].clone();
    let wanted = wanted(&request, Scope::Label, Route::Wrap);
    assert_eq!(
        wanted,
        [("a".into(), "img-a".into()), ("c".into(), "img-c".into())]
    );
    let mut other = pod.clone();
    other["metadata"]["labels"]["tandem.dev/inject"] = json!("disabled");
    let request = review("uid-1", &other)["request"].clone();
    assert!(super::wanted(&request, Scope::Label, Route::Wrap).is_empty());
}

/// Every row of Kubernetes' table through the whole plan: what the patched
/// container runs (command + args) is tandem, `--`, then what it ran before.
#[test]
fn every_row_of_the_command_args_table_is_wrapped_as_the_runtime_would_run_it() {
    type Words = &'static [&'static str];
    let rows: &[(Words, Words, Words, Words)] = &[
        (&["/ep", "-e"], &["c1"], &[], &["/ep", "-e", "c1"]),
        (&["/ep", "-e"], &["c1"], &["a1"], &["/ep", "-e", "a1"]),
        (&["/ep"], &[], &[], &["/ep"]),
        (&[], &["/cmd", "c1"], &[], &["/cmd", "c1"]),
        (&[], &["/cmd"], &["/a", "a1"], &["/a", "a1"]),
    ];
    for (entrypoint, cmd, args, runs) in rows {
        let (plan, out) = applied(&one_job(args), &found(Ok(config(entrypoint, cmd))));
        let c = &out["spec"]["containers"][0];
        let mut ran: Vec<String> = serde_json::from_value(c["command"].clone()).unwrap();
        let args: Vec<String> = serde_json::from_value(c["args"].clone()).unwrap_or_default();
        ran.extend(args);
        let mut expected = strings(&[TANDEM, "--"]);
        expected.extend(strings(runs));
        assert_eq!(ran, expected, "{entrypoint:?} {cmd:?}: {:#?}", plan.patch);
        assert_eq!(c["volumeMounts"][1]["mountPath"], BIN_DIR);
        assert!(
            plan.summary.contains("job (entrypoint from the registry)"),
            "{}",
            plan.summary
        );
        assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
    }
}

#[test]
fn the_annotation_gives_the_entrypoint_without_a_lookup_and_wins() {
    let mut pod = one_job(&["--all"]);
    pod["metadata"]["annotations"]["tandem.dev/entrypoint.job"] = json!("[\"/app/run\", \"--x\"]");
    let registry = found(Ok(config(&["/other"], &["y"])));
    for images in [Images::new(), registry] {
        let (plan, out) = applied(&pod, &images);
        let c = &out["spec"]["containers"][0];
        assert_eq!(c["command"], json!([TANDEM, "--", "/app/run", "--x"]));
        assert_eq!(c["args"], json!(["--all"]));
        assert!(
            plan.summary
                .contains("job (entrypoint from its annotation)"),
            "{}",
            plan.summary
        );
    }
}

#[test]
fn a_container_that_cannot_be_wrapped_is_left_as_it_is_with_the_reason() {
    let mut bad = one_job(&[]);
    bad["metadata"]["annotations"]["tandem.dev/entrypoint.job"] = json!("/app/run --x");
    let failed = found(Err(Failure::Denied(
        "HTTP 401 and --registry-auth has none for registry.example.com".into(),
    )));
    let empty = found(Ok(config(&[], &[])));
    let cases = [
        (
            &bad,
            Images::new(),
            "its annotation tandem.dev/entrypoint.job is not a JSON list of strings",
        ),
        (
            &one_job(&[]),
            failed,
            "its image registry.example.com/batch:2 was not read: unauthorized (give the injector",
        ),
        (
            &one_job(&[]),
            empty,
            "its image has neither ENTRYPOINT nor CMD",
        ),
    ];
    for (pod, images, why) in cases {
        let (plan, out) = applied(pod, &images);
        // Only the annotation that says why.
        assert_eq!(out["spec"], pod["spec"], "{:#?}", plan.patch);
        let line = out["metadata"]["annotations"]["tandem.dev/injection"]
            .as_str()
            .unwrap();
        assert!(line.contains(why), "{line}");
        assert_eq!(plan.warnings.len(), 1, "{:?}", plan.warnings);
        assert!(
            plan.warnings[0].starts_with(
                "tandem-injector: container \"job\" not wrapped: it has no command and "
            ) && plan.warnings[0].contains(why),
            "{}",
            plan.warnings[0]
        );
    }
}
