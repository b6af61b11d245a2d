//! ARCHITECTURE.md's layout rules, read from the sources: every import between
//! the files of `src/`, between those of `injector/src` and between those of
//! `common/src`, points one way (no circle, a module and its own files
//! included), `tandem-common` depends on nothing, and neither a phase nor the
//! log reaches up into `cli` or `config`. Test files (`tests.rs`, `*_tests.rs`,
//! the files of a `tests` module's folder) are not modules of the program and
//! are left out.
//!
//! An import is a `crate::…` or `super::…` path, or a child module's name
//! followed by `::`, outside comments and the `#[cfg(test)]` part; it leads to
//! the deepest file its path names (`crate::value::url::HttpUrl` → `value/url`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// A file of `src/` by its module path: `value/url`; the library root is empty.
type Module = String;

/// The modules that must not import `cli` or `config` (nor any file under them).
const BELOW_START_UP: &[&str] = &[
    "child",
    "exit",
    "logger",
    "on_exit",
    "quit",
    "ready",
    "reap",
    "settings",
    "siblings",
    "termination_message",
    "value",
];

#[test]
fn no_file_of_src_imports_itself_through_others() {
    let graph = imports();
    assert!(graph.len() > 40, "{} files read", graph.len());
    if let Some(circle) = circle(&graph) {
        panic!("a circle of imports: {}", circle.join(" → "));
    }
}

#[test]
fn no_file_of_the_injector_imports_itself_through_others() {
    let graph = imports_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("injector/src"));
    assert!(graph.len() > 40, "{} files read", graph.len());
    if let Some(circle) = circle(&graph) {
        panic!(
            "a circle of imports in injector/src: {}",
            circle.join(" → ")
        );
    }
}

#[test]
fn the_shared_crate_imports_itself_in_one_direction_and_depends_on_nothing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("common");
    let graph = imports_in(&root.join("src"));
    assert!(graph.len() >= 5, "{} files read", graph.len());
    if let Some(circle) = circle(&graph) {
        panic!("a circle of imports in common/src: {}", circle.join(" → "));
    }
    let manifest = fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let mut section = "";
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
            assert!(
                !section.contains("dependencies]") || section == "[dependencies]",
                "{section}"
            );
        } else if section == "[dependencies]" && !line.is_empty() && !line.starts_with('#') {
            panic!("common/Cargo.toml: a dependency: {line}");
        }
    }
}

#[test]
fn the_circle_finder_finds_a_circle_and_passes_a_tree() {
    let graph = |edges: &[(&str, &str)]| {
        let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
        for (from, to) in edges {
            graph
                .entry(from.to_string())
                .or_default()
                .insert(to.to_string());
        }
        graph
    };
    let tree = graph(&[("a", "b"), ("a", "c"), ("b", "c"), ("c", "d")]);
    assert_eq!(circle(&tree), None);
    let round = graph(&[("a", "b"), ("b", "c"), ("c", "d"), ("d", "b")]);
    assert_eq!(circle(&round).unwrap(), ["b", "c", "d", "b"]);
}

/// A circle of imports in `graph`, if any, as the modules along it.
fn circle(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    let mut done = BTreeSet::new();
    graph.keys().find_map(|start| {
        let mut path = Vec::new();
        circle_from(start, graph, &mut path, &mut done)
    })
}

#[test]
fn phases_and_the_log_never_reach_up_into_cli_or_config() {
    let under = |m: &str, top: &str| m == top || m.starts_with(&format!("{top}/"));
    for (from, to) in imports() {
        if !BELOW_START_UP.iter().any(|top| under(&from, top)) {
            continue;
        }
        for target in to {
            assert!(
                !under(&target, "cli") && !under(&target, "config"),
                "{from} imports {target}"
            );
        }
    }
}

#[test]
fn the_reader_finds_the_kinds_of_import_it_claims_to() {
    let files: BTreeSet<Module> = ["", "a", "a/b", "a/c", "a/b/e", "d", "f", "g"]
        .map(String::from)
        .into();
    let text = "mod e;\nuse super::{c::X, self};\nuse crate::{d::{Y, Z}, g};\n\
                // crate::f::W\nfn h() { e::i() }\n#[cfg(test)]\nuse crate::f;";
    let found = imports_of("a/b", text, &files);
    assert_eq!(
        found,
        ["a", "a/b/e", "a/c", "d", "g"].map(String::from).into()
    );
}

