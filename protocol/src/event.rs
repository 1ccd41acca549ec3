//! The `--json` event stream (cli.md "Output"): one JSON object per line with `type` and `ts`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{AgentPath, AgentStatus, MailId, MailKind, ThreadId, Timestamp, Usage};

/// One event with its time, as printed by `--json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventLine {
    #[serde(flatten)]
    pub event: Event,
    pub ts: Timestamp,
    /// The session log's last append when the event was emitted: the event may be shown
    /// outside the session once the log is durable up to here. Not printed.
    #[serde(skip)]
    pub lsn: u64,
}

/// Everything the orchestrator reports while it runs, in causal order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Event {
    #[serde(rename = "session.started")]
    SessionStarted {
        session_id: ThreadId,
        /// The session's handle (`amber-otter`), which every command takes beside the id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        handle: Option<String>,
    },
    #[serde(rename = "agent.spawned")]
    AgentSpawned {
        path: AgentPath,
        nickname: Option<String>,
        role: String,
        parent: Option<AgentPath>,
    },
    #[serde(rename = "turn.started")]
    TurnStarted { path: AgentPath },
    #[serde(rename = "agent.message")]
    AgentMessage { path: AgentPath, text: String },
    #[serde(rename = "tool.call")]
    ToolCall {
        path: AgentPath,
        call_id: String,
        name: String,
        arguments: Value,
    },
    #[serde(rename = "tool.result")]
    ToolResult {
        path: AgentPath,
        call_id: String,
        name: String,
        output: String,
    },
    #[serde(rename = "mail.sent")]
    MailSent {
        id: MailId,
        kind: MailKind,
        author: AgentPath,
        recipient: AgentPath,
        trigger_turn: bool,
        /// The user sent it (from the root's place): `arbor send`, `followup`, the UI.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        from_user: bool,
    },
    #[serde(rename = "mail.delivered")]
    MailDelivered { id: MailId, recipient: AgentPath },
    #[serde(rename = "agent.status")]
    AgentStatus {
        path: AgentPath,
        status: AgentStatus,
    },
    #[serde(rename = "agent.evicted")]
    AgentEvicted { path: AgentPath },
    #[serde(rename = "agent.revived")]
    AgentRevived { path: AgentPath },
    #[serde(rename = "approval.requested")]
    ApprovalRequested {
        id: String,
        path: AgentPath,
        action: Value,
        /// Why the requester says it needs the action, when it said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        justification: Option<String>,
    },
    #[serde(rename = "approval.decided")]
    ApprovalDecided {
        id: String,
        outcome: String,
        decided_by: Option<String>,
        risk_level: Option<String>,
        rationale: Option<String>,
    },
    #[serde(rename = "agent.retrying")]
    AgentRetrying {
        path: AgentPath,
        reason: String,
        retry_in_ms: u64,
    },
    /// A request of the agent at `path` went to a fallback model (see `ModelFallback`).
    #[serde(rename = "model.fallback")]
    ModelFallback {
        path: AgentPath,
        from: String,
        to: String,
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// Tokens of one model response, with the agent's and the whole tree's totals so far.
    #[serde(rename = "usage")]
    Usage {
        path: AgentPath,
        #[serde(flatten)]
        usage: Usage,
        agent_total: Usage,
        tree_total: Usage,
    },
    /// An agent's history was compacted into a new window.
    #[serde(rename = "agent.compacted")]
    AgentCompacted {
        path: AgentPath,
        trigger: crate::CompactionTrigger,
        /// The estimated size of the history replaced, and of the window that replaced it.
        tokens_before: u64,
        tokens_after: u64,
    },
    /// The tree's token budget is used up: no new turn starts.
    #[serde(rename = "budget.exhausted")]
    BudgetExhausted { limit: u64, used: u64 },
    /// Something about an MCP server the user should know: it started, failed, was
    /// restarted, or some of its tools are not offered (and why).
    #[serde(rename = "mcp.notice")]
    McpNotice { server: String, message: String },
    #[serde(rename = "turn.completed")]
    TurnCompleted {
        path: AgentPath,
        last_message: Option<String>,
    },
    #[serde(rename = "turn.aborted")]
    TurnAborted { path: AgentPath, reason: String },
    #[serde(rename = "session.completed")]
    SessionCompleted {
        session_id: ThreadId,
        final_message: Option<String>,
    },
    /// A git worktree was made for the agent at `path` (directory `worktree`, on `branch`).
    #[serde(rename = "worktree.created")]
    WorktreeCreated {
        path: AgentPath,
        worktree: String,
        branch: String,
    },
    /// A merge of the agent's changes into the checkout `into`: the files it changed there,
    /// or the files whose conflicts left that checkout as it was.
    #[serde(rename = "worktree.merged")]
    WorktreeMerged {
        path: AgentPath,
        into: String,
        merged: Vec<String>,
        conflicts: Vec<String>,
    },
    /// The agent was closed with nothing unmerged: its worktree and branch are gone.
    #[serde(rename = "worktree.removed")]
    WorktreeRemoved { path: AgentPath, worktree: String },
    /// The agent was closed with unmerged changes: its worktree and branch stay.
    #[serde(rename = "worktree.kept")]
    WorktreeKept {
        path: AgentPath,
        worktree: String,
        branch: String,
        changes: String,
    },
    /// Something the user should know that is not an error (a setting that could not apply).
    #[serde(rename = "notice")]
    Notice { message: String },
}

