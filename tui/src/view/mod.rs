//! Drawing a frame: the tree pane beside the transcript pane, the composer, the status line
//! and a line for notices or key hints; overlays on top. A terminal too small for that gets a
//! message saying so instead.

mod overlay;
mod text;
mod transcript;
mod tree;

pub use overlay::HELP;
pub use text::{truncate, wrap};
pub use tree::tokens;

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::Style;

use crate::app::{App, Focus, Overlay, SentState};
use crate::session::Driver;
use text::put;

/// The smallest terminal the panes are drawn in.
pub const MIN_WIDTH: u16 = 40;
pub const MIN_HEIGHT: u16 = 10;

/// Draws the whole UI into `frame`.
pub fn draw(app: &mut App, frame: &mut Frame<'_>) {
    let area = frame.area();
    let cursor = draw_buffer(app, frame.buffer_mut(), area);
    if let Some(position) = cursor {
        frame.set_cursor_position(position);
    }
    app.dirty = false;
}

/// Draws into `buf`; returns where the terminal's cursor goes (in the composer).
pub fn draw_buffer(app: &mut App, buf: &mut Buffer, area: Rect) -> Option<Position> {
    let theme = app.theme;
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let text = format!(
            "arbor ui needs at least {MIN_WIDTH}×{MIN_HEIGHT} (this is {}×{}); q quits",
            area.width, area.height
        );
        for (y, line) in (area.y..).zip(wrap(&text, usize::from(area.width.max(1)))) {
            put(buf, area, area.x, y, &line, theme.warn());
        }
        return None;
    }
    let body = Rect {
        height: area.height - 3,
        ..area
    };
    let composer = Rect {
        y: area.bottom() - 3,
        height: 1,
        ..area
    };
    let status = Rect {
        y: area.bottom() - 2,
        height: 1,
        ..area
    };
    let hint = Rect {
        y: area.bottom() - 1,
        height: 1,
        ..area
    };
    if app.session.is_some() {
        let tree_width = (area.width * 2 / 5).clamp(30, 110).min(area.width - 10);
        let tree = Rect {
            width: tree_width,
            ..body
        };
        let sep = Rect {
            x: body.x + tree_width,
            width: 1,
            ..body
        };
        let right = Rect {
            x: body.x + tree_width + 1,
            width: body.width - tree_width - 1,
            ..body
        };
        tree::draw(app, buf, tree, app.focus == Focus::Tree);
        for y in sep.top()..sep.bottom() {
            put(buf, sep, sep.x, y, "│", theme.dim());
        }
        transcript::draw(app, buf, right, app.focus == Focus::Transcript);
    } else {
        welcome(buf, body, theme);
    }
    let cursor = draw_composer(app, buf, composer);
    draw_status(app, buf, status);
    draw_hint(app, buf, hint);
    match app.overlay.clone() {
        None => {}
        Some(Overlay::Help) => overlay::help(buf, body, theme),
        Some(Overlay::Confirm(confirm)) => overlay::confirm(buf, body, &confirm, theme),
        Some(Overlay::Approvals { selected }) => overlay::approvals(app, buf, body, selected),
        Some(Overlay::Diff { selected, scroll }) => {
            overlay::diff(app, buf, body, selected, scroll);
        }
        Some(Overlay::Find { query }) => {
            clear_line(buf, composer);
            let x = put(
                buf,
                composer,
                composer.x,
                composer.y,
                "find › ",
                theme.title(),
            );
            let end = put(buf, composer, x, composer.y, &query, Style::default());
            return Some(Position::new(end.min(composer.right() - 1), composer.y));
        }
    }
    if app.overlay.is_some() { None } else { cursor }
}

fn clear_line(buf: &mut Buffer, area: Rect) {
    put(
        buf,
        area,
        area.x,
        area.y,
        &" ".repeat(usize::from(area.width)),
        Style::default(),
    );
}

fn welcome(buf: &mut Buffer, area: Rect, theme: crate::theme::Theme) {
    let lines = [
        "arbor: a new session.",
        "",
        "Type the task for /root below and press Enter. The tree, its agents' transcripts",
        "and their approval requests show here as the session runs. ? lists the keys.",
    ];
    for (i, line) in lines.iter().enumerate() {
        put(
            buf,
            area,
            area.x + 1,
            area.y + 1 + i as u16,
            line,
            if i == 0 {
                theme.title()
            } else {
                Style::default()
            },
        );
    }
}

