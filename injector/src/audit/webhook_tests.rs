//! The label value `audit` in the webhook (SPEC §10.8): on the webhook tests'
//! Pods, through each route, the plan is the one `enabled` gets with nothing
//! applied but the annotation, its words starting `audit: `.

use serde_json::{Value, json};

use super::tests::stored;
use super::would;
use crate::inject::Images;
use crate::inject::delivery::{Install, Mode};
use crate::inject::route::Route;
use crate::inject::{Plan, Scope, plan, plan_with, wanted};
use crate::registry::ImageConfig;
use crate::tests::pods::{self, job_container, job_pod, review};

fn install() -> Install {
    Install {
        image: pods::TANDEM_IMAGE.into(),
        mode: Mode::EmptyDir,
        route: Route::Wrap,
    }
}

fn labelled(pod: &Value, label: Option<&str>) -> Value {
    let mut pod = pod.clone();
    let labels = pod["metadata"]["labels"].as_object_mut().unwrap();
    match label {
        Some(value) => labels.insert("tandem.dev/inject".into(), json!(value)),
        None => labels.remove("tandem.dev/inject"),
    };
    pod
}

fn planned(pod: &Value, scope: Scope, images: &Images) -> Plan {
    plan_with(&review("uid-1", pod)["request"], &install(), scope, images)
}

/// The one operation an audit answers with: the annotation, `line`.
fn annotation_only(plan: &Plan, line: &str) {
    assert_eq!(
        plan.patch,
        [
            json!({"op": "add", "path": "/metadata/annotations/tandem.dev~1injection", "value": line})
        ]
    );
}

#[test]
fn a_pod_labelled_audit_gets_only_the_annotation_saying_what_enabled_would_do() {
    for (name, pod) in pods::cases() {
        let enabled = planned(&pod, Scope::Label, &Images::new());
        let line = enabled.report.as_ref().unwrap().line();
        let audit = planned(&labelled(&pod, Some("audit")), Scope::Label, &Images::new());
        annotation_only(&audit, &format!("audit: {line}"));
        assert!(audit.warnings.is_empty(), "{name}: {:?}", audit.warnings);
        assert!(audit.report.as_ref().unwrap().audit, "{name}");
        assert!(
            audit
                .summary
                .ends_with(&format!(" (Job {name}): audit: {line}")),
            "{}",
            audit.summary
        );
        if name == "no-command" {
            assert!(
                !enabled.warnings.is_empty(),
                "enabled warns, audit does not"
            );
        }
    }
}

#[test]
fn a_pods_own_label_wins_over_its_namespaces_audit_and_the_other_way_round() {
    let pod = job_pod("j", vec![job_container("job")], vec![]);
    let audit_line = "audit: wrapped job (command from the spec)";
    for (scope, label, audited) in [
        (Scope::NamespaceAudit, None, Some(true)),
        (Scope::NamespaceAudit, Some("audit"), Some(true)),
        (Scope::NamespaceAudit, Some("enabled"), Some(false)),
        (Scope::NamespaceAudit, Some("disabled"), None),
        (Scope::Namespace, Some("audit"), Some(true)),
        (Scope::Namespace, None, Some(false)),
        (Scope::Label, Some("audit"), Some(true)),
        (Scope::Label, None, None),
        (Scope::Label, Some("Audit"), None),
    ] {
        let plan = planned(&labelled(&pod, label), scope, &Images::new());
        let case = format!("{scope:?} {label:?}");
        match audited {
            Some(true) => annotation_only(&plan, audit_line),
            Some(false) => assert!(plan.patch.len() > 1, "{case}: changed"),
            None => {
                assert!(plan.patch.is_empty(), "{case}");
                assert!(
                    plan.summary.contains("not opted in"),
                    "{case}: {}",
                    plan.summary
                );
            }
        }
    }
}

#[test]
fn an_audited_pod_reviewed_again_is_left_as_it_is() {
    let pod = labelled(
        &job_pod("j", vec![job_container("job")], vec![]),
        Some("audit"),
    );
    let first = plan(&review("u", &pod)["request"], &install(), Scope::Label);
    let mut annotated = pod.clone();
    let ops: json_patch::Patch = serde_json::from_value(Value::Array(first.patch)).unwrap();
    json_patch::patch(&mut annotated, &ops).unwrap();
    let again = plan(
        &review("u", &annotated)["request"],
        &install(),
        Scope::Label,
    );
    assert!(again.patch.is_empty(), "{:?}", again.patch);
    assert_eq!(again.summary, first.summary);
}

#[test]
fn an_audit_looks_up_the_images_enabled_would_and_says_what_they_gave() {
    let pod = pods::cases()
        .into_iter()
        .find(|(n, _)| *n == "no-command")
        .unwrap()
        .1;
    let audit = labelled(&pod, Some("audit"));
    let request = |pod: &Value| review("u", pod)["request"].clone();
    let wanted_audit = wanted(&request(&audit), Scope::Label, Route::Wrap);
    assert_eq!(
        wanted_audit,
        wanted(&request(&pod), Scope::Label, Route::Wrap)
    );
    assert_eq!(wanted_audit, [("uploader".into(), pods::JOB_IMAGE.into())]);
    let namespace = labelled(&pod, None);
    assert_eq!(
        wanted(&request(&namespace), Scope::NamespaceAudit, Route::Wrap),
        wanted_audit
    );
    let config = ImageConfig {
        entrypoint: vec!["/app/upload".into()],
        cmd: vec![],
    };
    let images: Images = [("uploader".to_string(), Ok(config))].into();
    let plan = planned(&audit, Scope::Label, &images);
    let line = plan.report.as_ref().unwrap().line();
    assert!(line.starts_with("audit: wrapped job"), "{line}");
    assert!(
        line.contains("uploader (entrypoint from the registry;"),
        "{line}"
    );
    annotation_only(&plan, &line);
    let failed: Images = [(
        "uploader".to_string(),
        Err(crate::registry::Failure::NotFound("HTTP 404".into())),
    )]
    .into();
    let plan = planned(&audit, Scope::Label, &failed);
    let line = plan.report.as_ref().unwrap().line();
    assert!(
        line.contains("was not read: not found (check the image name"),
        "{line}"
    );
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
}

#[test]
fn on_the_native_route_the_audit_says_what_moves_and_looks_nothing_up() {
    for (name, pod) in pods::native_cases() {
        let stored_pod = stored(pod.clone(), "ns", "p", &[]);
        let got = would::would(&stored_pod, Route::Native);
        assert!(got.starts_with("native: "), "{name}: {got}");
        assert!(got.ends_with("job containers unchanged"), "{name}: {got}");
        assert!(
            !got.contains("needs its image's entrypoint"),
            "{name}: {got}"
        );
    }
    let several = pods::native_cases().remove(1).1;
    assert_eq!(
        would::would(&stored(several, "ns", "p", &[]), Route::Native),
        "native: moved linkerd-proxy, istio-proxy, vault-agent, cloud-sql-proxy, daprd to \
         native sidecars, tandem waits for linkerd-proxy, istio-proxy, cloud-sql-proxy, daprd \
         in postStart; vault-agent has no readiness to wait for; job containers unchanged"
    );
    // A Pod's own annotation wins over the audit's route.
    let mut wrap = pods::native_cases().remove(0).1;
    wrap["metadata"]["annotations"]["tandem.dev/route"] = json!("wrap");
    let got = would::would(&stored(wrap, "ns", "p", &[]), Route::Native);
    assert!(got.starts_with("wrapped job"), "{got}");
}
