//! Comma-separated lists (SPEC §2): `GENERIC_QUIT_ENDPOINTS`, `TANDEM_READY_URLS`,
//! `TANDEM_MESH` and the peers' lists.

/// Splits a comma-separated list, trimming blanks and dropping empty items.
pub fn split(s: &str) -> Vec<&str> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_list_trims_and_drops_blanks() {
        let cases: &[(&str, &[&str])] = &[
            ("", &[]),
            (" ", &[]),
            (",,", &[]),
            ("a", &["a"]),
            ("a,b", &["a", "b"]),
            (" a , b ,", &["a", "b"]),
            (
                "http://a:1/x, ,http://b:2/y",
                &["http://a:1/x", "http://b:2/y"],
            ),
            ("\ta\n,b", &["a", "b"]),
        ];
        for (input, want) in cases {
            assert_eq!(split(input), *want, "input {input:?}");
        }
    }
}
