//! Asking a human: the terminal's queue of prompts (`Orchestrator::take_approval_prompts`),
//! answers from another process (`arbor approve|deny`, through the log), and the approval
//! wait, after which nobody has answered (`no_approver`). A prompt is shown only once the
//! request is durable.

use std::sync::Arc;
use std::time::Duration;

use arbor_protocol::AgentPath;
use arbor_rollout::log::Urgency;
use serde_json::Value;
use tokio::sync::oneshot;

use super::broker::{Request, Settled};
use crate::ctx::Ctx;

/// A human's answer at the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TerminalAnswer {
    ApproveOnce,
    /// Approve this command in this cwd for the rest of the session.
    ApproveForSession,
    Deny,
}

/// One approval request for the terminal. Answer it with [`ApprovalPrompt::answer`]; a prompt
/// whose request was decided meanwhile (another process, the approval wait) is closed.
#[derive(Debug)]
pub struct ApprovalPrompt {
    pub id: String,
    /// The requester.
    pub path: AgentPath,
    /// The exact planned action.
    pub action: Value,
    pub justification: Option<String>,
    /// Asked before this process started: its requester no longer waits, and an approval lets
    /// the identical retry through once.
    pub from_before: bool,
    reply: Reply,
}

#[derive(Debug)]
enum Reply {
    Waiter(oneshot::Sender<TerminalAnswer>),
    /// A request from before this process started: its answer is recorded by the driver.
    Stored(Arc<Ctx>),
}

impl ApprovalPrompt {
    /// Whether the request still waits for this answer.
    pub fn is_open(&self) -> bool {
        match &self.reply {
            Reply::Waiter(tx) => !tx.is_closed(),
            Reply::Stored(inner) => inner.approvals.watched.is_orphan(&self.id),
        }
    }

    /// Answers the request. Err when it was decided meanwhile.
    pub async fn answer(self, answer: TerminalAnswer) -> Result<(), String> {
        match self.reply {
            Reply::Waiter(tx) => tx
                .send(answer)
                .map_err(|_| format!("request {} was already decided", self.id)),
            Reply::Stored(inner) => {
                if !inner.approvals.watched.is_orphan(&self.id) {
                    return Err(format!("request {} was already decided", self.id));
                }
                let approve = answer != TerminalAnswer::Deny;
                super::watch::answered(&inner, &self.id, approve);
                Ok(())
            }
        }
    }
}

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
pub fn reachable(inner: &Ctx) -> bool {
    inner.config.approval_terminal || inner.config.approval_wait != Some(Duration::ZERO)
}

/// Asks a human about a pending request and waits for the first of: the terminal's answer, a
/// decision stored by another process, the end of the approval wait.
pub async fn ask(inner: &Arc<Ctx>, request: &Request, path: &AgentPath) -> HumanResult {
    let approvals = &inner.approvals;
    if !reachable(inner) {
        return HumanResult::TimedOut;
    }
    // A person sees the request only once it is durable.
    if inner
        .log
        .durable(inner.log.appended(), Urgency::Now)
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
    let deadline = deadline(inner.config.approval_wait);
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
pub fn restore_orphans(inner: &Arc<Ctx>, pending: Vec<arbor_agent_graph::ApprovalRecord>) {
    let approvals = &inner.approvals;
    for record in pending {
        approvals.watched.add_orphan(&record.id);
        approvals.prompt(ApprovalPrompt {
            id: record.id.clone(),
            path: record.requester.clone(),
            action: record.action.clone(),
            justification: record.justification.clone(),
            from_before: true,
            reply: Reply::Stored(Arc::clone(inner)),
        });
    }
}
