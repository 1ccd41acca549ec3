//! The session's approval broker: how a request and its decision are recorded (store,
//! requester's rollout, events) and how the requester's status follows.
//!
//! The approval log is primary data, like mail: a request is appended to the requester's
//! rollout, then committed to the store, then announced. A decision is committed to the store
//! first, because the store arbitrates between the terminal, another process and the deadline
//! (the first decision of a pending request wins), then appended to the rollout, then announced.

use arbor_agent_graph::{
    ApprovalDecision, ApprovalOutcome, ApprovalRecord, DecidedBy, Opened, OverrideKey,
};
use arbor_protocol::{AgentStatus, ApprovalDecided, ApprovalRequested, Event, RolloutItem};
use serde_json::Value;

use crate::agent::Agent;
use crate::runtime::Inner;

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

    /// A decision another process stored (a human's answer with `arbor approve|deny`).
    pub fn from_record(record: &ApprovalRecord) -> Self {
        let decided_by = record.decided_by.unwrap_or(DecidedBy::User);
        let message = match record.outcome {
            ApprovalOutcome::Allow => None,
            ApprovalOutcome::Pending | ApprovalOutcome::Deny => {
                Some(arbor_guardian::denied_message(Some(
                    record.rationale.as_deref().unwrap_or("denied by the user"),
                )))
            }
            ApprovalOutcome::ReviewUnavailable => Some(arbor_guardian::unavailable_message(
                record.rationale.as_deref().unwrap_or("unknown"),
            )),
            ApprovalOutcome::NoApprover => Some(arbor_guardian::no_approver_message()),
        };
        Self {
            outcome: record.outcome,
            decided_by,
            risk_level: record.risk_level.clone(),
            rationale: record.rationale.clone(),
            tokens: record.tokens,
            message,
        }
    }

    pub fn allowed(&self) -> bool {
        self.outcome == ApprovalOutcome::Allow
    }

    fn decision(&self) -> ApprovalDecision {
        ApprovalDecision {
            outcome: self.outcome,
            decided_by: self.decided_by,
            risk_level: self.risk_level.clone(),
            rationale: self.rationale.clone(),
            tokens: self.tokens,
        }
    }
}

/// Fills in a decision known when the request is recorded (decided the moment it was made).
fn decide_at_once(record: &mut ApprovalRecord, settled: &Settled) {
    record.outcome = settled.outcome;
    record.decided_by = Some(settled.decided_by);
    record.risk_level = settled.risk_level.clone();
    record.rationale = settled.rationale.clone();
    record.tokens = settled.tokens;
    record.decided_at = Some(record.requested_at);
}

fn record_of(inner: &Inner, agent: &Agent, request: &Request) -> ApprovalRecord {
    ApprovalRecord::pending(
        request.id.clone(),
        inner.session_id,
        agent.id(),
        agent.path().clone(),
        request.action.clone(),
        request.justification.clone(),
    )
}

fn requested_line(request: &Request) -> RolloutItem {
    RolloutItem::ApprovalRequested(ApprovalRequested {
        request_id: request.id.clone(),
        action: request.action.clone(),
        justification: request.justification.clone(),
    })
}

pub fn decided_line(id: &str, settled: &Settled) -> RolloutItem {
    RolloutItem::ApprovalDecided(ApprovalDecided {
        request_id: id.to_string(),
        outcome: settled.outcome.as_str().to_string(),
        decided_by: Some(settled.decided_by.as_str().to_string()),
        risk_level: settled.risk_level.clone(),
        rationale: settled.rationale.clone(),
        tokens: settled.tokens,
    })
}

fn announce_request(inner: &Inner, agent: &Agent, request: &Request) {
    inner.events.emit(Event::ApprovalRequested {
        id: request.id.clone(),
        path: agent.path().clone(),
        action: request.action.clone(),
    });
}

/// Emits `approval.decided`.
pub fn announce_decision(inner: &Inner, id: &str, settled: &Settled) {
    inner.events.emit(Event::ApprovalDecided {
        id: id.to_string(),
        outcome: settled.outcome.as_str().to_string(),
        decided_by: Some(settled.decided_by.as_str().to_string()),
        risk_level: settled.risk_level.clone(),
        rationale: settled.rationale.clone(),
    });
}

/// Records a request that is decided as it is made (policy, session cache, override): both
/// lines in the rollout, one row in the store, then both events.
pub async fn record_settled(
    inner: &Inner,
    agent: &Agent,
    request: &Request,
    settled: &Settled,
) -> Result<(), String> {
    agent
        .record(&[requested_line(request), decided_line(&request.id, settled)])
        .map_err(|err| format!("the approval request could not be recorded: {err}"))?;
    let mut record = record_of(inner, agent, request);
    decide_at_once(&mut record, settled);
    inner
        .store
        .record_approval_request(record)
        .await
        .map_err(|err| format!("the approval request could not be recorded: {err}"))?;
    announce_request(inner, agent, request);
    announce_decision(inner, &request.id, settled);
    Ok(())
}

