//! What other processes appended to the session's log while this process drives it (`arbor
//! send`, `followup`, `close`, `interrupt`, `approve`, `deny`): the log's writer reads their
//! lines back within its poll interval, and this task applies them in log order.

use std::sync::Arc;

use arbor_protocol::{RolloutItem, RolloutLine};
use tokio::sync::mpsc;

use crate::runtime::Inner;
use crate::tools::manage;

/// Applies lines of other processes as they come, until the session stops.
pub fn watch(inner: &Arc<Inner>, mut external: mpsc::UnboundedReceiver<RolloutLine>) {
    let inner = Arc::clone(inner);
    let token = inner.root_token.clone();
    inner.clone().tracker.spawn(async move {
        loop {
            let line = tokio::select! {
                () = token.cancelled() => break,
                line = external.recv() => match line {
                    Some(line) => line,
                    None => break,
                },
            };
            apply(&inner, line).await;
            inner.ingested.send_modify(|applied| *applied += 1);
        }
    });
}

async fn apply(inner: &Arc<Inner>, line: RolloutLine) {
    match line.item {
        RolloutItem::UserMail(user) => {
            let Some(agent) = inner.registry.get(user.recipient_id) else {
                return;
            };
            crate::mail::announce(inner, &user.mail);
            crate::mail::push(inner, &agent, user.mail);
        }
        RolloutItem::UserClose(target) => {
            if let Some(agent) = inner.registry.get(target.target_id)
                && !agent.state().closed
            {
                match manage::close(inner, None, &agent).await {
                    Ok(_) => {
                        crate::worktrees::release(inner, &agent).await;
                    }
                    Err(err) => {
                        tracing::error!(path = %agent.path(), error = %err, "close from another process failed");
                    }
                }
            }
        }
        RolloutItem::UserInterrupt(target) => {
            if let Some(agent) = inner.registry.get(target.target_id) {
                manage::interrupt(inner, &agent);
            }
        }
        RolloutItem::UserAnswer(answer) => {
            crate::approval::answered(inner, &answer.request_id, answer.approve);
        }
        RolloutItem::Worktree(fact) => {
            if let Some(thread) = line.thread {
                crate::worktrees::ingest(inner, thread, &fact);
            }
        }
        // Other lines of other processes carry nothing this process acts on.
        RolloutItem::SessionMeta(_)
        | RolloutItem::TurnStarted(_)
        | RolloutItem::TurnCompleted(_)
        | RolloutItem::TurnAborted(_)
        | RolloutItem::ResponseItem(_)
        | RolloutItem::MailSent(_)
        | RolloutItem::MailConsumed(_)
        | RolloutItem::AgentClosed(_)
        | RolloutItem::ApprovalRequested(_)
        | RolloutItem::ApprovalDecided(_)
        | RolloutItem::Usage(_)
        | RolloutItem::Status(_)
        | RolloutItem::ApprovalOverride(_)
        | RolloutItem::OverrideUsed(_) => {}
    }
}
