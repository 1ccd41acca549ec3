//! Text helpers for drawing: display width, word wrapping, truncation, a time of day, and
//! writing a styled run into the buffer without going past a width. Every one of them measures
//! and draws text as `arbor_protocol::text::visible` shows it: a control or bidi character the
//! model or the workspace wrote appears as its escape (`\x1b`, `\u{202e}`), never dropped or
//! obeyed.

use std::borrow::Cow;

use arbor_protocol::Timestamp;
use arbor_protocol::text::visible;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use unicode_width::UnicodeWidthChar;

/// The display width of `text` as drawn.
pub fn width(text: &str) -> usize {
    visible(text).chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// `text` cut to `max` columns, with `…` when cut.
pub fn truncate(text: &str, max: usize) -> String {
    let text = &*visible(text);
    if width(text) <= max {
        return text.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > max - 1 {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// `text` padded with spaces (or cut) to exactly `cols` columns.
pub fn pad(text: &str, cols: usize) -> String {
    let cut = truncate(text, cols);
    let w = width(&cut);
    let mut out = cut;
    out.extend(std::iter::repeat_n(' ', cols.saturating_sub(w)));
    out
}

/// Wraps one line of text at `cols` columns, at spaces where it can; tabs become spaces and
/// other control characters their escapes. Always at least one (possibly empty) line.
pub fn wrap(text: &str, cols: usize) -> Vec<String> {
    let spaced = if text.contains('\t') {
        Cow::Owned(text.replace('\t', " "))
    } else {
        Cow::Borrowed(text)
    };
    let text = visible(&spaced);
    let cols = cols.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut used = 0;
    // Where the last space in `line` is, by bytes and columns after it.
    let mut last_space: Option<usize> = None;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > cols {
            match last_space {
                Some(at) if at > 0 => {
                    let rest = line.split_off(at);
                    lines.push(std::mem::take(&mut line));
                    line = rest.trim_start_matches(' ').to_string();
                    used = width(&line);
                }
                _ => {
                    lines.push(std::mem::take(&mut line));
                    used = 0;
                }
            }
            last_space = None;
        }
        if c == ' ' {
            last_space = Some(line.len());
        }
        line.push(c);
        used += w;
    }
    lines.push(line);
    lines
}

/// Writes `text` at `(x, y)` in `area`, no wider than the area allows from `x`; returns the
/// column after it.
pub fn put(buf: &mut Buffer, area: Rect, x: u16, y: u16, text: &str, style: Style) -> u16 {
    if y >= area.bottom() || x >= area.right() {
        return x;
    }
    let max = usize::from(area.right() - x);
    let (end, _) = buf.set_stringn(x, y, visible(text), max, style);
    end
}

/// `HH:MM:SS` of a time, UTC.
pub fn clock(at: Timestamp) -> String {
    let secs = at.as_millis().div_euclid(1000).rem_euclid(86_400);
    format!(
        "{:02}:{:02}:{:02}",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_breaks_at_spaces_and_cuts_long_words() {
        assert_eq!(wrap("hello wide world", 11), ["hello wide", "world"]);
        assert_eq!(wrap("abcdefgh", 3), ["abc", "def", "gh"]);
        assert_eq!(wrap("", 5), [""]);
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(pad("ab", 4), "ab  ");
    }

    #[test]
    fn controls_are_drawn_as_their_escapes() {
        assert_eq!(wrap("a\tb\x1b[2Jc", 80), ["a b\\x1b[2Jc"]);
        assert_eq!(width("\u{202e}ab"), 10);
        assert_eq!(truncate("\rabcdef", 5), "\\rab…");
        let area = Rect::new(0, 0, 20, 1);
        let mut buf = Buffer::empty(area);
        put(&mut buf, area, 0, 0, "x\rgit status", Style::default());
        let row: String = (0..20).map(|x| buf[(x, 0)].symbol().to_string()).collect();
        assert_eq!(row, "x\\rgit status       ");
    }
}
