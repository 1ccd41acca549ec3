//! The transcript pane: the selected agent's details, then its entries around the cursor.
//! Only the entries in view are wrapped; following, the pane shows the newest entry at the
//! bottom.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

use super::text::{put, truncate, wrap};
use super::tree::{status_text, tokens};
use crate::app::App;
use crate::theme::Theme;
use crate::transcript::{Entry, Transcript};

/// Lines above the entries: who the agent is and how it stands.
const HEADER: u16 = 3;

/// Draws the pane; `focused` marks the entry under the cursor.
pub fn draw(app: &mut App, buf: &mut Buffer, area: Rect, focused: bool) {
    let theme = app.theme;
    let Some(session) = app.session.as_ref() else {
        return;
    };
    let Some(row) = app.selected_id().and_then(|id| session.state.thread(id)) else {
        put(buf, area, area.x, area.y, "no agent selected", theme.dim());
        return;
    };
    let record = &row.record;
    let status = session.status(row);
    let mut line = format!(
        "{} · {} · {} · {}",
        record.meta.path,
        record.meta.nickname.as_deref().unwrap_or("-"),
        record.meta.role,
        record.meta.model
    );
    line = truncate(&line, usize::from(area.width));
    put(buf, area, area.x, area.y, &line, theme.title());
    let unread: Vec<_> = session.state.unread(record.id()).collect();
    let pending = session
        .figures
        .pending
        .get(&record.id())
        .copied()
        .unwrap_or(0);
    let x = put(
        buf,
        area,
        area.x,
        area.y + 1,
        &status_text(session, row, &status),
        theme.status(&status),
    );
    let detail = status
        .detail()
        .map(|d| format!(": {d}"))
        .unwrap_or_default();
    let facts = format!(
        "{} · {} · unread {} · approvals {} · tokens {} in / {} out",
        truncate(&detail.replace('\n', " "), 40),
        if session.driven() && !crate::session::Session::is_closed(row) {
            "resident"
        } else {
            "not resident"
        },
        unread.len(),
        pending,
        tokens(row.usage.input_tokens),
        tokens(row.usage.output_tokens),
    );
    put(buf, area, x, area.y + 1, &facts, Style::default());
    if let Some(mail) = unread.last() {
        let text = format!(
            "queued {} from {}: {}",
            mail.kind.as_str(),
            mail.sender(),
            mail.content.replace('\n', " ")
        );
        put(
            buf,
            area,
            area.x,
            area.y + 2,
            &truncate(&text, usize::from(area.width)),
            theme.dim(),
        );
    }
    let body = Rect {
        y: area.y + HEADER,
        height: area.height.saturating_sub(HEADER),
        ..area
    };
    app.transcript_height = usize::from(body.height);
    if let Some(transcript) = app.transcript.as_mut() {
        draw_entries(transcript, buf, body, focused, theme);
    }
}

/// The lines an entry takes at `cols` columns, each with its style.
fn entry_lines(entry: &Entry, cols: usize, theme: Theme) -> Vec<(String, Style)> {
    let mut out = Vec::new();
    let head = format!(
        "{} {:<8} {}",
        super::text::clock(entry.at),
        entry.kind.label(),
        entry.title
    );
    for line in wrap(head.trim_end(), cols) {
        out.push((line, theme.kind(entry.kind)));
    }
    let (body, hidden) = entry.shown_body();
    for line in body {
        for part in wrap(line, cols.saturating_sub(2)) {
            out.push((format!("  {part}"), Style::default()));
        }
    }
    if hidden > 0 {
        out.push((
            format!("  … {hidden} more lines (Enter shows them)"),
            theme.dim(),
        ));
    }
    out
}

fn height(entry: &Entry, cols: usize, theme: Theme) -> usize {
    entry_lines(entry, cols, theme).len()
}

/// Places the view so the cursor's entry shows, then draws from the top entry down.
fn draw_entries(t: &mut Transcript, buf: &mut Buffer, area: Rect, focused: bool, theme: Theme) {
    let rows = usize::from(area.height);
    let cols = usize::from(area.width);
    if rows == 0 || cols == 0 {
        return;
    }
    if t.entries.is_empty() {
        put(
            buf,
            area,
            area.x,
            area.y,
            "(nothing recorded yet)",
            theme.dim(),
        );
        return;
    }
    t.cursor = t.cursor.min(t.entries.len() - 1);
    if t.follow {
        t.cursor = t.entries.len() - 1;
    }
    place(t, rows, cols, theme);
    let mut y = area.y;
    let mut skip = t.top_skip;
    for (index, entry) in t.entries.iter().enumerate().skip(t.top) {
        let lines = entry_lines(entry, cols, theme);
        for (n, (text, style)) in lines.into_iter().enumerate() {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            if y >= area.bottom() {
                return;
            }
            let style = if focused && index == t.cursor && n == 0 {
                theme.selected()
            } else {
                style
            };
            put(buf, area, area.x, y, &text, style);
            y += 1;
        }
    }
}

/// Chooses the top entry (and the lines of it scrolled past) so the cursor's entry is in
/// view: at the bottom when it is below, at the top when it is above.
fn place(t: &mut Transcript, rows: usize, cols: usize, theme: Theme) {
    if t.top > t.cursor || t.top >= t.entries.len() {
        t.top = t.cursor;
        t.top_skip = 0;
    }
    // Lines from the top of the view to the end of the cursor's entry.
    let mut used = 0usize;
    let mut fits = true;
    for index in t.top..=t.cursor {
        used += height(&t.entries[index], cols, theme);
        if index == t.top {
            used = used.saturating_sub(t.top_skip);
        }
        if used > rows {
            fits = false;
            break;
        }
    }
    if fits && !t.follow {
        return;
    }
    // Bottom-align the cursor's entry.
    let mut top = t.cursor;
    let mut total = height(&t.entries[top], cols, theme);
    while top > 0 && total < rows {
        let above = height(&t.entries[top - 1], cols, theme);
        top -= 1;
        total += above;
    }
    t.top = top;
    t.top_skip = total.saturating_sub(rows);
    if t.top == t.cursor && t.top_skip > 0 && !t.follow {
        // The cursor's entry alone is taller than the pane: show its start.
        t.top_skip = 0;
    }
}
