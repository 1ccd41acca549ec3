//! The end of a turn: the outputs a cut turn owes its calls, the end line and the result
//! mail's `mail_sent` line go to the log in one append; then the result reaches the parent's
//! mailbox, the final status is set, the running slot is freed, and the wakes the end causes
//! are requested. All of it at once: the log's sync covers it before anyone outside hears.

use std::sync::Arc;

use arbor_mailbox::wake_once_due;
use arbor_protocol::{
    AbortKind, AgentStatus, Event, Mail, MailKind, ResponseItem, RolloutItem, TurnAborted,
    TurnCompleted,
};
use arbor_rollout::{cut_call_outputs, unanswered_calls};

use crate::agent::Agent;
use crate::mail;
use crate::runtime::Inner;

/// How a turn ended.
#[derive(Debug)]
pub enum Outcome {
    Completed(Option<String>),
    Aborted(AbortKind, String),
}

/// Ends turn `turn` of `agent` with `outcome`; `note` ends its result mail (a worktree
/// agent's change summary).
pub fn finish_turn(
    inner: &Arc<Inner>,
    agent: &Arc<Agent>,
    turn: u64,
    outcome: Outcome,
    note: Option<String>,
) {
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
    let result_text = match note {
        Some(note) => format!("{result_text}\n\n{note}"),
        None => result_text,
    };
    let closed = agent.state().closed;
    // The result mail goes with the end line: a result is sent exactly when its turn ended.
    let mut result = if closed {
        None
    } else {
        result_mail(inner, agent, &result_text)
    };
    if let Some((_, mail)) = &result {
        lines.push(RolloutItem::MailSent(mail.clone()));
    }
    if let Err(err) = agent.record(&lines) {
        tracing::error!(path = %agent.path(), error = %err, "turn end not recorded");
        // A mail that is not in the log is never sent.
        result = None;
    }
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
    // The result is in the parent's mailbox before the child's final status is set and before
    // anything waiting on the child is released.
    if let Some((parent, mail)) = result {
        mail::announce(inner, &mail);
        mail::push(inner, &parent, mail);
    }
    let (owes_turn, final_status) = {
        let mut state = agent.state();
        state.history.extend(outputs);
        state.turn_token = None;
        if let Outcome::Completed(message) = &outcome {
            state.last_message = message.clone();
        }
        let owes_turn = state.mailbox.end_turn();
        // An agent owed another turn stays scheduled, so that no wait sees it idle in between;
        // one that is not becomes idle and takes its final status in the same step.
        state.scheduled = owes_turn;
        let final_status = !closed && !owes_turn;
        if final_status {
            state.status = status.clone();
        }
        (owes_turn, final_status)
    };
    if final_status {
        inner.persist_status(agent, &status);
        inner.events.emit(Event::AgentStatus {
            path: agent.path().clone(),
            status,
        });
        inner.bump();
    }
    inner.release_turn_slot(agent);
    if owes_turn {
        inner.continue_turn(agent);
    }
    settled(inner, agent);
}

/// Work of `agent` that counted as busy is over: the wakes it may have held back, then one
/// busy unit fewer.
pub fn settled(inner: &Arc<Inner>, agent: &Arc<Agent>) {
    if let Some(parent) = agent.identity.parent.and_then(|id| inner.registry.get(id)) {
        maybe_wake_once(inner, &parent);
    }
    maybe_wake_once(inner, agent);
    inner.turn_done();
}

/// The result mail of a turn for the direct parent (never for the root or internal agents),
/// composed but not yet sent.
fn result_mail(inner: &Inner, agent: &Agent, text: &str) -> Option<(Arc<Agent>, Mail)> {
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
    Some((parent, mail))
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
