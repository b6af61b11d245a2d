//! JSONPatch (RFC 6902) operations on the Pod's lists, shared by both routes'
//! planners: appending items to a list, made whole when the field is not there.

use serde_json::{Value, json};

/// Operations that add `items` to the list at `path`: the whole list when the
/// field is not there, else one append each.
pub(super) fn append(patch: &mut Vec<Value>, path: &str, exists: bool, items: Vec<Value>) {
    if exists {
        for item in items {
            patch.push(json!({"op": "add", "path": format!("{path}/-"), "value": item}));
        }
    } else {
        patch.push(json!({"op": "add", "path": path, "value": items}));
    }
}