impl Event {
    /// The `type` text of this event.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::SessionStarted { .. } => "session.started",
            Self::AgentSpawned { .. } => "agent.spawned",
            Self::TurnStarted { .. } => "turn.started",
            Self::AgentMessage { .. } => "agent.message",
            Self::ToolCall { .. } => "tool.call",
            Self::ToolResult { .. } => "tool.result",
            Self::MailSent { .. } => "mail.sent",
            Self::MailDelivered { .. } => "mail.delivered",
            Self::AgentStatus { .. } => "agent.status",
            Self::AgentEvicted { .. } => "agent.evicted",
            Self::AgentRevived { .. } => "agent.revived",
            Self::ApprovalRequested { .. } => "approval.requested",
            Self::ApprovalDecided { .. } => "approval.decided",
            Self::AgentRetrying { .. } => "agent.retrying",
            Self::ModelFallback { .. } => "model.fallback",
            Self::Usage { .. } => "usage",
            Self::AgentCompacted { .. } => "agent.compacted",
            Self::BudgetExhausted { .. } => "budget.exhausted",
            Self::McpNotice { .. } => "mcp.notice",
            Self::TurnCompleted { .. } => "turn.completed",
            Self::TurnAborted { .. } => "turn.aborted",
            Self::SessionCompleted { .. } => "session.completed",
            Self::WorktreeCreated { .. } => "worktree.created",
            Self::WorktreeMerged { .. } => "worktree.merged",
            Self::WorktreeRemoved { .. } => "worktree.removed",
            Self::WorktreeKept { .. } => "worktree.kept",
            Self::Notice { .. } => "notice",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_carry_type_and_ts() {
        let line = EventLine {
            lsn: 0,
            event: Event::TurnStarted {
                path: AgentPath::root(),
            },
            ts: Timestamp::from_millis(0),
        };
        let text = serde_json::to_string(&line).expect("ser");
        assert_eq!(
            text,
            r#"{"type":"turn.started","path":"/root","ts":"1970-01-01T00:00:00.000Z"}"#
        );
        assert_eq!(serde_json::from_str::<EventLine>(&text).expect("de"), line);
        let status = Event::AgentStatus {
            path: AgentPath::root(),
            status: AgentStatus::Completed(Some("ok".into())),
        };
        let value = serde_json::to_value(&status).expect("ser");
        assert_eq!(value["type"], status.type_name());
        assert_eq!(value["status"]["completed"], "ok");
    }
}
