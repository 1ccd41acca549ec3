//! Rollout item types (behaviour §9): one JSON line `{"timestamp", "type", "payload"}` each.
//!
//! The same items are the lines of the session log, which adds `seq` (the line's number in the
//! log) and `thread` (the agent it belongs to); a rollout line written from the log keeps both.
//! Some items are facts of the session rather than of one agent's history (status changes,
//! what other processes did, approval overrides): they stay in the log and never reach a
//! rollout ([`RolloutItem::in_rollout`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::facts::{
    ApprovalOverride, OverrideUsed, StatusChanged, UserAnswer, UserMail, UserTarget,
};
use crate::{
    AgentPath, AgentStatus, Mail, ModelFallback, ServedBy, Thinking, ThreadId, Timestamp,
    WorkspaceRepository, WorktreeFact,
};

/// Written into every `session_meta` header; bumped when old readers could misread new files.
pub const ROLLOUT_FORMAT_VERSION: u32 = 1;

/// Where the rollout of `thread_id`, whose header is stamped `meta_timestamp`, lives relative
/// to `$ARBOR_HOME`: `sessions/YYYY/MM/DD/rollout-<YYYY-MM-DDTHH-MM-SS>-<thread id>.jsonl` (the
/// UTC date of the stamp). Stored paths are relative, so a home can be moved or copied.
pub fn rollout_relative_path(meta_timestamp: Timestamp, thread_id: ThreadId) -> String {
    let (year, month, day) = meta_timestamp.date();
    format!(
        "sessions/{year:04}/{month:02}/{day:02}/rollout-{}-{thread_id}.jsonl",
        meta_timestamp.file_stamp()
    )
}

/// One line of a rollout file or of the session log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RolloutLine {
    /// The line's number in the session log (from 1); absent in rollouts of earlier versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The agent the line belongs to; absent in rollouts of earlier versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<ThreadId>,
    pub timestamp: Timestamp,
    #[serde(flatten)]
    pub item: RolloutItem,
}

/// Everything a rollout records. The `type` field names the variant; `payload` holds its data.
///
/// Payloads larger than a response item are boxed: a busy session holds thousands of lines
/// between their append and their projection, and every one of them is as large as the
/// largest variant kept inline (a header, the rarest line, made it 232 bytes; it is now 88).
/// Boxing does not change the serialised form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "payload", rename_all = "snake_case")]
pub enum RolloutItem {
    SessionMeta(Box<SessionMeta>),
    TurnStarted(TurnStarted),
    TurnCompleted(TurnCompleted),
    TurnAborted(TurnAborted),
    ResponseItem(ResponseItem),
    MailSent(Box<Mail>),
    MailConsumed(Box<MailConsumed>),
    AgentClosed(AgentClosed),
    ApprovalRequested(ApprovalRequested),
    ApprovalDecided(Box<ApprovalDecided>),
    Usage(UsageLine),
    /// A new history window starts here (compaction): nothing before it is sent again.
    Compacted(Box<Compacted>),
    /// Session facts, in the log only.
    Status(StatusChanged),
    UserMail(Box<UserMail>),
    UserClose(UserTarget),
    UserInterrupt(UserTarget),
    UserAnswer(UserAnswer),
    ApprovalOverride(ApprovalOverride),
    OverrideUsed(OverrideUsed),
    /// A fact about the agent's own git worktree (made, merged, removed).
    Worktree(Box<WorktreeFact>),
    /// A request of the agent's went to a fallback model.
    ModelFallback(Box<ModelFallback>),
}

