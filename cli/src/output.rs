//! Printing events: JSON Lines on stdout with `--json`, short progress lines on stderr
//! otherwise (stdout then carries only the final answer). Human text is shown as
//! `text::visible` shows it: a control character in a model's or a workspace's text appears as
//! its escape, so none can rewrite what the terminal shows.

use std::io::Write;
use std::time::{Duration, Instant};

use arbor_protocol::text::{truncate_middle, visible, visible_lines};
use arbor_protocol::{AgentPath, Event, EventLine, ThreadId};
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

/// `1.5 MB`-style sizes.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: &[&str] = &["B", "KB", "MB", "GB", "TB"];
    #[allow(clippy::cast_precision_loss, reason = "a size shown to one decimal")]
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// How events are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Human,
    Json,
}

/// How a request for approval is answered, for the lines that announce one.
#[derive(Debug, Clone, Copy)]
pub struct Approvals {
    /// The terminal shows requests itself (`prompt.rs`): their progress line is left out.
    pub prompting: bool,
    /// How long a request waits for an answer (`None`: without limit).
    pub wait: Option<Duration>,
}

/// Prints events until told to stop, then prints whatever is still queued. An event is
/// printed only once the session log is durable up to it (so nothing printed is ever lost to a
/// crash); events are taken in batches, one wait for each. `notices` go to stderr right after
/// the `session:` line (at once with `--json`, whose stderr has no such line). On a terminal
/// the live summary is drawn again every second, so the times it shows go on.
pub fn spawn_printer(
    mode: Mode,
    mut events: mpsc::UnboundedReceiver<EventLine>,
    log: SessionLog,
    notices: Vec<String>,
    approvals: Approvals,
) -> (oneshot::Sender<()>, JoinHandle<()>) {
    let (stop_tx, mut stop_rx) = oneshot::channel();
    let mut notices = Some(notices);
    if mode == Mode::Json {
        print_notices(notices.take());
    }
    let mut summary =
        (mode == Mode::Human && crate::summary::wanted()).then(crate::summary::Summary::default);
    let live = summary.is_some();
    let prompting = approvals.prompting && mode == Mode::Human;
    let handle = tokio::spawn(async move {
        let mut session = None;
        // The session completed: the live area's last state stays as it is.
        let mut done = false;
        // `None`: the end of a batch, or a tick: the live summary is drawn again.
        let mut print = |line: Option<&EventLine>| {
            let Some(line) = line else {
                if let Some(summary) = summary.as_ref().filter(|_| !done) {
                    crate::screen::live(summary.lines(Instant::now()));
                }
                return;
            };
            if let Event::SessionStarted { session_id, .. } = &line.event {
                session = Some(*session_id);
            }
            if prompting && matches!(line.event, Event::ApprovalRequested { .. }) {
                if let Some(summary) = summary.as_mut() {
                    summary.take(&line.event, Instant::now());
                }
                return;
            }
            let text = match &line.event {
                Event::ApprovalRequested {
                    id,
                    path,
                    action,
                    justification,
                } if mode == Mode::Human => Some(requested(
                    session,
                    approvals.wait,
                    id,
                    path,
                    action,
                    justification.as_deref(),
                )),
                _ => None,
            };
            if let Some(summary) = summary.as_mut() {
                // On a terminal: a live summary, and only the lines a person must see.
                if summary.take(&line.event, Instant::now())
                    && let Some(text) = text.or_else(|| human_line(&line.event))
                {
                    crate::screen::line(&text);
                }
                if matches!(line.event, Event::SessionStarted { .. }) {
                    for notice in notices.take().into_iter().flatten() {
                        crate::screen::line(&visible_lines(&notice, "  "));
                    }
                }
                if matches!(line.event, Event::SessionCompleted { .. }) {
                    crate::screen::live(summary.lines(Instant::now()));
                    crate::screen::finish();
                    done = true;
                }
                return;
            }
            match text {
                Some(text) => eprintln!("{text}"),
                None => print(mode, line),
            }
            if matches!(line.event, Event::SessionStarted { .. }) {
                print_notices(notices.take());
            }
        };
        let mut batch = Vec::new();
        let mut stopping = false;
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            if !stopping {
                tokio::select! {
                    biased;
                    line = events.recv() => match line {
                        Some(line) => batch.push(line),
                        None => stopping = true,
                    },
                    _ = &mut stop_rx => stopping = true,
                    _ = tick.tick(), if live => {
                        print(None);
                        continue;
                    }
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
                print(Some(&line));
            }
            // Once per batch: a burst of events draws the live area once.
            if live {
                print(None);
            }
            if stopping {
                break;
            }
        }
        if live {
            crate::screen::finish();
        }
    });
    (stop_tx, handle)
}

