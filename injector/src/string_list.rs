//! A JSON list of strings, as Kubernetes and the OCI image configuration
//! spell a command: a container's `command` and `args`, an image's
//! `Entrypoint` and `Cmd`. Missing or null is no list; anything else not a
//! list of strings is an error naming `what`.

use serde_json::Value;

/// The strings of `value`; `None` when it is null (or missing). `what` names
/// the field for the error, e.g. `spec.containers[0].command`.
pub fn read(value: &Value, what: impl Fn() -> String) -> Result<Option<Vec<&str>>, String> {
    match value {
        Value::Null => Ok(None),
        Value::Array(words) => words
            .iter()
            .map(Value::as_str)
            .collect::<Option<Vec<_>>>()
            .map(Some)
            .ok_or_else(|| format!("{} is not a list of strings", what())),
        _ => Err(format!("{} is not a list", what())),
    }
}

/// [`read`], owned, with null (or missing) as the empty list.
pub fn owned(value: &Value, what: impl Fn() -> String) -> Result<Vec<String>, String> {
    let words = read(value, what)?.unwrap_or_default();
    Ok(words.into_iter().map(str::to_string).collect())
}
