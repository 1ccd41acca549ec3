//! The end of a turn: the outputs a cut turn owes its calls, the end line and the result
//! mail's `mail_sent` line go to the log in one append; then the end is announced and the
//! session hears it (the result to the parent, the final status, the freed slot and the wakes
//! are its decisions). The log's sync covers it all before anyone outside hears.

use std::sync::Arc;

use arbor_protocol::{
    AbortKind, AgentStatus, Event, Mail, MailKind, ResponseItem, RolloutItem, TurnAborted,
    TurnCompleted,
};
use arbor_rollout::{cut_call_outputs, unanswered_calls};

use crate::agent::Agent;
use crate::ctx::Ctx;
use crate::mail;
use arbor_tree::{Input, TurnEnd};

/// How a turn ended.
#[derive(Debug)]
pub enum Outcome {
    Completed(Option<String>),
    Aborted(AbortKind, String),
}

/// An empty final answer still tells the parent something: that there was none.
const NO_ANSWER: &str = "(no answer: the agent ended its turn without a final message)";

/// Ends turn `turn` of `agent` with `outcome`; `note` ends its result mail (a worktree
/// agent's change summary).
pub fn finish_turn(
    ctx: &Arc<Ctx>,
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
    let (status, result_text, completed) = match &outcome {
        Outcome::Completed(message) => {
            lines.push(RolloutItem::TurnCompleted(TurnCompleted {
                turn,
                last_message: message.clone(),
            }));
            let text = message.as_deref().filter(|text| !text.trim().is_empty());
            (
                AgentStatus::Completed(message.clone()),
                text.unwrap_or(NO_ANSWER).to_string(),
                Some(message.clone()),
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
            (status.clone(), status.to_string(), None)
        }
    };
    let result_text = match note {
        Some(note) => format!("{result_text}\n\n{note}"),
        None => result_text,
    };
    // The result mail goes with the end line: a result is sent exactly when its turn ended.
    let mut result = result_mail(ctx, agent, &result_text);
    if let Some(mail) = &result {
        lines.push(RolloutItem::MailSent(Box::new(mail.clone())));
    }
    if let Err(err) = agent.record(lines) {
        tracing::error!(path = %agent.path(), error = %err, "turn end not recorded");
        // A mail that is not in the log is never sent.
        result = None;
    }
    agent.runtime().history.extend(outputs);
    match &outcome {
        Outcome::Completed(last_message) => ctx.events.emit(Event::TurnCompleted {
            path: agent.path().clone(),
            last_message: last_message.clone(),
        }),
        Outcome::Aborted(_, reason) => ctx.events.emit(Event::TurnAborted {
            path: agent.path().clone(),
            reason: reason.clone(),
        }),
    }
    if let Some(mail) = &result {
        mail::announce(ctx, mail);
    }
    ctx.session.send(Input::TurnEnded {
        agent: agent.id(),
        end: TurnEnd {
            status,
            completed,
            result,
            started: true,
        },
    });
}

/// The result mail of a turn for the direct parent (never for the root or internal agents,
/// never from a closed agent or to a closed parent), composed but not yet sent.
fn result_mail(ctx: &Ctx, agent: &Agent, text: &str) -> Option<Mail> {
    if agent.identity.internal || !ctx.registry.is_open(agent) {
        return None;
    }
    let parent = agent
        .identity
        .parent()
        .and_then(|id| ctx.registry.get(id))?;
    if !ctx.registry.is_open(&parent) {
        return None;
    }
    Some(mail::compose(agent, &parent, MailKind::Result, text))
}

/// Outputs for calls of the current turn that never got one (the turn was cut short), so the
/// history stays well formed for the next request.
fn dangling_call_outputs(agent: &Agent) -> Vec<RolloutItem> {
    let runtime = agent.runtime();
    let start = runtime.turns.last().map_or(0, |span| span.start);
    cut_call_outputs(&unanswered_calls(&runtime.history[start..]))
        .into_iter()
        .map(RolloutItem::ResponseItem)
        .collect()
}
