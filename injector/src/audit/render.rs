//! The audit as a person reads it, a table at 80 columns, or as one JSON
//! object for programs (`--output json`). Names are printed with their control
//! characters escaped: the List comes from outside.

use serde_json::Value;

use super::{Audit, Pod};
use crate::say::escape;

/// The width the table keeps to.
pub const WIDTH: usize = 80;
/// Below this many columns left for the last column, it goes under the row.
const NARROWEST: usize = 24;
/// The indent of a last column put under its row.
const UNDER: usize = 4;

/// `audit` as one JSON object: `{"stuck": [{namespace, pod, job, owner,
/// sidecars}], "injection": [{namespace, pod, job, owner, would}]}`, its keys in
/// that order, `job` and `owner` null when there is none, and one Pod a line.
pub fn json(audit: &Audit) -> String {
    let stuck = audit.stuck.iter().map(|s| {
        let sidecars = Value::from(s.sidecars.clone());
        object(&s.pod, ("sidecars", sidecars))
    });
    let injection = audit.injection.iter().map(|i| {
        let would = Value::from(i.would.clone());
        object(&i.pod, ("would", would))
    });
    format!(
        "{{\n  \"stuck\": {},\n  \"injection\": {}\n}}\n",
        array(stuck),
        array(injection)
    )
}

/// One Pod's object, its keys in the documented order.
fn object(pod: &Pod, (key, last): (&str, Value)) -> String {
    let text = |s: &str| Value::from(s).to_string();
    let maybe = |s: &Option<String>| Value::from(s.clone()).to_string();
    format!(
        "{{\"namespace\": {}, \"pod\": {}, \"job\": {}, \"owner\": {}, \"{key}\": {last}}}",
        text(&pod.namespace),
        text(&pod.pod),
        maybe(&pod.job),
        maybe(&pod.owner)
    )
}

/// A JSON array of `items`, each on a line of its own.
fn array(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.map(|item| format!("    {item}")).collect();
    if items.is_empty() {
        return "[]".into();
    }
    format!("[\n{}\n  ]", items.join(",\n"))
}

/// `audit` as two tables, each sorted by namespace and owner: the Pods stuck on
/// their sidecars, then what the injection would do to every Pod that runs to
/// completion.
pub fn table(audit: &Audit) -> String {
    if audit.injection.is_empty() {
        return format!(
            "No Pod that runs to completion among the {} Pods read: nothing to audit.\n",
            audit.pods
        );
    }
    let mut out = String::new();
    if audit.stuck.is_empty() {
        out.push_str("No Pod that runs to completion is stuck on its sidecars.\n");
    } else {
        out.push_str(
            "Stuck on their sidecars (every job container has ended for good, these run on):\n",
        );
        let rows: Vec<[String; 4]> = audit
            .stuck
            .iter()
            .map(|s| row(&s.pod, &s.sidecars.join(", ")))
            .collect();
        grid(&mut out, ["NAMESPACE", "OWNER", "POD", "SIDECARS"], &rows);
    }
    out.push_str("\nWhat the injection would do to a Pod like each (once enabled):\n");
    let rows: Vec<[String; 4]> = audit
        .injection
        .iter()
        .map(|i| row(&i.pod, &i.would))
        .collect();
    grid(&mut out, ["NAMESPACE", "OWNER", "POD", "WOULD"], &rows);
    out
}

/// A row: the Pod's namespace, its owner (`-` for none) and name, then `last`.
fn row(pod: &Pod, last: &str) -> [String; 4] {
    let owner = pod.owner.as_deref().unwrap_or("-");
    [pod.namespace.as_str(), owner, pod.pod.as_str(), last].map(escape)
}

/// Appends `rows` under `head`: the first three columns as wide as their
/// widest cell, the last beside them, wrapped at word boundaries within
/// `WIDTH`; when it cannot be so in every row (too little room to wrap it, or
/// a word that does not fit), under each row.
fn grid(out: &mut String, head: [&str; 4], rows: &[[String; 4]]) {
    let widths: [usize; 3] = std::array::from_fn(|c| {
        let cells = rows.iter().map(|r| r[c].chars().count());
        cells.chain([head[c].len()]).max().unwrap_or(0)
    });
    let indent: usize = widths.iter().map(|w| w + 2).sum();
    let room = WIDTH.saturating_sub(indent);
    let fits = |text: &str| {
        let longest = text.split(' ').map(|w| w.chars().count()).max();
        text.chars().count() <= room || (room >= NARROWEST && longest <= Some(room))
    };
    let beside = rows.iter().all(|r| fits(&r[3]));
    let (at, width) = if beside {
        (indent, room)
    } else {
        (UNDER, WIDTH - UNDER)
    };
    let cells = |r: [&str; 4]| -> String {
        let line: String = (0..3)
            .map(|c| format!("{:<w$}  ", r[c], w = widths[c]))
            .collect();
        line
    };
    // The heading's last column stays beside it, whatever the room.
    out.push_str(&format!("{}{}\n", cells(head), head[3]));
    for r in rows {
        let mut line = cells([&r[0], &r[1], &r[2], &r[3]]);
        let mut lines = wrap(&r[3], width).into_iter();
        if beside {
            line.push_str(&lines.next().unwrap_or_default());
        }
        out.push_str(line.trim_end());
        out.push('\n');
        for more in lines {
            out.push_str(&format!("{:at$}{more}\n", ""));
        }
    }
}

/// `text` in lines of at most `width` characters, broken between words; a word
/// longer than `width` is broken too.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    let mut used = 0;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let chars: Vec<char> = word.chars().collect();
        for piece in chars.chunks(width) {
            if used > 0 && used + 1 + piece.len() > width {
                lines.push(std::mem::take(&mut line));
                used = 0;
            }
            if used > 0 {
                line.push(' ');
                used += 1;
            }
            line.extend(piece);
            used += piece.len();
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}
