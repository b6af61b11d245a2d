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
/// How long the API server waits for a review before the failure policy
/// applies (the injector counts a review answered later: `metrics`).
pub const TIMEOUT_SECONDS: i64 = 5;

/// What the API server does with an opted-in Pod while no replica answers
/// (SPEC §10, `--failure-policy`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FailurePolicy {
    /// The Pod is not created yet; its creator retries. Default.
    #[default]
    Fail,
    /// The Pod is created without tandem.
    Ignore,
}

impl FailurePolicy {
    /// Its word, as Kubernetes spells it.
    pub fn name(self) -> &'static str {
        match self {
            FailurePolicy::Fail => "Fail",
            FailurePolicy::Ignore => "Ignore",
        }
    }

    /// The policy `word` names, exactly as Kubernetes spells it.
    pub fn from_name(word: &str) -> Option<FailurePolicy> {
        [FailurePolicy::Fail, FailurePolicy::Ignore]
            .into_iter()
            .find(|p| p.name() == word)
    }
}

/// The configuration for the route `mode` of the binary, with the comment
/// that says why each choice is made.
pub fn render(mode: Mode, failure: FailurePolicy) -> String {
    let kubernetes = match mode {
        Mode::EmptyDir => "1.29+",
        Mode::ImageVolume => "1.35+ (image volumes)",
    };
    let mut out = format!(
        "# tandem-injector webhook --install {} --failure-policy {}\n\
         # Kubernetes {kubernetes}; docs/injector.md.\n",
        mode.name(),
        failure.name()
    );
    out.push_str(WHY);
    out.push_str(&yaml::documents(&[configuration(failure)]));
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
# failurePolicy (--failure-policy): while no replica answers (down, hung, a
# bad certificate), Fail creates no opted-in Pod: the Job controller retries
# it (FailedCreate) and it gets tandem once a replica answers; a bare Pod's
# creator sees the error. Ignore creates it without tandem, and it hangs its
# Job on its sidecars. Only Pods that run to completion are sent here.
# reinvocationPolicy IfNeeded: called again when a later webhook (a mesh's own
# injector) changed the Pod, so the sidecars it added are found. cert-manager's
# CA injector fills in caBundle from the Certificate the annotation names
# (cert-manager.yaml); without cert-manager, self-signed.sh does.
";

/// The `MutatingWebhookConfiguration` with a webhook per route.
pub fn configuration(failure: FailurePolicy) -> Node {
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
            Node::List(
                Scope::ALL
                    .into_iter()
                    .map(|scope| webhook(scope, failure))
                    .collect(),
            ),
        ),
    ])
}

/// The webhook of one route.
fn webhook(scope: Scope, failure: FailurePolicy) -> Node {
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
        ("failurePolicy", s(failure.name())),
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
        let printed = render(Mode::EmptyDir, FailurePolicy::default());
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
        let text = render(Mode::EmptyDir, FailurePolicy::Fail);
        for scope in Scope::ALL {
            let name = format!("- name: {}.{DOMAIN}", scope.noun());
            let at = text.find(&name).unwrap();
            let path = text[at..].find("path: ").unwrap() + at + "path: ".len();
            assert!(text[path..].starts_with(&format!("{}\n", scope.path())));
            assert_eq!(Scope::from_path(scope.path()), Some(scope));
        }
        assert!(render(Mode::ImageVolume, FailurePolicy::Fail).contains("Kubernetes 1.35+"));
    }

    #[test]
    fn every_webhook_fails_closed_by_default_and_ignore_is_printed_when_asked() {
        assert_eq!(FailurePolicy::default(), FailurePolicy::Fail);
        for (failure, other) in [
            (FailurePolicy::Fail, "Ignore"),
            (FailurePolicy::Ignore, "Fail"),
        ] {
            let text = render(Mode::EmptyDir, failure);
            let line = format!("    failurePolicy: {}\n", failure.name());
            assert_eq!(text.matches(&line).count(), Scope::ALL.len(), "{text}");
            assert!(!text.contains(&format!("failurePolicy: {other}\n")));
            assert!(text.starts_with(&format!(
                "# tandem-injector webhook --install emptydir --failure-policy {}\n",
                failure.name()
            )));
            // The comment says what both trade, whichever is printed.
            assert!(text.contains("Fail creates no opted-in Pod"), "{text}");
            assert!(text.contains("Ignore creates it without tandem"), "{text}");
        }
        assert_eq!(
            FailurePolicy::from_name("Ignore"),
            Some(FailurePolicy::Ignore)
        );
        assert_eq!(FailurePolicy::from_name("ignore"), None);
    }
}
