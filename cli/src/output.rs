//! Printing events: JSON Lines on stdout with `--json`, short progress lines on stderr
//! otherwise (stdout then carries only the final answer). Human text is shown as
//! `text::visible` shows it: a control character in a model's or a workspace's text appears as
//! its escape, so none can rewrite what the terminal shows.

use std::io::Write;

use arbor_protocol::text::{truncate_middle, visible, visible_lines};
use arbor_protocol::{Event, EventLine};
use arbor_rollout::log::{SessionLog, Urgency};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// Maps a failed write to standard output: a reader that went away (a closed pipe) ends the
/// command quietly; anything else is a failure naming the reason.
pub fn out(result: std::io::Result<()>) -> Result<(), crate::error::CliError> {
    match result {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {
            Err(crate::error::CliError::closed_output())
        }
        Err(err) => Err(crate::error::CliError::failed(format!(
            "cannot write to standard output: {err}"
        ))),
    }
}

/// How events are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Human,
    Json,
}

/// Prints events until told to stop, then prints whatever is still queued. An event is
/// printed only once the session log is durable up to it (so nothing printed is ever lost to a
/// crash); events are taken in batches, one wait for each. `notices` go to stderr right after
/// the `session:` line (at once with `--json`, whose stderr has no such line). With
/// `prompting`, the terminal shows approval requests itself, so their progress line is left
/// out.
pub fn spawn_printer(
    mode: Mode,
    mut events: mpsc::UnboundedReceiver<EventLine>,
    log: SessionLog,
    notices: Vec<String>,
    prompting: bool,
) -> (oneshot::Sender<()>, JoinHandle<()>) {
    let (stop_tx, mut stop_rx) = oneshot::channel();
    let mut notices = Some(notices);
    if mode == Mode::Json {
        print_notices(notices.take());
    }
    let mut summary =
        (mode == Mode::Human && crate::summary::wanted()).then(crate::summary::Summary::default);
    let handle = tokio::spawn(async move {
        let mut print = |line: &EventLine| {
            if let Some(summary) = summary.as_mut() {
                // On a terminal: a live summary, and only the lines a person must see.
                let shown = summary.take(&line.event)
                    && !(prompting && matches!(line.event, Event::ApprovalRequested { .. }));
                let text = if shown { human_line(&line.event) } else { None };
                summary.print(text.as_deref());
                if matches!(line.event, Event::SessionStarted { .. }) {
                    for notice in notices.take().into_iter().flatten() {
                        summary.print(Some(&notice));
                    }
                }
                if matches!(line.event, Event::SessionCompleted { .. }) {
                    summary.finish();
                }
                return;
            }
            if prompting && matches!(line.event, Event::ApprovalRequested { .. }) {
                return;
            }
            print(mode, line);
            if matches!(line.event, Event::SessionStarted { .. }) {
                print_notices(notices.take());
            }
        };
        let mut batch = Vec::new();
        let mut stopping = false;
        loop {
            if !stopping {
                tokio::select! {
                    biased;
                    line = events.recv() => match line {
                        Some(line) => batch.push(line),
                        None => stopping = true,
                    },
                    _ = &mut stop_rx => stopping = true,
                }
            }
            while let Ok(line) = events.try_recv() {
                batch.push(line);
            }
            let upto = batch.iter().map(|line| line.lsn).max().unwrap_or(0);
            if log.durable(upto, Urgency::Soon).await.is_err() {
                // What the log could not make durable never leaves the session.
                let durable = log.durable_lsn();
                batch.retain(|line| line.lsn <= durable);
            }
            for line in batch.drain(..) {
                print(&line);
            }
            if stopping {
                break;
            }
        }
        if let Some(summary) = summary.as_mut() {
            summary.finish();
        }
    });
    (stop_tx, handle)
}

fn print_notices(notices: Option<Vec<String>>) {
    for notice in notices.into_iter().flatten() {
        eprintln!("{}", visible_lines(&notice, "  "));
    }
}

