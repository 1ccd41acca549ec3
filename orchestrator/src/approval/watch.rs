//! Requests waiting for a human, and human answers that reach the driver from elsewhere: from
//! another process through the log (`arbor approve|deny` append a `user_answer` line), or at
//! the terminal for a request from before a restart. The driver turns each answer into the
//! lines that decide the request or grant an override, so every decision has one author.

use arbor_agent_graph::{AnswerOutcome, ApprovalOutcome, answer_outcome};
use arbor_protocol::{OverrideUsed, RolloutItem};

use super::broker::{Settled, announce_decision, decided_line, override_line};
use crate::ctx::Ctx;

/// A human's answer to request `id`, given outside its waiter: a pending request that is waited
/// on gets it at once (an approval also grants an override, used up by the request itself); an
/// orphan is decided now (an approval leaves an override for the identical retry); a denial
/// that can be overridden gets an override; anything else changes nothing.
pub fn answered(ctx: &Ctx, id: &str, approve: bool) {
    let approvals = &ctx.approvals;
    let Some(known) = approvals.ledger().get(id).cloned() else {
        tracing::warn!(
            id,
            "an answer to an approval request this session does not know"
        );
        return;
    };
    let requester = ctx.registry.get(known.requester);
    let append = |lines: &[RolloutItem]| {
        let result = match &requester {
            Some(agent) => agent.record(lines.iter().cloned()).map(|_| ()),
            None => ctx
                .log
                .append(known.requester, lines.iter().cloned())
                .map(|_| ()),
        };
        if let Err(err) = result {
            tracing::error!(id, error = %err, "approval answer not recorded");
        }
    };
    let waiter = approvals.watched.lock_waiters().remove(id);
    if let Some(waiter) = waiter {
        if approve && let Some(key) = &known.key {
            // The waiter runs the approved action: the approval's override is used by the
            // request itself.
            append(&[
                override_line(id, key),
                RolloutItem::OverrideUsed(OverrideUsed {
                    request_id: id.to_string(),
                    used_by: id.to_string(),
                }),
            ]);
            approvals.ledger().grant(id, key.clone(), true);
        }
        let _ = waiter.send(Settled::by_user(approve));
        return;
    }
    match known.outcome {
        ApprovalOutcome::Pending => {
            let settled = Settled::by_user(approve);
            let mut lines = vec![decided_line(id, &settled)];
            if approve && let Some(key) = &known.key {
                lines.push(override_line(id, key));
                approvals.ledger().grant(id, key.clone(), false);
            }
            append(&lines);
            approvals
                .ledger()
                .decide(id, settled.outcome, settled.decided_by);
            approvals.watched.lock_orphans().remove(id);
            announce_decision(ctx, id, &settled);
        }
        outcome => {
            let overridden = approvals.ledger().overridden(id);
            if answer_outcome(outcome, known.decided_by, overridden, approve)
                == AnswerOutcome::Overridden
                && let Some(key) = &known.key
            {
                append(&[override_line(id, key)]);
                approvals.ledger().grant(id, key.clone(), false);
            }
        }
    }
}
