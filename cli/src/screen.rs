//! `arbor exec`'s stderr on a terminal, owned in one place: lines printed once, a live area
//! under them redrawn in place (the summary), and the approval prompt. Everything that writes
//! to the terminal while a run goes on goes through here, so nothing erases anything else:
//! while a prompt is open the live area is put away and lines wait, so the question, its keys
//! and what the user types stay where they are until the answer; then the waiting lines are
//! printed and the live area comes back. With stderr not a terminal there is no live area and
//! lines are printed as they come.

use std::io::Write;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The terminal's state as arbor drew it.
#[derive(Debug, Default)]
struct Screen {
    /// Lines of the live area on the terminal now (the cursor ends the last one).
    drawn: usize,
    /// The live area's lines, drawn again after a line is printed.
    live: Vec<String>,
    /// A prompt is open: it owns the bottom of the terminal.
    prompting: bool,
    /// Lines that came while a prompt was open.
    held: Vec<String>,
}

static SCREEN: Mutex<Screen> = Mutex::new(Screen {
    drawn: 0,
    live: Vec::new(),
    prompting: false,
    held: Vec::new(),
});

/// The one screen; its state stays consistent through a panic elsewhere (each update is one
/// write), so a poisoned lock is taken over.
fn screen() -> MutexGuard<'static, Screen> {
    SCREEN.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Screen {
    /// Erases the live area, leaving the cursor at the start of its first line.
    fn erase(&mut self, out: &mut impl Write) {
        if self.drawn == 0 {
            return;
        }
        let _ = write!(out, "\r\x1b[2K");
        for _ in 1..self.drawn {
            let _ = write!(out, "\x1b[1A\x1b[2K");
        }
        self.drawn = 0;
    }

    /// Draws the live area, each line cut to the terminal's width so none wraps.
    fn draw(&mut self, out: &mut impl Write) {
        if self.prompting || self.live.is_empty() {
            return;
        }
        let width = arbor_tui::terminal_width().map_or(usize::MAX, |w| usize::from(w).max(2) - 1);
        let text: Vec<String> = self.live.iter().map(|line| cut(line, width)).collect();
        let _ = write!(out, "{}", text.join("\n"));
        self.drawn = text.len();
    }
}

/// `line` as at most `width` characters, `…` at the end of a cut one.
fn cut(line: &str, width: usize) -> String {
    if line.chars().count() <= width {
        return line.to_string();
    }
    let kept: String = line.chars().take(width.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// Prints `line` above the live area (held while a prompt is open). The live area is put
/// away for it and comes back at the next [`live`] (the printer draws it after each batch of
/// events, and every second).
pub fn line(text: &str) {
    let mut screen = screen();
    if screen.prompting {
        screen.held.push(text.to_string());
        return;
    }
    let mut err = std::io::stderr().lock();
    screen.erase(&mut err);
    let _ = writeln!(err, "{text}");
    let _ = err.flush();
}

/// Sets the live area's lines and draws them (on a terminal; see `summary::wanted`).
pub fn live(lines: Vec<String>) {
    let mut screen = screen();
    if screen.prompting {
        screen.live = lines;
        return;
    }
    let mut err = std::io::stderr().lock();
    screen.erase(&mut err);
    screen.live = lines;
    screen.draw(&mut err);
    let _ = err.flush();
}

/// Ends the live area: its last state stays on the terminal as plain lines.
pub fn finish() {
    let mut screen = screen();
    let mut err = std::io::stderr().lock();
    if screen.drawn > 0 {
        let _ = writeln!(err);
    }
    screen.drawn = 0;
    screen.live.clear();
    let _ = err.flush();
}

/// Opens a prompt: the live area is put away and `text` (the question, ending with its keys,
/// without a newline) is written where the user answers.
pub fn open_prompt(text: &str) {
    let mut screen = screen();
    let mut err = std::io::stderr().lock();
    screen.erase(&mut err);
    screen.prompting = true;
    let _ = write!(err, "{text}");
    let _ = err.flush();
}

/// Writes more of an open prompt (a diff asked for, a retry), where the user answers.
pub fn prompt_more(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{text}");
    let _ = err.flush();
}

/// Closes the prompt: the lines that came meanwhile are printed, and the live area is back.
pub fn close_prompt() {
    let mut screen = screen();
    let mut err = std::io::stderr().lock();
    screen.prompting = false;
    for line in std::mem::take(&mut screen.held) {
        let _ = writeln!(err, "{line}");
    }
    screen.draw(&mut err);
    let _ = err.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_area_is_erased_line_by_line_and_cut_to_the_width() {
        let mut screen = Screen {
            live: vec!["  /root/a  thinking… (1s)".into(), "counts".into()],
            ..Screen::default()
        };
        let mut out = Vec::new();
        screen.draw(&mut out);
        assert_eq!(screen.drawn, 2);
        screen.erase(&mut out);
        let text = String::from_utf8(out).expect("utf-8");
        assert!(text.ends_with("counts\r\x1b[2K\x1b[1A\x1b[2K"), "{text:?}");
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
    }
}