impl RolloutItem {
    /// Every `type` this version knows, so readers can tell "unknown" from "malformed".
    pub const KNOWN_TYPES: &'static [&'static str] = &[
        "session_meta",
        "turn_started",
        "turn_completed",
        "turn_aborted",
        "response_item",
        "mail_sent",
        "mail_consumed",
        "agent_closed",
        "approval_requested",
        "approval_decided",
        "usage",
        "compacted",
        "status",
        "user_mail",
        "user_close",
        "user_interrupt",
        "user_answer",
        "approval_override",
        "override_used",
        "worktree",
        "model_fallback",
    ];

    /// The `type` text of this item.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::SessionMeta(_) => "session_meta",
            Self::TurnStarted(_) => "turn_started",
            Self::TurnCompleted(_) => "turn_completed",
            Self::TurnAborted(_) => "turn_aborted",
            Self::ResponseItem(_) => "response_item",
            Self::MailSent(_) => "mail_sent",
            Self::MailConsumed(_) => "mail_consumed",
            Self::AgentClosed(_) => "agent_closed",
            Self::ApprovalRequested(_) => "approval_requested",
            Self::ApprovalDecided(_) => "approval_decided",
            Self::Usage(_) => "usage",
            Self::Worktree(_) => "worktree",
            Self::Compacted(_) => "compacted",
            Self::Status(_) => "status",
            Self::UserMail(_) => "user_mail",
            Self::UserClose(_) => "user_close",
            Self::UserInterrupt(_) => "user_interrupt",
            Self::UserAnswer(_) => "user_answer",
            Self::ApprovalOverride(_) => "approval_override",
            Self::OverrideUsed(_) => "override_used",
            Self::ModelFallback(_) => "model_fallback",
        }
    }

    /// Whether the item belongs in its agent's rollout; session facts stay in the log.
    pub fn in_rollout(&self) -> bool {
        match self {
            Self::SessionMeta(_)
            | Self::TurnStarted(_)
            | Self::TurnCompleted(_)
            | Self::TurnAborted(_)
            | Self::ResponseItem(_)
            | Self::MailSent(_)
            | Self::MailConsumed(_)
            | Self::AgentClosed(_)
            | Self::ApprovalRequested(_)
            | Self::ApprovalDecided(_)
            | Self::Usage(_)
            | Self::Compacted(_)
            | Self::ModelFallback(_) => true,
            Self::Status(_)
            | Self::UserMail(_)
            | Self::UserClose(_)
            | Self::UserInterrupt(_)
            | Self::UserAnswer(_)
            | Self::ApprovalOverride(_)
            | Self::OverrideUsed(_)
            | Self::Worktree(_) => false,
        }
    }
}

/// The header of a rollout: who this thread is and how it was configured when spawned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionMeta {
    pub thread_id: ThreadId,
    pub session_id: ThreadId,
    pub parent_id: Option<ThreadId>,
    pub path: AgentPath,
    pub depth: u32,
    pub nickname: Option<String>,
    pub role: String,
    pub model: String,
    /// The provider `model` is served by, by its configured name; `None` in rollouts of
    /// earlier versions (the session's default provider).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default)]
    pub effort: Option<String>,
    pub sandbox: String,
    pub cwd: String,
    pub format_version: u32,
    /// The root's header only: the git repository the workspace was in when the session was
    /// made. Worktrees are made only in it (`docs/sandbox.md`). Absent in children's headers
    /// and in sessions made before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<WorkspaceRepository>,
    /// A session root's handle (`amber-otter`): a short name unique among the home's
    /// sessions, which every command takes beside the id. `None` for other agents and for
    /// sessions made before handles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
}

/// A turn began. Turns are numbered from 1 within a thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnStarted {
    pub turn: u64,
}

/// A turn ended with a final answer (or none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnCompleted {
    pub turn: u64,
    pub last_message: Option<String>,
}

/// How an aborted turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AbortKind {
    Interrupted,
    Errored,
}

/// A turn ended without a final answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnAborted {
    pub turn: u64,
    pub kind: AbortKind,
    pub reason: String,
}

impl TurnAborted {
    /// The status this abort leaves the agent in.
    pub fn status(&self) -> AgentStatus {
        match self.kind {
            AbortKind::Interrupted => AgentStatus::Interrupted(self.reason.clone()),
            AbortKind::Errored => AgentStatus::Errored(self.reason.clone()),
        }
    }
}

/// An item of model history, in the shape of the Responses API input items.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseItem {
    /// A message from `user`, `assistant` or `developer`.
    Message { role: String, content: String },
    /// A tool call made by the model.
    FunctionCall {
        call_id: String,
        name: String,
        arguments: String,
    },
    /// The result of a tool call, paired by `call_id`.
    FunctionCallOutput { call_id: String, output: String },
    /// Reasoning the provider returned, passed back on the next request when present.
    Reasoning {
        #[serde(default)]
        summary: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
        /// An Anthropic thinking block (its text in `summary`), sent back only to that API.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thinking: Option<Box<Thinking>>,
    },
}

/// A mail entered this thread's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MailConsumed {
    pub mail: Mail,
}