/// Each file of `src/` (the binary's `main.rs` aside) and the files it imports.
fn imports() -> BTreeMap<Module, BTreeSet<Module>> {
    imports_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// Each file of the crate whose sources are under `root` (its `main.rs` and
/// test files aside) and the files it imports.
fn imports_in(root: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut texts = BTreeMap::new();
    read_dir(root, root, &mut texts);
    let files: BTreeSet<Module> = texts.keys().cloned().collect();
    texts
        .iter()
        .map(|(module, text)| (module.clone(), imports_of(module, text, &files)))
        .collect()
}

fn read_dir(root: &Path, dir: &Path, texts: &mut BTreeMap<Module, String>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            read_dir(root, &path, texts);
            continue;
        }
        let Some(relative) = path.strip_prefix(root).unwrap().to_str() else {
            continue;
        };
        let Some(module) = relative.strip_suffix(".rs") else {
            continue;
        };
        let test_file = module == "tests"
            || module.ends_with("/tests")
            || module.ends_with("_tests")
            || module.contains("tests/");
        let module = match module {
            _ if test_file => continue,
            "main" => continue,
            "lib" => "",
            other => other,
        };
        let text = fs::read_to_string(&path).unwrap();
        texts.insert(module.to_string(), text);
    }
}

/// The files `text`, the source of `module`, imports, among `files`.
fn imports_of(module: &str, text: &str, files: &BTreeSet<Module>) -> BTreeSet<Module> {
    let code: String = text
        .split("#[cfg(test)]")
        .next()
        .unwrap_or("")
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let parent: Vec<&str> = module.split('/').filter(|s| !s.is_empty()).collect();
    let parent = &parent[..parent.len().saturating_sub(1)];
    let mut paths: Vec<Vec<String>> = Vec::new();
    for (start, base) in [("crate::", Vec::new()), ("super::", parent.to_vec())] {
        for (at, _) in code.match_indices(start) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let rest = &code[at + start.len()..];
            let base: Vec<String> = base.iter().map(|s| s.to_string()).collect();
            paths.extend(expand(&base, rest));
        }
    }
    // A child module named and used: `mod files;` … `files::enter`.
    for line in code.lines() {
        let line = line.trim();
        let Some(child) = line
            .strip_prefix("pub mod ")
            .or_else(|| line.strip_prefix("mod "))
            .and_then(|rest| rest.strip_suffix(';'))
        else {
            continue;
        };
        if code.match_indices(&format!("{child}::")).any(|(at, _)| {
            let before = code[..at].chars().next_back();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
        }) {
            let mut path: Vec<String> = module
                .split('/')
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            path.push(child.to_string());
            paths.push(path);
        }
    }
    paths
        .into_iter()
        .filter_map(|path| deepest(&path, files))
        .filter(|found| found != module && !found.is_empty())
        .collect()
}

/// The paths that `rest` (what follows `crate::` or `super::`) names below
/// `base`: one, or one for each item of a `{…}` group.
fn expand(base: &[String], rest: &str) -> Vec<Vec<String>> {
    let mut path = base.to_vec();
    let mut rest = rest;
    loop {
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if end > 0 {
            path.push(rest[..end].to_string());
        }
        rest = &rest[end..];
        if let Some(after) = rest.strip_prefix("::") {
            rest = after;
        } else {
            break;
        }
    }
    let Some(group) = rest.strip_prefix('{') else {
        return vec![path];
    };
    // The group's items, split at its own commas (not those of a nested group).
    let mut items = Vec::new();
    let (mut depth, mut from) = (0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[from..i]);
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    items
        .into_iter()
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .flat_map(|item| match item {
            "self" => vec![path.clone()],
            item => expand(&path, item),
        })
        .collect()
}

/// The deepest file that a prefix of `path` names.
fn deepest(path: &[String], files: &BTreeSet<Module>) -> Option<Module> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].join("/"))
        .find(|candidate| files.contains(candidate))
}

/// A circle through `at`, if the imports from it lead back to a file on `path`.
fn circle_from(
    at: &Module,
    graph: &BTreeMap<Module, BTreeSet<Module>>,
    path: &mut Vec<Module>,
    done: &mut BTreeSet<Module>,
) -> Option<Vec<Module>> {
    if let Some(i) = path.iter().position(|m| m == at) {
        let mut circle = path[i..].to_vec();
        circle.push(at.clone());
        return Some(circle);
    }
    if done.contains(at) {
        return None;
    }
    path.push(at.clone());
    for next in graph.get(at).into_iter().flatten() {
        if let Some(circle) = circle_from(next, graph, path, done) {
            return Some(circle);
        }
    }
    path.pop();
    done.insert(at.clone());
    None
}
