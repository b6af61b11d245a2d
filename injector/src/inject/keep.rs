//! Restart in place (SPEC §10): the exit statuses after which the kubelet runs
//! a container again in the same Pod, so tandem must leave the sidecars up for
//! its next run. The Pod's `restartPolicy` gives a set, the container's own
//! `restartPolicy` (Kubernetes 1.35+) replaces it, and each of the container's
//! `restartPolicyRules` adds the statuses its `exitCodes` select, whatever its
//! action: every action runs the container again.

use serde_json::Value;
use tandem_common::exit_codes::ExitCodes;

/// The statuses after which container `c` of a Pod whose `restartPolicy` is
/// `pod_policy` runs again in the same Pod. What the API server would refuse
/// (an unknown policy or operator, a status outside 0–255) adds nothing.
pub fn statuses(pod_policy: &Value, c: &Value) -> ExitCodes {
    let policy = match &c["restartPolicy"] {
        Value::Null => pod_policy,
        own => own,
    };
    let mut set = match policy.as_str() {
        Some("Always") => ExitCodes::ALL,
        Some("OnFailure") => ExitCodes::FAILURES,
        _ => ExitCodes::NONE,
    };
    for rule in c["restartPolicyRules"].as_array().into_iter().flatten() {
        set = set.union(selected(&rule["exitCodes"]));
    }
    set
}

/// The statuses a rule's `exitCodes` select: its `values` for `In`, every
/// other status for `NotIn`.
fn selected(exit_codes: &Value) -> ExitCodes {
    let mut values = ExitCodes::NONE;
    let each = exit_codes["values"].as_array().into_iter().flatten();
    for code in each.filter_map(Value::as_u64) {
        if let Ok(code) = u8::try_from(code) {
            values.insert(code);
        }
    }
    match exit_codes["operator"].as_str() {
        Some("In") => values,
        Some("NotIn") => values.complement(),
        _ => ExitCodes::NONE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::pods::rule;
    use serde_json::json;

    /// The canonical writing of the set for a container `c` of a Pod with
    /// `pod` as its restart policy.
    fn keep(pod: &str, c: Value) -> String {
        statuses(&json!(pod), &c).to_string()
    }

    #[test]
    fn the_pods_policy_gives_the_set_when_the_container_has_none() {
        assert_eq!(keep("Never", json!({"name": "job"})), "");
        assert_eq!(keep("OnFailure", json!({"name": "job"})), "1-255");
    }

    #[test]
    fn the_containers_own_policy_replaces_the_pods() {
        let c = |policy| json!({"name": "job", "restartPolicy": policy});
        assert_eq!(keep("Never", c("OnFailure")), "1-255");
        assert_eq!(keep("Never", c("Always")), "0-255");
        assert_eq!(keep("OnFailure", c("Never")), "");
        assert_eq!(keep("OnFailure", c("Always")), "0-255");
    }

    #[test]
    fn in_adds_its_values_and_not_in_every_other_status() {
        let c = |rules: Vec<Value>| {
            json!({"name": "job", "restartPolicy": "Never",
            "restartPolicyRules": rules})
        };
        assert_eq!(
            keep("Never", c(vec![rule("Restart", "In", &[43, 42])])),
            "42-43"
        );
        assert_eq!(
            keep("Never", c(vec![rule("Restart", "In", &[3, 9, 7, 8])])),
            "3,7-9"
        );
        assert_eq!(
            keep("Never", c(vec![rule("Restart", "NotIn", &[0, 1])])),
            "2-255"
        );
        assert_eq!(
            keep("Never", c(vec![rule("Restart", "NotIn", &[0, 5])])),
            "1-4,6-255"
        );
        assert_eq!(keep("Never", c(vec![])), "");
    }

    #[test]
    fn several_rules_and_the_policy_add_up_whatever_the_action() {
        let c = json!({"name": "job", "restartPolicyRules": [
            rule("Restart", "In", &[3]),
            rule("RestartAllContainers", "In", &[7, 5]),
            rule("SomethingLater", "In", &[0]),
        ]});
        assert_eq!(keep("Never", c.clone()), "0,3,5,7");
        assert_eq!(keep("OnFailure", c), "0-255");
        let both = json!({"name": "job", "restartPolicy": "Never", "restartPolicyRules": [
            rule("Restart", "NotIn", &[0, 1, 2]),
            rule("Restart", "NotIn", &[0, 2, 9]),
        ]});
        assert_eq!(keep("OnFailure", both), "1,3-255");
    }

    #[test]
    fn what_the_api_server_would_refuse_adds_nothing() {
        let c = json!({"name": "job", "restartPolicy": "Sometimes", "restartPolicyRules": [
            {"action": "Restart"},
            {"action": "Restart", "exitCodes": {"operator": "Near", "values": [4]}},
            rule("Restart", "In", &[-1, 256, 300]),
            "not a rule",
        ]});
        assert_eq!(keep("OnFailure", c), "");
        let not_in = json!({"name": "job", "restartPolicyRules": [
            rule("Restart", "NotIn", &[-1, 256])]});
        assert_eq!(keep("Never", not_in), "0-255");
    }
}
