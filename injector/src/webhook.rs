//! `tandem-injector webhook` (SPEC §10): the `MutatingWebhookConfiguration`
//! that sends the injector its reviews, printed as YAML: one webhook for each
//! route (Pods labelled; namespaces labelled enabled or audit, Pods
//! unlabelled), each reaching the Pods the policy's bindings do, and those
//! under audit, which the policy leaves alone (`inject::selectors`).
//! `deploy/tandem-injector.yaml` ends with what it prints.

use crate::inject::Scope;
use crate::inject::delivery::Mode;
use crate::inject::selectors::{self, INJECTOR_NAMESPACE, Reader};
use crate::policy::{API, NAME};
use crate::yaml::{self, Node, map, s, strs};

/// The webhooks' names end with this, after the route's noun.
const DOMAIN: &str = "injector.tandem.dev";
/// How long the API server waits for a review before Ignore applies.
const TIMEOUT_SECONDS: i64 = 5;

/// The configuration for the route `mode` of the binary, with the comment
/// that says why each choice is made.
pub fn render(mode: Mode) -> String {
    let kubernetes = match mode {
        Mode::EmptyDir => "1.29+",
        Mode::ImageVolume => "1.35+ (image volumes)",
    };
    let mut out = format!(
        "# tandem-injector webhook --install {}\n\
         # Kubernetes {kubernetes}; docs/injector.md.\n",
        mode.name()
    );
    out.push_str(WHY);
    out.push_str(&yaml::documents(&[configuration()]));
    out
}

/// The reasons behind the configuration, printed above it.
const WHY: &str = "\
#
# Three webhooks, one server: Pods labelled tandem.dev/inject=enabled (or
# audit) anywhere, and every Pod without that label in a namespace labelled
# enabled, or audit. Under audit a Pod is only annotated with what would be done. matchConditions
# sends only the Pods that run to completion (restartPolicy Never or OnFailure:
# a Job's, a bare Pod, a Spark driver, whoever owns it), so a Deployment's Pods
# in a labelled namespace never wait on the injector; it would allow them
# untouched anyway. matchConditions is GA from Kubernetes 1.30 and beta, on by
# default, in 1.28 and 1.29 (feature gate AdmissionWebhookMatchConditions): on a
# 1.29 cluster with that gate turned off the API server drops the field, and the
# injector still changes only such Pods, every labelled Pod merely reaching it.
#
# failurePolicy Ignore: when the injector cannot answer (down, slow, a bad
# certificate), Pods are created without tandem rather than not at all.
# reinvocationPolicy IfNeeded: called again when a later webhook (a mesh's own
# injector) changed the Pod, so the sidecars it added are found. cert-manager's
# CA injector fills in caBundle from the Certificate the annotation names
# (cert-manager.yaml); without cert-manager, self-signed.sh does.
";

/// The `MutatingWebhookConfiguration` with a webhook per route.
pub fn configuration() -> Node {
    let annotation = Node::Map(vec![(
        "cert-manager.io/inject-ca-from".to_string(),
        s(format!("{INJECTOR_NAMESPACE}/{NAME}")),
    )]);
    map([
        ("apiVersion", s(API)),
        ("kind", s("MutatingWebhookConfiguration")),
        (
            "metadata",
            map([("name", s(NAME)), ("annotations", annotation)]),
        ),
        (
            "webhooks",
            Node::List(Scope::ALL.into_iter().map(webhook).collect()),
        ),
    ])
}

/// The webhook of one route.
fn webhook(scope: Scope) -> Node {
    let service = map([
        ("name", s(NAME)),
        ("namespace", s(INJECTOR_NAMESPACE)),
        ("path", s(scope.path())),
        ("port", Node::Int(443)),
    ]);
    let rule = map([
        ("operations", strs(&["CREATE"])),
        ("apiGroups", strs(&[""])),
        ("apiVersions", strs(&["v1"])),
        ("resources", strs(&["pods"])),
        ("scope", s("Namespaced")),
    ]);
    map([
        ("name", s(format!("{}.{DOMAIN}", scope.noun()))),
        ("admissionReviewVersions", strs(&["v1"])),
        ("clientConfig", map([("service", service)])),
        ("rules", Node::List(vec![rule])),
        ("objectSelector", selectors::objects(scope, Reader::Webhook)),
        ("namespaceSelector", selectors::namespaces(scope)),
        (
            "matchConditions",
            Node::List(vec![selectors::runs_to_completion()]),
        ),
        ("matchPolicy", s("Equivalent")),
        ("sideEffects", s("None")),
        ("failurePolicy", s("Ignore")),
        ("reinvocationPolicy", s("IfNeeded")),
        ("timeoutSeconds", Node::Int(TIMEOUT_SECONDS)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_manifest_ends_with_what_the_command_prints() {
        let shipped = include_str!("../deploy/tandem-injector.yaml");
        let printed = render(Mode::EmptyDir);
        assert!(
            shipped.ends_with(&printed),
            "deploy/tandem-injector.yaml's webhook part is stale: replace it with \
             the output of tandem-injector webhook"
        );
        let before = &shipped[..shipped.len() - printed.len()];
        assert!(!before.contains("MutatingWebhookConfiguration"), "{before}");
    }

    #[test]
    fn each_webhook_posts_to_the_path_of_its_route() {
        let text = render(Mode::EmptyDir);
        for scope in Scope::ALL {
            let name = format!("- name: {}.{DOMAIN}", scope.noun());
            let at = text.find(&name).unwrap();
            let path = text[at..].find("path: ").unwrap() + at + "path: ".len();
            assert!(text[path..].starts_with(&format!("{}\n", scope.path())));
            assert_eq!(Scope::from_path(scope.path()), Some(scope));
        }
        assert!(render(Mode::ImageVolume).contains("Kubernetes 1.35+"));
    }
}
