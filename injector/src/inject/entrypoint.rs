//! What a container without `command` runs, wrapped in tandem: Kubernetes'
//! command/args rule over the image's `ENTRYPOINT` and `CMD` — no `args`:
//! `ENTRYPOINT` + `CMD`; `args`: `ENTRYPOINT` + `args` (with no `ENTRYPOINT`,
//! `CMD` or `args` alone is the command) — and where the entrypoint comes from:
//! the `tandem.dev/entrypoint.CONTAINER` annotation, else the registry's answer.

use std::collections::HashMap;

use serde_json::Value;

use crate::inject::report::{Found, Skip};
use crate::layout::{ENTRYPOINT_ANNOTATION, TANDEM};
use crate::registry::{Failure, ImageConfig};

/// What was found out, before planning, about the images of job containers
/// without `command` (see `inject::wanted`), by container name: the image's
/// configuration, or why there is none.
pub type Images = HashMap<String, Result<ImageConfig, Failure>>;

/// The container's new `command`, and its new `args` when they must be set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wrapped {
    /// `["/tandem/tandem", "--", ENTRYPOINT…]`.
    pub command: Vec<String>,
    /// The image's `CMD`, set as `args` because a `command` hides it; `None`
    /// leaves `args` as they are.
    pub args: Option<Vec<String>>,
}

/// The wrapped form of a container with no `command`, given its image's
/// `entrypoint` and `cmd` and its own `args` (empty: unset, as Kubernetes reads
/// them). `Err` when nothing would run.
pub fn wrap(entrypoint: &[String], cmd: &[String], own_args: &[String]) -> Result<Wrapped, String> {
    if entrypoint.is_empty() && cmd.is_empty() && own_args.is_empty() {
        return Err("its image has neither ENTRYPOINT nor CMD and it has no args".into());
    }
    let args = (own_args.is_empty() && !cmd.is_empty()).then(|| cmd.to_vec());
    let command = [TANDEM, "--"]
        .into_iter()
        .map(str::to_string)
        .chain(entrypoint.iter().cloned())
        .collect();
    Ok(Wrapped { command, args })
}

/// How container `name` of `pod`, which has no `command`, is wrapped (its
/// `image`, its `args`), and where its entrypoint came from: the annotation,
/// else the registry's answer in `images`; else why it is not.
pub fn without_command(
    pod: &Value,
    name: &str,
    image: Option<&str>,
    args: &[String],
    images: &Images,
) -> Result<(Wrapped, Found), Skip> {
    let (entrypoint, cmd, from) = match annotated(pod, name) {
        Some(Ok(words)) => (words, Vec::new(), Found::Annotation),
        Some(Err(why)) => return Err(Skip::BadAnnotation(why)),
        None => match images.get(name) {
            Some(Ok(config)) => (
                config.entrypoint.clone(),
                config.cmd.clone(),
                Found::Registry,
            ),
            Some(Err(failure)) => {
                return Err(Skip::Unread {
                    image: image.unwrap_or("?").to_string(),
                    failure: failure.clone(),
                });
            }
            None => return Err(Skip::NoCommand),
        },
    };
    let wrapped = wrap(&entrypoint, &cmd, args).map_err(|_| Skip::NothingToRun)?;
    Ok((wrapped, from))
}

/// The entrypoint the Pod's annotation gives container `name`: `None` without
/// the annotation, `Err` when it is not a JSON list of strings.
pub fn annotated(pod: &Value, name: &str) -> Option<Result<Vec<String>, String>> {
    let key = format!("{ENTRYPOINT_ANNOTATION}{name}");
    let value = &pod["metadata"]["annotations"][&key];
    if value.is_null() {
        return None;
    }
    let bad = || {
        format!(
            "annotation {key} is not a JSON list of strings such as [\"/app/run\", \"--x\"]: {value}"
        )
    };
    let Some(text) = value.as_str() else {
        return Some(Err(bad()));
    };
    let words = match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(list)) if !list.is_empty() => list
            .iter()
            .map(|w| w.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>(),
        _ => None,
    };
    Some(words.ok_or_else(bad))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::strings;
    use serde_json::json;

    /// Kubernetes' table: image ENTRYPOINT and CMD, container args (no command)
    /// → what runs; the wrapped container runs tandem, `--`, then the same.
    #[test]
    fn every_row_of_the_command_args_table() {
        type Words = &'static [&'static str];
        let rows: &[(Words, Words, Words, Words)] = &[
            // ENTRYPOINT, CMD, args → runs
            (
                &["/ep", "-e"],
                &["cmd1", "cmd2"],
                &[],
                &["/ep", "-e", "cmd1", "cmd2"],
            ),
            (
                &["/ep", "-e"],
                &["cmd1"],
                &["a1", "a2"],
                &["/ep", "-e", "a1", "a2"],
            ),
            (&["/ep"], &[], &[], &["/ep"]),
            (&["/ep"], &[], &["a1"], &["/ep", "a1"]),
            (&[], &["/cmd", "c1"], &[], &["/cmd", "c1"]),
            (&[], &["/cmd", "c1"], &["/a", "a1"], &["/a", "a1"]),
            (&[], &[], &["/a", "a1"], &["/a", "a1"]),
        ];
        for (entrypoint, cmd, args, runs) in rows {
            let w = wrap(&strings(entrypoint), &strings(cmd), &strings(args)).unwrap();
            assert_eq!(w.command[..2], strings(&[TANDEM, "--"]));
            let effective_args = w.args.clone().unwrap_or_else(|| strings(args));
            let after: Vec<String> = w.command[2..]
                .iter()
                .cloned()
                .chain(effective_args)
                .collect();
            assert_eq!(
                after,
                strings(runs),
                "{entrypoint:?} {cmd:?} {args:?}: {w:?}"
            );
            // The container's own args are never rewritten.
            if !args.is_empty() {
                assert_eq!(w.args, None);
            }
        }
    }

    #[test]
    fn an_image_with_nothing_to_run_is_an_error() {
        let err = wrap(&[], &[], &[]).unwrap_err();
        assert!(err.contains("neither ENTRYPOINT nor CMD"), "{err}");
    }

    #[test]
    fn the_annotation_gives_a_list_of_strings_or_says_why_not() {
        let pod = json!({"metadata": {"annotations": {
            "tandem.dev/entrypoint.job": "[\"/app/run\", \"--x\"]",
            "tandem.dev/entrypoint.bad": "/app/run --x",
            "tandem.dev/entrypoint.empty": "[]",
            "tandem.dev/entrypoint.nums": "[1]",
        }}});
        assert_eq!(
            annotated(&pod, "job"),
            Some(Ok(strings(&["/app/run", "--x"])))
        );
        assert_eq!(annotated(&pod, "other"), None);
        assert_eq!(annotated(&json!({}), "job"), None);
        for name in ["bad", "empty", "nums"] {
            let err = annotated(&pod, name).unwrap().unwrap_err();
            assert!(
                err.contains(&format!("tandem.dev/entrypoint.{name} is not a JSON list")),
                "{err}"
            );
        }
    }
}
