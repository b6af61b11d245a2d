//! Every citation in the code and the docs can be followed inside the repository:
//! "SPEC §N" (and the bare "§N" of a list such as "SPEC §2, §9") names a section
//! or subsection of `docs/spec.md`; nothing cites an issue by its number or a
//! document the repository does not hold; and each relative Markdown link, with its
//! `#anchor`, and each backticked repository path names something that exists.

use std::collections::BTreeSet;
use std::path::Path;

/// The behaviour reference that "SPEC" means.
const SPEC: &str = "docs/spec.md";

/// What is searched, from the top of the repository: the code, the tests, the
/// benchmarks, the docs, the examples and the build and CI files.
const SCANNED: [&str; 20] = [
    "src",
    "injector",
    "tests",
    "benches",
    "docs",
    "examples",
    "fuzz",
    ".ci",
    "build",
    ".github",
    ".cargo",
    "build.rs",
    "README.md",
    "ARCHITECTURE.md",
    "CHANGELOG.md",
    "SECURITY.md",
    "BENCHMARKS.md",
    "Makefile",
    "Cargo.toml",
    "Dockerfile.distroless",
];

/// Generated or ignored trees under those (fuzz inputs are bytes, not prose), and
/// this file, which spells out what it looks for.
const SKIPPED: [&str; 6] = [
    "tests/docs/citations.rs",
    "target",
    "fuzz/seeds",
    "fuzz/corpus",
    "fuzz/artifacts",
    "fuzz/logs",
];

/// Phrases that point at documents outside the repository.
const OUTSIDE: [&str; 5] = [
    "the seeds'",
    "reliability issue",
    "Wrapper4",
    "SPEC.md",
    "STYLE.md",
];

/// The section sign, spelled out so this file cites nothing itself.
const SECTION: char = '\u{a7}';

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The UTF-8 files under `SCANNED`, by their paths from the top.
fn scanned_files() -> Vec<String> {
    let mut files = Vec::new();
    let mut todo: Vec<String> = SCANNED.iter().map(|p| (*p).to_owned()).collect();
    while let Some(path) = todo.pop() {
        let full = root().join(&path);
        if full.is_dir() {
            let entries = std::fs::read_dir(&full).unwrap_or_else(|e| panic!("{path}: {e}"));
            for entry in entries.filter_map(Result::ok) {
                let child = format!("{path}/{}", entry.file_name().to_string_lossy());
                let generated = SKIPPED
                    .iter()
                    .any(|s| child == *s || child.ends_with(&format!("/{s}")));
                if !generated {
                    todo.push(child);
                }
            }
        } else if std::fs::read_to_string(&full).is_ok() {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The section numbers of the spec: `## 5. Title` gives "5", `### 5.2 Title` "5.2".
fn sections(spec: &str) -> BTreeSet<String> {
    spec.lines()
        .filter(|line| line.starts_with("## ") || line.starts_with("### "))
        .filter_map(|line| line.trim_start_matches('#').split_whitespace().next())
        .map(|number| number.trim_end_matches('.'))
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .map(str::to_owned)
        .collect()
}

/// The 1-based line of byte offset `at`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// The number after a section sign: `5`, `5.2`; a sentence's full stop is not part.
fn section_number(after: &str) -> String {
    let digits = |s: &str| {
        s.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
    };
    let major = digits(after);
    let minor = after
        .strip_prefix(major.as_str())
        .and_then(|rest| rest.strip_prefix('.'))
        .map(digits)
        .unwrap_or_default();
    if minor.is_empty() {
        major
    } else {
        format!("{major}.{minor}")
    }
}

/// The last word of `text`, its trailing blanks left out.
fn last_word(text: &str) -> &str {
    let text = text.trim_end();
    let start = text
        .char_indices()
        .rev()
        .find(|(_, c)| !c.is_alphanumeric())
        .map_or(0, |(at, c)| at + c.len_utf8());
    &text[start..]
}

/// Whose section a section sign cites.
enum Owner<'a> {
    /// The spec's: after "SPEC", or in a list of its sections ("SPEC §2, §9").
    Spec,
    /// A public standard's, which a reader can look up: "RFC 9112 §2.2".
    Standard,
    /// A document the repository does not hold: "STYLE §7".
    Missing(&'a str),
}

/// Who owns a section sign that follows `before`.
fn owner(before: &str) -> Owner<'_> {
    let before = before.trim_end();
    let word = last_word(before);
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_digit()) {
        let standard = last_word(&before[..before.len() - word.len()]);
        return if standard == "RFC" {
            Owner::Standard
        } else {
            Owner::Missing(word)
        };
    }
    let document = word.len() > 1 && word.chars().all(|c| c.is_ascii_uppercase());
    if document && word != "SPEC" {
        Owner::Missing(word)
    } else {
        Owner::Spec
    }
}

/// Section signs that do not resolve: a number `docs/spec.md` lacks, or another
/// document's section; and a "SPEC" with no section sign after it (comment
/// markers and line breaks between are fine).
fn section_findings(text: &str, sections: &BTreeSet<String>) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices(SECTION) {
        let number = section_number(&text[at + SECTION.len_utf8()..]);
        if number.is_empty() {
            continue; // "§N" as a placeholder, not a citation
        }
        let what = match owner(&text[..at]) {
            Owner::Standard => continue,
            Owner::Spec if sections.contains(&number) => continue,
            Owner::Spec => format!("{SECTION}{number} is not a section of {SPEC}"),
            Owner::Missing(document) => {
                format!("cites {document} {SECTION}{number}, a document not in the repository")
            }
        };
        found.push((line_of(text, at), what));
    }
    for (at, _) in text.match_indices("SPEC") {
        let part_of_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let whole = !text[..at].chars().next_back().is_some_and(part_of_name)
            && !text[at + 4..].chars().next().is_some_and(part_of_name);
        let next =
            text[at + 4..].trim_start_matches(|c: char| c.is_whitespace() || "/!#*".contains(c));
        if whole && !next.starts_with(SECTION) {
            found.push((
                line_of(text, at),
                format!("SPEC without a section ({SPEC} {SECTION}N)"),
            ));
        }
    }
    found
}

