//! Windows over the panes: the help with every key, the approval queue with the selected
//! request's details (a patch's or a merge's diff first, `d` for all of it), confirmations.

use arbor_agent_graph::{ApprovalOutcome, ApprovalRecord};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::{Block, Clear, Widget};

use super::text::{put, truncate, wrap};
use crate::app::{App, Confirm};
use crate::theme::Theme;
use crate::transcript::{DIFF_HEADING, action_lines};

/// Every key, as the help overlay shows it.
pub const HELP: &[(&str, &str)] = &[
    (
        "Tab / Shift-Tab",
        "next / previous pane: tree, transcript, composer",
    ),
    ("↑ ↓  k j", "move (tree: agents; transcript: entries)"),
    ("PgUp PgDn", "move a page"),
    (
        "g G  Home End",
        "first / last (transcript: G follows new lines)",
    ),
    (
        "← →  h l",
        "tree: collapse / expand a branch (← on a leaf: parent)",
    ),
    ("Space", "tree: fold a branch; transcript: fold an entry"),
    (
        "Enter",
        "tree: write to the agent; transcript: show a folded entry",
    ),
    ("i  m", "write to the selected agent"),
    (
        "Enter (writing)",
        "send a follow-up: wakes the agent (to /root: its next turn)",
    ),
    (
        "Ctrl-O  Alt-Enter",
        "send queue-only mail (does not wake it)",
    ),
    ("Esc", "leave the composer (the text stays)"),
    (
        "A",
        "approval queue: y allow once, s allow for the session,",
    ),
    ("", "n deny, o override a denial, g go to the requester,"),
    ("", "d a patch's or a merge's whole diff"),
    ("x", "interrupt the selected agent's turn"),
    ("X", "close the selected agent (asks first)"),
    ("c", "show or hide closed branches"),
    ("/", "find an agent by path or nickname"),
    ("?", "this help"),
    ("q  Ctrl-C", "quit (asks first when this UI drives the run)"),
];

/// A rectangle of at most `w`×`h` in the middle of `area`.
fn centred(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

/// A cleared, framed window; returns its inside.
fn window(buf: &mut Buffer, area: Rect, title: &str, theme: Theme) -> Rect {
    Clear.render(area, buf);
    let block = Block::bordered()
        .title(title.to_string())
        .title_style(theme.title());
    let inner = block.inner(area);
    block.render(area, buf);
    inner
}

pub fn help(buf: &mut Buffer, area: Rect, theme: Theme) {
    let rect = centred(area, 78, HELP.len() as u16 + 3);
    let inner = window(buf, rect, " keys (any key closes) ", theme);
    for (i, (keys, what)) in HELP.iter().enumerate() {
        let y = inner.y + i as u16;
        let x = put(
            buf,
            inner,
            inner.x,
            y,
            &format!("{keys:<18}"),
            theme.title(),
        );
        put(buf, inner, x, y, what, ratatui::style::Style::default());
    }
}

pub fn confirm(buf: &mut Buffer, area: Rect, confirm: &Confirm, theme: Theme) {
    let text = match confirm {
        Confirm::Close { target } => {
            format!("Close {target}? It and its descendants stop; its path becomes free.")
        }
        Confirm::Quit => {
            "Quit? This UI drives the run: running turns are interrupted and saved, and \
             `arbor resume` or `arbor ui` picks the session up again."
                .to_string()
        }
    };
    let rect = centred(area, 60, 7);
    let inner = window(buf, rect, " confirm ", theme);
    for (y, line) in (inner.y..).zip(wrap(&text, usize::from(inner.width))) {
        put(
            buf,
            inner,
            inner.x,
            y,
            &line,
            ratatui::style::Style::default(),
        );
    }
    put(
        buf,
        inner,
        inner.x,
        inner.bottom().saturating_sub(1),
        "y: yes   any other key: no",
        theme.warn(),
    );
}

/// One line of the queue: state, requester, command.
fn summary(record: &ApprovalRecord) -> String {
    let state = match record.outcome {
        ApprovalOutcome::Pending => "pending".to_string(),
        other => format!(
            "{} by {}",
            other.as_str(),
            record.decided_by.map_or("-", |by| by.as_str())
        ),
    };
    let command = record.action["command"]
        .as_str()
        .map_or_else(|| record.action.to_string(), str::to_string);
    format!(
        "{state:<18} {}  {}",
        record.requester,
        command.replace('\n', " ")
    )
}

pub fn approvals(app: &App, buf: &mut Buffer, area: Rect, selected: usize) {
    let theme = app.theme;
    let list = app.approvals();
    let rect = centred(
        area,
        area.width.saturating_sub(4).max(20),
        area.height.saturating_sub(2).max(5),
    );
    let inner = window(buf, rect, " approvals ", theme);
    if list.is_empty() {
        put(
            buf,
            inner,
            inner.x,
            inner.y,
            "no request waits for an answer (Esc closes)",
            theme.dim(),
        );
        return;
    }
    let selected = selected.min(list.len() - 1);
    let cols = usize::from(inner.width);
    let list_rows = (usize::from(inner.height) / 3).clamp(1, 8);
    let first = selected.saturating_sub(list_rows - 1);
    for (i, record) in list.iter().enumerate().skip(first).take(list_rows) {
        let y = inner.y + (i - first) as u16;
        let style = if i == selected {
            theme.selected()
        } else if record.outcome == ApprovalOutcome::Pending {
            theme.warn()
        } else {
            theme.dim()
        };
        put(
            buf,
            inner,
            inner.x,
            y,
            &truncate(&summary(record), cols),
            style,
        );
    }
    let record = list[selected];
    let mut lines = vec![format!("request {} from {}", record.id, record.requester)];
    lines.extend(action_lines(&record.action));
    if let Some(why) = &record.justification {
        lines.push(format!("justification: {why}"));
    }
    if record.outcome != ApprovalOutcome::Pending {
        lines.push(format!(
            "verdict: {} by {}{}",
            record.outcome.as_str(),
            record.decided_by.map_or("-", |by| by.as_str()),
            record
                .risk_level
                .as_deref()
                .map(|r| format!(", risk {r}"))
                .unwrap_or_default()
        ));
        if let Some(rationale) = &record.rationale {
            lines.push(format!("rationale: {rationale}"));
        }
    }
    let has_diff = arbor_orchestrator::action_diff(&record.action).is_some();
    let keys = match (record.outcome == ApprovalOutcome::Pending, has_diff) {
        (true, true) => {
            "y allow once · s allow for the session · n deny · d the whole diff · g go to \
             requester · Esc close"
        }
        (true, false) => {
            "y allow once · s allow for the session · n deny · g go to requester · Esc close"
        }
        (false, true) => {
            "o override: let its identical retry run once · d the whole diff · Esc close"
        }
        (false, false) => {
            "o override: let its identical retry run once · g go to requester · Esc close"
        }
    };
    let top = inner.y + list_rows as u16 + 1;
    let bottom = inner.bottom().saturating_sub(1);
    let mut y = top;
    let mut in_diff = false;
    'out: for line in &lines {
        in_diff = (in_diff && line.starts_with("  ")) || line == DIFF_HEADING;
        let style = if in_diff {
            diff_style(line.strip_prefix("  ").unwrap_or(line), theme)
        } else {
            ratatui::style::Style::default()
        };
        for part in wrap(line, cols) {
            if y >= bottom {
                break 'out;
            }
            put(buf, inner, inner.x, y, &part, style);
            y += 1;
        }
    }
    put(
        buf,
        inner,
        inner.x,
        bottom,
        &truncate(keys, cols),
        theme.title(),
    );
}

