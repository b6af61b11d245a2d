//! Booleans (SPEC §2): `true`/`false`, `1`/`0`, `yes`/`no`, any case.

/// Parses `true`/`false`, `1`/`0`, `yes`/`no` in any case.
///
/// Surrounding blanks are ignored: YAML manifests make them easy to add by accident.
pub fn parse(s: &str) -> Result<bool, &'static str> {
    let s = s.trim();
    let is = |word: &str| s.eq_ignore_ascii_case(word);
    if is("true") || is("1") || is("yes") {
        Ok(true)
    } else if is("false") || is("0") || is("no") {
        Ok(false)
    } else {
        Err("true or false (or 1/0, yes/no)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_bool_table() {
        let cases: &[(&str, Result<bool, ()>)] = &[
            ("true", Ok(true)),
            ("TRUE", Ok(true)),
            ("True", Ok(true)),
            ("1", Ok(true)),
            ("yes", Ok(true)),
            ("YeS", Ok(true)),
            (" true\n", Ok(true)),
            ("false", Ok(false)),
            ("FALSE", Ok(false)),
            ("0", Ok(false)),
            ("no", Ok(false)),
            ("No", Ok(false)),
            ("\tno ", Ok(false)),
            ("", Err(())),
            ("  ", Err(())),
            ("t", Err(())),
            ("y", Err(())),
            ("on", Err(())),
            ("off", Err(())),
            ("2", Err(())),
            ("01", Err(())),
            ("truee", Err(())),
            ("tru\u{e9}", Err(())),
        ];
        for (input, want) in cases {
            assert_eq!(parse(input).map_err(|_| ()), *want, "input {input:?}");
        }
    }
}