pub fn print(mode: Mode, line: &EventLine) {
    match mode {
        Mode::Json => {
            let mut out = std::io::stdout().lock();
            if let Ok(text) = serde_json::to_string(line) {
                let _ = writeln!(out, "{text}");
                let _ = out.flush();
            }
        }
        Mode::Human => {
            if let Some(text) = human_line(&line.event) {
                let mut err = std::io::stderr().lock();
                let _ = writeln!(err, "{text}");
            }
        }
    }
}

/// The root's final answer as human output prints it on stdout: its lines kept, every other
/// control character escaped.
pub fn answer(text: &str) -> std::borrow::Cow<'_, str> {
    visible_lines(text, "")
}

/// An event's progress line as printed: one line, controls escaped.
fn human_line(event: &Event) -> Option<String> {
    human(event).map(|text| visible(&text).into_owned())
}

fn short(text: &str) -> String {
    truncate_middle(&text.replace('\n', " "), 160)
}

fn human(event: &Event) -> Option<String> {
    Some(match event {
        Event::SessionStarted { session_id } => format!("session: {session_id}"),
        Event::AgentSpawned {
            path,
            nickname,
            role,
            parent,
        } => match parent {
            Some(parent) => format!(
                "spawned {path} ({}, {role}) by {parent}",
                nickname.as_deref().unwrap_or("-")
            ),
            None => return None,
        },
        Event::AgentMessage { path, text } => format!("{path}: {}", short(text)),
        Event::ToolCall {
            path,
            name,
            arguments,
            ..
        } => format!("{path} → {name} {}", short(&arguments.to_string())),
        Event::ToolResult { .. } => return None,
        Event::MailSent {
            kind,
            author,
            recipient,
            ..
        } => format!("mail {} {author} → {recipient}", kind.as_str()),
        Event::AgentEvicted { path } => format!("evicted {path}"),
        Event::AgentRevived { path } => format!("revived {path}"),
        Event::ApprovalRequested { id, path, action } => {
            format!(
                "approval {id} requested by {path}: {}",
                short(&action.to_string())
            )
        }
        Event::ApprovalDecided {
            id,
            outcome,
            decided_by,
            ..
        } => format!(
            "approval {id}: {outcome} by {}",
            decided_by.as_deref().unwrap_or("-")
        ),
        Event::AgentRetrying {
            path,
            reason,
            retry_in_ms,
        } => format!("{path}: retrying in {retry_in_ms} ms: {reason}"),
        Event::ModelFallback {
            path,
            from,
            to,
            reason,
            note,
        } => {
            let mut text = format!("{path}: falling back from {from} to {to}: {reason}");
            if let Some(note) = note {
                text.push_str(&format!(" ({note})"));
            }
            text
        }
        Event::TurnAborted { path, reason } => format!("{path}: turn aborted: {reason}"),
        Event::AgentCompacted {
            path,
            tokens_before,
            tokens_after,
            ..
        } => format!("compacted {path}: about {tokens_before} tokens → {tokens_after}"),
        Event::BudgetExhausted { limit, used } => {
            format!("token budget of {limit} reached ({used} used): no new turn starts")
        }
        Event::McpNotice { message, .. } => format!("mcp: {message}"),
        Event::TurnCompleted { path, .. } => format!("{path}: turn completed"),
        Event::WorktreeCreated {
            path,
            worktree,
            branch,
        } => format!("{path}: works in {worktree} on branch {branch}"),
        Event::WorktreeMerged {
            path,
            into,
            merged,
            conflicts,
        } => match conflicts.is_empty() {
            true => format!("{path}: merged {} file(s) into {into}", merged.len()),
            false => format!(
                "{path}: not merged into {into}, conflicts in {}",
                short(&conflicts.join(", "))
            ),
        },
        Event::WorktreeRemoved { path, worktree } => {
            format!("{path}: closed with nothing unmerged, removed {worktree}")
        }
        Event::WorktreeKept {
            path,
            worktree,
            branch,
            changes,
        } => format!(
            "{path}: closed with unmerged changes ({changes}): kept {worktree} and branch {branch}"
        ),
        Event::Notice { message } => format!("notice: {message}"),
        Event::TurnStarted { .. }
        | Event::MailDelivered { .. }
        | Event::AgentStatus { .. }
        | Event::Usage { .. }
        | Event::SessionCompleted { .. } => return None,
    })
}
