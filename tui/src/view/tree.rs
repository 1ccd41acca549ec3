//! The tree pane: one row per shown agent, only the rows in view built. Columns, from the
//! most to the least needed: name, status, unread mail (`@N`) and pending approvals (`!N`),
//! tokens, then, while some agent in view works, what each working agent does now (`now`,
//! at least [`NOW`] wide, taking the rest of the pane), then nickname, role, model, residency;
//! those that do not fit the pane are left out. Without room for `now`, a running agent's
//! status says what it does in a word (`exec_command`, `thinking…`, `writing…`).

use arbor_agent_graph::AgentRow;
use arbor_protocol::AgentStatus;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::text::{pad, put, truncate, width};
use crate::app::App;
use crate::session::Session;
use crate::tree::Row;

const STATUS: usize = 17;
const BADGES: usize = 7;
/// A narrow pane's status and badge columns.
const NARROW_STATUS: usize = 11;
const NARROW_BADGES: usize = 5;
/// Panes narrower than this use the narrow columns.
const NARROW: usize = 48;
const TOKENS: usize = 6;
const NICKNAME: usize = 12;
const ROLE: usize = 9;
const MODEL: usize = 14;
const RESIDENT: usize = 5;
/// The narrowest `now` column.
const NOW: usize = 28;

/// Which columns fit a pane of `cols` columns, given the widest name.
#[derive(Debug, Clone, Copy)]
struct Columns {
    name: usize,
    status: usize,
    badges: usize,
    tokens: bool,
    nickname: bool,
    role: bool,
    model: bool,
    resident: bool,
    /// The `now` column's width (0: not shown).
    now: usize,
}

impl Columns {
    /// `working`: some agent in view does something, so the `now` column is wanted.
    fn fit(cols: usize, widest: usize, working: bool) -> Self {
        let name = widest.clamp(8, 40);
        let (status, badges) = if cols < NARROW {
            (NARROW_STATUS, NARROW_BADGES)
        } else {
            (STATUS, BADGES)
        };
        let mut fit = Self {
            name,
            status,
            badges,
            tokens: false,
            nickname: false,
            role: false,
            model: false,
            resident: false,
            now: 0,
        };
        let mut used = name + 1 + status + 1 + badges;
        if used + 1 + TOKENS <= cols {
            fit.tokens = true;
            used += 1 + TOKENS;
        }
        let now = working && fit.tokens && used + 1 + NOW <= cols;
        let reserved = if now { 1 + NOW } else { 0 };
        for (extra, flag) in [
            (NICKNAME, &mut fit.nickname),
            (ROLE, &mut fit.role),
            (MODEL, &mut fit.model),
            (RESIDENT, &mut fit.resident),
        ] {
            if fit.tokens && used + 1 + extra + reserved <= cols {
                *flag = true;
                used += 1 + extra;
            } else {
                break;
            }
        }
        if now {
            fit.now = cols - used - 1;
        }
        // A narrow pane gives the name what is left beside the status.
        if used > cols {
            fit.name = cols.saturating_sub(1 + status + 1 + badges).max(4);
        }
        fit
    }
}

/// The status word of a row: `queued #2` with its place in the queue.
pub fn status_text(session: &Session, row: &AgentRow, status: &AgentStatus) -> String {
    match status {
        AgentStatus::Queued => match session.figures.queue_position.get(&row.record.id()) {
            Some(place) => format!("queued #{place}"),
            None => "queued".to_string(),
        },
        AgentStatus::AwaitingApproval => "awaiting approval".to_string(),
        AgentStatus::PendingInit => "pending".to_string(),
        other => other.name().to_string(),
    }
}

/// Tokens as a short figure: `950`, `12.3k`, `4.1M`.
pub fn tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// Whether the agent has a runtime loaded, as far as the log tells (eviction is not a line of
/// it): the read commands' rule, open agents of a live driver.
fn resident(session: &Session, row: &AgentRow) -> bool {
    session.driven() && !Session::is_closed(row)
}

fn label(row: &AgentRow) -> String {
    if row.record.meta.path.is_root() {
        row.record.meta.path.to_string()
    } else {
        row.record.meta.path.name().to_string()
    }
}

