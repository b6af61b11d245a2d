//! The printed policy leaves a Pod under audit alone (SPEC §10.8): no binding of
//! the mutating policy selects a Pod labelled `audit`, or an unlabelled one in
//! a namespace labelled `audit`, while the webhook's configuration sends each
//! to one route; and the warning policy does not warn about an audited Job.
//! The selectors are evaluated as the API server does.

use serde_json::json;

use super::{field, install, list, on_a_large_stack, text, warning_on};
use crate::inject::delivery::Mode;
use crate::policy::documents;
use crate::yaml::Node;

/// Whether `selector` (a LabelSelector; `None`: absent, everything) selects an
/// object with `labels`.
fn selects(selector: Option<&Node>, labels: &[(&str, &str)]) -> bool {
    let Some(Node::Map(parts)) = selector else {
        return selector.is_none();
    };
    let value = |key: &str| labels.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    parts
        .iter()
        .all(|(part, node)| match (part.as_str(), node) {
            ("matchLabels", Node::Map(pairs)) => pairs
                .iter()
                .all(|(k, v)| value(k).is_some_and(|got| Node::Str(got.into()) == *v)),
            ("matchExpressions", Node::List(all)) => all.iter().all(|e| {
                let got = value(&text(field(e, "key")));
                let within = || {
                    let values = list(field(e, "values"));
                    got.is_some_and(|g| values.iter().any(|v| text(v) == g))
                };
                match text(field(e, "operator")).as_str() {
                    "In" => within(),
                    "NotIn" => !within(),
                    "Exists" => got.is_some(),
                    "DoesNotExist" => got.is_none(),
                    other => panic!("operator {other}"),
                }
            }),
            other => panic!("selector part {other:?}"),
        })
}

fn optional<'a>(node: &'a Node, key: &str) -> Option<&'a Node> {
    match node {
        Node::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
        _ => None,
    }
}

/// The mutating policy's bindings that select a Pod with `pod` labels in a
/// namespace named `tandem-jobs` with `namespace` labels.
fn bindings(pod: &[(&str, &str)], namespace: &[(&str, &str)]) -> Vec<String> {
    let mut ns = vec![("kubernetes.io/metadata.name", "tandem-jobs")];
    ns.extend_from_slice(namespace);
    documents(&install(Mode::EmptyDir))
        .iter()
        .filter(|d| text(field(d, "kind")) == "MutatingAdmissionPolicyBinding")
        .filter(|d| {
            let resources = field(field(d, "spec"), "matchResources");
            selects(optional(resources, "objectSelector"), pod)
                && selects(optional(resources, "namespaceSelector"), &ns)
        })
        .map(|d| text(field(field(d, "metadata"), "name")))
        .collect()
}

#[test]
fn no_binding_of_the_mutating_policy_selects_a_pod_under_audit() {
    on_a_large_stack(|| {
        const LABEL: &str = "tandem.dev/inject";
        let none: &[(&str, &str)] = &[];
        type Labels<'a> = &'a [(&'a str, &'a str)];
        let cases: &[(Labels, Labels, &[&str])] = &[
            (&[(LABEL, "enabled")], none, &["tandem-injector-pods"]),
            (none, &[(LABEL, "enabled")], &["tandem-injector-namespaces"]),
            (&[(LABEL, "audit")], none, &[]),
            (&[(LABEL, "audit")], &[(LABEL, "enabled")], &[]),
            (none, &[(LABEL, "audit")], &[]),
            (
                &[(LABEL, "enabled")],
                &[(LABEL, "audit")],
                &["tandem-injector-pods"],
            ),
            (&[(LABEL, "disabled")], &[(LABEL, "audit")], &[]),
            (none, none, &[]),
        ];
        for (pod, namespace, expected) in cases {
            assert_eq!(
                bindings(pod, namespace),
                *expected,
                "Pod {pod:?} in a namespace {namespace:?}"
            );
        }
    })
}

/// The webhooks of the shipped configuration that are sent a Pod with `pod`
/// labels in a namespace with `namespace` labels.
fn webhooks(pod: &[(&str, &str)], namespace: &[(&str, &str)]) -> Vec<String> {
    let mut ns = vec![("kubernetes.io/metadata.name", "tandem-jobs")];
    ns.extend_from_slice(namespace);
    let config = crate::webhook::configuration(crate::webhook::FailurePolicy::Fail);
    list(field(&config, "webhooks"))
        .iter()
        .filter(|w| {
            selects(optional(w, "objectSelector"), pod)
                && selects(optional(w, "namespaceSelector"), &ns)
        })
        .map(|w| text(field(w, "name")))
        .collect()
}

#[test]
fn the_webhook_is_sent_the_pods_under_audit_each_by_one_route() {
    on_a_large_stack(|| {
        const LABEL: &str = "tandem.dev/inject";
        type Labels<'a> = &'a [(&'a str, &'a str)];
        let none: Labels = &[];
        let cases: &[(Labels, Labels, &[&str])] = &[
            (&[(LABEL, "audit")], none, &["pods.injector.tandem.dev"]),
            (
                &[(LABEL, "audit")],
                &[(LABEL, "enabled")],
                &["pods.injector.tandem.dev"],
            ),
            (
                none,
                &[(LABEL, "audit")],
                &["audit.namespaces.injector.tandem.dev"],
            ),
            (
                &[(LABEL, "enabled")],
                &[(LABEL, "audit")],
                &["pods.injector.tandem.dev"],
            ),
            (&[(LABEL, "disabled")], &[(LABEL, "audit")], &[]),
            (
                none,
                &[(LABEL, "enabled")],
                &["namespaces.injector.tandem.dev"],
            ),
            (&[(LABEL, "enabled")], none, &["pods.injector.tandem.dev"]),
            (none, none, &[]),
        ];
        for (pod, namespace, expected) in cases {
            assert_eq!(
                webhooks(pod, namespace),
                *expected,
                "Pod {pod:?} in a namespace {namespace:?}"
            );
        }
    })
}

#[test]
fn the_warning_policy_does_not_warn_about_a_job_under_audit() {
    on_a_large_stack(|| {
        for (label, opted_in) in [("enabled", true), ("audit", false)] {
            // A container without command: the policy warns when opted in.
            let template = json!({
                "metadata": {"labels": {"tandem.dev/inject": label}},
                "spec": {"containers": [{"name": "job", "image": "registry.example.com/job:1"}]},
            });
            let (variables, passes) = warning_on(&template);
            assert_eq!(variables["optedIn"], json!(opted_in), "{label}");
            assert_eq!(passes, !opted_in, "{label}");
        }
    })
}
