//! The end of a turn, in two steps. First, in the agent's task: the end line (and the result
//! mail's `mail_sent` line) go to the rollout, the running slot is freed, and the agent is free
//! for its next turn at once. Then, in the background ("settling"): the rollout barrier, the
//! result mail's commit, the final status, and the wakes the result causes. Until it has
//! settled, the turn still counts as active for waits, wake-once and quiescence.

use std::sync::Arc;

use arbor_mailbox::wake_once_due;
use arbor_protocol::{
    AbortKind, AgentStatus, Event, Mail, MailKind, ResponseItem, RolloutItem, TurnAborted,
    TurnCompleted,
};
use arbor_rollout::{cut_call_outputs, unanswered_calls};

use crate::agent::Agent;
use crate::mail;
use crate::outbox;
use crate::runtime::Inner;

/// The least time between the starts of two turn-end barriers of one rollout. An agent whose
/// turns end further apart (any agent on a real model) never waits; one ending turns faster
/// shares a barrier among them. Each barrier is a sync that competes with the store's commits
/// for the disk: at 2 ms a scripted ping-pong spent one rollout sync per five messages, at
/// 10 ms one per fifteen, and passed about 6% more messages per second (`arbor-bench
/// pingpong`, interleaved runs).
const BARRIER_SPACING: std::time::Duration = std::time::Duration::from_millis(10);

/// How a turn ended.
#[derive(Debug)]
pub enum Outcome {
    Completed(Option<String>),
    Aborted(AbortKind, String),
}

/// A result mail written to its author's rollout, waiting to be committed.
struct Result {
    parent: Arc<Agent>,
    mail: Mail,
}

/// Ends turn `turn` of `agent` with `outcome`; settling goes on in a task of its own.
pub fn finish_turn(inner: &Arc<Inner>, agent: &Arc<Agent>, turn: u64, outcome: Outcome) {
    let mut lines = dangling_call_outputs(agent);
    let outputs: Vec<ResponseItem> = lines
        .iter()
        .filter_map(|line| match line {
            RolloutItem::ResponseItem(item) => Some(item.clone()),
            _ => None,
        })
        .collect();
    let (status, result_text) = match &outcome {
        Outcome::Completed(message) => {
            lines.push(RolloutItem::TurnCompleted(TurnCompleted {
                turn,
                last_message: message.clone(),
            }));
            // An empty final answer still tells the parent something: that there was none.
            const NO_ANSWER: &str = "(no answer: the agent ended its turn without a final message)";
            let text = message.as_deref().filter(|text| !text.trim().is_empty());
            (
                AgentStatus::Completed(message.clone()),
                text.unwrap_or(NO_ANSWER).to_string(),
            )
        }
        Outcome::Aborted(kind, reason) => {
            let aborted = TurnAborted {
                turn,
                kind: *kind,
                reason: reason.clone(),
            };
            let status = aborted.status();
            lines.push(RolloutItem::TurnAborted(aborted));
            (status.clone(), status.to_string())
        }
    };
    let closed = agent.state().closed;
    // The result mail is written with the end line, so that one barrier covers both.
    let mut result = if closed {
        None
    } else {
        result_mail(inner, agent, &result_text)
    };
    if let Some(result) = &result {
        lines.push(RolloutItem::MailSent(result.mail.clone()));
    }
    if let Err(err) = agent.record(&lines) {
        tracing::error!(path = %agent.path(), error = %err, "turn end not recorded");
        // A mail that is not in its author's rollout is never sent.
        result = None;
    }
    let end = agent.rollout_end();
    let owes_turn = {
        let mut state = agent.state();
        state.history.extend(outputs);
        state.turn_token = None;
        if let Outcome::Completed(message) = &outcome {
            state.last_message = message.clone();
        }
        state.settling += 1;
        let owes_turn = state.mailbox.end_turn();
        // An agent owed another turn stays scheduled, so that no wait sees it idle in between.
        state.scheduled = owes_turn;
        owes_turn
    };
    match &outcome {
        Outcome::Completed(last_message) => inner.events.emit(Event::TurnCompleted {
            path: agent.path().clone(),
            last_message: last_message.clone(),
        }),
        Outcome::Aborted(_, reason) => inner.events.emit(Event::TurnAborted {
            path: agent.path().clone(),
            reason: reason.clone(),
        }),
    }
    inner.release_turn_slot(agent);
    if owes_turn {
        inner.continue_turn(agent);
    }
    let (inner, agent) = (Arc::clone(inner), Arc::clone(agent));
    inner.clone().tracker.spawn(async move {
        settle(&inner, &agent, turn, end, status, closed, result).await;
    });
}

