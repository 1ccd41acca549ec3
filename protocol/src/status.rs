//! Agent status and its wire form (behaviour §5).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where an agent stands. Serialises as `"running"` or `{"completed": "…"}` and so on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    PendingInit,
    Queued,
    Running,
    Waiting,
    AwaitingApproval,
    Completed(Option<String>),
    Interrupted(String),
    Errored(String),
    Closed,
    NotFound,
}

impl AgentStatus {
    /// The status name without its detail: `completed`, `running`, …
    pub fn name(&self) -> &'static str {
        match self {
            Self::PendingInit => "pending_init",
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Waiting => "waiting",
            Self::AwaitingApproval => "awaiting_approval",
            Self::Completed(_) => "completed",
            Self::Interrupted(_) => "interrupted",
            Self::Errored(_) => "errored",
            Self::Closed => "closed",
            Self::NotFound => "not_found",
        }
    }

    /// The detail: the last message, or the reason.
    pub fn detail(&self) -> Option<&str> {
        match self {
            Self::Completed(message) => message.as_deref(),
            Self::Interrupted(reason) | Self::Errored(reason) => Some(reason),
            Self::PendingInit
            | Self::Queued
            | Self::Running
            | Self::Waiting
            | Self::AwaitingApproval
            | Self::Closed
            | Self::NotFound => None,
        }
    }

    /// Rebuilds a status from its name and detail, as the store keeps them.
    pub fn from_parts(name: &str, detail: Option<String>) -> Option<Self> {
        Some(match name {
            "pending_init" => Self::PendingInit,
            "queued" => Self::Queued,
            "running" => Self::Running,
            "waiting" => Self::Waiting,
            "awaiting_approval" => Self::AwaitingApproval,
            "completed" => Self::Completed(detail),
            "interrupted" => Self::Interrupted(detail.unwrap_or_default()),
            "errored" => Self::Errored(detail.unwrap_or_default()),
            "closed" => Self::Closed,
            "not_found" => Self::NotFound,
            _ => return None,
        })
    }

    /// True while a turn is active or owed: the agent is not idle.
    pub fn is_active(&self) -> bool {
        matches!(
            self,
            Self::PendingInit
                | Self::Queued
                | Self::Running
                | Self::Waiting
                | Self::AwaitingApproval
        )
    }

    /// True once a turn has ended (completed, interrupted, errored) or the agent is gone.
    pub fn is_final(&self) -> bool {
        !self.is_active()
    }
}

impl fmt::Display for AgentStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.detail() {
            Some(detail) => write!(f, "{}: {detail}", self.name()),
            None => f.write_str(self.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_form_matches_the_contract() {
        let cases = [
            (AgentStatus::PendingInit, r#""pending_init""#),
            (AgentStatus::Queued, r#""queued""#),
            (AgentStatus::Running, r#""running""#),
            (AgentStatus::Waiting, r#""waiting""#),
            (AgentStatus::AwaitingApproval, r#""awaiting_approval""#),
            (
                AgentStatus::Completed(Some("done".into())),
                r#"{"completed":"done"}"#,
            ),
            (AgentStatus::Completed(None), r#"{"completed":null}"#),
            (
                AgentStatus::Interrupted("process_exit".into()),
                r#"{"interrupted":"process_exit"}"#,
            ),
            (AgentStatus::Errored("boom".into()), r#"{"errored":"boom"}"#),
            (AgentStatus::Closed, r#""closed""#),
            (AgentStatus::NotFound, r#""not_found""#),
        ];
        for (status, wire) in cases {
            assert_eq!(serde_json::to_string(&status).expect("ser"), wire);
            assert_eq!(
                serde_json::from_str::<AgentStatus>(wire).expect("de"),
                status
            );
            let detail = status.detail().map(str::to_string);
            assert_eq!(AgentStatus::from_parts(status.name(), detail), Some(status));
        }
        assert_eq!(AgentStatus::from_parts("bogus", None), None);
    }
}
