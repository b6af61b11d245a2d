//! A YAML writer for the few documents `tandem-injector policy` prints: block
//! maps and lists in the order they are built, plain scalars where YAML reads
//! them back as the same string, literal blocks for the multi-line CEL
//! expressions, and JSON's quoting (a subset of YAML's) for everything else.
//! Ours rather than a crate's: the structure is small and fixed, and the
//! output stays readable and stable byte for byte (the checked-in copy in
//! `deploy/` is compared with it).

use std::fmt::Write as _;

/// One YAML node, maps keeping the order they were built in.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A string.
    Str(String),
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A block list.
    List(Vec<Node>),
    /// A block map.
    Map(Vec<(String, Node)>),
}

/// A string node.
pub fn s(text: impl Into<String>) -> Node {
    Node::Str(text.into())
}

/// A map node from `(key, value)` pairs.
pub fn map<const N: usize>(pairs: [(&str, Node); N]) -> Node {
    Node::Map(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// A list of string nodes.
pub fn strs(items: &[&str]) -> Node {
    Node::List(items.iter().map(|i| s(*i)).collect())
}

/// The documents, each after a `---` line.
pub fn documents(docs: &[Node]) -> String {
    let mut out = String::new();
    for doc in docs {
        out.push_str("---\n");
        block(&mut out, doc, 0);
    }
    out
}

/// `node` as the value of a key or a list item whose line is already written
/// up to the indicator, at nesting `indent`.
fn block(out: &mut String, node: &Node, indent: usize) {
    let pad = " ".repeat(indent);
    match node {
        Node::Map(pairs) => {
            for (key, value) in pairs {
                let _ = write!(out, "{pad}{}:", scalar(key));
                value_after_indicator(out, value, indent);
            }
        }
        Node::List(items) => {
            for item in items {
                match item {
                    // A map item starts on the dash's line, its keys below aligned.
                    Node::Map(pairs) if !pairs.is_empty() => {
                        let mut nested = String::new();
                        block(&mut nested, item, indent + 2);
                        out.push_str(&pad);
                        out.push_str("- ");
                        out.push_str(&nested[indent + 2..]);
                    }
                    _ => {
                        out.push_str(&pad);
                        out.push('-');
                        value_after_indicator(out, item, indent);
                    }
                }
            }
        }
        scalar_node => {
            let _ = writeln!(out, "{pad}{}", inline(scalar_node));
        }
    }
}

/// The rest of a `key:` or `-` line and what hangs below it.
fn value_after_indicator(out: &mut String, value: &Node, indent: usize) {
    match value {
        Node::Map(pairs) if !pairs.is_empty() => {
            out.push('\n');
            block(out, value, indent + 2);
        }
        Node::List(items) if !items.is_empty() => {
            out.push('\n');
            block(out, value, indent + 2);
        }
        Node::Str(text) if text.contains('\n') => {
            out.push_str(" |-\n");
            let pad = " ".repeat(indent + 2);
            for line in text.lines() {
                if line.is_empty() {
                    out.push('\n');
                } else {
                    let _ = writeln!(out, "{pad}{line}");
                }
            }
        }
        other => {
            let _ = writeln!(out, " {}", inline(other));
        }
    }
}

/// A node written on one line.
fn inline(node: &Node) -> String {
    match node {
        Node::Str(text) => scalar(text),
        Node::Bool(b) => b.to_string(),
        Node::Int(n) => n.to_string(),
        Node::List(items) if items.is_empty() => "[]".into(),
        Node::Map(pairs) if pairs.is_empty() => "{}".into(),
        // Not reached: non-empty collections are written as blocks.
        Node::List(_) | Node::Map(_) => "null".into(),
    }
}

/// A string as a plain scalar when YAML 1.1 and 1.2 read it back as the same
/// string, else double-quoted.
fn scalar(text: &str) -> String {
    const WORDS: [&str; 12] = [
        "true", "false", "yes", "no", "on", "off", "null", "y", "n", "~", "", "-",
    ];
    let safe_chars = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c));
    let starts_well = text.starts_with(|c: char| c.is_ascii_alphabetic() || c == '/');
    let keyword = WORDS.contains(&text.to_ascii_lowercase().as_str());
    if safe_chars && starts_well && !keyword {
        text.to_string()
    } else {
        serde_json::Value::from(text).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lists_and_scalars_come_out_in_block_style_as_yaml_reads_them() {
        let doc = map([
            ("kind", s("Pod")),
            ("empty", strs(&[])),
            ("groups", strs(&["", "batch"])),
            ("on", s("yes")),
            ("n", Node::Int(3)),
            (
                "items",
                Node::List(vec![
                    map([("name", s("a")), ("ok", Node::Bool(true))]),
                    s("x: y"),
                ]),
            ),
            ("expression", s("a &&\n  b")),
        ]);
        let expected = "---\nkind: Pod\nempty: []\ngroups:\n  - \"\"\n  - batch\n\
                        \"on\": \"yes\"\n\"n\": 3\nitems:\n  - name: a\n    ok: true\n  - \"x: y\"\n\
                        expression: |-\n  a &&\n    b\n";
        assert_eq!(documents(&[doc]), expected);
    }
}