/// The background half of a turn's end: barrier, result mail, final status, wakes. `end` is
/// where the turn's lines end in the rollout.
async fn settle(
    inner: &Arc<Inner>,
    agent: &Arc<Agent>,
    turn: u64,
    end: u64,
    status: AgentStatus,
    closed: bool,
    result: Option<Result>,
) {
    let sent = {
        // One barrier at a time per rollout, each covering every line written before it: turns
        // that end while one runs share the next. Result mails are queued under the same lock,
        // so they reach the store in turn order.
        let mut last = agent.barriers.lock().await;
        if !agent.rollout_synced_to(end) {
            // Barriers of one rollout start at least BARRIER_SPACING apart: an agent ending
            // turns faster than that shares barriers instead of queueing one per turn.
            if let Some(next) = last.map(|at| at + BARRIER_SPACING)
                && next > std::time::Instant::now()
            {
                tokio::time::sleep_until(next.into()).await;
            }
            *last = Some(std::time::Instant::now());
            // Rollout first: the end line and the result's `mail_sent` line are on disk before
            // the store holds the result.
            if let Err(err) = agent.sync_rollout().await {
                tracing::error!(path = %agent.path(), error = %err, "rollout sync failed");
            }
        }
        // The agent does not wait for this commit, so it may share the next one.
        result.map(|Result { parent, mail }| {
            let (posted, ticket) = outbox::post(inner, agent, || {
                inner
                    .store
                    .enqueue_mail_deferred(inner.session_id, parent.id(), &mail)
            });
            (posted, parent, mail, ticket)
        })
    };
    if let Some((posted, parent, mail, ticket)) = sent
        && let Err(err) = mail::publish(posted, &parent, &mail, ticket).await
    {
        tracing::error!(path = %agent.path(), error = %err, "result mail not sent");
    }
    // The final status, unless a newer turn has begun meanwhile (it owns the status now).
    let final_status = {
        let mut state = agent.state();
        state.settling -= 1;
        let current = !closed && !state.scheduled && state.turn_no == turn;
        if current {
            state.status = status.clone();
        }
        current
    };
    if final_status {
        inner.persist_status(agent, &status);
        inner.events.emit(Event::AgentStatus {
            path: agent.path().clone(),
            status,
        });
    }
    settled(inner, agent);
}

/// Work of `agent` that counted as busy (a settling turn, a mail still being committed) is
/// over: the wakes it may have held back, then one busy unit fewer.
pub fn settled(inner: &Arc<Inner>, agent: &Arc<Agent>) {
    if let Some(parent) = agent.identity.parent.and_then(|id| inner.registry.get(id)) {
        maybe_wake_once(inner, &parent);
    }
    maybe_wake_once(inner, agent);
    inner.turn_done();
}

/// The result mail of a turn for the direct parent (never for the root or internal agents),
/// composed but not yet sent.
fn result_mail(inner: &Inner, agent: &Agent, text: &str) -> Option<Result> {
    if agent.identity.internal {
        return None;
    }
    let parent = agent
        .identity
        .parent
        .and_then(|id| inner.registry.get(id))?;
    if parent.state().closed {
        return None;
    }
    let mail = mail::compose(agent, &parent, MailKind::Result, text);
    Some(Result { parent, mail })
}

/// Wakes an idle agent once when its children are all quiet and results wait (behaviour §4).
pub fn maybe_wake_once(inner: &Arc<Inner>, agent: &Arc<Agent>) {
    if !inner.config.wake_once || (agent.path().is_root() && !inner.config.root_driven) {
        return;
    }
    let children_busy = inner
        .registry
        .children(agent.id())
        .iter()
        .filter(|child| !child.identity.internal)
        .any(|child| child.state().active());
    let due = {
        let state = agent.state();
        !state.active() && !state.closed && wake_once_due(true, children_busy, &state.mailbox)
    };
    if due {
        inner.request_turn(agent);
    }
}

/// Outputs for calls of the current turn that never got one (the turn was cut short), so the
/// history stays well formed for the next request.
fn dangling_call_outputs(agent: &Agent) -> Vec<RolloutItem> {
    let state = agent.state();
    let start = state.turns.last().map_or(0, |span| span.start);
    cut_call_outputs(&unanswered_calls(&state.history[start..]))
        .into_iter()
        .map(RolloutItem::ResponseItem)
        .collect()
}