/// Opens a request in one commit: an override from `arbor approve` for this identical request
/// lets it through at once (recorded as allowed by the user, returned); otherwise, with a
/// decision already known (`settled`: nobody can be asked), it is recorded decided (returned);
/// otherwise it is recorded pending and the requester marked `awaiting_approval` (written in
/// the same commit; its event follows `approval.requested`), and `None` is returned.
pub async fn open(
    inner: &Inner,
    agent: &Agent,
    request: &Request,
    settled: Option<Settled>,
) -> Result<Option<Settled>, String> {
    agent
        .record(&[requested_line(request)])
        .map_err(|err| format!("the approval request could not be recorded: {err}"))?;
    let mut record = record_of(inner, agent, request);
    if let Some(settled) = &settled {
        decide_at_once(&mut record, settled);
    }
    let opened = inner
        .store
        .open_approval(record, AgentStatus::AwaitingApproval, request.key.clone())
        .await
        .map_err(|err| format!("the approval request could not be recorded: {err}"))?;
    let decided = match (opened, settled) {
        (Opened::Overridden(record), _) => Settled::from_record(&record),
        (Opened::Recorded, Some(settled)) => settled,
        (Opened::Pending | Opened::Recorded, _) => {
            let status = stage_status(agent, Step::Open);
            announce_request(inner, agent, request);
            if let Some(status) = status {
                announce_status(inner, agent, status);
            }
            return Ok(None);
        }
    };
    agent
        .record(&[decided_line(&request.id, &decided)])
        .map_err(|err| format!("the approval decision could not be recorded: {err}"))?;
    announce_request(inner, agent, request);
    announce_decision(inner, &request.id, &decided);
    Ok(Some(decided))
}

/// Decides a pending request: `settled` unless another process decided it first, in which case
/// that decision stands (and an approval's override is used up by this very request). Then the
/// rollout line, the event, and the requester back to `running` (written in the decision's
/// commit; its event follows `approval.decided`).
pub async fn close(inner: &Inner, agent: &Agent, request: &Request, settled: Settled) -> Settled {
    let status = stage_status(agent, Step::Close);
    let decided = inner
        .store
        .close_approval(
            &request.id,
            settled.decision(),
            status.clone().map(|status| (agent.id(), status)),
        )
        .await;
    let settled = match decided {
        Ok(true) => settled,
        Ok(false) => adopt_stored(inner, &request.id).await.unwrap_or(settled),
        Err(err) => {
            tracing::error!(id = %request.id, error = %err, "approval decision not stored");
            settled
        }
    };
    if let Err(err) = agent.record(&[decided_line(&request.id, &settled)]) {
        tracing::error!(path = %agent.path(), error = %err, "approval decision not in the rollout");
    }
    announce_decision(inner, &request.id, &settled);
    if let Some(status) = status {
        announce_status(inner, agent, status);
    }
    settled
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    Open,
    Close,
}

/// Counts the agent's open requests; on the first opened (the last closed) sets its status in
/// memory and returns it, to be written and announced by the caller.
fn stage_status(agent: &Agent, step: Step) -> Option<AgentStatus> {
    let mut state = agent.state();
    let status = match step {
        Step::Open => {
            state.approvals_open += 1;
            if state.approvals_open != 1 {
                return None;
            }
            AgentStatus::AwaitingApproval
        }
        Step::Close => {
            state.approvals_open = state.approvals_open.saturating_sub(1);
            if state.approvals_open != 0 || state.status != AgentStatus::AwaitingApproval {
                return None;
            }
            AgentStatus::Running
        }
    };
    state.status = status.clone();
    Some(status)
}

fn announce_status(inner: &Inner, agent: &Agent, status: AgentStatus) {
    inner.events.emit(Event::AgentStatus {
        path: agent.path().clone(),
        status,
    });
    inner.bump();
}

/// The decision another process stored for `id`; an approval's override is used up here.
pub async fn adopt_stored(inner: &Inner, id: &str) -> Option<Settled> {
    let store = inner.store.clone();
    let key = id.to_string();
    let record = tokio::task::spawn_blocking(move || store.approval(&key))
        .await
        .ok()?
        .ok()??;
    if record.outcome == ApprovalOutcome::Pending {
        return None;
    }
    let settled = Settled::from_record(&record);
    if settled.allowed()
        && let Err(err) = inner.store.use_own_override(id).await
    {
        tracing::error!(id, error = %err, "override of an answered request not used up");
    }
    Some(settled)
}