fn draw_composer(app: &App, buf: &mut Buffer, area: Rect) -> Option<Position> {
    let theme = app.theme;
    let label = match (&app.session, app.selected_path()) {
        (None, _) => "task for /root › ".to_string(),
        (Some(_), Some(path)) => format!("to {path} › "),
        (Some(_), None) => "to — › ".to_string(),
    };
    let focused = app.focus == Focus::Composer;
    let label_style = if focused { theme.title() } else { theme.dim() };
    let x = put(
        buf,
        area,
        area.x,
        area.y,
        &truncate(&label, usize::from(area.width / 2)),
        label_style,
    );
    let room = usize::from(area.right().saturating_sub(x + 1));
    // Show the end of a long text, where the cursor usually is.
    let chars: Vec<char> = app.composer.text.chars().collect();
    let start = app.composer.cursor.saturating_sub(room);
    let shown: String = chars.iter().skip(start).take(room).collect();
    if shown.is_empty() && !focused {
        put(
            buf,
            area,
            x,
            area.y,
            "i writes to the selected agent",
            theme.dim(),
        );
    } else {
        put(buf, area, x, area.y, &shown, Style::default());
    }
    let before: String = chars[start..app.composer.cursor.min(chars.len())]
        .iter()
        .collect();
    let cx = x + text::width(&before) as u16;
    focused.then(|| Position::new(cx.min(area.right() - 1), area.y))
}

fn draw_status(app: &App, buf: &mut Buffer, area: Rect) {
    let theme = app.theme;
    let Some(session) = &app.session else {
        let text = match app.sent.last() {
            Some(sent) if sent.state == SentState::Sending => "starting the session…".to_string(),
            Some(sent) => state_text(&sent.state),
            None => "no session yet".to_string(),
        };
        put(buf, area, area.x, area.y, &text, theme.dim());
        return;
    };
    let totals = &session.figures.totals;
    let used = totals.usage.input_tokens + totals.usage.output_tokens;
    let mut text = format!(
        "{} running · {} queued · {} waiting · {} approval · {} tokens",
        totals.running,
        totals.queued,
        totals.waiting,
        totals.awaiting_approval,
        tokens(used)
    );
    if let Some(budget) = app.budget() {
        text.push_str(&format!(" of {}", tokens(budget)));
    }
    text.push_str(&match session.driver {
        Driver::None => " · not driven".to_string(),
        Driver::Process(pid) => format!(" · driven by pid {pid}"),
        Driver::Here => " · driven here".to_string(),
    });
    if let Some(sent) = app.sent.last() {
        text.push_str(&format!(" · {}: {}", sent.what, state_text(&sent.state)));
    }
    let style = if totals.pending_approvals > 0 {
        theme.warn()
    } else {
        theme.title()
    };
    put(
        buf,
        area,
        area.x,
        area.y,
        &truncate(&text, usize::from(area.width)),
        style,
    );
}

fn state_text(state: &SentState) -> String {
    match state {
        SentState::Sending => "sending…".to_string(),
        SentState::Durable => "durable".to_string(),
        SentState::Delivered => "delivered".to_string(),
        SentState::Running => "turn running".to_string(),
        SentState::Done(text) => text.clone(),
        SentState::Failed(err) => format!("failed: {err}"),
    }
}

fn draw_hint(app: &App, buf: &mut Buffer, area: Rect) {
    let theme = app.theme;
    let width = usize::from(area.width);
    if let Some(notice) = &app.notice {
        let style = if notice.error {
            theme.error()
        } else {
            theme.warn()
        };
        put(
            buf,
            area,
            area.x,
            area.y,
            &truncate(&notice.text, width),
            style,
        );
        return;
    }
    let pending = app
        .session
        .as_ref()
        .map_or(0, |s| s.figures.totals.pending_approvals);
    let text = if pending > 0 {
        format!(
            "{} pending: A answers · ? help · q quit",
            arbor_protocol::text::count(pending, "approval request", "approval requests")
        )
    } else if app.focus == Focus::Composer {
        "Enter follow-up · Ctrl-O queue-only mail · Esc back · ? after Esc for help".to_string()
    } else {
        "? help · Tab pane · i write · A approvals · / find · x interrupt · X close · q quit"
            .to_string()
    };
    let style = if pending > 0 {
        theme.warn()
    } else {
        theme.dim()
    };
    put(buf, area, area.x, area.y, &truncate(&text, width), style);
}
