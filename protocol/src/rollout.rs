//! Rollout item types (behaviour §9): one JSON line `{"timestamp", "type", "payload"}` each.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{AgentPath, AgentStatus, Mail, ThreadId, Timestamp};

/// Written into every `session_meta` header; bumped when old readers could misread new files.
pub const ROLLOUT_FORMAT_VERSION: u32 = 1;

/// One line of a rollout file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RolloutLine {
    pub timestamp: Timestamp,
    #[serde(flatten)]
    pub item: RolloutItem,
}

/// Everything a rollout records. The `type` field names the variant; `payload` holds its data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "payload", rename_all = "snake_case")]
pub enum RolloutItem {
    SessionMeta(SessionMeta),
    TurnStarted(TurnStarted),
    TurnCompleted(TurnCompleted),
    TurnAborted(TurnAborted),
    ResponseItem(ResponseItem),
    MailSent(Mail),
    MailConsumed(MailConsumed),
    AgentClosed(AgentClosed),
    ApprovalRequested(ApprovalRequested),
    ApprovalDecided(ApprovalDecided),
    Usage(Usage),
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
    #[serde(default)]
    pub effort: Option<String>,
    pub sandbox: String,
    pub cwd: String,
    pub format_version: u32,
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

/// Tokens one model response used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    #[serde(default)]
    pub cached_input_tokens: u64,
    pub output_tokens: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_has_timestamp_type_and_payload() {
        let line = RolloutLine {
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
