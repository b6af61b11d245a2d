//! How both programs lay out `--help`: within 80 columns (a classic terminal),
//! each option's text wrapped at spaces in its column.

/// `--help` fits a classic terminal, in both programs.
pub const HELP_WIDTH: usize = 80;

/// Breaks `text` at spaces into lines of at most `width` characters (a longer
/// word stands alone), appending them to `lines`.
pub fn wrap<'a>(text: &'a str, width: usize, lines: &mut Vec<&'a str>) {
    let mut rest = text.trim();
    while rest.chars().count() > width {
        let limit = rest
            .char_indices()
            .nth(width + 1)
            .map_or(rest.len(), |(i, _)| i);
        let cut = rest[..limit]
            .rfind(' ')
            .or_else(|| rest.find(' '))
            .unwrap_or(rest.len());
        lines.push(&rest[..cut]);
        rest = rest[cut..].trim_start();
    }
    lines.push(rest);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_break_at_spaces_within_the_width_and_a_long_word_stands_alone() {
        let mut lines = Vec::new();
        wrap("  one two three fourteen-letters x  ", 9, &mut lines);
        assert_eq!(lines, ["one two", "three", "fourteen-letters", "x"]);
        for line in lines.iter().filter(|l| !l.contains('-')) {
            assert!(line.chars().count() <= 9, "{line:?}");
        }
    }
}
