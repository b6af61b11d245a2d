//! The injection's reach as the API server reads it (SPEC §10): the object
//! and namespace selectors of each route, the namespaces never touched and
//! the runs-to-completion match condition. The webhook's configuration
//! (`webhook`) and the admission policy's bindings (`policy`) are both built
//! from here, so the two cannot disagree on which Pods are sent; `scope` is
//! the same rule as the server applies it to a review.

use super::scope::{self, Scope};
use crate::layout::{AUDIT, ENABLED, LABEL};
use crate::yaml::{Node, map, s, strs};

/// The namespace the injector runs in (its Service's, in the webhook's
/// configuration).
pub const INJECTOR_NAMESPACE: &str = "tandem-system";
/// Namespaces never changed: the injector's own and the cluster's.
pub const SYSTEM_NAMESPACES: [&str; 2] = [INJECTOR_NAMESPACE, "kube-system"];
/// The match condition's name.
pub const RUNS_TO_COMPLETION: &str = "runs-to-completion";

/// The match condition's CEL: the Pod's `restartPolicy` is one of
/// [`scope::RUNS_TO_COMPLETION`], whoever owns it (the API server has
/// defaulted it by then: unset is `Always`).
pub fn runs_to_completion_cel() -> String {
    let policies: Vec<String> = scope::RUNS_TO_COMPLETION
        .iter()
        .map(|p| format!("'{p}'"))
        .collect();
    format!(
        "has(object.spec.restartPolicy) &&\n  object.spec.restartPolicy in [{}]",
        policies.join(", ")
    )
}

/// The runs-to-completion match condition, as an item of `matchConditions`.
pub fn runs_to_completion() -> Node {
    map([
        ("name", s(RUNS_TO_COMPLETION)),
        ("expression", s(runs_to_completion_cel())),
    ])
}

/// Who reads a selector: the webhook also annotates the Pods under audit;
/// the policy changes Pods, so it leaves those alone (SPEC §10.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// The webhook's configuration.
    Webhook,
    /// The admission policy's bindings.
    Policy,
}

/// The Pods a route is sent: labelled ones, or (namespace routes) those
/// without the label, whose namespace decides.
pub fn objects(scope: Scope, reader: Reader) -> Node {
    match scope {
        Scope::Label if reader == Reader::Webhook => {
            expressions(&[(LABEL, "In", &[ENABLED, AUDIT])])
        }
        Scope::Label => map([(
            "matchLabels",
            Node::Map(vec![(LABEL.to_string(), s(ENABLED))]),
        )]),
        Scope::Namespace | Scope::NamespaceAudit => expressions(&[(LABEL, "DoesNotExist", &[])]),
    }
}

/// The namespaces a route is sent Pods of: any but the system ones, or
/// (namespace route) the labelled ones but those.
pub fn namespaces(scope: Scope) -> Node {
    match scope {
        Scope::Label => not_system(),
        Scope::Namespace => expressions(&[
            (LABEL, "In", &[ENABLED]),
            ("kubernetes.io/metadata.name", "NotIn", &SYSTEM_NAMESPACES),
        ]),
        Scope::NamespaceAudit => expressions(&[
            (LABEL, "In", &[AUDIT]),
            ("kubernetes.io/metadata.name", "NotIn", &SYSTEM_NAMESPACES),
        ]),
    }
}

/// Every namespace but the system ones.
pub fn not_system() -> Node {
    expressions(&[("kubernetes.io/metadata.name", "NotIn", &SYSTEM_NAMESPACES)])
}

/// A `matchExpressions` selector: key, operator, values (none for `DoesNotExist`).
fn expressions(each: &[(&str, &str, &[&str])]) -> Node {
    let list = each
        .iter()
        .map(|(key, operator, values)| {
            let mut e = vec![
                ("key".to_string(), s(*key)),
                ("operator".to_string(), s(*operator)),
            ];
            if !values.is_empty() {
                e.push(("values".to_string(), strs(values)));
            }
            Node::Map(e)
        })
        .collect();
    map([("matchExpressions", Node::List(list))])
}
