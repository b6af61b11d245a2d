//! The audit's input: a Kubernetes `List` of Pods as JSON, as `kubectl get
//! pods -A -o json` prints it (or a `PodList`, as the API server answers
//! `GET /api/v1/pods`). Anything else is one line saying what it is and what
//! was expected (exit 65).

use serde_json::Value;

/// What the input should be, for the error lines.
const EXPECTED: &str = "expected a List of Pods, as `kubectl get pods -A -o json` prints";

/// The Pods of the List in `data`, in its order; else one line saying why not.
pub fn pods(data: &[u8]) -> Result<Vec<Value>, String> {
    let value = serde_json::from_slice(data).map_err(|e| format!("not JSON ({e}): {EXPECTED}"))?;
    let Value::Object(mut list) = value else {
        return Err(format!("not a JSON object: {EXPECTED}"));
    };
    let pod_list = match list.get("kind").and_then(Value::as_str) {
        Some("List") => false,
        Some("PodList") => true,
        Some("Pod") => return Err(format!("a single Pod, not a List: {EXPECTED}")),
        Some(kind) => return Err(format!("a {}, not a List: {EXPECTED}", shown(kind))),
        None => return Err(format!("no kind: {EXPECTED}")),
    };
    let items = match list.remove("items") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(format!("its items are not a list: {EXPECTED}")),
    };
    for (i, item) in items.iter().enumerate() {
        if !item.is_object() {
            return Err(format!("items[{i}] is not an object: {EXPECTED}"));
        }
        // A PodList's items have no kind; a List's each say theirs.
        match item["kind"].as_str() {
            Some("Pod") => {}
            None if pod_list => {}
            Some(other) => {
                return Err(format!(
                    "items[{i}] is a {}, not a Pod: {EXPECTED}",
                    shown(other)
                ));
            }
            None => return Err(format!("items[{i}] has no kind: {EXPECTED}")),
        }
    }
    Ok(items)
}

/// A kind as one line may show it: control characters escaped, and no longer
/// than a kind's name can be.
fn shown(kind: &str) -> String {
    let short: String = kind.chars().take(63).collect();
    crate::say::escape(&short)
}
