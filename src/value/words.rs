//! A command line given as one string (`TANDEM_ON_EXIT`, docker-compose-wait's
//! `WAIT_COMMAND`) split into words as a POSIX shell splits them, with nothing
//! expanded (SPEC §2, §11): there is no shell in a distroless image to do it.

/// What `split` expects, for the bad-value line of a setting it refuses.
pub const EXPECTED_WORDS: &str =
    "a command line with its quotes closed and no backslash at the very end";

/// Splits `text` into words as POSIX `sh` does before any expansion:
/// - blanks (space, tab, newline) outside quotes separate words;
/// - `'…'` keeps every character up to the next `'`;
/// - `"…"` keeps every character, except that a backslash before `$`, `` ` ``,
///   `"`, `\` or a newline escapes it (a backslash and newline are removed, as
///   a line continuation); before anything else it is kept;
/// - a backslash outside quotes keeps the next character (a newline: both go);
/// - everything else, `;`, `|`, `&`, `>`, `#`, `$`, `*` included, is an ordinary
///   character: no operators, comments, variables or globs.
///
/// An empty pair of quotes is an empty word. `Err` holds what was expected when
/// a quote is left open, or the text ends in a lone backslash (POSIX leaves that
/// undefined: `sh` keeps it, most splitters refuse it, and so does tandem).
pub fn split(text: &str) -> Result<Vec<String>, &'static str> {
    let mut words = Vec::new();
    // `None` between words; a quote starts a word even if it stays empty.
    let mut word: Option<String> = None;
    let mut chars = text.chars();
    let open = || EXPECTED_WORDS;
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => words.extend(word.take()),
            '\'' => {
                let quoted = word.get_or_insert_with(String::new);
                loop {
                    match chars.next().ok_or_else(open)? {
                        '\'' => break,
                        c => quoted.push(c),
                    }
                }
            }
            '"' => {
                let quoted = word.get_or_insert_with(String::new);
                loop {
                    match chars.next().ok_or_else(open)? {
                        '"' => break,
                        '\\' => match chars.next().ok_or_else(open)? {
                            '\n' => {}
                            c @ ('$' | '`' | '"' | '\\') => quoted.push(c),
                            c => {
                                quoted.push('\\');
                                quoted.push(c);
                            }
                        },
                        c => quoted.push(c),
                    }
                }
            }
            '\\' => match chars.next().ok_or_else(open)? {
                // A line continuation: nothing, not even an empty word.
                '\n' => {}
                c => word.get_or_insert_with(String::new).push(c),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        split(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    #[test]
    fn words_split_as_a_shell_splits_them() {
        let cases: &[(&str, &[&str])] = &[
            ("", &[]),
            (" \t\n", &[]),
            ("  a   b\tc\n", &["a", "b", "c"]),
            ("find . -name '*.rs'", &["find", ".", "-name", "*.rs"]),
            (
                r#"echo "a \"b\" \$HOME \x \` \\" ''"#,
                &["echo", r#"a "b" $HOME \x ` \"#, ""],
            ),
            (r"a\ b c\\d \'", &["a b", r"c\d", "'"]),
            ("x'y'\"z\"w", &["xyzw"]),
            ("'a\\' \"'\"", &["a\\", "'"]),
            ("\"\" '' x", &["", "", "x"]),
            ("'a  b'", &["a  b"]),
            // Line continuations, outside and inside double quotes; literal in single.
            ("a\\\nb \\\n c", &["ab", "c"]),
            ("\"a\\\nb\" 'c\\\nd'", &["ab", "c\\\nd"]),
        ];
        for (text, want) in cases {
            assert_eq!(words(text), *want, "{text:?}");
        }
    }

    #[test]
    fn operators_comments_variables_and_globs_are_ordinary() {
        assert_eq!(
            words("upload; rm -rf / | tee >out & #no $HOME * ~ `x` a=b (c)"),
            [
                "upload;", "rm", "-rf", "/", "|", "tee", ">out", "&", "#no", "$HOME", "*", "~",
                "`x`", "a=b", "(c)"
            ]
        );
        assert_eq!(words("#"), ["#"]);
    }

    #[test]
    fn an_open_quote_or_a_final_backslash_is_refused() {
        for bad in ["'a", "\"a", "a\\", "\"a\\", "\"a\\\"", "a 'b'c'", "\\"] {
            assert_eq!(split(bad), Err(EXPECTED_WORDS), "{bad:?}");
        }
    }
}

/// `split` against the `shlex` crate on random command lines. The two agree
/// except where shlex leaves POSIX `sh`, which `split` follows: shlex reads a `#`
/// that starts a word as a comment (SPEC §11 makes `#` ordinary: there is no
/// shell to comment in), and turns a backslash-newline before a blank into an
/// empty word (`sh` removes it as a line continuation). Inputs are drawn without
/// a `#` or a backslash-newline; the last test shows both differences.
#[cfg(test)]
mod against_shlex {
    use super::split;
    use fake_sidecar::Xorshift;

    /// Characters that matter to a splitter, and a few that must not.
    const ALPHABET: &[char] = &[
        'a', 'b', ' ', ' ', '\t', '\n', '\'', '\'', '"', '"', '\\', '\\', '$', '`', ';', '|', '*',
        'é',
    ];

    fn draw(rng: &mut Xorshift) -> String {
        let len = (rng.next_u64() % 24) as usize;
        let mut text = String::new();
        while text.chars().count() < len {
            let c = ALPHABET[(rng.next_u64() % ALPHABET.len() as u64) as usize];
            // Leave out the one place shlex departs from `sh` without a `#`.
            if c == '\n' && text.ends_with('\\') {
                continue;
            }
            text.push(c);
        }
        text
    }

    #[test]
    fn agrees_with_shlex_where_shlex_follows_posix() {
        let mut rng = Xorshift::new(0x5eed_0033);
        let mut refused = 0;
        for _ in 0..200_000 {
            let text = draw(&mut rng);
            let ours = split(&text).ok();
            let theirs = shlex::split(&text);
            assert_eq!(ours, theirs, "{text:?}");
            refused += usize::from(ours.is_none());
        }
        // Both outcomes were exercised, not only one.
        assert!((1_000..199_000).contains(&refused), "{refused} refused");
    }

    #[test]
    fn the_differences_are_the_documented_ones() {
        assert_eq!(split("a #b c").unwrap(), ["a", "#b", "c"]);
        assert_eq!(shlex::split("a #b c").unwrap(), ["a"]);
        assert_eq!(split("a \\\n b").unwrap(), ["a", "b"]);
        assert_eq!(shlex::split("a \\\n b").unwrap(), ["a", "", "b"]);
    }
}
