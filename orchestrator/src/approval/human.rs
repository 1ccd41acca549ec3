//! Asking a human: the terminal's queue of prompts (`Orchestrator::take_approval_prompts`),
//! answers from another process (`arbor approve|deny`, through the log), and the approval
//! wait, after which nobody has answered (`no_approver`). A prompt is shown only once the
//! request is durable.

use std::sync::Arc;
use std::time::Duration;

use arbor_protocol::AgentPath;
use arbor_rollout::log::Urgency;
use tokio::sync::oneshot;

use super::prompt::{ApprovalPrompt, Reply, TerminalAnswer};
use super::request::{Request, Settled};
use crate::ctx::Ctx;

/// What came of asking a human.
#[derive(Debug)]
pub enum HumanResult {
    Terminal(TerminalAnswer),
    /// A human answered from another process.
    Stored(Settled),
    /// Nobody answered within the approval wait.
    TimedOut,
}

/// Whether a human can answer at all: a terminal is attached, or the approval wait leaves
/// time for `arbor approve` from another process.
pub fn reachable(ctx: &Ctx) -> bool {
    ctx.config.approval_terminal || ctx.config.approval_wait != Some(Duration::ZERO)
}

/// Asks a human about a pending request and waits for the first of: the terminal's answer, a
/// decision stored by another process, the end of the approval wait.
pub async fn ask(ctx: &Arc<Ctx>, request: &Request, path: &AgentPath) -> HumanResult {
    let approvals = &ctx.approvals;
    if !reachable(ctx) {
        return HumanResult::TimedOut;
    }
    // A person sees the request only once it is durable.
    if ctx
        .log
        .durable(ctx.log.appended(), Urgency::Now)
        .await
        .is_err()
    {
        return HumanResult::TimedOut;
    }
    let (stored, guard) = approvals.watched.wait_for(&request.id);
    let (tx, rx) = oneshot::channel();
    approvals.prompt(ApprovalPrompt {
        id: request.id.clone(),
        path: path.clone(),
        action: request.action.clone(),
        justification: request.justification.clone(),
        from_before: false,
        reply: Reply::Waiter(tx),
    });
    let deadline = deadline(ctx.config.approval_wait);
    let result = tokio::select! {
        Ok(answer) = rx => HumanResult::Terminal(answer),
        Ok(settled) = stored => HumanResult::Stored(settled),
        () = deadline => HumanResult::TimedOut,
    };
    guard.settle();
    result
}

async fn deadline(wait: Option<Duration>) {
    match wait {
        Some(wait) => tokio::time::sleep(wait).await,
        None => std::future::pending().await,
    }
}

/// Offers the requests that were pending when this session last stopped to the terminal, and
/// watches them for answers from other processes.
pub fn restore_orphans(ctx: &Arc<Ctx>, pending: Vec<arbor_agent_graph::ApprovalRecord>) {
    let approvals = &ctx.approvals;
    for record in pending {
        approvals.watched.add_orphan(&record.id);
        approvals.prompt(ApprovalPrompt {
            id: record.id.clone(),
            path: record.requester.clone(),
            action: record.action.clone(),
            justification: record.justification.clone(),
            from_before: true,
            reply: stored_reply(ctx, &record.id),
        });
    }
}

/// The reply of a prompt for a request from before this process started.
fn stored_reply(ctx: &Arc<Ctx>, id: &str) -> Reply {
    let (probe, driver) = (Arc::clone(ctx), Arc::clone(ctx));
    let (probe_id, driver_id) = (id.to_string(), id.to_string());
    Reply::Stored {
        open: Box::new(move || probe.approvals.watched.is_orphan(&probe_id)),
        answer: Box::new(move |approve| super::watch::answered(&driver, &driver_id, approve)),
    }
}

/// At resume: the ledger from the session's state, the requests still pending watched as
/// orphans (and offered to the terminal), and the answers other processes gave while no
/// driver ran acted on now.
pub fn restore(
    ctx: &Arc<Ctx>,
    state: &arbor_agent_graph::SessionState,
    pending: Vec<arbor_agent_graph::ApprovalRecord>,
) {
    *ctx.approvals.ledger() = super::ledger::Ledger::from_state(state);
    restore_orphans(ctx, pending);
    for (id, approve) in &state.answers {
        super::watch::answered(ctx, id, *approve);
    }
}
