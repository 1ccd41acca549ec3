//! The session's approval broker: how a request and its decision are recorded (lines of the
//! requester in the session log, the driver's ledger, events) and how the requester's status
//! follows (the session sets it). The driver decides every request of the session it drives, whoever answers (the
//! terminal, the guardian, the approval wait, another process through the log), so the first
//! decision line of a request is the decision.

use arbor_agent_graph::{ApprovalOutcome, DecidedBy, OverrideKey};
use arbor_protocol::{ApprovalDecided, ApprovalRequested, Event, OverrideUsed, RolloutItem};

use super::ledger::Known;
pub use super::request::{Request, Settled};
use crate::agent::Agent;
use crate::ctx::Ctx;
use arbor_tree::Input;

fn requested_line(request: &Request) -> RolloutItem {
    RolloutItem::ApprovalRequested(ApprovalRequested {
        request_id: request.id.clone(),
        action: request.action.clone(),
        justification: request.justification.clone(),
    })
}

pub fn decided_line(id: &str, settled: &Settled) -> RolloutItem {
    RolloutItem::ApprovalDecided(Box::new(ApprovalDecided {
        request_id: id.to_string(),
        outcome: settled.outcome.as_str().to_string(),
        decided_by: Some(settled.decided_by.as_str().to_string()),
        risk_level: settled.risk_level.clone(),
        rationale: settled.rationale.clone(),
        tokens: settled.tokens,
    }))
}

fn announce_request(ctx: &Ctx, agent: &Agent, request: &Request) {
    ctx.events.emit(Event::ApprovalRequested {
        id: request.id.clone(),
        path: agent.path().clone(),
        action: request.action.clone(),
        justification: request.justification.clone(),
    });
}

/// Emits `approval.decided`.
pub fn announce_decision(ctx: &Ctx, id: &str, settled: &Settled) {
    ctx.events.emit(Event::ApprovalDecided {
        id: id.to_string(),
        outcome: settled.outcome.as_str().to_string(),
        decided_by: Some(settled.decided_by.as_str().to_string()),
        risk_level: settled.risk_level.clone(),
        rationale: settled.rationale.clone(),
    });
}

fn known(agent: &Agent, request: &Request, settled: Option<&Settled>) -> Known {
    Known {
        requester: agent.id(),
        key: Some(request.key.clone()),
        outcome: settled.map_or(ApprovalOutcome::Pending, |s| s.outcome),
        decided_by: settled.map(|s| s.decided_by),
    }
}

fn record(agent: &Agent, lines: &[RolloutItem]) -> Result<(), String> {
    agent
        .record(lines.iter().cloned())
        .map(|_| ())
        .map_err(|err| format!("the approval request could not be recorded: {err}"))
}

/// Records a request that is decided as it is made (policy, session cache): both lines, then
/// both events.
pub async fn record_settled(
    ctx: &Ctx,
    agent: &Agent,
    request: &Request,
    settled: &Settled,
) -> Result<(), String> {
    record(
        agent,
        &[requested_line(request), decided_line(&request.id, settled)],
    )?;
    ctx.approvals
        .ledger()
        .insert(&request.id, known(agent, request, Some(settled)));
    announce_request(ctx, agent, request);
    announce_decision(ctx, &request.id, settled);
    Ok(())
}

/// Opens a request: an unused override from a human for this identical request lets it
/// through at once (recorded as allowed by the user, returned); otherwise, with a decision
/// already known (`settled`: nobody can be asked), it is recorded decided (returned);
/// otherwise it is recorded pending and the requester marked `awaiting_approval` (its event
/// follows `approval.requested`), and `None` is returned.
pub async fn open(
    ctx: &Ctx,
    agent: &Agent,
    request: &Request,
    settled: Option<Settled>,
) -> Result<Option<Settled>, String> {
    // An answer another process gave a moment ago (an override for this very retry) counts.
    ctx.catch_up().await?;
    let overridden = ctx.approvals.ledger().take(&request.key);
    let (decided, mut lines) = match (overridden, settled) {
        (Some(overridden), _) => {
            let settled = Settled::allow(
                DecidedBy::User,
                Some(format!("override: the user approved request {overridden}")),
            );
            let used = RolloutItem::OverrideUsed(OverrideUsed {
                request_id: overridden,
                used_by: request.id.clone(),
            });
            (Some(settled), vec![requested_line(request), used])
        }
        (None, settled) => (settled, vec![requested_line(request)]),
    };
    let Some(decided) = decided else {
        record(agent, &lines)?;
        ctx.approvals
            .ledger()
            .insert(&request.id, known(agent, request, None));
        announce_request(ctx, agent, request);
        // The session makes the requester `awaiting_approval` (its event follows this one).
        ctx.session
            .send(Input::ApprovalOpened { agent: agent.id() });
        return Ok(None);
    };
    lines.push(decided_line(&request.id, &decided));
    record(agent, &lines)?;
    ctx.approvals
        .ledger()
        .insert(&request.id, known(agent, request, Some(&decided)));
    announce_request(ctx, agent, request);
    announce_decision(ctx, &request.id, &decided);
    Ok(Some(decided))
}

/// Decides a pending request with `settled`: its line, the event, and the requester back to
/// `running` (its event follows `approval.decided`).
pub async fn close(ctx: &Ctx, agent: &Agent, request: &Request, settled: Settled) -> Settled {
    if let Err(err) = agent.record([decided_line(&request.id, &settled)]) {
        tracing::error!(path = %agent.path(), error = %err, "approval decision not recorded");
    }
    ctx.approvals
        .ledger()
        .decide(&request.id, settled.outcome, settled.decided_by);
    announce_decision(ctx, &request.id, &settled);
    // The session makes the requester `running` again (its event follows this one).
    ctx.session
        .send(Input::ApprovalClosed { agent: agent.id() });
    settled
}

/// The override line of a human's approval of request `id` (thread: the requester).
pub fn override_line(id: &str, key: &OverrideKey) -> RolloutItem {
    RolloutItem::ApprovalOverride(arbor_protocol::ApprovalOverride {
        request_id: id.to_string(),
        command: key.command.clone(),
        cwd: key.cwd.clone(),
        escalated: key.escalated,
    })
}
