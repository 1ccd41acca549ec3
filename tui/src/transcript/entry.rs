//! One entry of a transcript: a log line of an agent made readable (a message, a tool call
//! with its arguments, a tool result, mail in or out, an approval, a turn boundary).

use arbor_protocol::{ResponseItem, RolloutItem, RolloutLine, Timestamp, WorktreeFact};
use serde_json::Value;

/// Body lines shown before an entry is folded.
pub const FOLD_LINES: usize = 6;

/// What an entry is, for its label and colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Header,
    Turn,
    TurnEnd,
    TurnFailed,
    User,
    Assistant,
    Reasoning,
    Call,
    Output,
    MailIn,
    MailOut,
    Approval,
    Decision,
    Closed,
}

impl Kind {
    /// The label shown before the title.
    pub fn label(self) -> &'static str {
        match self {
            Self::Header => "agent",
            Self::Turn | Self::TurnEnd | Self::TurnFailed => "turn",
            Self::User => "user",
            Self::Assistant => "says",
            Self::Reasoning => "thinks",
            Self::Call => "call",
            Self::Output => "result",
            Self::MailIn => "mail in",
            Self::MailOut => "mail out",
            Self::Approval => "approval",
            Self::Decision => "decided",
            Self::Closed => "closed",
        }
    }
}

/// One readable entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub seq: u64,
    pub at: Timestamp,
    pub kind: Kind,
    pub title: String,
    /// The body, one string per line (no wrapping yet).
    pub body: Vec<String>,
    /// Shown whole; otherwise bodies past [`FOLD_LINES`] are folded.
    pub expanded: bool,
}

impl Entry {
    /// Whether the body is longer than a folded entry shows.
    pub fn foldable(&self) -> bool {
        self.body.len() > FOLD_LINES
    }

    /// The body lines to show, and how many are hidden.
    pub fn shown_body(&self) -> (&[String], usize) {
        if self.expanded || !self.foldable() {
            (&self.body, 0)
        } else {
            (&self.body[..FOLD_LINES], self.body.len() - FOLD_LINES)
        }
    }
}

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

/// The entry a line becomes, if it is one the transcript shows (usage lines are not: tokens
/// are in the header).
pub fn entry_of(line: &RolloutLine) -> Option<Entry> {
    let seq = line.seq.unwrap_or(0);
    let (kind, title, body) = match &line.item {
        RolloutItem::SessionMeta(meta) => (
            Kind::Header,
            format!(
                "{} ({}, role {}, model {}, sandbox {})",
                meta.path,
                meta.nickname.as_deref().unwrap_or("-"),
                meta.role,
                meta.model,
                meta.sandbox
            ),
            vec![format!("cwd {}", meta.cwd)],
        ),
        RolloutItem::TurnStarted(turn) => (Kind::Turn, format!("{} started", turn.turn), vec![]),
        RolloutItem::TurnCompleted(turn) => {
            (Kind::TurnEnd, format!("{} completed", turn.turn), vec![])
        }
        RolloutItem::TurnAborted(turn) => (
            Kind::TurnFailed,
            format!("{} {}", turn.turn, turn.status()),
            vec![],
        ),
        RolloutItem::ResponseItem(item) => response(item),
        RolloutItem::MailSent(mail) => (
            Kind::MailOut,
            format!(
                "{} to {}{}",
                mail.kind.as_str(),
                mail.recipient,
                if mail.trigger_turn { " (wakes)" } else { "" }
            ),
            lines(&mail.content),
        ),
        RolloutItem::MailConsumed(consumed) => (
            Kind::MailIn,
            format!(
                "{} from {}",
                consumed.mail.kind.as_str(),
                consumed.mail.sender()
            ),
            lines(&consumed.mail.content),
        ),
        RolloutItem::AgentClosed(closed) => (
            Kind::Closed,
            format!("{} (was {})", closed.target, closed.previous_status),
            vec![],
        ),
        RolloutItem::ApprovalRequested(asked) => {
            let mut body = action_lines(&asked.action);
            if let Some(why) = &asked.justification {
                body.push(format!("justification: {why}"));
            }
            (
                Kind::Approval,
                format!("request {}", asked.request_id),
                body,
            )
        }
        RolloutItem::ApprovalDecided(decided) => {
            let mut title = format!("{} {}", decided.request_id, decided.outcome);
            if let Some(by) = &decided.decided_by {
                title.push_str(&format!(" by {by}"));
            }
            let mut body = Vec::new();
            if let Some(risk) = &decided.risk_level {
                body.push(format!("risk: {risk}"));
            }
            if let Some(rationale) = &decided.rationale {
                body.extend(lines(rationale));
            }
            (Kind::Decision, title, body)
        }
        RolloutItem::Worktree(fact) => worktree(fact),
        RolloutItem::Compacted(compacted) => (
            Kind::Turn,
            format!(
                "history compacted ({:?}, about {} tokens before)",
                compacted.trigger, compacted.tokens_before
            )
            .to_lowercase(),
            lines(&compacted.summary),
        ),
        RolloutItem::ModelFallback(fallback) => (
            Kind::Turn,
            format!("model {} -> {}", fallback.from, fallback.to),
            std::iter::once(fallback.reason.clone())
                .chain(fallback.note.clone())
                .collect(),
        ),
        RolloutItem::Usage(_)
        | RolloutItem::Status(_)
        | RolloutItem::UserMail(_)
        | RolloutItem::UserClose(_)
        | RolloutItem::UserInterrupt(_)
        | RolloutItem::UserAnswer(_)
        | RolloutItem::ApprovalOverride(_)
        | RolloutItem::OverrideUsed(_) => return None,
    };
    Some(Entry {
        seq,
        at: line.timestamp,
        kind,
        title,
        body,
        expanded: false,
    })
}

