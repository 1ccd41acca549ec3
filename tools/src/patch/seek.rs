//! Locating a hunk's lines in a file: exact, then ever looser comparisons.

/// How strictly a pattern line must equal a file line. Tried in this order; the first level
/// with a match anywhere wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Exact,
    /// Trailing whitespace ignored.
    TrimEnd,
    /// Leading and trailing whitespace ignored.
    Trim,
    /// Trimmed, and typographic punctuation (curly quotes, dashes, non-breaking and other
    /// Unicode spaces) mapped to ASCII.
    Normalised,
}

const LEVELS: [Level; 4] = [Level::Exact, Level::TrimEnd, Level::Trim, Level::Normalised];

/// Finds where `pattern` occurs in `lines`, starting at or after `start`. With `at_end`, a match
/// ending at the last line is preferred over an earlier one at the same level. Returns the
/// index of the first matched line and the level that matched.
pub(crate) fn seek(
    lines: &[String],
    pattern: &[&str],
    start: usize,
    at_end: bool,
) -> Option<(usize, Level)> {
    if pattern.is_empty() {
        return Some((start.min(lines.len()), Level::Exact));
    }
    if pattern.len() > lines.len() {
        return None;
    }
    let last_start = lines.len() - pattern.len();
    if start > last_start {
        return None;
    }
    for level in LEVELS {
        let file: Vec<String> = lines.iter().map(|line| level.key(line)).collect();
        let wanted: Vec<String> = pattern.iter().map(|line| level.key(line)).collect();
        let matches_at = |at: usize| file[at..at + wanted.len()] == wanted[..];
        if at_end && matches_at(last_start) {
            return Some((last_start, level));
        }
        if let Some(at) = (start..=last_start).find(|at| matches_at(*at)) {
            return Some((at, level));
        }
    }
    None
}

impl Level {
    /// The form of `line` compared at this level.
    fn key(self, line: &str) -> String {
        match self {
            Self::Exact => line.to_string(),
            Self::TrimEnd => line.trim_end().to_string(),
            Self::Trim => line.trim().to_string(),
            Self::Normalised => line.trim().chars().map(ascii_punctuation).collect(),
        }
    }
}

/// Maps typographic punctuation to the ASCII a model is likely to have typed.
fn ascii_punctuation(c: char) -> char {
    match c {
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
        | '\u{2212}' => '-',
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|line| line.to_string()).collect()
    }

    #[test]
    fn each_level_is_tried_in_order() {
        let lines = file(&["a", "b  ", "  c  ", "say “hi” — now\u{00A0}ok", "b"]);
        assert_eq!(seek(&lines, &["b"], 0, false), Some((4, Level::Exact)));
        assert_eq!(
            seek(&lines, &["a", "b"], 0, false),
            Some((0, Level::TrimEnd))
        );
        assert_eq!(seek(&lines, &["c"], 0, false), Some((2, Level::Trim)));
        assert_eq!(
            seek(&lines, &["say \"hi\" - now ok"], 0, false),
            Some((3, Level::Normalised))
        );
        assert_eq!(seek(&lines, &["d"], 0, false), None);
    }

    #[test]
    fn the_search_starts_at_start_and_prefers_the_end_when_asked() {
        let lines = file(&["x", "y", "x", "y"]);
        assert_eq!(seek(&lines, &["x"], 1, false), Some((2, Level::Exact)));
        assert_eq!(seek(&lines, &["x", "y"], 0, false), Some((0, Level::Exact)));
        assert_eq!(seek(&lines, &["x", "y"], 0, true), Some((2, Level::Exact)));
        assert_eq!(seek(&lines, &["x", "y", "x", "y", "x"], 0, false), None);
        assert_eq!(seek(&lines, &["y"], 4, false), None);
    }
}