/// Issues cited by number ("issue 22", "issues 22–25"), which a reader of the
/// repository cannot open: the fact itself belongs there, or a URL for another
/// project's issue; and the phrases of `OUTSIDE`.
fn outside_findings(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        for pair in words.windows(2) {
            let word = pair[0]
                .trim_start_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase();
            let next = pair[1].trim_start_matches('#');
            if (word == "issue" || word == "issues")
                && next.starts_with(|c: char| c.is_ascii_digit())
            {
                found.push((
                    number + 1,
                    format!("cites an issue by number: {:?}", pair.join(" ")),
                ));
            }
        }
        for phrase in OUTSIDE.iter().filter(|p| line.contains(*p)) {
            found.push((
                number + 1,
                format!("cites {phrase:?}, which is not in the repository"),
            ));
        }
    }
    found
}

/// A heading's anchor as GitHub makes it: lower case, punctuation dropped,
/// spaces as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown page's headings (outside fenced blocks).
fn anchors(page: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut found = BTreeSet::new();
    for line in page.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            found.insert(anchor(line.trim_start_matches('#')));
        }
    }
    found
}

/// Whether a path component is a placeholder (`fuzz/seeds/TARGET`, `tests/MODULE.rs`).
fn placeholder(component: &str) -> bool {
    let stem = component.split('.').next().unwrap_or(component);
    !stem.is_empty() && stem.chars().all(|c| c.is_ascii_uppercase() || c == '_')
}

