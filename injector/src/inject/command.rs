//! What each job container's command becomes (SPEC §10): wrapped as
//! `/tandem/tandem -- COMMAND`, wrapped from its image's entrypoint or the
//! annotation when it has no `command`, or left as it is with the reason.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::pod::Container;
use crate::inject::entrypoint::{self, Images, Wrapped};
use crate::inject::report::{Fate, Found, Report, Skip};
use crate::layout::TANDEM;

/// The job containers that run under tandem, and for those without `command`,
/// by index, their new command and args.
pub(super) struct Commands<'c, 'a> {
    pub wrapped: Vec<&'c Container<'a>>,
    pub found: HashMap<usize, Wrapped>,
}

/// Decides the fate of every job container in `main`, records it in `report`,
/// and returns the ones wrapped; `earlier`: an earlier review changed the Pod.
pub(super) fn decide<'c, 'a>(
    pod: &Value,
    main: &'c [Container<'a>],
    earlier: bool,
    images: &Images,
    report: &mut Report,
) -> Commands<'c, 'a> {
    let mut wrapped = Vec::new();
    let mut found = HashMap::new();
    for c in main.iter().filter(|c| c.is_job()) {
        let fate = match c.command.as_deref() {
            // A reinvocation: the containers it wrapped the first time.
            _ if earlier && c.runs_tandem() => Fate::Wrapped(Found::Earlier, String::new()),
            None | Some([]) if !earlier => {
                match entrypoint::without_command(pod, c.name, c.image, &c.args, images) {
                    Ok((how, from)) => {
                        found.insert(c.index, how);
                        Fate::Wrapped(from, String::new())
                    }
                    Err(skip) => Fate::Skipped(skip),
                }
            }
            None | Some([]) => Fate::Skipped(Skip::NoCommand),
            Some([first, ..]) if first.rsplit('/').next() == Some("tandem") => {
                Fate::Skipped(Skip::OwnTandem)
            }
            Some(_) if earlier => Fate::Skipped(Skip::AddedLater),
            Some(_) => Fate::Wrapped(Found::Spec, String::new()),
        };
        if matches!(fate, Fate::Wrapped(..)) {
            wrapped.push(c);
        }
        report.containers.push((c.name.to_string(), fate));
    }
    Commands { wrapped, found }
}

/// The operations that give container `c` (at JSON pointer `at`) its new
/// command: `how` when it had none, else tandem in front of its own.
pub(super) fn ops(at: &str, c: &Container, how: Option<&Wrapped>) -> Vec<Value> {
    match how {
        // `add`: the container has no `command` to replace.
        Some(how) => {
            let mut ops =
                vec![json!({"op": "add", "path": format!("{at}/command"), "value": how.command})];
            if let Some(args) = &how.args {
                ops.push(json!({"op": "add", "path": format!("{at}/args"), "value": args}));
            }
            ops
        }
        None => {
            let command: Vec<&str> = [TANDEM, "--"]
                .into_iter()
                .chain(c.command.iter().flatten().copied())
                .collect();
            vec![json!({"op": "replace", "path": format!("{at}/command"), "value": command})]
        }
    }
}