/// An approval request as the progress lines show it: the request whole (`prompt::describe`),
/// the commands that answer it, and what happens when nobody does.
fn requested(
    session: Option<ThreadId>,
    wait: Option<Duration>,
    id: &str,
    path: &AgentPath,
    action: &serde_json::Value,
    justification: Option<&str>,
) -> String {
    let mut text = crate::prompt::describe(id, path, action, justification);
    let session = session.map_or_else(|| "SESSION".to_string(), |s| s.to_string());
    let answer = format!("`arbor approve {session} {id}` or `arbor deny {session} {id}`");
    text.push_str(&match wait {
        Some(wait) if wait.is_zero() => format!(
            "  nobody can answer it: with no terminal the approval wait is 0, so it is refused \
             now (no_approver); run with --approval-wait SECONDS to answer it with {answer}"
        ),
        Some(wait) => format!(
            "  answer with {answer}; unanswered after {} s, it is refused (no_approver)",
            wait.as_secs()
        ),
        None => format!("  answer at the terminal, or with {answer}; it waits without limit"),
    });
    text
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

/// An event's progress line as printed: one line, controls escaped (the session's start is two
/// lines of arbor's own: its id, then its handle).
fn human_line(event: &Event) -> Option<String> {
    if matches!(event, Event::SessionStarted { .. }) {
        return human(event);
    }
    human(event).map(|text| visible(&text).into_owned())
}

/// A session as the first stderr line names it: its id and, in brackets, its handle.
pub fn session_label(id: arbor_protocol::ThreadId, handle: Option<&str>) -> String {
    match handle {
        Some(handle) => format!("{id} ({handle})"),
        None => id.to_string(),
    }
}

fn short(text: &str) -> String {
    truncate_middle(&text.replace('\n', " "), 160)
}

fn human(event: &Event) -> Option<String> {
    Some(match event {
        // The first line is `session: <id>` exactly (scripts read it); the handle follows.
        Event::SessionStarted { session_id, handle } => match handle {
            Some(handle) => format!("session: {session_id}\nhandle: {handle}"),
            None => format!("session: {session_id}"),
        },
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
        } => format!(
            "{path} → {}",
            arbor_protocol::text::call_brief(name, arguments)
        ),
        Event::ToolResult { .. } => return None,
        Event::MailSent {
            kind,
            author,
            recipient,
            from_user,
            ..
        } => format!(
            "mail {} {} → {recipient}",
            kind.as_str(),
            if *from_user {
                "from the user"
            } else {
                author.as_str()
            }
        ),
        Event::AgentEvicted { path } => format!("evicted {path}"),
        Event::AgentRevived { path } => format!("revived {path}"),
        Event::ApprovalRequested {
            id,
            path,
            action,
            justification,
        } => crate::prompt::describe(id, path, action, justification.as_deref())
            .trim_end()
            .to_string(),
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
            true => format!(
                "{path}: merged {} into {into}",
                arbor_protocol::text::count(merged.len(), "file", "files")
            ),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KB");
        assert_eq!(human_bytes(3 * 1024 * 1024), "3.0 MB");
    }
}