/// The colour of one line of a diff: added, removed, a file or hunk header, context.
fn diff_style(line: &str, theme: Theme) -> ratatui::style::Style {
    if line.starts_with("+++") || line.starts_with("---") || line.starts_with("***") {
        theme.title()
    } else if line.starts_with('+') {
        theme.good()
    } else if line.starts_with('-') {
        theme.error()
    } else if line.starts_with("@@") || line.starts_with("diff ") {
        theme.dim()
    } else {
        ratatui::style::Style::default()
    }
}

/// The whole diff of the queue's `selected` request, from its line `scroll`, one line per row
/// (long lines cut at the window's edge).
pub fn diff(app: &App, buf: &mut Buffer, area: Rect, selected: usize, scroll: usize) {
    let theme = app.theme;
    let list = app.approvals();
    let rect = centred(
        area,
        area.width.saturating_sub(2).max(20),
        area.height.max(5),
    );
    let Some(record) = list.get(selected.min(list.len().saturating_sub(1))) else {
        return;
    };
    let inner = window(buf, rect, &format!(" diff of {} ", record.id), theme);
    let Some(diff) = arbor_orchestrator::action_diff(&record.action) else {
        return;
    };
    let cols = usize::from(inner.width);
    let rows = usize::from(inner.height.saturating_sub(1));
    let lines: Vec<&str> = diff.lines().collect();
    let scroll = scroll.min(lines.len().saturating_sub(rows));
    for (y, line) in (inner.y..).zip(lines.iter().skip(scroll).take(rows)) {
        put(
            buf,
            inner,
            inner.x,
            y,
            &truncate(line, cols),
            diff_style(line, theme),
        );
    }
    let shown = (scroll + rows).min(lines.len());
    let keys = format!(
        "lines {}–{shown} of {} · ↑ ↓ PgUp PgDn g G move · Esc back to the queue",
        (scroll + 1).min(shown),
        lines.len()
    );
    put(
        buf,
        inner,
        inner.x,
        inner.bottom().saturating_sub(1),
        &truncate(&keys, cols),
        theme.title(),
    );
}
