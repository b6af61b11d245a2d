//! The label value `audit` in the webhook (SPEC §10.8): on the webhook tests'
//! Pods, through each route, the plan is the one `enabled` gets with nothing
//! applied but the annotation, its words starting `audit: `.

use serde_json::{Value, json};

use crate::inject::delivery::Mode;
use crate::inject::{Images, Plan, Scope, wanted};
use crate::registry::ImageConfig;
use crate::tests::pods::{self, job_container, job_pod};
use crate::tests::{install, request};

fn labelled(pod: &Value, label: Option<&str>) -> Value {
    let mut pod = pod.clone();
    let labels = pod["metadata"]["labels"].as_object_mut().unwrap();
    match label {
        Some(value) => labels.insert("tandem.dev/inject".into(), json!(value)),
        None => labels.remove("tandem.dev/inject"),
    };
    pod
}

/// The plan for `pod` through `scope`, and the Pod with its patch applied.
fn planned(pod: &Value, scope: Scope, images: &Images) -> (Plan, Value) {
    crate::tests::planned(pod, &install(Mode::EmptyDir), scope, images)
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
        let (enabled, _) = planned(&pod, Scope::Label, &Images::new());
        let line = enabled.report.as_ref().unwrap().line();
        let audited = labelled(&pod, Some("audit"));
        let (audit, _) = planned(&audited, Scope::Label, &Images::new());
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
        let (plan, _) = planned(&labelled(&pod, label), scope, &Images::new());
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
    let (first, annotated) = planned(&pod, Scope::Label, &Images::new());
    let (again, _) = planned(&annotated, Scope::Label, &Images::new());
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
    let wanted_audit = wanted(&request(&audit), Scope::Label);
    assert_eq!(wanted_audit, wanted(&request(&pod), Scope::Label));
    assert_eq!(wanted_audit, [("uploader".into(), pods::JOB_IMAGE.into())]);
    let namespace = labelled(&pod, None);
    assert_eq!(
        wanted(&request(&namespace), Scope::NamespaceAudit),
        wanted_audit
    );
    let config = ImageConfig {
        entrypoint: vec!["/app/upload".into()],
        cmd: vec![],
    };
    let images: Images = [("uploader".to_string(), Ok(config))].into();
    let (plan, _) = planned(&audit, Scope::Label, &images);
    let line = plan.report.as_ref().unwrap().line();
    assert!(line.starts_with("audit: wrapped job"), "{line}");
    assert!(
        line.contains("uploader (entrypoint from the registry;"),
        "{line}"
    );
    annotation_only(&plan, &line);
    let failed: Images = [(
        "uploader".to_string(),
        Err("not found (fix it)".to_string()),
    )]
    .into();
    let (plan, _) = planned(&audit, Scope::Label, &failed);
    let line = plan.report.as_ref().unwrap().line();
    assert!(line.contains("was not read: not found (fix it)"), "{line}");
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
}