/// Draws the rows in view; `focused` highlights the selection.
pub fn draw(app: &mut App, buf: &mut Buffer, area: Rect, focused: bool) {
    let Some(session) = app.session.as_ref() else {
        return;
    };
    let height = usize::from(area.height.saturating_sub(1));
    app.tree_height = height;
    let offset = app.tree.scroll_into_view(height);
    let shown: Vec<Row> = app
        .tree
        .rows
        .iter()
        .skip(offset)
        .take(height)
        .copied()
        .collect();
    let widest = shown
        .iter()
        .filter_map(|row| {
            session
                .state
                .thread(row.id)
                .map(|r| width(&name_of(row, r)))
        })
        .max()
        .unwrap_or(8);
    let working = shown
        .iter()
        .any(|row| session.activity.of(row.id).is_some());
    // The tree's title is the session, by the handle commands take (for one made before
    // handles: what its rows are).
    let title = session.root.meta.handle.as_deref().unwrap_or("agent");
    let cols = Columns::fit(usize::from(area.width), widest.max(width(title)), working);
    let theme = app.theme;
    let mut head = pad(title, cols.name);
    head.push(' ');
    head.push_str(&pad("status", cols.status));
    head.push(' ');
    head.push_str(&pad("mail", cols.badges));
    for (on, title, w) in [
        (cols.tokens, "tokens", TOKENS),
        (cols.nickname, "nickname", NICKNAME),
        (cols.role, "role", ROLE),
        (cols.model, "model", MODEL),
        (cols.resident, "res", RESIDENT),
        (cols.now > 0, "now", cols.now),
    ] {
        if on {
            head.push(' ');
            head.push_str(&pad(title, w));
        }
    }
    put(buf, area, area.x, area.y, &head, theme.title());
    for (i, row) in shown.iter().enumerate() {
        let Some(agent) = session.state.thread(row.id) else {
            continue;
        };
        let y = area.y + 1 + i as u16;
        let selected = offset + i == app.tree.selected;
        let status = session.status(agent);
        let name = pad(&name_of(row, agent), cols.name);
        let base = if selected && focused {
            theme.selected()
        } else if selected {
            theme.title()
        } else {
            ratatui::style::Style::default()
        };
        let mut x = put(buf, area, area.x, y, &name, base);
        x = put(buf, area, x, y, " ", base);
        let mut word = status_text(session, agent, &status);
        if cols.status < STATUS && status == AgentStatus::AwaitingApproval {
            word = "approval".to_string();
        }
        // Without room for the `now` column, a running agent's status says what it does.
        if cols.now == 0
            && status == AgentStatus::Running
            && let Some(doing) = session.activity.of(row.id)
        {
            word = doing.word.clone();
        }
        x = put(
            buf,
            area,
            x,
            y,
            &pad(&word, cols.status),
            base.patch(theme.status(&status)),
        );
        x = put(buf, area, x, y, " ", base);
        let unread = session.figures.unread.get(&row.id).copied().unwrap_or(0);
        let pending = session.figures.pending.get(&row.id).copied().unwrap_or(0);
        let mut badges = String::new();
        if unread > 0 {
            badges.push_str(&format!("@{unread}"));
        }
        if pending > 0 {
            if !badges.is_empty() {
                badges.push(' ');
            }
            badges.push_str(&format!("!{pending}"));
        }
        let badge_style = if pending > 0 {
            theme.warn()
        } else {
            theme.dim()
        };
        x = put(
            buf,
            area,
            x,
            y,
            &pad(&badges, cols.badges),
            base.patch(badge_style),
        );
        let used = agent.usage.input_tokens + agent.usage.output_tokens;
        let extras = [
            (
                cols.tokens,
                format!("{:>w$}", tokens(used), w = TOKENS),
                TOKENS,
            ),
            (
                cols.nickname,
                agent
                    .record
                    .meta
                    .nickname
                    .clone()
                    .unwrap_or_else(|| "-".into()),
                NICKNAME,
            ),
            (cols.role, agent.record.meta.role.clone(), ROLE),
            (cols.model, agent.record.meta.model.clone(), MODEL),
            (
                cols.resident,
                if resident(session, agent) { "yes" } else { "-" }.to_string(),
                RESIDENT,
            ),
            (cols.now > 0, now_text(session, row.id, &status), cols.now),
        ];
        for (on, text, w) in extras {
            if on {
                x = put(buf, area, x, y, " ", base);
                x = put(buf, area, x, y, &pad(&truncate(&text, w), w), base);
            }
        }
        if selected && focused && x < area.right() {
            let rest = usize::from(area.right() - x);
            put(buf, area, x, y, &" ".repeat(rest), base);
        }
    }
}

/// Since when a working agent does what, and what: `11:10:04 exec_command: cargo test`.
fn now_text(session: &Session, id: arbor_protocol::ThreadId, status: &AgentStatus) -> String {
    match session.activity.of(id) {
        Some(doing) if status.is_active() => {
            format!("{} {}", super::text::clock(doing.since), doing.text)
        }
        _ => String::new(),
    }
}

/// A row's name cell: indentation, the branch marker, the name, and how many children a
/// collapsed branch hides.
fn name_of(row: &Row, agent: &AgentRow) -> String {
    let marker = match (row.children, row.collapsed) {
        (0, _) => "·",
        (_, true) => "▸",
        (_, false) => "▾",
    };
    let mut name = " ".repeat(indent(row.depth));
    name.push_str(marker);
    name.push(' ');
    name.push_str(&label(agent));
    if row.collapsed {
        name.push_str(&format!(" (+{})", row.children));
    }
    name
}

/// Spaces before a row's marker: two per level, at most 24.
fn indent(depth: usize) -> usize {
    (depth * 2).min(24)
}
