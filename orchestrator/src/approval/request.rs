//! One approval request and how it ended: what the broker records, the gate waits on, and the
//! requester's model reads.

use arbor_agent_graph::{ApprovalOutcome, DecidedBy, OverrideKey};
use serde_json::Value;

/// One approval request of an `exec_command` call.
#[derive(Debug, Clone)]
pub struct Request {
    pub id: String,
    pub action: Value,
    pub justification: Option<String>,
    pub key: OverrideKey,
    /// The requester's turn when it asked (the denial breaker counts per turn).
    pub turn: u64,
}

/// How a request ended, and what the requester's model reads when it may not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled {
    pub outcome: ApprovalOutcome,
    pub decided_by: DecidedBy,
    pub risk_level: Option<String>,
    pub rationale: Option<String>,
    pub tokens: Option<u64>,
    /// The model-facing result instead of the command's; `None` when it may run.
    pub message: Option<String>,
}

impl Settled {
    /// An allow.
    pub fn allow(decided_by: DecidedBy, rationale: Option<String>) -> Self {
        Self {
            outcome: ApprovalOutcome::Allow,
            decided_by,
            risk_level: None,
            rationale,
            tokens: None,
            message: None,
        }
    }

    /// Anything but an allow, with the model-facing `message`.
    pub fn refuse(
        outcome: ApprovalOutcome,
        decided_by: DecidedBy,
        rationale: Option<String>,
        message: String,
    ) -> Self {
        Self {
            outcome,
            decided_by,
            risk_level: None,
            rationale,
            tokens: None,
            message: Some(message),
        }
    }

    /// A human's answer from another process (`arbor approve|deny`).
    pub fn by_user(approve: bool) -> Self {
        if approve {
            return Self::allow(DecidedBy::User, None);
        }
        Self::refuse(
            ApprovalOutcome::Deny,
            DecidedBy::User,
            None,
            arbor_guardian::denied_message(Some("denied by the user")),
        )
    }

    pub fn allowed(&self) -> bool {
        self.outcome == ApprovalOutcome::Allow
    }
}