/// This thread closed another agent (recorded in the closer's rollout).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentClosed {
    pub target_id: ThreadId,
    pub target: AgentPath,
    pub previous_status: AgentStatus,
}

/// This thread asked for approval of an action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRequested {
    pub request_id: String,
    pub action: Value,
    #[serde(default)]
    pub justification: Option<String>,
}

/// An approval request was decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalDecided {
    pub request_id: String,
    pub outcome: String,
    #[serde(default)]
    pub decided_by: Option<String>,
    #[serde(default)]
    pub risk_level: Option<String>,
    #[serde(default)]
    pub rationale: Option<String>,
    /// Model tokens the review cost (guardian reviews).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
}

/// Tokens one model response used (or, summed, many).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Every input token, those read from and written to a prompt cache included.
    pub input_tokens: u64,
    /// Of the input tokens, those read from the provider's prompt cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Of the input tokens, those written to the provider's prompt cache (Anthropic's
    /// `cache_creation_input_tokens`; priced above plain input).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    pub output_tokens: u64,
    /// Of these tokens (input and output), those spent on compaction requests: the label a
    /// compaction's usage carries, summed like the rest.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub compaction_tokens: u64,
}

/// A `usage` line: one response's tokens (or a compaction's), and who served them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UsageLine {
    #[serde(flatten)]
    pub usage: Usage,
    /// The provider and model that answered; `None` in lines of earlier versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_by: Option<Box<ServedBy>>,
}

impl From<Usage> for UsageLine {
    fn from(usage: Usage) -> Self {
        Self {
            usage,
            served_by: None,
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Adds `other` to these totals, field by field.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.output_tokens += other.output_tokens;
        self.compaction_tokens += other.compaction_tokens;
    }

    /// Input and output tokens together.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

/// What started a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionTrigger {
    /// A request would have passed `compact_at` of the model's context window.
    Auto,
    /// `arbor compact`.
    Manual,
}

/// A new history window (compaction, behaviour §9): the agent's history from here on starts
/// with `window` (the summary, then the most recent inputs); nothing before this line is sent
/// to the model again, and nothing before it is rewritten. The line also carries what a reader
/// starting here needs of the lines before it, so revival reads the last window only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compacted {
    /// The model's summary of the work so far.
    pub summary: String,
    /// The history the new window starts with.
    pub window: Vec<ResponseItem>,
    pub trigger: CompactionTrigger,
    /// The estimated size of the history it replaced, in tokens.
    pub tokens_before: u64,
    /// The turn it was made in (or, between turns, the last one; 0 before any).
    pub turn: u64,
    /// How that turn ended, when it had (a compaction between turns); `None` inside it.
    #[serde(default)]
    pub turn_end: Option<AgentStatus>,
    /// The last final answer of any turn before this line.
    #[serde(default)]
    pub last_message: Option<String>,
    /// Tokens used by every response before this line, the compaction's own included.
    #[serde(default)]
    pub usage: Usage,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_has_timestamp_type_and_payload() {
        let line = RolloutLine {
            seq: None,
            thread: None,
            timestamp: Timestamp::from_millis(0),
            item: RolloutItem::TurnStarted(TurnStarted { turn: 1 }),
        };
        let text = serde_json::to_string(&line).expect("ser");
        assert_eq!(
            text,
            r#"{"timestamp":"1970-01-01T00:00:00.000Z","type":"turn_started","payload":{"turn":1}}"#
        );
        assert_eq!(
            serde_json::from_str::<RolloutLine>(&text).expect("de"),
            line
        );
    }

    #[test]
    fn a_line_in_memory_stays_small() {
        // A new variant with a large payload inline grows every queued line: box it.
        let size = std::mem::size_of::<RolloutItem>();
        assert!(
            size <= 88,
            "RolloutItem is {size} bytes; box the payload of the variant that made it grow"
        );
    }

    #[test]
    fn type_names_are_the_serialised_tags() {
        let item = RolloutItem::ResponseItem(ResponseItem::FunctionCall {
            call_id: "c1".into(),
            name: "list_agents".into(),
            arguments: "{}".into(),
        });
        let value = serde_json::to_value(&item).expect("ser");
        assert_eq!(value["type"], item.type_name());
        assert_eq!(value["payload"]["type"], "function_call");
        assert!(RolloutItem::KNOWN_TYPES.contains(&item.type_name()));
    }
}
