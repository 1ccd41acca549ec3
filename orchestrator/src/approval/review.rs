//! Routing one pending request to its reviewer: the user, or the guardian with its fallbacks
//! (a failed review goes to a reachable human; three denials in one turn hand the next request
//! to the human, or, headless, interrupt the turn).

use std::sync::{Arc, PoisonError};

use arbor_agent_graph::{ApprovalOutcome, DecidedBy};
use arbor_guardian::{BreakerVerdict, Decision, DecisionOutcome};
use arbor_protocol::ApprovalsReviewer;

use super::broker::{self, Request, Settled};
use super::guardian;
use super::human::{self, HumanResult};
use super::prompt::TerminalAnswer;
use crate::agent::Agent;
use crate::ctx::Ctx;

/// Why a turn is interrupted when its agent keeps being denied and no human is reachable.
pub const BREAKER_INTERRUPT: &str = "approval denied three times in a row";

/// Records the request as pending, has it decided, records the decision; the requester is
/// `awaiting_approval` meanwhile. An override from `arbor approve` decides it at once, and so
/// does a reviewer that cannot be asked (a headless user; the breaker with no human reachable,
/// which also interrupts the turn: then this never returns, the turn ends around it).
pub async fn decide(
    ctx: &Arc<Ctx>,
    agent: &Arc<Agent>,
    request: &Request,
) -> Result<Settled, String> {
    let reachable = human::reachable(ctx);
    let breaker = match ctx.config.reviewer {
        ApprovalsReviewer::User => None,
        ApprovalsReviewer::Guardian => Some(
            ctx.approvals
                .breaker
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .check(&agent.id(), request.turn, reachable),
        ),
    };
    let immediate = match breaker {
        None if !reachable => Some(nobody_to_ask()),
        Some(BreakerVerdict::InterruptTurn) => Some(Settled::refuse(
            ApprovalOutcome::Deny,
            DecidedBy::Policy,
            Some(format!(
                "{BREAKER_INTERRUPT} in this turn and no human is reachable: the turn is interrupted"
            )),
            arbor_guardian::denied_message(Some(BREAKER_INTERRUPT)),
        )),
        None | Some(BreakerVerdict::Review | BreakerVerdict::HandToHuman) => None,
    };
    let interrupt = immediate.is_some() && breaker == Some(BreakerVerdict::InterruptTurn);
    if let Some(decided) = broker::open(ctx, agent, request, immediate).await? {
        if interrupt && !decided.allowed() {
            ctx.session.send(arbor_tree::Input::Interrupt {
                target: agent.id(),
                reason: BREAKER_INTERRUPT.to_string(),
                ticket: None,
            });
            // The turn is cancelled: it ends at its next poll, so nothing of this call is used.
            std::future::pending::<()>().await;
        }
        return Ok(decided);
    }
    // Should the requester's turn end before a decision, the request stays pending and is
    // watched as an orphan: `arbor approve` then lets its identical retry through.
    let pending = ctx.approvals.watched.guard(&request.id);
    let settled = match breaker {
        None => ask_human(ctx, agent, request, None).await,
        Some(verdict) => by_guardian(ctx, agent, request, verdict).await,
    };
    let settled = broker::close(ctx, agent, request, settled).await;
    pending.settle();
    Ok(settled)
}

/// The guardian's decision, or the human's where the breaker (`verdict`) or a failed review
/// says so. Every decision counts for the breaker.
async fn by_guardian(
    ctx: &Arc<Ctx>,
    agent: &Arc<Agent>,
    request: &Request,
    verdict: BreakerVerdict,
) -> Settled {
    let settled = match verdict {
        BreakerVerdict::HandToHuman | BreakerVerdict::InterruptTurn => {
            let note = format!("handed to the user: {BREAKER_INTERRUPT} in this turn");
            ask_human(ctx, agent, request, Some(&note)).await
        }
        BreakerVerdict::Review => {
            let (decision, tokens) = guardian::review(ctx, agent, request).await;
            match &decision.outcome {
                DecisionOutcome::ReviewUnavailable(reason) if human::reachable(ctx) => {
                    let note = format!("the guardian's review failed ({reason})");
                    let mut settled = ask_human(ctx, agent, request, Some(&note)).await;
                    if settled.outcome == ApprovalOutcome::NoApprover {
                        settled = from_guardian(&decision, tokens);
                        settled.rationale = Some(format!("{reason}; no human answered"));
                    }
                    settled
                }
                _ => from_guardian(&decision, tokens),
            }
        }
    };
    let counted = Decision {
        outcome: if settled.allowed() {
            DecisionOutcome::Allow
        } else {
            DecisionOutcome::Deny
        },
        risk_level: None,
        rationale: None,
        user_authorization: None,
    };
    ctx.approvals
        .breaker
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .record(agent.id(), request.turn, &counted);
    settled
}

fn from_guardian(decision: &Decision, tokens: Option<u64>) -> Settled {
    let (outcome, rationale) = match &decision.outcome {
        DecisionOutcome::Allow => (ApprovalOutcome::Allow, decision.rationale.clone()),
        DecisionOutcome::Deny => (ApprovalOutcome::Deny, decision.rationale.clone()),
        DecisionOutcome::ReviewUnavailable(reason) => {
            (ApprovalOutcome::ReviewUnavailable, Some(reason.clone()))
        }
    };
    Settled {
        outcome,
        decided_by: DecidedBy::Guardian,
        risk_level: decision.risk_level.map(|risk| risk.as_str().to_string()),
        rationale,
        tokens,
        message: decision.model_message(),
    }
}

/// Asks a human; `note` (why the human is asked instead of the guardian) joins the rationale.
async fn ask_human(
    ctx: &Arc<Ctx>,
    agent: &Arc<Agent>,
    request: &Request,
    note: Option<&str>,
) -> Settled {
    let with_note = |text: &str| match note {
        Some(note) => format!("{text}; {note}"),
        None => text.to_string(),
    };
    match human::ask(ctx, request, agent.path()).await {
        HumanResult::Terminal(TerminalAnswer::ApproveOnce) => Settled::allow(
            DecidedBy::User,
            Some(with_note("approved once by the user")),
        ),
        HumanResult::Terminal(TerminalAnswer::ApproveForSession) => {
            ctx.approvals.cache_for_session(&request.key);
            Settled::allow(
                DecidedBy::User,
                Some(with_note("approved for the session by the user")),
            )
        }
        HumanResult::Terminal(TerminalAnswer::Deny) => {
            let rationale = with_note("denied by the user");
            Settled::refuse(
                ApprovalOutcome::Deny,
                DecidedBy::User,
                Some(rationale.clone()),
                arbor_guardian::denied_message(Some(&rationale)),
            )
        }
        HumanResult::Stored(settled) => settled,
        HumanResult::TimedOut => {
            let mut settled = no_approver();
            settled.rationale = settled.rationale.map(|text| with_note(&text));
            settled
        }
    }
}

/// No terminal answers and the approval wait is 0: nobody could have been asked, and the
/// audit says so (rather than that nobody answered in time).
fn nobody_to_ask() -> Settled {
    let mut settled = no_approver();
    settled.rationale = Some(
        "nobody could be asked: no terminal answers here and the approval wait is 0 \
         (--approval-wait SECONDS lets `arbor approve` answer)"
            .to_string(),
    );
    settled
}

fn no_approver() -> Settled {
    Settled::refuse(
        ApprovalOutcome::NoApprover,
        DecidedBy::Policy,
        Some("no approver answered within the approval wait".to_string()),
        arbor_guardian::no_approver_message(),
    )
}
