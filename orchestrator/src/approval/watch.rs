//! Requests waiting for a human, and human answers that reach the driver from elsewhere: from
//! another process through the log (`arbor approve|deny` append a `user_answer` line), or at
//! the terminal for a request from before a restart. The driver turns each answer into the
//! lines that decide the request or grant an override, so every decision has one author.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use arbor_agent_graph::{
    AnswerOutcome, ApprovalOutcome, ApprovalRecord, SessionState, answer_outcome,
};
use arbor_protocol::{OverrideUsed, RolloutItem};
use tokio::sync::oneshot;

use super::broker::{Settled, announce_decision, decided_line, override_line};
use crate::ctx::Ctx;

/// Requests a requester waits on (a human may answer them) and orphans (pending requests
/// nobody waits for any more: cut short, or from before a restart).
#[derive(Debug, Default)]
pub struct Watched {
    waiters: Mutex<HashMap<String, oneshot::Sender<Settled>>>,
    orphans: Mutex<HashSet<String>>,
}

impl Watched {
    /// Waits for a human's answer to `id` given elsewhere; resolves with the decision.
    pub fn wait_for(self: &Arc<Self>, id: &str) -> (oneshot::Receiver<Settled>, WaitGuard) {
        let (tx, rx) = oneshot::channel();
        self.lock_waiters().insert(id.to_string(), tx);
        let guard = WaitGuard {
            watched: Arc::clone(self),
            id: id.to_string(),
            settled: false,
        };
        (rx, guard)
    }

    /// Marks `id` an orphan when the returned guard drops unsettled (its requester's turn was
    /// cut short while the request was pending).
    pub fn guard(self: &Arc<Self>, id: &str) -> WaitGuard {
        WaitGuard {
            watched: Arc::clone(self),
            id: id.to_string(),
            settled: false,
        }
    }

    /// Watches a pending request nobody waits for.
    pub fn add_orphan(&self, id: &str) {
        self.lock_orphans().insert(id.to_string());
    }

    /// Whether `id` is a pending request nobody waits for.
    pub fn is_orphan(&self, id: &str) -> bool {
        self.lock_orphans().contains(id)
    }

    fn lock_waiters(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Settled>>> {
        self.waiters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_orphans(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.orphans.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Stops waiting for a request when its waiter is done; a waiter dropped before its request
/// was decided (its turn was cut short) leaves the request watched as an orphan.
#[derive(Debug)]
pub struct WaitGuard {
    watched: Arc<Watched>,
    id: String,
    settled: bool,
}

impl WaitGuard {
    /// The waiter is about to decide the request itself.
    pub fn settle(mut self) {
        self.settled = true;
    }
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        self.watched.lock_waiters().remove(&self.id);
        if !self.settled {
            self.watched.add_orphan(&self.id);
        }
    }
}

/// A human's answer to request `id`, given outside its waiter: a pending request that is waited
/// on gets it at once (an approval also grants an override, used up by the request itself); an
/// orphan is decided now (an approval leaves an override for the identical retry); a denial
/// that can be overridden gets an override; anything else changes nothing.
pub fn answered(inner: &Ctx, id: &str, approve: bool) {
    let approvals = &inner.approvals;
    let Some(known) = approvals.ledger().get(id).cloned() else {
        tracing::warn!(
            id,
            "an answer to an approval request this session does not know"
        );
        return;
    };
    let requester = inner.registry.get(known.requester);
    let append = |lines: &[RolloutItem]| {
        let result = match &requester {
            Some(agent) => agent.record(lines).map(|_| ()),
            None => inner
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
            announce_decision(inner, id, &settled);
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

/// At resume: the ledger from the session's state, the requests still pending watched as
/// orphans (and offered to the terminal), and the answers other processes gave while no
/// driver ran acted on now.
pub fn restore(inner: &Arc<Ctx>, state: &SessionState, pending: Vec<ApprovalRecord>) {
    *inner.approvals.ledger() = super::ledger::Ledger::from_state(state);
    super::human::restore_orphans(inner, pending);
    for (id, approve) in &state.answers {
        answered(inner, id, *approve);
    }
}
