//! Approval requests as the `Session` object keeps them (behaviour §7): each request with its
//! decision, what makes a retry identical, the override a human's approval leaves, who a
//! pending request waits for, and the decisions with the texts the requester's model reads.
//! Pure data; the rules of a human's answer are `arbor-agent-graph`'s (`answer_outcome`), the
//! verdicts and sentences `arbor-guardian`'s, so both engines answer alike.

use arbor_agent_graph::{ApprovalOutcome, DecidedBy};
use arbor_guardian::{Decision, DecisionOutcome};
use arbor_protocol::{AgentPath, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the guardian's model reads when its own command would need approval (the local
/// engine's sentence).
pub const GUARDIAN_CANNOT_ASK: &str =
    "This action needs approval, which the guardian cannot ask for, so it was not run.";

/// Why a turn is interrupted when its agent keeps being denied and no human is reachable (the
/// local engine's words).
pub const BREAKER_INTERRUPT: &str = "approval denied three times in a row";

/// What makes a retry identical to the request it retries (with the requester's path): the
/// canonical command, the resolved working directory, and whether it asked to leave the
/// sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalKey {
    pub command: String,
    pub cwd: String,
    pub escalated: bool,
}

/// The override a human's approval leaves: the identical retry runs once without asking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub granted_at: Timestamp,
    /// The request that used it (the approved request itself when its waiter ran it).
    pub used_by: Option<String>,
    pub used_at: Option<Timestamp>,
}

/// Who a pending request waits for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Route {
    /// Decided as it was made.
    #[default]
    Decided,
    /// The guardian reviews it (queued, or under review).
    Guardian,
    /// A human answers it (`arbor approve|deny`). `note` says why a human and not the
    /// guardian; `unavailable` is the guardian's failed review it fell back from, which
    /// decides it if nobody answers.
    Human {
        note: Option<String>,
        unavailable: Option<String>,
    },
}

/// One approval request and, once decided, its decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    pub id: String,
    pub path: AgentPath,
    /// The exact planned action, as the local engine shows it.
    pub action: Value,
    pub justification: Option<String>,
    pub key: ApprovalKey,
    #[serde(with = "outcome_name")]
    pub outcome: ApprovalOutcome,
    #[serde(with = "decider_name")]
    pub decided_by: Option<DecidedBy>,
    pub risk_level: Option<String>,
    pub rationale: Option<String>,
    pub requested_at: Timestamp,
    pub decided_at: Option<Timestamp>,
    /// The requester's turn when it asked (the denial breaker counts per turn).
    pub turn: u64,
    /// The awakeable of the turn waiting for the decision; `None` once nobody waits.
    pub waiter: Option<String>,
    pub route: Route,
    /// It went to the guardian: the breaker counts its decision.
    pub reviewed: bool,
    /// The guardian's review request, until it is handed to the guardian.
    pub review: Option<String>,
    /// The override a human's approval left.
    pub grant: Option<Grant>,
}

impl Approval {
    pub fn is_pending(&self) -> bool {
        self.outcome == ApprovalOutcome::Pending
    }

    /// An unused override for the identical retry of `key` by `path`.
    pub fn grants(&self, path: &AgentPath, key: &ApprovalKey) -> bool {
        &self.path == path
            && &self.key == key
            && self
                .grant
                .as_ref()
                .is_some_and(|grant| grant.used_by.is_none())
    }
}

/// How a request ends, and what the requester's model reads when the action may not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settle {
    pub outcome: ApprovalOutcome,
    pub decided_by: DecidedBy,
    pub risk_level: Option<String>,
    pub rationale: Option<String>,
    /// The text the model reads instead of the command's output; `None` when it may run.
    pub message: Option<String>,
}

impl Settle {
    pub fn allow(decided_by: DecidedBy, rationale: Option<String>) -> Self {
        Self {
            outcome: ApprovalOutcome::Allow,
            decided_by,
            risk_level: None,
            rationale,
            message: None,
        }
    }

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
            message: Some(message),
        }
    }

    /// A human's answer with `arbor approve|deny`.
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

    /// Nobody answered within the approval wait.
    pub fn no_approver() -> Self {
        Self::refuse(
            ApprovalOutcome::NoApprover,
            DecidedBy::Policy,
            Some("no approver answered within the approval wait".to_string()),
            arbor_guardian::no_approver_message(),
        )
    }

    /// Policy `never`.
    pub fn policy_never() -> Self {
        Self::refuse(
            ApprovalOutcome::Deny,
            DecidedBy::Policy,
            Some("approval policy never".to_string()),
            arbor_guardian::policy_never_message(),
        )
    }

    /// The guardian's decision (a failed review included).
    pub fn from_guardian(decision: &Decision) -> Self {
        let (outcome, rationale) = match &decision.outcome {
            DecisionOutcome::Allow => (ApprovalOutcome::Allow, decision.rationale.clone()),
            DecisionOutcome::Deny => (ApprovalOutcome::Deny, decision.rationale.clone()),
            DecisionOutcome::ReviewUnavailable(reason) => {
                (ApprovalOutcome::ReviewUnavailable, Some(reason.clone()))
            }
        };
        Self {
            outcome,
            decided_by: DecidedBy::Guardian,
            risk_level: decision.risk_level.map(|risk| risk.as_str().to_string()),
            rationale,
            message: decision.model_message(),
        }
    }

    pub fn allowed(&self) -> bool {
        self.outcome == ApprovalOutcome::Allow
    }
}

/// `ApprovalOutcome` by its stored name.
mod outcome_name {
    use arbor_agent_graph::ApprovalOutcome;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(outcome: &ApprovalOutcome, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(outcome.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ApprovalOutcome, D::Error> {
        let name = String::deserialize(d)?;
        ApprovalOutcome::parse(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown approval outcome {name}")))
    }
}

/// `Option<DecidedBy>` by its stored name.
mod decider_name {
    use arbor_agent_graph::DecidedBy;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(by: &Option<DecidedBy>, s: S) -> Result<S::Ok, S::Error> {
        match by {
            Some(by) => s.serialize_some(by.as_str()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DecidedBy>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(name) => DecidedBy::parse(&name)
                .map(Some)
                .ok_or_else(|| serde::de::Error::custom(format!("unknown decider {name}"))),
        }
    }
}