/// Relative links of a Markdown file (`file`, from the top) that name no file or
/// no heading, and backticked repository paths (`tests/docs.rs`) of any file
/// that name nothing.
fn path_findings(file: &str, text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let dir = Path::new(file).parent().unwrap_or(Path::new(""));
    let exists = |path: &str| root().join(path).exists() || root().join(dir).join(path).exists();
    for (number, line) in text.lines().enumerate() {
        if file.ends_with(".md") {
            for piece in line.split("](").skip(1) {
                let target = piece.split(')').next().unwrap_or("");
                let external = target.contains("://") || target.starts_with("mailto:");
                if external || target.contains(char::is_whitespace) {
                    continue;
                }
                let (path, fragment) = target.split_once('#').unwrap_or((target, ""));
                let page = if path.is_empty() {
                    root().join(file)
                } else {
                    root().join(dir).join(path)
                };
                if !page.exists() {
                    found.push((number + 1, format!("link to {target}: no such file")));
                } else if !fragment.is_empty() && page.extension().is_some_and(|e| e == "md") {
                    let text = std::fs::read_to_string(&page).unwrap_or_default();
                    if !anchors(&text).contains(fragment) {
                        found.push((number + 1, format!("link to {target}: no such heading")));
                    }
                }
            }
        }
        for span in line.split('`').skip(1).step_by(2) {
            let path = span
                .split(':')
                .next()
                .unwrap_or(span)
                .trim_end_matches(['.', ',']);
            let tops = [
                "src/",
                "injector/",
                "tests/",
                "benches/",
                "docs/",
                "examples/",
                "fuzz/",
                ".ci/",
            ];
            let repository_path = tops.iter().any(|top| path.starts_with(top))
                && !path.contains(|c: char| c.is_whitespace() || "*{}$<>…|".contains(c));
            if repository_path && !exists(path) && !path.split('/').any(placeholder) {
                found.push((
                    number + 1,
                    format!("`{span}`: no such file in the repository"),
                ));
            }
        }
    }
    found
}

#[test]
fn every_citation_resolves_in_the_repository() {
    let sections = sections(&std::fs::read_to_string(root().join(SPEC)).expect(SPEC));
    let mut unresolved = Vec::new();
    for file in scanned_files() {
        let text = std::fs::read_to_string(root().join(&file)).expect("read again");
        let mut found = section_findings(&text, &sections);
        found.extend(outside_findings(&text));
        found.extend(path_findings(&file, &text));
        unresolved.extend(
            found
                .into_iter()
                .map(|(line, what)| format!("{file}:{line}: {what}")),
        );
    }
    assert!(
        unresolved.is_empty(),
        "citations that cannot be followed in the repository ({} of them):\n{}",
        unresolved.len(),
        unresolved.join("\n")
    );
}

#[test]
fn spec_has_sections_1_to_11_with_the_subsections_cited() {
    let sections = sections(&std::fs::read_to_string(root().join(SPEC)).expect(SPEC));
    for number in (1..=11)
        .map(|n| n.to_string())
        .chain(["5.1", "5.2", "5.3"].map(str::to_owned))
    {
        assert!(
            sections.contains(&number),
            "{SPEC} has no section {number}: {sections:?}"
        );
    }
}

#[test]
fn each_kind_of_unresolved_citation_is_found() {
    let sections: BTreeSet<String> = ["2", "5", "5.2", "9"].map(str::to_owned).into();
    let s = SECTION;
    let good = format!("(SPEC {s}2, {s}9) and SPEC\n    /// {s}5.2. RFC 9112 {s}2.2; SPEC_OPTIONS");
    assert_eq!(section_findings(&good, &sections), Vec::new());
    let bad = format!("SPEC {s}12, {s}5.7; STYLE {s}7.3; the contract in SPEC.");
    let lines: Vec<String> = section_findings(&bad, &sections)
        .into_iter()
        .map(|(_, m)| m)
        .collect();
    assert_eq!(lines.len(), 4, "{lines:#?}");
    let outside = "as issue 22 left it\nissues #22–25\nthe seeds' answer\nan issue with it";
    assert_eq!(
        outside_findings(outside)
            .iter()
            .map(|(l, _)| *l)
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );
    let links = "[a](docs/nothing.md) [b](spec.md#5-stopping-the-sidecars) [c](spec.md#no)";
    let found = path_findings(
        "docs/x.md",
        &format!("{links} `tests/nothing.rs` `fuzz/seeds/TARGET`"),
    );
    assert_eq!(found.len(), 3, "{found:#?}");
}