fn worktree(fact: &WorktreeFact) -> (Kind, String, Vec<String>) {
    match fact {
        WorktreeFact::Created(made) => (
            Kind::Header,
            format!("worktree on branch {}", made.branch),
            vec![
                format!("at {}", made.path),
                format!("from {} of {}", made.base, made.source),
            ],
        ),
        WorktreeFact::Merged(merged) => (
            Kind::Decision,
            format!("changes merged into {}", merged.into),
            merged.files.clone(),
        ),
        WorktreeFact::Removed => (Kind::Closed, "worktree removed".to_string(), vec![]),
    }
}

fn response(item: &ResponseItem) -> (Kind, String, Vec<String>) {
    match item {
        ResponseItem::Message { role, content } => {
            let kind = if role == "assistant" {
                Kind::Assistant
            } else {
                Kind::User
            };
            let title = if role == "assistant" || role == "user" {
                String::new()
            } else {
                role.clone()
            };
            (kind, title, lines(content))
        }
        ResponseItem::FunctionCall {
            call_id,
            name,
            arguments,
        } => (
            Kind::Call,
            format!("{name} [{call_id}]"),
            argument_lines(arguments),
        ),
        ResponseItem::FunctionCallOutput { call_id, output } => {
            (Kind::Output, format!("[{call_id}]"), output_lines(output))
        }
        ResponseItem::Reasoning { summary, .. } => {
            (Kind::Reasoning, String::new(), lines(&summary.join("\n")))
        }
    }
}

/// A call's arguments: one `key: value` line per field of a JSON object (strings as they are,
/// so a command or a patch reads naturally; `json_lines`), else the text as written.
fn argument_lines(arguments: &str) -> Vec<String> {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => arbor_protocol::text::json_lines(&value),
        _ => lines(arguments),
    }
}

/// A tool's output: a command's result as its exit code and streams, anything else as text.
fn output_lines(output: &str) -> Vec<String> {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(output) else {
        return lines(output);
    };
    if !map.contains_key("exit_code") {
        // Another tool's JSON result reads as its fields.
        return arbor_protocol::text::json_lines(&Value::Object(map));
    }
    let mut head = format!("exit {}", map["exit_code"]);
    for key in ["signal", "error"] {
        if let Some(value) = map.get(key).filter(|v| !v.is_null()) {
            head.push_str(&format!(" · {key} {}", plain(value)));
        }
    }
    if map.get("timed_out") == Some(&Value::Bool(true)) {
        head.push_str(" · timed out");
    }
    if let Some(ms) = map.get("duration_ms") {
        head.push_str(&format!(" · {ms} ms"));
    }
    if let Some(sandbox) = map.get("sandbox") {
        head.push_str(&format!(" · sandbox {}", plain(sandbox)));
    }
    let mut out = vec![head];
    for stream in ["stdout", "stderr"] {
        if let Some(text) = map.get(stream).and_then(Value::as_str)
            && !text.is_empty()
        {
            out.push(format!("{stream}:"));
            out.extend(text.lines().map(|l| format!("  {l}")));
        }
    }
    out
}

fn plain(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// An approval's action as readable lines: the command first, then the diff of a patch or a
/// merge (`diff:` and its lines, indented), then its other fields.
pub fn action_lines(action: &Value) -> Vec<String> {
    let Value::Object(map) = action else {
        return vec![action.to_string()];
    };
    let mut out = Vec::new();
    if let Some(command) = map.get("command") {
        out.push(format!("command: {}", plain(command)));
    }
    if let Some(diff) = arbor_orchestrator::action_diff(action) {
        out.push(DIFF_HEADING.to_string());
        out.extend(diff.lines().map(|l| format!("  {l}")));
    }
    for (key, value) in map {
        if matches!(key.as_str(), "command" | "patch" | "diff") {
            continue;
        }
        out.push(format!("{key}: {}", plain(value)));
    }
    out
}

/// The line before a diff's lines in [`action_lines`].
pub const DIFF_HEADING: &str = "diff:";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_result_reads_as_exit_code_and_streams() {
        let out = output_lines(
            r#"{"exit_code":0,"timed_out":false,"duration_ms":3,"sandbox":"none","stdout":"a\nb\n","stderr":""}"#,
        );
        assert_eq!(
            out,
            ["exit 0 · 3 ms · sandbox none", "stdout:", "  a", "  b"]
        );
    }

    #[test]
    fn arguments_read_as_fields() {
        let out = argument_lines(r#"{"cmd":"ls -l","timeout_ms":5}"#);
        assert_eq!(out, ["cmd: ls -l", "timeout_ms: 5"]);
        assert_eq!(argument_lines("not json"), ["not json"]);
    }
}
